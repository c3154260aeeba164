package store

import (
	"errors"
	"path/filepath"
	"time"
)

// retentionLoop runs the disk check and file deletion every cleanResourceInterval: RocketMQ's
// CleanCommitLogService followed by CleanConsumeQueueService.
func (s *Store) retentionLoop(stop <-chan struct{}) {
	t := time.NewTicker(s.cfg.CleanResourceInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if _, err := s.cleanOnce(s.clock()); err != nil {
			s.logger.Error("store: retention failed", "error", err)
		}
	}
}

// cleanOnce is one retention pass at time now. It returns how many CommitLog files it deleted.
//
// Disk guard (RocketMQ's levels, PROTOCOL.md §11; README "When the disk fills up"):
//   - above diskSpaceWarningLevelRatio (90 %) puts are refused (FlagDiskFull) until a later pass finds
//     the disk below it again. A file allocation that failed with ENOSPC and left no prepared file also
//     sets FlagDiskFull; a pass that finds space asks the allocator to try again, and its success clears
//     the flag.
//   - above diskMaxUsedSpaceRatio (75 %) expired files (older than fileReservedTime) go at once instead
//     of waiting for deleteWhen.
//   - above diskSpaceCleanForciblyRatio (85 %) the oldest files go even before they expire, but only with
//     cleanFileForciblyEnable=true (RocketMQ's default; not ringmq's): that deletes acknowledged messages
//     consumers may not have read, so it is logged at ERROR with what each consumer group loses
//     (reportForcedDeletion). Without it the files stay and one warning says so.
//
// The usage is read outside CommitLog file creations (sampleDiskUsage): a pass whose reading overlapped
// one waits for it to end and reads again.
func (s *Store) cleanOnce(now time.Time) (int, error) {
	for {
		n, settled, err := s.cleanPass(now)
		if settled {
			return n, err
		}
		s.waitForCreation()
	}
}

// cleanPass is cleanOnce's pass; settled is false, and nothing was decided, when the disk usage read
// during a CommitLog file creation.
func (s *Store) cleanPass(now time.Time) (deleted int, settled bool, err error) {
	cl := s.commitLog
	usage, settled, err := s.sampleDiskUsage()
	if !settled {
		return 0, false, nil
	}
	ratio := 0.0
	if err == nil {
		ratio = usage.UsedRatio()
	} else {
		s.logger.Warn("store: disk usage unknown", "error", err)
	}
	full := ratio > float64(s.cfg.DiskSpaceWarningLevelRatio)
	if full {
		if !s.diskFullRatio.Swap(true) {
			s.logger.Error("store: disk full, refusing puts", "usedPercent", ratio,
				"diskSpaceWarningLevelRatio", s.cfg.DiskSpaceWarningLevelRatio)
		}
		s.flags.set(FlagDiskFull)
	} else {
		s.diskFullRatio.Store(false)
		if s.flags.load()&FlagDiskFull != 0 {
			if cl.allocFailed.Load() && cl.standbyCount() == 0 {
				// Let the allocator prove the space is back: its next success clears the flag. A failure
				// with a prepared file left does not count (allocatorLoop): the next roll has its file,
				// and waiting for a success there kept puts refused with the disk back below the ratio.
				cl.wakeAllocator()
			} else {
				s.flags.clear(FlagDiskFull)
				s.logger.Info("store: disk space back, accepting puts", "usedPercent", ratio)
			}
		}
	}
	cleanNow := ratio > float64(s.cfg.DiskMaxUsedSpaceRatio)
	forcibly := ratio > float64(s.cfg.DiskSpaceCleanForciblyRatio)
	switch {
	case !forcibly:
		s.forciblyKept.Store(false)
	case !s.cfg.CleanFileForciblyEnable:
		forcibly = false
		if !s.forciblyKept.Swap(true) {
			s.logger.Warn("store: disk above diskSpaceCleanForciblyRatio; CommitLog files younger than "+
				"fileReservedTime are kept (cleanFileForciblyEnable=false): free space, lower fileReservedTime, or set "+
				"cleanFileForciblyEnable=true to delete them as RocketMQ does", "usedPercent", ratio,
				"diskSpaceCleanForciblyRatio", s.cfg.DiskSpaceCleanForciblyRatio,
				"diskSpaceWarningLevelRatio", s.cfg.DiskSpaceWarningLevelRatio, "fileReservedTime", s.cfg.FileReservedTime)
		}
	}
	manual := s.manualDeletes.Load() > 0
	if !s.deleteHours[now.Hour()] && !cleanNow && !manual {
		return 0, true, nil
	}
	if manual {
		s.manualDeletes.Add(-1)
	}
	deleted, err = s.deleteExpiredCommitLog(now, forcibly, ratio)
	if deleted > 0 {
		s.logger.Info("store: deleted CommitLog files", "files", deleted, "usedPercent", ratio,
			"forcibly", forcibly, "minOffset", cl.minOffset())
	}
	return deleted, true, errors.Join(err, s.cleanLogics())
}

// manualDeleteTimes is RocketMQ's MAX_MANUAL_DELETE_FILE_TIMES: the retention passes that, after a
// DELETE_EXPIRED_COMMITLOG, delete expired files whatever the hour.
const manualDeleteTimes = 20

// DeleteExpiredFilesManually makes the next manualDeleteTimes retention passes delete the CommitLog
// files older than fileReservedTime at once instead of waiting for deleteWhen (DELETE_EXPIRED_COMMITLOG,
// RocketMQ's executeDeleteFilesManually).
func (s *Store) DeleteExpiredFilesManually() { s.manualDeletes.Store(manualDeleteTimes) }

// waitForCreation returns once no CommitLog file is being created.
func (s *Store) waitForCreation() {
	cl := s.commitLog
	cl.allocMu.Lock()
	for cl.creating >= 0 {
		done := cl.createDone
		cl.allocMu.Unlock()
		<-done
		cl.allocMu.Lock()
	}
	cl.allocMu.Unlock()
}

// sampleDiskUsage reads the usage of the CommitLog's file system while no CommitLog file is being
// created; settled is false when a creation overlapped the reading. A creation whose fallocate fails
// holds the blocks it got until the call returns (tmpfs takes every free page first) or until
// openMappedFile removes the file (ext4, xfs), so a reading in between shows the disk full although it
// is not: issue 14 read 100 % on a tmpfs 83 % used, refused puts and forcibly deleted a stored file.
// checkRoom keeps the allocator from trying what statfs says cannot fit; this covers an allocation that
// fits by statfs and fails anyway (a quota, another writer). Every creation replaces createDone
// (createLocked), so an unchanged one means none started in between.
func (s *Store) sampleDiskUsage() (usage DiskUsage, settled bool, err error) {
	cl := s.commitLog
	cl.allocMu.Lock()
	busy, creation := cl.creating >= 0, cl.createDone
	cl.allocMu.Unlock()
	if busy {
		return DiskUsage{}, false, nil
	}
	usage, err = s.fs.DiskUsage(s.cfg.commitLogDir())
	if err != nil {
		usage, err = s.fs.DiskUsage(s.cfg.StorePathRootDir)
	}
	cl.allocMu.Lock()
	busy = cl.creating >= 0 || cl.createDone != creation
	cl.allocMu.Unlock()
	return usage, !busy, err
}

// deleteExpiredCommitLog deletes, oldest first and at most deleteFilesBatchMax, the CommitLog files last
// modified more than fileReservedTime before now (or, with forcibly, any), never the newest file, and
// stopping at the first file that must stay: RocketMQ's deleteExpiredFileByTime. ratio is the disk
// usage that made the pass run, for the log.
func (s *Store) deleteExpiredCommitLog(now time.Time, forcibly bool, ratio float64) (int, error) {
	q := s.commitLog.mfq
	files := q.snapshot()
	n, forced := 0, 0
	for i := 0; i < len(files)-1 && n < s.cfg.DeleteFilesBatchMax; i++ {
		mf := files[i]
		st, err := s.fs.Stat(mf.path)
		if err != nil {
			return 0, err
		}
		expired := now.Sub(st.ModTime()) >= s.cfg.FileReservedTime
		if !expired && !forcibly {
			break
		}
		// Never delete what the dispatcher has not dispatched or what is not durable yet.
		if mf.fromOffset+mf.size > min(s.dispatcher.reputFrom.Load(), q.flushedWhere.Load()) {
			break
		}
		if !expired {
			forced++
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	newMin := files[n].fromOffset
	if forced > 0 {
		s.reportForcedDeletion(files[:n], forced, newMin, ratio)
	}
	// The queues' minimum offsets move first. A pull between the two steps then answers OFFSET_TOO_SMALL
	// with the new minimum; the other way round it skipped the entries whose records had gone and
	// returned later ones under the old minimum (issue 14: "queue offsets are not contiguous: expected
	// 123 actual 146" with min offset 0).
	for _, cq := range s.queues.all() {
		cq.correctMinOffset(newMin)
	}
	return n, q.removeFirst(n)
}

// maxForcedLossLines bounds the per-group lines one forced deletion logs.
const maxForcedLossLines = 32

// reportForcedDeletion logs, at ERROR, a deletion of CommitLog files before fileReservedTime: the files
// (forced of them unexpired) and, for every consumer group whose committed offset lies below newMin's
// entries, the messages it has not consumed that go with them.
func (s *Store) reportForcedDeletion(gone []*mappedFile, forced int, newMin int64, ratio float64) {
	s.forcedDeletedFiles.Add(int64(forced))
	names := make([]string, len(gone))
	for i, mf := range gone {
		names[i] = filepath.Base(mf.path)
	}
	s.logger.Error("store: FORCED DELETION of CommitLog files younger than fileReservedTime: the disk is above "+
		"diskSpaceCleanForciblyRatio and cleanFileForciblyEnable=true; stored messages in them are gone",
		"files", names, "unexpiredFiles", forced, "fromOffset", gone[0].fromOffset, "toOffset", newMin,
		"usedPercent", ratio, "diskSpaceCleanForciblyRatio", s.cfg.DiskSpaceCleanForciblyRatio,
		"fileReservedTime", s.cfg.FileReservedTime)
	fn := s.consumerOffsets.Load()
	if fn == nil {
		s.logger.Error("store: FORCED DELETION: consumer progress unknown; messages no group has consumed may be among those deleted")
		return
	}
	var lossQueues, lostMessages int64
	for _, co := range (*fn)() {
		cq := s.queues.find(co.Topic, co.QueueID)
		if cq == nil {
			continue
		}
		from, to := max(co.Offset, cq.minOffset()), cq.minOffsetAfter(newMin)
		if from >= to {
			continue
		}
		lossQueues++
		lostMessages += to - from
		if lossQueues <= maxForcedLossLines {
			s.logger.Error("store: FORCED DELETION: a consumer group loses messages it has not consumed",
				"group", co.Group, "topic", co.Topic, "queueId", co.QueueID, "consumerOffset", co.Offset,
				"newMinOffset", to, "lostMessages", to-from)
		}
	}
	if lossQueues > maxForcedLossLines {
		s.logger.Error("store: FORCED DELETION: more consumer groups lose messages (not listed one by one)",
			"groupQueues", lossQueues-maxForcedLossLines)
	}
	if lossQueues > 0 {
		s.logger.Error("store: FORCED DELETION: unconsumed messages lost in total", "groupQueues", lossQueues,
			"messages", lostMessages)
	}
}

// cleanLogics removes ConsumeQueue and IndexFile files whose records are all gone and moves the queues'
// minimum offsets up: RocketMQ's CleanConsumeQueueService.
func (s *Store) cleanLogics() error {
	min := s.commitLog.minOffset()
	if len(s.commitLog.mfq.snapshot()) == 0 {
		return nil
	}
	var errs []error
	for _, cq := range s.queues.all() {
		if _, err := cq.deleteExpired(min); err != nil {
			errs = append(errs, err)
		}
		cq.correctMinOffset(min)
	}
	if s.index != nil {
		errs = append(errs, s.index.deleteExpired(min))
	}
	return errors.Join(errs...)
}
