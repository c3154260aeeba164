package codec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A ConsumerRunningInfo as a Java 4.9.8 push consumer writes it (fastjson: keys sorted, the
// queue object as the mqTable key, Properties values as strings).
const runningInfoFastjson = `{"jstack":"\"main\" RUNNABLE","mqTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:` +
	`{"cachedMsgCount":3,"cachedMsgMaxOffset":12,"cachedMsgMinOffset":10,"cachedMsgSizeInMiB":1,"commitOffset":9,` +
	`"droped":true,"lastConsumeTimestamp":1700000000300,"lastLockTimestamp":1700000000100,"lastPullTimestamp":1700000000200,` +
	`"locked":true,"transactionMsgCount":2,"transactionMsgMaxOffset":8,"transactionMsgMinOffset":7,"tryUnlockTimes":4}},` +
	`"properties":{"PROP_CONSUMEORDERLY":"false","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY","PROP_CONSUMER_START_TIMESTAMP":"1700000000000",` +
	`"PROP_THREADPOOL_CORE_SIZE":20,"consumerGroup":"G"},` +
	`"statusTable":{"T":{"consumeFailedMsgs":5,"consumeFailedTPS":0.5,"consumeOKTPS":10.25,"consumeRT":3.5,"pullRT":1.5,"pullTPS":20.0}},` +
	`"subscriptionSet":[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA",` +
	`"subVersion":1700000000000,"tagsSet":["TagA"],"topic":"T"}]}`

func TestDecodeConsumerRunningInfoJavaFields(t *testing.T) {
	info, err := DecodeConsumerRunningInfo([]byte(runningInfoFastjson))
	require.NoError(t, err)
	require.Equal(t, map[string]string{PropConsumeOrderly: "false", PropConsumeType: "CONSUME_PASSIVELY",
		PropConsumerStartTimestamp: "1700000000000", PropThreadPoolCoreSize: "20", "consumerGroup": "G"}, info.Properties)
	require.Equal(t, map[MessageQueue]ProcessQueueInfo{{Topic: "T", BrokerName: "broker-a", QueueID: 1}: {
		CommitOffset: 9, CachedMsgMinOffset: 10, CachedMsgMaxOffset: 12, CachedMsgCount: 3, CachedMsgSizeInMiB: 1,
		TransactionMsgMinOffset: 7, TransactionMsgMaxOffset: 8, TransactionMsgCount: 2, Locked: true, TryUnlockTimes: 4,
		LastLockTimestamp: 1700000000100, Droped: true, LastPullTimestamp: 1700000000200, LastConsumeTimestamp: 1700000000300,
	}}, info.MQTable)
	require.Equal(t, map[string]ConsumeStatus{"T": {PullRT: 1.5, PullTPS: 20, ConsumeRT: 3.5, ConsumeOKTPS: 10.25,
		ConsumeFailedTPS: 0.5, ConsumeFailedMsgs: 5}}, info.StatusTable)
	require.Equal(t, []SubscriptionData{{CodeSet: TagCodeSet{2598919}, ExpressionType: "TAG", SubString: "TagA",
		SubVersion: 1700000000000, TagsSet: []string{"TagA"}, Topic: "T"}}, info.SubscriptionSet)
	require.Equal(t, `"main" RUNNABLE`, info.Jstack)
}

// The Go client's form: "dropped", a space before the closing brace, an empty jstack.
func TestDecodeConsumerRunningInfoGoClient(t *testing.T) {
	body := `{"properties":{"PROP_CONSUME_TYPE":"CONSUME_PASSIVELY"},"statusTable":{},"subscriptionSet":[],` +
		`"mqTable":{{"topic":"T","brokerName":"b","queueId":0}:{"commitOffset":4,"dropped":true}}, "jstack":"" }`
	info, err := DecodeConsumerRunningInfo([]byte(body))
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]ProcessQueueInfo{{Topic: "T", BrokerName: "b"}: {CommitOffset: 4, Droped: true}}, info.MQTable)
	require.Empty(t, info.StatusTable)
	require.Empty(t, info.Jstack)

	// With jstackEnable the Go client writes its goroutine dump unescaped.
	info, err = DecodeConsumerRunningInfo([]byte("{\"properties\":{},\"mqTable\":{}, \"jstack\":\"goroutine 1 [running]:\n\tmain.main()\r\x01\" }"))
	require.NoError(t, err)
	require.Equal(t, "goroutine 1 [running]:\n\tmain.main()\r\x01", info.Jstack)

	_, err = DecodeConsumerRunningInfo([]byte(`{"mqTable":{"x":{}}}`))
	require.ErrorIs(t, err, ErrBodyJSON)
	require.ErrorContains(t, err, `field "mqTable"`)
}

func TestDecodeConsumeMessageDirectlyResult(t *testing.T) {
	// Java: the CMResult name; fields sorted.
	r, err := DecodeConsumeMessageDirectlyResult([]byte(
		`{"autoCommit":true,"consumeResult":"CR_LATER","order":false,"remark":"r","spentTimeMills":12}`))
	require.NoError(t, err)
	require.Equal(t, ConsumeMessageDirectlyResult{AutoCommit: true, ConsumeResult: "CR_LATER", Remark: "r", SpentTimeMills: 12}, *r)
	// Go client: the ordinal.
	r, err = DecodeConsumeMessageDirectlyResult([]byte(
		`{"order":true,"autoCommit":false,"consumeResult":0,"remark":"","spentTimeMills":3}`))
	require.NoError(t, err)
	require.Equal(t, ConsumeMessageDirectlyResult{Order: true, ConsumeResult: "CR_SUCCESS", SpentTimeMills: 3}, *r)
	_, err = DecodeConsumeMessageDirectlyResult([]byte(`{"consumeResult":9}`))
	require.ErrorIs(t, err, ErrBodyJSON)
	require.ErrorContains(t, err, "consumeResult")
}

func TestGetConsumerStatusBodyRoundTrip(t *testing.T) {
	b := GetConsumerStatusBody{ConsumerTable: map[string]map[MessageQueue]int64{
		"10.0.0.2@2": {{Topic: "T", BrokerName: "b", QueueID: 1}: 7, {Topic: "T", BrokerName: "b", QueueID: 0}: 5},
		"10.0.0.1@1": {},
	}}
	enc := b.Encode()
	require.Equal(t, `{"consumerTable":{"10.0.0.1@1":{},"10.0.0.2@2":{{"brokerName":"b","queueId":0,"topic":"T"}:5,`+
		`{"brokerName":"b","queueId":1,"topic":"T"}:7}},"messageQueueTable":{}}`, string(enc))
	got, err := DecodeGetConsumerStatusBody(enc)
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]int64{}, got.MessageQueueTable)
	require.Equal(t, b.ConsumerTable, got.ConsumerTable)

	// A Go client's answer to GET_CONSUMER_STATUS_FROM_CLIENT.
	got, err = DecodeGetConsumerStatusBody([]byte(`{"messageQueueTable":{{"topic":"T","brokerName":"b","queueId":2}:9}}`))
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]int64{{Topic: "T", BrokerName: "b", QueueID: 2}: 9}, got.MessageQueueTable)
	require.Empty(t, got.ConsumerTable)
}

func FuzzBodyConsumer(f *testing.F) {
	for _, seed := range []string{
		runningInfoFastjson, `{"consumerTable":{"a":{{"queueId":1}:2}},"messageQueueTable":{}}`,
		`{"consumeResult":"CR_SUCCESS"}`, `{"consumeResult":1}`, `{"mqTable":{{"queueId":1}:{"dropped":true}}}`,
		`{"properties":{"a":{"b":1}}}`, `{`, `{{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if b, err := DecodeGetConsumerStatusBody(body); err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
		} else {
			again, err := DecodeGetConsumerStatusBody(b.Encode())
			require.NoError(t, err)
			require.Equal(t, len(b.ConsumerTable), len(again.ConsumerTable))
			require.Equal(t, b.MessageQueueTable, again.MessageQueueTable)
		}
		if info, err := DecodeConsumerRunningInfo(body); err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
		} else {
			require.NotNil(t, info.MQTable)
			require.NotNil(t, info.Properties)
		}
		if _, err := DecodeConsumeMessageDirectlyResult(body); err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
		}
	})
}
