// Package storetest is test support for users of package store: MemStore, an in-memory
// store.MessageStore for broker unit tests. Production code never imports it.
package storetest

import (
	"encoding/binary"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/round"
	"github.com/ringmq/ringmq/store"
)

// MemStore is an in-memory store.MessageStore for broker unit tests (the way NSQ keeps a dummy backend
// queue beside its interface). Records are encoded exactly as the file store encodes them, queue and physical
// offsets follow the same rules (one endless CommitLog, no files, no retention), GetMessage answers with
// the same statuses and batch limits, and the arriving listener is called synchronously after each put.
// Nothing is durable: WaitDurable completes at once. It replicates like the file store (a master's
// MemStore to a slave's MemStore: its one CommitLog "file" never ends). Safe for concurrent use.
type MemStore struct {
	cfg store.Config

	mu         sync.Mutex
	log        []byte // the CommitLog; records are never changed once appended, so slices stay valid
	dispatched int64  // a slave's log end up to which records are indexed (a record may be partial)
	queues     map[string]map[int32]*memQueue
	listener   store.ArrivingListener
	published  func()
	delays     []int64
	clock      func() time.Time
	shut       bool
	stats      store.Stats
}

// memFileSize is the MemStore's FileSize: its one CommitLog file never ends.
const memFileSize = 1 << 62

type memQueue struct {
	next    int64 // queue offset counter
	min     int64
	entries []memEntry // entries[i] is logical offset min+i
}

type memEntry struct {
	phys     int64
	size     int32
	tagsCode int64
}

var _ store.MessageStore = (*MemStore)(nil)

// NewMemStore returns an empty MemStore. cfg supplies StoreHost, MaxMessageSize and the pull batch limits
// (start from store.DefaultConfig); clock may be nil (time.Now).
func NewMemStore(cfg store.Config, clock func() time.Time) *MemStore {
	if clock == nil {
		clock = time.Now
	}
	return &MemStore{cfg: cfg, queues: make(map[string]map[int32]*memQueue), clock: clock}
}

// Start does nothing (the MemStore is ready at once).
func (m *MemStore) Start() error { return nil }

// Shutdown refuses later puts and reads.
func (m *MemStore) Shutdown() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shut {
		return store.ErrClosed
	}
	m.shut = true
	return nil
}

func (m *MemStore) queue(topic string, id int32, create bool) *memQueue {
	qs := m.queues[topic]
	if qs == nil {
		if !create {
			return nil
		}
		qs = make(map[int32]*memQueue)
		m.queues[topic] = qs
	}
	q := qs[id]
	if q == nil && create {
		q = &memQueue{}
		qs[id] = q
	}
	return q
}

type memArrival struct {
	topic    string
	queueID  int32
	offset   int64
	tagsCode int64
	storeTs  int64
	props    []byte
}

// PutMessage appends one message (see store.Store.PutMessage).
func (m *MemStore) PutMessage(msg *codec.Message) (store.PutResult, error) {
	b := store.BatchPut{Messages: []codec.Message{*msg}}
	res, err := m.put(&b, false)
	if err == nil {
		*msg = b.Messages[0]
	}
	return res, err
}

// PutMessages appends a batch (see store.Store.PutMessages).
func (m *MemStore) PutMessages(batch *store.BatchPut) (store.PutResult, error) {
	return m.put(batch, true)
}

// ReserveWait is true: a MemStore's WaitDurable never finds a full queue.
func (m *MemStore) ReserveWait() bool { return true }

// WaitDurableReserved is WaitDurable, with no round.
func (m *MemStore) WaitDurableReserved(endOffset int64, done func(err error, rd *round.Round)) {
	m.WaitDurable(endOffset, func(err error) { done(err, nil) })
}

// ReleaseWait does nothing.
func (m *MemStore) ReleaseWait() {}

// GroupsPuts is false: the broker stores each send on its own over a MemStore (store.Store groups them).
func (m *MemStore) GroupsPuts() bool { return false }

// AddToGroup checks msg and adds it to g (see store.Store.AddToGroup).
func (m *MemStore) AddToGroup(g *store.PutGroup, msg *codec.Message) (store.PutMessageStatus, error) {
	if st, err := m.cfg.CheckMessage(msg); err != nil {
		return st, err
	}
	msg.StoreHost = m.cfg.StoreHost
	if err := g.AppendMessage(msg); err != nil {
		return store.MessageIllegal, fmt.Errorf("%w: %w", store.ErrMessageIllegal, err)
	}
	return store.PutOK, nil
}

// PutGroup puts g's messages one by one (see store.Store.PutGroup); unlike Store's, a failure may
// leave the messages before it stored.
func (m *MemStore) PutGroup(g *store.PutGroup) error {
	g.Results = g.Results[:0]
	var first error
	for i := range g.Len() {
		rec, err := codec.DecodeRecord(g.Record(i), false)
		if err != nil {
			return err // AppendMessage encoded it: cannot happen
		}
		msg := codec.Message{Topic: string(rec.Topic), Body: rec.Body, Properties: rec.Properties,
			QueueID: rec.QueueID, Flag: rec.Flag, SysFlag: rec.SysFlag, BornTimestamp: rec.BornTimestamp,
			BornHost: rec.BornHost, ReconsumeTimes: rec.ReconsumeTimes,
			PreparedTransactionOffset: rec.PreparedTransactionOffset}
		res, err := m.PutMessage(&msg)
		if err != nil && first == nil {
			first = err
		}
		g.Results = append(g.Results, res)
	}
	g.MarkPut()
	return first
}

func (m *MemStore) put(batch *store.BatchPut, isBatch bool) (store.PutResult, error) {
	if len(batch.Messages) == 0 {
		return store.PutResult{Status: store.MessageIllegal}, fmt.Errorf("%w: empty batch", store.ErrMessageIllegal)
	}
	first := &batch.Messages[0]
	for i := range batch.Messages {
		msg := &batch.Messages[i]
		if st, err := m.cfg.CheckMessage(msg); err != nil {
			return store.PutResult{Status: st}, err
		}
		if msg.Topic != first.Topic || msg.QueueID != first.QueueID {
			return store.PutResult{Status: store.MessageIllegal}, fmt.Errorf("%w: batch mixes queues", store.ErrMessageIllegal)
		}
		tt := codec.TransactionType(msg.SysFlag)
		if isBatch && (tt == codec.SysFlagTransactionPrepare || tt == codec.SysFlagTransactionRollback) {
			return store.PutResult{Status: store.MessageIllegal}, fmt.Errorf("%w: batch item %d is a transaction half", store.ErrMessageIllegal, i)
		}
		msg.StoreHost = m.cfg.StoreHost
	}
	m.mu.Lock()
	if m.shut {
		m.mu.Unlock()
		return store.PutResult{Status: store.ServiceNotAvailable}, store.ErrServiceNotAvailable
	}
	if m.cfg.Slave {
		m.mu.Unlock()
		return store.PutResult{Status: store.ServiceNotAvailable}, store.ErrSlave
	}
	storeTs := m.clock().UnixMilli()
	tt := codec.TransactionType(first.SysFlag)
	assign := tt == codec.SysFlagTransactionNot || tt == codec.SysFlagTransactionCommit
	q := m.queue(first.Topic, first.QueueID, true)
	res := store.PutResult{Status: store.PutOK, WroteOffset: int64(len(m.log)), MsgNum: int32(len(batch.Messages)), StoreTimestamp: storeTs}
	if assign {
		res.QueueOffset = q.next
	}
	if cap(batch.PhysicalOffsets) < len(batch.Messages) {
		batch.PhysicalOffsets = make([]int64, len(batch.Messages))
	}
	batch.PhysicalOffsets = batch.PhysicalOffsets[:len(batch.Messages)]
	arrivals := make([]memArrival, 0, len(batch.Messages))
	for i := range batch.Messages {
		msg := &batch.Messages[i]
		msg.StoreTimestamp = storeTs
		msg.PhysicalOffset = int64(len(m.log))
		if assign {
			msg.QueueOffset = q.next
		} else {
			msg.QueueOffset = 0
		}
		start := len(m.log)
		var err error
		m.log, err = msg.AppendRecord(m.log)
		if err != nil {
			m.log = m.log[:res.WroteOffset]
			m.mu.Unlock()
			return store.PutResult{Status: store.MessageIllegal}, fmt.Errorf("%w: %w", store.ErrMessageIllegal, err)
		}
		size := int32(len(m.log) - start)
		batch.PhysicalOffsets[i] = msg.PhysicalOffset
		res.WroteBytes += size
		m.stats.PutMessageTimesTotal++
		m.stats.PutMessageSizeTotal += int64(size)
		if assign {
			rec := m.log[start:len(m.log):len(m.log)]
			tags := m.tagsCode(msg.Topic, msg.Properties, storeTs)
			q.entries = append(q.entries, memEntry{phys: msg.PhysicalOffset, size: size, tagsCode: tags})
			arrivals = append(arrivals, memArrival{msg.Topic, msg.QueueID, q.next, tags, storeTs, recordProperties(rec)})
			q.next++
		}
	}
	m.dispatched = int64(len(m.log))
	l, published := m.listener, m.published
	m.mu.Unlock()
	if published != nil {
		published()
	}
	notify(l, arrivals)
	return res, nil
}

func notify(l store.ArrivingListener, arrivals []memArrival) {
	if l == nil {
		return
	}
	for _, a := range arrivals {
		l(a.topic, a.queueID, a.offset, a.tagsCode, a.storeTs, a.props)
	}
}

// tagsCode is a ConsumeQueue entry's tag code: the TAGS hash, or for SCHEDULE_TOPIC_XXXX the delivery
// time. Caller holds mu.
func (m *MemStore) tagsCode(topic string, props []byte, storeTs int64) int64 {
	p := codec.ScanRecordProperties(props)
	tags := codec.TagsHashCode(p.Tags)
	if topic == store.ScheduleTopic && len(p.DelayLevel) > 0 {
		if level, ok := p.Delay(); ok && level > 0 {
			tags = storeTs + 1000
			if len(m.delays) > 0 {
				tags = storeTs + m.delays[min(level, len(m.delays))-1]
			}
		}
	}
	return tags
}

func recordProperties(rec []byte) []byte {
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		return nil
	}
	return r.Properties
}

// WaitDurable completes at once: nothing in a MemStore is durable, and nothing waits.
func (m *MemStore) WaitDurable(_ int64, done func(error)) { done(nil) }

// FileSize is 1<<62: the MemStore's CommitLog is one file that never ends, so no frame is cut short.
func (m *MemStore) FileSize() int64 { return memFileSize }

// SetPublishListener sets fn, called after each put (outside the lock).
func (m *MemStore) SetPublishListener(fn func()) {
	m.mu.Lock()
	m.published = fn
	m.mu.Unlock()
}

// ReadReplica returns a view of up to max log bytes from offset; release does nothing.
func (m *MemStore) ReadReplica(offset int64, max int) ([]byte, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	end := min(int64(len(m.log)), offset+int64(max))
	if max <= 0 || offset < 0 || offset >= end {
		return nil, nil
	}
	return m.log[offset:end:end], func() {}
}

// IsRecordStart walks the log's records from its start: true at the end or at a record's first byte.
func (m *MemStore) IsRecordStart(offset int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	pos := int64(0)
	for pos < offset {
		size, _, ok := codec.PeekRecordHeader(m.log[pos:])
		if !ok || size <= 0 {
			return false
		}
		pos += int64(size)
	}
	return pos == offset && offset <= int64(len(m.log))
}

// AppendReplica appends n bytes of a master's log at offset, which must be the log's end (a MemStore
// slave replicates from offset 0), and indexes every record they complete, as the file store's
// dispatcher does on a slave. Only a slave's MemStore (store.Config.Slave) takes replicated bytes.
func (m *MemStore) AppendReplica(offset int64, n int, r io.Reader) error {
	if !m.cfg.Slave {
		return fmt.Errorf("%w: AppendReplica on a master's store", store.ErrServiceNotAvailable)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return err
	}
	m.mu.Lock()
	if m.shut {
		m.mu.Unlock()
		return store.ErrServiceNotAvailable
	}
	if offset != int64(len(m.log)) {
		m.mu.Unlock()
		return fmt.Errorf("store: replica bytes at %d, but the CommitLog ends at %d", offset, len(m.log))
	}
	m.log = append(m.log, buf...)
	arrivals, err := m.dispatchReplicaLocked()
	l := m.listener
	m.mu.Unlock()
	notify(l, arrivals)
	return err
}

// TrimPartialRecord cuts a slave's log back to the end of its last whole record, as the file store's does
// before each HA connection reports its offset.
func (m *MemStore) TrimPartialRecord() (from, to int64, err error) {
	if !m.cfg.Slave {
		return 0, 0, fmt.Errorf("%w: TrimPartialRecord on a master's store", store.ErrServiceNotAvailable)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	from = int64(len(m.log))
	m.log = m.log[:m.dispatched]
	return from, m.dispatched, nil
}

// dispatchReplicaLocked indexes the complete records past m.dispatched at the queue offsets they carry.
// Caller holds mu.
func (m *MemStore) dispatchReplicaLocked() ([]memArrival, error) {
	var arrivals []memArrival
	for int64(len(m.log))-m.dispatched >= 8 {
		rest := m.log[m.dispatched:]
		size, magic, ok := codec.PeekRecordHeader(rest)
		if ok && magic == codec.BlankMagicCode { // a file store master's END_OF_FILE padding
			if int64(len(rest)) < int64(size) {
				break
			}
			m.dispatched += int64(size)
			continue
		}
		if !ok || size <= 0 || int64(len(rest)) < int64(size) {
			break
		}
		rec, err := codec.DecodeRecord(rest[:size:size], false)
		if err != nil {
			return arrivals, fmt.Errorf("%w: replicated record at %d: %w", store.ErrCorruption, m.dispatched, err)
		}
		phys := m.dispatched
		m.dispatched += int64(size)
		m.stats.PutMessageTimesTotal++
		m.stats.PutMessageSizeTotal += int64(size)
		switch codec.TransactionType(rec.SysFlag) {
		case codec.SysFlagTransactionPrepare, codec.SysFlagTransactionRollback:
			continue
		}
		topic := string(rec.Topic)
		q := m.queue(topic, rec.QueueID, true)
		if q.min+int64(len(q.entries)) != rec.QueueOffset {
			return arrivals, fmt.Errorf("%w: replicated record at %d has queue offset %d, %s/%d expects %d",
				store.ErrCorruption, phys, rec.QueueOffset, topic, rec.QueueID, q.min+int64(len(q.entries)))
		}
		tags := m.tagsCode(topic, rec.Properties, rec.StoreTimestamp)
		q.entries = append(q.entries, memEntry{phys: phys, size: int32(size), tagsCode: tags})
		q.next = rec.QueueOffset + 1
		arrivals = append(arrivals, memArrival{topic, rec.QueueID, rec.QueueOffset, tags, rec.StoreTimestamp, rec.Properties})
	}
	return arrivals, nil
}

// GetMessage reads a queue with the file store's statuses and limits (no file boundaries, so never
// OFFSET_FOUND_NULL or MESSAGE_WAS_REMOVING). Buffers are views of the in-memory log.
func (m *MemStore) GetMessage(_, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, filter store.MessageFilter) (*store.GetMessageResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shut {
		return nil, store.ErrClosed
	}
	m.stats.GetMessageTimesTotal++
	r := &store.GetMessageResult{}
	if maxMsgNums <= 0 {
		maxMsgNums = defaultPullBatch
	}
	q := m.queue(topic, queueID, false)
	if q == nil {
		r.Status = store.NoMatchedLogicQueue
		return r, nil
	}
	minOff, maxOff := q.min, q.min+int64(len(q.entries))
	r.MinOffset, r.MaxOffset = minOff, maxOff
	switch {
	case maxOff == 0:
		r.Status = store.NoMessageInQueue
		return r, nil
	case offset < minOff:
		r.Status, r.NextBeginOffset = store.OffsetTooSmall, minOff
		return r, nil
	case offset == maxOff:
		r.Status, r.NextBeginOffset = store.OffsetOverflowOne, offset
		return r, nil
	case offset > maxOff:
		r.Status, r.NextBeginOffset = store.OffsetOverflowBadly, maxOff
		if minOff == 0 {
			r.NextBeginOffset = 0
		}
		return r, nil
	}
	r.Status = store.NoMatchedMessage
	recordFilter, _ := filter.(store.CommitLogFilter)
	maxScan := max(16000, maxMsgNums*store.ConsumeQueueEntryBytes) / store.ConsumeQueueEntryBytes
	i := int(offset - minOff)
	scanned := 0
	for ; i < len(q.entries) && scanned < maxScan; i, scanned = i+1, scanned+1 {
		e := q.entries[i]
		if r.MessageCount > 0 {
			next := r.BufferTotalSize + int(e.size)
			if r.MessageCount >= maxMsgNums || (maxBytes > 0 && next > maxBytes) ||
				next > m.cfg.MaxTransferBytesOnMessageInMemory || r.MessageCount > m.cfg.MaxTransferCountOnMessageInMemory-1 {
				break
			}
		}
		if filter != nil && !filter.IsMatchedByConsumeQueue(e.tagsCode) {
			continue
		}
		rec := m.log[e.phys : e.phys+int64(e.size) : e.phys+int64(e.size)]
		if recordFilter != nil && !recordFilter.IsMatchedByCommitLog(rec) {
			continue
		}
		r.Buffers = append(r.Buffers, rec)
		r.MessageCount++
		r.BufferTotalSize += len(rec)
		r.Status = store.Found
	}
	r.NextBeginOffset = offset + int64(scanned)
	m.stats.GetMessageTransferredMsg += int64(r.MessageCount)
	return r, nil
}

// LookMessageByOffset returns the record at phyOffset.
func (m *MemStore) LookMessageByOffset(phyOffset int64) ([]byte, func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if phyOffset < 0 || phyOffset+8 > int64(len(m.log)) {
		return nil, nil, fmt.Errorf("%w: CommitLog offset %d", store.ErrNotFound, phyOffset)
	}
	size := int64(binary.BigEndian.Uint32(m.log[phyOffset:]))
	if !codec.IsMessageRecord(m.log[phyOffset:]) || phyOffset+size > int64(len(m.log)) {
		return nil, nil, fmt.Errorf("%w: no record at CommitLog offset %d", store.ErrNotFound, phyOffset)
	}
	return m.log[phyOffset : phyOffset+size : phyOffset+size], func() {}, nil
}

// QueryMessage scans the whole log for topic's records with key (UNIQ_KEY or a KEYS word) stored within
// [begin, end], newest first. Rollback records are skipped, as the index skips them.
func (m *MemStore) QueryMessage(topic, key string, maxNum int, begin, end int64) (*store.QueryMessageResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shut {
		return nil, store.ErrClosed
	}
	if maxNum <= 0 || maxNum > m.cfg.MaxMsgsNumBatch {
		maxNum = m.cfg.MaxMsgsNumBatch
	}
	var offsets []int64
	for off := 0; off < len(m.log); {
		rec, err := codec.DecodeRecord(m.log[off:], false)
		if err != nil {
			break
		}
		if codec.TransactionType(rec.SysFlag) != codec.SysFlagTransactionRollback &&
			rec.StoreTimestamp >= begin && rec.StoreTimestamp <= end &&
			codec.RecordHasKey(m.log[off:off+int(rec.TotalSize)], topic, key) {
			offsets = append(offsets, int64(off))
		}
		off += int(rec.TotalSize)
	}
	res := &store.QueryMessageResult{IndexLastUpdatePhyOffset: int64(len(m.log)), IndexLastUpdateTimestamp: m.clock().UnixMilli()}
	for i := len(offsets) - 1; i >= 0 && len(res.Buffers) < maxNum; i-- {
		o := offsets[i]
		size := int64(binary.BigEndian.Uint32(m.log[o:]))
		res.Buffers = append(res.Buffers, m.log[o:o+size:o+size])
		res.BufferTotalSize += int(size)
	}
	return res, nil
}

// GetMaxOffsetInQueue is the queue's next logical offset.
func (m *MemStore) GetMaxOffsetInQueue(topic string, queueID int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queue(topic, queueID, false); q != nil {
		return q.min + int64(len(q.entries))
	}
	return 0
}

// GetMinOffsetInQueue is the queue's first logical offset.
func (m *MemStore) GetMinOffsetInQueue(topic string, queueID int32) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q := m.queue(topic, queueID, false); q != nil {
		return q.min
	}
	return 0
}

func (m *MemStore) storeTime(e memEntry) int64 {
	r, err := codec.DecodeRecord(m.log[e.phys:e.phys+int64(e.size)], false)
	if err != nil {
		return -1
	}
	return r.StoreTimestamp
}

// GetOffsetInQueueByTime: see store.Store.GetOffsetInQueueByTime.
func (m *MemStore) GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64, upper bool) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(topic, queueID, false)
	if q == nil {
		return 0
	}
	if !upper {
		for i, e := range q.entries {
			if m.storeTime(e) >= timestamp {
				return q.min + int64(i)
			}
		}
		return q.min + int64(len(q.entries))
	}
	for i := len(q.entries) - 1; i >= 0; i-- {
		if m.storeTime(q.entries[i]) <= timestamp {
			return q.min + int64(i)
		}
	}
	return q.min
}

// GetEarliestMessageTime is the store time of the queue's first message.
func (m *MemStore) GetEarliestMessageTime(topic string, queueID int32) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(topic, queueID, false)
	if q == nil || len(q.entries) == 0 {
		return -1, fmt.Errorf("%w: no message in %s/%d", store.ErrNotFound, topic, queueID)
	}
	return m.storeTime(q.entries[0]), nil
}

// GetCommitLogOffsetInQueue is the CommitLog offset of the message at a logical offset, 0 if none.
func (m *MemStore) GetCommitLogOffsetInQueue(topic string, queueID int32, off int64) int64 {
	e, ok := m.ConsumeQueueEntry(topic, queueID, off)
	if !ok {
		return 0
	}
	return e.PhyOffset
}

// MaxPhyOffset is the log's length.
func (m *MemStore) MaxPhyOffset() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64(len(m.log))
}

// MinPhyOffset is 0.
func (m *MemStore) MinPhyOffset() int64 { return 0 }

// DispatchBehindBytes is 0: puts dispatch synchronously.
func (m *MemStore) DispatchBehindBytes() int64 { return 0 }

// SetArrivingListener sets the listener, called synchronously after each put (outside the lock).
func (m *MemStore) SetArrivingListener(l store.ArrivingListener) {
	m.mu.Lock()
	m.listener = l
	m.mu.Unlock()
}

// SetDelayLevelTable sets the delay level table.
func (m *MemStore) SetDelayLevelTable(delays []time.Duration) {
	t := make([]int64, len(delays))
	for i, d := range delays {
		t[i] = d.Milliseconds()
	}
	m.mu.Lock()
	m.delays = t
	m.mu.Unlock()
}

// SetConsumerOffsets does nothing: the in-memory store never deletes messages.
func (m *MemStore) SetConsumerOffsets(store.ConsumerOffsetsFunc) {}

// IsOSPageCacheBusy is always false.
func (m *MemStore) IsOSPageCacheBusy() bool { return false }

// BeginTimeInLock is always 0.
func (m *MemStore) BeginTimeInLock() time.Duration { return 0 }

// DeleteTopics forgets the topics' queues.
func (m *MemStore) DeleteTopics(topics ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range topics {
		delete(m.queues, t)
	}
	return nil
}

// ConsumeQueueEntry reads the entry at a queue's logical offset.
func (m *MemStore) ConsumeQueueEntry(topic string, queueID int32, off int64) (store.ConsumeQueueEntry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	q := m.queue(topic, queueID, false)
	if q == nil || off < q.min || off >= q.min+int64(len(q.entries)) {
		return store.ConsumeQueueEntry{}, false
	}
	e := q.entries[off-q.min]
	return store.ConsumeQueueEntry{PhyOffset: e.phys, Size: e.size, TagsCode: e.tagsCode}, true
}

// CleanExpiredConsumeQueues deletes nothing: the MemStore keeps its whole log, so no queue's records
// are ever gone.
func (m *MemStore) CleanExpiredConsumeQueues() (int, error) { return 0, nil }

// DeleteExpiredFilesManually does nothing: the MemStore has no files and no retention.
func (m *MemStore) DeleteExpiredFilesManually() {}

// QueueTopics lists the topics with queues, sorted.
func (m *MemStore) QueueTopics() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Sorted(maps.Keys(m.queues))
}

// store.RunningFlags is always OK.
func (m *MemStore) RunningFlags() store.RunningFlags { return 0 }

// PutLatency is empty: the MemStore does not time its puts.
func (m *MemStore) PutLatency() store.PutLatencyCounts { return store.PutLatencyCounts{} }

// store.Stats returns the counters.
func (m *MemStore) Stats() store.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.CommitLogMaxOffset = int64(len(m.log))
	s.CommitLogFlushedOffset = int64(len(m.log))
	return s
}

// defaultPullBatch is GetMessage's batch when maxMsgNums <= 0, the file store's.
const defaultPullBatch = 32
