package admin

import (
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// The relayed requests against fake client connections (the wire tests are broker's
// relay_test.go); each fake answers at once, on the caller's goroutine.

func (c fakeConsumers) Members(group string) []Member {
	var out []Member
	for _, m := range c[group].Members {
		out = append(out, Member{Client: m})
	}
	return out
}

// relayConsumers is a group "G" whose members answer with their callers.
type relayConsumers struct {
	fakeConsumers
	members []Member
}

func (c relayConsumers) Members(group string) []Member {
	if group != "G" {
		return nil
	}
	return c.members
}

// fakeCaller records what it was sent and answers with answer.
type fakeCaller struct {
	sent    []*codec.RemotingCommand
	timeout []time.Duration
	answer  func(*codec.RemotingCommand) (*codec.RemotingCommand, error)
	refuse  error // InvokeAsync's own error
}

func (f *fakeCaller) InvokeAsync(cmd *codec.RemotingCommand, timeout time.Duration, cb func(*codec.RemotingCommand, error)) error {
	if f.refuse != nil {
		return f.refuse
	}
	f.sent = append(f.sent, cmd)
	f.timeout = append(f.timeout, timeout)
	cb(f.answer(cmd))
	return nil
}

func answerWith(code codec.ResponseCode, remark string, body []byte, ext map[string]string) func(*codec.RemotingCommand) (*codec.RemotingCommand, error) {
	return func(*codec.RemotingCommand) (*codec.RemotingCommand, error) {
		return &codec.RemotingCommand{Code: int32(code), Remark: remark, Body: body, ExtFields: ext, Flag: codec.FlagResponse}, nil
	}
}

func relayPlane(store Store, members ...Member) *Plane {
	return New(Deps{Store: store, Consumers: relayConsumers{members: members}, BrokerName: "broker-a"})
}

func TestGetConsumerRunningInfoRelaysTheClientsAnswer(t *testing.T) {
	c := &fakeCaller{answer: answerWith(codec.ResponseSuccess, "", []byte(`{"jstack":"x"}`), map[string]string{"k": "v"})}
	p := relayPlane(fakeStore{}, Member{Client: Client{ClientID: "c1", Version: 409}, Conn: c})
	ext := map[string]string{"consumerGroup": "G", "clientId": "c1", "jstackEnable": "true"}
	resp := call(t, p.ProcessGetConsumerRunningInfo, ext, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, `{"jstack":"x"}`, string(resp.Body))
	require.Equal(t, map[string]string{"k": "v"}, resp.ExtFields)
	require.Len(t, c.sent, 1)
	require.Equal(t, int32(codec.RequestGetConsumerRunningInfo), c.sent[0].Code)
	require.Equal(t, ext, c.sent[0].ExtFields, "forwarded as it came")
	require.Equal(t, []time.Duration{10 * time.Second}, c.timeout, "RocketMQ's callClient timeout")

	// The client's refusal goes back as it came.
	c.answer = answerWith(codec.ResponseSystemError, "Can't find specified client instance of: c1", nil, nil)
	requireAnswer(t, call(t, p.ProcessGetConsumerRunningInfo, ext, nil), codec.ResponseSystemError,
		"Can't find specified client instance of: c1")
}

func TestRelayRefusals(t *testing.T) {
	ext := map[string]string{"consumerGroup": "G", "clientId": "c1"}
	timeout := &fakeCaller{answer: func(*codec.RemotingCommand) (*codec.RemotingCommand, error) {
		return nil, fmt.Errorf("%w: request code 307 opaque 1 to 10.0.0.9:1 after 10s", netio.ErrTimeout)
	}}
	p := relayPlane(fakeStore{}, Member{Client: Client{ClientID: "c1", Version: 409}, Conn: timeout})
	requireAnswer(t, call(t, p.ProcessGetConsumerRunningInfo, ext, nil), codec.ResponseConsumeMsgTimeout,
		"consumer <G> <c1> Timeout: netio: call timed out: request code 307 opaque 1 to 10.0.0.9:1 after 10s")

	requireAnswer(t, call(t, p.ProcessGetConsumerRunningInfo, map[string]string{"consumerGroup": "G", "clientId": "c2"}, nil),
		codec.ResponseSystemError, "The Consumer <G> <c2> not online")
	requireAnswer(t, call(t, p.ProcessGetConsumerRunningInfo, map[string]string{"consumerGroup": "Nope", "clientId": "c1"}, nil),
		codec.ResponseSystemError, "The Consumer <Nope> <c1> not online")
	requireAnswer(t, call(t, p.ProcessGetConsumerRunningInfo, map[string]string{"consumerGroup": "G"}, nil),
		codec.ResponseSystemError, "the custom field <clientId> is null")

	old := relayPlane(fakeStore{}, Member{Client: Client{ClientID: "c1", Version: 61}, Conn: &fakeCaller{}})
	requireAnswer(t, call(t, old.ProcessGetConsumerRunningInfo, ext, nil), codec.ResponseSystemError,
		"The Consumer <c1> Version <V3(61)> too low to finish, please upgrade it to V3_1_8_SNAPSHOT")

	closed := relayPlane(fakeStore{}, Member{Client: Client{ClientID: "c1", Version: 409},
		Conn: &fakeCaller{refuse: errors.New("netio: connection closed")}})
	requireAnswer(t, call(t, closed.ProcessGetConsumerRunningInfo, ext, nil), codec.ResponseSystemError,
		"invoke consumer <G> <c1> Exception: netio: connection closed")

	big := relayPlane(fakeStore{}, Member{Client: Client{ClientID: "c1", Version: 409},
		Conn: &fakeCaller{answer: answerWith(codec.ResponseSuccess, "", make([]byte, relayBodyMaxBytes+1), nil)}})
	requireAnswer(t, call(t, big.ProcessGetConsumerRunningInfo, ext, nil), codec.ResponseSystemError,
		fmt.Sprintf("invoke consumer <G> <c1> Exception: its answer's body of %d bytes is over the broker's relay limit of %d bytes",
			relayBodyMaxBytes+1, relayBodyMaxBytes))
}

// recordStore serves one record at one CommitLog offset.
type recordStore struct {
	fakeStore
	offset int64
	rec    []byte
}

func (s recordStore) LookMessageByOffset(off int64) ([]byte, func(), error) {
	if off != s.offset {
		return nil, nil, fmt.Errorf("%w: no record at CommitLog offset %d", store.ErrNotFound, off)
	}
	return s.rec, func() {}, nil
}

func TestConsumeMessageDirectlyForwardsTheStoredRecord(t *testing.T) {
	rec := []byte("the stored record bytes")
	c := &fakeCaller{answer: answerWith(codec.ResponseSuccess, "",
		[]byte(`{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"spentTimeMills":2}`), nil)}
	p := relayPlane(recordStore{offset: 4096, rec: rec}, Member{Client: Client{ClientID: "c1", Version: 409}, Conn: c})
	host := netip.MustParseAddrPort("10.0.0.7:10911")
	msgID := codec.OffsetMsgID(host, 4096)
	resp := call(t, p.ProcessConsumeMessageDirectly, map[string]string{"consumerGroup": "G", "clientId": "c1", "msgId": msgID}, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, `{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"spentTimeMills":2}`, string(resp.Body))
	require.Len(t, c.sent, 1)
	require.Equal(t, int32(codec.RequestConsumeMessageDirectly), c.sent[0].Code)
	require.Equal(t, map[string]string{"consumerGroup": "G", "clientId": "c1", "msgId": msgID, "brokerName": "broker-a"},
		c.sent[0].ExtFields)
	require.Equal(t, rec, c.sent[0].Body)

	requireAnswer(t, call(t, p.ProcessConsumeMessageDirectly, map[string]string{"consumerGroup": "G", "clientId": "c1",
		"msgId": codec.OffsetMsgID(host, 8192)}, nil), codec.ResponseSystemError,
		"no message found by msgId "+codec.OffsetMsgID(host, 8192)+": store: not found: no record at CommitLog offset 8192")
	resp = call(t, p.ProcessConsumeMessageDirectly, map[string]string{"consumerGroup": "G", "clientId": "c1", "msgId": "XYZ"}, nil)
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Contains(t, resp.Remark, `the custom field <msgId> "XYZ" is not an offset message id`)
}

func TestInvokeBrokerToGetConsumerStatusGathersByClientID(t *testing.T) {
	mq := func(q int32) string { return fmt.Sprintf(`{"brokerName":"broker-a","queueId":%d,"topic":"T"}`, q) }
	c1 := &fakeCaller{answer: answerWith(codec.ResponseSuccess, "", []byte(`{"messageQueueTable":{`+mq(0)+`:5}}`), nil)}
	c2 := &fakeCaller{answer: answerWith(codec.ResponseSuccess, "", []byte(`{"messageQueueTable":{`+mq(1)+`:7}}`), nil)}
	silent := &fakeCaller{answer: func(*codec.RemotingCommand) (*codec.RemotingCommand, error) {
		return nil, netio.ErrTimeout
	}}
	p := relayPlane(fakeStore{}, Member{Client: Client{ClientID: "c1", Version: 409}, Conn: c1},
		Member{Client: Client{ClientID: "c2", Version: 409}, Conn: c2},
		Member{Client: Client{ClientID: "c3", Version: 409}, Conn: silent})

	resp := call(t, p.ProcessInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "G"}, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, `{"consumerTable":{"c1":{`+mq(0)+`:5},"c2":{`+mq(1)+`:7}},"messageQueueTable":{}}`, string(resp.Body))
	require.Len(t, c1.sent, 1)
	require.Equal(t, int32(codec.RequestGetConsumerStatusFromClient), c1.sent[0].Code)
	require.Equal(t, map[string]string{"topic": "T", "group": "G"}, c1.sent[0].ExtFields)
	require.Equal(t, []time.Duration{5 * time.Second}, c1.timeout, "RocketMQ's getConsumeStatus timeout")

	// One client by its id; an unknown one gives an empty table.
	resp = call(t, p.ProcessInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "G", "clientAddr": "c2"}, nil)
	require.Equal(t, `{"consumerTable":{"c2":{`+mq(1)+`:7}},"messageQueueTable":{}}`, string(resp.Body))
	require.Len(t, c1.sent, 1, "c1 not asked")
	resp = call(t, p.ProcessInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "G", "clientAddr": "c9"}, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, `{"consumerTable":{},"messageQueueTable":{}}`, string(resp.Body))

	requireAnswer(t, call(t, p.ProcessInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "Nope"}, nil),
		codec.ResponseSystemError, "No Any Consumer online in the consumer group: [Nope]")
	old := relayPlane(fakeStore{}, Member{Client: Client{ClientID: "c1", Version: 27}, Conn: c1})
	requireAnswer(t, call(t, old.ProcessInvokeBrokerToGetConsumerStatus, map[string]string{"topic": "T", "group": "G"}, nil),
		codec.ResponseSystemError, "the client does not support this feature. version=V3(27)")
}
