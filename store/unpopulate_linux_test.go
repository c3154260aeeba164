package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// mappedPages reports, for each page of b (page-aligned), whether this process has it mapped: bit 63
// of its /proc/self/pagemap entry, which an unprivileged process may read (the frame numbers read 0).
func mappedPages(t *testing.T, b []byte) []bool {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	require.NoError(t, err)
	defer f.Close()
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	require.Zero(t, base%uintptr(pageSize), "b must start on a page")
	n := (len(b) + pageSize - 1) / pageSize
	entries := make([]byte, 8*n)
	_, err = f.ReadAt(entries, int64(base/uintptr(pageSize))*8)
	require.NoError(t, err)
	out := make([]bool, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(entries[8*i:])&(1<<63) != 0
	}
	return out
}

// TestUnpopulateKeepsWhatWasWritten: bytes written through a shared mapping survive Unpopulate without
// a sync in between. The pages leave the process's page tables, stay dirty in the page cache (a sync
// afterwards writes them: once the file is unmapped and its clean pages dropped, a read from the disk
// returns them), and the next access through the mapping sees them.
func TestUnpopulateKeepsWhatWasWritten(t *testing.T) {
	const pages = 16
	path := filepath.Join(t.TempDir(), "f")
	f, err := NewOSFS(nil).OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Allocate(int64(pages*pageSize)))
	data, err := f.Map(pages * pageSize)
	require.NoError(t, err)
	want := make([]byte, pages*pageSize)
	for i := range want {
		want[i] = byte(i*7 + i/pageSize)
	}
	copy(data, want)
	for i, m := range mappedPages(t, data) {
		require.True(t, m, "page %d mapped after the write", i)
	}

	require.NoError(t, f.Unpopulate(data[:10*pageSize]))
	for i, m := range mappedPages(t, data) {
		require.Equal(t, i >= 10, m, "page %d", i)
	}
	got := make([]byte, len(want))
	_, err = f.ReadAt(got, 0) // the page cache, not the mapping
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the page cache lost bytes")
	require.True(t, bytes.Equal(want[:pageSize], data[:pageSize]), "the mapping reads other bytes")

	// Durable: the sync writes the unmapped pages, which the page cache then drops as clean.
	require.NoError(t, f.Unpopulate(data)) // page 0 again, read above
	require.NoError(t, f.Sync())
	require.NoError(t, f.Unmap(data))
	require.NoError(t, unix.Fadvise(int(f.(*osFile).f.Fd()), 0, 0, unix.FADV_DONTNEED))
	clear(got)
	_, err = f.ReadAt(got, 0)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "the sync did not write the unmapped pages")
}

// TestWithdrawingHugeAdviceKeepsTheMapping: AdviseHuge(false) maps the file again at the same address; the
// slice stays valid, bytes written before it without a sync are still there (in the mapping and in the
// page cache), and writes through the slice afterwards reach the file.
func TestWithdrawingHugeAdviceKeepsTheMapping(t *testing.T) {
	huge := hugePageSize()
	if huge <= pageSize {
		t.Skip("the kernel reports no transparent huge page size (hpage_pmd_size)")
	}
	size := 2 * huge
	f, err := NewOSFS(nil).OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Allocate(int64(size)))
	data, err := f.Map(size)
	require.NoError(t, err)
	defer func() { require.NoError(t, f.Unmap(data)) }()
	got, err := f.AdviseHuge(data, true)
	require.NoError(t, err)
	require.Equal(t, huge, got)
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i*13 + i/pageSize)
	}
	copy(data[:huge+100], want)
	addr := unsafe.SliceData(data)
	_, err = f.AdviseHuge(data, false)
	require.NoError(t, err)
	require.Equal(t, addr, unsafe.SliceData(data))
	require.True(t, bytes.Equal(want[:huge+100], data[:huge+100]), "the mapping lost bytes")
	copy(data[huge+100:], want[huge+100:]) // writes after the new mapping
	back := make([]byte, size)
	_, err = f.ReadAt(back, 0) // the page cache
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, back), "the file lost bytes")
}

// TestFlushUnmapsDurablePages: a flush of a file appended through its mapping leaves the pages it made
// durable out of the process (so that writeback need not write-protect them one TLB flush at a time);
// the page still being appended to, and the pages populated ahead, stay mapped. With writes through
// pwrite (SYNC_FLUSH) or into the pool's buffers nothing is unmapped: the pages are not mapped writable.
// The messages read back whole either way.
func TestFlushUnmapsDurablePages(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.MappedFileSizeCommitLog = 1 << 20
			cfg.FlushDiskType = mode.flush
			cfg.TransientStorePoolEnable = mode.transient
			s := openStarted(t, cfg, Deps{})
			const n = 50
			var last PutResult
			for i := range n {
				last = mustPut(t, s, testMessage("UnpopTopic", 0, bodyf("%03d-%s", i, body(900, "u"))))
			}
			waitDispatched(t, s)
			end := last.WroteOffset + int64(last.WroteBytes)
			_, err := s.flushCommitLog(0)
			require.NoError(t, err)
			mf := s.commitLog.mfq.first()
			if mode.transient {
				// Puts go to the pool's buffers; its files are synced with fdatasync, and whatever their
				// mappings hold was mapped by readers.
				require.True(t, s.commitLog.mfq.unpopulateFlushed.Load())
			} else {
				require.Equal(t, end, mf.flushed.Load())
				unmapped := mode.flush == AsyncFlush // SYNC_FLUSH writes through pwrite
				require.Equal(t, unmapped, s.commitLog.mfq.unpopulateFlushed.Load())
				mapped := mappedPages(t, mf.data[:end+int64(pageSize)])
				tail := int(end / int64(pageSize))
				for i, m := range mapped[:tail] {
					// Without unmapping, the dispatcher's reads left every page mapped.
					require.Equal(t, !unmapped, m, "durable page %d", i)
				}
				require.True(t, mapped[tail], "the page being appended to (or read last) is mapped")
			}
			got := getAll(t, s, "UnpopTopic", 0)
			require.Len(t, got, n)
			for i, r := range got {
				require.Equal(t, bodyf("%03d-%s", i, body(900, "u")), r.Body, fmt.Sprint(i))
			}
		})
	}
}

// TestIndexPeriodicFlushSyncsEntriesNotSlots: the ConsumeQueue flusher's periodic run (leastPages > 0)
// makes durable only what abnormal recovery reads of the IndexFile being appended to, the header's page
// and the entries; the slot table, written at random, waits for the thorough run. A power cut after a
// periodic run leaves a stale slot table on disk, and recovery, which rebuilds it from the entries, still
// finds every record by every key. After a thorough run (leastPages 0) the slot table is durable too.
func TestIndexPeriodicFlushSyncsEntriesNotSlots(t *testing.T) {
	for _, thorough := range []bool{false, true} {
		t.Run(fmt.Sprintf("thorough=%t", thorough), func(t *testing.T) {
			root := t.TempDir()
			cfg := testConfig(root)
			cfg.MaxHashSlotNum = 4096 // 16 KiB of slots: pages 1-3 hold slots only
			cfg.MaxIndexNum = 4096
			ffs := faultfs.New(NewOSFS(nil))
			s := openStarted(t, cfg, Deps{FS: ffs})
			const n = 300
			for i := range n {
				mustPut(t, s, testMessage("T", 0, bodyf("m%04d", i),
					codec.PropertyUniqClientMessageIDKey, fmt.Sprintf("u%d", i), codec.PropertyKeys, fmt.Sprintf("k%d", i)))
			}
			waitDispatched(t, s)
			require.NoError(t, s.Flush(0))
			least := 1
			if thorough {
				least = 0
			}
			_, err := s.flushLogicsAndCheckpoint(least)
			require.NoError(t, err)
			require.Equal(t, int32(1+2*n), s.lastCheckpoint.IndexCount)
			idx := s.index.files[0]
			live := bytes.Clone(idx.mf.data[pageSize : 4*pageSize])
			require.NotEqual(t, make([]byte, len(live)), live, "the test needs slots beyond the first page")

			crash := filepath.Join(t.TempDir(), "crash")
			require.NoError(t, ffs.CrashClone(root, crash, faultfs.CrashOptions{}))
			disk, err := os.ReadFile(filepath.Join(crash, "index", filepath.Base(idx.mf.path)))
			require.NoError(t, err)
			if thorough {
				require.Equal(t, live, disk[pageSize:4*pageSize], "a thorough flush left slots out")
			} else {
				require.Equal(t, make([]byte, len(live)), disk[pageSize:4*pageSize], "a periodic flush wrote slot pages")
			}
			entries := idx.entryPos(1)
			require.Equal(t, idx.mf.data[entries:idx.entryPos(1+2*n)], disk[entries:idx.entryPos(1+2*n)],
				"the entries the checkpoint counts are not durable")

			cfg.StorePathRootDir = crash
			r := reopen(t, cfg, Deps{})
			require.False(t, r.LastExitOK())
			requireKeyedRecords(t, r, "T", n)
		})
	}
}

// refuseUnpopulateFS is the OS file system where the kernel refuses MADV_DONTNEED (an mlocked mapping).
type refuseUnpopulateFS struct {
	FS
	calls *atomic.Int32
}

type refuseUnpopulateFile struct {
	File
	calls *atomic.Int32
}

func (fs refuseUnpopulateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := fs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return refuseUnpopulateFile{f, fs.calls}, nil
}

func (f refuseUnpopulateFile) Unpopulate([]byte) error {
	f.calls.Add(1)
	return unix.EINVAL
}

// TestFlushStopsUnmappingAfterARefusal: where the kernel refuses to unmap (warmMappedFileMlock's locked
// mappings), the first refusal ends the attempts, and every flush still makes its bytes durable.
func TestFlushStopsUnmappingAfterARefusal(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 1 << 20
	var calls atomic.Int32
	s := openStarted(t, cfg, Deps{FS: refuseUnpopulateFS{NewOSFS(nil), &calls}})
	var last PutResult
	for round := range 3 {
		for i := range 20 {
			last = mustPut(t, s, testMessage("UnpopTopic", 0, bodyf("%d-%03d-%s", round, i, body(900, "r"))))
		}
		_, err := s.flushCommitLog(0)
		require.NoError(t, err)
		require.Equal(t, last.WroteOffset+int64(last.WroteBytes), s.commitLog.mfq.flushedWhere.Load())
	}
	require.Equal(t, int32(1), calls.Load(), "unmapping was tried again after a refusal")
	require.False(t, s.commitLog.mfq.unpopulateFlushed.Load())
	waitDispatched(t, s)
	require.Len(t, getAll(t, s, "UnpopTopic", 0), 60)
}

// hugeWriter puts numbered 900-byte messages into HugeTopic queue 0 and reads them all back.
type hugeWriter struct {
	t *testing.T
	s *Store
	n int // messages put
}

// putUntil puts messages until the CommitLog reaches until.
func (w *hugeWriter) putUntil(until int64) {
	for w.s.MaxPhyOffset() < until {
		mustPut(w.t, w.s, testMessage("HugeTopic", 0, w.body(w.n)))
		w.n++
	}
}

func (w *hugeWriter) body(i int) []byte { return bodyf("%05d-%s", i, body(900, "h")) }

// requireAllRead reads the queue once dispatched: every message, whole, in order.
func (w *hugeWriter) requireAllRead() {
	waitDispatched(w.t, w.s)
	got := getAll(w.t, w.s, "HugeTopic", 0)
	require.Len(w.t, got, w.n)
	for i, r := range got {
		require.Equal(w.t, w.body(i), r.Body, fmt.Sprint(i))
	}
}

// TestHugePageAdviceFollowsTheWriter: a CommitLog file appended through its mapping is advised for huge
// pages while it is written (MADV_HUGEPAGE); a flush
// then unmaps whole huge pages only below the durable end, leaving the partial one mapped; once the
// writer is two files past it, the advice is withdrawn. Files written with pwrite (SYNC_FLUSH without
// the pool) are never advised. Messages read back whole in every mode.
func TestHugePageAdviceFollowsTheWriter(t *testing.T) {
	huge := hugePageSize()
	if huge <= pageSize {
		t.Skip("the kernel reports no transparent huge page size (hpage_pmd_size)")
	}
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.MappedFileSizeCommitLog = 2 * int64(huge)
			cfg.FlushDiskType = mode.flush
			cfg.TransientStorePoolEnable = mode.transient
			s := openStarted(t, cfg, Deps{})
			w := &hugeWriter{t: t, s: s}
			put := w.putUntil
			put(1)
			mf := s.commitLog.mfq.first()
			// Not with pwrite appends. The pool's files are advised too, for their readers: their pages come
			// from the commits' writes.
			advised := mode.transient || mode.flush == AsyncFlush
			require.Equal(t, advised, mf.hugeAdvised.Load(), "the current file is advised")
			put(int64(huge) + 10*int64(pageSize))
			end := s.MaxPhyOffset()
			waitDispatched(t, s) // the dispatcher's reads map pages again
			_, err := s.flushCommitLog(0)
			require.NoError(t, err)
			if advised {
				require.Equal(t, int64(huge), mf.unmapGranule)
			} else {
				require.Zero(t, mf.unmapGranule)
			}
			if !mode.transient && mode.flush == AsyncFlush {
				mapped := mappedPages(t, mf.data[:end])
				for i, m := range mapped {
					// Below the first huge page's end: durable and unmapped. After it: the partial huge page,
					// written (so mapped) and left mapped.
					require.Equal(t, i >= huge/pageSize, m, "page %d", i)
				}
			}
			put(mf.fromOffset + mf.size + 1) // into the next file
			next := s.commitLog.mfq.last()
			require.NotSame(t, mf, next)
			require.Equal(t, advised, next.hugeAdvised.Load(), "the next file")
			require.Equal(t, advised, mf.hugeAdvised.Load(), "the file just left: its readers still map it whole")
			put(next.fromOffset + next.size + 1) // two files past the first
			testutil.Eventually(t, "the advice withdrawn from the file two behind the writer", func() bool {
				return !mf.hugeAdvised.Load()
			})
			require.Equal(t, advised, next.hugeAdvised.Load())
			w.requireAllRead()
		})
	}
}

// TestHugeAdviceWithdrawalRetriesAndSaysSo: when mapping a file again without the advice fails, the
// allocator maps it once more (a failed MAP_FIXED can leave the range unmapped: a read would end the
// process), a warning names the file when the retry worked and an error when it failed too; the file
// reads back whole after a retry that worked.
func TestHugeAdviceWithdrawalRetriesAndSaysSo(t *testing.T) {
	huge := hugePageSize()
	if huge <= pageSize {
		t.Skip("the kernel reports no transparent huge page size (hpage_pmd_size)")
	}
	for _, failures := range []int{1, 2} {
		t.Run(fmt.Sprintf("failures=%d", failures), func(t *testing.T) {
			ffs := faultfs.New(NewOSFS(nil))
			logger, logs := logtest.Logger()
			cfg := testConfig(t.TempDir())
			cfg.MappedFileSizeCommitLog = 2 * int64(huge)
			s := openStarted(t, cfg, Deps{FS: ffs, Logger: logger})
			w := &hugeWriter{t: t, s: s}
			put := w.putUntil
			put(1)
			mf := s.commitLog.mfq.first()
			require.True(t, mf.hugeAdvised.Load())
			remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpAdvise, PathContains: filepath.Base(mf.path),
				Err: syscall.ENOMEM, Times: failures})
			defer remove()
			put(mf.fromOffset + 3*mf.size + 1) // three files on: the first is two behind the writer
			level, message := slog.LevelWarn, "failed once; the retry mapped it"
			if failures == 2 {
				level, message = slog.LevelError, "failed twice"
			}
			testutil.Eventually(t, "the withdrawal's failure logged", func() bool {
				for _, r := range logs.AtLevel(level) {
					if strings.Contains(r.Message, message) {
						return logtest.Attr(r, "file") == mf.path && strings.Contains(logtest.Attr(r, "error"), "cannot allocate memory")
					}
				}
				return false
			})
			require.False(t, mf.hugeAdvised.Load(), "not tried again at the next roll")
			w.requireAllRead()
		})
	}
}
