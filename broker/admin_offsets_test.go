package broker

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

// CLONE_GROUP_OFFSET (314) over the wire, as mqadmin cloneGroupOffset sends it: the named topic,
// or every topic of the source group (those a live source group subscribes, unless offline).
func TestAdminCloneGroupOffset(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("TA", 2), nil)
	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("TB", 1), nil)
	b.offsets.Commit("Src", "TA", 0, 5)
	b.offsets.Commit("Src", "TA", 1, 7)
	b.offsets.Commit("Src", "TB", 0, 3)
	b.offsets.Commit("Src", "Gone", 0, 1) // no such topic: skipped
	b.offsets.Commit("Dest", "TA", 1, 99)
	b.offsets.Commit("Dest", "TA", 2, 42) // replaced whole, as RocketMQ's cloneOffset does

	resp := c.adminOK(codec.RequestCloneGroupOffset, map[string]string{"srcGroup": "Src", "destGroup": "Dest",
		"topic": "TA", "offline": "false"}, nil)
	require.Empty(t, resp.Body)
	require.Equal(t, map[int32]int64{0: 5, 1: 7}, b.offsets.QueryAll("Dest", "TA"))
	require.Nil(t, b.offsets.QueryAll("Dest", "TB"))

	// A live source group subscribing only TA: without a topic, only TA is cloned, unless offline.
	requireResponse(t, c.heartbeat("10.0.0.9@1", []codec.ConsumerData{*remotingtest.ConsumerData("Src",
		remotingtest.Subscription("TA", 1))}), codec.ResponseSuccess, "")
	c.adminOK(codec.RequestCloneGroupOffset, map[string]string{"srcGroup": "Src", "destGroup": "Online"}, nil)
	require.Equal(t, []string{"TA"}, b.offsets.TopicsByGroup("Online"))
	c.adminOK(codec.RequestCloneGroupOffset, map[string]string{"srcGroup": "Src", "destGroup": "Offline", "offline": "true"}, nil)
	require.Equal(t, []string{"TA", "TB"}, b.offsets.TopicsByGroup("Offline"))
	require.Equal(t, map[int32]int64{0: 3}, b.offsets.QueryAll("Offline", "TB"))

	requireResponse(t, c.call(codec.RequestCloneGroupOffset, map[string]string{"srcGroup": "Src"}, nil),
		codec.ResponseSystemError, "the custom field <destGroup> is null")
}

// QUERY_CONSUME_TIME_SPAN (303) over the wire: RocketMQ's QueryConsumeTimeSpanBody, field by field.
func TestAdminQueryConsumeTimeSpan(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("TS", 3), nil)
	putMessages(t, b, "TS", 0, 4)
	putMessages(t, b, "TS", 1, 2)
	b.offsets.Commit("GS", "TS", 0, 2) // consumed 2 of 4
	b.offsets.Commit("GS", "TS", 1, 2) // consumed all

	before := time.Now().UnixMilli()
	resp := c.adminOK(codec.RequestQueryConsumeTimeSpan, map[string]string{"topic": "TS", "group": "GS"}, nil)
	after := time.Now().UnixMilli()
	type span struct {
		ConsumeTimeStamp    int64  `json:"consumeTimeStamp"`
		ConsumeTimeStampStr string `json:"consumeTimeStampStr"`
		DelayTime           int64  `json:"delayTime"`
		MaxTimeStamp        int64  `json:"maxTimeStamp"`
		MaxTimeStampStr     string `json:"maxTimeStampStr"`
		MessageQueue        struct {
			BrokerName string `json:"brokerName"`
			QueueID    int32  `json:"queueId"`
			Topic      string `json:"topic"`
		} `json:"messageQueue"`
		MinTimeStamp    int64  `json:"minTimeStamp"`
		MinTimeStampStr string `json:"minTimeStampStr"`
	}
	var body struct {
		ConsumeTimeSpanSet []span `json:"consumeTimeSpanSet"`
	}
	decodeJava(t, resp.Body, &body)
	require.Len(t, body.ConsumeTimeSpanSet, 3)
	javaDate := func(ms int64) string { return time.UnixMilli(ms).Format("2006-01-02#15:04:05:000") }
	for q, s := range body.ConsumeTimeSpanSet {
		require.Equal(t, b.cfg.BrokerName, s.MessageQueue.BrokerName)
		require.Equal(t, int32(q), s.MessageQueue.QueueID)
		require.Equal(t, "TS", s.MessageQueue.Topic)
		require.Equal(t, javaDate(s.MinTimeStamp), s.MinTimeStampStr)
		require.Equal(t, javaDate(s.MaxTimeStamp), s.MaxTimeStampStr)
		require.Equal(t, javaDate(s.ConsumeTimeStamp), s.ConsumeTimeStampStr)
	}
	q0, q1, q2 := body.ConsumeTimeSpanSet[0], body.ConsumeTimeSpanSet[1], body.ConsumeTimeSpanSet[2]
	require.Equal(t, storeTimeAt(t, b, "TS", 0, 0), q0.MinTimeStamp)
	require.Equal(t, storeTimeAt(t, b, "TS", 0, 3), q0.MaxTimeStamp)
	require.Equal(t, storeTimeAt(t, b, "TS", 0, 1), q0.ConsumeTimeStamp, "the last consumed message")
	next := storeTimeAt(t, b, "TS", 0, 2)
	require.GreaterOrEqual(t, q0.DelayTime, before-next)
	require.LessOrEqual(t, q0.DelayTime, after-next)

	require.Equal(t, storeTimeAt(t, b, "TS", 1, 1), q1.ConsumeTimeStamp)
	require.Equal(t, storeTimeAt(t, b, "TS", 1, 1), q1.MaxTimeStamp)
	require.Zero(t, q1.DelayTime, "nothing left to consume")

	// An empty queue: RocketMQ's store answers -1 for each time.
	require.Equal(t, int64(-1), q2.MinTimeStamp)
	require.Equal(t, int64(-1), q2.MaxTimeStamp)
	require.Equal(t, int64(-1), q2.ConsumeTimeStamp)
	// The group has no offset there (-1 < max offset 0): RocketMQ subtracts the -1 it finds.
	require.GreaterOrEqual(t, q2.DelayTime, before+1)
	require.LessOrEqual(t, q2.DelayTime, after+1)

	requireResponse(t, c.call(codec.RequestQueryConsumeTimeSpan, map[string]string{"topic": "Nope", "group": "GS"}, nil),
		codec.ResponseTopicNotExist, "topic[Nope] not exist")
}

// GET_ALL_PRODUCER_INFO (328) over the wire: RocketMQ's ProducerTableInfo, field by field.
func TestAdminGetAllProducerInfo(t *testing.T) {
	tb := startTestBroker(t, nil)
	c := remotingtest.Dial(t, tb.BrokerAddr)
	before := time.Now().UnixMilli()
	hb := codec.HeartbeatData{ClientID: "10.0.0.7@p1",
		ProducerDataSet: []codec.ProducerData{{GroupName: "PG-b"}, {GroupName: "PG-a"}}}
	body, err := hb.Encode()
	require.NoError(t, err)
	requireResponse(t, c.Call(codec.NewRequest(codec.RequestHeartBeat, nil, body)), codec.ResponseSuccess, "")
	after := time.Now().UnixMilli()

	resp := c.Call(codec.NewRequest(codec.RequestGetAllProducerInfo, nil, nil))
	requireResponse(t, resp, codec.ResponseSuccess, "")
	type info struct {
		ClientID            string `json:"clientId"`
		Language            string `json:"language"`
		LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
		RemoteIP            string `json:"remoteIP"`
		Version             int32  `json:"version"`
	}
	var got struct {
		Data map[string][]info `json:"data"`
	}
	decodeJava(t, resp.Body, &got)
	require.Len(t, got.Data, 2, string(resp.Body))
	for _, group := range []string{"PG-a", "PG-b"} {
		require.Len(t, got.Data[group], 1, group)
		p := got.Data[group][0]
		require.Equal(t, "10.0.0.7@p1", p.ClientID)
		require.Equal(t, "JAVA", p.Language)
		require.Equal(t, codec.ServerVersion(), p.Version, "the client's version")
		require.Equal(t, "/"+c.NetConn().LocalAddr().String(), p.RemoteIP)
		require.GreaterOrEqual(t, p.LastUpdateTimestamp, before)
		require.LessOrEqual(t, p.LastUpdateTimestamp, after)
	}
}

// CLEAN_UNUSED_TOPIC (316) over the wire: the ConsumeQueues of topics without a topic config go,
// except the op-half topic's (which never has one).
func TestAdminCleanUnusedTopic(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("Kept", 1), nil)
	putMessages(t, b, "Kept", 0, 1)
	putMessages(t, b, "Orphan", 0, 2) // queues, no topic config
	putMessages(t, b, metadata.TransOpHalfTopic, 0, 1)
	require.Contains(t, b.store.QueueTopics(), "Orphan")

	resp := c.adminOK(codec.RequestCleanUnusedTopic, nil, nil)
	require.Empty(t, resp.Body)
	topics := b.store.QueueTopics()
	require.NotContains(t, topics, "Orphan")
	require.Contains(t, topics, "Kept")
	require.Contains(t, topics, metadata.TransOpHalfTopic)
	require.Equal(t, int64(0), b.store.GetMaxOffsetInQueue("Orphan", 0))
	require.Equal(t, int64(1), b.store.GetMaxOffsetInQueue("Kept", 0))
	require.Equal(t, int64(1), b.store.GetMaxOffsetInQueue(metadata.TransOpHalfTopic, 0))
}

// QUERY_CONSUME_QUEUE (321) over the wire: RocketMQ's QueryConsumeQueueResponseBody, field by field.
func TestAdminQueryConsumeQueue(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("TQ", 1), nil)
	for i := range 4 {
		m := &codec.Message{Topic: "TQ", Body: []byte("body-" + strconv.Itoa(i)), BornTimestamp: time.Now().UnixMilli(),
			BornHost: netip.MustParseAddrPort("127.0.0.1:5000"), Properties: []byte(props("TAGS", "tagA"))}
		_, err := b.store.PutMessage(m)
		require.NoError(t, err)
	}
	testutil.Eventually(t, "4 entries", func() bool { return b.store.GetMaxOffsetInQueue("TQ", 0) == 4 })

	type entry struct {
		Eval         bool  `json:"eval"`
		PhysicOffset int64 `json:"physicOffset"`
		PhysicSize   int32 `json:"physicSize"`
		TagsCode     int64 `json:"tagsCode"`
	}
	type answer struct {
		FilterData       *string                 `json:"filterData"`
		MaxQueueIndex    int64                   `json:"maxQueueIndex"`
		MinQueueIndex    int64                   `json:"minQueueIndex"`
		QueueData        []entry                 `json:"queueData"`
		SubscriptionData *codec.SubscriptionData `json:"subscriptionData"`
	}
	query := func(ext map[string]string) answer {
		t.Helper()
		resp := c.adminOK(codec.RequestQueryConsumeQueue, ext, nil)
		var a answer
		decodeJava(t, resp.Body, &a)
		return a
	}
	want := func(off int64) entry {
		phys := b.store.GetCommitLogOffsetInQueue("TQ", 0, off)
		rec, release, err := b.store.LookMessageByOffset(phys)
		require.NoError(t, err)
		defer release()
		return entry{PhysicOffset: phys, PhysicSize: int32(len(rec)), TagsCode: 3552231} // "tagA".hashCode()
	}

	a := query(map[string]string{"topic": "TQ", "queueId": "0", "index": "1", "count": "2", "consumerGroup": "GQ"})
	require.Equal(t, int64(4), a.MaxQueueIndex)
	require.Equal(t, int64(0), a.MinQueueIndex)
	require.Equal(t, []entry{want(1), want(2)}, a.QueueData)
	require.Nil(t, a.SubscriptionData)
	require.NotNil(t, a.FilterData)
	require.Equal(t, "GQ@TQ is not online!", *a.FilterData)

	// Online with a tag subscription: its SubscriptionData, and RocketMQ's "null" filter data.
	requireResponse(t, c.heartbeat("10.0.0.9@1", []codec.ConsumerData{*remotingtest.ConsumerData("GQ",
		remotingtest.Subscription("TQ", 7, "tagA"))}), codec.ResponseSuccess, "")
	a = query(map[string]string{"topic": "TQ", "queueId": "0", "index": "3", "count": "10", "consumerGroup": "GQ"})
	require.Equal(t, []entry{want(3)}, a.QueueData, "count is capped by the queue's end")
	require.NotNil(t, a.SubscriptionData)
	require.Equal(t, "tagA", a.SubscriptionData.SubString)
	require.Equal(t, int64(7), a.SubscriptionData.SubVersion)
	require.Equal(t, "null", *a.FilterData)

	// Without a group: no subscription or filter data at all.
	a = query(map[string]string{"topic": "TQ", "queueId": "0", "index": "0", "count": "1"})
	require.Equal(t, []entry{want(0)}, a.QueueData)
	require.Nil(t, a.FilterData)
	require.Nil(t, a.SubscriptionData)

	// An index outside the queue: SUCCESS with RocketMQ's remark and no body; a queue that does
	// not exist: SYSTEM_ERROR.
	resp := c.call(codec.RequestQueryConsumeQueue, map[string]string{"topic": "TQ", "queueId": "0", "index": "9", "count": "1"}, nil)
	requireResponse(t, resp, codec.ResponseSuccess, "Index 9 of 0@TQ is not exist!")
	require.Empty(t, resp.Body)
	requireResponse(t, c.call(codec.RequestQueryConsumeQueue, map[string]string{"topic": "TQ", "queueId": "3", "index": "0", "count": "1"}, nil),
		codec.ResponseSystemError, "3@TQ is not exist!")
	requireResponse(t, c.call(codec.RequestQueryConsumeQueue, map[string]string{"topic": "TQ", "queueId": "0", "index": "0"}, nil),
		codec.ResponseSystemError, "the custom field <count> is null")
}

// CLEAN_EXPIRED_CONSUMEQUEUE (306) over the wire: SUCCESS without a body; queues whose records are
// all still in the CommitLog stay (store.TestCleanExpiredConsumeQueues covers the deletion).
func TestAdminCleanExpiredConsumeQueue(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	putMessages(t, b, "Live", 0, 2)
	resp := c.adminOK(codec.RequestCleanExpiredConsumeQueue, nil, nil)
	require.Empty(t, resp.Body)
	require.Contains(t, b.store.QueueTopics(), "Live")
	require.Equal(t, int64(2), b.store.GetMaxOffsetInQueue("Live", 0))
}

// GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305) over the wire: RocketMQ's TopicList of
// TopicValidator.getSystemTopicSet on this broker.
func TestAdminGetSystemTopicListFromBroker(t *testing.T) {
	tb := startTestBroker(t, nil)
	c := dialCtl(t, tb.BrokerAddr)
	resp := c.adminOK(codec.RequestGetSystemTopicListFromBroker, nil, nil)
	var got struct {
		TopicList []string `json:"topicList"`
	}
	decodeJava(t, resp.Body, &got)
	cluster, broker := tb.cfg.BrokerClusterName, tb.cfg.BrokerName
	require.ElementsMatch(t, []string{"TBW102", "SCHEDULE_TOPIC_XXXX", "BenchmarkTest", "RMQ_SYS_TRANS_HALF_TOPIC",
		"RMQ_SYS_TRACE_TOPIC", "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC", "SELF_TEST_TOPIC",
		"OFFSET_MOVED_EVENT", cluster, broker, cluster + "_REPLY_TOPIC"}, got.TopicList)
}

// QUERY_CORRECTION_OFFSET (308) over the wire: RocketMQ's QueryCorrectionOffsetBody, with its
// bare Integer keys.
func TestAdminQueryCorrectionOffset(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	b.offsets.Commit("G1", "TC", 0, 5)
	b.offsets.Commit("G1", "TC", 1, 9)
	b.offsets.Commit("G2", "TC", 0, 3)
	b.offsets.Commit("G2", "TC", 1, 12)
	b.offsets.Commit("Skipped", "TC", 0, 1)
	b.offsets.Commit("Cmp", "TC", 0, 4) // the minimum, 3, is not above 4: kept
	b.offsets.Commit("Cmp", "TC", 1, 8) // the minimum, Cmp's own 8, is not above 8: kept

	resp := c.adminOK(codec.RequestQueryCorrectionOffset, map[string]string{"topic": "TC", "compareGroup": "Cmp",
		"filterGroups": "Skipped"}, nil)
	require.Equal(t, `{"correctionOffsets":{0:3,1:8}}`, string(resp.Body))
	require.Equal(t, int64(1), b.offsets.Query("Skipped", "TC", 0), "a left-out group keeps its offsets")

	// Without Cmp among the others: queue 1's minimum (9) is above Cmp's 8, so Long.MAX_VALUE.
	resp = c.adminOK(codec.RequestQueryCorrectionOffset, map[string]string{"topic": "TC", "compareGroup": "Cmp",
		"filterGroups": "Skipped,Cmp"}, nil)
	require.Equal(t, `{"correctionOffsets":{0:3,1:9223372036854775807}}`, string(resp.Body))

	requireResponse(t, c.call(codec.RequestQueryCorrectionOffset, map[string]string{"topic": "TC"}, nil),
		codec.ResponseSystemError, "the custom field <compareGroup> is null")
}

// GET_BROKER_CONSUME_STATS (317) over the wire: RocketMQ's ConsumeStatsList, byte for byte (its
// MessageQueue keys are fastjson object keys, which no JSON decoder reads).
func TestAdminGetBrokerConsumeStats(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("TB1", 2), nil)
	putMessages(t, b, "TB1", 0, 3)
	_, err := b.subscriptions.FindOrCreate("GB")
	require.NoError(t, err)
	b.offsets.Commit("GB", "TB1", 0, 1)
	last := storeTimeAt(t, b, "TB1", 0, 0)

	want := func(gbStats string, totalDiff int) string {
		var list []string
		for _, g := range slices.Sorted(maps.Keys(b.subscriptions.Snapshot().SubscriptionGroupTable)) {
			stats := ""
			if g == "GB" {
				stats = gbStats
			}
			list = append(list, `{"`+g+`":[`+stats+`]}`)
		}
		return `{"brokerAddr":"` + b.BrokerAddr() + `","consumeStatsList":[` + strings.Join(list, ",") +
			`],"totalDiff":` + strconv.Itoa(totalDiff) + `}`
	}
	queue := func(q int) string {
		return `{"brokerName":"` + b.cfg.BrokerName + `","queueId":` + strconv.Itoa(q) + `,"topic":"TB1"}`
	}
	resp := c.adminOK(codec.RequestGetBrokerConsumeStats, map[string]string{"isOrder": "false", "timeoutMillis": "3000"}, nil)
	require.Equal(t, want(`{"consumeTps":0.0,"offsetTable":{`+
		queue(0)+`:{"brokerOffset":3,"consumerOffset":1,"lastTimestamp":`+strconv.FormatInt(last, 10)+`,"pullOffset":1},`+
		queue(1)+`:{"brokerOffset":0,"consumerOffset":0,"lastTimestamp":0,"pullOffset":0}}}`, 2), string(resp.Body))

	// isOrder: only ordered topics; TB1 is not.
	resp = c.adminOK(codec.RequestGetBrokerConsumeStats, map[string]string{"isOrder": "true"}, nil)
	require.Equal(t, want("", 0), string(resp.Body))
	requireResponse(t, c.call(codec.RequestGetBrokerConsumeStats, nil, nil), codec.ResponseSystemError,
		"the custom field <isOrder> is null")
}

// DELETE_EXPIRED_COMMITLOG (329) over the wire: SUCCESS without a body, and the store is told to
// delete expired files at its next retention passes whatever the hour
// (store.TestDeleteExpiredFilesManually).
func TestAdminDeleteExpiredCommitLog(t *testing.T) {
	var manual *manualDeleteStore
	db := startDataBroker(t, dataBrokerOptions{wrap: func(s store.MessageStore) store.MessageStore {
		manual = &manualDeleteStore{MessageStore: s}
		return manual
	}})
	c := remotingtest.Dial(t, db.addr)
	resp := c.Call(codec.NewRequest(codec.RequestDeleteExpiredCommitLog, nil, nil))
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Empty(t, resp.Body)
	require.Equal(t, int32(1), manual.calls.Load())
}

// manualDeleteStore counts DeleteExpiredFilesManually calls.
type manualDeleteStore struct {
	store.MessageStore
	calls atomic.Int32
}

func (s *manualDeleteStore) DeleteExpiredFilesManually() {
	s.calls.Add(1)
	s.MessageStore.DeleteExpiredFilesManually()
}

// decodeJava decodes a Java-shaped JSON body into v, refusing a field v does not declare: the
// answer has exactly the Java class's fields.
func decodeJava(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(v), string(body))
}
