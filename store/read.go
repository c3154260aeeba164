package store

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// defaultPullBatch is used when a pull asks for 0 messages (the Go pull consumer does): the client default.
const defaultPullBatch = 32

// GetMessage reads up to maxMsgNums messages of topic/queueID from logical offset offset for a pull:
// RocketMQ's DefaultMessageStore.getMessage, with the status and nextBeginOffset rules of PROTOCOL.md §9
// (a master's corrections). The batch also stops at maxTransferBytes/CountOnMessageInMemory (256 KiB / 32)
// or, for data more than accessMessageInMemoryMaxRatio of RAM behind the end, ...InDisk (64 KiB / 8); and at
// maxBytes when > 0. At most max(16000 B, maxMsgNums × 20 B) of ConsumeQueue are scanned. filter may be
// nil; a CommitLogFilter also sees each record that passed its ConsumeQueue check. group is not used
// by the store (RocketMQ uses it for statistics).
//
// The result's Buffers are slices of mapped CommitLog memory: no message is copied. Call Release when
// the response is written. Safe for concurrent use; no allocation in steady state.
func (s *Store) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, filter MessageFilter) (*GetMessageResult, error) {
	start := time.Now()
	r, err := s.getMessage(topic, queueID, offset, maxMsgNums, maxBytes, filter)
	if err == nil && r.Status == Found {
		s.getFound.Add(1)
	}
	storeMax(&s.getMaxNanos, int64(time.Since(start))) // getMessageEntireTimeMax: the longest read since start
	return r, err
}

func (s *Store) getMessage(topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, filter MessageFilter) (*GetMessageResult, error) {
	r := s.results.Get().(*GetMessageResult)
	r.reset()
	s.getTimes.Add(1)
	if s.state.Load() == stateShutdown {
		r.Release()
		return nil, ErrClosed
	}
	if maxMsgNums <= 0 {
		maxMsgNums = defaultPullBatch
	}
	cl := s.commitLog
	cq := s.queues.find(topic, queueID)
	if cq == nil {
		r.Status, r.NextBeginOffset = NoMatchedLogicQueue, 0
		return r, nil
	}
	minOff, maxOff := cq.minOffset(), cq.maxOffset()
	r.MinOffset, r.MaxOffset = minOff, maxOff
	switch {
	case maxOff == 0:
		r.Status, r.NextBeginOffset = NoMessageInQueue, 0
		return r, nil
	case offset < minOff:
		r.Status, r.NextBeginOffset = OffsetTooSmall, minOff
		return r, nil
	case offset == maxOff:
		r.Status, r.NextBeginOffset = OffsetOverflowOne, offset
		return r, nil
	case offset > maxOff:
		r.Status, r.NextBeginOffset = OffsetOverflowBadly, maxOff
		if minOff == 0 {
			r.NextBeginOffset = minOff
		}
		return r, nil
	}
	entries, cqFile := cq.entries(offset)
	if cqFile == nil {
		r.Status = OffsetFoundNull
		// The next ConsumeQueue file's first entry.
		size := cq.mfq.fileSize / ConsumeQueueEntryBytes
		r.NextBeginOffset = offset + size - offset%size
		return r, nil
	}
	defer cqFile.release()

	r.Status = NoMatchedMessage
	recordFilter, _ := filter.(CommitLogFilter)
	maxPhy := cl.readableEnd()
	memory := s.totalMemory * int64(s.cfg.AccessMessageInMemoryMaxRatio) / 100
	maxScan := max(16000, maxMsgNums*ConsumeQueueEntryBytes)
	nextPhyFileStart := int64(-1)
	var lastPhy int64
	var held *mappedFile // the CommitLog file of the last message added (one reference per file)
	heldBuffer := false  // and its transient pool buffer is held too (one reference per file)
	i := 0
	for ; i+ConsumeQueueEntryBytes <= len(entries) && i < maxScan; i += ConsumeQueueEntryBytes {
		phys, size, tagsCode := readEntry(entries[i:])
		lastPhy = phys
		if nextPhyFileStart >= 0 && phys < nextPhyFileStart {
			continue
		}
		inDisk := memory > 0 && phys < maxPhy-memory
		if s.batchFull(r, size, maxMsgNums, maxBytes, inDisk) {
			break
		}
		if size == paddingEntrySize {
			continue
		}
		if filter != nil && !filter.IsMatchedByConsumeQueue(tagsCode) {
			if r.BufferTotalSize == 0 {
				r.Status = NoMatchedMessage
			}
			continue
		}
		rec, mf, newFile, newBuffer := s.readForPull(phys, size, held, heldBuffer)
		if rec == nil {
			if r.BufferTotalSize == 0 {
				r.Status = MessageWasRemoving
			}
			nextPhyFileStart = cl.rollNextFile(phys)
			continue
		}
		if recordFilter != nil && !recordFilter.IsMatchedByCommitLog(rec) {
			if newBuffer { // the references readForPull took for this record alone
				mf.releaseBuffer()
			}
			if newFile {
				mf.release()
			}
			if r.BufferTotalSize == 0 {
				r.Status = NoMatchedMessage
			}
			continue
		}
		if newFile {
			r.refs = append(r.refs, mf)
			held, heldBuffer = mf, false
		}
		if newBuffer {
			r.bufferRefs = append(r.bufferRefs, mf)
			heldBuffer = true
		}
		r.Buffers = append(r.Buffers, rec)
		r.MessageCount++
		r.BufferTotalSize += len(rec)
		r.Status = Found
		nextPhyFileStart = -1
	}
	r.NextBeginOffset = offset + int64(i/ConsumeQueueEntryBytes)
	r.SuggestPullingFromSlave = memory > 0 && maxPhy-lastPhy > memory
	s.transferredMsgs.Add(int64(r.MessageCount))
	return r, nil
}

// readForPull returns the record and its file. held is the file the pull holds already (heldBuffer:
// with its pool buffer); newFile and newBuffer say which references the call took.
func (s *Store) readForPull(phys int64, size int32, held *mappedFile, heldBuffer bool) (rec []byte, mf *mappedFile, newFile, newBuffer bool) {
	if held != nil {
		pos, end := phys-held.fromOffset, phys+int64(size)
		if pos >= 0 && pos+int64(size) <= held.size && end <= s.commitLog.readableEnd() {
			if pos+int64(size) <= held.readPosition() {
				return held.data[pos : pos+int64(size) : pos+int64(size)], held, false, false
			}
			if heldBuffer && pos+int64(size) <= held.wrote.Load() {
				return held.writeBuffer.Bytes()[pos : pos+int64(size) : pos+int64(size)], held, false, false
			}
		}
	}
	rec, mf, fromBuffer := s.commitLog.readRecord(phys, size)
	return rec, mf, mf != nil, fromBuffer
}

// batchFull is RocketMQ's isTheBatchFull, plus the caller's maxBytes.
func (s *Store) batchFull(r *GetMessageResult, size int32, maxMsgNums, maxBytes int, inDisk bool) bool {
	if r.BufferTotalSize == 0 || r.MessageCount == 0 {
		return false
	}
	if r.MessageCount >= maxMsgNums {
		return true
	}
	next := r.BufferTotalSize + int(size)
	if maxBytes > 0 && next > maxBytes {
		return true
	}
	if inDisk {
		return next > s.cfg.MaxTransferBytesOnMessageInDisk || r.MessageCount > s.cfg.MaxTransferCountOnMessageInDisk-1
	}
	return next > s.cfg.MaxTransferBytesOnMessageInMemory || r.MessageCount > s.cfg.MaxTransferCountOnMessageInMemory-1
}

func (r *GetMessageResult) reset() {
	r.Status, r.NextBeginOffset, r.MinOffset, r.MaxOffset = 0, 0, 0, 0
	r.Buffers = r.Buffers[:0]
	r.refs = r.refs[:0]
	r.bufferRefs = r.bufferRefs[:0]
	r.MessageCount, r.BufferTotalSize, r.SuggestPullingFromSlave = 0, 0, false
}

// Release returns the result's file references and the result to its pool. Call it exactly once, after
// the Buffers are no longer used.
func (r *GetMessageResult) Release() {
	for i, mf := range r.bufferRefs { // before the files' references
		mf.releaseBuffer()
		r.bufferRefs[i] = nil
	}
	r.bufferRefs = r.bufferRefs[:0]
	for i, mf := range r.refs {
		mf.release()
		r.refs[i] = nil
	}
	r.refs = r.refs[:0]
	clear(r.Buffers)
	r.Buffers = r.Buffers[:0]
	if r.store != nil {
		r.store.results.Put(r)
	}
}

// LookMessageByOffset returns the stored record at phyOffset (VIEW_MESSAGE_BY_ID), a view of mapped
// memory valid until release is called. ErrNotFound when no record starts there.
//
// Every acknowledged record is found, in every append mode: with the transient pool, one not yet
// committed to the file is read from its pool buffer (commitLog.readPublished).
func (s *Store) LookMessageByOffset(phyOffset int64) (rec []byte, release func(), err error) {
	b, release := s.commitLog.readPublished(phyOffset)
	if release == nil {
		return nil, nil, fmt.Errorf("%w: CommitLog offset %d", ErrNotFound, phyOffset)
	}
	// A client-supplied offset must point at the start of a record, not into one.
	if !codec.IsMessageRecord(b) || len(b) < codec.MinRecordBytes || int64(binary.BigEndian.Uint64(b[28:])) != phyOffset {
		release()
		return nil, nil, fmt.Errorf("%w: no record at CommitLog offset %d", ErrNotFound, phyOffset)
	}
	return b, release, nil
}

// QueryMessage finds messages of topic stored within [begin, end] (ms) whose KEYS contain key or whose
// UNIQ_KEY is key, through the IndexFile (QUERY_MESSAGE), newest first, at most min(maxNum,
// maxMsgsNumBatch). Hash collisions are filtered out here by reading each record. Call Release on the
// result. Safe for concurrent use.
func (s *Store) QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryMessageResult, error) {
	if s.state.Load() == stateShutdown {
		return nil, ErrClosed
	}
	res := &QueryMessageResult{}
	if s.index == nil {
		return res, nil
	}
	if maxNum <= 0 {
		maxNum = s.cfg.MaxMsgsNumBatch
	}
	maxNum = min(maxNum, s.cfg.MaxMsgsNumBatch)
	// Ask the index for more than maxNum: colliding keys take places in the chain walk.
	offsets, lastTs, lastPhy := s.index.query(topic, key, maxNum*4, begin, end)
	res.IndexLastUpdateTimestamp, res.IndexLastUpdatePhyOffset = lastTs, lastPhy
	seen := make(map[int64]bool, len(offsets))
	for _, phys := range offsets {
		if len(res.Buffers) >= maxNum {
			break
		}
		if seen[phys] {
			continue
		}
		seen[phys] = true
		rec, release := s.commitLog.readSized(phys, -1)
		if release == nil {
			continue
		}
		if !codec.RecordHasKey(rec, topic, key) {
			release()
			continue
		}
		res.Buffers = append(res.Buffers, rec)
		res.BufferTotalSize += len(rec)
		res.releases = append(res.releases, release)
	}
	return res, nil
}

// GetMaxOffsetInQueue is the queue's next logical offset (0 for an unknown queue).
func (s *Store) GetMaxOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.queues.find(topic, queueID); cq != nil {
		return cq.maxOffset()
	}
	return 0
}

// GetMinOffsetInQueue is the queue's first live logical offset (0 for an unknown queue).
func (s *Store) GetMinOffsetInQueue(topic string, queueID int32) int64 {
	if cq := s.queues.find(topic, queueID); cq != nil {
		return cq.minOffset()
	}
	return 0
}

// GetOffsetInQueueByTime finds a logical offset by store time (SEARCH_OFFSET_BY_TIMESTAMP): the first
// message stored at or after timestamp (ms), or with upper the last stored at or before it. Past the
// newest message it returns the max offset; before the oldest, with upper, the min offset.
func (s *Store) GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64, upper bool) int64 {
	cq := s.queues.find(topic, queueID)
	if cq == nil {
		return 0
	}
	return cq.offsetByTime(s.commitLog, timestamp, upper)
}

// GetEarliestMessageTime is the store time of the queue's first live message.
func (s *Store) GetEarliestMessageTime(topic string, queueID int32) (int64, error) {
	cq := s.queues.find(topic, queueID)
	if cq == nil {
		return -1, fmt.Errorf("%w: queue %s/%d", ErrNotFound, topic, queueID)
	}
	for off := cq.minOffset(); off < cq.maxOffset(); off++ {
		phys, size, _, ok := cq.entryAt(off)
		if !ok {
			break
		}
		if size == paddingEntrySize {
			continue
		}
		if ts := s.commitLog.pickupStoreTimestamp(phys, size); ts >= 0 {
			return ts, nil
		}
		break
	}
	return -1, fmt.Errorf("%w: no message in %s/%d", ErrNotFound, topic, queueID)
}

// GetCommitLogOffsetInQueue is the CommitLog offset of the message at the queue's logical offset, 0 when
// there is none.
func (s *Store) GetCommitLogOffsetInQueue(topic string, queueID int32, consumeQueueOffset int64) int64 {
	e, ok := s.ConsumeQueueEntry(topic, queueID, consumeQueueOffset)
	if !ok {
		return 0
	}
	return e.PhyOffset
}

// RecordStoreTime is the store timestamp (ms) of the record at phyOffset in s, 0 when it cannot
// be read or decoded (the admin plane's queue and runtime answers, the consumer-lag metrics).
func RecordStoreTime(s interface {
	LookMessageByOffset(phyOffset int64) (rec []byte, release func(), err error)
}, phyOffset int64) int64 {
	rec, release, err := s.LookMessageByOffset(phyOffset)
	if err != nil {
		return 0
	}
	defer release()
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		return 0
	}
	return r.StoreTimestamp
}
