package store

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// TestTornWriteRecovery cuts the last CommitLog file at every byte position of its last record, in a loop,
// and checks that abnormal recovery truncates exactly that record (and its ConsumeQueue and IndexFile
// entries), keeps everything before it, and appends the next message in its place.
func TestTornWriteRecovery(t *testing.T) {
	src := t.TempDir()
	cfg := testConfig(src)
	s := openStarted(t, cfg, Deps{})
	const n = 260
	var last PutResult
	for i := 0; i < n; i++ {
		m := testMessage("T", int32(i%2), append(bodyf("m%04d", i), body(190, "b")...),
			codec.PropertyKeys, fmt.Sprintf("k%d", i), codec.PropertyTags, "t")
		if i == n-1 {
			// The checkpoint a crash would leave: everything before the last record is durable.
			waitDispatched(t, s)
			_, err := s.flushCommitLog(0)
			require.NoError(t, err)
			_, err = s.flushLogicsAndCheckpoint(0)
			require.NoError(t, err)
		}
		last = mustPut(t, s, m)
	}
	ckpt, err := os.ReadFile(filepath.Join(src, "checkpoint"))
	require.NoError(t, err)
	require.NoError(t, s.Shutdown())
	require.Greater(t, len(commitLogFiles(t, src)), 1, "the test needs more than one file")

	L, Z := last.WroteOffset, int64(last.WroteBytes)
	lastFile := offsetFileName(L - L%testFileSize)
	parent := t.TempDir()
	for p := L; p <= L+Z; p++ {
		dir := filepath.Join(parent, fmt.Sprint(p))
		copyDir(t, src, dir)
		path := filepath.Join(dir, "commitlog", lastFile)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		pos := p - (L - L%testFileSize)
		if p%2 == 0 {
			clear(data[pos:]) // the pages after the cut never reached the disk
		} else {
			data = data[:pos] // the file itself is short
		}
		require.NoError(t, os.WriteFile(path, data, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "checkpoint"), ckpt, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))

		c := testConfig(dir)
		r := reopen(t, c, Deps{})
		require.False(t, r.LastExitOK())
		intact := p == L+Z
		wantMax := L
		wantQ1 := int64(n / 2)
		if intact {
			wantMax = L + Z
		} else {
			wantQ1--
		}
		require.Equal(t, wantMax, r.MaxPhyOffset(), "cut at %d", p)
		require.Equal(t, int64(n/2), r.GetMaxOffsetInQueue("T", 0), "cut at %d", p)
		require.Equal(t, wantQ1, r.GetMaxOffsetInQueue("T", 1), "cut at %d", p)
		recs := getAll(t, r, "T", 1)
		require.Len(t, recs, int(wantQ1))
		q, err := r.QueryMessage("T", fmt.Sprintf("k%d", n-1), 10, 0, 1<<62)
		require.NoError(t, err)
		if intact {
			require.Len(t, q.Buffers, 1)
		} else {
			require.Empty(t, q.Buffers, "cut at %d: the dropped record is not in the index", p)
		}
		q.Release()
		q, err = r.QueryMessage("T", fmt.Sprintf("k%d", n-3), 10, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Buffers, 1)
		q.Release()

		// The next message takes the dropped record's place.
		res := mustPut(t, r, testMessage("T", 1, []byte("next")))
		require.Equal(t, wantMax, res.WroteOffset)
		require.Equal(t, wantQ1, res.QueueOffset)
		require.NoError(t, r.Shutdown())
		if !intact {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, make([]byte, testFileSize-int(pos)-int(res.WroteBytes)), data[int(pos)+int(res.WroteBytes):],
				"cut at %d: the torn bytes are zeroed", p)
		}
		require.NoError(t, os.RemoveAll(dir))
	}
}

// TestCrashBetweenWriteAndDispatch: SYNC_FLUSH messages are durable in the CommitLog while their
// ConsumeQueue and IndexFile entries are not; a crash then loses those entries, and recovery rebuilds them.
func TestCrashBetweenWriteAndDispatch(t *testing.T) {
	for _, transient := range []bool{false, true} {
		t.Run(fmt.Sprint("transientPool=", transient), func(t *testing.T) { testCrashBetweenWriteAndDispatch(t, transient) })
	}
}

func testCrashBetweenWriteAndDispatch(t *testing.T, transient bool) {
	root := t.TempDir()
	ffs := faultfs.New(NewOSFS(nil))
	cfg := testConfig(root)
	cfg.FlushDiskType = SyncFlush
	cfg.TransientStorePoolEnable = transient
	s := openStarted(t, cfg, Deps{FS: ffs})
	put := func(i int) {
		res := mustPut(t, s, testMessage("T", int32(i%2), append(bodyf("m%04d", i), body(100, "c")...),
			codec.PropertyKeys, fmt.Sprintf("k%d", i)))
		done := make(chan error, 1)
		s.WaitDurable(res.EndOffset(), func(err error) { done <- err })
		require.NoError(t, <-done)
	}
	for i := 0; i < 50; i++ {
		put(i)
	}
	waitDispatched(t, s)
	_, err := s.flushLogicsAndCheckpoint(0)
	require.NoError(t, err)
	for i := 50; i < 100; i++ {
		put(i)
	}
	waitDispatched(t, s)

	crash := t.TempDir()
	require.NoError(t, ffs.CrashClone(root, crash, faultfs.CrashOptions{}))
	// The crash image holds the CommitLog records but only the first 50 queue entries.
	cq, err := os.ReadFile(filepath.Join(crash, "consumequeue", "T", "0", "00000000000000000000"))
	require.NoError(t, err)
	require.Equal(t, make([]byte, 20), cq[25*20:26*20])
	require.NoError(t, s.Shutdown())

	r := reopen(t, testConfig(crash), Deps{})
	require.False(t, r.LastExitOK())
	for q := int32(0); q < 2; q++ {
		recs := getAll(t, r, "T", q)
		require.Len(t, recs, 50)
		for i, rec := range recs {
			require.Equal(t, int64(i), rec.QueueOffset)
			require.Equal(t, string(bodyf("m%04d", i*2+int(q))), string(rec.Body[:5]))
		}
	}
	qr, err := r.QueryMessage("T", "k99", 5, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, qr.Buffers, 1)
	qr.Release()
	res := mustPut(t, r, testMessage("T", 0, []byte("after")))
	require.Equal(t, int64(50), res.QueueOffset)
}

// TestCrashLosesUnsyncedAsync: under ASYNC_FLUSH a crash loses what was never flushed, and the store
// comes back consistent whatever subset of the unsynced pages reached the disk.
func TestCrashLosesUnsyncedAsync(t *testing.T) {
	for seed := uint64(0); seed < 12; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			root := t.TempDir()
			ffs := faultfs.New(NewOSFS(nil))
			cfg := testConfig(root)
			s := openStarted(t, cfg, Deps{FS: ffs})
			for i := 0; i < 120; i++ {
				mustPut(t, s, testMessage("T", int32(i%3), append(bodyf("m%04d", i), body(300, "a")...),
					codec.PropertyKeys, fmt.Sprintf("k%d", i)))
				if i == 59 {
					waitDispatched(t, s)
					_, err := s.flushCommitLog(0)
					require.NoError(t, err)
					_, err = s.flushLogicsAndCheckpoint(0)
					require.NoError(t, err)
				}
			}
			waitDispatched(t, s)
			crash := t.TempDir()
			rng := rand.New(rand.NewPCG(seed, 7))
			opts := faultfs.CrashOptions{}
			if seed > 0 {
				opts.KeepUnsyncedPage = func(string, int64) bool { return rng.IntN(2) == 0 }
			}
			require.NoError(t, ffs.CrashClone(root, crash, opts))
			require.NoError(t, s.Shutdown())

			r := reopen(t, testConfig(crash), Deps{})
			total := 0
			for q := int32(0); q < 3; q++ {
				recs := getAll(t, r, "T", q)
				require.GreaterOrEqual(t, len(recs), 20, "the flushed first 60 messages survive")
				require.Equal(t, int64(len(recs)), r.GetMaxOffsetInQueue("T", q))
				for i, rec := range recs {
					require.Equal(t, int64(i), rec.QueueOffset)
					require.Equal(t, string(bodyf("m%04d", i*3+int(q))), string(rec.Body[:5]))
				}
				total += len(recs)
			}
			if seed == 0 {
				require.Equal(t, 60, total, "nothing unsynced survives")
			}
			// Every surviving message is findable by key, a lost one is not.
			for i := 0; i < 120; i++ {
				qr, err := r.QueryMessage("T", fmt.Sprintf("k%d", i), 4, 0, 1<<62)
				require.NoError(t, err)
				found := len(qr.Buffers)
				qr.Release()
				q := i % 3
				present := i/3 < int(r.GetMaxOffsetInQueue("T", int32(q)))
				if present {
					require.Equal(t, 1, found, "k%d", i)
				} else {
					require.Equal(t, 0, found, "k%d", i)
				}
			}
			mustPut(t, r, testMessage("T", 0, []byte("after")))
		})
	}
}

// TestCorruptionBelowCheckpointIsFatal: a bad record the checkpoint knew durable is not a torn tail.
func TestCorruptionBelowCheckpointIsFatal(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStarted(t, cfg, Deps{})
	for i := 0; i < 20; i++ {
		mustPut(t, s, testMessage("T", 0, body(100, "z")))
	}
	require.NoError(t, s.Shutdown())
	path := filepath.Join(dir, "commitlog", "00000000000000000000")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	data[200] ^= 0xFF // inside the second record's body: its CRC breaks
	require.NoError(t, os.WriteFile(path, data, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
	// A crash checkpoint: all 20 records were durable, their queue entries not yet.
	end := int64(20 * (91 + 100 + 1))
	require.NoError(t, writeCheckpoint(NewOSFS(nil), filepath.Join(dir, "checkpoint"),
		checkpointData{Valid: true, PhysicFlushedOffset: end, LogicsOffset: 0, PhysicMsgTimestamp: 1}))
	_, err = Open(cfg, Deps{Logger: testLogger(t)})
	require.ErrorIs(t, err, ErrCorruption)
	require.ErrorIs(t, err, codec.ErrBodyCRC)
	require.Contains(t, err.Error(), path)
}

// TestCheckpointTimestampsSurviveARunWithoutWrites: a clean stop keeps RocketMQ's checkpoint timestamps
// (physicMsgTimestamp, logicsMsgTimestamp, indexMsgTimestamp: the store time of the last record) true
// even when the run wrote nothing. Issue 14: they became 0, and Apache RocketMQ opening the store would
// then replay everything from the first file.
func TestCheckpointTimestampsSurviveARunWithoutWrites(t *testing.T) {
	for _, mode := range []struct {
		name      string
		transient bool
		flush     FlushDiskType
	}{
		{"mmap/async", false, AsyncFlush},
		{"pool/sync", true, SyncFlush},
	} {
		t.Run(mode.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := testutil.NewManualClockAt(time.UnixMilli(1_700_000_000_000))
			cfg := testConfig(dir)
			cfg.TransientStorePoolEnable = mode.transient
			cfg.FlushDiskType = mode.flush
			s := openStarted(t, cfg, Deps{Clock: clock.Now})
			var last PutResult
			for i := range 3 {
				clock.Advance(time.Second)
				last = mustPut(t, s, testMessage("T", 0, bodyf("m%d", i), codec.PropertyKeys, "k"))
			}
			waitDispatched(t, s)
			require.NoError(t, s.Shutdown())
			want := last.StoreTimestamp
			readTimestamps := func() [3]int64 {
				ck, err := readCheckpoint(&osFS{}, cfg.checkpointPath())
				require.NoError(t, err)
				require.True(t, ck.Valid)
				return [3]int64{ck.PhysicMsgTimestamp, ck.LogicsMsgTimestamp, ck.IndexMsgTimestamp}
			}
			require.Equal(t, [3]int64{want, want, want}, readTimestamps(), "after the run that wrote")

			// Runs without a write: one after the clean stop, one recovering as after a crash (the abort
			// marker left behind).
			for run := range 2 {
				if run == 1 {
					require.NoError(t, os.WriteFile(cfg.abortPath(), []byte("1"), 0o644))
				}
				s = reopen(t, cfg, Deps{Clock: clock.Now})
				require.NoError(t, s.Shutdown())
				require.Equal(t, [3]int64{want, want, want}, readTimestamps(), "after run %d without writes", run)
			}
		})
	}
}
