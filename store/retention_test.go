package store

import (
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// usageFS reports a 1 TiB disk used at a settable percentage (so that a file always fits by statfs).
func usageFS(pct *atomic.Int64) *faultfs.FS {
	ffs := faultfs.New(NewOSFS(nil))
	ffs.SetDiskUsage(func(string) (DiskUsage, error) {
		const total = 1 << 40
		return DiskUsage{TotalBytes: total, FreeBytes: uint64(100-pct.Load()) * (total / 100)}, nil
	})
	return ffs
}

func fillFiles(t *testing.T, s *Store, files int) {
	t.Helper()
	i := 0
	for ; len(s.commitLog.mfq.snapshot()) < files; i++ {
		mustPut(t, s, testMessage("T", int32(i%2), body(500, "R"), codec.PropertyKeys, fmt.Sprintf("k%d", i)))
	}
	for end := i + 10; i < end; i++ { // both queues get entries in the newest file
		mustPut(t, s, testMessage("T", int32(i%2), body(500, "R"), codec.PropertyKeys, fmt.Sprintf("k%d", i)))
	}
	waitDispatched(t, s)
	_, err := s.flushCommitLog(0)
	require.NoError(t, err)
}

func TestRetentionByTime(t *testing.T) {
	var pct atomic.Int64
	pct.Store(50)
	cfg := testConfig(t.TempDir())
	cfg.DeleteFilesBatchMax = 2
	cfg.MaxIndexNum = 64 // several IndexFiles, so old ones can go
	now := time.Now()
	clock := testutil.NewManualClockAt(now)
	s := openStarted(t, cfg, Deps{FS: usageFS(&pct), Clock: clock.Now})
	fillFiles(t, s, 6)
	files := s.commitLog.mfq.snapshot()

	next04 := time.Date(now.Year(), now.Month(), now.Day()+1, 4, 0, 0, 0, time.Local)
	n, err := s.cleanOnce(next04)
	require.NoError(t, err)
	require.Zero(t, n, "at 04:00 but nothing is 72 h old")
	expired := next04.Add(72 * time.Hour)
	n, err = s.cleanOnce(expired.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "old enough, but 05:00 is not deleteWhen")

	n, err = s.cleanOnce(expired)
	require.NoError(t, err)
	require.Equal(t, 2, n, "deleteFilesBatchMax")
	require.Equal(t, files[2].fromOffset, s.MinPhyOffset())
	for {
		n, err = s.cleanOnce(expired)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.Equal(t, files[len(files)-1].fromOffset, s.MinPhyOffset(), "the newest file stays")
	testutil.Eventually(t, "the allocator's files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	require.Len(t, commitLogFiles(t, cfg.StorePathRootDir), 1+standbyFiles, "the newest and the standbys")

	for q := int32(0); q < 2; q++ {
		minOff := s.GetMinOffsetInQueue("T", q)
		require.Greater(t, minOff, int64(0))
		require.GreaterOrEqual(t, s.GetCommitLogOffsetInQueue("T", q, minOff), s.MinPhyOffset())
		r, err := s.GetMessage("g", "T", q, 0, 32, 0, nil)
		require.NoError(t, err)
		require.Equal(t, OffsetTooSmall, r.Status)
		require.Equal(t, minOff, r.NextBeginOffset)
		r.Release()
		r, err = s.GetMessage("g", "T", q, minOff, 32, 0, nil)
		require.NoError(t, err)
		require.Equal(t, Found, r.Status)
		r.Release()
	}
	s.index.mu.RLock()
	firstIdx := s.index.files[0]
	s.index.mu.RUnlock()
	require.GreaterOrEqual(t, firstIdx.endPhyOffset.Load(), s.MinPhyOffset(), "IndexFiles below the minimum went")
	q, err := s.QueryMessage("T", "k0", 4, 0, 1<<62)
	require.NoError(t, err)
	require.Empty(t, q.Buffers)
	q.Release()

	require.NoError(t, s.Shutdown())
	r := reopen(t, cfg, Deps{FS: usageFS(&pct), Clock: clock.Now})
	require.Equal(t, files[len(files)-1].fromOffset, r.MinPhyOffset())
	require.Equal(t, s.GetMinOffsetInQueue("T", 0), r.GetMinOffsetInQueue("T", 0))
}

func TestRetentionByDiskPressure(t *testing.T) {
	var pct atomic.Int64
	pct.Store(50)
	cfg := testConfig(t.TempDir())
	now := time.Date(2030, 1, 1, 10, 0, 0, 0, time.Local) // not deleteWhen
	clock := testutil.NewManualClockAt(now)
	s := openStarted(t, cfg, Deps{FS: usageFS(&pct), Clock: clock.Now})
	fillFiles(t, s, 4)
	files := s.commitLog.mfq.snapshot()

	pct.Store(80) // > diskMaxUsedSpaceRatio 75: expired files go at once, unexpired stay
	n, err := s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Zero(t, n)
	n, err = s.cleanOnce(time.Now().Add(73 * time.Hour))
	require.NoError(t, err)
	require.Equal(t, len(files)-1, n)
	require.Zero(t, s.RunningFlags())

	fillFiles(t, s, 4)
	pct.Store(88) // > 85: unexpired files stay unless forced deletion is enabled
	n, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Zero(t, n, "cleanFileForciblyEnable is off by default")
	s.cfg.CleanFileForciblyEnable = true // retention goroutine idle (cleanResourceInterval 1 h)
	n, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Equal(t, 3, n)
	require.Zero(t, s.RunningFlags()&FlagDiskFull, "88% is below the 90% warning level")
}

func TestDiskFullRefusesAndRecovers(t *testing.T) {
	var pct atomic.Int64
	pct.Store(50)
	ffs := usageFS(&pct)
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{FS: ffs})
	mustPut(t, s, testMessage("T", 0, []byte("a")))

	pct.Store(95)
	_, err := s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Equal(t, FlagDiskFull, s.RunningFlags())
	res, err := s.PutMessage(testMessage("T", 0, []byte("b")))
	require.ErrorIs(t, err, ErrDiskFull)
	require.Equal(t, ServiceNotAvailable, res.Status)

	pct.Store(60)
	_, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Zero(t, s.RunningFlags(), "space came back: the flag clears by itself")
	mustPut(t, s, testMessage("T", 0, []byte("c")))

	// ENOSPC when the next CommitLog file is allocated.
	remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpAllocate, PathContains: "commitlog", Err: syscall.ENOSPC})
	for i := 0; s.RunningFlags()&FlagDiskFull == 0; i++ {
		_, err := s.PutMessage(testMessage("T", 0, body(1000, "f")))
		if err != nil {
			require.ErrorIs(t, err, ErrDiskFull)
			break
		}
		require.Less(t, i, 1000, "an allocation must have failed by now")
	}
	testutil.Eventually(t, "disk full flag", func() bool { return s.RunningFlags()&FlagDiskFull != 0 })
	_, err = s.PutMessage(testMessage("T", 0, []byte("refused")))
	require.ErrorIs(t, err, ErrDiskFull)
	remove()
	_, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	testutil.Eventually(t, "allocator success clears the flag", func() bool { return s.RunningFlags() == 0 })
	waitDispatched(t, s)
	before := s.GetMaxOffsetInQueue("T", 0)
	for i := 0; i < 200; i++ {
		mustPut(t, s, testMessage("T", 0, body(1000, "g")))
	}
	waitDispatched(t, s)
	require.Equal(t, before+200, s.GetMaxOffsetInQueue("T", 0))
}

func TestFlushIOErrorMakesStoreReadOnly(t *testing.T) {
	ffs := faultfs.New(NewOSFS(nil))
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	s := openStarted(t, cfg, Deps{FS: ffs})
	testutil.Eventually(t, "standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpSync, PathContains: "commitlog", Err: syscall.EIO})
	defer remove()
	res := mustPut(t, s, testMessage("T", 0, []byte("a")))
	done := make(chan error, 1)
	s.WaitDurable(res.EndOffset(), func(err error) { done <- err })
	require.ErrorIs(t, <-done, syscall.EIO)
	testutil.Eventually(t, "not writeable", func() bool { return s.RunningFlags()&FlagNotWriteable != 0 })
	_, err := s.PutMessage(testMessage("T", 0, []byte("b")))
	require.ErrorIs(t, err, ErrFlushFailed)
	require.ErrorIs(t, err, ErrServiceNotAvailable)
}

// CleanExpiredConsumeQueues (CLEAN_EXPIRED_CONSUMEQUEUE) deletes a queue whose records retention
// removed, and its topic when no queue is left, as RocketMQ's cleanExpiredConsumerQueue does;
// queues with live records stay.
func TestCleanExpiredConsumeQueues(t *testing.T) {
	var pct atomic.Int64
	pct.Store(50)
	cfg := testConfig(t.TempDir())
	now := time.Now()
	clock := testutil.NewManualClockAt(now)
	s := openStarted(t, cfg, Deps{FS: usageFS(&pct), Clock: clock.Now})
	mustPut(t, s, testMessage("Old", 0, body(500, "O")))
	fillFiles(t, s, 4)
	n, err := s.CleanExpiredConsumeQueues()
	require.NoError(t, err)
	require.Zero(t, n, "every record is still there")

	expired := time.Date(now.Year(), now.Month(), now.Day()+4, 4, 0, 0, 0, time.Local)
	for {
		n, err := s.cleanOnce(expired)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	require.Positive(t, s.MinPhyOffset(), "Old's record, the first, is gone")
	require.Contains(t, s.QueueTopics(), "Old")

	n, err = s.CleanExpiredConsumeQueues()
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, []string{"T"}, s.QueueTopics())
	require.Equal(t, int64(0), s.GetMaxOffsetInQueue("Old", 0))
	require.NoDirExists(t, cfg.consumeQueueDir()+"/Old")
	require.Greater(t, s.GetMaxOffsetInQueue("T", 1), int64(0))
}

// DeleteExpiredFilesManually (DELETE_EXPIRED_COMMITLOG): expired files go at the next passes
// whatever the hour, for manualDeleteTimes passes, then deleteWhen rules again.
func TestDeleteExpiredFilesManually(t *testing.T) {
	var pct atomic.Int64
	pct.Store(50)
	cfg := testConfig(t.TempDir())
	cfg.DeleteFilesBatchMax = 1
	now := time.Now()
	clock := testutil.NewManualClockAt(now)
	s := openStarted(t, cfg, Deps{FS: usageFS(&pct), Clock: clock.Now})
	fillFiles(t, s, 4)
	files := s.commitLog.mfq.snapshot()
	notDeleteWhen := time.Date(now.Year(), now.Month(), now.Day()+4, 5, 0, 0, 0, time.Local) // expired, 05:00
	n, err := s.cleanOnce(notDeleteWhen)
	require.NoError(t, err)
	require.Zero(t, n, "05:00 is not deleteWhen")

	s.DeleteExpiredFilesManually()
	n, err = s.cleanOnce(notDeleteWhen)
	require.NoError(t, err)
	require.Equal(t, 1, n, "a manual pass deletes at once (deleteFilesBatchMax)")
	require.Equal(t, files[1].fromOffset, s.MinPhyOffset())
	for range manualDeleteTimes - 1 {
		_, err = s.cleanOnce(notDeleteWhen)
		require.NoError(t, err)
	}
	require.Equal(t, files[len(files)-1].fromOffset, s.MinPhyOffset(), "every expired file but the newest went")
	require.Zero(t, s.manualDeletes.Load(), "the manual passes are used up")
}
