package broker

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
func (b *Broker) processHeartbeat(rc *remoting.Request) {
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
		if g, ok := b.subscriptions.FindOrCreate(data.GroupName); ok {
			var sysFlag int32
			if data.UnitMode {
				sysFlag = metadata.TopicSysFlagUnitSub
			}
			b.topics.CreateInSendMessageBack(metadata.RetryTopic(data.GroupName), g.RetryQueueNums, metadata.PermRead|metadata.PermWrite, sysFlag)
		}
		b.consumers.Register(data.GroupName, ch, data)
	}
	for _, p := range hb.ProducerDataSet {
		b.producers.Register(p.GroupName, ch)
	}
	rc.Reply.OK()
}

// processUnregisterClient forgets the client's producer and/or consumer group membership.
func (b *Broker) processUnregisterClient(rc *remoting.Request) {
	var h codec.UnregisterClientRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	if h.ProducerGroup != "" {
		b.producers.Unregister(h.ProducerGroup, h.ClientID, rc.Conn)
	}
	if h.ConsumerGroup != "" {
		b.consumers.Unregister(h.ConsumerGroup, h.ClientID, rc.Conn)
	}
	rc.Reply.OK()
}

// processGetConsumerListByGroup answers {"consumerIdList":[...]} with the group's live
// members, or SYSTEM_ERROR "no consumer for this group, <group>".
func (b *Broker) processGetConsumerListByGroup(rc *remoting.Request) {
	var h codec.GetConsumerListByGroupRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	ids := b.consumers.ConsumerIDs(h.ConsumerGroup)
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
func (b *Broker) processLockBatchMQ(rc *remoting.Request) {
	req, err := codec.DecodeLockBatchRequestBody(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	locked := b.ctl.locks.TryLockBatch(req.ConsumerGroup, req.MQSet, req.ClientID)
	body, err := (&codec.LockBatchResponseBody{LockOKMQSet: locked}).Encode()
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// processUnlockBatchMQ releases the queues the client holds.
func (b *Broker) processUnlockBatchMQ(rc *remoting.Request) {
	req, err := codec.DecodeUnlockBatchRequestBody(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	b.ctl.locks.UnlockBatch(req.ConsumerGroup, req.MQSet, req.ClientID)
	rc.Reply.OK()
}
