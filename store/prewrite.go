package store

import (
	"time"
)

// Pre-writing (prewriteMappedFileEnable, SYNC_FLUSH only).
//
// fallocate reserves a CommitLog file's blocks as unwritten extents. The first sync of data written into
// such an extent also converts it to a written one, which ext4 does through a journal commit: a 4 KiB
// write + fdatasync costs p50 244 µs here on a fallocated, never-written file against 114 µs on a
// written one. Under SYNC_FLUSH every group commit pays that, so the allocator goroutine writes each
// prepared file's zeros (plain writes through the page cache, whatever the append mode and the flush
// backend) and fdatasyncs them before the writer gets there. The pages stay cached and clean, so in
// mapping mode the writer's first touches are minor faults, and with the transient pool the committer's
// writes find their pages.
//
// Pacing: each chunk is prewriteChunkBytes written and one fdatasync; after it the disk is left to the
// group commit for (100/duty − 1) times as long as the chunk took (prewriteMappedFileDutyPercent), so a
// busy disk slows the pre-writing down with it. A chunk's writes go out prewritePieceBytes at a time, each
// under the file's prewrite lock; the roll that makes the file current ends the pre-writing under that
// lock (endPrewrite), so a zero can never land on a record, and the roll waits at most for one piece.
// A file the writer reaches before it is done is used as far as it got (ringmq_store_prewrite_late_files_total
// counts them).
// Creating files (the standbys) always comes before pre-writing them: the allocator checks for a roll's
// wake between chunks.
//
// A failed write or sync (a full disk on a file system without fallocate, an I/O error) ends the
// pre-writing of that file with a warning; nothing stored is at risk, since the file holds no record
// yet, and the group commit reports its own sync errors.
const (
	prewriteChunkBytes = 1 << 20
	prewritePieceBytes = 256 << 10
)

// prewriting reports whether prepared files are pre-written.
func (cl *commitLog) prewriting() bool {
	return cl.cfg.PrewriteMappedFileEnable && cl.cfg.FlushDiskType == SyncFlush
}

// endPrewrite stops any pre-writing of mf, waiting for a piece in progress: after it, no zero is written
// into mf. The flag goes up before the lock is taken, so the allocator, taking the lock again after its
// piece, sees it: the roll waits for one piece at most. Called by the roll that makes mf current (caller
// holds putLock and allocMu; roll is true: an unfinished file counts as late), and before a prepared file
// is dropped.
func (cl *commitLog) endPrewrite(mf *mappedFile, roll bool) {
	if mf.prewriteEnded.Swap(true) {
		return
	}
	mf.prewriteMu.Lock()
	mf.prewriteMu.Unlock() //nolint:staticcheck // an empty critical section: waits for the piece in progress
	if roll && mf.created && cl.prewriting() && mf.prewritten.Load() < mf.size {
		cl.prewriteLate.Add(1)
	}
}

// nextToPrewrite returns the first prepared file still to pre-write, held, or nil. Allocator goroutine.
func (cl *commitLog) nextToPrewrite() *mappedFile {
	cl.allocMu.Lock()
	defer cl.allocMu.Unlock()
	for _, sb := range cl.standbys {
		if sb.created && sb.prewritten.Load() < sb.size && !sb.prewriteEnded.Load() && sb.hold() {
			return sb
		}
	}
	return nil
}

// prewriteStep pre-writes one chunk of the first prepared file that needs it and returns how long to
// leave the disk alone before the next (pacing); more is false when no file needs pre-writing. Allocator
// goroutine only.
func (cl *commitLog) prewriteStep() (idle time.Duration, more bool) {
	mf := cl.nextToPrewrite()
	if mf == nil {
		return 0, false
	}
	defer mf.release()
	if cl.prewriteZeros == nil {
		cl.prewriteZeros = make([]byte, prewritePieceBytes)
	}
	start := time.Now()
	from := mf.prewritten.Load()
	end := min(from+prewriteChunkBytes, mf.size)
	var err error
	for off := from; off < end && err == nil; off += prewritePieceBytes {
		mf.prewriteMu.Lock()
		if mf.prewriteEnded.Load() {
			mf.prewriteMu.Unlock()
			return 0, true // the writer got there: go on with the next file, if any
		}
		_, err = mf.file.WriteAt(cl.prewriteZeros[:min(prewritePieceBytes, end-off)], off)
		mf.prewriteMu.Unlock()
	}
	if err == nil {
		// Outside the lock: syncing zeros (or, once the file is current, records) early is harmless.
		err = mf.file.Sync()
	}
	if err != nil {
		mf.prewriteEnded.Store(true)
		cl.logger.Warn("store: pre-writing a CommitLog file failed; it is used as far as it got",
			"file", mf.path, "prewrittenBytes", from, "error", err)
		return 0, true
	}
	mf.prewritten.Store(end)
	cl.prewrittenBytes.Add(end - from)
	took := time.Since(start)
	duty := time.Duration(cl.cfg.PrewriteMappedFileDutyPercent)
	return took*100/duty - took, true
}
