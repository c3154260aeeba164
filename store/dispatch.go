package store

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// dispatcher is the reput service: one goroutine follows the CommitLog's readable end (the published
// records; with the transient pool those not committed yet are read from the pool buffer) and, record by
// record, appends the ConsumeQueue entry,
// indexes the keys and calls the arriving listener. It is the only writer of ConsumeQueues and
// IndexFiles; recovery and Shutdown run its reput step themselves while the goroutine is not running.
//
// Loop states: reput until caught up → wait for a wake (a put or a commit: channel of capacity 1, so a
// wake during a pass is never lost), a retry tick after a failed write, or stop.
type dispatcher struct {
	s *Store

	// mu is held for each reput pass, and by TrimPartialRecord while it cuts a slave's CommitLog tail, so
	// that no pass reads the cut bytes half zeroed (they would read as a corrupt record).
	mu          sync.Mutex
	reputFrom   atomic.Int64 // next CommitLog offset to dispatch
	lastStoreTs atomic.Int64 // store time of the last dispatched record (logicsMsgTimestamp)
	wake        chan struct{}
	listener    atomic.Pointer[ArrivingListener]
	delays      atomic.Pointer[[]int64] // delay level → ms (SetDelayLevelTable)

	lastErrAt int64 // offset of the last logged failure, so a stuck record logs once; loop only
}

// retryDispatchInterval paces retries after a ConsumeQueue or IndexFile write failed (disk full, say).
const retryDispatchInterval = 100 * time.Millisecond

func newDispatcher(s *Store) *dispatcher {
	return &dispatcher{s: s, wake: make(chan struct{}, 1), lastErrAt: -1}
}

func (d *dispatcher) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

func (d *dispatcher) loop(stop <-chan struct{}) {
	var retry *time.Timer
	for {
		var retryC <-chan time.Time
		if err := d.reput(); err != nil {
			if retry == nil {
				retry = time.NewTimer(retryDispatchInterval)
			} else {
				retry.Reset(retryDispatchInterval)
			}
			retryC = retry.C
		}
		select {
		case <-stop:
			if retry != nil {
				retry.Stop()
			}
			return
		case <-d.wake:
		case <-retryC:
		}
	}
}

// reput dispatches every record from reputFrom to the CommitLog's readable end.
func (d *dispatcher) reput() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	cl := d.s.commitLog
	for {
		from := d.reputFrom.Load()
		end := cl.readableEnd()
		if from >= end {
			return nil
		}
		mf := cl.mfq.findAndHold(from)
		if mf == nil {
			if min := cl.minOffset(); from < min {
				// Retention removed files the dispatcher had not reached (it was far behind).
				d.reputFrom.Store(min)
				continue
			}
			return fmt.Errorf("%w: no CommitLog file holds dispatch offset %d", ErrCorruption, from)
		}
		limit := min(mf.wrote.Load(), end-mf.fromOffset)
		data, fromBuffer := mf.view(limit) // the mapping, or the pool buffer (held) for what is not committed
		err := d.dispatchFile(mf, data, from-mf.fromOffset, limit)
		if fromBuffer {
			mf.releaseBuffer()
		}
		mf.release()
		if err != nil {
			if at := d.reputFrom.Load(); at != d.lastErrAt {
				d.lastErrAt = at
				d.s.logger.Error("store: dispatch failed; retrying", "offset", at, "error", err)
			}
			return err
		}
		if d.s.cfg.Slave && d.reputFrom.Load() == from {
			// A replicated record whose rest has not arrived: the next AppendReplica wakes the loop.
			// Looping here spun a core and kept Shutdown waiting forever once the master was gone.
			return nil
		}
	}
}

// dispatchFile dispatches the records of mf from pos to limit, reading them in data (mf's mapping or
// its pool buffer).
func (d *dispatcher) dispatchFile(mf *mappedFile, data []byte, pos, limit int64) error {
	for pos < limit {
		size, magic, ok := codec.PeekRecordHeader(data[pos:limit])
		if d.s.cfg.Slave && (!ok || int64(size) > limit-pos) {
			// Replication appends frames, not records: the rest of this one has not arrived yet.
			return nil
		}
		if ok && magic == codec.BlankMagicCode {
			d.reputFrom.Store(mf.fromOffset + mf.size)
			return nil
		}
		rec, err := codec.DecodeRecord(data[pos:limit], false)
		if err != nil {
			d.s.flags.set(FlagWriteLogicsQueueError)
			return fmt.Errorf("%w: %s at offset %d: %w", ErrCorruption, mf.path, pos, err)
		}
		if err := d.dispatch(&rec, mf.fromOffset+pos, size); err != nil {
			return err
		}
		pos += int64(size)
		d.reputFrom.Store(mf.fromOffset + pos)
	}
	return nil
}

func (d *dispatcher) dispatch(rec *codec.Record, phys int64, size int32) error {
	props := codec.ScanRecordProperties(rec.Properties)
	switch codec.TransactionType(rec.SysFlag) {
	case codec.SysFlagTransactionNot, codec.SysFlagTransactionCommit:
		cq := d.s.queues.findOrCreateBytes(rec.Topic, rec.QueueID)
		tagsCode := d.tagsCode(rec, &props)
		appended, err := cq.put(phys, size, tagsCode, rec.QueueOffset)
		if err != nil {
			d.s.flags.set(FlagWriteLogicsQueueError)
			if isNoSpace(err) {
				d.s.flags.set(FlagDiskFull)
			}
			return fmt.Errorf("store: ConsumeQueue %s/%d: %w", cq.topic, cq.queueID, err)
		}
		if appended {
			if l := d.listener.Load(); l != nil {
				(*l)(cq.topic, cq.queueID, rec.QueueOffset, tagsCode, rec.StoreTimestamp, rec.Properties)
			}
		}
	}
	if d.s.index != nil {
		if err := d.s.index.build(rec, phys, props.UniqKey, props.Keys); err != nil {
			d.s.flags.set(FlagWriteIndexFileError)
			if isNoSpace(err) {
				d.s.flags.set(FlagDiskFull)
			}
			return fmt.Errorf("store: IndexFile: %w", err)
		}
	}
	d.s.flags.clear(FlagWriteLogicsQueueError | FlagWriteIndexFileError)
	d.lastStoreTs.Store(rec.StoreTimestamp)
	return nil
}

// tagsCode is the ConsumeQueue tag field: the TAGS hash, or for SCHEDULE_TOPIC_XXXX the delivery time
// (store time + the DELAY level's delay, RocketMQ's computeDeliverTimestamp).
func (d *dispatcher) tagsCode(rec *codec.Record, p *codec.RecordProperties) int64 {
	if string(rec.Topic) == ScheduleTopic && len(p.DelayLevel) > 0 {
		level, ok := p.Delay()
		if ok && level > 0 {
			var table []int64
			if t := d.delays.Load(); t != nil {
				table = *t
			}
			if len(table) == 0 {
				return rec.StoreTimestamp + 1000
			}
			level = min(level, len(table))
			return rec.StoreTimestamp + table[level-1]
		}
	}
	return codec.TagsHashCode(p.Tags)
}
