package clients

import (
	"errors"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// Client management processors: HEART_BEAT (34), UNREGISTER_CLIENT (35),
// GET_CONSUMER_LIST_BY_GROUP (38), LOCK_BATCH_MQ (41), UNLOCK_BATCH_MQ (42)
// (PROTOCOL.md §3.7, §4.3–4.5). All run inline: they touch memory only; a retry topic or
// group they create is written to disk by the config flusher.

// processHeartbeat registers the client's producer and consumer groups. For each consumer
// group it finds (or auto-creates) the subscription group and creates %RETRY%<group> with
// the group's retryQueueNums, which is then registered with the name servers. A consumer
// group that autoCreateSubscriptionGroupLimit or autoCreateRetryTopicLimit keeps from being
// created is not registered, and the heartbeat is answered with the refusal (the client logs
// it); the rest of the heartbeat is registered as usual.
func (p *Plane) ProcessHeartbeat(rc *remoting.Request) {
	hb, err := codec.DecodeHeartbeatData(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	if hb.ClientID == "" {
		rc.Reply.Answer(codec.ResponseSystemError, "HeartbeatData: clientID is empty")
		return
	}
	ch := ClientChannelInfo{Conn: rc.Conn, ClientID: hb.ClientID, Language: rc.Cmd.Language, Version: rc.Cmd.Version}
	refusalCode, refusal := codec.ResponseSuccess, ""
	for i := range hb.ConsumerDataSet {
		data := &hb.ConsumerDataSet[i]
		g, err := p.d.Groups.FindOrCreate(data.GroupName)
		if err == nil {
			var sysFlag int32
			if data.UnitMode {
				sysFlag = metadata.TopicSysFlagUnitSub
			}
			retry := metadata.RetryTopic(data.GroupName)
			if _, err := p.d.Topics.CreateInSendMessageBack(retry, g.RetryQueueNums, metadata.PermRead|metadata.PermWrite, sysFlag); err != nil {
				if refusal == "" {
					refusalCode, refusal = codec.ResponseSystemError, metadata.Remark("topic["+retry+"] not created", err)
				}
				continue
			}
		} else if errors.As(err, new(*metadata.LimitError)) {
			// Without the limit the group would exist: refuse instead of registering a member of
			// a group that the broker keeps in memory only.
			if refusal == "" {
				refusalCode, refusal = codec.ResponseSubscriptionGroupNotExist,
					metadata.Remark("subscription group ["+data.GroupName+"] does not exist", err)
			}
			continue
		}
		p.d.Consumers.Register(data.GroupName, ch, data)
	}
	for _, pd := range hb.ProducerDataSet {
		p.d.Producers.Register(pd.GroupName, ch)
	}
	if refusal != "" {
		rc.Reply.Answer(refusalCode, refusal)
		return
	}
	rc.Reply.OK()
}

// processUnregisterClient forgets the client's producer and/or consumer group membership.
func (p *Plane) ProcessUnregisterClient(rc *remoting.Request) {
	var h codec.UnregisterClientRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	if h.ProducerGroup != "" {
		p.d.Producers.Unregister(h.ProducerGroup, h.ClientID, rc.Conn)
	}
	if h.ConsumerGroup != "" {
		p.d.Consumers.Unregister(h.ConsumerGroup, h.ClientID, rc.Conn)
	}
	rc.Reply.OK()
}

// processGetConsumerListByGroup answers {"consumerIdList":[...]} with the group's live
// members, or SYSTEM_ERROR "no consumer for this group, <group>".
func (p *Plane) ProcessGetConsumerListByGroup(rc *remoting.Request) {
	var h codec.GetConsumerListByGroupRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	ids := p.d.Consumers.ConsumerIDs(h.ConsumerGroup)
	if len(ids) == 0 {
		rc.Reply.Answer(codec.ResponseSystemError, "no consumer for this group, "+h.ConsumerGroup)
		return
	}
	body, err := (&codec.ConsumerListBody{ConsumerIDList: ids}).Encode()
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// processLockBatchMQ locks (or renews) queues for an orderly consumer and answers the ones
// it now holds: {"lockOKMQSet":[...]}.
func (p *Plane) ProcessLockBatchMQ(rc *remoting.Request) {
	req, err := codec.DecodeLockBatchRequestBody(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	locked := p.d.Locks.TryLockBatch(req.ConsumerGroup, req.MQSet, req.ClientID)
	body, err := (&codec.LockBatchResponseBody{LockOKMQSet: locked}).Encode()
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// processUnlockBatchMQ releases the queues the client holds.
func (p *Plane) ProcessUnlockBatchMQ(rc *remoting.Request) {
	req, err := codec.DecodeUnlockBatchRequestBody(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	p.d.Locks.UnlockBatch(req.ConsumerGroup, req.MQSet, req.ClientID)
	rc.Reply.OK()
}
