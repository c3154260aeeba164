package sendplane

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Transactions: END_TRANSACTION (37) and the check-back of halves nobody ended
// (PROTOCOL.md §3.5, §8.3, §8.4).
//
// A prepared send is stored by send.go (this package) as a half message in RMQ_SYS_TRANS_HALF_TOPIC queue
// 0 (REAL_TOPIC/REAL_QID saved, transaction bits cleared), where no consumer looks. What
// happens next is recorded in RMQ_SYS_TRANS_OP_HALF_TOPIC queue 0: one op record (tag "d",
// body "<half queue offset>,") per half that needs no more attention.
//
//	END_TRANSACTION commit (8)    the half, looked up by commitLogOffset and checked against
//	                              producerGroup (PGROUP), tranStateTableOffset and
//	                              commitLogOffset, is written to REAL_TOPIC/REAL_QID as a
//	                              COMMIT record (PREPARED_TRANSACTION_OFFSET = the half's
//	                              CommitLog offset, REAL_*/TRAN_MSG removed, WAIT=false; a
//	                              DELAY goes through the schedule queue), then an op record
//	END_TRANSACTION rollback (12) an op record only
//	END_TRANSACTION unknown (0)   nothing (answered SUCCESS: the Go client never sets the
//	                              oneway bit, and every request gets an answer)
//
// # The check service
//
// Every transactionCheckInterval it reads the op records it has not seen, then walks the
// half queue from its cursor H. A half with an op record is skipped. A half younger than
// transactionTimeOut (or, before its first check, CHECK_IMMUNITY_TIME_IN_SECONDS counted from
// its born time) stops the walk: the queue is in store-time order. Any other half is checked:
// it is appended again with TRANSACTION_CHECK_TIMES + 1 and TRAN_PREPARED_QUEUE_OFFSET (the
// first half's offset), an op record retires the old copy, and CHECK_TRANSACTION_STATE goes
// oneway to the live producer of its PGROUP that beat last, carrying the new copy's queue
// offset, CommitLog offset and offsetMsgId, so the producer's END_TRANSACTION targets the copy.
// A half checked transactionCheckMax times already is moved to TRANS_CHECK_MAX_TIME_TOPIC
// (and retired); one stored longer ago than fileReservedTime is retired unchecked.
//
// The op record for a retired copy is what RocketMQ does not write; here it makes the state
// on disk complete, so a crash between a check and the next cursor save cannot make a half
// be checked (and then committed) twice. An END_TRANSACTION that names a copy the checker
// has since replaced (a producer slower than transactionTimeOut) is applied to the newest
// copy instead.
//
// # State across restarts
//
// H and the op-queue cursor are the offsets of the built-in group CID_RMQ_SYS_TRANS in
// consumerOffset.json (half topic and op topic, queue 0), written with the other offsets.
// The op cursor is saved no further than the oldest op record of a half at or above H, so
// a restart reads every op it still needs. Check counts travel in the copies' properties.
// The delivery is at-least-once: a crash between a commit's record and its op record makes
// the half pending again, and the producer will be asked again.
//
// END_TRANSACTION runs on the event loop when the half lies in the hot part of the
// CommitLog (the pull rule), on the query pool otherwise. The check service has its own
// goroutine, started only on a master with checkTransactionMessageEnable.

// Transaction constants (RocketMQ TransactionalMessageUtil and friends).
const (
	transOpRemoveTag         = "d"
	transReadBatch           = 32   // half or op records per store read
	transCheckBatchesPerRun  = 4096 // × 32 halves: bounds one check run
	remarkHalfNotFound       = "Find prepared transaction message failed"
	remarkProducerGroupWrong = "The producer group wrong"
	remarkTranStateWrong     = "The transaction state table offset wrong"
	remarkCommitLogWrong     = "The commit log offset wrong"
)

// Marks in transactionService.mu.done besides op queue offsets (≥ 0).
const (
	opNotWritten int64 = -1 // resolved; its op record could not be written (or not yet)
	endClaimed   int64 = -2 // an END_TRANSACTION is writing the commit: the checker waits
)

// halfRef locates one half copy.
type halfRef struct {
	queueOffset int64
	phys        int64
}

// transactionService holds the transaction state (see the file comment). Safe for
// concurrent use: END_TRANSACTION on any goroutine, the checker on its own.
type transactionService struct {
	p        *Plane
	interval time.Duration
	timeout  time.Duration
	checkMax int

	mu struct {
		sync.Mutex
		halfOffset int64             // H: every half below is retired
		opRead     int64             // next op record to read
		done       map[int64]int64   // half offset ≥ H → its op's queue offset, or a mark
		latest     map[int64]halfRef // first half offset → the pending copy the checker made
	}

	checks    atomic.Int64 // CHECK_TRANSACTION_STATE sent
	kick      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	startedGo atomic.Bool
}

// newTransactionService builds the transaction service, its cursors from the consumer offsets
// (consumerOffset.json). The check service starts with the plane (StartTransactions), only on a
// master with checkTransactionMessageEnable.
func newTransactionService(p *Plane) *transactionService {
	t := &transactionService{
		p:        p,
		interval: p.set.TransactionCheckInterval,
		timeout:  p.set.TransactionTimeOut,
		checkMax: p.set.TransactionCheckMax,
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	t.mu.done = map[int64]int64{}
	t.mu.latest = map[int64]halfRef{}
	t.mu.halfOffset = max(p.offsets.Query(metadata.SysTransCheckGroup, metadata.TransHalfTopic, 0), 0)
	t.mu.opRead = max(p.offsets.Query(metadata.SysTransCheckGroup, metadata.TransOpHalfTopic, 0), 0)
	return t
}

// start reads the op records written since the last saved cursor (so END_TRANSACTION knows
// every retired half before the server accepts one) and starts the checker.
func (t *transactionService) start(runChecks bool) error {
	t.readOps()
	if runChecks {
		t.startedGo.Store(true)
		go t.run()
	}
	return nil
}

// shutdown stops the checker and hands the cursors to the consumer-offset manager, whose
// flusher (stopped later) writes them.
func (t *transactionService) shutdown(ctx context.Context) error {
	if t.startedGo.Load() {
		close(t.stop)
		select {
		case <-t.done:
		case <-ctx.Done():
			return fmt.Errorf("transaction check service: %w", ctx.Err())
		}
	}
	t.commitOffsets()
	return nil
}

func (t *transactionService) run() {
	defer close(t.done)
	ticker := time.NewTicker(t.interval)
	defer ticker.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-ticker.C:
		case <-t.kick:
		}
		t.checkOnce()
	}
}

// checkOnce is one run of the check service.
func (t *transactionService) checkOnce() {
	now := t.p.clock()
	t.readOps()
	t.scanHalves(now)
	t.commitOffsets()
}

// Checks counts CHECK_TRANSACTION_STATE requests sent.
func (t *transactionService) Checks() int64 { return t.checks.Load() }

// advance moves H to at least to, forgets what lies below, then steps over halves that are
// retired. Caller holds t.mu.
func (t *transactionService) advance(to int64) {
	m := &t.mu
	if to > m.halfOffset {
		if to-m.halfOffset > int64(len(m.done)) {
			for off := range m.done {
				if off < to {
					delete(m.done, off)
				}
			}
		} else {
			for off := m.halfOffset; off < to; off++ {
				delete(m.done, off)
			}
		}
		m.halfOffset = to
	}
	for {
		v, ok := m.done[m.halfOffset]
		if !ok || v == endClaimed {
			return
		}
		delete(m.done, m.halfOffset)
		m.halfOffset++
	}
}

// retiredLocked reports whether the half at off needs nothing more. Caller holds t.mu.
func (t *transactionService) retiredLocked(off int64) bool {
	if off < t.mu.halfOffset {
		return true
	}
	v, ok := t.mu.done[off]
	return ok && v != endClaimed
}

// commitOffsets hands H and the op cursor to the consumer-offset manager.
func (t *transactionService) commitOffsets() {
	t.mu.Lock()
	h, o := t.mu.halfOffset, t.mu.opRead
	for _, v := range t.mu.done {
		if v >= 0 && v < o {
			o = v
		}
	}
	t.mu.Unlock()
	t.p.offsets.Commit(metadata.SysTransCheckGroup, metadata.TransHalfTopic, 0, h)
	t.p.offsets.Commit(metadata.SysTransCheckGroup, metadata.TransOpHalfTopic, 0, o)
}

// readOps reads the op records not seen yet and marks their halves retired.
func (t *transactionService) readOps() {
	st := t.p.store
	t.mu.Lock()
	cursor := t.mu.opRead
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.mu.opRead = cursor
		t.mu.Unlock()
	}()
	for {
		res, err := st.GetMessage(metadata.SysTransCheckGroup, metadata.TransOpHalfTopic, 0, cursor, transReadBatch, 0, nil)
		if err != nil {
			t.p.logger.Warn("broker: reading transaction op records failed", "err", err)
			return
		}
		switch res.Status {
		case store.OffsetOverflowOne, store.NoMessageInQueue, store.NoMatchedLogicQueue:
			res.Release()
			return
		case store.OffsetTooSmall, store.OffsetFoundNull:
			cursor = res.NextBeginOffset
			res.Release()
			continue
		case store.OffsetOverflowBadly:
			cursor = res.MaxOffset
			res.Release()
			continue
		}
		t.mu.Lock()
		for _, rec := range res.Buffers {
			r, err := codec.DecodeRecord(rec, false)
			if err != nil {
				continue
			}
			for _, part := range bytes.Split(r.Body, []byte{','}) {
				off, ok := parseOffset(part)
				if !ok || off < t.mu.halfOffset {
					continue
				}
				if v, seen := t.mu.done[off]; !seen || v == opNotWritten {
					t.mu.done[off] = r.QueueOffset
				}
			}
			cursor = max(cursor, r.QueueOffset+1)
		}
		t.advance(t.mu.halfOffset)
		t.mu.Unlock()
		if len(res.Buffers) == 0 {
			cursor = max(cursor, res.NextBeginOffset)
		}
		res.Release()
	}
}

// parseOffset parses a decimal queue offset (an op body piece).
func parseOffset(b []byte) (int64, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil && n >= 0
}

// scanHalves walks the half queue from H and checks, renews or discards what is due.
func (t *transactionService) scanHalves(now time.Time) {
	st := t.p.store
	nowMs := now.UnixMilli()
	for range transCheckBatchesPerRun {
		t.mu.Lock()
		cursor := t.mu.halfOffset
		t.mu.Unlock()
		res, err := st.GetMessage(metadata.SysTransCheckGroup, metadata.TransHalfTopic, 0, cursor, transReadBatch, 0, nil)
		if err != nil {
			t.p.logger.Warn("broker: reading half messages failed", "err", err)
			return
		}
		switch res.Status {
		case store.OffsetOverflowOne, store.NoMessageInQueue, store.NoMatchedLogicQueue:
			res.Release()
			return
		case store.OffsetTooSmall, store.OffsetFoundNull, store.OffsetOverflowBadly:
			next := res.NextBeginOffset
			if res.Status == store.OffsetOverflowBadly {
				next = res.MaxOffset
			}
			res.Release()
			t.mu.Lock()
			t.advance(next)
			t.mu.Unlock()
			continue
		}
		for _, rec := range res.Buffers {
			if stop := t.checkHalf(rec, nowMs); stop {
				res.Release()
				return
			}
		}
		if len(res.Buffers) == 0 {
			t.mu.Lock()
			t.advance(res.NextBeginOffset)
			t.mu.Unlock()
		}
		res.Release()
	}
}

// checkHalf handles one half met by the walk. It returns true when the walk must stop here
// (the half is not due, or an END_TRANSACTION is writing it, or a put failed).
func (t *transactionService) checkHalf(rec []byte, nowMs int64) (stop bool) {
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		t.p.logger.Warn("broker: undecodable half message skipped", "err", err)
		if len(rec) >= 28 {
			t.mu.Lock()
			t.advance(int64(binary.BigEndian.Uint64(rec[20:28])) + 1) // QUEUEOFFSET
			t.mu.Unlock()
		}
		return false
	}
	h := r.QueueOffset
	t.mu.Lock()
	if h < t.mu.halfOffset {
		t.mu.Unlock()
		return false
	}
	if v, ok := t.mu.done[h]; ok {
		if v == endClaimed {
			t.mu.Unlock()
			return true
		}
		t.advance(h + 1)
		t.mu.Unlock()
		return false
	}
	t.mu.Unlock()

	checkTimes := 0
	if v, ok := codec.LookupProperty(r.Properties, codec.PropertyTransactionCheckTimes); ok {
		checkTimes, _ = codec.ParseDecimal(v)
	}
	if r.StoreTimestamp >= nowMs {
		return true // stored during this run (a copy it made, or a new half): all behind it are newer
	}
	timeoutMs := t.timeout.Milliseconds()
	age := nowMs - r.StoreTimestamp
	if checkTimes == 0 {
		if v, ok := codec.LookupProperty(r.Properties, codec.PropertyCheckImmunityTimeInSecond); ok {
			if sec, ok := codec.ParseDecimal(v); ok && int64(sec)*1000 > timeoutMs && nowMs-r.BornTimestamp < int64(sec)*1000 {
				if age < timeoutMs {
					return true
				}
				// Still immune: put it back at the end without counting a check, so that the
				// halves behind it are not held up.
				return !t.renew(&r, 0, false)
			}
		}
	}
	if age < timeoutMs {
		return true
	}
	// Older than the files are kept (by store time: a producer's clock may be far off):
	// RocketMQ retires such halves unchecked.
	if checkTimes >= t.checkMax || age > t.p.set.FileReservedTime.Milliseconds() {
		return !t.discard(&r, checkTimes >= t.checkMax)
	}
	return !t.renew(&r, checkTimes+1, true)
}

// originOf is the first half offset of a half copy chain.
func originOf(r *codec.Record) int64 {
	if v, ok := codec.LookupProperty(r.Properties, codec.PropertyTransactionPreparedQueue); ok {
		if off, ok := parseOffset(v); ok {
			return off
		}
	}
	return r.QueueOffset
}

// renew appends a copy of the half r with checkTimes, retires r, and (check) asks its
// producer. It returns false when the walk must stop (a put failed, or an END_TRANSACTION
// holds the half).
func (t *transactionService) renew(r *codec.Record, checkTimes int, check bool) bool {
	p := t.p
	h := r.QueueOffset
	origin := originOf(r)
	prop := codec.AppendPropertiesWithout(make([]byte, 0, len(r.Properties)+64), r.Properties,
		codec.PropertyTransactionCheckTimes, codec.PropertyTransactionPreparedQueue)
	prop = appendPropertyInt(prop, codec.PropertyTransactionCheckTimes, int64(checkTimes))
	prop = appendPropertyInt(prop, codec.PropertyTransactionPreparedQueue, origin)
	msg := codec.Message{
		Topic:          metadata.TransHalfTopic,
		QueueID:        0,
		Flag:           r.Flag,
		SysFlag:        r.SysFlag,
		BornTimestamp:  r.BornTimestamp,
		BornHost:       r.BornHost,
		StoreHost:      p.storeHost,
		ReconsumeTimes: r.ReconsumeTimes,
		Body:           r.Body,
		Properties:     prop,
	}
	t.mu.Lock()
	if v, ok := t.mu.done[h]; h < t.mu.halfOffset || ok {
		// An END_TRANSACTION got there first.
		if ok && v != endClaimed {
			t.advance(h + 1)
		}
		t.mu.Unlock()
		return !ok || v != endClaimed
	}
	res, err := p.store.PutMessage(&msg)
	if err != nil {
		t.mu.Unlock()
		p.logger.Warn("broker: re-appending a half message for its check failed; will retry", "err", err)
		return false
	}
	t.mu.latest[origin] = halfRef{queueOffset: res.QueueOffset, phys: res.WroteOffset}
	t.mu.done[h] = opNotWritten
	t.advance(h + 1)
	t.mu.Unlock()
	t.writeOp(h)
	if check {
		t.sendCheck(&msg, res)
	}
	return true
}

// discard retires a half for good: after transactionCheckMax checks it is kept in
// TRANS_CHECK_MAX_TIME_TOPIC (toCheckMax), past fileReservedTime it is dropped.
func (t *transactionService) discard(r *codec.Record, toCheckMax bool) bool {
	p := t.p
	h := r.QueueOffset
	origin := originOf(r)
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.mu.done[h]; h < t.mu.halfOffset || ok {
		if ok && v != endClaimed {
			t.advance(h + 1)
		}
		return !ok || v != endClaimed
	}
	if toCheckMax {
		// Not a group topic: no limit applies, it cannot be refused.
		_, _ = p.topics.CreateInSendMessageBack(metadata.TransCheckMaxTimeTopic, 1, metadata.PermRead|metadata.PermWrite, 0)
		props := r.Properties
		if codec.ValidateProperties(props) != nil {
			// A half stored before properties were checked: the store would refuse it as is,
			// and this discard would be retried for ever. Re-encode it canonically.
			props = codec.AppendPropertiesWithout(nil, props)
		}
		msg := codec.Message{
			Topic: metadata.TransCheckMaxTimeTopic, QueueID: 0, Flag: r.Flag, SysFlag: r.SysFlag,
			BornTimestamp: r.BornTimestamp, BornHost: r.BornHost, StoreHost: p.storeHost,
			ReconsumeTimes: r.ReconsumeTimes, Body: r.Body, Properties: props,
		}
		if _, err := p.store.PutMessage(&msg); err != nil {
			p.logger.Warn("broker: moving a half message to "+metadata.TransCheckMaxTimeTopic+" failed; will retry", "err", err)
			return false
		}
		p.logger.Info("broker: transaction discarded after its last check", "halfOffset", h,
			"checks", t.checkMax, "uniqKey", string(lookupOr(r.Properties, codec.PropertyUniqClientMessageIDKey)))
	}
	delete(t.mu.latest, origin)
	t.mu.done[h] = opNotWritten
	t.advance(h + 1)
	// The op record is written under the lock here: discards are rare, and the order
	// "retired in memory, then on disk" must not interleave with a commit of the same half.
	if _, err := t.putOp(h); err != nil {
		p.logger.Warn("broker: writing a transaction op record failed", "halfOffset", h, "err", err)
	}
	return true
}

func lookupOr(props []byte, key string) []byte {
	v, _ := codec.LookupProperty(props, key)
	return v
}

// writeOp writes the op record of half h and remembers its offset while h ≥ H.
func (t *transactionService) writeOp(h int64) {
	opOffset, err := t.putOp(h)
	if err != nil {
		t.p.logger.Warn("broker: writing a transaction op record failed", "halfOffset", h, "err", err)
		return
	}
	t.mu.Lock()
	if v, ok := t.mu.done[h]; ok && v != endClaimed {
		t.mu.done[h] = opOffset
	}
	t.mu.Unlock()
}

// putOp appends the op record "<h>," (tag d) and returns its op queue offset.
func (t *transactionService) putOp(h int64) (int64, error) {
	p := t.p
	body := strconv.AppendInt(make([]byte, 0, 24), h, 10)
	body = append(body, ',')
	var props []byte
	props = codec.AppendProperty(props, codec.PropertyTags, transOpRemoveTag)
	props = codec.AppendProperty(props, codec.PropertyWaitStoreMsgOK, "false")
	msg := codec.Message{
		Topic:         metadata.TransOpHalfTopic,
		BornTimestamp: p.clock().UnixMilli(),
		BornHost:      p.storeHost,
		StoreHost:     p.storeHost,
		Body:          body,
		Properties:    props,
	}
	res, err := p.store.PutMessage(&msg)
	return res.QueueOffset, err
}

// sendCheck sends CHECK_TRANSACTION_STATE for the copy just written (msg, res) to a live
// producer of its group. The body is the copy re-encoded with its real topic and queue.
func (t *transactionService) sendCheck(msg *codec.Message, res store.PutResult) {
	p := t.p
	props := msg.Properties
	group := lookupOr(props, codec.PropertyProducerGroup)
	conn, ok := p.producers.AvailableConn(string(group))
	if !ok {
		p.logger.Debug("broker: no live producer to check a transaction with", "group", string(group))
		return
	}
	realTopic := string(lookupOr(props, codec.PropertyRealTopic))
	realQID, _ := codec.ParseDecimal(lookupOr(props, codec.PropertyRealQueueID))
	body := *msg
	body.Topic, body.QueueID = realTopic, int32(realQID)
	body.QueueOffset, body.PhysicalOffset, body.StoreTimestamp = res.QueueOffset, res.WroteOffset, res.StoreTimestamp
	if body.Topic == "" {
		body.Topic = metadata.TransHalfTopic
	}
	rec, err := body.AppendRecord(nil)
	if err != nil {
		p.logger.Warn("broker: encoding a transaction check failed", "err", err)
		return
	}
	uniq := string(lookupOr(props, codec.PropertyUniqClientMessageIDKey))
	txID := string(lookupOr(props, codec.PropertyTransactionID))
	if txID == "" {
		txID = uniq
	}
	ext := map[string]string{}
	(&codec.CheckTransactionStateRequestHeader{
		Topic:                realTopic,
		TranStateTableOffset: res.QueueOffset,
		CommitLogOffset:      res.WroteOffset,
		MsgID:                uniq,
		TransactionID:        txID,
		OffsetMsgID:          codec.OffsetMsgID(p.storeHost, res.WroteOffset),
		BrokerName:           p.set.BrokerName,
	}).Encode(ext)
	if err := conn.InvokeOneway(codec.NewRequest(codec.RequestCheckTransactionState, ext, rec)); err != nil {
		p.logger.Debug("broker: sending a transaction check failed", "group", string(group), "err", err)
		return
	}
	t.checks.Add(1)
}

// ProcessEndTransaction serves 37.
func (p *Plane) ProcessEndTransaction(rc *remoting.Request) (rest func()) {
	var h codec.EndTransactionRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return nil
	}
	if p.set.IsSlave {
		rc.Reply.Answer(codec.ResponseSlaveNotAvailable, "Message store is slave mode, so end transaction is forbidden.")
		return nil
	}
	switch h.CommitOrRollback {
	case codec.SysFlagTransactionNot:
		rc.Reply.OK()
		return nil
	case codec.SysFlagTransactionCommit, codec.SysFlagTransactionRollback:
	default:
		rc.Reply.Answer(codec.ResponseSystemError,
			"the custom field <commitOrRollback> has a bad value: "+strconv.Quote(rc.Cmd.ExtFields["commitOrRollback"]))
		return nil
	}
	to := rc.Reply
	if p.IsHotOffset(h.CommitLogOffset) {
		p.tx.end(to, &h)
		return nil
	}
	return func() { p.tx.end(to, &h) }
}

// end applies an END_TRANSACTION and answers.
func (t *transactionService) end(to remoting.Reply, h *codec.EndTransactionRequestHeader) {
	p := t.p
	rec, release, err := p.store.LookMessageByOffset(h.CommitLogOffset)
	if err != nil {
		to.Answer(codec.ResponseSystemError, remarkHalfNotFound)
		return
	}
	defer release()
	r, err := codec.DecodeRecord(rec, false)
	switch {
	case err != nil || string(r.Topic) != metadata.TransHalfTopic:
		to.Answer(codec.ResponseSystemError, remarkHalfNotFound)
		return
	case string(lookupOr(r.Properties, codec.PropertyProducerGroup)) != h.ProducerGroup:
		to.Answer(codec.ResponseSystemError, remarkProducerGroupWrong)
		return
	case r.QueueOffset != h.TranStateTableOffset:
		to.Answer(codec.ResponseSystemError, remarkTranStateWrong)
		return
	case r.PhysicalOffset != h.CommitLogOffset:
		to.Answer(codec.ResponseSystemError, remarkCommitLogWrong)
		return
	}

	// Claim the half (or the copy that replaced it) so that the checker leaves it alone.
	origin := originOf(&r)
	half := r.QueueOffset
	t.mu.Lock()
	ref, hadLatest := t.mu.latest[origin]
	if t.retiredLocked(half) {
		if !hadLatest || ref.queueOffset == half || t.retiredLocked(ref.queueOffset) || t.mu.done[ref.queueOffset] == endClaimed {
			t.mu.Unlock()
			to.OK() // already ended (or being ended)
			return
		}
		half = ref.queueOffset
	} else if v, ok := t.mu.done[half]; ok && v == endClaimed {
		t.mu.Unlock()
		to.OK()
		return
	}
	t.mu.done[half] = endClaimed
	delete(t.mu.latest, origin)
	t.mu.Unlock()
	unclaim := func() {
		t.mu.Lock()
		if t.mu.done[half] == endClaimed {
			delete(t.mu.done, half)
		}
		if hadLatest {
			if _, ok := t.mu.latest[origin]; !ok {
				t.mu.latest[origin] = ref
			}
		}
		t.mu.Unlock()
	}

	target := &r
	if half != r.QueueOffset { // the checker's newest copy
		copyRec, copyRelease, err := p.store.LookMessageByOffset(ref.phys)
		if err != nil {
			unclaim()
			to.Answer(codec.ResponseSystemError, remarkHalfNotFound)
			return
		}
		defer copyRelease()
		cr, err := codec.DecodeRecord(copyRec, false)
		if err != nil || string(cr.Topic) != metadata.TransHalfTopic || cr.QueueOffset != half {
			unclaim()
			to.Answer(codec.ResponseSystemError, remarkHalfNotFound)
			return
		}
		target = &cr
	}

	if h.CommitOrRollback == codec.SysFlagTransactionCommit {
		if code, remark := t.commit(target); code != codec.ResponseSuccess {
			unclaim()
			to.Answer(code, remark)
			return
		}
	}
	t.mu.Lock()
	if half >= t.mu.halfOffset {
		t.mu.done[half] = opNotWritten
		t.advance(t.mu.halfOffset)
	}
	t.mu.Unlock()
	t.writeOp(half)
	to.OK()
}

// commit writes the real message of the half r (EndTransactionProcessor.endMessageTransaction).
// Its properties are re-encoded from r's well-formed pairs only (codec.AppendPropertiesWithout),
// so a half stored before properties were checked commits without its malformed pieces.
func (t *transactionService) commit(r *codec.Record) (codec.ResponseCode, string) {
	p := t.p
	realTopic, ok := codec.LookupProperty(r.Properties, codec.PropertyRealTopic)
	if !ok || len(realTopic) == 0 {
		return codec.ResponseSystemError, "the half message has no " + codec.PropertyRealTopic
	}
	qid, _ := codec.ParseDecimal(lookupOr(r.Properties, codec.PropertyRealQueueID))
	delayLevel := 0
	if v, ok := codec.LookupProperty(r.Properties, codec.PropertyDelayTimeLevel); ok {
		delayLevel, _ = codec.ParseDecimal(v)
	}
	prop := codec.AppendPropertiesWithout(make([]byte, 0, len(r.Properties)+48), r.Properties,
		codec.PropertyRealTopic, codec.PropertyRealQueueID, codec.PropertyTransactionPrepared,
		codec.PropertyWaitStoreMsgOK, codec.PropertyDelayTimeLevel)
	prop = codec.AppendProperty(prop, codec.PropertyWaitStoreMsgOK, "false")
	topic, queueID := string(realTopic), int32(max(qid, 0))
	if delayLevel > 0 {
		prop, queueID = AppendScheduleProperties(prop, p.clampDelayLevel(delayLevel), topic, queueID)
		topic = metadata.ScheduleTopic
	}
	msg := codec.Message{
		Topic:                     topic,
		QueueID:                   queueID,
		Flag:                      r.Flag,
		SysFlag:                   codec.ResetTransactionType(r.SysFlag, codec.SysFlagTransactionCommit),
		BornTimestamp:             r.BornTimestamp,
		BornHost:                  r.BornHost,
		StoreHost:                 p.storeHost,
		ReconsumeTimes:            r.ReconsumeTimes,
		PreparedTransactionOffset: r.PhysicalOffset,
		Body:                      r.Body,
		Properties:                prop,
	}
	res, err := p.store.PutMessage(&msg)
	return p.putOutcome(res, err)
}
