package broker

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
)

// The admin requests relayed to a consumer's connection, over the wire: an admin connection
// asks, fake consumers (peerClient) answer with Java-shaped bodies, and what comes back is
// checked field by field against Java's classes (ConsumerRunningInfo, ConsumeMessageDirectlyResult,
// GetConsumerStatusBody).

// relayTimeout replaces RocketMQ's 10 s / 5 s client-call timeouts, so that a consumer that
// never answers is given up on quickly.
const relayTimeout = 300 * time.Millisecond

// heartbeatConsumer registers clientID as a member of group subscribed to topic.
func (c *peerClient) heartbeatConsumer(clientID, group, topic string) {
	c.t.Helper()
	body, err := (&codec.HeartbeatData{ClientID: clientID,
		ConsumerDataSet: []codec.ConsumerData{*remotingtest.ConsumerData(group, remotingtest.Subscription(topic, 1))}}).Encode()
	require.NoError(c.t, err)
	requireResponse(c.t, c.call(codec.NewRequest(codec.RequestHeartBeat, nil, body)), codec.ResponseSuccess, "")
}

// answerCode answers requests of code with body (SUCCESS), and nothing else.
func answerCode(code codec.RequestCode, body string) func(*codec.RemotingCommand) *codec.RemotingCommand {
	return func(cmd *codec.RemotingCommand) *codec.RemotingCommand {
		if cmd.Code != int32(code) {
			return nil
		}
		resp := codec.NewResponse(cmd, codec.ResponseSuccess, "")
		resp.Body = []byte(body)
		return resp
	}
}

// A ConsumerRunningInfo as a Java 4.9.8 push consumer writes it (fastjson).
const javaRunningInfo = `{"jstack":"","mqTable":{{"brokerName":"broker-test","queueId":0,"topic":"RelayT"}:` +
	`{"cachedMsgCount":2,"cachedMsgMaxOffset":11,"cachedMsgMinOffset":10,"cachedMsgSizeInMiB":0,"commitOffset":10,` +
	`"droped":false,"lastConsumeTimestamp":1700000000300,"lastLockTimestamp":0,"lastPullTimestamp":1700000000200,` +
	`"locked":false,"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,"tryUnlockTimes":0}},` +
	`"properties":{"PROP_CLIENT_VERSION":"V4_9_8","PROP_CONSUMEORDERLY":"false","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY",` +
	`"PROP_CONSUMER_START_TIMESTAMP":"1700000000000","PROP_NAMESERVER_ADDR":"127.0.0.1:9876","PROP_THREADPOOL_CORE_SIZE":"20"},` +
	`"statusTable":{"RelayT":{"consumeFailedMsgs":1,"consumeFailedTPS":0.0,"consumeOKTPS":2.5,"consumeRT":1.25,"pullRT":3.0,"pullTPS":4.0}},` +
	`"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"RelayT"}]}`

func TestRelayGetConsumerRunningInfo(t *testing.T) {
	rb := startRelBrokerDeps(t, nil, nil, Deps{clientCallTimeout: relayTimeout})
	t.Cleanup(func() { require.NoError(t, rb.close()) })
	consumer := dialPeer(t, rb.addr, answerCode(codec.RequestGetConsumerRunningInfo, javaRunningInfo))
	consumer.heartbeatConsumer("10.0.0.5@c1", "RelayCG", "RelayT")
	silent := dialPeer(t, rb.addr, nil)
	silent.heartbeatConsumer("10.0.0.5@c2", "RelayCG", "RelayT")
	admin := remotingtest.Dial(t, rb.addr)

	ext := map[string]string{}
	(&codec.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "RelayCG", ClientID: "10.0.0.5@c1", JstackEnable: true}).Encode(ext)
	resp := admin.Call(codec.NewRequest(codec.RequestGetConsumerRunningInfo, ext, nil))
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, javaRunningInfo, string(resp.Body), "relayed byte for byte")
	info, err := codec.DecodeConsumerRunningInfo(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "CONSUME_PASSIVELY", info.Properties[codec.PropConsumeType])
	require.Equal(t, "V4_9_8", info.Properties[codec.PropClientVersion])
	require.Equal(t, map[codec.MessageQueue]codec.ProcessQueueInfo{{Topic: "RelayT", BrokerName: "broker-test"}: {
		CommitOffset: 10, CachedMsgMinOffset: 10, CachedMsgMaxOffset: 11, CachedMsgCount: 2,
		LastPullTimestamp: 1700000000200, LastConsumeTimestamp: 1700000000300}}, info.MQTable)
	require.Equal(t, map[string]codec.ConsumeStatus{"RelayT": {PullRT: 3, PullTPS: 4, ConsumeRT: 1.25, ConsumeOKTPS: 2.5,
		ConsumeFailedMsgs: 1}}, info.StatusTable)
	require.Len(t, info.SubscriptionSet, 1)
	require.Equal(t, "RelayT", info.SubscriptionSet[0].Topic)

	forwarded := consumer.requests(codec.RequestGetConsumerRunningInfo)
	require.Len(t, forwarded, 1)
	require.Equal(t, ext, forwarded[0].ExtFields, "the admin's header, unchanged")

	// Refusals: a client that is not a member, one that does not answer in time.
	(&codec.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "RelayCG", ClientID: "10.0.0.5@c9"}).Encode(ext)
	requireResponse(t, admin.Call(codec.NewRequest(codec.RequestGetConsumerRunningInfo, ext, nil)),
		codec.ResponseSystemError, "The Consumer <RelayCG> <10.0.0.5@c9> not online")
	(&codec.GetConsumerRunningInfoRequestHeader{ConsumerGroup: "RelayCG", ClientID: "10.0.0.5@c2"}).Encode(ext)
	resp = admin.Call(codec.NewRequest(codec.RequestGetConsumerRunningInfo, ext, nil))
	require.Equal(t, int32(codec.ResponseConsumeMsgTimeout), resp.Code, resp.Remark)
	require.True(t, strings.HasPrefix(resp.Remark, "consumer <RelayCG> <10.0.0.5@c2> Timeout: "), resp.Remark)
	require.Len(t, silent.requests(codec.RequestGetConsumerRunningInfo), 1, "the silent client was asked")
}

func TestRelayConsumeMessageDirectly(t *testing.T) {
	rb := startRelBrokerDeps(t, nil, nil, Deps{clientCallTimeout: relayTimeout})
	t.Cleanup(func() { require.NoError(t, rb.close()) })
	const result = `{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"remark":"","spentTimeMills":3}`
	consumer := dialPeer(t, rb.addr, answerCode(codec.RequestConsumeMessageDirectly, result))
	consumer.heartbeatConsumer("10.0.0.5@c1", "RelayCG", "RelayDirect")
	admin := remotingtest.Dial(t, rb.addr)
	sent := sendOK(t, admin, sendV1("RelayDirect", 0, []byte("consume me again"), props("TAGS", "TagA", "KEYS", "k1")))

	ext := map[string]string{}
	(&codec.ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: "RelayCG", ClientID: "10.0.0.5@c1", MsgID: sent.MsgID}).Encode(ext)
	resp := admin.Call(codec.NewRequest(codec.RequestConsumeMessageDirectly, ext, nil))
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, result, string(resp.Body))
	got, err := codec.DecodeConsumeMessageDirectlyResult(resp.Body)
	require.NoError(t, err)
	require.Equal(t, codec.ConsumeMessageDirectlyResult{AutoCommit: true, ConsumeResult: "CR_SUCCESS", SpentTimeMills: 3}, *got)

	forwarded := consumer.requests(codec.RequestConsumeMessageDirectly)
	require.Len(t, forwarded, 1)
	require.Equal(t, map[string]string{"consumerGroup": "RelayCG", "clientId": "10.0.0.5@c1", "msgId": sent.MsgID,
		"brokerName": "broker-test"}, forwarded[0].ExtFields)
	recs := remotingtest.Records(t, forwarded[0].Body)
	require.Len(t, recs, 1, "the stored record is the body")
	require.Equal(t, "RelayDirect", string(recs[0].Topic))
	require.Equal(t, "consume me again", string(recs[0].Body))
	require.Equal(t, offsetOf(t, sent.MsgID), recs[0].PhysicalOffset)
	require.Equal(t, "TagA", codec.DecodeProperties(recs[0].Properties)["TAGS"])

	(&codec.ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: "RelayCG", ClientID: "10.0.0.5@c7", MsgID: sent.MsgID}).Encode(ext)
	requireResponse(t, admin.Call(codec.NewRequest(codec.RequestConsumeMessageDirectly, ext, nil)),
		codec.ResponseSystemError, "The Consumer <RelayCG> <10.0.0.5@c7> not online")
}

func TestRelayInvokeBrokerToGetConsumerStatus(t *testing.T) {
	rb := startRelBrokerDeps(t, nil, nil, Deps{clientCallTimeout: relayTimeout})
	t.Cleanup(func() { require.NoError(t, rb.close()) })
	mq := func(q string) string { return `{"brokerName":"broker-test","queueId":` + q + `,"topic":"RelayS"}` }
	c1 := dialPeer(t, rb.addr, answerCode(codec.RequestGetConsumerStatusFromClient, `{"messageQueueTable":{`+mq("0")+`:5}}`))
	c1.heartbeatConsumer("10.0.0.5@c1", "RelayCG", "RelayS")
	c2 := dialPeer(t, rb.addr, answerCode(codec.RequestGetConsumerStatusFromClient, `{"messageQueueTable":{`+mq("1")+`:7,`+mq("2")+`:0}}`))
	c2.heartbeatConsumer("10.0.0.5@c2", "RelayCG", "RelayS")
	silent := dialPeer(t, rb.addr, nil)
	silent.heartbeatConsumer("10.0.0.5@c3", "RelayCG", "RelayS")
	admin := remotingtest.Dial(t, rb.addr)

	ext := map[string]string{}
	(&codec.GetConsumerStatusRequestHeader{Topic: "RelayS", Group: "RelayCG"}).Encode(ext)
	resp := admin.Call(codec.NewRequest(codec.RequestInvokeBrokerToGetConsumerStatus, ext, nil))
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, `{"consumerTable":{"10.0.0.5@c1":{`+mq("0")+`:5},"10.0.0.5@c2":{`+mq("1")+`:7,`+mq("2")+`:0}},`+
		`"messageQueueTable":{}}`, string(resp.Body), "the silent member is left out")
	body, err := codec.DecodeGetConsumerStatusBody(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[string]map[codec.MessageQueue]int64{
		"10.0.0.5@c1": {{Topic: "RelayS", BrokerName: "broker-test", QueueID: 0}: 5},
		"10.0.0.5@c2": {{Topic: "RelayS", BrokerName: "broker-test", QueueID: 1}: 7, {Topic: "RelayS", BrokerName: "broker-test", QueueID: 2}: 0},
	}, body.ConsumerTable)
	for _, c := range []*peerClient{c1, c2, silent} {
		asked := c.requests(codec.RequestGetConsumerStatusFromClient)
		require.Len(t, asked, 1)
		require.Equal(t, map[string]string{"topic": "RelayS", "group": "RelayCG"}, asked[0].ExtFields)
	}

	// One member by its client id.
	(&codec.GetConsumerStatusRequestHeader{Topic: "RelayS", Group: "RelayCG", ClientAddr: "10.0.0.5@c2"}).Encode(ext)
	resp = admin.Call(codec.NewRequest(codec.RequestInvokeBrokerToGetConsumerStatus, ext, nil))
	require.Equal(t, `{"consumerTable":{"10.0.0.5@c2":{`+mq("1")+`:7,`+mq("2")+`:0}},"messageQueueTable":{}}`, string(resp.Body))
	require.Len(t, c1.requests(codec.RequestGetConsumerStatusFromClient), 1, "c1 not asked again")

	ext = map[string]string{}
	(&codec.GetConsumerStatusRequestHeader{Topic: "RelayS", Group: "NoSuchGroup"}).Encode(ext)
	requireResponse(t, admin.Call(codec.NewRequest(codec.RequestInvokeBrokerToGetConsumerStatus, ext, nil)),
		codec.ResponseSystemError, "No Any Consumer online in the consumer group: [NoSuchGroup]")
}
