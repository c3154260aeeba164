package namesrv

import (
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

func brokerA(compressed bool) *fakeBroker {
	return &fakeBroker{
		cluster: "DefaultCluster", name: "broker-a", addr: "127.0.0.1:10911", haAddr: "127.0.0.1:10912",
		counter: 1, compressed: compressed, crc: true,
		topics: []codec.TopicConfig{topicConfig("TopicTest", 4, 4, 6), topicConfig("TBW102", 8, 8, 7)},
	}
}

const (
	routeTopicTestBare = `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],` +
		`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	routeTopicTestQuoted = `{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],` +
		`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
)

// Register a broker with both body forms and every sender version that changes the
// compressed form, then read the exact route back in both key styles.
func TestRegisterThenRoute(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		for _, tc := range []struct {
			name       string
			compressed bool
			version    int32
		}{
			{"json", false, versionJava5},
			{"compressed 5.x", true, versionJava5},
			{"compressed 4.9", true, 399},
		} {
			t.Run(tc.name, func(t *testing.T) {
				n := startNamesrv(t, testConfig(t, engine))
				c := dial(t, n)
				b := brokerA(tc.compressed)
				b.version = tc.version
				resp := b.register(t, c)
				require.Empty(t, resp.ExtFields, "a master gets no masterAddr/haServerAddr")
				require.Empty(t, resp.Body, "no ORDER_TOPIC_CONFIG namespace yet")

				resp = c.call(routeRequest("TopicTest", versionGoClient, false))
				requireCode(t, resp, codec.ResponseSuccess, "")
				require.Equal(t, routeTopicTestBare, string(resp.Body))

				resp = c.call(routeRequest("TopicTest", versionV4_9_4, false))
				require.Equal(t, routeTopicTestQuoted, string(resp.Body))
				resp = c.call(routeRequest("TopicTest", versionGoClient, true))
				require.Equal(t, routeTopicTestQuoted, string(resp.Body))

				resp = c.call(routeRequest("TBW102", versionGoClient, false))
				requireCode(t, resp, codec.ResponseSuccess, "")
				rd, err := codec.DecodeTopicRouteData(resp.Body)
				require.NoError(t, err)
				require.Equal(t, []codec.QueueData{{BrokerName: "broker-a", Perm: 7, ReadQueueNums: 8, WriteQueueNums: 8}}, rd.QueueDatas)

				resp = c.call(routeRequest("NoSuchTopic", versionGoClient, false))
				requireCode(t, resp, codec.ResponseTopicNotExist, "No topic route info in name server for the topic: NoSuchTopic")
				require.Empty(t, resp.Body)
			})
		}
	})
}

func TestRegisterSlaveLearnsMaster(t *testing.T) {
	n := startNamesrv(t, testConfig(t, "gnet"))
	master := brokerA(false)
	master.register(t, dial(t, n))
	slave := brokerA(true)
	slave.id, slave.addr, slave.haAddr = 1, "127.0.0.2:10911", "127.0.0.2:10912"
	resp := slave.register(t, dial(t, n))
	require.Equal(t, map[string]string{"masterAddr": "127.0.0.1:10911", "haServerAddr": "127.0.0.1:10912"}, resp.ExtFields)

	c := dial(t, n)
	resp = c.call(routeRequest("TopicTest", versionGoClient, false))
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],`+
		`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`, string(resp.Body))
}

func TestRegisterRejects(t *testing.T) {
	n := startNamesrv(t, testConfig(t, "std"))
	c := dial(t, n)

	req := brokerA(false).registerRequest(t)
	req.ExtFields["bodyCrc32"] = "12345"
	requireCode(t, c.call(req), codec.ResponseSystemError, "crc32 not match")

	req = brokerA(true).registerRequest(t)
	req.Body = append([]byte(nil), req.Body[:len(req.Body)/2]...)
	delete(req.ExtFields, "bodyCrc32")
	resp := c.call(req)
	require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code))
	require.True(t, strings.HasPrefix(resp.Remark, "Failed to decode RegisterBrokerBody: "), resp.Remark)

	req = brokerA(false).registerRequest(t)
	delete(req.ExtFields, "brokerAddr")
	resp = c.call(req)
	require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code))
	require.Contains(t, resp.Remark, `"brokerAddr"`)

	single := brokerA(false)
	single.topics = single.topics[:1]
	requireCode(t, c.call(single.registerRequest(t)), codec.ResponseSystemError, "register broker failed")

	resp = c.call(request(codec.RequestGetAllTopicListFromNameServer, nil, nil))
	require.Equal(t, `{"topicList":[]}`, string(resp.Body), "nothing was registered")
}

// A register request without a body registers the address with no topics (Java does the
// same); an old broker (< V3_0_11) sends a bare topic wrapper.
func TestRegisterBodyVariants(t *testing.T) {
	n := startNamesrv(t, testConfig(t, "gnet"))
	c := dial(t, n)
	req := brokerA(false).registerRequest(t)
	req.Body = nil
	delete(req.ExtFields, "bodyCrc32")
	requireCode(t, c.call(req), codec.ResponseSuccess, "")
	ci, err := codec.DecodeClusterInfo(c.call(request(codec.RequestGetBrokerClusterInfo, nil, nil)).Body)
	require.NoError(t, err)
	require.Equal(t, map[int64]string{0: "127.0.0.1:10911"}, ci.BrokerAddrTable["broker-a"].BrokerAddrs)

	wrapper := codec.TopicConfigSerializeWrapper{
		DataVersion:      codec.DataVersion{Counter: 2},
		TopicConfigTable: map[string]codec.TopicConfig{"Old": topicConfig("Old", 2, 2, 6), "Older": topicConfig("Older", 1, 1, 6)},
	}
	body, err := wrapper.Encode(false)
	require.NoError(t, err)
	req = brokerA(false).registerRequest(t)
	req.Version = 30
	req.Body = body
	delete(req.ExtFields, "bodyCrc32")
	requireCode(t, c.call(req), codec.ResponseSuccess, "")
	resp := c.call(request(codec.RequestGetAllTopicListFromNameServer, nil, nil))
	require.Equal(t, `{"topicList":["Old","Older"]}`, string(resp.Body))
}

func TestClusterInfoTopicListsAndDelete(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		n := startNamesrv(t, testConfig(t, engine))
		c := dial(t, n)
		brokerA(true).register(t, c)
		b := &fakeBroker{cluster: "C2", name: "broker-b", addr: "127.0.0.3:10911", haAddr: "127.0.0.3:10912",
			counter: 3, topics: []codec.TopicConfig{topicConfig("TopicTest", 2, 2, 6), topicConfig("OnlyB", 1, 1, 6)}}
		b.register(t, c)

		resp := c.call(request(codec.RequestGetBrokerClusterInfo, nil, nil))
		requireCode(t, resp, codec.ResponseSuccess, "")
		require.Equal(t, `{"brokerAddrTable":{`+
			`"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},`+
			`"broker-b":{"brokerAddrs":{0:"127.0.0.3:10911"},"brokerName":"broker-b","cluster":"C2","enableActingMaster":false}},`+
			`"clusterAddrTable":{"C2":["broker-b"],"DefaultCluster":["broker-a"]}}`, string(resp.Body))
		req := request(codec.RequestGetBrokerClusterInfo, nil, nil)
		req.Version = versionV4_9_4
		resp = c.call(req)
		require.Contains(t, string(resp.Body), `"brokerAddrs":{"0":"127.0.0.1:10911"}`)
		_, err := codec.DecodeClusterInfo(resp.Body)
		require.NoError(t, err)
		require.True(t, json.Valid(resp.Body))

		resp = c.call(request(codec.RequestGetAllTopicListFromNameServer, nil, nil))
		requireCode(t, resp, codec.ResponseSuccess, "")
		require.Equal(t, `{"topicList":["OnlyB","TBW102","TopicTest"]}`, string(resp.Body))

		resp = c.call(request(codec.RequestGetTopicsByCluster, map[string]string{"cluster": "C2"}, nil))
		require.Equal(t, `{"topicList":["OnlyB","TopicTest"]}`, string(resp.Body))
		resp = c.call(request(codec.RequestGetTopicsByCluster, nil, nil))
		require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code))
		require.Contains(t, resp.Remark, `"cluster"`)

		resp = c.call(request(codec.RequestGetSystemTopicListFromNS, nil, nil))
		require.Equal(t, `{"brokerAddr":"127.0.0.1:10911","topicList":["C2","DefaultCluster","broker-a","broker-b"]}`, string(resp.Body))

		// Delete in one cluster: broker-a's queues go, broker-b's stay.
		resp = c.call(request(codec.RequestDeleteTopicInNamesrv, map[string]string{"topic": "TopicTest", "clusterName": "DefaultCluster"}, nil))
		requireCode(t, resp, codec.ResponseSuccess, "")
		rd, err := codec.DecodeTopicRouteData(c.call(routeRequest("TopicTest", versionGoClient, false)).Body)
		require.NoError(t, err)
		require.Equal(t, []codec.QueueData{{BrokerName: "broker-b", Perm: 6, ReadQueueNums: 2, WriteQueueNums: 2}}, rd.QueueDatas)
		// Delete everywhere (the Go admin sends only the topic).
		requireCode(t, c.call(request(codec.RequestDeleteTopicInNamesrv, map[string]string{"topic": "TopicTest"}, nil)), codec.ResponseSuccess, "")
		requireCode(t, c.call(routeRequest("TopicTest", versionGoClient, false)), codec.ResponseTopicNotExist,
			"No topic route info in name server for the topic: TopicTest")
		resp = c.call(request(codec.RequestGetAllTopicListFromNameServer, nil, nil))
		require.Equal(t, `{"topicList":["OnlyB","TBW102"]}`, string(resp.Body))
	})
}

func TestUnregisterAndConnectionClose(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		n := startNamesrv(t, testConfig(t, engine))
		admin := dial(t, n)

		// UNREGISTER_BROKER from the broker's own connection.
		bc := dial(t, n)
		brokerA(false).register(t, bc)
		requireCode(t, bc.call(request(codec.RequestUnregisterBroker, map[string]string{
			"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0",
		}, nil)), codec.ResponseSuccess, "")
		requireCode(t, admin.call(routeRequest("TopicTest", versionGoClient, false)), codec.ResponseTopicNotExist,
			"No topic route info in name server for the topic: TopicTest")

		// Closing the registering connection drops the broker at once.
		bc2 := dial(t, n)
		brokerA(false).register(t, bc2)
		requireCode(t, admin.call(routeRequest("TopicTest", versionGoClient, false)), codec.ResponseSuccess, "")
		require.NoError(t, bc2.Close())
		testutil.Eventually(t, "the broker to be dropped after its connection closed", func() bool {
			resp := admin.call(routeRequest("TopicTest", versionGoClient, false))
			return codec.ResponseCode(resp.Code) == codec.ResponseTopicNotExist
		})
		require.Empty(t, n.ClusterInfo().BrokerAddrTable)
		// Closing the admin connection (which registered nothing) changes nothing.
	})
}

func TestUnknownCodeAndSerializeTypes(t *testing.T) {
	n := startNamesrv(t, testConfig(t, "gnet"))
	c := dial(t, n)
	requireCode(t, c.call(request(9999, nil, nil)), codec.ResponseRequestCodeNotSupported, " request type 9999 not supported")
	requireCode(t, c.call(request(codec.RequestSendMessage, nil, nil)), codec.ResponseRequestCodeNotSupported, " request type 10 not supported")

	// A ROCKETMQ-binary request gets a binary answer.
	req := request(codec.RequestGetRouteInfoByTopic, map[string]string{"topic": "X"}, nil)
	req.SerializeType = codec.SerializeRocketMQ
	resp := c.call(req)
	require.Equal(t, codec.SerializeRocketMQ, resp.SerializeType)
	requireCode(t, resp, codec.ResponseTopicNotExist, "No topic route info in name server for the topic: X")

	// A oneway request is served but not answered: every response read afterwards belongs
	// to a later call (call checks the opaque). The change is applied asynchronously.
	oneway := request(codec.RequestPutKVConfig, map[string]string{"namespace": "NS", "key": "k", "value": "v"}, nil)
	oneway.Flag = codec.FlagOneway
	c.Request(oneway)
	unsupported := request(9998, nil, nil)
	unsupported.Flag = codec.FlagOneway
	c.Request(unsupported)
	testutil.Eventually(t, "the oneway KV change", func() bool {
		resp := c.call(request(codec.RequestGetKVConfig, map[string]string{"namespace": "NS", "key": "k"}, nil))
		return codec.ResponseCode(resp.Code) == codec.ResponseSuccess && resp.ExtFields["value"] == "v"
	})

	// A missing required header key.
	resp = c.call(request(codec.RequestGetRouteInfoByTopic, nil, nil))
	require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code))
	require.Contains(t, resp.Remark, `"topic"`)
}

func TestKVConfig(t *testing.T) {
	cfg := testConfig(t, "std")
	n := startNamesrv(t, cfg)
	c := dial(t, n)

	kv := func(code codec.RequestCode, ext map[string]string) *codec.RemotingCommand {
		return c.call(request(code, ext, nil))
	}
	requireCode(t, kv(codec.RequestGetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}),
		codec.ResponseQueryNotFound, "No config item, Namespace: ORDER_TOPIC_CONFIG Key: T")
	requireCode(t, kv(codec.RequestGetKVListByNamespace, map[string]string{"namespace": "ORDER_TOPIC_CONFIG"}),
		codec.ResponseQueryNotFound, "No config item, Namespace: ORDER_TOPIC_CONFIG")

	requireCode(t, kv(codec.RequestPutKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest", "value": "broker-a:4"}), codec.ResponseSuccess, "")
	requireCode(t, kv(codec.RequestPutKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "Gone", "value": "x"}), codec.ResponseSuccess, "")
	requireCode(t, kv(codec.RequestDeleteKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "Gone"}), codec.ResponseSuccess, "")
	requireCode(t, kv(codec.RequestDeleteKVConfig, map[string]string{"namespace": "NOPE", "key": "Gone"}), codec.ResponseSuccess, "")
	resp := kv(codec.RequestPutKVConfig, map[string]string{"namespace": "NS"})
	require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code))
	require.Contains(t, resp.Remark, `"key"`)

	resp = kv(codec.RequestGetKVConfig, map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "TopicTest"})
	requireCode(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, map[string]string{"value": "broker-a:4"}, resp.ExtFields)
	resp = kv(codec.RequestGetKVListByNamespace, map[string]string{"namespace": "ORDER_TOPIC_CONFIG"})
	require.Equal(t, `{"table":{"TopicTest":"broker-a:4"}}`, string(resp.Body))

	// Answered only once persisted, in Java's file format.
	data, err := os.ReadFile(cfg.KVConfigPath)
	require.NoError(t, err)
	require.Equal(t, `{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicTest":"broker-a:4"}}}`, string(data))

	// A registering broker gets the ORDER_TOPIC_CONFIG namespace back.
	resp = brokerA(false).register(t, c)
	require.Equal(t, `{"table":{"TopicTest":"broker-a:4"}}`, string(resp.Body))
	// orderMessageEnable is off: no orderTopicConf in the route.
	require.Equal(t, routeTopicTestBare, string(c.call(routeRequest("TopicTest", versionGoClient, false)).Body))

	// A new name server on the same file loads it, and with orderMessageEnable puts the
	// entry into routes.
	cfg2 := testConfig(t, "gnet")
	cfg2.KVConfigPath = cfg.KVConfigPath
	cfg2.OrderMessageEnable = true
	n2 := startNamesrv(t, cfg2)
	c2 := dial(t, n2)
	brokerA(false).register(t, c2)
	resp = c2.call(routeRequest("TopicTest", versionGoClient, false))
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],`+
		`"filterServerTable":{},"orderTopicConf":"broker-a:4","queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`,
		string(resp.Body))
}

func TestBrokerAdminCodes(t *testing.T) {
	n := startNamesrv(t, testConfig(t, "gnet"))
	c := dial(t, n)
	b := brokerA(false)
	b.register(t, c)

	// QUERY_DATA_VERSION: same version → changed=false and the registered version back.
	dv := codec.DataVersion{Counter: 1, Timestamp: 1_700_000_000_000}
	body, err := json.Marshal(dv)
	require.NoError(t, err)
	qdv := map[string]string{"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0"}
	resp := c.call(request(codec.RequestQueryDataVersion, qdv, body))
	requireCode(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, map[string]string{"changed": "false"}, resp.ExtFields)
	require.Equal(t, `{"counter":1,"stateVersion":0,"timestamp":1700000000000}`, string(resp.Body))
	body, err = json.Marshal(codec.DataVersion{Counter: 2})
	require.NoError(t, err)
	resp = c.call(request(codec.RequestQueryDataVersion, qdv, body))
	require.Equal(t, "true", resp.ExtFields["changed"])
	resp = c.call(request(codec.RequestQueryDataVersion, qdv, []byte("not json")))
	require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code))

	// WIPE / ADD write permission.
	resp = c.call(request(codec.RequestWipeWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil))
	requireCode(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, map[string]string{"wipeTopicCount": "2"}, resp.ExtFields)
	rd, err := codec.DecodeTopicRouteData(c.call(routeRequest("TopicTest", versionGoClient, false)).Body)
	require.NoError(t, err)
	require.Equal(t, int32(4), rd.QueueDatas[0].Perm)
	rd, err = codec.DecodeTopicRouteData(c.call(routeRequest("TBW102", versionGoClient, false)).Body)
	require.NoError(t, err)
	require.Equal(t, int32(5), rd.QueueDatas[0].Perm, "read + inherit kept")
	resp = c.call(request(codec.RequestAddWritePermOfBroker, map[string]string{"brokerName": "broker-a"}, nil))
	require.Equal(t, map[string]string{"addTopicCount": "2"}, resp.ExtFields)
	rd, err = codec.DecodeTopicRouteData(c.call(routeRequest("TBW102", versionGoClient, false)).Body)
	require.NoError(t, err)
	require.Equal(t, int32(6), rd.QueueDatas[0].Perm, "ADD sets read+write, as Java does")

	// REGISTER_TOPIC_IN_NAMESRV.
	topicBody, err := codec.EncodeTopicRouteData(&codec.TopicRouteData{
		QueueDatas: []codec.QueueData{{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 3, WriteQueueNums: 3}},
	}, false)
	require.NoError(t, err)
	requireCode(t, c.call(request(codec.RequestRegisterTopicInNamesrv, map[string]string{"topic": "Added"}, topicBody)), codec.ResponseSuccess, "")
	rd, err = codec.DecodeTopicRouteData(c.call(routeRequest("Added", versionGoClient, false)).Body)
	require.NoError(t, err)
	require.Equal(t, int32(3), rd.QueueDatas[0].WriteQueueNums)

	// BROKER_HEARTBEAT answers success.
	requireCode(t, c.call(request(codec.RequestBrokerHeartbeat, map[string]string{
		"clusterName": "DefaultCluster", "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a"}, nil)), codec.ResponseSuccess, "")
}

func TestTopicListsDisabled(t *testing.T) {
	cfg := testConfig(t, "gnet")
	cfg.EnableAllTopicList = false
	cfg.EnableTopicList = false
	n := startNamesrv(t, cfg)
	c := dial(t, n)
	requireCode(t, c.call(request(codec.RequestGetAllTopicListFromNameServer, nil, nil)), codec.ResponseSystemError, "disable")
	requireCode(t, c.call(request(codec.RequestGetTopicsByCluster, map[string]string{"cluster": "C"}, nil)), codec.ResponseSystemError, "disable")
}

func TestNeedWaitForService(t *testing.T) {
	cfg := testConfig(t, "gnet")
	cfg.NeedWaitForService = true
	n := startNamesrv(t, cfg)
	c := dial(t, n)
	requireCode(t, c.call(routeRequest("T", versionGoClient, false)), codec.ResponseSystemError, "name server not ready")
}

// A broker that stops re-registering is dropped by the scan goroutine after the
// heartbeatTimeoutMillis its registration named, and its connection is closed.
func TestExpiryOverTheWire(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		cfg := testConfig(t, engine)
		cfg.ScanInterval = 10 * time.Millisecond
		n := startNamesrv(t, cfg)
		bc := dial(t, n)
		b := brokerA(false)
		b.header = map[string]string{"heartbeatTimeoutMillis": "30"}
		b.register(t, bc)
		// Another broker without the override lives for the default 120 s.
		other := &fakeBroker{cluster: "C2", name: "broker-b", addr: "127.0.0.3:10911", haAddr: "127.0.0.3:10912",
			counter: 1, topics: []codec.TopicConfig{topicConfig("OnlyB", 1, 1, 6), topicConfig("OnlyB2", 1, 1, 6)}}
		other.register(t, dial(t, n))

		admin := dial(t, n)
		testutil.Eventually(t, "the broker to expire", func() bool {
			resp := admin.call(routeRequest("TopicTest", versionGoClient, false))
			return codec.ResponseCode(resp.Code) == codec.ResponseTopicNotExist
		})
		// The name server closed the expired broker's connection.
		_, err := bc.TryNext(waitTimeout)
		require.ErrorIs(t, err, io.EOF)
		// The scanner drops the broker, closes its connection, then counts it and sets the gauges:
		// wait for the gauges rather than race the scanner for them.
		testutil.Eventually(t, "the gauges after the expiry", func() bool {
			return metricValue(t, n.metrics.brokersExpired) == 1 && metricValue(t, n.metrics.brokers) == 1
		})
		require.Equal(t, 1.0, metricValue(t, n.metrics.brokersExpired))
		requireCode(t, admin.call(routeRequest("OnlyB", versionGoClient, false)), codec.ResponseSuccess, "")
	})
}

func TestAdminCodeErrors(t *testing.T) {
	n := startNamesrv(t, testConfig(t, "gnet"))
	c := dial(t, n)
	brokerA(false).register(t, c)
	for _, tc := range []struct {
		code  codec.RequestCode
		ext   map[string]string
		body  []byte
		field string
	}{
		{codec.RequestGetKVListByNamespace, nil, nil, `"namespace"`},
		{codec.RequestBrokerHeartbeat, map[string]string{"brokerAddr": "x"}, nil, `"brokerName"`},
		{codec.RequestRegisterTopicInNamesrv, nil, nil, `"topic"`},
		{codec.RequestRegisterTopicInNamesrv, map[string]string{"topic": "T"}, []byte("{bad"), "TopicRouteData"},
		{codec.RequestWipeWritePermOfBroker, nil, nil, `"brokerName"`},
		{codec.RequestQueryDataVersion, map[string]string{"brokerName": "b"}, nil, `"brokerAddr"`},
		{codec.RequestDeleteTopicInNamesrv, nil, nil, `"topic"`},
		{codec.RequestUnregisterBroker, map[string]string{"brokerName": "b"}, nil, `"brokerAddr"`},
		{codec.RequestGetKVConfig, map[string]string{"namespace": "n"}, nil, `"key"`},
		{codec.RequestDeleteKVConfig, map[string]string{"key": "k"}, nil, `"namespace"`},
	} {
		resp := c.call(request(tc.code, tc.ext, tc.body))
		require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code), "%s", tc.code)
		require.Contains(t, resp.Remark, tc.field, "%s", tc.code)
	}
	// REGISTER_TOPIC naming an unknown broker is accepted and ignored, as Java does.
	body, err := codec.EncodeTopicRouteData(&codec.TopicRouteData{
		QueueDatas: []codec.QueueData{{BrokerName: "unknown", Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1}}}, false)
	require.NoError(t, err)
	requireCode(t, c.call(request(codec.RequestRegisterTopicInNamesrv, map[string]string{"topic": "X"}, body)), codec.ResponseSuccess, "")
	requireCode(t, c.call(routeRequest("X", versionGoClient, false)), codec.ResponseTopicNotExist,
		"No topic route info in name server for the topic: X")
}

// A register body as a Java 4.9 broker writes it (fastjson: alphabetical keys, no
// stateVersion in 4.x, counter as a number), with the header keys it sends.
func TestRegisterJavaBrokerBody(t *testing.T) {
	n := startNamesrv(t, testConfig(t, "gnet"))
	c := dial(t, n)
	body := []byte(`{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":2,"timestamp":1700000000000},` +
		`"topicConfigTable":{"TBW102":{"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8},` +
		`"SELF_TEST_TOPIC":{"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"SELF_TEST_TOPIC","topicSysFlag":0,"writeQueueNums":1},` +
		`"UnitTopic":{"order":false,"perm":6,"readQueueNums":2,"topicFilterType":"MULTI_TAG","topicName":"UnitTopic","topicSysFlag":1,"writeQueueNums":2}}}}`)
	req := codec.NewRequest(codec.RequestRegisterBroker, map[string]string{
		"brokerName": "broker-a", "brokerAddr": "192.168.0.10:10911", "clusterName": "DefaultCluster",
		"haServerAddr": "192.168.0.10:10912", "brokerId": "0", "compressed": "false",
		"bodyCrc32": strconv.Itoa(int(codec.RegisterBrokerBodyCRC32(body))),
	}, body)
	req.Version = 399
	resp := c.call(req)
	requireCode(t, resp, codec.ResponseSuccess, "")

	resp = c.call(routeRequest("UnitTopic", versionGoClient, false))
	require.Equal(t, `{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.10:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],`+
		`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":2,"topicSysFlag":1,"writeQueueNums":2}]}`, string(resp.Body))

	// The broker's periodic QUERY_DATA_VERSION sees its version as registered.
	qdv := c.call(request(codec.RequestQueryDataVersion, map[string]string{"brokerName": "broker-a",
		"brokerAddr": "192.168.0.10:10911", "clusterName": "DefaultCluster", "brokerId": "0"},
		[]byte(`{"counter":2,"timestamp":1700000000000}`)))
	require.Equal(t, "false", qdv.ExtFields["changed"])
}

// closedConn is a connection whose writes fail as netio's do once the connection closed;
// only the methods the processor uses are implemented.
type closedConn struct {
	netio.Conn
	id       uint64
	writeErr error
	written  int
}

func (c *closedConn) ID() uint64                 { return c.id }
func (c *closedConn) RemoteAddr() netip.AddrPort { return netip.AddrPort{} }
func (c *closedConn) WriteCommand(*codec.RemotingCommand) error {
	c.written++
	return c.writeErr
}

// A registration applied after its connection closed (its OnClose found nothing to drop
// yet) is undone when its response cannot be written.
func TestRegistrationUndoneWhenConnectionGone(t *testing.T) {
	n, err := New(testConfig(t, netio.EngineStd), testLogger(), nil)
	require.NoError(t, err)
	req := brokerA(false).registerRequest(t)
	var h codec.RegisterBrokerRequestHeader
	require.NoError(t, h.Decode(req.ExtFields))

	gone := &closedConn{id: 1, writeErr: fmt.Errorf("%w: test", netio.ErrConnClosed)}
	rt := newReplyTo(gone, req)
	n.proc.applyRegistration(&rt, &h, req.Body)
	require.Equal(t, 1, gone.written)
	_, ok := n.TopicRoute("TopicTest")
	require.False(t, ok, "undone")
	require.Empty(t, n.ClusterInfo().BrokerAddrTable)

	live := &closedConn{id: 2}
	rt = newReplyTo(live, req)
	n.proc.applyRegistration(&rt, &h, req.Body)
	_, ok = n.TopicRoute("TopicTest")
	require.True(t, ok)

	// A failed registration on a gone connection undoes nothing of others'.
	rt = newReplyTo(&closedConn{id: 3, writeErr: netio.ErrConnClosed}, req)
	n.proc.applyRegistration(&rt, &h, []byte("{broken"))
	_, ok = n.TopicRoute("TopicTest")
	require.True(t, ok)
}
