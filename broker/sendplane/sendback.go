package sendplane

import (
	"errors"
	"math/rand/v2"
	"strconv"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Retry and dead letters: CONSUMER_SEND_MSG_BACK (36), PROTOCOL.md §3.6 and §8.2.
//
// A consumer that failed to consume a message sends it back by its CommitLog offset. The
// broker reads that record and writes a new one for the group:
//
//	reconsumeTimes ≥ maxReconsumeTimes        → %DLQ%<group> queue 0 (1 queue, perm 6,
//	or delayLevel < 0                           created on demand), no delay
//	otherwise                                 → %RETRY%<group>, a random queue of the
//	                                            group's retryQueueNums (created on demand),
//	                                            delayed at the requested level, or at
//	                                            3 + reconsumeTimes when the request says 0
//	                                            (clamped to the table: the schedule
//	                                            service delivers it, broker/delay)
//
// maxReconsumeTimes is the group's retryMaxTimes (16 by default), or the request's when it
// carries one (clients from V3_4_9 on). The new record keeps body, flag, sysFlag, born time
// and host, and properties, with reconsume times + 1, RETRY_TOPIC (the original topic, set
// on the first send-back only), ORIGIN_MESSAGE_ID (the first record's offsetMsgId, kept
// across retries) and WAIT=false. Consumers subscribe %RETRY%<group> themselves and put the
// original topic back from RETRY_TOPIC. The properties are re-encoded from the record's
// well-formed pairs only (codec.AppendPropertiesWithout): a record stored before properties
// were checked loses its malformed pieces, and what still does not parse (a topic holding a
// 0x01, copied into RETRY_TOPIC) the store refuses: MESSAGE_ILLEGAL naming it.
//
// Checks, in the Java broker's order: group exists or is auto-created
// (SUBSCRIPTION_GROUP_NOT_EXIST), broker writable (NO_PERMISSION), retryQueueNums ≤ 0 →
// SUCCESS and the message is dropped, retry/DLQ topic writable (NO_PERMISSION), record at
// offset readable (SYSTEM_ERROR "look message by offset failed, <offset>"). Put failures map
// as for sends.
//
// The request runs on the event loop when the record lies within the hot part of the
// CommitLog (the pull rule, readplane/pull.go), on the query pool otherwise: the record read
// may fault pages in from disk.

// defaultRetryDelayLevelBase is RocketMQ's first broker-chosen retry level: 3 + reconsume times.
const defaultRetryDelayLevelBase = 3

// remarkSendBackServiceNotAvailable is the send-back answer when the store refuses the put
// (on a slave always): RocketMQ answers SYSTEM_ERROR with the put status's name.
const remarkSendBackServiceNotAvailable = "SERVICE_NOT_AVAILABLE"

// remarkSubscriptionGroupNotExist is the Java broker's remark (with its FAQ link).
const remarkSubscriptionGroupNotExist = "subscription group not exist, "

// ProcessConsumerSendMsgBack serves 36.
func (p *Plane) ProcessConsumerSendMsgBack(rc *remoting.Request) (rest func()) {
	var h codec.ConsumerSendMsgBackRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return nil
	}
	to := rc.Reply
	version := rc.Cmd.Version
	if p.IsHotOffset(h.Offset) {
		p.sendMessageBack(to, &h, version)
		return nil
	}
	return func() { p.sendMessageBack(to, &h, version) }
}

// IsHotOffset reports whether a CommitLog offset lies in the part of the log that the page
// cache holds (the event loop may read it without faulting pages in from disk).
func (p *Plane) IsHotOffset(phys int64) bool {
	end := p.store.MaxPhyOffset()
	return phys >= 0 && phys <= end && end-phys <= p.set.HotMaxBehindBytes
}

// sendMessageBack does the work of 36 and answers.
func (p *Plane) sendMessageBack(to remoting.Reply, h *codec.ConsumerSendMsgBackRequestHeader, version int32) {
	if p.set.IsSlave {
		// The store refuses every put on a slave; answer as RocketMQ does then, before the
		// group or retry topic is auto-created here (a slave takes both from its master).
		to.Answer(codec.ResponseSystemError, remarkSendBackServiceNotAvailable)
		return
	}
	gc, err := p.groups.FindOrCreate(h.Group)
	if err != nil {
		to.Answer(codec.ResponseSubscriptionGroupNotExist, metadata.Remark(remarkSubscriptionGroupNotExist+h.Group, err))
		return
	}
	if !metadata.IsWriteable(p.live.BrokerPermission.Load()) {
		to.Answer(codec.ResponseNoPermission, "the broker["+p.set.BrokerIP+"] sending message is forbidden")
		return
	}
	if gc.RetryQueueNums <= 0 {
		to.OK()
		return
	}
	topic := metadata.RetryTopic(h.Group)
	queueID := rand.Int32N(gc.RetryQueueNums)
	var topicSysFlag int32
	if h.UnitMode {
		topicSysFlag = metadata.TopicSysFlagUnitSub
	}
	if !p.sendBackTopic(to, topic, gc.RetryQueueNums, topicSysFlag) {
		return
	}
	rec, release, err := p.store.LookMessageByOffset(h.Offset)
	if err != nil {
		to.Answer(codec.ResponseSystemError, "look message by offset failed, "+strconv.FormatInt(h.Offset, 10))
		return
	}
	defer release()
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		to.Answer(codec.ResponseSystemError, "look message by offset failed, "+strconv.FormatInt(h.Offset, 10))
		return
	}

	maxReconsume := gc.RetryMaxTimes
	if version >= mqVersionV349 && h.MaxReconsumeTimes.Set {
		maxReconsume = h.MaxReconsumeTimes.Value
	}
	delayLevel := int(h.DelayLevel)
	toDLQ := r.ReconsumeTimes >= maxReconsume || delayLevel < 0
	if toDLQ {
		topic, queueID = metadata.DLQTopic(h.Group), 0
		if !p.sendBackTopic(to, topic, dlqQueueNums, 0) {
			return
		}
	} else if delayLevel == 0 {
		delayLevel = defaultRetryDelayLevelBase + int(r.ReconsumeTimes)
	}

	// Properties: the record's, without the keys rewritten below, then RETRY_TOPIC,
	// ORIGIN_MESSAGE_ID, WAIT=false and, for a retry, the schedule keys.
	prop := codec.AppendPropertiesWithout(make([]byte, 0, len(r.Properties)+160), r.Properties,
		codec.PropertyWaitStoreMsgOK, codec.PropertyDelayTimeLevel, codec.PropertyRealTopic,
		codec.PropertyRealQueueID, codec.PropertyRetryTopic, codec.PropertyOriginMessageID)
	retryTopic, ok := codec.LookupProperty(r.Properties, codec.PropertyRetryTopic)
	if !ok || len(retryTopic) == 0 {
		retryTopic = r.Topic
	}
	prop = appendPropertyBytes(prop, codec.PropertyRetryTopic, retryTopic)
	if origin, ok := codec.LookupProperty(r.Properties, codec.PropertyOriginMessageID); ok && len(origin) > 0 {
		prop = appendPropertyBytes(prop, codec.PropertyOriginMessageID, origin)
	} else {
		prop = appendPropertyBytes(prop, codec.PropertyOriginMessageID, codec.AppendOffsetMsgID(nil, r.StoreHost, r.PhysicalOffset))
	}
	prop = codec.AppendProperty(prop, codec.PropertyWaitStoreMsgOK, "false")
	storeTopic, storeQueueID := topic, queueID
	if !toDLQ {
		prop, storeQueueID = AppendScheduleProperties(prop, p.clampDelayLevel(delayLevel), topic, queueID)
		storeTopic = metadata.ScheduleTopic
	}
	if len(prop) > propertiesBytesLimit {
		to.Answer(codec.ResponseMessageIllegal, p.messageIllegalRemark())
		return
	}
	msg := codec.Message{
		Topic:          storeTopic,
		QueueID:        storeQueueID,
		Flag:           r.Flag,
		SysFlag:        r.SysFlag,
		BornTimestamp:  r.BornTimestamp,
		BornHost:       r.BornHost,
		StoreHost:      p.storeHost,
		ReconsumeTimes: r.ReconsumeTimes + 1,
		Body:           r.Body,
		Properties:     prop,
	}
	res, err := p.store.PutMessage(&msg)
	if res.Status == store.ServiceNotAvailable && !errors.Is(err, store.ErrDiskFull) {
		// RocketMQ answers a refused send-back with SYSTEM_ERROR and the status name. A full
		// disk gets the send path's SERVICE_NOT_AVAILABLE answer, which names the reason.
		to.Answer(codec.ResponseSystemError, remarkSendBackServiceNotAvailable)
		return
	}
	if code, remark := p.putOutcome(res, err); code != codec.ResponseSuccess {
		to.Answer(code, remark)
		return
	}
	p.sentBack(h.Group, string(retryTopic))
	to.OK()
}

// sendBackTopic creates a send-back's retry or DLQ topic on demand and checks that it is
// writable. It answers and returns false when the topic cannot be written.
func (p *Plane) sendBackTopic(to remoting.Reply, topic string, queueNums, topicSysFlag int32) bool {
	tc, err := p.topics.CreateInSendMessageBack(topic, queueNums, metadata.PermRead|metadata.PermWrite, topicSysFlag)
	if err != nil {
		to.Answer(codec.ResponseSystemError, metadata.Remark("topic["+topic+"] not exist", err))
		return false
	}
	if !metadata.IsWriteable(tc.Perm) {
		to.Answer(codec.ResponseNoPermission, "the topic["+topic+"] sending message is forbidden")
		return false
	}
	return true
}
