package broker

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// sendBackCmd is CONSUMER_SEND_MSG_BACK as the Go push consumer sends it.
func sendBackCmd(offset int64, group string, delayLevel int32, maxReconsume *int32) *codec.RemotingCommand {
	h := codec.ConsumerSendMsgBackRequestHeader{Offset: offset, Group: group, DelayLevel: delayLevel,
		OriginMsgID: "ignored", OriginTopic: "ignored"}
	if maxReconsume != nil {
		h.MaxReconsumeTimes = codec.Some(*maxReconsume)
	}
	ext := map[string]string{}
	h.Encode(ext)
	cmd := codec.NewRequest(codec.RequestConsumerSendMsgBack, ext, nil)
	cmd.Version = 317 // the Go client's version: honours maxReconsumeTimes
	return cmd
}

// waitQueue waits until a queue holds n entries.
func waitQueue(t testing.TB, b *Broker, topic string, queueID int32, n int64) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("%s/%d holds %d", topic, queueID, n),
		func() bool { return b.store.GetMaxOffsetInQueue(topic, queueID) == n })
}

func int32p(v int32) *int32 { return &v }

func onlyRecord(t testing.TB, db *dataBroker, topic string, queueID int32) codec.Record {
	t.Helper()
	recs := queueRecords(t, db.b.store, topic, queueID)
	require.Len(t, recs, 1, "%s/%d", topic, queueID)
	return recs[0]
}

func TestSendBackRetriesThroughTheScheduleQueue(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicB", 1, []byte("fails"), props("KEYS", "kb", "UNIQ_KEY", "UB", "TAGS", "t")))
	orig := offsetOf(t, h.MsgID)

	requireResponse(t, c.Call(sendBackCmd(orig, "GB", 0, nil)), codec.ResponseSuccess, "")
	tc, ok := db.b.topics.Get("%RETRY%GB")
	require.True(t, ok, "the retry topic is created on demand")
	require.Equal(t, int32(1), tc.WriteQueueNums)
	require.Equal(t, metadata.PermRead|metadata.PermWrite, tc.Perm)
	// Broker-chosen level: 3 + reconsumeTimes (0) → schedule queue 2.
	r := onlyRecord(t, db, metadata.ScheduleTopic, 2)
	require.Equal(t, "fails", string(r.Body))
	require.Equal(t, int32(1), r.ReconsumeTimes)
	require.Equal(t, int64(1700000000000), r.BornTimestamp)
	require.Equal(t, map[string]string{"KEYS": "kb", "UNIQ_KEY": "UB", "TAGS": "t", "CLUSTER": "TestCluster",
		"RETRY_TOPIC": "TopicB", "ORIGIN_MESSAGE_ID": h.MsgID, "WAIT": "false",
		"DELAY": "3", "REAL_TOPIC": "%RETRY%GB", "REAL_QID": "0"}, codec.DecodeProperties(r.Properties))

	// What the schedule service would deliver to %RETRY%GB, consumed and failed again, now
	// with a requested level.
	cmd := sendV1("%RETRY%GB", 0, []byte("fails"), props("UNIQ_KEY", "UB", "RETRY_TOPIC", "TopicB",
		"ORIGIN_MESSAGE_ID", h.MsgID))
	cmd.ExtFields["reconsumeTimes"] = "1"
	retry := sendOK(t, c, cmd)
	requireResponse(t, c.Call(sendBackCmd(offsetOf(t, retry.MsgID), "GB", 1, nil)), codec.ResponseSuccess, "")
	r = onlyRecord(t, db, metadata.ScheduleTopic, 0)
	p := codec.DecodeProperties(r.Properties)
	require.Equal(t, int32(2), r.ReconsumeTimes)
	require.Equal(t, "TopicB", p["RETRY_TOPIC"], "the original topic, not the retry topic")
	require.Equal(t, h.MsgID, p["ORIGIN_MESSAGE_ID"], "the first message's id is kept")
	require.Equal(t, "1", p["DELAY"])

	// A level past the table is clamped to its last level (18).
	requireResponse(t, c.Call(sendBackCmd(orig, "GB", 99, nil)), codec.ResponseSuccess, "")
	require.Equal(t, "18", codec.DecodeProperties(onlyRecord(t, db, metadata.ScheduleTopic, 17).Properties)["DELAY"])
}

func TestSendBackToDeadLetterQueue(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	cmd := sendV1("%RETRY%GD", 0, []byte("poison"), props("RETRY_TOPIC", "TopicD", "ORIGIN_MESSAGE_ID", "FIRST"))
	cmd.ExtFields["reconsumeTimes"] = "1"
	h := sendOK(t, c, cmd)
	off := offsetOf(t, h.MsgID)

	// The request's maxReconsumeTimes (1) is reached: to %DLQ%GD, no delay.
	requireResponse(t, c.Call(sendBackCmd(off, "GD", 0, int32p(1))), codec.ResponseSuccess, "")
	tc, ok := db.b.topics.Get("%DLQ%GD")
	require.True(t, ok)
	require.Equal(t, metadata.PermRead|metadata.PermWrite, tc.Perm, "readable: operators drain it")
	require.Equal(t, int32(1), tc.ReadQueueNums)
	r := onlyRecord(t, db, "%DLQ%GD", 0)
	require.Equal(t, int32(2), r.ReconsumeTimes)
	p := codec.DecodeProperties(r.Properties)
	require.Equal(t, "TopicD", p["RETRY_TOPIC"])
	require.Equal(t, "FIRST", p["ORIGIN_MESSAGE_ID"])
	require.NotContains(t, p, "DELAY")
	require.NotContains(t, p, "REAL_TOPIC")
	require.Zero(t, db.b.store.GetMaxOffsetInQueue(metadata.ScheduleTopic, 2))

	// delayLevel < 0: straight to the DLQ whatever the count.
	h2 := sendOK(t, c, sendV1("TopicD", 0, []byte("now"), ""))
	requireResponse(t, c.Call(sendBackCmd(offsetOf(t, h2.MsgID), "GD", -1, nil)), codec.ResponseSuccess, "")
	require.Len(t, queueRecords(t, db.b.store, "%DLQ%GD", 0), 2)

	// The group's retryMaxTimes when the request has none.
	g := codec.NewSubscriptionGroupConfig("GE")
	g.RetryMaxTimes = 1
	require.NoError(t, db.b.subscriptions.Update(g))
	requireResponse(t, c.Call(sendBackCmd(off, "GE", 0, nil)), codec.ResponseSuccess, "")
	require.Len(t, queueRecords(t, db.b.store, "%DLQ%GE", 0), 1)
	require.Equal(t, 2.0, scrapeOf(t, db.b.Registry()).value(`ringmq_broker_auto_created_total{kind="dlq_topic"}`),
		"%DLQ%GD and %DLQ%GE created implicitly")
}

func TestSendBackErrors(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) { c.AutoCreateSubscriptionGroup = false }})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicX", 0, []byte("x"), ""))
	off := offsetOf(t, h.MsgID)

	requireResponse(t, c.Call(sendBackCmd(off, "NoSuchGroup", 0, nil)),
		codec.ResponseSubscriptionGroupNotExist, "subscription group not exist, NoSuchGroup")
	g := codec.NewSubscriptionGroupConfig("G0")
	g.RetryQueueNums = 0
	require.NoError(t, db.b.subscriptions.Update(g))
	requireResponse(t, c.Call(sendBackCmd(off, "G0", 0, nil)), codec.ResponseSuccess, "")
	_, ok := db.b.topics.Get("%RETRY%G0")
	require.False(t, ok, "retryQueueNums 0: the message is dropped")

	require.NoError(t, db.b.subscriptions.Update(codec.NewSubscriptionGroupConfig("G1")))
	requireResponse(t, c.Call(sendBackCmd(999999, "G1", 0, nil)), codec.ResponseSystemError,
		"look message by offset failed, 999999")
	requireResponse(t, c.Call(sendBackCmd(off+3, "G1", 0, nil)), codec.ResponseSystemError,
		"look message by offset failed, "+strconv.FormatInt(off+3, 10))
	cmd := sendBackCmd(off, "G1", 0, nil)
	delete(cmd.ExtFields, "offset")
	requireResponse(t, c.Call(cmd), codec.ResponseSystemError, "the custom field <offset> is null")
	require.Zero(t, db.b.store.GetMaxOffsetInQueue(metadata.ScheduleTopic, 2))
	requireResponse(t, c.Call(sendBackCmd(off, "G1", 0, nil)), codec.ResponseSuccess, "")
	require.Equal(t, int64(1), db.b.store.GetMaxOffsetInQueue(metadata.ScheduleTopic, 2))
}

// A record outside the hot part of the CommitLog is read on the query pool.
func TestSendBackColdRecordRunsOnThePool(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: true, mutate: func(c *Config) {
		c.AccessMessageInMemoryMaxRatio = 0 // every record behind the CommitLog's end counts as cold
	}})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicCold", 0, []byte("cold"), ""))
	require.False(t, db.b.send.IsHotOffset(offsetOf(t, h.MsgID)))
	requireResponse(t, c.Call(sendBackCmd(offsetOf(t, h.MsgID), "GC", 2, nil)), codec.ResponseSuccess, "")
	waitQueue(t, db.b, metadata.ScheduleTopic, 1, 1) // the file store dispatches in the background
	require.Equal(t, "cold", string(onlyRecord(t, db, metadata.ScheduleTopic, 1).Body))
	// END_TRANSACTION takes the same path.
	resp := c.Call(sendHalfCmd("TopicCold", 0, "half", "PG", "UH"))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code)
	var sh codec.SendMessageResponseHeader
	require.NoError(t, sh.Decode(resp.ExtFields))
	requireResponse(t, c.Call(endTxCmd("PG", sh.QueueOffset, offsetOf(t, sh.MsgID), "UH",
		codec.SysFlagTransactionCommit, false)), codec.ResponseSuccess, "")
	waitQueue(t, db.b, "TopicCold", 0, 2)
	require.Equal(t, []string{"cold", "half"}, remotingtest.Bodies(queueRecords(t, db.b.store, "TopicCold", 0)))
}
