package sendplane

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Request-reply: SEND_REPLY_MESSAGE (324, full header keys) and SEND_REPLY_MESSAGE_V2 (325,
// letter keys), answered after PUSH_REPLY_MESSAGE_TO_CLIENT (326) reached the requester
// (PROTOCOL.md §3.7, RocketMQ's ReplyMessageProcessor).
//
// A requester sends an ordinary message with CORRELATION_ID, REPLY_TO_CLIENT (its client id)
// and TTL (seconds; only the requester's own timeout uses it). The broker stamps CLUSTER on
// it (send.go); the consumer that handles it sends the reply to <cluster>_REPLY_TOPIC (a
// built-in topic, 1 queue) with MSG_TYPE=reply and the same CORRELATION_ID and
// REPLY_TO_CLIENT, as SEND_REPLY_MESSAGE. The broker then, on the event loop:
//
//  1. runs the send checks (send.go checkSend) and picks a queue when the header says < 0;
//  2. refuses it with MESSAGE_ILLEGAL when its properties are malformed (as sends do, send.go);
//  3. stores the reply as sent — properties unchanged but for pairs with an empty value
//     (dropped, as for sends), no UNIQ_KEY or CLUSTER added — when it
//     has a body (the Go client's consumer.CreateReplyMessage sends none, and the Java broker
//     then fails to store it but still pushes it);
//  4. finds the connection of the producer whose heartbeat gave that client id and pushes the
//     reply to it with PUSH_REPLY_MESSAGE_TO_CLIENT: the send header's fields plus bornHost,
//     storeHost and storeTimestamp, properties + PUSH_REPLY_TIME, the body as sent;
//  5. answers the replier when the requester has answered the push (or after
//     pushReplyTimeout): SUCCESS with msgId/queueId/queueOffset of the stored reply (msgId
//     "0" when it was not stored), or SYSTEM_ERROR naming why the push failed.
//
// The push is an asynchronous invoke: nothing waits on the event loop. The reply's store is
// not waited for under SYNC_FLUSH (a reply is useful only to a requester still waiting).

// pushReplyTimeout bounds the wait for the requester's answer to a push.
const pushReplyTimeout = 3 * time.Second

// propertyPushReplyTime is MessageConst.PROPERTY_PUSH_REPLY_TIME.
const propertyPushReplyTime = "PUSH_REPLY_TIME"

// ProcessSendReplyMessage serves 324 and 325.
func (p *Plane) ProcessSendReplyMessage(rc *remoting.Request) {
	to := rc.Reply
	region := [...]codec.Field{codec.StrField("MSG_REGION", defaultRegionID), codec.StrField("TRACE_ON", traceOnText)}
	var h codec.SendMessageRequestHeader
	var err error
	if rc.Cmd.Code == int32(codec.RequestSendReplyMessageV2) {
		err = h.DecodeV2(rc.Cmd.ExtFields)
	} else {
		err = h.Decode(rc.Cmd.ExtFields)
	}
	if err != nil {
		to.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	tc, code, remark := p.checkSend(rc, &h)
	if code != codec.ResponseSuccess {
		to.Answer(code, remark, region[:]...)
		return
	}
	queueID := h.QueueID
	if queueID < 0 {
		if tc.WriteQueueNums <= 0 {
			to.Answer(codec.ResponseNoPermission, "the topic["+tc.TopicName+"] has no write queue", region[:]...)
			return
		}
		queueID = rand.Int32N(tc.WriteQueueNums)
	}
	body := rc.Cmd.Body
	if len(body) > p.set.MaxMessageSize || len(h.Properties) > propertiesBytesLimit {
		to.Answer(codec.ResponseMessageIllegal, p.messageIllegalRemark(), region[:]...)
		return
	}
	// Checked as for sends (sendplane.ClientProperties), before they are stored or pushed.
	props, err := ClientProperties(nil, stringBytes(h.Properties))
	if err != nil {
		to.Answer(codec.ResponseMessageIllegal, malformedPropertiesRemark("properties", err), region[:]...)
		return
	}
	born := bornHost(rc)
	sysFlag := h.SysFlag & sendSysFlagClientMask
	if tc.TopicFilterType == codec.TopicFilterMultiTag {
		sysFlag |= codec.SysFlagMultiTags
	}

	// Store.
	var stored store.PutResult
	storedOK := false
	if len(body) > 0 {
		msg := codec.Message{
			Topic:          h.Topic,
			QueueID:        queueID,
			Flag:           h.Flag,
			SysFlag:        sysFlag,
			BornTimestamp:  h.BornTimestamp,
			BornHost:       born,
			StoreHost:      p.storeHost,
			ReconsumeTimes: h.ReconsumeTimes,
			Body:           body,
			Properties:     props,
		}
		res, err := p.store.PutMessage(&msg)
		if c, _ := p.putOutcome(res, err); c == codec.ResponseSuccess {
			stored, storedOK = res, true
		} else {
			p.logger.Debug("broker: reply message not stored", "topic", h.Topic, "err", err)
		}
	}
	msgID := "0"
	var queueOffset int64
	if storedOK {
		msgID = codec.OffsetMsgID(p.storeHost, stored.WroteOffset)
		queueOffset = stored.QueueOffset
	}
	fields := [...]codec.Field{region[0], region[1], codec.StrField("msgId", msgID), codec.NumField("queueId", int64(queueID)),
		codec.NumField("queueOffset", queueOffset)}
	answer := func(code codec.ResponseCode, remark string) { to.Answer(code, remark, fields[:]...) }

	// Push to the requester.
	sender, ok := codec.LookupProperty(props, codec.PropertyReplyToClient)
	if !ok || len(sender) == 0 {
		answer(codec.ResponseSystemError, "reply message properties["+codec.PropertyReplyToClient+"] is null")
		return
	}
	senderID := string(sender)
	conn, ok := p.producers.FindConn(senderID)
	if !ok {
		answer(codec.ResponseSystemError, "push reply message fail, channel of <"+senderID+"> not found.")
		return
	}
	now := p.clock().UnixMilli()
	pushProps := append(make([]byte, 0, len(props)+40), props...)
	if len(pushProps) > 0 && pushProps[len(pushProps)-1] != codec.PropertySeparator {
		pushProps = append(pushProps, codec.PropertySeparator)
	}
	pushProps = appendPropertyInt(pushProps, propertyPushReplyTime, now)
	ext := map[string]string{
		"producerGroup":         h.ProducerGroup,
		"topic":                 h.Topic,
		"defaultTopic":          h.DefaultTopic,
		"defaultTopicQueueNums": strconv.Itoa(int(h.DefaultTopicQueueNums)),
		"queueId":               strconv.Itoa(int(h.QueueID)),
		"sysFlag":               strconv.Itoa(int(h.SysFlag)),
		"bornTimestamp":         strconv.FormatInt(h.BornTimestamp, 10),
		"flag":                  strconv.Itoa(int(h.Flag)),
		"properties":            string(pushProps),
		"reconsumeTimes":        strconv.Itoa(int(h.ReconsumeTimes)),
		"unitMode":              strconv.FormatBool(h.UnitMode),
		"bornHost":              born.String(),
		"storeHost":             p.set.BrokerAddr,
		"storeTimestamp":        strconv.FormatInt(now, 10),
	}
	failed := "push reply message to " + senderID + "fail."
	push := codec.NewRequest(codec.RequestPushReplyMessageToClient, ext, body)
	if err := conn.InvokeAsync(push, pushReplyTimeout, func(resp *codec.RemotingCommand, err error) {
		if err != nil || resp.Code != int32(codec.ResponseSuccess) {
			p.logger.Debug("broker: push reply message failed", "clientId", senderID, "err", err)
			answer(codec.ResponseSystemError, failed)
			return
		}
		answer(codec.ResponseSuccess, "")
	}); err != nil {
		p.logger.Debug("broker: push reply message failed", "clientId", senderID, "err", err)
		answer(codec.ResponseSystemError, failed)
	}
}
