package broker

import (
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// The admin requests relayed to a consumer, answered by the pinned Go client (in its driver
// process, see e2e_client_test.go): GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY and
// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (the client's GET_CONSUMER_STATUS_FROM_CLIENT).
func TestGoClientRelayedAdminRequests(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("end-to-end with the Go client")
	}
	e := newE2EEnv(t, startTestBroker(t, nil), "relay")
	const topic, group = "E2ERelay", "G-relay"
	p := e.producer(t, "PG-relay")
	res := sendSync(t, p, primitive.NewMessage(topic, []byte("relay-1")).WithTag("A"))
	e.waitRoute(t, topic)
	rec := newReceived()
	c := e.pushConsumer(t, group, topic, "*", rec)
	defer func() { _ = c.Shutdown() }()
	testutil.Eventually(t, "the message consumed", func() bool { return rec.distinct() == 1 })
	ids := e.tb.b.consumers.ConsumerIDs(group)
	require.Len(t, ids, 1)
	clientID := ids[0]
	mq := codec.MessageQueue{Topic: topic, BrokerName: "broker-test", QueueID: int32(res.MessageQueue.QueueId)}
	admin := remotingtest.Dial(t, e.tb.BrokerAddr)

	t.Run("GetConsumerRunningInfo", func(t *testing.T) {
		ext := map[string]string{}
		(&codec.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: clientID, JstackEnable: true}).Encode(ext)
		heldOf := func(info *codec.ConsumerRunningInfo) int {
			held := 0
			for q := range info.MQTable {
				if q.Topic == topic {
					held++
				}
			}
			return held
		}
		// The client takes its queues over in the rebalance after the first, so the running info may
		// list fewer than four for a moment: ask until it lists them all (or the deadline fails it).
		var info *codec.ConsumerRunningInfo
		testutil.Eventually(t, "the running info listing the consumer's four queues", func() bool {
			resp := admin.Call(codec.NewRequest(codec.RequestGetConsumerRunningInfo, ext, nil))
			requireResponse(t, resp, codec.ResponseSuccess, "")
			var err error
			info, err = codec.DecodeConsumerRunningInfo(resp.Body)
			require.NoError(t, err)
			return heldOf(info) == 4
		})
		require.Equal(t, "CONSUME_PASSIVELY", info.Properties[codec.PropConsumeType])
		require.NotEmpty(t, info.Properties[codec.PropClientVersion])
		require.Contains(t, info.Properties[codec.PropNamesrvAddr], e.tb.NamesrvAddr)
		subs := map[string]string{}
		for _, s := range info.SubscriptionSet {
			subs[s.Topic] = s.SubString
		}
		require.Equal(t, map[string]string{topic: "*", "%RETRY%" + group: "*"}, subs, "its topic and its retry topic")
		require.Contains(t, info.MQTable, mq, "the consumer holds the message's queue")
		require.Equal(t, 4, heldOf(info), "one consumer holds every queue")
		require.Contains(t, info.StatusTable, topic)
		require.Contains(t, info.Jstack, "goroutine", "jstackEnable: the Go client sends its goroutine dump")

		(&codec.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: "10.9.9.9@nobody"}).Encode(ext)
		requireResponse(t, admin.Call(codec.NewRequest(codec.RequestGetConsumerRunningInfo, ext, nil)),
			codec.ResponseSystemError, "The Consumer <"+group+"> <10.9.9.9@nobody> not online")
	})

	t.Run("ConsumeMessageDirectly", func(t *testing.T) {
		ext := map[string]string{}
		(&codec.ConsumeMessageDirectlyResultRequestHeader{ConsumerGroup: group, ClientID: clientID, MsgID: res.OffsetMsgID}).Encode(ext)
		resp := admin.Call(codec.NewRequest(codec.RequestConsumeMessageDirectly, ext, nil))
		requireResponse(t, resp, codec.ResponseSuccess, "")
		got, err := codec.DecodeConsumeMessageDirectlyResult(resp.Body)
		require.NoError(t, err)
		require.Equal(t, "CR_SUCCESS", got.ConsumeResult)
		require.True(t, got.AutoCommit)
		require.False(t, got.Order)
		counts, _, _ := rec.snapshot()
		require.Equal(t, 2, counts["relay-1"], "the listener got the message once more")
	})

	t.Run("InvokeBrokerToGetConsumerStatus", func(t *testing.T) {
		ext := map[string]string{}
		(&codec.GetConsumerStatusRequestHeader{Topic: topic, Group: group}).Encode(ext)
		var body *codec.GetConsumerStatusBody
		testutil.Eventually(t, "the consumer reports its offset of the message's queue", func() bool {
			resp := admin.Call(codec.NewRequest(codec.RequestInvokeBrokerToGetConsumerStatus, ext, nil))
			requireResponse(t, resp, codec.ResponseSuccess, "")
			var err error
			body, err = codec.DecodeGetConsumerStatusBody(resp.Body)
			require.NoError(t, err)
			return body.ConsumerTable[clientID][mq] == 1
		})
		require.Len(t, body.ConsumerTable, 1)
		require.Empty(t, body.MessageQueueTable)
	})
}
