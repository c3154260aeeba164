package store

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/ringmq/ringmq/codec"
)

// recover runs at Open, before any goroutine starts:
//
//  1. ConsumeQueues find their ends (RocketMQ scans the last three files of each).
//  2. The CommitLog's end: after a clean shutdown the checkpoint says it exactly (checked cheaply);
//     after a crash the records are re-scanned (magic, size, CRC, physical offset) from the checkpoint's
//     safe point, and the first bad record ends the log — unless it lies below the offset the checkpoint
//     knew durable, which is corruption and fatal. Then the transient pool's buffer files continue it
//     with the acknowledged records the crashed process had not committed (poolrestore.go).
//  3. The CommitLog is cut there (tail zeroed, later files deleted); ConsumeQueue entries pointing past
//     the cut go (after a crash, all past the replay's start: they may be torn); IndexFiles are made
//     consistent.
//  4. The dispatcher replays the records from the safe point to the end, rebuilding what queues and index
//     lack (entries already present are skipped), then queue offsets and minimum offsets are set.
func (s *Store) recover(lastExitOK bool, ck checkpointData) error {
	cl := s.commitLog
	for _, cq := range s.queues.all() {
		if err := cq.recover(); err != nil {
			return err
		}
	}
	var end, replayFrom int64
	var err error
	if lastExitOK {
		end, replayFrom, err = s.recoverCommitLogNormally(ck)
	} else {
		end, replayFrom, err = s.recoverCommitLogAbnormally(ck)
	}
	if err != nil {
		return err
	}
	truncated := false
	// A slave's partial last record (its master died or went away mid-frame) goes at every start, as a
	// Java slave's recovery cuts it: the slave then asks for the record from its start, and a master
	// that restarted meanwhile, which cannot know it sent those bytes, finds the slave at a record
	// boundary instead of refusing it as diverged (ha.Server).
	if s.cfg.TrimPartialRecord || s.cfg.Slave {
		if whole := s.wholeRecordsEnd(max(replayFrom, cl.minOffset()), end); whole < end {
			s.logger.Warn("store: cutting the partial record at the CommitLog's end (a replica's, never acknowledged)",
				"from", end, "to", whole, "bytes", end-whole)
			end, replayFrom, truncated = whole, min(replayFrom, whole), true
		}
	}
	if to := s.cfg.TruncateCommitLogTo; s.cfg.TruncateCommitLog && to < end {
		if to < cl.minOffset() || !s.recordStartBelow(to, end) {
			return fmt.Errorf("store: cannot truncate the CommitLog to %d: not where a record starts in [%d, %d)",
				to, cl.minOffset(), end)
		}
		s.logger.Warn("store: truncating the CommitLog's divergent tail", "from", end, "to", to, "bytes", end-to)
		end, replayFrom, truncated = to, min(replayFrom, to), true
	}
	if err := cl.mfq.truncateFrom(end); err != nil {
		return err
	}
	// CommitLog positions: the file holding end becomes current.
	cl.maxOffset.Store(end)
	cl.reservedEnd.Store(end)
	if last := cl.mfq.last(); last != nil && end >= last.fromOffset && end < last.fromOffset+last.size {
		cl.cur = last
		cl.mfq.prepareForAppends(last) // appended from here, as a new file is
	}
	cl.mfq.committedWhere.Store(end)
	if lastExitOK {
		cl.mfq.flushedWhere.Store(end)
	} else {
		// Bytes recovered from the page cache after a process crash are not necessarily on disk yet.
		syncFrom := max(min(replayFrom, end), cl.minOffset())
		for _, mf := range cl.mfq.snapshot() {
			if mf.fromOffset+mf.size > syncFrom {
				mf.flushed.Store(max(syncFrom-mf.fromOffset, 0))
			}
		}
		cl.mfq.flushedWhere.Store(syncFrom)
		if _, err := cl.mfq.flush(0); err != nil {
			return fmt.Errorf("store: recovery flush: %w", err)
		}
	}

	// After a crash, entries for the records the replay below re-reads are dropped and rebuilt from the
	// CommitLog: they were not durable (the checkpoint's logics offset lies below them), so a power cut
	// may have torn them, half old page, half new.
	dirtyFrom := end
	if !lastExitOK {
		dirtyFrom = min(max(replayFrom, cl.minOffset()), end)
	}
	for _, cq := range s.queues.all() {
		if err := cq.truncateDirty(dirtyFrom); err != nil {
			return err
		}
	}
	if s.index != nil && !lastExitOK {
		if err := s.index.recoverAbnormal(ck); err != nil {
			return err
		}
	}
	if s.index != nil && (!lastExitOK || truncated) {
		if err := s.index.truncateDirty(end); err != nil {
			return err
		}
	}
	if s.index != nil && ck.Valid {
		if !lastExitOK && s.index.lastIndexed >= ck.LogicsOffset {
			// A record's keys (UNIQ_KEY, each KEYS word) are indexed one by one, and the checkpoint may
			// have counted some of them only: the newest record kept is indexed again, whole (a key
			// found twice is the same record; QueryMessage drops the repeat). Below the logics offset
			// every record was indexed whole before the checkpoint was taken.
			s.index.lastIndexed--
		}
		// Every record below the checkpoint's logics offset was indexed (its entries are among those
		// kept), so the replay indexes from there on even when the newest indexed record is older (a
		// stretch of records without keys leaves no trace in the IndexFile).
		s.index.lastIndexed = max(s.index.lastIndexed, min(ck.LogicsOffset, end)-1)
	}
	replayFrom = min(max(replayFrom, cl.minOffset()), end)
	s.dispatcher.reputFrom.Store(replayFrom)
	if err := s.dispatcher.reput(); err != nil {
		return fmt.Errorf("store: replaying the CommitLog from %d to %d: %w", replayFrom, end, err)
	}
	s.seedTimestamps(end, ck)
	for _, cq := range s.queues.all() {
		cq.nextQueueOffset.Store(cq.maxOffset())
		if len(cl.mfq.snapshot()) > 0 {
			cq.correctMinOffset(cl.minOffset())
		}
	}
	if truncated {
		// The checkpoint must not name offsets past the cut: a crash before the next one would make
		// recovery scan from there, over the zeros, and keep a hole.
		if _, err := cl.mfq.flush(0); err != nil {
			return fmt.Errorf("store: flush after truncation: %w", err)
		}
		if _, err := s.flushLogicsAndCheckpoint(0); err != nil {
			return fmt.Errorf("store: checkpoint after truncation: %w", err)
		}
	}
	s.logger.Info("store: recovered", "normal", lastExitOK, "minOffset", cl.minOffset(), "maxOffset", end,
		"replayedFrom", replayFrom, "queues", len(s.queues.all()),
		"restoredFromPoolMessages", s.poolRestore.messages, "restoredFromPoolBytes", s.poolRestore.bytes)
	return nil
}

// seedTimestamps gives the checkpoint's RocketMQ timestamps (physicMsgTimestamp, logicsMsgTimestamp,
// indexMsgTimestamp) their values after recovery, before any put: the store time of the last record
// below end. The scan sets it on each file it walks; when recovery trusted the checkpoint instead, that
// checkpoint's physicMsgTimestamp is the store time of exactly that record. Without this, a run that
// wrote nothing stopped with zeros there, and Apache RocketMQ opening the store would replay it all.
func (s *Store) seedTimestamps(end int64, ck checkpointData) {
	s.lastCheckpoint = ck
	mf := s.commitLog.mfq.find(end - 1)
	if mf == nil {
		return
	}
	if mf.storeTimestamp.Load() == 0 && ck.PhysicFlushedOffset == end {
		mf.storeTimestamp.Store(ck.PhysicMsgTimestamp)
	}
	if s.dispatcher.lastStoreTs.Load() == 0 { // the replay dispatched nothing
		s.dispatcher.lastStoreTs.Store(mf.storeTimestamp.Load())
	}
}

// recoverCommitLogNormally trusts a ringmq checkpoint written at clean shutdown; without one (a store
// of Apache RocketMQ) it scans the last three files as RocketMQ does.
func (s *Store) recoverCommitLogNormally(ck checkpointData) (end, replayFrom int64, err error) {
	files := s.commitLog.mfq.snapshot()
	if len(files) == 0 {
		return 0, 0, nil
	}
	if ck.Valid {
		end = ck.PhysicFlushedOffset
		last := files[len(files)-1]
		if end >= files[0].fromOffset && end <= last.fromOffset+last.size && !s.looksLikeRecordAt(end) {
			return end, min(ck.LogicsOffset, end), nil
		}
		s.logger.Warn("store: checkpoint does not match the CommitLog; scanning", "checkpointOffset", end)
	}
	start := files[max(0, len(files)-3)].fromOffset
	end, err = s.scanCommitLog(start, s.cfg.CheckCRCOnRecover, -1)
	if err != nil {
		return 0, 0, err
	}
	// RocketMQ replays from the furthest record any ConsumeQueue holds.
	replayFrom = start
	for _, cq := range s.queues.all() {
		replayFrom = max(replayFrom, cq.maxPhysicOffset.Load())
	}
	return end, min(replayFrom, end), nil
}

// recoverCommitLogAbnormally re-scans from the checkpoint's safe point (the lower of the durable
// CommitLog offset and the offset below which queues and index are durable). Without a ringmq
// checkpoint it starts, like RocketMQ, at the newest file whose first record is older than the
// checkpoint's timestamps (less 3 s).
func (s *Store) recoverCommitLogAbnormally(ck checkpointData) (end, replayFrom int64, err error) {
	files := s.commitLog.mfq.snapshot()
	if len(files) == 0 {
		return 0, 0, nil
	}
	last := files[len(files)-1]
	var start int64
	durableBelow := int64(-1)
	if ck.Valid {
		start = min(ck.PhysicFlushedOffset, ck.LogicsOffset)
		start = min(max(start, files[0].fromOffset), last.fromOffset+last.size)
		durableBelow = ck.PhysicFlushedOffset
	} else {
		minTs := min(ck.PhysicMsgTimestamp, ck.LogicsMsgTimestamp)
		if s.index != nil {
			minTs = min(minTs, ck.IndexMsgTimestamp)
		}
		minTs -= 3000
		start = files[0].fromOffset
		for i := len(files) - 1; i >= 0; i-- {
			rec, derr := codec.DecodeRecord(files[i].data, false)
			if derr == nil && rec.StoreTimestamp <= minTs {
				start = files[i].fromOffset
				break
			}
		}
	}
	end, err = s.scanCommitLog(start, s.cfg.CheckCRCOnRecover, durableBelow)
	if err != nil {
		return 0, 0, err
	}
	// Acknowledged appends the process had not committed yet, kept by the pool's buffer files.
	end, err = s.restoreFromPool(end)
	if err != nil {
		return 0, 0, err
	}
	return end, start, nil
}

// wholeRecordsEnd walks the records from from (a record boundary) towards end and returns the end of
// the last whole one: end itself unless a record there is cut short. A blank record leads to the next
// file. Recovery, and a slave's TrimPartialRecord under the put lock, from a position in the current
// file (which retention never deletes): it reads the files without holding them.
func (s *Store) wholeRecordsEnd(from, end int64) int64 {
	size := s.cfg.MappedFileSizeCommitLog
	for off := from; off < end; {
		mf := s.commitLog.mfq.find(off)
		if mf == nil {
			return off
		}
		pos, limit := off-mf.fromOffset, min(end-mf.fromOffset, size)
		n, magic, ok := codec.PeekRecordHeader(mf.data[pos:limit])
		switch {
		case !ok || n <= 0 || pos+int64(n) > limit:
			return off // cut short (or not a record: recovery's checks have the rest)
		case magic == codec.BlankMagicCode:
			off = mf.fromOffset + size
		case magic == codec.MagicCodeV1 || magic == codec.MagicCodeV2:
			off += int64(n)
		default:
			return off
		}
	}
	return end
}

// recordStartBelow reports whether target is a file's start or where a record starts, walking the
// records of target's file from its start; below end, the recovered end. Recovery only (positions are not
// set yet).
func (s *Store) recordStartBelow(target, end int64) bool {
	mf := s.commitLog.mfq.find(target)
	if mf == nil {
		return false
	}
	return recordStartIn(mf.data, target-mf.fromOffset, min(end-mf.fromOffset, mf.size))
}

// recordStartIn walks the records of a file's bytes b from its start and reports whether one starts at
// target (0, a file's start, always does); end bounds what b holds.
func recordStartIn(b []byte, target, end int64) bool {
	pos := int64(0)
	for pos < target && pos < end {
		size, magic, ok := codec.PeekRecordHeader(b[pos:end])
		if !ok || size <= 0 || (magic != codec.MagicCodeV1 && magic != codec.MagicCodeV2) {
			return false // a blank record ends the file's records; anything else is not a record
		}
		pos += int64(size)
	}
	return pos == target
}

// looksLikeRecordAt reports whether a record header starts at offset (a stale checkpoint).
func (s *Store) looksLikeRecordAt(offset int64) bool {
	mf := s.commitLog.mfq.find(offset)
	if mf == nil {
		return false
	}
	pos := offset - mf.fromOffset
	_, magic, ok := codec.PeekRecordHeader(mf.data[pos:])
	return ok && (magic == codec.MagicCodeV1 || magic == codec.MagicCodeV2)
}

// scanCommitLog walks records from start (a record boundary) and returns the end of the last good one.
// A record is good when it decodes (magic, sizes, CRC when asked) and its PHYSICALOFFSET is where it
// lies; a blank record is good when it fills its file exactly. A bad record below durableBelow is
// corruption (the checkpoint knew those bytes durable); anywhere else it is the torn tail.
func (s *Store) scanCommitLog(start int64, checkCRC bool, durableBelow int64) (int64, error) {
	q := s.commitLog.mfq
	off := start
	for {
		mf := q.find(off)
		if mf == nil {
			return off, nil
		}
		pos := off - mf.fromOffset
		for pos < mf.size {
			b := mf.data[pos:]
			size, magic, _ := codec.PeekRecordHeader(b)
			var bad error
			var storeTs int64
			if magic == codec.BlankMagicCode {
				if int64(size) == mf.size-pos {
					pos = mf.size
					break
				}
				bad = fmt.Errorf("blank record of %d bytes with %d left in the file", size, mf.size-pos)
			} else {
				rec, err := codec.DecodeRecord(b, checkCRC)
				storeTs = rec.StoreTimestamp
				switch {
				case err != nil:
					bad = err
				case rec.PhysicalOffset != mf.fromOffset+pos:
					bad = fmt.Errorf("record says PHYSICALOFFSET %d", rec.PhysicalOffset)
				case durableBelow >= 0 && mf.fromOffset+pos >= durableBelow && tornTail(&rec):
					bad = errTornTail
				}
			}
			if bad != nil {
				at := mf.fromOffset + pos
				// A slave appends its master's bytes as they come and syncs them, so its durable offset
				// may lie inside its last record when the master died mid-frame: a record that reaches
				// past the durable offset (or whose header does) is that partial record, never
				// acknowledged, not corruption. A master's durable offset is always a record's end.
				partial := s.cfg.Slave && (durableBelow-at < 8 || int64(size) > durableBelow-at) // 8: TOTALSIZE and MAGICCODE
				if at < durableBelow && !partial {
					return 0, fmt.Errorf("%w: %s at offset %d (CommitLog offset %d, below the checkpoint's durable offset %d): %w",
						ErrCorruption, mf.path, pos, at, durableBelow, bad)
				}
				if !errors.Is(bad, codec.ErrBadMagic) || size != 0 {
					s.logger.Warn("store: CommitLog ends in a torn record; truncating", "file", mf.path,
						"position", pos, "reason", bad)
				}
				return at, nil
			}
			storeMax(&mf.storeTimestamp, storeTs) // the file's last record's, as puts keep it
			pos += int64(size)
		}
		off = mf.fromOffset + mf.size
	}
}

var errTornTail = errors.New("topic or properties end in zero bytes (a lost page)")

// tornTail catches a record whose tail was lost without changing its size: the CRC covers only the body,
// so zeroed topic or properties bytes would pass. A lost page reads back as zeros (files are zero-filled
// and cut tails are zeroed), and no client writes a zero byte into a topic or as the last byte of its
// properties (they end with a value character or 0x02). Applied only past the checkpoint's durable
// offset, where a torn write is possible.
func tornTail(rec *codec.Record) bool {
	if bytes.IndexByte(rec.Topic, 0) >= 0 {
		return true
	}
	p := rec.Properties
	return len(p) > 0 && p[len(p)-1] == 0
}
