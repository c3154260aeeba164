// Package delay is delayed delivery: the schedule service (RocketMQ's ScheduleMessageService,
// PROTOCOL.md §8.1).
//
// A send with DELAY=n (n > 0, transaction type NOT or COMMIT) is stored by the send plane (broker/sendplane/send.go) in
// SCHEDULE_TOPIC_XXXX queue n−1, n clamped to the messageDelayLevel table, with REAL_TOPIC
// and REAL_QID saying where it belongs. The store's dispatcher writes each such entry's
// delivery time — store time + the level's delay — into its ConsumeQueue tag field. Every
// message of one level waits the same time, so a level's queue is sorted by delivery time
// (up to store-clock steps backwards): a cursor per level walks it and stops at the first
// entry not yet due.
//
//	SCHEDULE_TOPIC_XXXX queue 1 (level 2, 5 s)
//	 offset  0      1      2      3      4
//	 tag    t0+5s  t1+5s  t2+5s  t3+5s  t4+5s    ← delivery times, ascending
//	               ▲ cursor (delayOffset.json: {"offsetTable":{2:1}})
//
// One goroutine serves every level. It delivers what is due, then sleeps on one timer until
// the earliest head of any level is due. New entries wake it through the store's arriving
// listener (the broker's onMessageArriving, which also feeds the long-polling hold service) only when they
// can change that plan: when their level was idle or is being scanned. A busy level's new
// entries are due after its head, so they cost the dispatcher two atomic loads. No goroutine or
// timer exists per message.
//
// Delivery re-encodes the record (Java's messageTimeup): topic and queue from REAL_TOPIC and
// REAL_QID, everything else kept — body, flag, sysFlag, born time and host, reconsume times,
// and the properties exactly as scheduled: DELAY, WAIT, UNIQ_KEY, REAL_TOPIC/REAL_QID. RocketMQ
// 4.9.8's messageTimeup clears DELAY and sets WAIT=false only in the property map, after it has
// built the properties string the CommitLog stores, so its consumers see a delivered message
// with its DELAY, and so do ringmq's. An
// entry whose delivery time lies further ahead than its level's delay (the clock went back,
// or the table changed) is due at once, as RocketMQ's correctDeliverTimestamp decides.
//
// # Progress and restarts: at-least-once
//
// The cursors are saved in <storePathRootDir>/config/delayOffset.json (level → next queue
// offset, bare numeric keys, written atomically with a .bak) every delayOffsetPersistInterval
// and at shutdown. A snapshot is written only once the CommitLog is durable past every
// delivered copy it covers (the store's flushed offset ≥ the CommitLog end taken after the
// snapshot), so a crash never loses a scheduled message: at worst the messages delivered
// since the last written snapshot are delivered again, as with RocketMQ (whose service saves
// every 10 s without that check). A clean shutdown saves the final cursors after the last
// delivery, so a restart neither loses nor repeats anything.
//
// A cursor below the queue's first offset (files deleted) jumps to it; one above the
// queue's end (the queue was lost) is set back to the end.
package delay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Schedule service tuning.
const (
	// delayOffsetPersistInterval is RocketMQ's flushDelayOffsetInterval default.
	delayOffsetPersistInterval = 10 * time.Second
	// delayRetryInterval is the wait after a failed read or put before the level is tried
	// again (the store is full, shut down, or refusing writes).
	delayRetryInterval = time.Second
	// deliverBatch is how many entries one store read returns.
	deliverBatch = 32
	// maxBatchesPerScan bounds one level's turn so that a backlog in one level does not
	// starve the others or the shutdown signal.
	maxBatchesPerScan = 64
	// maxDelayWait caps one sleep; the loop just computes the plan again.
	maxDelayWait = time.Hour
	// topicNameCacheMax bounds the REAL_TOPIC → string cache.
	topicNameCacheMax = 4096
)

// Sentinels of a level's nextDue (ms since the epoch otherwise).
const (
	noPendingDue int64 = math.MaxInt64 // nothing waiting in the level
	scanningDue  int64 = -1            // the delivery goroutine is reading the level
)

// errSkipRecord marks a scheduled record that can never be delivered (undecodable, no
// REAL_TOPIC, refused as illegal): the cursor moves past it.
var errSkipRecord = errors.New("broker: scheduled record skipped")

// ErrNoLevels: the service was given no delay levels (messageDelayLevel).
var ErrNoLevels = errors.New("broker: key messageDelayLevel: no levels")

// delayLevel is one level's state.
type delayLevel struct {
	level   int32 // 1-based
	delayMs int64
	cursor  atomic.Int64 // next ConsumeQueue offset of SCHEDULE_TOPIC_XXXX queue level−1
	known   atomic.Bool  // in delayOffset.json or moved: listed in the offset table (as Java lists them)
	nextDue atomic.Int64 // delivery time of the level's head entry, or a sentinel
	dirty   atomic.Bool  // an entry arrived that the plan may not know about
	// Messages delivered from the level since start, and the bytes their copies took in the
	// CommitLog (RocketMQ's QUEUE_GET_NUMS and QUEUE_GET_SIZE of the level's queue).
	deliveredMsgs, deliveredBytes atomic.Int64
}

// dueFilter accepts the ConsumeQueue entries that are due, up to the first one that is not
// (the cut), and remembers that entry's delivery time. It is used by the delivery goroutine
// only, one read at a time.
type dueFilter struct {
	nowMs, delayMs int64
	cut            bool
	cutTag         int64
	dueSeen        int // entries accepted (some may turn out unreadable)
}

func (f *dueFilter) IsMatchedByConsumeQueue(tag int64) bool {
	if f.cut {
		return false
	}
	if tag <= f.nowMs || tag > f.nowMs+f.delayMs {
		f.dueSeen++
		return true
	}
	f.cut, f.cutTag = true, tag
	return false
}

// Deps are what the schedule service needs.
type Deps struct {
	Store     store.MessageStore
	Delays    []time.Duration // messageDelayLevel; index 0 = level 1
	StoreHost netip.AddrPort  // written into every delivered copy
	Clock     func() time.Time
	Path      string // delayOffset.json
	Logger    *slog.Logger
	// PersistInterval and RetryInterval: 0 = the defaults above.
	PersistInterval time.Duration
	RetryInterval   time.Duration
}

// ScheduleMessageService delivers delayed messages from SCHEDULE_TOPIC_XXXX to their real
// topics when due (see the file comment). NotifyMessageArriving, Offsets and Delivered are
// safe for concurrent use; Start and Stop are called once each by the broker's lifecycle.
type ScheduleMessageService struct {
	deps   Deps
	levels []delayLevel
	// extra holds delayOffset.json's entries for levels the table lacks, kept as read. The map
	// is never modified once stored: a slave's sync (ReplaceFromMaster) stores a new one.
	extra           atomic.Pointer[map[int32]int64]
	persistInterval time.Duration
	retryInterval   time.Duration

	delivered atomic.Int64
	wake      chan struct{} // one slot
	stop      chan struct{}
	done      chan struct{}
	started   atomic.Bool

	// Owned by the delivery goroutine (and by Stop once it has exited).
	filter  dueFilter
	msg     codec.Message
	props   []byte
	topics  map[string]string
	written []int64 // cursors in the file
	pending *delaySnapshot
	failLog time.Time // last time a failure was logged (failures repeat every retry)
}

// delaySnapshot is a set of cursors waiting for the CommitLog to be durable up to end.
type delaySnapshot struct {
	offsets []int64
	end     int64
}

// New builds the service and loads delayOffset.json (or its .bak).
func New(deps Deps) (*ScheduleMessageService, error) {
	if len(deps.Delays) == 0 {
		return nil, ErrNoLevels
	}
	if deps.Clock == nil {
		deps.Clock = time.Now
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.PersistInterval <= 0 {
		deps.PersistInterval = delayOffsetPersistInterval
	}
	if deps.RetryInterval <= 0 {
		deps.RetryInterval = delayRetryInterval
	}
	s := &ScheduleMessageService{
		deps:            deps,
		levels:          make([]delayLevel, len(deps.Delays)),
		persistInterval: deps.PersistInterval,
		retryInterval:   deps.RetryInterval,
		wake:            make(chan struct{}, 1),
		stop:            make(chan struct{}),
		done:            make(chan struct{}),
		topics:          map[string]string{},
	}
	for i, d := range deps.Delays {
		l := &s.levels[i]
		l.level = int32(i + 1)
		l.delayMs = d.Milliseconds()
		l.nextDue.Store(0) // unknown: read at the first pass
	}
	s.extra.Store(&map[int32]int64{})
	if _, err := metadata.LoadConfigFile(deps.Path, func(data []byte) error {
		w, err := codec.DecodeDelayOffsetSerializeWrapper(data)
		if err != nil {
			return err
		}
		s.loadTable(w.OffsetTable)
		return nil
	}, deps.Logger); err != nil {
		return nil, err
	}
	s.written = s.cursors()
	return s, nil
}

// loadTable sets the cursors (and the kept extra levels) to an offset table's: a level it
// lacks is no longer listed.
func (s *ScheduleMessageService) loadTable(offsets map[int32]int64) {
	extra := map[int32]int64{}
	for level, off := range offsets {
		if level < 1 || int(level) > len(s.levels) {
			extra[level] = off
		}
	}
	// Each level is set once, so a concurrent Offsets sees every level either before or after.
	for i := range s.levels {
		l := &s.levels[i]
		if off, ok := offsets[int32(i+1)]; ok {
			l.cursor.Store(off)
			l.known.Store(true)
		} else {
			l.known.Store(false)
			l.cursor.Store(0)
		}
	}
	s.extra.Store(&extra)
	if len(extra) > 0 {
		s.deps.Logger.Warn("broker: delayOffset.json names levels messageDelayLevel does not have; their messages stay scheduled",
			"levels", len(s.levels), "extra", extra)
	}
}

// ReplaceFromMaster is a slave's delay-offset sync (PROTOCOL.md §13.4): body, the master's
// GET_ALL_DELAY_OFFSET answer, is written to delayOffset.json as it is (once it decodes), and
// the cursors this service reports become the master's. Only for a service that was never
// started (a slave's): the delivery goroutine owns the cursors otherwise. It blocks on disk.
func (s *ScheduleMessageService) ReplaceFromMaster(body []byte) error {
	if s.started.Load() {
		return errors.New("broker: schedule message service: delivering; offsets come from the master only on a slave")
	}
	w, err := codec.DecodeDelayOffsetSerializeWrapper(body)
	if err != nil {
		return err
	}
	if err := metadata.WriteConfigFile(s.deps.Path, body); err != nil {
		return err
	}
	s.loadTable(w.OffsetTable)
	s.written = s.cursors() // nothing else touches it on a service that never started
	return nil
}

// Start starts the delivery goroutine.
func (s *ScheduleMessageService) Start() error {
	s.started.Store(true)
	go s.run()
	return nil
}

// Stop stops delivery and writes the final cursors. The store must still be open; its own
// shutdown (which follows) makes the delivered copies durable.
func (s *ScheduleMessageService) Stop(ctx context.Context) error {
	if s.started.Load() {
		close(s.stop)
		select {
		case <-s.done:
		case <-ctx.Done():
			return fmt.Errorf("schedule message service: %w", ctx.Err())
		}
	}
	cur := s.cursors()
	if slices.Equal(cur, s.written) {
		return nil
	}
	return s.write(cur)
}

// NotifyMessageArriving tells the service that an entry with delivery time deliverMs was
// appended to SCHEDULE_TOPIC_XXXX queue queueID. It runs on the store's dispatcher goroutine:
// two atomic loads, and a non-blocking wake-up only when the entry may be due before the
// delivery goroutine's plan.
func (s *ScheduleMessageService) NotifyMessageArriving(queueID int32, deliverMs int64) {
	if queueID < 0 || int(queueID) >= len(s.levels) {
		return
	}
	l := &s.levels[queueID]
	if nd := l.nextDue.Load(); nd == scanningDue || deliverMs < nd {
		l.dirty.Store(true)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Delivered counts messages moved to their real topics since start.
func (s *ScheduleMessageService) Delivered() int64 { return s.delivered.Load() }

// LevelDeliveries returns the counters of the messages delivered from a level (index 0 =
// level 1) since start and of the bytes their copies were written in: RocketMQ's QUEUE_GET_NUMS
// and QUEUE_GET_SIZE of SCHEDULE_TOPIC_XXXX's queue index, group SCHEDULE_CONSUMER. Nil when
// the table has no such level.
func (s *ScheduleMessageService) LevelDeliveries(index int) (msgs, bytes *atomic.Int64) {
	if index < 0 || index >= len(s.levels) {
		return nil, nil
	}
	return &s.levels[index].deliveredMsgs, &s.levels[index].deliveredBytes
}

// Offsets returns the live cursors: level → next SCHEDULE_TOPIC_XXXX queue offset
// (GET_ALL_DELAY_OFFSET). As in RocketMQ, a level is listed once it was in delayOffset.json
// or its cursor moved; levels kept from the file that the table lacks are listed too.
func (s *ScheduleMessageService) Offsets() map[int32]int64 {
	return s.table(s.cursors())
}

// table is the offset table of these cursors (index 0 = level 1).
func (s *ScheduleMessageService) table(cursors []int64) map[int32]int64 {
	extra := *s.extra.Load()
	out := make(map[int32]int64, len(cursors)+len(extra))
	for level, off := range extra {
		out[level] = off
	}
	for i, off := range cursors {
		if s.levels[i].known.Load() {
			out[int32(i+1)] = off
		}
	}
	return out
}

// Encode is delayOffset.json's content for the live cursors, compact or pretty.
func (s *ScheduleMessageService) Encode(pretty bool) []byte {
	return (&codec.DelayOffsetSerializeWrapper{OffsetTable: s.Offsets()}).Encode(pretty)
}

func (s *ScheduleMessageService) cursors() []int64 {
	out := make([]int64, len(s.levels))
	for i := range s.levels {
		out[i] = s.levels[i].cursor.Load()
	}
	return out
}

// write replaces delayOffset.json with these cursors (and the kept extra levels).
func (s *ScheduleMessageService) write(offsets []int64) error {
	w := codec.DelayOffsetSerializeWrapper{OffsetTable: s.table(offsets)}
	if err := metadata.WriteConfigFile(s.deps.Path, w.Encode(true)); err != nil {
		return err
	}
	s.written = offsets
	return nil
}

// persistDurable writes the newest cursors the CommitLog's durable part covers (see the file
// comment). A snapshot whose copies are not durable yet waits as pending; it is written at a
// later call once the flushed offset has passed the CommitLog end taken with it. Runs on the
// delivery goroutine.
func (s *ScheduleMessageService) persistDurable() {
	cur := s.cursors()
	end := s.deps.Store.MaxPhyOffset() // after the cursors: covers every copy they account for
	flushed := s.deps.Store.Stats().CommitLogFlushedOffset
	var err error
	if s.pending != nil && flushed >= s.pending.end {
		err = s.write(s.pending.offsets)
		s.pending = nil
	}
	switch {
	case err != nil:
	case slices.Equal(cur, s.written):
		s.pending = nil
	case flushed >= end:
		err = s.write(cur)
		s.pending = nil
	case s.pending == nil:
		s.pending = &delaySnapshot{offsets: cur, end: end}
	}
	if err != nil {
		s.deps.Logger.Error("broker: writing delayOffset.json failed; will retry", "err", err)
	}
}

// run is the delivery loop: deliver what is due, sleep until the earliest head is due or an
// arrival changes the plan, save the cursors every persist interval.
func (s *ScheduleMessageService) run() {
	defer close(s.done)
	timer := time.NewTimer(maxDelayWait)
	defer timer.Stop()
	persist := time.NewTicker(s.persistInterval)
	defer persist.Stop()
	for {
		next := s.deliverDue()
		wait := time.Duration(0)
		if next != noPendingDue {
			wait = time.Duration(next-s.deps.Clock().UnixMilli()) * time.Millisecond
		} else {
			wait = maxDelayWait
		}
		if wait <= 0 {
			select {
			case <-s.stop:
				return
			case <-persist.C:
				s.persistDurable()
			default:
			}
			continue
		}
		timer.Reset(min(wait, maxDelayWait))
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-timer.C:
		case <-persist.C:
			s.persistDurable()
		}
	}
}

// deliverDue reads every level that is due or was told about an arrival, and returns the
// earliest next delivery time (noPendingDue when nothing waits).
func (s *ScheduleMessageService) deliverDue() int64 {
	nowMs := s.deps.Clock().UnixMilli()
	next := noPendingDue
	for i := range s.levels {
		l := &s.levels[i]
		if l.dirty.Swap(false) || l.nextDue.Load() <= nowMs {
			// Readers of nextDue that see scanningDue mark the level dirty, so an entry that
			// arrives while it is read is never missed.
			l.nextDue.Store(scanningDue)
			l.nextDue.Store(s.deliverLevel(l, nowMs))
		}
		next = min(next, l.nextDue.Load())
	}
	return next
}

// deliverLevel delivers a level's due entries from its cursor and returns the delivery time
// of the first entry not yet due (noPendingDue: none left; a time near now: try again soon).
func (s *ScheduleMessageService) deliverLevel(l *delayLevel, nowMs int64) int64 {
	queueID := l.level - 1
	start := l.cursor.Load()
	cursor := start
	defer func() {
		if cursor != start {
			l.cursor.Store(cursor)
			l.known.Store(true)
		}
	}()
	for range maxBatchesPerScan {
		s.filter = dueFilter{nowMs: nowMs, delayMs: l.delayMs}
		res, err := s.deps.Store.GetMessage("", metadata.ScheduleTopic, queueID, cursor, deliverBatch, 0, &s.filter)
		if err != nil {
			s.logFailure("reading the schedule queue", l.level, err)
			return nowMs + s.retryInterval.Milliseconds()
		}
		switch res.Status {
		case store.OffsetOverflowOne, store.NoMessageInQueue, store.NoMatchedLogicQueue:
			res.Release()
			return noPendingDue
		case store.OffsetTooSmall, store.OffsetFoundNull:
			cursor = res.NextBeginOffset
			res.Release()
			continue
		case store.OffsetOverflowBadly:
			s.deps.Logger.Warn("broker: delay cursor past the schedule queue's end; set back to the end",
				"level", l.level, "cursor", cursor, "maxOffset", res.MaxOffset)
			cursor = res.MaxOffset
			res.Release()
			continue
		}
		// FOUND, NO_MATCHED_MESSAGE, MESSAGE_WAS_REMOVING: the due entries, in queue order.
		for _, rec := range res.Buffers {
			queueOffset, err := s.deliver(l, rec)
			switch {
			case err == nil:
				cursor = queueOffset + 1
			case errors.Is(err, errSkipRecord):
				s.deps.Logger.Warn("broker: scheduled message dropped", "level", l.level,
					"queueOffset", queueOffset, "err", err)
				if queueOffset < 0 { // not even a record header: step over one entry
					queueOffset = cursor
				}
				cursor = max(cursor, queueOffset+1)
			default:
				res.Release()
				s.logFailure("delivering a scheduled message", l.level, err)
				return nowMs + s.retryInterval.Milliseconds()
			}
		}
		n := len(res.Buffers)
		next := res.NextBeginOffset
		res.Release()
		f := &s.filter
		switch {
		case n == 0 && f.dueSeen > 0:
			// Due entries whose records are gone (CommitLog files deleted): step past them.
			cursor += int64(f.dueSeen)
		case n == 0 && f.dueSeen == 0 && !f.cut:
			cursor = next // nothing but padding was read
		case f.cut && n == f.dueSeen:
			return f.cutTag
		}
	}
	return nowMs // more to read: come back at once, after the other levels
}

// deliver writes one scheduled record's copy to its real topic and returns the record's
// schedule queue offset. errSkipRecord: the record can never be delivered. The copy's
// properties are the record's well-formed pairs only (codec.AppendPropertiesWithout), so a
// record stored before properties were checked is delivered without its malformed pieces.
func (s *ScheduleMessageService) deliver(l *delayLevel, rec []byte) (int64, error) {
	var queueOffset int64 = -1
	if len(rec) >= 28 {
		queueOffset = int64(binary.BigEndian.Uint64(rec[20:28]))
	}
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		return queueOffset, fmt.Errorf("%w: %w", errSkipRecord, err)
	}
	realTopic, ok := codec.LookupProperty(r.Properties, codec.PropertyRealTopic)
	if !ok || len(realTopic) == 0 {
		return r.QueueOffset, fmt.Errorf("%w: no REAL_TOPIC", errSkipRecord)
	}
	realQID, ok := codec.LookupProperty(r.Properties, codec.PropertyRealQueueID)
	qid, valid := codec.ParseDecimal(realQID)
	if !ok || !valid || qid < 0 {
		return r.QueueOffset, fmt.Errorf("%w: bad REAL_QID %q", errSkipRecord, realQID)
	}
	p := codec.AppendPropertiesWithout(s.props[:0], r.Properties)
	s.props = p
	// s.msg, not a local: a message passed through the store interface escapes.
	s.msg = codec.Message{
		Topic:          s.topicName(realTopic),
		QueueID:        int32(qid),
		Flag:           r.Flag,
		SysFlag:        r.SysFlag,
		BornTimestamp:  r.BornTimestamp,
		BornHost:       r.BornHost,
		StoreHost:      s.deps.StoreHost,
		ReconsumeTimes: r.ReconsumeTimes,
		Body:           r.Body,
		Properties:     p,
	}
	res, err := s.deps.Store.PutMessage(&s.msg)
	s.msg.Body = nil // a view of mapped memory
	if err != nil {
		if res.Status == store.MessageIllegal || res.Status == store.PropertiesSizeExceeded {
			return r.QueueOffset, fmt.Errorf("%w: %w", errSkipRecord, err)
		}
		return r.QueueOffset, err
	}
	s.delivered.Add(1)
	l.deliveredMsgs.Add(int64(res.MsgNum))
	l.deliveredBytes.Add(int64(res.WroteBytes))
	return r.QueueOffset, nil
}

// topicName returns REAL_TOPIC as a string without allocating for topics seen before.
func (s *ScheduleMessageService) topicName(b []byte) string {
	if t, ok := s.topics[string(b)]; ok {
		return t
	}
	if len(s.topics) >= topicNameCacheMax {
		clear(s.topics)
	}
	t := string(b)
	s.topics[t] = t
	return t
}

// logFailure logs a read or put failure at most once per retry interval's worth of
// failures, so a full disk does not flood the log.
func (s *ScheduleMessageService) logFailure(what string, level int32, err error) {
	now := s.deps.Clock()
	if now.Sub(s.failLog) < 10*s.retryInterval {
		return
	}
	s.failLog = now
	s.deps.Logger.Error("broker: schedule service: "+what+" failed; will retry", "level", level, "err", err)
}
