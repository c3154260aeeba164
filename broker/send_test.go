package broker

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/round"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

func TestSendMissingOrBadHeaderField(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)

	cmd := sendV1("TopicA", 0, []byte("x"), "")
	delete(cmd.ExtFields, "topic")
	resp := c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "the custom field <topic> is null", resp.Remark)
	require.Empty(t, resp.ExtFields)

	cmd = sendV2("TopicA", 0, []byte("x"), "")
	delete(cmd.ExtFields, "e")
	resp = c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "the custom field <e> is null", resp.Remark)

	cmd = sendV1("TopicA", 0, []byte("x"), "")
	cmd.ExtFields["queueId"] = "abc"
	resp = c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, `the custom field <queueId> has a bad value: "abc"`, resp.Remark)

	// The connection is still usable.
	h := sendOK(t, c, sendV1("TopicA", 0, []byte("fine"), ""))
	require.Equal(t, int32(0), h.QueueID)
}

func TestSendUnknownTopicWithAutoCreateOff(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) { c.AutoCreateTopicEnable = false }})
	c := remotingtest.Dial(t, db.addr)
	resp := c.Call(sendV1("NoSuchTopic", 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseTopicNotExist), resp.Code)
	require.Equal(t, "topic[NoSuchTopic] not exist, apply first please!", resp.Remark)
	require.Equal(t, "DefaultRegion", resp.ExtFields["MSG_REGION"])
	require.Equal(t, "true", resp.ExtFields["TRACE_ON"])
	_, ok := db.b.topics.Get("NoSuchTopic")
	require.False(t, ok)
}

func TestSendTopicChecks(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)

	resp := c.Call(sendV1("bad topic!", 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, metadata.ValidateTopicName("bad topic!"), resp.Remark)

	resp = c.Call(sendV1(strings.Repeat("t", 128), 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "The specified topic is longer than topic max length.", resp.Remark)

	resp = c.Call(sendV1(metadata.ScheduleTopic, 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.", resp.Remark)

	// A read-only topic refuses sends.
	tc := codec.NewTopicConfig("ReadOnly")
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 2, 2, metadata.PermRead
	require.NoError(t, db.b.topics.Update(tc))
	resp = c.Call(sendV1("ReadOnly", 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "the topic[ReadOnly] sending message is forbidden", resp.Remark)
}

func TestSendBrokerNotWritable(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) { c.BrokerPermission = int(metadata.PermRead) }})
	c := remotingtest.Dial(t, db.addr)
	resp := c.Call(sendV1("TopicA", 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "the broker[127.0.0.1] sending message is forbidden", resp.Remark)
}

func TestSendQueueIDOutOfRange(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	// Auto-created with min(client 4, TBW102's 8) = 4 queues.
	sendOK(t, c, sendV1("TopicQ", 3, []byte("x"), ""))
	resp := c.Call(sendV1("TopicQ", 4, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.True(t, strings.HasPrefix(resp.Remark, "request queueId[4] is illegal, TopicConfig [topicName=TopicQ, readQueueNums=4, writeQueueNums=4"),
		resp.Remark)
	// A negative queue id picks a write queue.
	for range 20 {
		h := sendOK(t, c, sendV1("TopicQ", -1, []byte("x"), ""))
		require.GreaterOrEqual(t, h.QueueID, int32(0))
		require.Less(t, h.QueueID, int32(4))
	}
}

func TestSendOversizedBodyAnswersFastAndKeepsConnection(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) { c.MaxMessageSize = 64 << 10 }})
	c := remotingtest.Dial(t, db.addr)
	begin := time.Now()
	resp := c.Call(sendV1("TopicA", 0, bytes.Repeat([]byte("b"), 64<<10+1), ""))
	require.Less(t, time.Since(begin), 2*time.Second) // the Go client's send timeout is 3 s
	require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code)
	require.Equal(t, "the message is illegal, maybe msg body or properties length not matched. "+
		"msg body length limit 65536B, msg properties length limit 32KB.", resp.Remark)

	// Properties over 32767 bytes are refused the same way.
	resp = c.Call(sendV1("TopicA", 0, []byte("x"), props("KEYS", strings.Repeat("k", 32768))))
	require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code)

	resp = c.Call(sendV1("TopicA", 0, nil, ""))
	require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code)
	require.Equal(t, "the message body is empty", resp.Remark)

	// Exactly the limit is fine, on the same connection.
	h := sendOK(t, c, sendV1("TopicA", 0, bytes.Repeat([]byte("b"), 64<<10), ""))
	require.Equal(t, int64(0), h.QueueOffset)
}

func TestSendStoresRecordAsJavaBrokerDoes(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)

	// A client sysFlag with host, inner-batch and unknown bits set: all masked away.
	cmd := sendV1("TopicR", 1, []byte("hello"), props("TAGS", "TagA", "KEYS", "k1 k2", "WAIT", "true", "u", "v"))
	cmd.ExtFields["sysFlag"] = strconv.Itoa(0x10 | 0x20 | 0x40 | 0x80 | 0x800 | 0x1000)
	cmd.ExtFields["flag"] = "77"
	cmd.ExtFields["reconsumeTimes"] = "2"
	resp := c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Empty(t, resp.Remark)
	require.Equal(t, "DefaultRegion", resp.ExtFields["MSG_REGION"])
	require.Equal(t, "true", resp.ExtFields["TRACE_ON"])
	var h codec.SendMessageResponseHeader
	require.NoError(t, h.Decode(resp.ExtFields))
	require.Equal(t, int32(1), h.QueueID)
	require.Equal(t, int64(0), h.QueueOffset)
	storeHost, off, err := codec.DecodeOffsetMsgID(h.MsgID)
	require.NoError(t, err)
	require.Equal(t, db.b.storeHost, storeHost)

	rec := viewRecord(t, c, off)
	require.Equal(t, "TopicR", string(rec.Topic))
	require.Equal(t, int32(1), rec.QueueID)
	require.Equal(t, int32(77), rec.Flag)
	require.Equal(t, int32(0), rec.SysFlag)
	require.Equal(t, int32(2), rec.ReconsumeTimes)
	require.Equal(t, int64(1700000000000), rec.BornTimestamp)
	require.Equal(t, "127.0.0.1", rec.BornHost.Addr().String())
	require.Equal(t, off, rec.PhysicalOffset)
	require.Equal(t, "hello", string(rec.Body))
	p := codec.DecodeProperties(rec.Properties)
	require.Equal(t, "TagA", p["TAGS"])
	require.Equal(t, "k1 k2", p["KEYS"])
	require.Equal(t, "v", p["u"])
	require.Equal(t, "TestCluster", p["CLUSTER"])
	require.NotContains(t, p, "WAIT")
	require.Len(t, p["UNIQ_KEY"], 32, "a UNIQ_KEY is added in Java's layout")
	require.Equal(t, p["UNIQ_KEY"], h.TransactionID)
	u, err := codec.DecodeUniqKey(p["UNIQ_KEY"])
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", u.IP.String())

	// A client's UNIQ_KEY is kept and answered as transactionId; queue offsets follow.
	h2 := sendOK(t, c, sendV2("TopicR", 1, []byte("again"), props("UNIQ_KEY", "C0A80001ABCD0000000012340001")))
	require.Equal(t, int64(1), h2.QueueOffset)
	require.Equal(t, "C0A80001ABCD0000000012340001", h2.TransactionID)
	rec2 := viewRecord(t, c, offsetOf(t, h2.MsgID))
	p2 := codec.DecodeProperties(rec2.Properties)
	require.Equal(t, "C0A80001ABCD0000000012340001", p2["UNIQ_KEY"])
	require.Equal(t, int64(1), rec2.QueueOffset)
}

func TestSendMultiTagTopicSetsSysFlag(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	tc := codec.NewTopicConfig("Multi")
	tc.ReadQueueNums, tc.WriteQueueNums, tc.TopicFilterType = 1, 1, codec.TopicFilterMultiTag
	require.NoError(t, db.b.topics.Update(tc))
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("Multi", 0, []byte("x"), ""))
	require.Equal(t, codec.SysFlagMultiTags, viewRecord(t, c, offsetOf(t, h.MsgID)).SysFlag)
}

func TestSendBatch(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendBatch("TopicB", 2,
		[2]string{"b1", props("TAGS", "x")}, [2]string{"b2", ""}, [2]string{"b3", "KEYS\x01k"}))
	require.Equal(t, int32(2), h.QueueID)
	require.Equal(t, int64(0), h.QueueOffset)
	ids := strings.Split(h.MsgID, ",")
	require.Len(t, ids, 3)
	require.Empty(t, h.TransactionID, "Go batches carry no UNIQ_KEY")
	wantProps := []map[string]string{
		{"TAGS": "x", "CLUSTER": "TestCluster"},
		{"CLUSTER": "TestCluster"},
		{"KEYS": "k", "CLUSTER": "TestCluster"},
	}
	for i, id := range ids {
		rec := viewRecord(t, c, offsetOf(t, id))
		require.Equal(t, fmt.Sprintf("b%d", i+1), string(rec.Body))
		require.Equal(t, int32(i), rec.Flag)
		require.Equal(t, int64(i), rec.QueueOffset)
		require.Equal(t, int32(2), rec.QueueID)
		require.Equal(t, wantProps[i], codec.DecodeProperties(rec.Properties))
	}
	// The next send continues the queue.
	h2 := sendOK(t, c, sendV1("TopicB", 2, []byte("single"), ""))
	require.Equal(t, int64(3), h2.QueueOffset)

	// Refusals.
	bad := sendBatch("TopicB", 2, [2]string{"b1", ""})
	bad.Body = bad.Body[:len(bad.Body)-1]
	resp := c.Call(bad)
	require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code)
	require.True(t, strings.HasPrefix(resp.Remark, "bad batch body: "), resp.Remark)
	resp = c.Call(sendBatch("%RETRY%G", 0, [2]string{"b1", ""}))
	require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code)
	require.Equal(t, "batch request does not support retry group %RETRY%G", resp.Remark)
	tx := sendBatch("TopicB", 2, [2]string{"b1", ""})
	tx.ExtFields["f"] = strconv.Itoa(int(codec.SysFlagTransactionPrepare))
	resp = c.Call(tx)
	require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code)
	require.Equal(t, "batch message does not support transaction", resp.Remark)
}

func TestSendDelayLevelGoesToScheduleTopic(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicD", 1, []byte("later"), props("DELAY", "3", "WAIT", "true", "TAGS", "t", "UNIQ_KEY", "U1")))
	require.Equal(t, int32(1), h.QueueID, "the answer names the addressed queue")
	rec := viewRecord(t, c, offsetOf(t, h.MsgID))
	require.Equal(t, metadata.ScheduleTopic, string(rec.Topic))
	require.Equal(t, int32(2), rec.QueueID)
	// WAIT is kept in a delayed message, as RocketMQ 4.9.8 stores it (its delivered copy has it).
	require.Equal(t, map[string]string{"WAIT": "true", "TAGS": "t", "UNIQ_KEY": "U1", "CLUSTER": db.b.cfg.BrokerClusterName,
		"DELAY": "3", "REAL_TOPIC": "TopicD", "REAL_QID": "1"}, codec.DecodeProperties(rec.Properties))
	require.Equal(t, int64(0), db.b.store.GetMaxOffsetInQueue("TopicD", 1), "nothing delivered yet")
	require.Equal(t, int64(1), db.b.store.GetMaxOffsetInQueue(metadata.ScheduleTopic, 2))

	// A level above the table is clamped to the last level (18 by default).
	h = sendOK(t, c, sendV1("TopicD", 0, []byte("much later"), props("DELAY", "99")))
	rec = viewRecord(t, c, offsetOf(t, h.MsgID))
	require.Equal(t, int32(17), rec.QueueID)
	require.Equal(t, "18", codec.DecodeProperties(rec.Properties)["DELAY"])

	resp := c.Call(sendV1("TopicD", 0, []byte("x"), props("DELAY", "soon")))
	require.Equal(t, int32(codec.ResponseMessageIllegal), resp.Code)
}

func TestSendTransactionHalfMessage(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	cmd := sendV1("TopicT", 2, []byte("half"), props("TRAN_MSG", "true", "PGROUP", "PG", "UNIQ_KEY", "ABCDEF"))
	cmd.ExtFields["sysFlag"] = strconv.Itoa(int(codec.SysFlagTransactionPrepare))
	h := sendOK(t, c, cmd)
	require.Equal(t, "ABCDEF", h.TransactionID)
	require.Equal(t, int64(0), h.QueueOffset)
	rec := viewRecord(t, c, offsetOf(t, h.MsgID))
	require.Equal(t, metadata.TransHalfTopic, string(rec.Topic))
	require.Equal(t, int32(0), rec.QueueID)
	require.Equal(t, codec.SysFlagTransactionNot, codec.TransactionType(rec.SysFlag))
	p := codec.DecodeProperties(rec.Properties)
	require.Equal(t, "TopicT", p["REAL_TOPIC"])
	require.Equal(t, "2", p["REAL_QID"])
	require.Equal(t, "ABCDEF", p["__transactionId__"])
	require.Equal(t, int64(0), db.b.store.GetMaxOffsetInQueue("TopicT", 2))

	db2 := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) { c.RejectTransactionMessage = true }})
	c2 := remotingtest.Dial(t, db2.addr)
	resp := c2.Call(sendV1("TopicT", 0, []byte("half"), props("TRAN_MSG", "true")))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "the broker[127.0.0.1] sending transaction message is forbidden", resp.Remark)
}

func TestSendRetryTopicPastMaxGoesToDLQ(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	// Below the limit: stays in the retry topic (auto-created with one queue).
	cmd := sendV1("%RETRY%G1", 0, []byte("r"), "")
	cmd.ExtFields["reconsumeTimes"] = "3"
	h := sendOK(t, c, cmd)
	require.Equal(t, "%RETRY%G1", string(viewRecord(t, c, offsetOf(t, h.MsgID)).Topic))

	cmd = sendV1("%RETRY%G1", 0, []byte("dead"), props("DELAY", "5"))
	cmd.ExtFields["reconsumeTimes"] = "16"
	h = sendOK(t, c, cmd)
	rec := viewRecord(t, c, offsetOf(t, h.MsgID))
	require.Equal(t, "%DLQ%G1", string(rec.Topic))
	require.Equal(t, int32(0), rec.QueueID)
	require.NotContains(t, codec.DecodeProperties(rec.Properties), "DELAY")
	tc, ok := db.b.topics.Get("%DLQ%G1")
	require.True(t, ok)
	require.Equal(t, metadata.PermRead|metadata.PermWrite, tc.Perm)

	// The header's maxReconsumeTimes wins over the group's 16.
	cmd = sendV1("%RETRY%G1", 0, []byte("dead early"), "")
	cmd.ExtFields["reconsumeTimes"] = "2"
	cmd.ExtFields["maxReconsumeTimes"] = "2"
	cmd.Version = 317
	h = sendOK(t, c, cmd)
	require.Equal(t, "%DLQ%G1", string(viewRecord(t, c, offsetOf(t, h.MsgID)).Topic))
}

// gatedStore holds SYNC_FLUSH waiters until the test releases them, and can claim the page
// cache is busy.
type gatedStore struct {
	store.MessageStore
	busy    atomic.Bool
	mu      sync.Mutex
	waiters []func(error)
}

func (g *gatedStore) WaitDurable(endOffset int64, done func(error)) {
	g.mu.Lock()
	g.waiters = append(g.waiters, done)
	g.mu.Unlock()
}

// WaitDurableReserved is the send plane's wait (it reserves first): gated too.
func (g *gatedStore) WaitDurableReserved(endOffset int64, done func(error, *round.Round)) {
	g.WaitDurable(endOffset, func(err error) { done(err, nil) })
}

func (g *gatedStore) IsOSPageCacheBusy() bool {
	return g.busy.Load() || g.MessageStore.IsOSPageCacheBusy()
}

func (g *gatedStore) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiters)
}

func (g *gatedStore) release(err error) {
	g.mu.Lock()
	ws := g.waiters
	g.waiters = nil
	g.mu.Unlock()
	for _, done := range ws {
		done(err)
	}
}

func TestSendSyncFlushRepliesOnlyAfterDurable(t *testing.T) {
	var gate *gatedStore
	db := startDataBroker(t, dataBrokerOptions{
		mutate: func(c *Config) { c.FlushDiskType = store.SyncFlush },
		wrap: func(s store.MessageStore) store.MessageStore {
			gate = &gatedStore{MessageStore: s}
			return gate
		},
	})
	c := remotingtest.Dial(t, db.addr)
	sent := c.Request(sendV1("TopicS", 0, []byte("durable"), ""))
	testutil.Eventually(t, "the send waiting for its flush", func() bool { return gate.waiting() == 1 })
	// A later request on the same connection is answered; the send is not (responses of one
	// connection leave in order, so an early send answer would have come first).
	other := c.Call(codec.NewRequest(codec.RequestGetMaxOffset, map[string]string{"topic": "TopicS", "queueId": "0"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), other.Code)
	require.Equal(t, "1", other.ExtFields["offset"], "stored before durable")
	if resp, err := c.TryAwait(sent, time.Millisecond); err == nil { // what has arrived by now
		t.Fatalf("send answered before its data was durable: %+v", resp)
	}
	gate.release(nil)
	resp := c.Await(sent)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code)
	require.NotEmpty(t, resp.ExtFields["msgId"])

	// A flush timeout answers FLUSH_DISK_TIMEOUT with the full header (stored, not durable).
	sent = c.Request(sendV1("TopicS", 0, []byte("late"), ""))
	testutil.Eventually(t, "the send waiting for its flush", func() bool { return gate.waiting() == 1 })
	gate.release(fmt.Errorf("group commit: %w", store.ErrFlushTimeout))
	resp = c.Await(sent)
	require.Equal(t, int32(codec.ResponseFlushDiskTimeout), resp.Code)
	var h codec.SendMessageResponseHeader
	require.NoError(t, h.Decode(resp.ExtFields))
	require.Equal(t, int64(1), h.QueueOffset)

	// A full group-commit queue answers SYSTEM_BUSY.
	sent = c.Request(sendV1("TopicS", 0, []byte("busy"), ""))
	testutil.Eventually(t, "the send waiting for its flush", func() bool { return gate.waiting() == 1 })
	gate.release(store.ErrFlushQueueFull)
	resp = c.Await(sent)
	require.Equal(t, int32(codec.ResponseSystemBusy), resp.Code)
	require.Equal(t, "[PCBUSY_CLEAN_QUEUE]broker busy, group commit queue full, start flow control for a while", resp.Remark)
	require.Equal(t, 1.0, scrapeOf(t, db.b.Registry()).value(`ringmq_broker_system_busy_total{reason="flush_queue_full"}`))

	// WAIT=false does not wait.
	sendOK(t, c, sendV1("TopicS", 0, []byte("fire and forget"), props("WAIT", "false")))
	require.Equal(t, 0, gate.waiting())
}

func TestSendSyncFlushFileStoreIsDurableWhenAnswered(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: true, mutate: func(c *Config) { c.FlushDiskType = store.SyncFlush }})
	fs, ok := db.b.store.(*store.Store)
	require.True(t, ok)
	c := remotingtest.Dial(t, db.addr)
	for i := range 5 {
		h := sendOK(t, c, sendV1("TopicS", 0, []byte("durable "+strconv.Itoa(i)), ""))
		rec := viewRecord(t, c, offsetOf(t, h.MsgID))
		require.GreaterOrEqual(t, fs.FlushedPhyOffset(), rec.PhysicalOffset+int64(rec.TotalSize))
	}
}

func TestSendPageCacheBusyAnswersSystemBusy(t *testing.T) {
	var gate *gatedStore
	db := startDataBroker(t, dataBrokerOptions{wrap: func(s store.MessageStore) store.MessageStore {
		gate = &gatedStore{MessageStore: s}
		return gate
	}})
	c := remotingtest.Dial(t, db.addr)
	gate.busy.Store(true)
	resp := c.Call(sendV1("TopicA", 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseSystemBusy), resp.Code)
	require.Equal(t, "[PC_SYNCHRONIZED]broker busy, start flow control for a while", resp.Remark)
	require.Equal(t, 1.0, scrapeOf(t, db.b.Registry()).value(`ringmq_broker_system_busy_total{reason="pc_synchronized"}`))
	require.Equal(t, int64(0), db.b.store.GetMaxOffsetInQueue("TopicA", 0))
	gate.busy.Store(false)
	sendOK(t, c, sendV1("TopicA", 0, []byte("x"), ""))
}
