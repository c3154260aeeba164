package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/clients"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/sendplane"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
)

// Control-plane tests over the wire: real brokers (harness or MemStore-backed), requests as
// codec frames through a netio.Client.

// ctlWait bounds every call in these tests.
const ctlWait = 10 * time.Second

// ctlClient is one client connection to a broker; requests the broker sends to it
// (NOTIFY_CONSUMER_IDS_CHANGED) are recorded.
type ctlClient struct {
	t    testing.TB
	addr string
	cl   *netio.Client

	mu       sync.Mutex
	received []*codec.RemotingCommand
}

func dialCtl(t testing.TB, addr string) *ctlClient {
	t.Helper()
	c := &ctlClient{t: t, addr: addr}
	cfg := netio.DefaultClientConfig()
	cfg.Handler = c
	cl, err := netio.NewClient(cfg, logtest.Discard())
	require.NoError(t, err)
	c.cl = cl
	t.Cleanup(func() { _ = cl.Close() })
	return c
}

func (c *ctlClient) OnOpen(netio.Conn)         {}
func (c *ctlClient) OnClose(netio.Conn, error) {}
func (c *ctlClient) OnRequest(_ netio.Conn, cmd *codec.RemotingCommand) {
	owned := *cmd // netio reuses the command, its body and its ext map: copy them
	owned.Body = append([]byte(nil), cmd.Body...)
	owned.ExtFields = maps.Clone(cmd.ExtFields)
	c.mu.Lock()
	c.received = append(c.received, &owned)
	c.mu.Unlock()
}

// notifies counts NOTIFY_CONSUMER_IDS_CHANGED received for group.
func (c *ctlClient) notifies(group string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, cmd := range c.received {
		if cmd.Code == int32(codec.RequestNotifyConsumerIdsChanged) && cmd.ExtFields["consumerGroup"] == group {
			require.True(c.t, cmd.IsOneway(), "notifications are oneway")
			n++
		}
	}
	return n
}

func (c *ctlClient) call(code codec.RequestCode, ext map[string]string, body []byte) *codec.RemotingCommand {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ctlWait)
	defer cancel()
	resp, err := c.cl.Invoke(ctx, c.addr, codec.NewRequest(code, ext, body))
	require.NoError(c.t, err)
	return resp
}

// requireResponse checks a response's code and remark.
func requireResponse(t testing.TB, resp *codec.RemotingCommand, code codec.ResponseCode, remark string) {
	t.Helper()
	require.Equal(t, int32(code), resp.Code, "remark: %s", resp.Remark)
	require.Equal(t, remark, resp.Remark)
}

func (c *ctlClient) heartbeat(clientID string, consumers []codec.ConsumerData, producers ...string) *codec.RemotingCommand {
	c.t.Helper()
	hb := codec.HeartbeatData{ClientID: clientID, ConsumerDataSet: consumers}
	for _, p := range producers {
		hb.ProducerDataSet = append(hb.ProducerDataSet, codec.ProducerData{GroupName: p})
	}
	body, err := hb.Encode()
	require.NoError(c.t, err)
	return c.call(codec.RequestHeartBeat, nil, body)
}

func (c *ctlClient) consumerList(group string) (*codec.RemotingCommand, []string) {
	c.t.Helper()
	resp := c.call(codec.RequestGetConsumerListByGroup, map[string]string{"consumerGroup": group}, nil)
	if resp.Code != int32(codec.ResponseSuccess) {
		return resp, nil
	}
	list, err := codec.DecodeConsumerListBody(resp.Body)
	require.NoError(c.t, err)
	return resp, list.ConsumerIDList
}

// startCtlBroker starts a broker on st (a MemStore when nil) without a name server.
// beforeStart may adjust the broker between New and Start.
func startCtlBroker(t testing.TB, st store.MessageStore, mutate func(*Config), beforeStart func(*Broker)) *Broker {
	t.Helper()
	cfg := testBrokerConfig(t)
	cfg.NamesrvEmbedded = false
	port, err := pickListenPort("127.0.0.1")
	require.NoError(t, err)
	cfg.ListenPort, cfg.HAListenPort = port, pickPort(t, port)
	if mutate != nil {
		mutate(&cfg)
	}
	if st == nil {
		sc := store.DefaultConfig(cfg.StorePathRootDir)
		sc.StoreHost = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
		sc.Slave = cfg.IsSlave() // as storeConfig sets it: a slave's store takes replicated bytes
		st = storetest.NewMemStore(sc, nil)
	}
	b, err := New(cfg, Deps{Logger: testLogger(t), Store: st})
	require.NoError(t, err)
	if beforeStart != nil {
		beforeStart(b)
	}
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	return b
}

// putMessages stores n messages in topic/queue directly and waits until the queue shows them.
func putMessages(t testing.TB, b *Broker, topic string, queueID int32, n int) {
	t.Helper()
	before := b.store.GetMaxOffsetInQueue(topic, queueID)
	for i := range n {
		m := &codec.Message{Topic: topic, QueueID: queueID, Body: []byte("body-" + strconv.Itoa(i)),
			BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:5000")}
		_, err := b.store.PutMessage(m)
		require.NoError(t, err)
	}
	testutil.Eventually(t, fmt.Sprintf("dispatch of %d messages", n),
		func() bool { return b.store.GetMaxOffsetInQueue(topic, queueID) == before+int64(n) })
}

// storeTimeAt reads the store timestamp of a queue entry's message from b's store (what the
// admin stats report as lastUpdateTimestamp / lastTimestamp / earliestMessageTimeStamp).
func storeTimeAt(t testing.TB, b *Broker, topic string, queueID int32, offset int64) int64 {
	t.Helper()
	rec, release, err := b.store.LookMessageByOffset(b.store.GetCommitLogOffsetInQueue(topic, queueID, offset))
	require.NoError(t, err)
	defer release()
	r, err := codec.DecodeRecord(rec, false)
	require.NoError(t, err)
	return r.StoreTimestamp
}

func TestHeartbeatConsumerListAndNotify(t *testing.T) {
	tb := startTestBroker(t, nil)
	a, bcl := dialCtl(t, tb.BrokerAddr), dialCtl(t, tb.BrokerAddr)
	subs := []codec.SubscriptionData{remotingtest.Subscription("TopicA", 1, "TagA"), remotingtest.Subscription("%RETRY%G1", 1)}
	consumers := []codec.ConsumerData{*remotingtest.ConsumerData("G1", subs...)}

	requireResponse(t, a.heartbeat("10.0.0.1@1", consumers, "PG1"), codec.ResponseSuccess, "")
	// The group and its retry topic were created; the retry topic reaches the name server.
	g, ok := tb.b.subscriptions.Get("G1")
	require.True(t, ok)
	retry, ok := tb.b.topics.Get("%RETRY%G1")
	require.True(t, ok)
	require.Equal(t, g.RetryQueueNums, retry.WriteQueueNums)
	require.Equal(t, metadata.PermRead|metadata.PermWrite, retry.Perm)
	testutil.Eventually(t, "retry topic registered", func() bool {
		_, ok := embeddedNamesrv(tb.b).TopicRoute("%RETRY%G1")
		return ok
	})
	testutil.Eventually(t, "the first NOTIFY_CONSUMER_IDS_CHANGED to a", func() bool { return a.notifies("G1") == 1 })
	require.Equal(t, 1.0, ctlCounterValue(t, tb.b.metrics.consumerNotifies))

	_, ids := a.consumerList("G1")
	require.Equal(t, []string{"10.0.0.1@1"}, ids)
	conn, ok := tb.b.producers.FindConn("10.0.0.1@1")
	require.True(t, ok)
	require.NotNil(t, conn)

	// A second member: both are told.
	requireResponse(t, bcl.heartbeat("10.0.0.2@2", consumers), codec.ResponseSuccess, "")
	testutil.Eventually(t, "both consumers notified of the change",
		func() bool { return a.notifies("G1") == 2 && bcl.notifies("G1") == 1 })
	_, ids = a.consumerList("G1")
	require.Equal(t, []string{"10.0.0.1@1", "10.0.0.2@2"}, ids)

	// A repeated heartbeat is no change.
	requireResponse(t, bcl.heartbeat("10.0.0.2@2", consumers), codec.ResponseSuccess, "")

	// The second member's connection closes: the first is told, the list shrinks.
	require.NoError(t, bcl.cl.Close())
	testutil.Eventually(t, "a third notification to a", func() bool { return a.notifies("G1") == 3 })
	_, ids = a.consumerList("G1")
	require.Equal(t, []string{"10.0.0.1@1"}, ids)

	// Unregister: no consumer left.
	requireResponse(t, a.call(codec.RequestUnregisterClient,
		map[string]string{"clientID": "10.0.0.1@1", "consumerGroup": "G1", "producerGroup": "PG1"}, nil), codec.ResponseSuccess, "")
	resp, _ := a.consumerList("G1")
	requireResponse(t, resp, codec.ResponseSystemError, "no consumer for this group, G1")
	_, ok = tb.b.producers.FindConn("10.0.0.1@1")
	require.False(t, ok)
	require.Equal(t, 3, a.notifies("G1"), "no notification without members to tell")

	// Bad input: an error naming the problem, the connection stays usable.
	resp = a.call(codec.RequestHeartBeat, nil, []byte(`{"clientID":`))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Contains(t, resp.Remark, "HeartbeatData")
	requireResponse(t, a.call(codec.RequestGetConsumerListByGroup, nil, nil), codec.ResponseSystemError,
		"the custom field <consumerGroup> is null")
	requireResponse(t, a.call(codec.RequestUnregisterClient, map[string]string{}, nil), codec.ResponseSystemError,
		"the custom field <clientID> is null")
}

func TestNotifyDisabledByGroupConfig(t *testing.T) {
	b := startCtlBroker(t, nil, nil, nil)
	quiet := codec.NewSubscriptionGroupConfig("Quiet")
	quiet.NotifyConsumerIdsChangedEnable = false
	require.NoError(t, b.subscriptions.Update(quiet))
	c := dialCtl(t, b.Addr())
	requireResponse(t, c.heartbeat("ip@1", []codec.ConsumerData{*remotingtest.ConsumerData("Quiet", remotingtest.Subscription("T", 1))}), codec.ResponseSuccess, "")
	requireResponse(t, c.heartbeat("ip@1", []codec.ConsumerData{*remotingtest.ConsumerData("Loud", remotingtest.Subscription("T", 1))}), codec.ResponseSuccess, "")
	testutil.Eventually(t, "the notification to Loud", func() bool { return c.notifies("Loud") == 1 })
	require.Equal(t, 0, c.notifies("Quiet"))
}

func TestLockBatchOverTheWire(t *testing.T) {
	b := startCtlBroker(t, nil, nil, nil)
	c := dialCtl(t, b.Addr())
	mqs := []codec.MessageQueue{{Topic: "T", BrokerName: "broker-test", QueueID: 0}, {Topic: "T", BrokerName: "broker-test", QueueID: 1}}
	lock := func(client string, mqs []codec.MessageQueue) string {
		body, err := (&codec.LockBatchRequestBody{ConsumerGroup: "G", ClientID: client, MQSet: mqs}).Encode()
		require.NoError(t, err)
		resp := c.call(codec.RequestLockBatchMQ, nil, body)
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code)
		return string(resp.Body)
	}
	require.Equal(t, `{"lockOKMQSet":[{"brokerName":"broker-test","queueId":0,"topic":"T"},{"brokerName":"broker-test","queueId":1,"topic":"T"}]}`,
		lock("A", mqs))
	require.Equal(t, `{"lockOKMQSet":[]}`, lock("B", mqs))
	body, err := (&codec.UnlockBatchRequestBody{ConsumerGroup: "G", ClientID: "A", MQSet: mqs[:1]}).Encode()
	require.NoError(t, err)
	requireResponse(t, c.call(codec.RequestUnlockBatchMQ, nil, body), codec.ResponseSuccess, "")
	require.Equal(t, `{"lockOKMQSet":[{"brokerName":"broker-test","queueId":0,"topic":"T"}]}`, lock("B", mqs))
	resp := c.call(codec.RequestLockBatchMQ, nil, []byte("not json"))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
}

// offsetRulesStore pins the queue figures QUERY_CONSUMER_OFFSET looks at.
type offsetRulesStore struct {
	store.MessageStore
	minOffset, maxOffset, phyOfFirst, maxPhy int64
}

func (s *offsetRulesStore) GetMinOffsetInQueue(string, int32) int64 { return s.minOffset }
func (s *offsetRulesStore) GetMaxOffsetInQueue(string, int32) int64 { return s.maxOffset }
func (s *offsetRulesStore) GetCommitLogOffsetInQueue(string, int32, int64) int64 {
	return s.phyOfFirst
}
func (s *offsetRulesStore) MaxPhyOffset() int64 { return s.maxPhy }

func TestQueryConsumerOffsetRules(t *testing.T) {
	const memory = 1000 // bytes of "RAM": 40 % = 400 bytes count as in memory
	cases := []struct {
		name       string
		stored     int64 // -1: nothing stored
		setZero    string
		minOffset  int64
		maxOffset  int64
		behind     int64 // CommitLog bytes after offset 0's message
		wantCode   codec.ResponseCode
		wantOffset int64
		wantRemark string
	}{
		{"stored offset", 42, "", 0, 100, 0, codec.ResponseSuccess, 42, ""},
		{"stored offset, setZero=false", 42, "false", 0, 100, 0, codec.ResponseSuccess, 42, ""},
		{"nothing stored, setZero=false", -1, "false", 0, 100, 10, codec.ResponseQueryNotFound, 0, clients.RemarkOffsetNotFoundNoZero},
		{"young queue, first message in memory", -1, "", 0, 100, 10, codec.ResponseSuccess, 0, ""},
		{"young queue, setZero=true", -1, "true", 0, 100, 400, codec.ResponseSuccess, 0, ""},
		{"first message no longer in memory", -1, "true", 0, 100, 401, codec.ResponseQueryNotFound, 0, clients.RemarkOffsetNotFound},
		{"queue no longer starts at 0", -1, "true", 5, 100, 10, codec.ResponseQueryNotFound, 0, clients.RemarkOffsetNotFound},
		{"empty queue", -1, "true", 0, 0, 0, codec.ResponseQueryNotFound, 0, clients.RemarkOffsetNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port, err := pickListenPort("127.0.0.1")
			require.NoError(t, err)
			sc := store.DefaultConfig(t.TempDir())
			sc.StoreHost = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
			st := &offsetRulesStore{MessageStore: storetest.NewMemStore(sc, nil), minOffset: tc.minOffset,
				maxOffset: tc.maxOffset, phyOfFirst: 5000, maxPhy: 5000 + tc.behind}
			b := startCtlBroker(t, st, func(c *Config) { c.ListenPort, c.HAListenPort = port, pickPort(t, port) }, func(b *Broker) { b.ctl.totalMemoryBytes = memory })
			if tc.stored >= 0 {
				b.offsets.Commit("G", "T", 1, tc.stored)
			}
			ext := map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "1"}
			if tc.setZero != "" {
				ext["setZeroIfNotFound"] = tc.setZero
			}
			resp := dialCtl(t, b.Addr()).call(codec.RequestQueryConsumerOffset, ext, nil)
			requireResponse(t, resp, tc.wantCode, tc.wantRemark)
			if tc.wantCode == codec.ResponseSuccess {
				require.Equal(t, map[string]string{"offset": strconv.FormatInt(tc.wantOffset, 10)}, resp.ExtFields)
			}
		})
	}
}

func TestQueryAndUpdateConsumerOffsetOverTheWire(t *testing.T) {
	b := startCtlBroker(t, nil, nil, nil)
	c := dialCtl(t, b.Addr())
	putMessages(t, b, "T", 0, 3)

	// A new group on a young queue starts at 0.
	resp := c.call(codec.RequestQueryConsumerOffset, map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "0"}, nil)
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, "0", resp.ExtFields["offset"])
	requireResponse(t, c.call(codec.RequestQueryConsumerOffset, map[string]string{"consumerGroup": "G", "topic": "T"}, nil),
		codec.ResponseSystemError, "the custom field <queueId> is null")

	update := func(ext map[string]string) *codec.RemotingCommand {
		return c.call(codec.RequestUpdateConsumerOffset, ext, nil)
	}
	full := map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "0", "commitOffset": "2"}
	requireResponse(t, update(full), codec.ResponseSubscriptionGroupNotExist, "Group G not exist!")
	_, err := b.subscriptions.FindOrCreate("G")
	require.NoError(t, err)
	requireResponse(t, update(map[string]string{"consumerGroup": "G", "topic": "Nope", "queueId": "0", "commitOffset": "2"}),
		codec.ResponseTopicNotExist, "Topic Nope not exist!")
	_, err = b.topics.CreateInSendMessageBack("T", 4, 6, 0)
	require.NoError(t, err)
	requireResponse(t, update(map[string]string{"consumerGroup": "G", "topic": "T", "commitOffset": "2"}),
		codec.ResponseInvalidParameter, "QueueId is null, topic is T")
	requireResponse(t, update(map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "0"}),
		codec.ResponseInvalidParameter, "Offset is null, topic is T")
	requireResponse(t, update(map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "x", "commitOffset": "2"}),
		codec.ResponseInvalidParameter, `the custom field <queueId> has a bad value: "x"`)
	requireResponse(t, update(map[string]string{"topic": "T", "queueId": "0", "commitOffset": "2"}),
		codec.ResponseSystemError, "the custom field <consumerGroup> is null")
	requireResponse(t, update(full), codec.ResponseSuccess, "")
	require.Equal(t, int64(2), b.offsets.Query("G", "T", 0))

	resp = c.call(codec.RequestQueryConsumerOffset, map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "0", "setZeroIfNotFound": "false"}, nil)
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, "2", resp.ExtFields["offset"])
}

// adminCall sends an admin request and checks for SUCCESS.
func (c *ctlClient) adminOK(code codec.RequestCode, ext map[string]string, body []byte) *codec.RemotingCommand {
	c.t.Helper()
	resp := c.call(code, ext, body)
	requireResponse(c.t, resp, codec.ResponseSuccess, "")
	return resp
}

func createTopicExt(topic string, queues int) map[string]string {
	h := codec.UpdateAndCreateTopicRequestHeader{Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: int32(queues),
		WriteQueueNums: int32(queues), Perm: 6, TopicFilterType: codec.TopicFilterSingleTag}
	ext := map[string]string{}
	h.Encode(ext)
	return ext
}

func TestAdminTopicLifecycleOverTheWire(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)

	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("AdminT", 4), nil)
	// The name server knows the route when the call returns.
	route, ok := embeddedNamesrv(b).TopicRoute("AdminT")
	require.True(t, ok)
	require.Equal(t, []codec.QueueData{{BrokerName: "broker-test", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}}, route.QueueDatas)
	require.Equal(t, tb.BrokerAddr, route.BrokerDatas[0].BrokerAddrs[0])
	data, err := os.ReadFile(filepath.Join(tb.cfg.StorePathRootDir, "config", "topics.json"))
	require.NoError(t, err)
	require.Contains(t, string(data), `"topicName": "AdminT"`)

	// Refusals.
	requireResponse(t, c.call(codec.RequestUpdateAndCreateTopic, createTopicExt("TBW102", 4), nil),
		codec.ResponseSystemError, "The topic[TBW102] is conflict with system topic.")
	requireResponse(t, c.call(codec.RequestUpdateAndCreateTopic, createTopicExt("TestCluster", 4), nil),
		codec.ResponseSystemError, "The topic[TestCluster] is conflict with system topic.")
	requireResponse(t, c.call(codec.RequestUpdateAndCreateTopic, createTopicExt("a b", 4), nil),
		codec.ResponseSystemError, "The specified topic[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
	ext := createTopicExt("X", 4)
	delete(ext, "perm")
	requireResponse(t, c.call(codec.RequestUpdateAndCreateTopic, ext, nil), codec.ResponseSystemError, "the custom field <perm> is null")
	ext = createTopicExt("X", 4)
	ext["readQueueNums"] = "-1"
	requireResponse(t, c.call(codec.RequestUpdateAndCreateTopic, ext, nil), codec.ResponseInvalidParameter, "readQueueNums -1 must not be negative")
	ext = createTopicExt("X", 4)
	ext["attributes"] = "-message.type"
	requireResponse(t, c.call(codec.RequestUpdateAndCreateTopic, ext, nil), codec.ResponseSystemError,
		"only add attribute is supported while creating topic. key: message.type")
	require.False(t, b.topics.Contains("X"))

	// Attributes (5.x admin): added on create, changed and removed on update.
	ext = createTopicExt("AttrT", 1)
	ext["attributes"] = "+message.type=FIFO,+k=v"
	c.adminOK(codec.RequestUpdateAndCreateTopic, ext, nil)
	ext["attributes"] = "-k"
	c.adminOK(codec.RequestUpdateAndCreateTopic, ext, nil)
	attr, _ := b.topics.Get("AttrT")
	require.Equal(t, map[string]string{"message.type": "FIFO"}, attr.Attributes)

	// Reads.
	resp := c.adminOK(codec.RequestGetAllTopicConfig, nil, nil)
	w, err := codec.DecodeTopicConfigSerializeWrapper(resp.Body)
	require.NoError(t, err)
	require.Equal(t, b.topics.Snapshot(), w)
	resp = c.adminOK(codec.RequestGetTopicConfig, map[string]string{"topic": "AdminT"}, nil)
	require.Equal(t, `{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"AdminT","topicSysFlag":0,"writeQueueNums":4}`,
		string(resp.Body))
	requireResponse(t, c.call(codec.RequestGetTopicConfig, map[string]string{"topic": "Nope"}, nil),
		codec.ResponseSystemError, "No topic in this broker. topic: Nope")

	// Stats with messages in queue 1.
	putMessages(t, b, "AdminT", 1, 2)
	lastTime := storeTimeAt(t, b, "AdminT", 1, 1)
	require.Positive(t, lastTime)
	resp = c.adminOK(codec.RequestGetTopicStatsInfo, map[string]string{"topic": "AdminT"}, nil)
	require.Equal(t, `{"offsetTable":{`+
		`{"brokerName":"broker-test","queueId":0,"topic":"AdminT"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},`+
		`{"brokerName":"broker-test","queueId":1,"topic":"AdminT"}:{"lastUpdateTimestamp":`+strconv.FormatInt(lastTime, 10)+`,"maxOffset":2,"minOffset":0},`+
		`{"brokerName":"broker-test","queueId":2,"topic":"AdminT"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0},`+
		`{"brokerName":"broker-test","queueId":3,"topic":"AdminT"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}}}`,
		string(resp.Body))
	requireResponse(t, c.call(codec.RequestGetTopicStatsInfo, map[string]string{"topic": "Nope"}, nil),
		codec.ResponseTopicNotExist, "topic[Nope] not exist")

	// A group with a committed offset.
	group := codec.NewSubscriptionGroupConfig("AdminG")
	group.RetryQueueNums = 2
	gbody, err := group.Encode()
	require.NoError(t, err)
	c.adminOK(codec.RequestUpdateAndCreateSubscriptionGroup, nil, gbody)
	c.adminOK(codec.RequestUpdateConsumerOffset, map[string]string{"consumerGroup": "AdminG", "topic": "AdminT", "queueId": "1", "commitOffset": "1"}, nil)
	firstTime := storeTimeAt(t, b, "AdminT", 1, 0)
	resp = c.adminOK(codec.RequestGetConsumeStats, map[string]string{"consumerGroup": "AdminG", "topic": "AdminT"}, nil)
	require.Contains(t, string(resp.Body), `{"brokerName":"broker-test","queueId":1,"topic":"AdminT"}:{"brokerOffset":2,"consumerOffset":1,"lastTimestamp":`+
		strconv.FormatInt(firstTime, 10)+`,"pullOffset":1}`)
	require.True(t, strings.HasPrefix(string(resp.Body), `{"consumeTps":0.0,"offsetTable":{`))
	statsAll := c.adminOK(codec.RequestGetConsumeStats, map[string]string{"consumerGroup": "AdminG"}, nil)
	require.Equal(t, string(resp.Body), string(statsAll.Body), "no topic: every topic the group has offsets in")
	resp = c.adminOK(codec.RequestGetAllConsumerOffset, nil, nil)
	require.Equal(t, `{"offsetTable":{"AdminT@AdminG":{1:1}}}`, string(resp.Body))
	resp = c.adminOK(codec.RequestQueryTopicConsumeByWho, map[string]string{"topic": "AdminT"}, nil)
	require.Equal(t, `{"groupList":["AdminG"]}`, string(resp.Body))
	resp = c.adminOK(codec.RequestGetAllSubscriptionGroupConfig, nil, nil)
	sw, err := codec.DecodeSubscriptionGroupWrapper(resp.Body)
	require.NoError(t, err)
	require.Equal(t, int32(2), sw.SubscriptionGroupTable["AdminG"].RetryQueueNums)
	resp = c.adminOK(codec.RequestGetSubscriptionGroupConfig, map[string]string{"group": "AdminG"}, nil)
	require.Equal(t, string(gbody), string(resp.Body))

	// Delete the topic: config, offsets, queues.
	c.adminOK(codec.RequestDeleteTopicInBroker, map[string]string{"topic": "AdminT"}, nil)
	require.False(t, b.topics.Contains("AdminT"))
	require.Equal(t, int64(-1), b.offsets.Query("AdminG", "AdminT", 1))
	require.Equal(t, int64(0), b.store.GetMaxOffsetInQueue("AdminT", 1))
	requireResponse(t, c.call(codec.RequestDeleteTopicInBroker, map[string]string{"topic": "SCHEDULE_TOPIC_XXXX"}, nil),
		codec.ResponseSystemError, "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic.")
	require.True(t, b.topics.Contains("SCHEDULE_TOPIC_XXXX"))

	// Delete the group, with its offsets.
	b.offsets.Commit("AdminG", "AttrT", 0, 9)
	c.adminOK(codec.RequestDeleteSubscriptionGroup, map[string]string{"groupName": "AdminG", "cleanOffset": "true"}, nil)
	require.False(t, b.subscriptions.Contains("AdminG"))
	require.Empty(t, b.offsets.TopicsByGroup("AdminG"))
	requireResponse(t, c.call(codec.RequestGetSubscriptionGroupConfig, map[string]string{"group": "AdminG"}, nil),
		codec.ResponseSubscriptionGroupNotExist, "The consumer group AdminG not exist")
}

// TestRocketmqVersionKey: rocketmqVersion changes the version every answer carries and the one
// brokerStatus reports, and the key refuses what is not a version name.
func TestRocketmqVersionKey(t *testing.T) {
	t.Cleanup(func() { codec.SetServerVersion(codec.DefaultServerVersion) })
	tb := startTestBroker(t, func(c *Config) {
		_, err := c.Set("rocketmqVersion", "V5_3_3", 0)
		require.NoError(t, err)
	})
	c := dialCtl(t, tb.BrokerAddr)
	resp := c.adminOK(codec.RequestGetBrokerRuntimeInfo, nil, nil)
	require.Equal(t, int32(479), resp.Version)
	kv, err := codec.DecodeKVTable(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "V5_3_3", kv.Table["brokerVersionDesc"])
	require.Equal(t, "479", kv.Table["brokerVersion"])
	require.Equal(t, int32(479), c.heartbeat("10.1.1.1@1", nil, "P").Version, "clients cache it from heartbeats")

	cfg := DefaultConfig()
	_, err = cfg.Set("rocketmqVersion", "5.3.3", 0)
	require.ErrorContains(t, err, "rocketmqVersion")
	cfg.RocketmqVersion = 9
	require.ErrorContains(t, cfg.Validate(), "rocketmqVersion")
}

func TestAdminRuntimeConfigAndConnections(t *testing.T) {
	tb := startTestBroker(t, nil)
	b := tb.b
	c := dialCtl(t, tb.BrokerAddr)
	putMessages(t, b, "RT", 0, 3)

	resp := c.adminOK(codec.RequestGetBrokerRuntimeInfo, nil, nil)
	kv, err := codec.DecodeKVTable(resp.Body)
	require.NoError(t, err)
	require.Equal(t, "V4_9_8", kv.Table["brokerVersionDesc"], "RocketMQ 4.9.8 by default")
	require.Equal(t, "409", kv.Table["brokerVersion"])
	require.Equal(t, int32(409), resp.Version)
	require.Equal(t, "3", kv.Table["msgPutTotalTodayNow"])
	require.Equal(t, strconv.FormatInt(b.store.MaxPhyOffset(), 10), kv.Table["commitLogMaxOffset"])
	require.Equal(t, "0", kv.Table["commitLogMinOffset"])
	require.Equal(t, strconv.FormatInt(b.ctl.bootTime.UnixMilli(), 10), kv.Table["bootTimestamp"])
	require.True(t, strings.HasPrefix(kv.Table["runtime"], "[ 0 days, 0 hours, 0 minutes, "), kv.Table["runtime"])
	require.Len(t, strings.Fields(kv.Table["putTps"]), 3)
	require.Equal(t, strconv.FormatInt(storeTimeAt(t, b, "RT", 0, 0), 10), kv.Table["earliestMessageTimeStamp"])

	resp = c.adminOK(codec.RequestGetBrokerConfig, nil, nil)
	require.Contains(t, string(resp.Body), "brokerName=broker-test\n")
	require.Contains(t, string(resp.Body), "listenPort="+strconv.Itoa(b.cfg.ListenPort)+"\n")
	require.Contains(t, string(resp.Body), "flushConsumerOffsetInterval=5000\n")
	// Every key the broker reads: its own, and every RocketMQ 4.9.8 broker key (by the field name
	// Java lists it under), each once.
	lines := strings.Split(strings.TrimSpace(string(resp.Body)), "\n")
	listed := map[string]bool{}
	for _, l := range lines {
		key, _, ok := strings.Cut(l, "=")
		require.True(t, ok, l)
		require.False(t, listed[key], "listed twice: %s", key)
		listed[key] = true
	}
	for _, key := range append(PropertyNames(), conf.RocketMQBrokerKeys()...) {
		if n, ok := javaFieldNames[key]; ok {
			key = n
		}
		if key == "rocketmqHome" || strings.HasPrefix(key, "dLeger") || key == "preferredLeaderId" ||
			key == "readOnlyCommitLogStorePaths" || key == "storePathDLedgerCommitLog" {
			continue // null in Java unless set (ROCKETMQ_HOME for rocketmqHome): not listed
		}
		require.True(t, listed[key], key)
	}
	var version codec.DataVersion
	require.NoError(t, json.Unmarshal([]byte(resp.ExtFields["version"]), &version))

	resp = c.adminOK(codec.RequestGetAllDelayOffset, nil, nil)
	require.Equal(t, `{"offsetTable":{}}`, string(resp.Body))
	// The schedule service's live cursors (broker/delay), not the file (written every 10 s and
	// at shutdown): a level is listed once its cursor moved, here by one delivery at level 1 (1 s).
	p, q := sendplane.AppendScheduleProperties(nil, 1, "DelayedRT", 0)
	_, err = b.store.PutMessage(&codec.Message{Topic: metadata.ScheduleTopic, QueueID: q, Body: []byte("later"),
		BornTimestamp: time.Now().UnixMilli(), BornHost: netip.MustParseAddrPort("127.0.0.1:5000"), Properties: p})
	require.NoError(t, err)
	testutil.Eventually(t, "level 1's cursor past the delivered message", func() bool {
		return string(c.adminOK(codec.RequestGetAllDelayOffset, nil, nil).Body) == `{"offsetTable":{1:1}}`
	})
	testutil.Eventually(t, "the copy in its real topic", func() bool { return b.store.GetMaxOffsetInQueue("DelayedRT", 0) == 1 })

	requireResponse(t, c.call(codec.RequestGetConsumerConnectionList, map[string]string{"consumerGroup": "CG"}, nil),
		codec.ResponseConsumerNotOnline, "the consumer group[CG] not online")
	requireResponse(t, c.heartbeat("10.1.1.1@7", []codec.ConsumerData{*remotingtest.ConsumerData("CG", remotingtest.Subscription("RT", 3, "TagA"))}, "PG"),
		codec.ResponseSuccess, "")
	resp = c.adminOK(codec.RequestGetConsumerConnectionList, map[string]string{"consumerGroup": "CG"}, nil)
	var cc struct {
		ConnectionSet []struct {
			ClientAddr, ClientID, Language string
			Version                        int32
		}
		ConsumeFromWhere, ConsumeType, MessageModel string
		SubscriptionTable                           map[string]codec.SubscriptionData
	}
	require.NoError(t, json.Unmarshal(resp.Body, &cc))
	require.Len(t, cc.ConnectionSet, 1)
	require.Equal(t, "10.1.1.1@7", cc.ConnectionSet[0].ClientID)
	require.Equal(t, "JAVA", cc.ConnectionSet[0].Language) // netio requests speak as a Java peer
	require.Equal(t, codec.ServerVersion(), cc.ConnectionSet[0].Version)
	require.Equal(t, "CONSUME_FROM_LAST_OFFSET", cc.ConsumeFromWhere)
	require.Equal(t, "CONSUME_PASSIVELY", cc.ConsumeType)
	require.Equal(t, "CLUSTERING", cc.MessageModel)
	require.Equal(t, codec.TagCodeSet{codec.JavaHashCode("TagA")}, cc.SubscriptionTable["RT"].CodeSet)
	resp = c.adminOK(codec.RequestGetProducerConnectionList, map[string]string{"producerGroup": "PG"}, nil)
	require.Contains(t, string(resp.Body), `"clientId":"10.1.1.1@7"`)
	resp = c.adminOK(codec.RequestQueryTopicConsumeByWho, map[string]string{"topic": "RT"}, nil)
	require.Equal(t, `{"groupList":["CG"]}`, string(resp.Body))
	requireResponse(t, c.call(codec.RequestQueryTopicConsumeByWho, nil, nil), codec.ResponseSystemError,
		"the custom field <topic> is null")
}

func TestControlStateSurvivesRestart(t *testing.T) {
	tb := startTestBroker(t, nil)
	c := dialCtl(t, tb.BrokerAddr)
	c.adminOK(codec.RequestUpdateAndCreateTopic, createTopicExt("Durable", 2), nil)
	requireResponse(t, c.heartbeat("ip@1", []codec.ConsumerData{*remotingtest.ConsumerData("DG", remotingtest.Subscription("Durable", 1))}), codec.ResponseSuccess, "")
	putMessages(t, tb.b, "Durable", 1, 17) // a committed offset lies within the queue
	c.adminOK(codec.RequestUpdateConsumerOffset, map[string]string{"consumerGroup": "DG", "topic": "Durable", "queueId": "1", "commitOffset": "17"}, nil)
	require.NoError(t, c.cl.Close()) // clients leave first, so that the port is free at once

	tb.restart(t)
	b := tb.b
	tc, ok := b.topics.Get("Durable")
	require.True(t, ok)
	require.Equal(t, int32(2), tc.WriteQueueNums)
	require.True(t, b.topics.Contains("%RETRY%DG"), "retry topic created by a heartbeat, written by the flusher")
	require.True(t, b.subscriptions.Contains("DG"), "auto-created group, written by the flusher")
	require.Equal(t, int64(17), b.offsets.Query("DG", "Durable", 1), "offsets written at shutdown")
	route, ok := embeddedNamesrv(b).TopicRoute("Durable")
	require.True(t, ok, "registered again on start")
	require.Equal(t, tb.BrokerAddr, route.BrokerDatas[0].BrokerAddrs[0])
}

func TestConsumerOffsetsFlushedPeriodically(t *testing.T) {
	b := startCtlBroker(t, nil, func(c *Config) { c.FlushConsumerOffsetInterval = 20 * time.Millisecond }, nil)
	path := filepath.Join(b.cfg.StorePathRootDir, "config", "consumerOffset.json")
	b.offsets.Commit("G", "T", 3, 77)
	testutil.Eventually(t, "consumerOffset.json holding the committed offset", func() bool {
		data, err := os.ReadFile(path)
		return err == nil && string(data) == "{\n\t\"offsetTable\":{\n\t\t\"T@G\":{3:77}\n\t}\n}"
	})
	testutil.Eventually(t, "a consumerOffset.json write", func() bool {
		return ctlCounterValue(t, b.metrics.configWrites.WithLabelValues("consumerOffset.json", "ok")) >= 1
	})
}

func TestPeriodicRegistration(t *testing.T) {
	tb := startTestBroker(t, func(c *Config) { c.RegisterNameServerPeriod = 50 * time.Millisecond })
	start := tb.b.ctl.registrar.completedRounds()
	testutil.Eventually(t, "three more registration rounds",
		func() bool { return tb.b.ctl.registrar.completedRounds() >= start+3 })
	require.GreaterOrEqual(t, ctlCounterValue(t, tb.b.metrics.registrations.WithLabelValues("ok")), 4.0)
	require.Zero(t, ctlCounterValue(t, tb.b.metrics.registrations.WithLabelValues("error")))
	// Registration with a second, external name server in namesrvAddr as well.
	other := startTestBroker(t, nil)
	tb2 := startTestBroker(t, func(c *Config) {
		c.NamesrvEmbedded = false
		c.NamesrvAddr = other.NamesrvAddr + ";" + tb.NamesrvAddr
		c.BrokerName = "broker-two"
	})
	for _, ns := range []*testBroker{tb, other} {
		route, ok := embeddedNamesrv(ns.b).TopicRoute(metadata.AutoCreateTopicKeyTopic)
		require.True(t, ok)
		var names []string
		for _, bd := range route.BrokerDatas {
			names = append(names, bd.BrokerName)
		}
		require.Contains(t, names, "broker-two")
	}
	require.Empty(t, tb2.NamesrvAddr)
}

// The embedded name server comes from Deps.Namesrv (package launch in production): without it a
// broker with namesrvEmbedded=true is not built.
func TestEmbeddedNamesrvNeedsDepsNamesrv(t *testing.T) {
	cfg := testBrokerConfig(t)
	_, err := New(cfg, Deps{Logger: testLogger(t)})
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "namesrvEmbedded")
	var asked []EmbeddedNamesrvSpec
	cfg.NamesrvListenPort = 19876
	_, err = New(cfg, Deps{Logger: testLogger(t), Namesrv: func(spec EmbeddedNamesrvSpec) (EmbeddedNamesrv, error) {
		asked = append(asked, spec)
		return nil, errors.New("no name server here")
	}})
	require.ErrorContains(t, err, "embedded name server: no name server here")
	require.Len(t, asked, 1)
	require.Equal(t, "127.0.0.1:19876", asked[0].ListenAddr, "bindHost: the loopback brokerIP1")
	require.Equal(t, filepath.Join(cfg.StorePathRootDir, "namesrv", "kvConfig.json"), asked[0].KVConfigPath)
	require.Equal(t, cfg.NetEngine.String(), asked[0].NetEngine)
}

// ctlCounterValue reads a counter's current value.
func ctlCounterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
