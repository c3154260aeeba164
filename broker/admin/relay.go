package admin

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// Admin requests the broker relays to a consumer's connection (RocketMQ's
// AdminBrokerProcessor.callConsumer and Broker2Client.getConsumeStatus):
//
//	307 GET_CONSUMER_RUNNING_INFO            forwarded as it came to the member clientId of
//	                                         consumerGroup; its answer goes back as it came
//	309 CONSUME_MESSAGE_DIRECTLY             the same, after the broker has read the message
//	                                         msgId names into the body and set brokerName
//	223 INVOKE_BROKER_TO_GET_CONSUMER_STATUS GET_CONSUMER_STATUS_FROM_CLIENT (221) to every
//	                                         member (or the one clientAddr names); the answer
//	                                         is a GetConsumerStatusBody keyed by client id
//
// The handler runs on the admin pool, sends with an asynchronous invoke and returns: the
// pool's worker does not wait. The client's answer (or the call's timeout) completes the
// admin's request from the client connection's event loop or a timer goroutine, through the
// admin's Reply, so it keeps the admin's opaque. What a relay holds is bounded: the calls a
// client connection may have pending (maxPendingCalls), and relayBodyMaxBytes for a client's
// answer (Java has no such limit below its frame limit; a bigger answer is refused).

// Timeouts of a relayed call, RocketMQ's: callClient's invokeSync waits 10 s, getConsumeStatus
// 5 s per client.
const (
	callClientTimeout     = 10 * time.Second
	consumerStatusTimeout = 5 * time.Second
)

// relayBodyMaxBytes bounds the body of a client's answer that the broker relays or decodes.
const relayBodyMaxBytes = 8 << 20

// Client versions below which RocketMQ refuses to relay (MQVersion ordinals).
const (
	versionV3_0_7Snapshot = 28 // V3_0_7_SNAPSHOT: GET_CONSUMER_STATUS_FROM_CLIENT
	versionV3_1_8Snapshot = 62 // V3_1_8_SNAPSHOT: GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY
)

// Caller calls one client over its connection; a netio.Conn satisfies it. cb is called once,
// with the answer (owned by cb) or an error (netio.ErrTimeout after timeout), unless
// InvokeAsync returns an error.
type Caller interface {
	InvokeAsync(cmd *codec.RemotingCommand, timeout time.Duration, cb func(*codec.RemotingCommand, error)) error
}

// Member is one live consumer of a group and its connection.
type Member struct {
	Client
	Conn Caller
}

// clientTimeout is timeout, or Deps.ClientCallTimeout when set.
func (p *Plane) clientTimeout(timeout time.Duration) time.Duration {
	if p.d.ClientCallTimeout > 0 {
		return p.d.ClientCallTimeout
	}
	return timeout
}

// findMember is group's live member clientID.
func (p *Plane) findMember(group, clientID string) (Member, bool) {
	for _, m := range p.d.Consumers.Members(group) {
		if m.ClientID == clientID {
			return m, true
		}
	}
	return Member{}, false
}

// ProcessGetConsumerRunningInfo serves GET_CONSUMER_RUNNING_INFO (307, mqadmin consumerStatus
// and consumerProgress -s true, the Dashboard's client page).
func (p *Plane) ProcessGetConsumerRunningInfo(rc *remoting.Request) {
	var h codec.GetConsumerRunningInfoRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	p.callConsumer(rc.Reply, codec.RequestGetConsumerRunningInfo, maps.Clone(rc.Cmd.ExtFields), rc.Cmd.Body,
		h.ConsumerGroup, h.ClientID)
}

// ProcessConsumeMessageDirectly serves CONSUME_MESSAGE_DIRECTLY (309, mqadmin queryMsgById
// -g -d): the consumer consumes the message msgId names once more, outside its queues, and
// says how it went.
func (p *Plane) ProcessConsumeMessageDirectly(rc *remoting.Request) {
	var h codec.ConsumeMessageDirectlyResultRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	_, offset, err := codec.DecodeOffsetMsgID(h.MsgID)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, fmt.Sprintf("the custom field <msgId> %q is not an offset message id: %v", h.MsgID, err))
		return
	}
	rec, release, err := p.d.Store.LookMessageByOffset(offset)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, fmt.Sprintf("no message found by msgId %s: %v", h.MsgID, err))
		return
	}
	body := slices.Clone(rec)
	release()
	ext := maps.Clone(rc.Cmd.ExtFields)
	ext["brokerName"] = p.d.BrokerName
	p.callConsumer(rc.Reply, codec.RequestConsumeMessageDirectly, ext, body, h.ConsumerGroup, h.ClientID)
}

// callConsumer forwards a request with ext and body to group's member clientID and relays
// its answer to the admin (AdminBrokerProcessor.callConsumer, with its refusals).
func (p *Plane) callConsumer(to remoting.Reply, code codec.RequestCode, ext map[string]string, body []byte, group, clientID string) {
	m, ok := p.findMember(group, clientID)
	if !ok {
		to.Answer(codec.ResponseSystemError, fmt.Sprintf("The Consumer <%s> <%s> not online", group, clientID))
		return
	}
	if m.Version < versionV3_1_8Snapshot {
		to.Answer(codec.ResponseSystemError, fmt.Sprintf("The Consumer <%s> Version <%s> too low to finish, please upgrade it to V3_1_8_SNAPSHOT",
			clientID, codec.MQVersionName(m.Version)))
		return
	}
	failed := func(err error) {
		if errors.Is(err, netio.ErrTimeout) {
			to.Answer(codec.ResponseConsumeMsgTimeout, fmt.Sprintf("consumer <%s> <%s> Timeout: %v", group, clientID, err))
			return
		}
		to.Answer(codec.ResponseSystemError, fmt.Sprintf("invoke consumer <%s> <%s> Exception: %v", group, clientID, err))
	}
	req := codec.NewRequest(code, ext, body)
	err := m.Conn.InvokeAsync(req, p.clientTimeout(callClientTimeout), func(resp *codec.RemotingCommand, err error) {
		if err != nil {
			failed(err)
			return
		}
		if len(resp.Body) > relayBodyMaxBytes {
			failed(fmt.Errorf("its answer's body of %d bytes is over the broker's relay limit of %d bytes", len(resp.Body), relayBodyMaxBytes))
			return
		}
		relayAnswer(to, resp)
	})
	if err != nil {
		failed(err)
	}
}

// relayAnswer writes a client's answer to the admin as it came: code, remark, header fields
// and body (RocketMQ returns the client's response command itself).
func relayAnswer(to remoting.Reply, resp *codec.RemotingCommand) {
	var fields []codec.Field
	for _, k := range slices.Sorted(maps.Keys(resp.ExtFields)) {
		fields = append(fields, codec.Field{Key: k, Str: resp.ExtFields[k]})
	}
	f := to.NewFrame()
	if len(resp.Body) > 0 {
		f.Bodies = append(f.Bodies, resp.Body)
	}
	to.Frame(f, codec.ResponseCode(resp.Code), resp.Remark, fields, f.Bodies)
}

// ProcessInvokeBrokerToGetConsumerStatus serves INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223):
// each member asked (every member, or the one whose client id is clientAddr) answers
// GET_CONSUMER_STATUS_FROM_CLIENT with its offsets of the topic; the answer gathers them by
// client id. A member that fails or does not answer within 5 s is left out, as RocketMQ does;
// a clientAddr that is not a member gives an empty table.
func (p *Plane) ProcessInvokeBrokerToGetConsumerStatus(rc *remoting.Request) {
	var h codec.GetConsumerStatusRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	members := p.d.Consumers.Members(h.Group)
	if len(members) == 0 {
		rc.Reply.Answer(codec.ResponseSystemError, fmt.Sprintf("No Any Consumer online in the consumer group: [%s]", h.Group))
		return
	}
	var asked []Member
	for _, m := range members {
		if m.Version < versionV3_0_7Snapshot {
			rc.Reply.Answer(codec.ResponseSystemError, "the client does not support this feature. version="+codec.MQVersionName(m.Version))
			return
		}
		if h.ClientAddr == "" || h.ClientAddr == m.ClientID {
			asked = append(asked, m)
		}
	}
	g := &statusGather{to: rc.Reply, pending: len(asked), table: map[string]map[codec.MessageQueue]int64{}, p: p}
	if len(asked) == 0 {
		g.finish()
		return
	}
	for _, m := range asked {
		ext := map[string]string{}
		(&codec.GetConsumerStatusRequestHeader{Topic: h.Topic, Group: h.Group}).Encode(ext)
		req := codec.NewRequest(codec.RequestGetConsumerStatusFromClient, ext, nil)
		clientID := m.ClientID
		if err := m.Conn.InvokeAsync(req, p.clientTimeout(consumerStatusTimeout), func(resp *codec.RemotingCommand, err error) {
			g.done(clientID, resp, err)
		}); err != nil {
			g.done(clientID, nil, err)
		}
	}
}

// statusGather collects the members' answers of one INVOKE_BROKER_TO_GET_CONSUMER_STATUS and
// answers when the last one is in. Safe for concurrent use.
type statusGather struct {
	p  *Plane
	to remoting.Reply

	mu      sync.Mutex
	pending int
	table   map[string]map[codec.MessageQueue]int64
}

func (g *statusGather) done(clientID string, resp *codec.RemotingCommand, err error) {
	var offsets map[codec.MessageQueue]int64
	switch {
	case err != nil:
		g.p.d.Logger.Debug("broker: get consumer status failed", "clientId", clientID, "err", err)
	case resp.Code != int32(codec.ResponseSuccess) || len(resp.Body) == 0:
	case len(resp.Body) > relayBodyMaxBytes:
		g.p.d.Logger.Debug("broker: consumer status answer over the relay limit", "clientId", clientID, "bytes", len(resp.Body))
	default:
		body, err := codec.DecodeGetConsumerStatusBody(resp.Body)
		if err != nil {
			g.p.d.Logger.Debug("broker: undecodable consumer status", "clientId", clientID, "err", err)
			break
		}
		offsets = body.MessageQueueTable
	}
	g.mu.Lock()
	if offsets != nil {
		g.table[clientID] = offsets
	}
	g.pending--
	last := g.pending == 0
	g.mu.Unlock()
	if last {
		g.finish()
	}
}

// finish answers with what was gathered; called once, after the last answer.
func (g *statusGather) finish() {
	body := (&codec.GetConsumerStatusBody{MessageQueueTable: map[codec.MessageQueue]int64{}, ConsumerTable: g.table}).Encode()
	g.to.Body(body)
}
