//go:build linux

package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/transientpool"
)

// The layout of a pool buffer file (transientpool/file.go) that these tests edit to build crash images.
const (
	poolHdrOwner     = 48
	poolHdrPublished = 64
)

// poolCrashStore opens and starts a store with file-backed pool buffers under ASYNC_FLUSH whose
// committer moves nothing on its own, so acknowledged records stay in the buffer.
func poolCrashStore(t *testing.T) (*Store, Config) {
	t.Helper()
	if testPoolDir == "off" {
		t.Skip("no /dev/shm: the pool's buffers cannot be files on tmpfs here")
	}
	cfg := lazyCommitConfig(t.TempDir(), true, AsyncFlush)
	s := openStarted(t, cfg, Deps{})
	require.True(t, s.pool.FileBacked(), "the pool's buffers are files on tmpfs")
	return s, cfg
}

// processCrash leaves s's store as a killed process leaves it: its directory as it is now (the page
// cache keeps it) and its pool buffer files as they are now (tmpfs keeps them), while s itself shuts down
// in the test process. It returns the path of the buffer file of the CommitLog file starting at owner.
func processCrash(t *testing.T, s *Store, cfg Config, owner int64) string {
	t.Helper()
	root, poolDir := cfg.StorePathRootDir, s.pool.Dir()
	var bufferFile string
	for i := range s.pool.FixedBuffers() {
		path := filepath.Join(poolDir, fmt.Sprintf("buffer-%03d", i))
		hdr := make([]byte, 72)
		f, err := os.Open(path)
		require.NoError(t, err)
		_, err = f.ReadAt(hdr, 0)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		if int64(binary.NativeEndian.Uint64(hdr[poolHdrOwner:])) == owner {
			bufferFile = path
		}
	}
	require.NotEmpty(t, bufferFile, "a buffer holds CommitLog file %d", owner)
	snapRoot, snapPool := filepath.Join(t.TempDir(), "store"), filepath.Join(t.TempDir(), "pool")
	copyDir(t, root, snapRoot)
	copyDir(t, poolDir, snapPool)
	require.NoError(t, s.Shutdown())
	_, err := os.Stat(poolDir)
	require.ErrorIs(t, err, os.ErrNotExist, "a clean shutdown removes the pool's files")
	require.NoError(t, os.RemoveAll(root))
	require.NoError(t, os.Rename(snapRoot, root))
	copyDir(t, snapPool, poolDir)
	return bufferFile
}

// editBuffer changes a crash image's buffer file: edit gets the buffer's bytes and its published end.
func editBuffer(t *testing.T, path string, edit func(buf []byte, published *int64, owner *int64)) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	hdr, buf := b[:pageSize], b[pageSize:]
	published := int64(binary.NativeEndian.Uint64(hdr[poolHdrPublished:]))
	owner := int64(binary.NativeEndian.Uint64(hdr[poolHdrOwner:]))
	edit(buf, &published, &owner)
	binary.NativeEndian.PutUint64(hdr[poolHdrPublished:], uint64(published))
	binary.NativeEndian.PutUint64(hdr[poolHdrOwner:], uint64(owner))
	require.NoError(t, os.WriteFile(path, b, 0o600))
}

func poolMessage(i int) *codec.Message {
	return testMessage("PoolT", int32(i%2), bodyf("pool message %03d", i), codec.PropertyKeys, fmt.Sprintf("pk%d", i))
}

// TestPoolRestoresAcknowledgedRecords: after a process crash, the records acknowledged under
// ASYNC_FLUSH that were still only in the pool's buffer (committed part in the file, the rest not) are
// written into the CommitLog by recovery: every body at its offsets, in its queue, found by key; the
// restart logs exactly how many messages and bytes came from the pool; the buffer files are released
// so that no later start restores them again. The same when the restart runs without the pool: the
// files are read all the same, then removed.
func TestPoolRestoresAcknowledgedRecords(t *testing.T) {
	for _, poolAtRestart := range []bool{true, false} {
		t.Run(fmt.Sprintf("poolAtRestart=%t", poolAtRestart), func(t *testing.T) {
			testPoolRestoresAcknowledgedRecords(t, poolAtRestart)
		})
	}
}

func testPoolRestoresAcknowledgedRecords(t *testing.T, poolAtRestart bool) {
	s, cfg := poolCrashStore(t)
	poolDir := s.pool.Dir()
	for i := 0; i < 10; i++ {
		mustPut(t, s, poolMessage(i))
	}
	require.NoError(t, s.Commit(0))
	committed := s.commitLog.mfq.committedWhere.Load()
	require.Positive(t, committed)
	for i := 10; i < 30; i++ {
		mustPut(t, s, poolMessage(i))
	}
	end := s.MaxPhyOffset()
	require.Equal(t, committed, s.commitLog.mfq.committedWhere.Load(), "20 acknowledged records only in the buffer")
	processCrash(t, s, cfg, 0)

	cfg.TransientStorePoolEnable = poolAtRestart
	logger, h := logtest.Logger()
	r := reopen(t, cfg, Deps{Logger: logger})
	require.False(t, r.LastExitOK())
	require.Equal(t, end, r.MaxPhyOffset())
	var infos []slog.Record
	for _, rec := range h.AtLevel(slog.LevelInfo) {
		if rec.Message == "store: restored published messages from the transient pool's files" {
			infos = append(infos, rec)
		}
	}
	require.Len(t, infos, 1)
	require.Equal(t, "20", logtest.Attr(infos[0], "messages"))
	require.Equal(t, fmt.Sprint(end-committed), logtest.Attr(infos[0], "bytes"))
	for _, w := range h.AtLevel(slog.LevelWarn) {
		require.NotContains(t, w.Message, "transient pool", "nothing dropped")
	}

	for q := int32(0); q < 2; q++ {
		recs := getAll(t, r, "PoolT", q)
		require.Len(t, recs, 15)
		for k, rec := range recs {
			require.Equal(t, int64(k), rec.QueueOffset)
			require.Equal(t, fmt.Sprintf("pool message %03d", 2*k+int(q)), string(rec.Body))
		}
	}
	qr, err := r.QueryMessage("PoolT", "pk29", 4, 0, math.MaxInt64)
	require.NoError(t, err)
	require.Len(t, qr.Buffers, 1)
	qr.Release()
	ls, err := transientpool.OpenLeftovers(testPoolDir, cfg.poolIdentity(), cfg.MappedFileSizeCommitLog)
	require.NoError(t, err)
	if poolAtRestart {
		require.Empty(t, ls.Buffers, "the restored buffers are released")
		require.NoError(t, ls.Close())
	} else {
		require.Nil(t, ls, "a store without the pool removes the files it restored from")
		_, err := os.Stat(poolDir)
		require.ErrorIs(t, err, os.ErrNotExist)
	}

	// New puts continue the queues after the restored records.
	mustPut(t, r, poolMessage(30))
	waitDispatched(t, r)
	require.Len(t, getAll(t, r, "PoolT", 0), 16)
}

// TestPoolRestoreRefusesWhatWasNotAcknowledged: a restore takes only records below the buffer's
// published end that decode, pass their CRC, carry their own physical offset and continue the file's
// bytes; everything else is dropped, counted and logged at WARN.
func TestPoolRestoreRefusesWhatWasNotAcknowledged(t *testing.T) {
	for _, tc := range []struct {
		name     string
		restored int // of the 5 records in the buffer
		edit     func(t *testing.T, buf []byte, published, owner *int64, recs [][2]int64)
		warn     string
	}{
		{name: "stale record of an earlier owner", restored: 5, warn: "PHYSICALOFFSET",
			edit: func(t *testing.T, buf []byte, published, _ *int64, recs [][2]int64) {
				// The first record of the file, as a buffer's earlier use may have left it, past the
				// five and under the published end.
				n := copy(buf[*published:], buf[recs[0][0]:recs[0][1]])
				*published += int64(n)
			}},
		{name: "torn record", restored: 4, warn: "CRC",
			edit: func(t *testing.T, buf []byte, _, _ *int64, recs [][2]int64) {
				rec := buf[recs[4][0]:recs[4][1]]
				rec[bytes.Index(rec, []byte("pool message 014"))] ^= 0xff // its copy cut inside the body
			}},
		{name: "record past the published end", restored: 4, warn: "",
			edit: func(t *testing.T, _ []byte, published, _ *int64, recs [][2]int64) {
				*published = recs[3][1] // the fifth was copied but never published
			}},
		{name: "header naming another file", restored: 0, warn: "does not continue the CommitLog",
			edit: func(t *testing.T, _ []byte, _, owner *int64, _ [][2]int64) {
				*owner = testFileSize
			}},
		{name: "buffer of another log", restored: 0, warn: "does not hold the bytes",
			edit: func(t *testing.T, buf []byte, _, _ *int64, recs [][2]int64) {
				buf[recs[0][0]-1] ^= 0xff // the last byte the file has committed differs
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, cfg := poolCrashStore(t)
			var recs [][2]int64
			for i := 0; i < 15; i++ {
				res := mustPut(t, s, poolMessage(i))
				recs = append(recs, [2]int64{res.WroteOffset, res.WroteOffset + int64(res.WroteBytes)})
				if i == 9 {
					require.NoError(t, s.Commit(0))
				}
			}
			committed := recs[9][1]
			require.Equal(t, committed, s.commitLog.mfq.committedWhere.Load())
			path := processCrash(t, s, cfg, 0)
			editBuffer(t, path, func(buf []byte, published, owner *int64) {
				require.Equal(t, recs[14][1], *published, "published up to the last acknowledged record")
				tc.edit(t, buf, published, owner, recs[10:])
			})

			logger, h := logtest.Logger()
			r := reopen(t, cfg, Deps{Logger: logger})
			want := committed
			if tc.restored > 0 {
				want = recs[9+tc.restored][1]
			}
			require.Equal(t, want, r.MaxPhyOffset())
			require.Equal(t, int64(tc.restored), r.poolRestore.messages)
			n := 0
			for q := int32(0); q < 2; q++ {
				for _, rec := range getAll(t, r, "PoolT", q) {
					require.Equal(t, fmt.Sprintf("pool message %03d", 2*rec.QueueOffset+int64(q)), string(rec.Body))
					n++
				}
			}
			require.Equal(t, 10+tc.restored, n)
			var warns []slog.Record // the restore's (recovery may warn about other files of the crash image)
			for _, w := range h.AtLevel(slog.LevelWarn) {
				if strings.Contains(w.Message, "transient pool") {
					warns = append(warns, w)
				}
			}
			if tc.warn == "" {
				require.Equal(t, int64(1), r.poolRestore.droppedMessages, "the unpublished record is counted")
				require.Len(t, warns, 1)
				require.Equal(t, "1", logtest.Attr(warns[0], "droppedMessages"))
				return
			}
			var text []string
			for _, w := range warns {
				text = append(text, w.Message+" "+logtest.Attr(w, "reason"))
			}
			require.NotEmpty(t, warns)
			require.Contains(t, fmt.Sprint(text), tc.warn)
			require.Positive(t, r.poolRestore.droppedBytes)
		})
	}
}

// TestPoolRecordsVisibleBeforeCommit: with the transient pool a record is visible to every reader as
// soon as it is published (acknowledged), before any commit moved it into the file: pull, query by key,
// view by offset, search by time. Replication still reads committed bytes only.
func TestPoolRecordsVisibleBeforeCommit(t *testing.T) {
	for _, flushType := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(flushType.String(), func(t *testing.T) {
			cfg := lazyCommitConfig(t.TempDir(), true, flushType)
			s := openStarted(t, cfg, Deps{})
			var last PutResult
			for i := 0; i < 6; i++ {
				last = mustPut(t, s, poolMessage(i))
			}
			waitDispatched(t, s)
			require.Zero(t, s.commitLog.mfq.committedWhere.Load(), "nothing committed (the test's premise)")

			require.Len(t, getAll(t, s, "PoolT", 0), 3)
			res, err := s.GetMessage("g", "PoolT", 1, 0, 32, 0, nil)
			require.NoError(t, err)
			require.Equal(t, Found, res.Status)
			require.Len(t, res.Buffers, 3)
			for k, b := range res.Buffers {
				rec, err := codec.DecodeRecord(b, true)
				require.NoError(t, err)
				require.Equal(t, fmt.Sprintf("pool message %03d", 2*k+1), string(rec.Body))
			}
			// The buffer's holders: the file, the pull, and for a moment at most the dispatcher.
			first := s.commitLog.mfq.first()
			bufferRefs := func(n int64) func() bool { return func() bool { return first.bufferRefs.Load() == n } }
			testutil.Eventually(t, "the pull holds the buffer", bufferRefs(2))
			res.Release()
			testutil.Eventually(t, "the pull let go of the buffer", bufferRefs(1))

			q, err := s.QueryMessage("PoolT", "pk5", 4, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Len(t, q.Buffers, 1)
			require.True(t, bytes.Contains(q.Buffers[0], []byte("pool message 005")))
			q.Release()
			rec, release, err := s.LookMessageByOffset(last.WroteOffset)
			require.NoError(t, err)
			require.True(t, bytes.Contains(rec, []byte("pool message 005")))
			release()
			ts, err := s.GetEarliestMessageTime("PoolT", 1)
			require.NoError(t, err)
			require.Equal(t, last.StoreTimestamp/1000, ts/1000)
			require.Equal(t, int64(0), s.GetOffsetInQueueByTime("PoolT", 1, 0, false))

			b, rel, uncommitted := s.readReplica(0, 1<<20)
			require.Nil(t, b, "a slave is sent committed bytes only")
			require.Nil(t, rel)
			require.True(t, uncommitted)
			testutil.Eventually(t, "every reader let go of the buffer", bufferRefs(1))
		})
	}
}

// TestConsumeQueueAheadOfCommitLogAfterCrash: with anonymous pool buffers a process crash loses what
// was not committed, while the ConsumeQueue and IndexFile already hold entries for it (they follow the
// published records). Recovery cuts those entries; the queues continue at the recovered end.
func TestConsumeQueueAheadOfCommitLogAfterCrash(t *testing.T) {
	root := t.TempDir()
	cfg := lazyCommitConfig(root, true, AsyncFlush)
	cfg.TransientStorePoolDir = "off"
	s := openStarted(t, cfg, Deps{})
	for i := 0; i < 20; i++ {
		mustPut(t, s, poolMessage(i))
		if i == 9 {
			require.NoError(t, s.Commit(0))
		}
	}
	waitDispatched(t, s)
	committed := s.commitLog.mfq.committedWhere.Load()
	require.Less(t, committed, s.MaxPhyOffset())
	require.NoError(t, s.Flush(0))
	_, err := s.flushLogicsAndCheckpoint(0)
	require.NoError(t, err)
	require.Equal(t, int64(10), s.GetMaxOffsetInQueue("PoolT", 0), "entries for records only in the buffer")
	crash := t.TempDir()
	copyDir(t, root, crash) // the page cache as the killed process leaves it; the buffer dies with it
	require.NoError(t, s.Shutdown())

	cfg.StorePathRootDir = crash
	r := reopen(t, cfg, Deps{})
	require.False(t, r.LastExitOK())
	require.Equal(t, committed, r.MaxPhyOffset())
	for q := int32(0); q < 2; q++ {
		require.Equal(t, int64(5), r.GetMaxOffsetInQueue("PoolT", q), "entries past the CommitLog's end are cut")
		_, ok := r.ConsumeQueueEntry("PoolT", q, 5)
		require.False(t, ok)
	}
	lost, err := r.QueryMessage("PoolT", "pk15", 4, 0, math.MaxInt64)
	require.NoError(t, err)
	require.Empty(t, lost.Buffers, "the index does not find lost records")
	lost.Release()
	for i := 100; i < 104; i++ {
		mustPut(t, r, poolMessage(i))
	}
	waitDispatched(t, r)
	recs := getAll(t, r, "PoolT", 0)
	require.Len(t, recs, 7)
	for k, rec := range recs {
		require.Equal(t, int64(k), rec.QueueOffset)
	}
	require.Equal(t, "pool message 100", string(recs[5].Body))
	require.Equal(t, "pool message 102", string(recs[6].Body))
}
