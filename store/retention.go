package store

import (
	"errors"
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
// Disk guard (RocketMQ's levels, PROTOCOL.md §11): above diskMaxUsedSpaceRatio expired files go at once
// instead of waiting for deleteWhen; above diskSpaceCleanForciblyRatio the oldest files go even before
// they expire; above diskSpaceWarningLevelRatio puts are refused (FlagDiskFull) until a later pass finds
// the disk below it again. A file allocation that failed with ENOSPC also sets FlagDiskFull; a pass
// that finds space asks the allocator to try again, and its success clears the flag.
func (s *Store) cleanOnce(now time.Time) (int, error) {
	cl := s.commitLog
	usage, err := s.fs.DiskUsage(s.cfg.commitLogDir())
	if err != nil {
		usage, err = s.fs.DiskUsage(s.cfg.StorePathRootDir)
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
			if cl.allocFailed.Load() {
				// Let the allocator prove the space is back: its next success clears the flag.
				cl.wakeAllocator()
			} else {
				s.flags.clear(FlagDiskFull)
				s.logger.Info("store: disk space back, accepting puts", "usedPercent", ratio)
			}
		}
	}
	cleanNow := ratio > float64(s.cfg.DiskMaxUsedSpaceRatio)
	forcibly := ratio > float64(s.cfg.DiskSpaceCleanForciblyRatio)
	if !s.deleteHours[now.Hour()] && !cleanNow {
		return 0, nil
	}
	deleted, err := s.deleteExpiredCommitLog(now, forcibly)
	if deleted > 0 {
		s.logger.Info("store: deleted CommitLog files", "files", deleted, "usedPercent", ratio,
			"forcibly", forcibly, "minOffset", cl.minOffset())
	}
	return deleted, errors.Join(err, s.cleanLogics())
}

// deleteExpiredCommitLog deletes, oldest first and at most deleteFilesBatchMax, the CommitLog files last
// modified more than fileReservedTime before now (or any, with forcibly), never the newest file, and
// stopping at the first file that must stay: RocketMQ's deleteExpiredFileByTime.
func (s *Store) deleteExpiredCommitLog(now time.Time, forcibly bool) (int, error) {
	q := s.commitLog.mfq
	files := q.snapshot()
	n := 0
	for i := 0; i < len(files)-1 && n < s.cfg.DeleteFilesBatchMax; i++ {
		mf := files[i]
		if !forcibly {
			st, err := s.fs.Stat(mf.path)
			if err != nil {
				return 0, err
			}
			if now.Sub(st.ModTime()) < s.cfg.FileReservedTime {
				break
			}
		}
		// Never delete what the dispatcher has not dispatched or what is not durable yet.
		if mf.fromOffset+mf.size > min(s.dispatcher.reputFrom.Load(), q.flushedWhere.Load()) {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	return n, q.removeFirst(n)
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
