package clients

import (
	"errors"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// Consumer offset processors: QUERY_CONSUMER_OFFSET (14) and UPDATE_CONSUMER_OFFSET (15),
// PROTOCOL.md §3.3. Both run inline (memory only).

// Remarks of QUERY_NOT_FOUND, as the Java broker words them.
const (
	RemarkOffsetNotFoundNoZero = "Not found, do not set to zero, maybe this group boot first"
	RemarkOffsetNotFound       = "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
)

// processQueryConsumerOffset answers the group's stored offset. With none stored:
// setZeroIfNotFound=false → QUERY_NOT_FOUND (22); otherwise offset 0 when the queue still
// starts at 0 and its first message is still in memory (a young topic: the new group
// reads it from the start), else 22 and the client applies its ConsumeFromWhere.
// Only 0 and 22 are ever answered for a well-formed request (the Go client stops a queue
// on anything else, PROTOCOL.md appendix B).
func (p *Plane) ProcessQueryConsumerOffset(rc *remoting.Request) {
	var h codec.QueryConsumerOffsetRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	offset := p.d.Offsets.Query(h.ConsumerGroup, h.Topic, h.QueueID)
	if offset < 0 {
		switch {
		case !h.SetZeroIfNotFound:
			rc.Reply.Answer(codec.ResponseQueryNotFound, RemarkOffsetNotFoundNoZero)
			return
		case p.firstMessageInMemory(h.Topic, h.QueueID):
			offset = 0
		default:
			rc.Reply.Answer(codec.ResponseQueryNotFound, RemarkOffsetNotFound)
			return
		}
	}
	rc.Reply.Answer(codec.ResponseSuccess, "", codec.NumField("offset", offset))
}

// firstMessageInMemory reports whether the queue still holds its logical offset 0 and
// that message lies within accessMessageInMemoryMaxRatio of RAM behind the CommitLog's end
// (RocketMQ's "not in disk" test; RocketMQ 5 asks the page cache instead).
func (p *Plane) firstMessageInMemory(topic string, queueID int32) bool {
	if p.d.Store.GetMinOffsetInQueue(topic, queueID) > 0 || p.d.Store.GetMaxOffsetInQueue(topic, queueID) <= 0 {
		return false // offset 0 is gone, or there is no message yet
	}
	memory := p.d.TotalMemoryBytes()
	if memory <= 0 {
		return true
	}
	phy := p.d.Store.GetCommitLogOffsetInQueue(topic, queueID, 0)
	behind := p.d.Store.MaxPhyOffset() - phy
	return behind <= memory*int64(p.d.AccessMessageInMemoryMaxRatio)/100
}

// processUpdateConsumerOffset stores a committed offset: the group must exist (26), the
// topic must exist (17), queueId and commitOffset must be present (29), in that order, as
// RocketMQ 5 checks them; then the queue must exist and the offset lie within [0, the queue's
// max offset] (29 INVALID_PARAMETER, nothing stored), which RocketMQ does not check: a
// negative or made-up offset stored for a made-up queue stays in consumerOffset.json.
func (p *Plane) ProcessUpdateConsumerOffset(rc *remoting.Request) {
	var h codec.UpdateConsumerOffsetRequestHeader
	err := h.Decode(rc.Cmd.ExtFields)
	var fe *codec.FieldError
	if err != nil && !(errors.As(err, &fe) && (fe.Field == "queueId" || fe.Field == "commitOffset")) {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	// Decode stops at the first bad field: read the two names directly so that the
	// group and topic checks come first whatever else is wrong.
	group, topic := rc.Cmd.ExtFields["consumerGroup"], rc.Cmd.ExtFields["topic"]
	if !p.d.Groups.Contains(group) {
		rc.Reply.Answer(codec.ResponseSubscriptionGroupNotExist, "Group "+group+" not exist!")
		return
	}
	tc, ok := p.d.Topics.Get(topic)
	if !ok {
		rc.Reply.Answer(codec.ResponseTopicNotExist, "Topic "+topic+" not exist!")
		return
	}
	if err != nil {
		switch {
		case errors.Is(err, codec.ErrBadField):
			rc.Reply.Answer(codec.ResponseInvalidParameter, remoting.HeaderErrorRemark(err))
		case fe.Field == "queueId":
			rc.Reply.Answer(codec.ResponseInvalidParameter, "QueueId is null, topic is "+topic)
		default:
			rc.Reply.Answer(codec.ResponseInvalidParameter, "Offset is null, topic is "+topic)
		}
		return
	}
	if err := p.d.Offsets.CheckQueue(tc, h.QueueID); err != nil {
		rc.Reply.Answer(codec.ResponseInvalidParameter, err.Error())
		return
	}
	maxOffset := p.d.Store.GetMaxOffsetInQueue(h.Topic, h.QueueID)
	if err := p.d.Offsets.CommitChecked(h.ConsumerGroup, h.Topic, h.QueueID, h.CommitOffset, maxOffset); err != nil {
		rc.Reply.Answer(codec.ResponseInvalidParameter, err.Error())
		return
	}
	rc.Reply.OK()
}
