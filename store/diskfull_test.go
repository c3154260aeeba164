package store

// A disk that fills up completely (issue 14): nothing stored is deleted unless the operator chose forced
// deletion, no ConsumeQueue entry is lost, and the disk guard does not act on the moment a failing
// preallocation holds every free block.

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// spaceFS models the free space of a file system over real files. DiskUsage reports free bytes out of
// total. A CommitLog file's Allocate behaves like fallocate(2) on a file system without the room: it
// takes every free block and fails with ENOSPC, giving them back when it returns (tmpfs). Armed with
// duringFailure, the next CommitLog allocation fails that way even though statfs showed room (a quota,
// another writer), and calls duringFailure while it holds the blocks: the moment a disk check may read.
type spaceFS struct {
	FS
	total         int64
	free          atomic.Int64
	allocations   atomic.Int64 // Allocate calls on CommitLog files
	duringFailure atomic.Pointer[func()]
}

func newSpaceFS(total, free int64) *spaceFS {
	f := &spaceFS{FS: NewOSFS(nil), total: total}
	f.free.Store(free)
	return f
}

func (f *spaceFS) DiskUsage(string) (DiskUsage, error) {
	return DiskUsage{TotalBytes: uint64(f.total), FreeBytes: uint64(f.free.Load())}, nil
}

func (f *spaceFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !isCommitLogPath(name) {
		return file, err
	}
	return &spaceFile{File: file, fs: f}, nil
}

func isCommitLogPath(name string) bool {
	sep := string(filepath.Separator)
	return strings.Contains(name, sep+"commitlog"+sep)
}

type spaceFile struct {
	File
	fs *spaceFS
}

func (sf *spaceFile) Allocate(size int64) error {
	sf.fs.allocations.Add(1)
	hook := sf.fs.duringFailure.Swap(nil)
	if hook == nil && size <= sf.fs.free.Load() {
		return sf.File.Allocate(size)
	}
	free := sf.fs.free.Swap(0)
	if hook != nil {
		(*hook)()
	}
	sf.fs.free.Store(free)
	return &os.PathError{Op: "fallocate", Path: sf.Name(), Err: syscall.ENOSPC}
}

// TestPreallocationThatCannotFitIsNotTried: with less free space than one CommitLog file, the allocator
// does not start a fallocate (which would fill the disk to the last block and, on ext4, keep the blocks
// until the file is removed); puts are refused once no prepared file is left, nothing stored goes, and
// the store accepts puts again by itself once space returns. Before the fix every attempt ran fallocate
// and left the file in the directory for its duration (issue 14: "the fourth CommitLog file could not be
// made", found present).
func TestPreallocationThatCannotFitIsNotTried(t *testing.T) {
	const total = 8 * testFileSize
	fsys := newSpaceFS(total, total/2)
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{FS: fsys})
	mustPut(t, s, testMessage("T", 0, body(100, "a")))
	testutil.Eventually(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	files := commitLogFiles(t, cfg.StorePathRootDir)
	require.Len(t, files, 1+standbyFiles)
	allocations := fsys.allocations.Load()

	fsys.free.Store(testFileSize - 1) // 87.5 % used: below the warning level, short of one file
	var refused error
	puts := 1
	for ; refused == nil; puts++ {
		require.Less(t, puts, 1000, "puts must be refused once the prepared files are used up")
		_, refused = s.PutMessage(testMessage("T", 0, body(1000, "b")))
	}
	require.ErrorIs(t, refused, ErrDiskFull)
	require.NotZero(t, s.RunningFlags()&FlagDiskFull)
	require.GreaterOrEqual(t, s.MaxPhyOffset(), int64(2*testFileSize), "refused only after rolling into the last prepared file")
	require.Equal(t, allocations, fsys.allocations.Load(), "a fallocate was started that statfs said cannot fit")
	require.Equal(t, files, commitLogFiles(t, cfg.StorePathRootDir))
	_, err := s.PutMessage(testMessage("T", 0, []byte("refused")))
	require.ErrorIs(t, err, ErrDiskFull)

	fsys.free.Store(total / 2)
	_, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	testutil.Eventually(t, "an allocation succeeding clears the flag", func() bool { return s.RunningFlags() == 0 })
	mustPut(t, s, testMessage("T", 0, body(1000, "c")))
	waitDispatched(t, s)
	require.Zero(t, s.MinPhyOffset())
	require.Len(t, getAll(t, s, "T", 0), puts, "every acknowledged put is readable")
}

// TestDiskFullClearsWithAStandbyLeft: the disk went above diskSpaceWarningLevelRatio after a
// preallocation had failed while a prepared file was still ready. Once the disk is below the ratio again
// puts are accepted: the next roll has its file. Before the fix the flag waited for an allocation to
// succeed, which the disk (still short of a whole file) never allowed: puts stayed refused at 88 % used.
func TestDiskFullClearsWithAStandbyLeft(t *testing.T) {
	const total = 8 * testFileSize
	fsys := newSpaceFS(total, total/2)
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{FS: fsys})
	mustPut(t, s, testMessage("T", 0, body(100, "a")))
	testutil.Eventually(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	fsys.free.Store(testFileSize - 1)
	for s.MaxPhyOffset() < testFileSize { // into file 1: preparing file 3 fails, file 2 is ready
		mustPut(t, s, testMessage("T", 0, body(1000, "b")))
	}
	testutil.Eventually(t, "the allocation failed", s.commitLog.allocFailed.Load)
	require.Equal(t, 1, s.commitLog.standbyCount())
	require.Zero(t, s.RunningFlags(), "file 2 is ready: puts go on")

	fsys.free.Store(total / 20) // 95 % used
	_, err := s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Equal(t, FlagDiskFull, s.RunningFlags())
	_, err = s.PutMessage(testMessage("T", 0, []byte("refused")))
	require.ErrorIs(t, err, ErrDiskFull)

	fsys.free.Store(testFileSize - 1) // 87.5 %: below the warning level, still short of a whole file
	_, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Zero(t, s.RunningFlags(), "below diskSpaceWarningLevelRatio with a prepared file ready: puts are refused")
	mustPut(t, s, testMessage("T", 0, []byte("accepted")))
}

// TestDiskCheckDuringAFailingPreallocation: a disk check pass that reads the disk while a CommitLog
// preallocation is failing (the file system reads 100 % used for that moment) decides nothing, even with
// forced deletion enabled (cleanOnce then waits for the creation and reads again): before the fix it refused puts and deleted the oldest stored file (issue 14: "min offset ...
// should be zero, but was 147" after a usage of 100 % on a tmpfs 83 % used).
func TestDiskCheckDuringAFailingPreallocation(t *testing.T) {
	fsys := newSpaceFS(1<<30, 900<<20)
	cfg := testConfig(t.TempDir())
	cfg.CleanFileForciblyEnable = true
	s := openStarted(t, cfg, Deps{FS: fsys})
	for s.MaxPhyOffset() < testFileSize { // file 1 is current; the allocator makes file 3
		mustPut(t, s, testMessage("T", 0, body(1000, "a")))
	}
	testutil.Eventually(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	_, err := s.flushCommitLog(0)
	require.NoError(t, err)
	waitDispatched(t, s) // file 0 is durable and dispatched: retention may delete it

	type pass struct {
		deleted int
		settled bool
		err     error
		flags   RunningFlags
		usage   DiskUsage
	}
	passes := make(chan pass, 1)
	hook := func() { // on the allocator goroutine, inside the creation: a disk check's pass now
		usage, _ := fsys.DiskUsage(cfg.StorePathRootDir)
		n, settled, err := s.cleanPass(time.Now())
		passes <- pass{n, settled, err, s.RunningFlags(), usage}
	}
	fsys.duringFailure.Store(&hook)
	for s.MaxPhyOffset() < 2*testFileSize { // the roll into file 2 has the allocator make file 4
		mustPut(t, s, testMessage("T", 0, body(1000, "b")))
	}
	var during pass
	testutil.Eventually(t, "the failing preallocation", func() bool {
		select {
		case during = <-passes:
			return true
		default:
			return false
		}
	})
	require.NoError(t, during.err)
	require.Equal(t, float64(100), during.usage.UsedRatio(), "the file system reads full during the failure")
	require.Zero(t, during.deleted, "a CommitLog file was deleted on a reading taken during a failing preallocation")
	require.Zero(t, during.flags, "flags set from a reading taken during a failing preallocation")
	require.False(t, during.settled, "a reading taken during a creation counted")
	require.Zero(t, s.MinPhyOffset())

	// The next pass reads the real usage (12 %): nothing to do either.
	n, err := s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Zero(t, n)
	require.Zero(t, s.RunningFlags()&FlagDiskFull, "a prepared file is left: puts go on")
	mustPut(t, s, testMessage("T", 0, []byte("accepted")))
}

// TestForcedDeletionIsAnExplicitChoice: above diskSpaceCleanForciblyRatio RocketMQ deletes the oldest
// CommitLog files even before fileReservedTime (cleanFileForciblyEnable, default true there). ringmq
// does so only when cleanFileForciblyEnable is set; by default the files stay, puts are refused above
// diskSpaceWarningLevelRatio and one warning says why. With it set, the deletion is logged at ERROR with
// the files and, per consumer group, the messages it loses unconsumed.
func TestForcedDeletionIsAnExplicitChoice(t *testing.T) {
	now := time.Now() // the files were just written: none is fileReservedTime (72 h) old
	setup := func(t *testing.T, forcibly bool) (*Store, *atomic.Int64, *logtest.Recorder, *prometheus.Registry) {
		var pct atomic.Int64
		pct.Store(50)
		cfg := testConfig(t.TempDir())
		cfg.CleanFileForciblyEnable = forcibly
		logger, logs := logtest.Logger()
		reg := prometheus.NewRegistry()
		s := openStarted(t, cfg, Deps{FS: usageFS(&pct), Logger: logger, Registerer: reg})
		fillFiles(t, s, 4)
		return s, &pct, logs, reg
	}
	t.Run("default keeps every file", func(t *testing.T) {
		s, pct, logs, reg := setup(t, false)
		files := s.commitLog.mfq.snapshot()
		for _, p := range []int64{88, 95, 99} {
			pct.Store(p)
			n, err := s.cleanOnce(now)
			require.NoError(t, err)
			require.Zero(t, n, "%d %% used: an unexpired CommitLog file was deleted without cleanFileForciblyEnable", p)
		}
		require.Len(t, s.commitLog.mfq.snapshot(), len(files))
		require.Zero(t, s.MinPhyOffset())
		require.NotZero(t, s.RunningFlags()&FlagDiskFull, "above the warning level puts are refused instead")
		require.Zero(t, s.forcedDeletedFiles.Load())
		require.Zero(t, gathered(t, reg, "ringmq_store_forced_deleted_files_total", ""))
		warns := logs.AtLevel(slog.LevelWarn)
		require.Len(t, warns, 1, "one warning per episode")
		require.Contains(t, warns[0].Message, "cleanFileForciblyEnable=false")
		errs := logs.AtLevel(slog.LevelError)
		require.Len(t, errs, 1)
		require.Contains(t, errs[0].Message, "disk full, refusing puts")

		// Expired files still go above diskMaxUsedSpaceRatio: that is retention, not forced deletion.
		n, err := s.cleanOnce(now.Add(73 * time.Hour))
		require.NoError(t, err)
		require.Equal(t, len(files)-1, n)
		require.Zero(t, s.forcedDeletedFiles.Load())
		require.Zero(t, gathered(t, reg, "ringmq_store_forced_deleted_files_total", ""), "retention is not forced")
		require.Equal(t, float64(files[len(files)-1].fromOffset), gathered(t, reg, "ringmq_store_commitlog_min_offset_bytes", ""))
	})
	t.Run("cleanFileForciblyEnable deletes and says what is lost", func(t *testing.T) {
		s, pct, logs, reg := setup(t, true)
		files := s.commitLog.mfq.snapshot()
		maxOffset := s.GetMaxOffsetInQueue("T", 0)
		s.SetConsumerOffsets(func() []ConsumerOffset {
			return []ConsumerOffset{
				{Group: "G-behind", Topic: "T", QueueID: 0, Offset: 3},
				{Group: "G-done", Topic: "T", QueueID: 0, Offset: maxOffset},
				{Group: "G-gone", Topic: "NoSuchTopic", QueueID: 0, Offset: 0},
			}
		})
		pct.Store(88) // above diskSpaceCleanForciblyRatio (85), below the warning level (90)
		n, err := s.cleanOnce(now)
		require.NoError(t, err)
		require.Equal(t, len(files)-1, n)
		newMin := files[len(files)-1].fromOffset
		require.Equal(t, newMin, s.MinPhyOffset())
		require.Equal(t, int64(n), s.forcedDeletedFiles.Load())
		require.Equal(t, float64(n), gathered(t, reg, "ringmq_store_forced_deleted_files_total", ""))
		require.Equal(t, float64(newMin), gathered(t, reg, "ringmq_store_commitlog_min_offset_bytes", ""))
		minOffset := s.GetMinOffsetInQueue("T", 0)
		require.Greater(t, minOffset, int64(3))

		errs := logs.AtLevel(slog.LevelError)
		require.NotEmpty(t, errs)
		require.Contains(t, errs[0].Message, "FORCED DELETION")
		for _, mf := range files[:n] {
			require.Contains(t, logtest.Attr(errs[0], "files"), filepath.Base(mf.path))
		}
		require.Equal(t, fmt.Sprint(newMin), logtest.Attr(errs[0], "toOffset"))
		var losses []slog.Record
		for _, r := range errs {
			if logtest.Attr(r, "group") != "" {
				losses = append(losses, r)
			}
		}
		require.Len(t, losses, 1, "only the group behind loses messages")
		require.Equal(t, "G-behind", logtest.Attr(losses[0], "group"))
		require.Equal(t, fmt.Sprint(minOffset-3), logtest.Attr(losses[0], "lostMessages"))
		require.Empty(t, logs.AtLevel(slog.LevelWarn))
	})
}

// removeHookFS runs hook before a CommitLog file is removed.
type removeHookFS struct {
	FS
	hook func(name string)
}

func (f *removeHookFS) Remove(name string) error {
	if isCommitLogPath(name) {
		f.hook(name)
	}
	return f.FS.Remove(name)
}

// TestRetentionMovesQueueMinimumBeforeDeletingFiles: while retention deletes CommitLog files, a pull from
// the old minimum is told OFFSET_TOO_SMALL with the new one. Before the fix the files went first: the
// pull skipped the entries whose records were gone and returned later messages under a minimum offset
// of 0 (issue 14: "queue offsets are not contiguous: expected 123 actual 146").
func TestRetentionMovesQueueMinimumBeforeDeletingFiles(t *testing.T) {
	var pct atomic.Int64
	pct.Store(80) // above diskMaxUsedSpaceRatio: expired files go at once
	var mu sync.Mutex
	var during []*GetMessageResult
	var s *Store
	fsys := &removeHookFS{FS: usageFS(&pct), hook: func(string) {
		r, err := s.GetMessage("g", "T", 0, 0, 32, 0, nil)
		if err == nil {
			mu.Lock()
			during = append(during, &GetMessageResult{Status: r.Status, MinOffset: r.MinOffset,
				NextBeginOffset: r.NextBeginOffset, MessageCount: r.MessageCount})
			mu.Unlock()
			r.Release()
		}
	}}
	s = openStarted(t, testConfig(t.TempDir()), Deps{FS: fsys})
	fillFiles(t, s, 3)
	n, err := s.cleanOnce(time.Now().Add(73 * time.Hour))
	require.NoError(t, err)
	require.Equal(t, 2, n)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, during, n)
	for _, r := range during {
		require.Equal(t, OffsetTooSmall, r.Status, "a pull from 0 during the deletion: %s, %d messages, next %d, min offset %d",
			r.Status, r.MessageCount, r.NextBeginOffset, r.MinOffset)
		require.Equal(t, s.GetMinOffsetInQueue("T", 0), r.NextBeginOffset)
	}
}

// TestConsumeQueueNoSpaceLosesNoEntry: ENOSPC creating a queue's next ConsumeQueue file, and writing the
// checkpoint, stops the dispatcher at the record it could not index (flags set, retried) and loses
// nothing: once the file can be made every message is in its queue at its own offset, contiguous.
func TestConsumeQueueNoSpaceLosesNoEntry(t *testing.T) {
	var pct atomic.Int64
	pct.Store(50)
	ffs := usageFS(&pct)
	s := openStarted(t, testConfig(t.TempDir()), Deps{FS: ffs})
	const perFile = 64 // testConfig: 64 entries per ConsumeQueue file
	const total = 2*perFile + 10
	for i := range perFile - 4 {
		mustPut(t, s, testMessage("Q", 0, bodyf("m%d", i)))
	}
	waitDispatched(t, s)
	// An allocation succeeding clears DISK_FULL (space is there): let the allocator finish first.
	testutil.Eventually(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpCreate | faultfs.OpAllocate, PathContains: "consumequeue", Err: syscall.ENOSPC})
	removeCk := ffs.Inject(faultfs.Rule{Ops: faultfs.OpOpen | faultfs.OpCreate, PathContains: "checkpoint.tmp", Err: syscall.ENOSPC})
	// One batch: the queue's second and third file are needed, and the dispatcher's failure (which
	// sets DISK_FULL) cannot refuse a put half-way.
	batch := &BatchPut{}
	for i := perFile - 4; i < total; i++ {
		batch.Messages = append(batch.Messages, *testMessage("Q", 0, bodyf("m%d", i)))
	}
	res, err := s.PutMessages(batch)
	require.NoError(t, err)
	require.Equal(t, PutOK, res.Status)
	const failed = FlagWriteLogicsQueueError | FlagDiskFull
	testutil.Eventually(t, "the dispatcher meets ENOSPC", func() bool { return s.RunningFlags()&failed == failed })
	require.Equal(t, int64(perFile), s.GetMaxOffsetInQueue("Q", 0), "the first file is full, the next cannot be made")
	_, err = s.flushLogicsAndCheckpoint(0)
	require.ErrorIs(t, err, syscall.ENOSPC)
	remove()
	removeCk()
	waitDispatched(t, s)
	_, err = s.flushLogicsAndCheckpoint(0)
	require.NoError(t, err)
	recs := getAll(t, s, "Q", 0)
	require.Len(t, recs, total)
	for i, r := range recs {
		require.Equal(t, int64(i), r.QueueOffset)
		require.Equal(t, fmt.Sprintf("m%d", i), string(r.Body))
	}
	require.Zero(t, s.RunningFlags()&(FlagWriteLogicsQueueError|FlagWriteIndexFileError))
	_, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	require.Zero(t, s.RunningFlags(), "space is back: the disk-full flag clears by itself")
	mustPut(t, s, testMessage("Q", 0, []byte("after")))
}
