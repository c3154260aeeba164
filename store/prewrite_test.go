package store

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// prewriteRecFS watches the writes into CommitLog files. A write into a file that is already current
// (in the CommitLog's file list) is a violation: pre-writing must never put a zero where a record may be.
// Armed with gate, the first write into the file named gateName blocks until gate is closed, after
// signalling entered.
type prewriteRecFS struct {
	FS
	cl         atomic.Pointer[commitLog]
	writes     sync.Map // base name → *atomic.Int64
	violations atomic.Int64
	gateName   string
	gateOnce   sync.Once
	entered    chan struct{}
	gate       chan struct{}
}

func (r *prewriteRecFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := r.FS.OpenFile(name, flag, perm)
	if err != nil || !isCommitLogPath(name) {
		return f, err
	}
	return &prewriteRecFile{File: f, fs: r}, nil
}

func (r *prewriteRecFS) writesTo(name string) int64 {
	n, _ := r.writes.LoadOrStore(name, new(atomic.Int64))
	return n.(*atomic.Int64).Load()
}

type prewriteRecFile struct {
	File
	fs *prewriteRecFS
}

func (f *prewriteRecFile) WriteAt(b []byte, off int64) (int, error) {
	if slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) {
		return f.File.WriteAt(b, off) // records (SYNC_FLUSH appends with pwrite), not pre-written zeros
	}
	base := filepath.Base(f.Name())
	n, _ := f.fs.writes.LoadOrStore(base, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	if f.fs.gate != nil && base == f.fs.gateName {
		f.fs.gateOnce.Do(func() {
			close(f.fs.entered)
			<-f.fs.gate
		})
	}
	if cl := f.fs.cl.Load(); cl != nil {
		if from, ok := parseOffsetFileName(base); ok && cl.mfq.find(from) != nil {
			f.fs.violations.Add(1)
		}
	}
	return f.File.WriteAt(b, off)
}

// TestPrewriteEndsAtTheRoll: under SYNC_FLUSH in mapping mode (where the only writes into CommitLog files
// are the pre-writing's), a put that rolls into a file while a piece of its zeros is being written waits
// for that piece, and no zero is written into the file after it became current: the file counts as late,
// every record reads back intact, and later files are pre-written whole before the writer reaches them.
func TestPrewriteEndsAtTheRoll(t *testing.T) {
	const fileSize = 1 << 20 // four pieces, one chunk
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = fileSize
	cfg.FlushDiskType = SyncFlush
	cfg.PrewriteMappedFileDutyPercent = 100
	rec := &prewriteRecFS{FS: NewOSFS(nil), gateName: offsetFileName(0), entered: make(chan struct{}),
		gate: make(chan struct{})}
	s, err := Open(cfg, Deps{FS: rec, Logger: testLogger(t)})
	require.NoError(t, err)
	rec.cl.Store(s.commitLog)
	require.NoError(t, s.Start())
	t.Cleanup(func() { _ = s.Shutdown() })
	cl := s.commitLog

	<-rec.entered // the allocator writes the first piece of file 0, holding its prewrite lock
	first := make(chan error, 1)
	go func() {
		_, err := s.PutMessage(testMessage("PrewriteTopic", 0, bodyf("%05d", 0)))
		first <- err
	}()
	// The put's roll into file 0 holds the put lock and allocMu while it waits for the piece.
	putLock := cl.putLock.(*sync.Mutex)
	testutil.Eventually(t, "the roll waiting for the piece in progress", func() bool {
		if putLock.TryLock() {
			putLock.Unlock()
			return false
		}
		if cl.allocMu.TryLock() {
			cl.allocMu.Unlock()
			return false
		}
		return true
	})
	close(rec.gate)
	require.NoError(t, <-first)
	require.Equal(t, int64(1), cl.prewriteLate.Load(), "file 0 became current before it was pre-written")
	require.Equal(t, int64(1), rec.writesTo(offsetFileName(0)), "zeros written into file 0 after the roll")

	// The next files: pre-written whole before the writer gets there.
	testutil.Eventually(t, "the prepared files pre-written", func() bool {
		sb := standbysAt(cl)
		return len(sb) == standbyFiles && sb[0].prewritten.Load() == fileSize && sb[1].prewritten.Load() == fileSize
	})
	msgs := [][]byte{bodyf("%05d", 0)}
	for i := 1; s.MaxPhyOffset() < 2*fileSize+fileSize/2; i++ {
		b := bodyf("%05d-%s", i, body(3000, "p"))
		msgs = append(msgs, b)
		mustPut(t, s, testMessage("PrewriteTopic", 0, b))
	}
	waitDispatched(t, s)
	got := getAll(t, s, "PrewriteTopic", 0)
	require.Len(t, got, len(msgs))
	for i, r := range got {
		require.Equal(t, msgs[i], r.Body, "message %d", i)
	}
	require.Zero(t, rec.violations.Load(), "zeros written into a current file")
	require.Equal(t, int64(1), cl.prewriteLate.Load(), "files 1 and 2 were pre-written in time")
	require.Equal(t, int64(4), rec.writesTo(offsetFileName(fileSize)), "file 1: one chunk in four pieces")
}

// TestPrewriteAppendModes: pre-writing runs only under SYNC_FLUSH (and with the key on), in both append
// modes; records written across pre-written files read back intact. (The crash tests run SYNC_FLUSH with
// pre-writing on, its default.)
func TestPrewriteAppendModes(t *testing.T) {
	const fileSize = 256 << 10
	for _, mode := range appendModes {
		for _, on := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/prewrite=%t", mode.name, on), func(t *testing.T) {
				dir := t.TempDir()
				cfg := testConfig(dir)
				cfg.MappedFileSizeCommitLog = fileSize
				cfg.TransientStorePoolEnable = mode.transient
				cfg.FlushDiskType = mode.flush
				cfg.PrewriteMappedFileEnable = on
				cfg.PrewriteMappedFileDutyPercent = 100
				ffs := faultfs.New(NewOSFS(nil))
				s := openStarted(t, cfg, Deps{FS: ffs})
				cl := s.commitLog
				mustPut(t, s, testMessage("PrewriteTopic", 0, bodyf("%05d", 0)))
				want := on && mode.flush == SyncFlush
				testutil.Eventually(t, "two standby files prepared", func() bool {
					sb := standbysAt(cl)
					return len(sb) == standbyFiles && (!want || sb[1].prewritten.Load() == fileSize)
				})
				if !want {
					require.Zero(t, cl.prewrittenBytes.Load())
				} else {
					// ringmq_store_prewritten_bytes_total: at least the standby file just checked.
					require.GreaterOrEqual(t, cl.prewrittenBytes.Load(), int64(fileSize))
				}
				msgs := [][]byte{bodyf("%05d", 0)}
				for i := 1; s.MaxPhyOffset() < 2*fileSize+fileSize/2; i++ {
					b := bodyf("%05d-%s", i, body(3000, "m"))
					msgs = append(msgs, b)
					mustPut(t, s, testMessage("PrewriteTopic", 0, b))
				}
				require.NoError(t, s.Flush(0))
				waitDispatched(t, s)
				got := getAll(t, s, "PrewriteTopic", 0)
				require.Len(t, got, len(msgs))
				for i, r := range got {
					require.Equal(t, msgs[i], r.Body, "message %d", i)
				}

			})
		}
	}
}

// TestPrewriteOnAFullDisk: when the pre-writing's writes fail with ENOSPC (a file system without
// fallocate whose disk filled up), the allocator logs a warning per file and leaves the files as they
// are; puts go on, the disk-full flag is not raised (nothing stored is at risk), and every record reads
// back, before and after a restart.
func TestPrewriteOnAFullDisk(t *testing.T) {
	const fileSize = 256 << 10
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.MappedFileSizeCommitLog = fileSize
	cfg.FlushDiskType = SyncFlush
	cfg.PrewriteMappedFileDutyPercent = 100
	ffs := faultfs.New(NewOSFS(nil))
	// Mapping mode: the pre-writing's are the only writes into CommitLog files.
	ffs.Inject(faultfs.Rule{Ops: faultfs.OpWrite, PathContains: string(filepath.Separator) + "commitlog" +
		string(filepath.Separator), Err: syscall.ENOSPC})
	logger, logs := logtest.Logger()
	s := openStarted(t, cfg, Deps{FS: ffs, Logger: logger})
	cl := s.commitLog
	var msgs [][]byte
	for i := 0; s.MaxPhyOffset() < 2*fileSize+fileSize/2; i++ {
		b := bodyf("%05d-%s", i, body(3000, "f"))
		msgs = append(msgs, b)
		mustPut(t, s, testMessage("PrewriteTopic", 0, b))
	}
	testutil.Eventually(t, "a warning for a failed pre-writing", func() bool {
		for _, r := range logs.AtLevel(slog.LevelWarn) {
			if r.Message == "store: pre-writing a CommitLog file failed; it is used as far as it got" {
				return true
			}
		}
		return false
	})
	require.Zero(t, cl.prewrittenBytes.Load())
	require.Zero(t, s.RunningFlags(), "no flag for a failed pre-writing")
	waitDispatched(t, s)
	got := getAll(t, s, "PrewriteTopic", 0)
	require.Len(t, got, len(msgs))
	for i, r := range got {
		require.Equal(t, msgs[i], r.Body, "message %d", i)
	}
	require.NoError(t, s.Shutdown())

	ffs.ClearFaults()
	s2 := reopen(t, cfg, Deps{FS: ffs})
	waitDispatched(t, s2)
	got = getAll(t, s2, "PrewriteTopic", 0)
	require.Len(t, got, len(msgs))
	require.Equal(t, msgs[len(msgs)-1], got[len(got)-1].Body)
}
