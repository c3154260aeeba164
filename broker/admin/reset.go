package admin

import (
	"strconv"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// ProcessInvokeBrokerToResetOffset serves INVOKE_BROKER_TO_RESET_OFFSET (222, mqadmin
// resetOffsetByTime): for each write queue of the topic (or the one queueId asks for) it
// takes the offset at the timestamp (-1: the queue's max offset; or the header's offset when
// given), keeps the group's committed offset instead when that is lower and isForce is
// false, commits the result, and sends it to every live member of the group in
// RESET_CONSUMER_CLIENT_OFFSET (220, oneway), whose consumers jump there without a restart.
// It answers the offsets as a ResetOffsetBody, or CONSUMER_NOT_ONLINE when the group has no
// live member (RocketMQ's Broker2Client.resetOffset; mqadmin then commits offsets itself).
func (p *Plane) ProcessInvokeBrokerToResetOffset(rc *remoting.Request) {
	var h codec.ResetOffsetRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	tc, ok := p.d.Topics.Get(h.Topic)
	if !ok {
		rc.Reply.Answer(codec.ResponseSystemError, "[reset-offset] reset offset failed, no topic in this broker. topic="+h.Topic)
		return
	}
	if p.d.Consumers.ConsumerIDs(h.Group) == nil {
		rc.Reply.Answer(codec.ResponseConsumerNotOnline, "Consumer not online, so can not reset offset, Group: "+h.Group+
			" Topic: "+h.Topic+" Timestamp: "+strconv.FormatInt(h.Timestamp, 10))
		return
	}
	body := codec.ResetOffsetBody{OffsetTable: map[codec.MessageQueue]int64{}}
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		if h.QueueID.Set && h.QueueID.Value != q {
			continue
		}
		var target int64
		switch {
		case h.Offset.Set:
			target = h.Offset.Value
		case h.Timestamp == -1:
			target = p.d.Store.GetMaxOffsetInQueue(h.Topic, q)
		default:
			target = p.d.Store.GetOffsetInQueueByTime(h.Topic, q, h.Timestamp, false)
		}
		target = max(target, 0)
		if committed := p.d.Offsets.Query(h.Group, h.Topic, q); !h.IsForce && committed >= 0 && committed < target {
			target = committed // without force, offsets only move back
		}
		p.d.Offsets.Commit(h.Group, h.Topic, q, target)
		body.OffsetTable[codec.MessageQueue{Topic: h.Topic, BrokerName: p.d.BrokerName, QueueID: q}] = target
	}
	encoded := body.Encode()
	p.d.Consumers.Oneway(h.Group, func() *codec.RemotingCommand {
		ext := map[string]string{}
		(&codec.ResetOffsetRequestHeader{Topic: h.Topic, Group: h.Group, Timestamp: h.Timestamp, IsForce: h.IsForce}).Encode(ext)
		return codec.NewRequest(codec.RequestResetConsumerClientOffset, ext, encoded)
	})
	rc.Reply.Body(encoded)
}
