package namesrv

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// fakeChannel stands in for a broker's connection.
type fakeChannel struct {
	id     uint64
	closed atomic.Int32
}

func (c *fakeChannel) ID() uint64   { return c.id }
func (c *fakeChannel) Close() error { c.closed.Add(1); return nil }

func newTestRoutes(clock *testutil.ManualClock) *routeInfoManager {
	return newRouteInfoManager(slog.New(slog.DiscardHandler), clock.Now, DefaultBrokerExpiry)
}

// topicConfig builds a TopicConfig with queue counts and perm.
func topicConfig(name string, read, write, perm int32) codec.TopicConfig {
	tc := codec.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = read, write, perm
	return tc
}

// registration builds a registration of brokerName/id at addr with the given topics and
// dataVersion counter.
func registration(cluster, name string, id int64, addr string, counter int64, topics ...codec.TopicConfig) *brokerRegistration {
	table := make(map[string]codec.TopicConfig, len(topics))
	for _, tc := range topics {
		table[tc.TopicName] = tc
	}
	return &brokerRegistration{
		clusterName:  cluster,
		brokerAddr:   addr,
		brokerName:   name,
		brokerID:     id,
		haServerAddr: addr + "1", // distinct, recognisable HA address
		topics: codec.TopicConfigSerializeWrapper{
			DataVersion:      codec.DataVersion{Counter: counter, Timestamp: 1_700_000_000_000},
			TopicConfigTable: table,
		},
		filterServerList: []string{},
	}
}

func mustRegister(t *testing.T, m *routeInfoManager, reg *brokerRegistration) registerResult {
	t.Helper()
	res, err := m.registerBroker(reg)
	require.NoError(t, err)
	return res
}

func encodeRoute(t *testing.T, m *routeInfoManager, topic string, standard bool) string {
	t.Helper()
	rd, ok := m.pickupTopicRouteData(topic)
	require.True(t, ok, "route for %s", topic)
	b, err := codec.EncodeTopicRouteData(rd, standard)
	require.NoError(t, err)
	return string(b)
}

func TestRegisterMasterAndSlave(t *testing.T) {
	clock := testutil.NewManualClock()
	m := newTestRoutes(clock)

	master := registration("DefaultCluster", "broker-a", 0, "10.0.0.1:10911", 1,
		topicConfig("T1", 4, 4, 6), topicConfig("TBW102", 8, 8, 7))
	res := mustRegister(t, m, master)
	require.Equal(t, registerResult{}, res, "a master learns nothing")

	// The slave lists the topic with other numbers: slaves never touch queue data.
	slave := registration("DefaultCluster", "broker-a", 1, "10.0.0.2:10911", 1,
		topicConfig("T1", 16, 16, 4), topicConfig("OnlyOnSlave", 1, 1, 6))
	res = mustRegister(t, m, slave)
	require.Equal(t, registerResult{masterAddr: "10.0.0.1:10911", haServerAddr: "10.0.0.1:109111"}, res)

	require.Equal(t,
		`{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],`+
			`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`,
		encodeRoute(t, m, "T1", false))
	_, ok := m.pickupTopicRouteData("OnlyOnSlave")
	require.False(t, ok, "a slave's topics create no route")

	ci := m.clusterInfo()
	require.Equal(t, map[string][]string{"DefaultCluster": {"broker-a"}}, ci.ClusterAddrTable)
	require.Equal(t, map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, ci.BrokerAddrTable["broker-a"].BrokerAddrs)
	require.Equal(t, []string{"T1", "TBW102"}, m.allTopics())

	// A second broker name in another cluster.
	mustRegister(t, m, registration("C2", "broker-b", 0, "10.0.0.3:10911", 7, topicConfig("T1", 2, 2, 6), topicConfig("T2", 1, 1, 6)))
	require.Equal(t,
		`{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false},`+
			`{"brokerAddrs":{"0":"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"C2","enableActingMaster":false}],"filterServerTable":{},`+
			`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4},`+
			`{"brokerName":"broker-b","perm":6,"readQueueNums":2,"topicSysFlag":0,"writeQueueNums":2}]}`,
		encodeRoute(t, m, "T1", true))
	require.Equal(t, []string{"T1", "T2"}, m.topicsByCluster("C2"))
	require.Equal(t, []string{"T1", "TBW102"}, m.topicsByCluster("DefaultCluster"))
	require.Empty(t, m.topicsByCluster("nope"))
	topics, addr := m.systemTopics()
	require.Equal(t, []string{"C2", "DefaultCluster", "broker-a", "broker-b"}, topics)
	require.Equal(t, "10.0.0.1:10911", addr)
	brokers, n := m.counts()
	require.Equal(t, 3, brokers)
	require.Equal(t, 3, n)
}

// The TBW102 route as the Go client reads it for an unknown topic, byte for byte in both
// key styles.
func TestTBW102RouteGolden(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	mustRegister(t, m, registration("DefaultCluster", "broker-a", 0, "192.168.0.10:10911", 3,
		topicConfig("TBW102", 8, 8, 7), topicConfig("SELF_TEST_TOPIC", 1, 1, 6)))
	require.Equal(t,
		`{"brokerDatas":[{"brokerAddrs":{0:"192.168.0.10:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],`+
			`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":7,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`,
		encodeRoute(t, m, "TBW102", false))
	require.Equal(t,
		`{"brokerDatas":[{"brokerAddrs":{"0":"192.168.0.10:10911"},"brokerName":"broker-a","cluster":"DefaultCluster","enableActingMaster":false}],`+
			`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":7,"readQueueNums":8,"topicSysFlag":0,"writeQueueNums":8}]}`,
		encodeRoute(t, m, "TBW102", true))
	_, ok := m.pickupTopicRouteData("Unknown")
	require.False(t, ok)
}

func TestExpiryWithInjectedClock(t *testing.T) {
	clock := testutil.NewManualClock()
	m := newTestRoutes(clock)
	chA := &fakeChannel{id: 1}
	chB := &fakeChannel{id: 2}
	a := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("TA", 1, 1, 6))
	a.channel = chA
	b := registration("C", "broker-b", 0, "10.0.0.2:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("TB", 1, 1, 6))
	b.channel = chB
	b.heartbeatTimeout = 10 * time.Second // per-registration override
	mustRegister(t, m, a)
	mustRegister(t, m, b)

	clock.Advance(10 * time.Second)
	require.Equal(t, 0, m.scanNotActiveBrokers(), "exactly at the timeout is still alive")
	clock.Advance(time.Millisecond)
	require.Equal(t, 1, m.scanNotActiveBrokers())
	require.EqualValues(t, 1, chB.closed.Load(), "an expired broker's connection is closed")
	require.EqualValues(t, 0, chA.closed.Load())
	_, ok := m.pickupTopicRouteData("TB")
	require.False(t, ok, "topics of the expired broker name are gone")
	rd, ok := m.pickupTopicRouteData("T")
	require.True(t, ok)
	require.Len(t, rd.QueueDatas, 1)
	require.Equal(t, "broker-a", rd.QueueDatas[0].BrokerName)

	// Re-registering refreshes the timestamp, also with an unchanged dataVersion.
	clock.Advance(100 * time.Second)
	mustRegister(t, m, a)
	clock.Advance(100 * time.Second)
	require.Equal(t, 0, m.scanNotActiveBrokers())
	clock.Advance(20*time.Second + time.Millisecond)
	require.Equal(t, 1, m.scanNotActiveBrokers(), "default expiry is 120 s")
	require.EqualValues(t, 1, chA.closed.Load())
	require.Empty(t, m.allTopics())
	require.Empty(t, m.clusterInfo().ClusterAddrTable, "an emptied cluster is removed")
	require.Empty(t, m.clusterInfo().BrokerAddrTable)
	brokers, topics := m.counts()
	require.Zero(t, brokers)
	require.Zero(t, topics)
	// The close callback that follows finds nothing more to drop.
	require.Zero(t, m.onChannelClose(chA))
}

func TestChannelCloseDropsOnlyItsBrokers(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	ch1 := &fakeChannel{id: 1}
	reg := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 4, 4, 6))
	reg.channel = ch1
	mustRegister(t, m, reg)

	require.Zero(t, m.onChannelClose(&fakeChannel{id: 99}), "an unrelated connection drops nothing")
	_, ok := m.pickupTopicRouteData("T")
	require.True(t, ok)

	// The broker reconnects and registers over a new connection; the old one's close
	// arrives late and must not drop it.
	ch2 := &fakeChannel{id: 2}
	reg.channel = ch2
	mustRegister(t, m, reg)
	require.Zero(t, m.onChannelClose(ch1))
	_, ok = m.pickupTopicRouteData("T")
	require.True(t, ok)

	require.Equal(t, 1, m.onChannelClose(ch2))
	_, ok = m.pickupTopicRouteData("T")
	require.False(t, ok)
	require.Empty(t, m.clusterInfo().BrokerAddrTable)
	require.Zero(t, ch2.closed.Load(), "a closing connection is not closed again")
}

// With the master gone and a slave alive, the route keeps its queues and lists the slave
// only (PROTOCOL §13.1); the slave then learns no master.
func TestMasterGoneSlaveKeepsRoute(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	chM := &fakeChannel{id: 1}
	master := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
	master.channel = chM
	mustRegister(t, m, master)
	slave := registration("C", "broker-a", 1, "10.0.0.2:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
	mustRegister(t, m, slave)

	require.Equal(t, 1, m.onChannelClose(chM))
	require.Equal(t,
		`{"brokerDatas":[{"brokerAddrs":{1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false}],`+
			`"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`,
		encodeRoute(t, m, "T", false))
	res := mustRegister(t, m, slave)
	require.Equal(t, registerResult{}, res, "no live master")

	// The slave goes too: now the broker name, its topics and the cluster go.
	require.True(t, m.unregisterBroker("C", "10.0.0.2:10911", "broker-a"))
	require.Empty(t, m.allTopics())
	require.Empty(t, m.clusterInfo().ClusterAddrTable)
	require.False(t, m.unregisterBroker("C", "10.0.0.2:10911", "broker-a"), "second unregister finds nothing")
}

// A registered master whose live entry expired but whose address is still listed is not a
// live master for the slave.
func TestSlaveLearnsMasterOnlyWhileLive(t *testing.T) {
	clock := testutil.NewManualClock()
	m := newTestRoutes(clock)
	master := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
	mustRegister(t, m, master)
	clock.Advance(119 * time.Second)
	slave := registration("C", "broker-a", 1, "10.0.0.2:10911", 0)
	require.Equal(t, "10.0.0.1:10911", mustRegister(t, m, slave).masterAddr)
	clock.Advance(2 * time.Second)
	require.Equal(t, 1, m.scanNotActiveBrokers())
	require.Equal(t, registerResult{}, mustRegister(t, m, slave))
}

// A slave re-registered as master (same ip:port, id 1 → 0) is listed once, under 0.
func TestAddressMovesBetweenIDs(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	mustRegister(t, m, registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6)))
	mustRegister(t, m, registration("C", "broker-a", 1, "10.0.0.2:10911", 1))
	require.True(t, m.unregisterBroker("C", "10.0.0.1:10911", "broker-a"))
	mustRegister(t, m, registration("C", "broker-a", 0, "10.0.0.2:10911", 2, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6)))
	require.Equal(t, map[int64]string{0: "10.0.0.2:10911"}, m.clusterInfo().BrokerAddrTable["broker-a"].BrokerAddrs)
}

// An unchanged dataVersion skips the topic update (only the timestamp is refreshed), so an
// admin's wipe of write permission sticks until the broker's topics change.
func TestDataVersionSkipsTopicUpdate(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	reg := registration("C", "broker-a", 0, "10.0.0.1:10911", 5, topicConfig("T", 4, 4, 6), topicConfig("U", 2, 2, 6))
	mustRegister(t, m, reg)
	require.Equal(t, 2, m.wipeWritePerm("broker-a"))
	require.Zero(t, m.wipeWritePerm("nope"))

	mustRegister(t, m, reg)
	rd, _ := m.pickupTopicRouteData("T")
	require.Equal(t, int32(4), rd.QueueDatas[0].Perm, "same dataVersion: queue data untouched")

	changed, registered := m.queryDataVersion("C", "10.0.0.1:10911", reg.topics.DataVersion)
	require.False(t, changed)
	require.Equal(t, reg.topics.DataVersion, *registered)
	changed, _ = m.queryDataVersion("C", "10.0.0.1:10911", codec.DataVersion{Counter: 6})
	require.True(t, changed)
	changed, registered = m.queryDataVersion("C", "10.9.9.9:1", codec.DataVersion{})
	require.True(t, changed)
	require.Nil(t, registered)

	// Same dataVersion but a topic the table does not list for this broker: added.
	reg.topics.TopicConfigTable["V"] = topicConfig("V", 3, 3, 6)
	mustRegister(t, m, reg)
	rd, _ = m.pickupTopicRouteData("V")
	require.Equal(t, int32(3), rd.QueueDatas[0].WriteQueueNums)
	rd, _ = m.pickupTopicRouteData("T")
	require.Equal(t, int32(4), rd.QueueDatas[0].Perm, "still untouched")

	reg.topics.DataVersion.Counter = 6
	reg.topics.TopicConfigTable["T"] = topicConfig("T", 8, 8, 6)
	mustRegister(t, m, reg)
	rd, _ = m.pickupTopicRouteData("T")
	require.Equal(t, codec.QueueData{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 8, WriteQueueNums: 8}, rd.QueueDatas[0])
	rd, _ = m.pickupTopicRouteData("U")
	require.Equal(t, int32(6), rd.QueueDatas[0].Perm, "a new dataVersion refreshes every topic")

	require.Equal(t, 3, m.wipeWritePerm("broker-a"))
	require.Equal(t, 3, m.addWritePerm("broker-a"))
	rd, _ = m.pickupTopicRouteData("U")
	require.Equal(t, int32(6), rd.QueueDatas[0].Perm)
}

func TestDeleteTopic(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	mustRegister(t, m, registration("C1", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 4, 4, 6)))
	mustRegister(t, m, registration("C2", "broker-b", 0, "10.0.0.2:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 4, 4, 6)))

	require.True(t, m.deleteTopic("T", "C1"), "only C1's queues")
	rd, ok := m.pickupTopicRouteData("T")
	require.True(t, ok)
	require.Len(t, rd.QueueDatas, 1)
	require.Equal(t, "broker-b", rd.QueueDatas[0].BrokerName)
	require.False(t, m.deleteTopic("T", "nope"))
	require.True(t, m.deleteTopic("T", "C2"))
	_, ok = m.pickupTopicRouteData("T")
	require.False(t, ok, "no queues left: the topic is gone")

	require.True(t, m.deleteTopic("U", ""))
	require.False(t, m.deleteTopic("U", ""))
	require.Empty(t, m.allTopics())
	// Deleted topics come back with the broker's next changed registration.
	mustRegister(t, m, registration("C1", "broker-a", 0, "10.0.0.1:10911", 2, topicConfig("T", 4, 4, 6), topicConfig("U", 4, 4, 6)))
	require.Equal(t, []string{"T", "U"}, m.allTopics())
}

func TestRegisterTopic(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	mustRegister(t, m, registration("C", "broker-a", 0, "10.0.0.1:10911", 1))
	require.False(t, m.registerTopic("X", []codec.QueueData{
		{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1},
		{BrokerName: "unknown", Perm: 6, ReadQueueNums: 1, WriteQueueNums: 1},
	}))
	require.Empty(t, m.allTopics(), "nothing applied when one broker name is unknown")
	require.True(t, m.registerTopic("X", []codec.QueueData{{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 2, WriteQueueNums: 2}}))
	rd, ok := m.pickupTopicRouteData("X")
	require.True(t, ok)
	require.Equal(t, int32(2), rd.QueueDatas[0].ReadQueueNums)
}

func TestRegisterRules(t *testing.T) {
	t.Run("first registration with one topic refused", func(t *testing.T) {
		m := newTestRoutes(testutil.NewManualClock())
		_, err := m.registerBroker(registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6)))
		require.ErrorIs(t, err, errRegisterFirstSingleTopic)
		require.Empty(t, m.clusterInfo().BrokerAddrTable, "a refused registration leaves nothing behind")
		mustRegister(t, m, registration("C", "broker-a", 0, "10.0.0.1:10911", 1))
		mustRegister(t, m, registration("C", "broker-a", 0, "10.0.0.1:10911", 2, topicConfig("T", 4, 4, 6)))
		require.Equal(t, []string{"T"}, m.allTopics())
	})
	t.Run("newer stateVersion under the same id wins", func(t *testing.T) {
		m := newTestRoutes(testutil.NewManualClock())
		first := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
		first.topics.DataVersion.StateVersion = 5
		mustRegister(t, m, first)
		stale := registration("C", "broker-a", 0, "10.0.0.9:10911", 9, topicConfig("T", 8, 8, 6), topicConfig("U", 1, 1, 6))
		stale.topics.DataVersion.StateVersion = 4
		require.Equal(t, registerResult{}, mustRegister(t, m, stale))
		require.Equal(t, map[int64]string{0: "10.0.0.1:10911"}, m.clusterInfo().BrokerAddrTable["broker-a"].BrokerAddrs)
		brokers, _ := m.counts()
		require.Equal(t, 1, brokers)
	})
	t.Run("filter servers", func(t *testing.T) {
		m := newTestRoutes(testutil.NewManualClock())
		reg := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
		reg.filterServerList = []string{"10.0.0.1:9999"}
		mustRegister(t, m, reg)
		rd, _ := m.pickupTopicRouteData("T")
		require.Equal(t, map[string][]string{"10.0.0.1:10911": {"10.0.0.1:9999"}}, rd.FilterServerTable)
		reg.filterServerList = []string{}
		mustRegister(t, m, reg)
		rd, _ = m.pickupTopicRouteData("T")
		require.Empty(t, rd.FilterServerTable)
	})
	t.Run("prime slave of a 5.x broker name refreshes queues", func(t *testing.T) {
		m := newTestRoutes(testutil.NewManualClock())
		no := false
		master := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
		master.enableActingMaster = &no
		mustRegister(t, m, master)
		slave := registration("C", "broker-a", 1, "10.0.0.2:10911", 1, topicConfig("T", 2, 2, 6), topicConfig("U", 1, 1, 6))
		slave.enableActingMaster = &no
		mustRegister(t, m, slave)
		rd, _ := m.pickupTopicRouteData("T")
		require.Equal(t, int32(4), rd.QueueDatas[0].ReadQueueNums, "not prime while the master is listed")

		require.True(t, m.unregisterBroker("C", "10.0.0.1:10911", "broker-a"))
		slave.topics.DataVersion.Counter = 2
		mustRegister(t, m, slave)
		rd, _ = m.pickupTopicRouteData("T")
		require.Equal(t, codec.QueueData{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 2, WriteQueueNums: 2}, rd.QueueDatas[0])

		yes := true
		slave.enableActingMaster = &yes
		slave.topics.DataVersion.Counter = 3
		mustRegister(t, m, slave)
		rd, _ = m.pickupTopicRouteData("T")
		require.Equal(t, int32(4), rd.QueueDatas[0].Perm, "an acting master is read-only")
		require.True(t, rd.BrokerDatas[0].EnableActingMaster)
	})
	t.Run("old-version slave never refreshes queues", func(t *testing.T) {
		m := newTestRoutes(testutil.NewManualClock())
		mustRegister(t, m, registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6)))
		slave := registration("C", "broker-a", 1, "10.0.0.2:10911", 1)
		mustRegister(t, m, slave)
		require.True(t, m.unregisterBroker("C", "10.0.0.1:10911", "broker-a"))
		slave.topics = registration("", "", 0, "", 2, topicConfig("T", 2, 2, 6), topicConfig("U", 1, 1, 6)).topics
		mustRegister(t, m, slave)
		rd, _ := m.pickupTopicRouteData("T")
		require.Equal(t, int32(4), rd.QueueDatas[0].ReadQueueNums)
	})
}

func TestRefreshBrokerDelaysExpiry(t *testing.T) {
	clock := testutil.NewManualClock()
	m := newTestRoutes(clock)
	mustRegister(t, m, registration("C", "broker-a", 0, "10.0.0.1:10911", 1))
	clock.Advance(100 * time.Second)
	m.refreshBroker("C", "10.0.0.1:10911")
	m.refreshBroker("C", "unknown:1") // no effect, no panic
	clock.Advance(100 * time.Second)
	require.Zero(t, m.scanNotActiveBrokers())
	clock.Advance(21 * time.Second)
	require.Equal(t, 1, m.scanNotActiveBrokers())
}

// The scan goroutine, on virtual time: a broker registered at t0 is gone one scan after
// t0 + 120 s, and the scanner stops when told.
func TestScannerLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newRouteInfoManager(slog.New(slog.DiscardHandler), time.Now, DefaultBrokerExpiry)
		ch := &fakeChannel{id: 7}
		reg := registration("C", "broker-a", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
		reg.channel = ch
		mustRegister(t, m, reg)

		stop := make(chan struct{})
		var dropped atomic.Int64
		done := make(chan struct{})
		go func() {
			runScanner(stop, DefaultScanInterval, m, func(n int) { dropped.Add(int64(n)) })
			close(done)
		}()

		time.Sleep(120 * time.Second) // scans at 5 s … 120 s: not yet expired (120 s is the edge)
		synctest.Wait()
		require.Zero(t, dropped.Load())
		_, ok := m.pickupTopicRouteData("T")
		require.True(t, ok)

		time.Sleep(5 * time.Second) // the scan at 125 s drops it
		synctest.Wait()
		require.EqualValues(t, 1, dropped.Load())
		require.EqualValues(t, 1, ch.closed.Load())
		_, ok = m.pickupTopicRouteData("T")
		require.False(t, ok)

		close(stop)
		<-done
	})
}

// An address that moved to a new broker name (a renamed broker) is listed under both until
// it is dropped; dropping it clears both.
func TestDropAddressListedUnderTwoNames(t *testing.T) {
	m := newTestRoutes(testutil.NewManualClock())
	ch := &fakeChannel{id: 1}
	old := registration("C", "old-name", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
	mustRegister(t, m, old)
	renamed := registration("C", "new-name", 0, "10.0.0.1:10911", 1, topicConfig("T", 4, 4, 6), topicConfig("U", 1, 1, 6))
	renamed.channel = ch
	mustRegister(t, m, renamed)
	require.Len(t, m.clusterInfo().BrokerAddrTable, 2)

	require.Equal(t, 1, m.onChannelClose(ch))
	require.Empty(t, m.clusterInfo().BrokerAddrTable)
	require.Empty(t, m.allTopics())

	// A live entry whose address no broker name lists any more is still dropped.
	mustRegister(t, m, old)
	m.mu.Lock()
	delete(m.brokerAddrTable["old-name"].addrs, 0)
	m.mu.Unlock()
	m.brokerLiveTable[brokerAddrKey{"C", "10.0.0.1:10911"}].lastUpdate = time.Time{}
	require.Equal(t, 1, m.scanNotActiveBrokers())
	brokers, _ := m.counts()
	require.Zero(t, brokers)
}
