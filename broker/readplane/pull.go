package readplane

import (
	"strconv"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Pull: PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361), PROTOCOL.md §3.2 and §9.
//
// Checks before reading, in the Java broker's order: broker readable (NO_PERMISSION),
// group exists or is auto-created (SUBSCRIPTION_GROUP_NOT_EXIST), group consumeEnable
// (NO_PERMISSION), topic exists (TOPIC_NOT_EXIST), topic readable (NO_PERMISSION),
// 0 ≤ queueId < readQueueNums (INVALID_PARAMETER), then the subscription: from the
// request when the SUBSCRIPTION sysFlag is set (a TAG expression "*" or "a || b", or an
// SQL92 expression; unparsable → SUBSCRIPTION_PARSE_FAILED), else from the group's
// heartbeat (none → SUBSCRIPTION_NOT_EXIST, older than the request's subVersion →
// SUBSCRIPTION_NOT_LATEST, an SQL92 expression that does not compile →
// FILTER_DATA_NOT_EXIST). SQL92 without enablePropertyFilter → SYSTEM_ERROR "The broker
// does not support consumer to filter message by SQL92", as the Java broker answers.
//
// An SQL92 subscription is compiled once per group, topic and subscription version
// (filter.Cache) and evaluated by the store on each record's properties (filter.go); the
// records it refuses are skipped and nextBeginOffset passes them, as RocketMQ does.
//
// The store answers with a GetMessageStatus; the response code, remark (the status name)
// and nextBeginOffset follow the §9 table. Every response of a pull that reached the store
// carries suggestWhichBrokerId, nextBeginOffset, minOffset and maxOffset. A FOUND body is
// the stored records back to back, written as one vectored write of the store's mapped
// slices (no copy onto the heap); the store's references are released when netio is done.
//
// PULL_NOT_FOUND (19) on the first pass of a request with the SUSPEND sysFlag parks it in
// the hold service (longpoll.go) instead of answering. The COMMIT_OFFSET sysFlag stores the
// request's commitOffset as the group's offset on the first pass only.
//
// # Event loop or pool
//
// A pull of data that was written recently reads pages that are still in the page cache:
// that is a memcpy-free walk over mapped memory and runs on the event loop. A consumer far
// behind reads pages that may have to come from disk, which would stall every connection
// of the loop; such pulls run on the pull pool. The rule, decided before GetMessage with
// in-memory look-ups only:
//
//	queue offset outside [min, max)           → loop (the answer needs no CommitLog read)
//	CommitLog end − CommitLog offset of the
//	  requested entry ≤ HotMaxBehindBytes     → loop
//	otherwise                                  → pull pool
//
// Settings.HotMaxBehindBytes is the Java broker's "in memory" bound, computed by the broker:
// physical RAM × accessMessageInMemoryMaxRatio / 100 (40 % by default). The CommitLog is
// written through the page cache, so its last bytes up to that bound are the ones the kernel
// keeps — the same bound the store uses for its in-memory transfer limits and for
// SuggestPullingFromSlave, so the two decisions agree. Reading the ConsumeQueue entry for
// the check touches one 20-byte entry of a mapped ConsumeQueue file, which is far smaller
// than the CommitLog and stays resident.

// defaultPullBatchSize is what a pull asking for 0 messages gets (the Go pull consumer
// sends maxMsgNums=0 unless configured, PROTOCOL.md appendix B).
const defaultPullBatchSize = 32

// pullRequest is one pull, pooled. It owns copies of everything it needs after the
// inline call returns: the decoded header (whose strings codec owns), the filter (by
// value), the reply address. It is used for the first pass (inline or on the pull pool),
// while parked, and for the re-run after a wake-up.
type pullRequest struct {
	p      *Plane
	to     remoting.Reply
	header codec.PullMessageRequestHeader
	filter subscriptionFilter

	// From the group's config, for suggestWhichBrokerId when slaveReadEnable is on.
	groupBrokerID     int64
	whichBrokerIfSlow int64
	firstPass         bool
	commitAfterLookup bool
	suspendTimeout    time.Duration

	// Hold-service bookkeeping (longpoll.go), owned by the hold goroutine while parked.
	key       holdKey
	deadline  time.Time
	heapIndex int

	// Pool submission without allocating: the pool's fast-failure answer needs a command
	// with the opaque; run is bound once.
	cmd       codec.RemotingCommand
	run       func(*remoting.Request)
	runOnPool func() // the first pass of a cold pull, handed to the dispatcher; bound once
}

func newPullRequest(p *Plane) *pullRequest {
	pr := &pullRequest{p: p, heapIndex: -1}
	pr.run = pr.runFromPool
	pr.runOnPool = func() { p.runPull(pr) }
	return pr
}

func (pr *pullRequest) release() {
	f := pr.filter.more[:0]
	*pr = pullRequest{p: pr.p, run: pr.run, runOnPool: pr.runOnPool, heapIndex: -1}
	pr.filter.more = f
	pr.p.pulls.Put(pr)
}

// runFromPool is the pull pool's entry point for a pull the hold service woke (longpoll.go).
func (pr *pullRequest) runFromPool(*remoting.Request) { pr.p.runPull(pr) }

// ProcessPullMessage serves PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361): decoded and
// checked on the event loop; a pull whose data is hot (pullIsHot) runs there and rest is
// nil, a cold one returns rest, its store read, for the pull pool (broker/routes.go).
func (p *Plane) ProcessPullMessage(rc *remoting.Request) (rest func()) {
	pr := p.pulls.Get().(*pullRequest)
	pr.to = rc.Reply
	if err := pr.header.DecodeFrom(rc.Cmd); err != nil {
		pr.to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		pr.release()
		return nil
	}
	if code, remark := p.checkPull(pr); code != codec.ResponseSuccess {
		pr.to.Answer(code, remark)
		pr.release()
		return nil
	}
	h := &pr.header
	pr.firstPass = true
	if h.SysFlag&codec.PullSysFlagCommitOffset != 0 {
		pr.commitAfterLookup = true
	}
	if h.SysFlag&codec.PullSysFlagSuspend != 0 {
		pr.suspendTimeout = time.Duration(h.SuspendTimeoutMillis) * time.Millisecond
		if !p.set.LongPollingEnable {
			pr.suspendTimeout = p.set.ShortPollingTime
		}
	}
	if p.pullIsHot(h) {
		p.pullsOnLoop.Inc()
		p.runPull(pr)
		return nil
	}
	p.pullsOnPool.Inc()
	return pr.runOnPool
}

// checkPull runs the checks before the store is read and fills pr's filter and group
// settings. It returns SUCCESS or the error to answer.
func (p *Plane) checkPull(pr *pullRequest) (codec.ResponseCode, string) {
	h := &pr.header
	if !metadata.IsReadable(p.live.BrokerPermission.Load()) {
		return codec.ResponseNoPermission, "the broker[" + p.set.BrokerIP + "] pulling message is forbidden"
	}
	gc, err := p.groups.FindOrCreate(h.ConsumerGroup)
	if err != nil {
		return codec.ResponseSubscriptionGroupNotExist,
			metadata.Remark("subscription group ["+h.ConsumerGroup+"] does not exist", err)
	}
	if !gc.ConsumeEnable {
		return codec.ResponseNoPermission, "subscription group no permission, " + h.ConsumerGroup
	}
	pr.groupBrokerID, pr.whichBrokerIfSlow = gc.BrokerID, gc.WhichBrokerWhenConsumeSlowly
	tc, ok := p.topics.Get(h.Topic)
	if !ok {
		return codec.ResponseTopicNotExist, "topic[" + h.Topic + "] not exist, apply first please!"
	}
	if !metadata.IsReadable(tc.Perm) {
		return codec.ResponseNoPermission, "the topic[" + h.Topic + "] pulling message is forbidden"
	}
	if h.QueueID < 0 || h.QueueID >= tc.ReadQueueNums {
		return codec.ResponseInvalidParameter, "queueId[" + itoa(int64(h.QueueID)) + "] is illegal, topic:[" +
			h.Topic + "] topicConfig.readQueueNums:[" + itoa(int64(tc.ReadQueueNums)) + "] consumer:[" +
			pr.to.Conn().RemoteAddr().String() + "]"
	}
	if h.SysFlag&codec.PullSysFlagSubscription != 0 {
		if !isTagExpressionType(h.ExpressionType) {
			if h.Subscription == "" {
				return codec.ResponseSubscriptionParseFailed, "parse the consumer's subscription failed"
			}
			if !p.live.EnablePropertyFilter.Load() || h.ExpressionType != codec.ExpressionTypeSQL92 {
				return codec.ResponseSystemError, "The broker does not support consumer to filter message by " + h.ExpressionType
			}
			// Java builds the filter data here and, when the expression does not compile, goes on
			// without one — delivering every message. Refusing is what the consumer can act on.
			expr, err := p.filters.Get(h.ConsumerGroup, h.Topic, h.Subscription, h.SubVersion)
			if err != nil {
				return codec.ResponseSubscriptionParseFailed, "parse the consumer's subscription failed"
			}
			pr.filter.sql = expr
			return codec.ResponseSuccess, ""
		}
		if err := pr.filter.setFromExpression(h.Subscription); err != nil {
			return codec.ResponseSubscriptionParseFailed, "parse the consumer's subscription failed"
		}
		return codec.ResponseSuccess, ""
	}
	sd := p.subscriptions.FindSubscriptionData(h.ConsumerGroup, h.Topic)
	if sd == nil {
		return codec.ResponseSubscriptionNotExist, "the consumer's subscription not exist"
	}
	if sd.SubVersion < h.SubVersion {
		return codec.ResponseSubscriptionNotLatest, "the consumer's subscription not latest"
	}
	if !isTagExpressionType(sd.ExpressionType) {
		// Java's ConsumerFilterManager compiles a heartbeat's expression whether or not the
		// filter is on, and keeps nothing for one that does not compile (or of a type it
		// does not know): the pull then answers FILTER_DATA_NOT_EXIST. Here the compile runs
		// at the first pull of each subscription version (filter.Cache), from the same data.
		if sd.ExpressionType != codec.ExpressionTypeSQL92 {
			return codec.ResponseFilterDataNotExist, remarkFilterDataNotExist
		}
		expr, err := p.filters.Get(h.ConsumerGroup, h.Topic, sd.SubString, sd.SubVersion)
		if err != nil {
			return codec.ResponseFilterDataNotExist, remarkFilterDataNotExist
		}
		if !p.live.EnablePropertyFilter.Load() {
			return codec.ResponseSystemError, "The broker does not support consumer to filter message by " + sd.ExpressionType
		}
		pr.filter.sql = expr
		return codec.ResponseSuccess, ""
	}
	pr.filter.setFromSubscription(sd)
	return codec.ResponseSuccess, ""
}

// remarkFilterDataNotExist is RocketMQ's remark for an SQL92 subscription it could not compile.
const remarkFilterDataNotExist = "The broker's consumer filter data is not exist!Your expression may be wrong!"

// pullIsHot decides whether a pull may run on the event loop (see the file comment).
func (p *Plane) pullIsHot(h *codec.PullMessageRequestHeader) bool {
	st := p.store
	if h.QueueOffset < 0 || h.QueueOffset >= st.GetMaxOffsetInQueue(h.Topic, h.QueueID) ||
		h.QueueOffset < st.GetMinOffsetInQueue(h.Topic, h.QueueID) {
		return true
	}
	phy := st.GetCommitLogOffsetInQueue(h.Topic, h.QueueID, h.QueueOffset)
	if phy < 0 {
		return true
	}
	return st.MaxPhyOffset()-phy <= p.set.HotMaxBehindBytes
}

// pullStatusCode maps a GetMessageStatus to the pull response code (§9).
func pullStatusCode(st store.GetMessageStatus, requestOffset int64) codec.ResponseCode {
	switch st {
	case store.Found:
		return codec.ResponseSuccess
	case store.NoMatchedMessage, store.MessageWasRemoving:
		return codec.ResponsePullRetryImmediately
	case store.OffsetFoundNull, store.OffsetOverflowOne:
		return codec.ResponsePullNotFound
	case store.OffsetOverflowBadly, store.OffsetTooSmall:
		return codec.ResponsePullOffsetMoved
	case store.NoMatchedLogicQueue, store.NoMessageInQueue:
		if requestOffset != 0 {
			return codec.ResponsePullOffsetMoved
		}
		return codec.ResponsePullNotFound
	}
	return codec.ResponseSystemError
}

// runPull reads the store and answers, or parks the request (first pass, SUSPEND, nothing
// new). It runs on an event loop, a pull-pool worker, or the hold goroutine.
func (p *Plane) runPull(pr *pullRequest) {
	h := &pr.header
	maxNums := int(h.MaxMsgNums)
	if maxNums <= 0 {
		maxNums = defaultPullBatchSize
	}
	res, err := p.store.GetMessage(h.ConsumerGroup, h.Topic, h.QueueID, h.QueueOffset, maxNums,
		int(h.MaxMsgBytes.Or(0)), pr.filter.storeFilter())
	if pr.firstPass && pr.commitAfterLookup && !p.set.IsSlave {
		// Java stores the commit offset on the first pass whatever the lookup found; a slave never
		// stores it (its offsets come from the master, PROTOCOL.md §13.1). checkPull made sure the
		// queue exists; a commit offset outside [0, max offset] is not stored (only counted), and
		// the pull is answered as usual.
		var maxOffset int64
		if err == nil {
			maxOffset = res.MaxOffset
		} else {
			maxOffset = p.store.GetMaxOffsetInQueue(h.Topic, h.QueueID)
		}
		_ = p.offsets.CommitChecked(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset, maxOffset)
	}
	if err != nil {
		pr.to.Answer(codec.ResponseSystemError, "store getMessage failed: "+err.Error())
		pr.release()
		return
	}
	status := res.Status
	code := pullStatusCode(status, h.QueueOffset)
	if code == codec.ResponsePullNotFound && pr.firstPass && pr.suspendTimeout > 0 {
		res.Release()
		pr.firstPass = false
		if p.hold.suspend(pr) {
			return // answered later by the hold service
		}
		// The hold table is full: tell the client to back off rather than spin.
		if p.holdFull != nil {
			p.holdFull.Inc()
		}
		pr.to.Answer(codec.ResponseSystemBusy, remarkHoldFull)
		pr.release()
		return
	}
	var suggest int64
	if p.live.SlaveReadEnable.Load() {
		suggest = pr.groupBrokerID
		if res.SuggestPullingFromSlave {
			suggest = pr.whichBrokerIfSlow
		}
	}
	nextBegin := res.NextBeginOffset
	if code == codec.ResponsePullOffsetMoved && p.set.IsSlave && !p.live.OffsetCheckInSlave.Load() {
		// A slave trails its master: an offset it does not have yet is no reason to move the
		// consumer. RocketMQ keeps the request offset and sends the client back to the group's
		// broker (PROTOCOL.md §13.5).
		code, nextBegin, suggest = codec.ResponsePullRetryImmediately, h.QueueOffset, pr.groupBrokerID
	}
	fields := [...]codec.Field{
		codec.NumField("maxOffset", res.MaxOffset),
		codec.NumField("minOffset", res.MinOffset),
		codec.NumField("nextBeginOffset", nextBegin),
		codec.NumField("suggestWhichBrokerId", suggest),
	}
	f := pr.to.NewFrame()
	var bodies [][]byte
	if code == codec.ResponseSuccess {
		f.Get = res // released with the frame, once netio wrote the mapped slices
		bodies = res.Buffers
	} else {
		res.Release()
	}
	pr.to.Frame(f, code, status.String(), fields[:], bodies)
	pr.release()
}

// itoa formats a number for a remark.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }
