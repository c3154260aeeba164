package clients

import (
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
// the group's retryQueueNums, which is then registered with the name servers.
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
	for i := range hb.ConsumerDataSet {
		data := &hb.ConsumerDataSet[i]
		if g, ok := p.d.Groups.FindOrCreate(data.GroupName); ok {
			var sysFlag int32
			if data.UnitMode {
				sysFlag = metadata.TopicSysFlagUnitSub
			}
			p.d.Topics.CreateInSendMessageBack(metadata.RetryTopic(data.GroupName), g.RetryQueueNums, metadata.PermRead|metadata.PermWrite, sysFlag)
		}
		p.d.Consumers.Register(data.GroupName, ch, data)
	}
	for _, pd := range hb.ProducerDataSet {
		p.d.Producers.Register(pd.GroupName, ch)
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
