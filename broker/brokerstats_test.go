package broker

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/brokerstats"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// withoutStatsSampler keeps the "broker stats" service from sampling on its own: the test
// samples at the times it chooses.
func withoutStatsSampler(b *Broker) {
	for i := range b.services {
		if b.services[i].name == "broker stats" {
			b.services[i].start, b.services[i].stop = nil, nil
			return
		}
	}
	panic("no broker stats service")
}

func viewStats(c *remotingtest.Conn, name, key string) *codec.RemotingCommand {
	return c.Call(codec.NewRequest(codec.RequestViewBrokerStatsData,
		map[string]string{"statsName": name, "statsKey": key}, nil))
}

// requireBrokerStatsBody checks a BrokerStatsData body field by field against RocketMQ's classes:
// BrokerStatsData {BrokerStatsItem statsMinute, statsHour, statsDay}, BrokerStatsItem {long sum,
// double tps, double avgpt}, fastjson's field order, doubles written as Java writes them.
func requireBrokerStatsBody(t *testing.T, body []byte) *codec.BrokerStatsData {
	t.Helper()
	var raw map[string]map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(body, &raw), string(body))
	require.Len(t, raw, 3)
	for _, window := range []string{"statsMinute", "statsHour", "statsDay"} {
		item, ok := raw[window]
		require.True(t, ok, window)
		require.Len(t, item, 3, window)
		require.NotContains(t, string(item["sum"]), ".", "%s.sum is a long", window)
		for _, f := range []string{"tps", "avgpt"} {
			text := string(item[f])
			require.True(t, strings.ContainsAny(text, ".E"), "%s.%s is a double as Java writes it: %s", window, f, text)
		}
	}
	require.True(t, strings.Index(string(body), `"statsDay"`) < strings.Index(string(body), `"statsHour"`) &&
		strings.Index(string(body), `"statsHour"`) < strings.Index(string(body), `"statsMinute"`), "fastjson's order")
	d, err := codec.DecodeBrokerStatsData(body)
	require.NoError(t, err)
	return d
}

// VIEW_BROKER_STATS_DATA, GET_CONSUME_STATS' and GET_BROKER_CONSUME_STATS' consumeTps over the
// wire, after sends and pulls, with the windows sampled at chosen times.
func TestViewBrokerStatsDataAndConsumeTps(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{beforeRun: withoutStatsSampler})
	c := remotingtest.Dial(t, db.addr)
	stats := db.b.metrics.stats

	resp := viewStats(c, brokerstats.TopicPutNums, "TopicS")
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "The stats <TOPIC_PUT_NUMS> <TopicS> not exist", resp.Remark)
	resp = c.Call(codec.NewRequest(codec.RequestViewBrokerStatsData, map[string]string{"statsName": "TOPIC_PUT_NUMS"}, nil))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "the custom field <statsKey> is null", resp.Remark)

	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for range 3 {
		sendOK(t, c, sendV1("TopicS", 0, []byte("abc"), ""))
	}
	requirePull(t, c.Call(remotingtest.PullRequest("GS", "TopicS", 0, 0, 32, subFlag, 0, "*")),
		codec.ResponseSuccess, "FOUND", 3, 0, 3)
	stats.Sample(t0)
	for range 2 {
		sendOK(t, c, sendV1("TopicS", 0, []byte("abc"), ""))
	}
	pull := remotingtest.PullRequest("GS", "TopicS", 0, 3, 32, subFlag|codec.PullSysFlagCommitOffset, 0, "*")
	pull.ExtFields["commitOffset"] = "3"
	requirePull(t, c.Call(pull), codec.ResponseSuccess, "FOUND", 5, 0, 5)
	stats.Sample(t0.Add(10 * time.Second))

	// Five puts of one message, three before the first sample; the minute window spans 20 s from
	// the made-up sample at 0 ten seconds before the first; the hour and day windows sampled once.
	resp = viewStats(c, brokerstats.TopicPutNums, "TopicS")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, `{"statsDay":{"avgpt":1.0,"sum":3,"tps":8.333333333333334E-4},`+
		`"statsHour":{"avgpt":1.0,"sum":3,"tps":0.005},"statsMinute":{"avgpt":1.0,"sum":5,"tps":0.25}}`, string(resp.Body))
	requireBrokerStatsBody(t, resp.Body)

	resp = viewStats(c, brokerstats.TopicPutSize, "TopicS")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	size := requireBrokerStatsBody(t, resp.Body)
	require.Positive(t, size.StatsMinute.Sum)
	require.Equal(t, float64(size.StatsMinute.Sum)/5, size.StatsMinute.Avgpt, "bytes per put")

	// Two pulls found 3 and 2 messages: the group's key is topic@group.
	resp = viewStats(c, brokerstats.GroupGetNums, "TopicS@GS")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	got := requireBrokerStatsBody(t, resp.Body)
	require.Equal(t, codec.BrokerStatsItem{Sum: 5, Tps: 0.25, Avgpt: 2.5}, got.StatsMinute)
	resp = viewStats(c, brokerstats.GroupGetSize, "TopicS@GS")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	resp = viewStats(c, brokerstats.GroupGetNums, "GS@TopicS")
	require.Equal(t, "The stats <GROUP_GET_NUMS> <GS@TopicS> not exist", resp.Remark)

	// The broker's totals are keyed by the cluster name and count no calls.
	resp = viewStats(c, brokerstats.BrokerPutNums, db.b.cfg.BrokerClusterName)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, codec.BrokerStatsItem{Sum: 5, Tps: 0.25}, requireBrokerStatsBody(t, resp.Body).StatsMinute)
	resp = viewStats(c, brokerstats.BrokerGetNums, db.b.cfg.BrokerClusterName)
	require.Equal(t, codec.BrokerStatsItem{Sum: 5, Tps: 0.25}, requireBrokerStatsBody(t, resp.Body).StatsMinute)

	// consumeTps is GROUP_GET_NUMS' minute rate.
	resp = c.Call(codec.NewRequest(codec.RequestGetConsumeStats, map[string]string{"consumerGroup": "GS", "topic": "TopicS"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.True(t, strings.HasPrefix(string(resp.Body), `{"consumeTps":0.25,"offsetTable":{`), string(resp.Body))
	cs, err := codec.DecodeConsumeStats(resp.Body)
	require.NoError(t, err)
	require.Equal(t, 0.25, cs.ConsumeTps)
	resp = c.Call(codec.NewRequest(codec.RequestGetBrokerConsumeStats, map[string]string{"isOrder": "false"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Contains(t, string(resp.Body), `"GS":[{"consumeTps":0.25,"offsetTable":{`)

	// The two pulls' milliseconds by queueId@topic@group: the sum is the machine's, but it is the
	// minute's and the rate and the average follow from it (two pulls, 20 s).
	resp = viewStats(c, brokerstats.GroupGetLatency, "0@TopicS@GS")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	latency := requireBrokerStatsBody(t, resp.Body).StatsMinute
	require.Equal(t, codec.BrokerStatsItem{Sum: latency.Sum, Tps: float64(latency.Sum) / 20, Avgpt: float64(latency.Sum) / 2}, latency)
	resp = viewStats(c, brokerstats.GroupGetLatency, "TopicS@GS")
	require.Equal(t, "The stats <GROUP_GET_LATENCY> <TopicS@GS> not exist", resp.Remark, "keyed by queue")

	// TOPIC_PUT_NUMS, TOPIC_PUT_SIZE, GROUP_GET_NUMS, GROUP_GET_SIZE, GROUP_GET_LATENCY,
	// BROKER_PUT_NUMS, BROKER_GET_NUMS.
	items := func() float64 { return scrapeOf(t, db.b.Registry())["ringmq_broker_stats_items"] }
	require.Equal(t, 7.0, items())

	// A deleted group's items are gone (RocketMQ's onGroupDeleted).
	resp = c.Call(codec.NewRequest(codec.RequestDeleteSubscriptionGroup, map[string]string{"groupName": "GS"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	resp = viewStats(c, brokerstats.GroupGetNums, "TopicS@GS")
	require.Equal(t, "The stats <GROUP_GET_NUMS> <TopicS@GS> not exist", resp.Remark)
	resp = viewStats(c, brokerstats.GroupGetLatency, "0@TopicS@GS")
	require.Equal(t, "The stats <GROUP_GET_LATENCY> <0@TopicS@GS> not exist", resp.Remark)
	require.Equal(t, 4.0, items())
}

// javaRuntimeInfoKeys are the keys RocketMQ 4.9.8's broker answers GET_BROKER_RUNTIME_INFO with
// (AdminBrokerProcessor.prepareRuntimeInfo, DefaultMessageStore.getRuntimeInfo,
// StoreStatsService.getRuntimeInfo), but commitLogDiskRatio_<path>, remainHowManyDataToCommit
// (transient pool only) and scheduleMessageOffset_<level> (per delay level in use).
var javaRuntimeInfoKeys = []string{
	"bootTimestamp", "runtime", "putMessageEntireTimeMax", "putMessageTimesTotal", "putMessageFailedTimes",
	"putMessageSizeTotal", "putMessageDistributeTime", "putMessageAverageSize", "dispatchMaxBuffer",
	"getMessageEntireTimeMax", "putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps",
	"putLatency99", "putLatency999",
	"commitLogDiskRatio", "consumeQueueDiskRatio", "commitLogMinOffset", "commitLogMaxOffset",
	"brokerVersionDesc", "brokerVersion", "msgPutTotalYesterdayMorning", "msgPutTotalTodayMorning",
	"msgPutTotalTodayNow", "msgGetTotalYesterdayMorning", "msgGetTotalTodayMorning", "msgGetTotalTodayNow",
	"sendThreadPoolQueueSize", "sendThreadPoolQueueCapacity", "pullThreadPoolQueueSize", "pullThreadPoolQueueCapacity",
	"queryThreadPoolQueueSize", "queryThreadPoolQueueCapacity", "EndTransactionQueueSize",
	"EndTransactionThreadPoolQueueCapacity", "dispatchBehindBytes", "pageCacheLockTimeMills",
	"sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
	"queryThreadPoolQueueHeadWaitTimeMills", "earliestMessageTimeStamp", "startAcceptSendRequestTimeStamp",
	"remainTransientStoreBufferNumbs", "remainHowManyDataToFlush", "commitLogDirCapacity",
}

// Every key of RocketMQ's GET_BROKER_RUNTIME_INFO is answered, each value in the form Java's
// tools parse, and the counters move with traffic.
func TestBrokerRuntimeInfoHasEveryJavaKey(t *testing.T) {
	for _, pool := range []bool{false, true} {
		t.Run(map[bool]string{false: "mmap", true: "transientpool"}[pool], func(t *testing.T) {
			db := startDataBroker(t, dataBrokerOptions{fileStore: true, mutate: func(c *Config) {
				if pool {
					withTransientPool(c)
				}
			}})
			c := remotingtest.Dial(t, db.addr)
			info := func() map[string]string {
				resp := c.Call(codec.NewRequest(codec.RequestGetBrokerRuntimeInfo, nil, nil))
				require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
				kv, err := codec.DecodeKVTable(resp.Body)
				require.NoError(t, err)
				return kv.Table
			}
			before := info()
			keys := append([]string{"commitLogDiskRatio_" + db.b.cfg.Config.CommitLogDir()}, javaRuntimeInfoKeys...)
			if pool {
				keys = append(keys, "remainHowManyDataToCommit")
			}
			for _, key := range keys {
				require.Contains(t, before, key)
			}
			for _, key := range []string{"commitLogDiskRatio", "consumeQueueDiskRatio", "putLatency99", "putLatency999",
				"putMessageAverageSize"} {
				v, err := strconv.ParseFloat(before[key], 64)
				require.NoError(t, err, key)
				require.GreaterOrEqual(t, v, 0.0, key)
			}
			ratio, _ := strconv.ParseFloat(before["commitLogDiskRatio"], 64)
			require.True(t, ratio > 0 && ratio <= 1, "a real file system's used share: %v", ratio)
			for _, key := range []string{"putMessageEntireTimeMax", "getMessageEntireTimeMax", "dispatchMaxBuffer",
				"sendThreadPoolQueueHeadWaitTimeMills", "pullThreadPoolQueueHeadWaitTimeMills",
				"queryThreadPoolQueueHeadWaitTimeMills", "adminBrokerThreadPoolQueueSize", "remainTransientStoreBufferNumbs"} {
				v, err := strconv.ParseInt(before[key], 10, 64)
				require.NoError(t, err, key)
				require.GreaterOrEqual(t, v, int64(0), key)
			}
			for _, key := range []string{"putTps", "getFoundTps", "getMissTps", "getTotalTps", "getTransferedTps"} {
				parts := strings.Split(before[key], " ")
				require.Len(t, parts, 3, key)
				for _, p := range parts {
					_, err := strconv.ParseFloat(p, 64)
					require.NoError(t, err, key)
				}
			}
			require.Regexp(t, `^Total : [0-9.]+ [KMGTPE]iB, Free : [0-9.]+ [KMGTPE]?i?B\.$`, before["commitLogDirCapacity"])
			require.Regexp(t, `^(\[[^]]+\]:\d+ ){13}$`, before["putMessageDistributeTime"])

			for range 4 {
				sendOK(t, c, sendV1("TopicR", 0, []byte("runtime"), ""))
			}
			testutil.Eventually(t, "dispatch of 4 messages",
				func() bool { return db.b.store.GetMaxOffsetInQueue("TopicR", 0) == 4 })
			requirePull(t, c.Call(remotingtest.PullRequest("GR", "TopicR", 0, 0, 32, subFlag, 0, "*")),
				codec.ResponseSuccess, "FOUND", 4, 0, 4)
			after := info()
			delta := func(key string) int64 {
				b, err := strconv.ParseInt(before[key], 10, 64)
				require.NoError(t, err, key)
				a, err := strconv.ParseInt(after[key], 10, 64)
				require.NoError(t, err, key)
				return a - b
			}
			require.EqualValues(t, 4, delta("putMessageTimesTotal"))
			require.EqualValues(t, 4, delta("msgPutTotalTodayNow"))
			require.EqualValues(t, 4, delta("getMessageTransferedMsgCount"))
			require.Positive(t, delta("putMessageSizeTotal"))
			require.Positive(t, delta("commitLogMaxOffset"))
			require.Positive(t, delta("getMessageTimesTotal"))
		})
	}
}

// A consumer's send-back counts in SNDBCK_PUT_NUMS under the topic it was first sent to and the
// group, and in ringmq_broker_consumer_sent_back_messages_total.
func TestSendBackStats(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{beforeRun: withoutStatsSampler})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicSB", 0, []byte("fails"), ""))
	orig := offsetOf(t, h.MsgID)
	requireResponse(t, c.Call(sendBackCmd(orig, "GSB", 0, nil)), codec.ResponseSuccess, "")
	requireResponse(t, c.Call(sendBackCmd(orig, "GSB", 0, nil)), codec.ResponseSuccess, "")
	db.b.metrics.stats.Sample(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))

	resp := viewStats(c, brokerstats.SendBackPutNums, "TopicSB@GSB")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, codec.BrokerStatsItem{Sum: 2, Tps: 0.2, Avgpt: 1}, requireBrokerStatsBody(t, resp.Body).StatsMinute)
	require.Equal(t, 2.0, scrapeOf(t, db.b.Registry())[`ringmq_broker_consumer_sent_back_messages_total{group="GSB",topic="TopicSB"}`])
}

// Delayed messages count per delay level's queue as RocketMQ 4.9.8 counts them: QUEUE_PUT_NUMS and
// QUEUE_PUT_SIZE of SCHEDULE_TOPIC_XXXX@<level−1> (the stored records' bytes), and QUEUE_GET_NUMS and
// QUEUE_GET_SIZE of SCHEDULE_TOPIC_XXXX@<level−1>@SCHEDULE_CONSUMER once the schedule service
// delivered them (level 1: after a second; the bytes of the copies written to the real topic).
// Each message is one call. In the memory store and the file store.
func TestScheduleQueueStats(t *testing.T) {
	t.Run("MemStore", func(t *testing.T) { testScheduleQueueStats(t, false) })
	t.Run("FileStore", func(t *testing.T) { testScheduleQueueStats(t, true) })
}

func testScheduleQueueStats(t *testing.T, fileStore bool) {
	db := startDataBroker(t, dataBrokerOptions{beforeRun: withoutStatsSampler, fileStore: fileStore})
	c := remotingtest.Dial(t, db.addr)
	stats := db.b.metrics.stats
	sendOK(t, c, sendV1("TopicD", 0, []byte("later"), props("DELAY", "1")))
	sendOK(t, c, sendV1("TopicD", 0, []byte("much later, a longer body"), props("DELAY", "1", "KEYS", "k1")))
	waitQueue(t, db.b, metadata.ScheduleTopic, 0, 2)
	t0 := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	stats.Sample(t0)
	putBytes := recordBytes(t, db.b, metadata.ScheduleTopic, 0, 2)
	require.Greater(t, putBytes, int64(2*(len("later")+60)), "whole records")
	resp := viewStats(c, brokerstats.QueuePutNums, "SCHEDULE_TOPIC_XXXX@0")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, codec.BrokerStatsItem{Sum: 2, Tps: 0.2, Avgpt: 1}, requireBrokerStatsBody(t, resp.Body).StatsMinute)
	resp = viewStats(c, brokerstats.QueuePutSize, "SCHEDULE_TOPIC_XXXX@0")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, codec.BrokerStatsItem{Sum: putBytes, Tps: float64(putBytes) / 10, Avgpt: float64(putBytes) / 2},
		requireBrokerStatsBody(t, resp.Body).StatsMinute)
	resp = viewStats(c, brokerstats.QueuePutNums, "SCHEDULE_TOPIC_XXXX@2")
	require.Equal(t, "The stats <QUEUE_PUT_NUMS> <SCHEDULE_TOPIC_XXXX@2> not exist", resp.Remark, "no message at level 3")
	resp = viewStats(c, brokerstats.QueuePutSize, "SCHEDULE_TOPIC_XXXX@2")
	require.Equal(t, "The stats <QUEUE_PUT_SIZE> <SCHEDULE_TOPIC_XXXX@2> not exist", resp.Remark, "no message at level 3")
	resp = viewStats(c, brokerstats.QueueGetSize, "SCHEDULE_TOPIC_XXXX@1@SCHEDULE_CONSUMER")
	require.Equal(t, "The stats <QUEUE_GET_SIZE> <SCHEDULE_TOPIC_XXXX@1@SCHEDULE_CONSUMER> not exist", resp.Remark,
		"nothing delivered from level 2")
	// Level 1's item exists once a message was delivered; its first window then starts a sample
	// period before that sample, so the rate depends on whether delivery preceded this sample.
	getSpan := 10.0
	if viewStats(c, brokerstats.QueueGetNums, "SCHEDULE_TOPIC_XXXX@0@SCHEDULE_CONSUMER").Code == int32(codec.ResponseSuccess) {
		getSpan = 20
	}

	// Level 1 is 1 s: delivered to TopicD once due.
	waitQueue(t, db.b, "TopicD", 0, 2)
	testutil.Eventually(t, "both delivered", func() bool { return db.b.schedule.Delivered() == 2 })
	getBytes := recordBytes(t, db.b, "TopicD", 0, 2)
	stats.Sample(t0.Add(10 * time.Second))
	resp = viewStats(c, brokerstats.QueueGetNums, "SCHEDULE_TOPIC_XXXX@0@SCHEDULE_CONSUMER")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, codec.BrokerStatsItem{Sum: 2, Tps: 2 / getSpan, Avgpt: 1}, requireBrokerStatsBody(t, resp.Body).StatsMinute)
	resp = viewStats(c, brokerstats.QueueGetSize, "SCHEDULE_TOPIC_XXXX@0@SCHEDULE_CONSUMER")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, codec.BrokerStatsItem{Sum: getBytes, Tps: float64(getBytes) / getSpan, Avgpt: float64(getBytes) / 2},
		requireBrokerStatsBody(t, resp.Body).StatsMinute)
	// The put items did not move: the second sample adds nothing.
	resp = viewStats(c, brokerstats.QueuePutSize, "SCHEDULE_TOPIC_XXXX@0")
	require.Equal(t, putBytes, requireBrokerStatsBody(t, resp.Body).StatsMinute.Sum)
}

// recordBytes is the total length of a queue's first n stored records, read from the CommitLog.
func recordBytes(t *testing.T, b *Broker, topic string, queueID int32, n int) int64 {
	t.Helper()
	res, err := b.store.GetMessage("", topic, queueID, 0, n, 1<<20, nil)
	require.NoError(t, err)
	defer res.Release()
	require.Len(t, res.Buffers, n)
	var total int64
	for _, rec := range res.Buffers {
		r, err := codec.DecodeRecord(rec, false)
		require.NoError(t, err)
		require.Equal(t, topic, string(r.Topic))
		total += int64(len(rec))
	}
	return total
}
