package broker

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// listenPortWithFreeNeighbours returns a free port p whose p − 2 (the fast port) and p + 1 (the HA
// port) are free too, so that a broker started on p listens on all three. Another process can take
// one of them before the broker binds it, as with every picked port.
func listenPortWithFreeNeighbours(t *testing.T) int {
	t.Helper()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		p := ln.Addr().(*net.TCPAddr).Port
		var others []net.Listener
		ok := p-2 >= 1 && p+1 <= 65535
		for _, q := range []int{p - 2, p + 1} {
			if !ok {
				break
			}
			l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
			if err != nil {
				ok = false
				break
			}
			others = append(others, l)
		}
		for _, l := range append(others, ln) {
			require.NoError(t, l.Close())
		}
		if ok {
			return p
		}
	}
	t.Fatal("no free port with free neighbours")
	return 0
}

// TestSlaveSynchronizeCopiesTheMastersMetadata: topics, subscription groups, consumer offsets and
// delay offsets made on a master reach its slave through the periodic sync, in memory and in the
// slave's files; topics come from the master's fast port (listenPort − 2), which answers
// GET_ALL_TOPIC_CONFIG with the same body as listenPort. Local offsets the master lacks stay.
func TestSlaveSynchronizeCopiesTheMastersMetadata(t *testing.T) {
	masterPort := listenPortWithFreeNeighbours(t)
	slaveFast, err := pickListenPort("127.0.0.1")
	require.NoError(t, err)
	master, slave := startPairWith(t, "ASYNC_MASTER", func(c *Config) {
		c.ListenPort = masterPort
		c.FastListenPort = -1 // the default: listenPort − 2
		c.MessageDelayLevel = "1s 2s"
	}, func(c *Config) {
		c.FastListenPort = slaveFast // on: the slave asks its master's listenPort − 2 for topics
		c.MessageDelayLevel = "1s 2s"
	})
	require.Equal(t, net.JoinHostPort("127.0.0.1", strconv.Itoa(masterPort-2)), master.b.FastAddr())

	createTopic(t, master.b, "TopicSync", 3)
	group := codec.NewSubscriptionGroupConfig("GroupSync")
	group.RetryMaxTimes = 5
	require.NoError(t, master.b.subscriptions.Update(group))
	master.b.offsets.Commit("GroupSync", "TopicSync", 1, 42)
	master.b.offsets.Commit("GroupBoth", "TopicSync", 0, 9)
	slave.b.offsets.Commit("GroupBoth", "TopicSync", 2, 3) // replaced whole by the master's entry
	slave.b.offsets.Commit("GroupLocal", "TopicSync", 0, 7)
	c := remotingtest.Dial(t, master.BrokerAddr)
	sendOK(t, c, sendV1("TopicSync", 0, []byte("later"), props(codec.PropertyDelayTimeLevel, "1")))
	testutil.Eventually(t, "the master delivers the delayed message and moves level 1's cursor",
		func() bool { return master.b.schedule.Offsets()[1] == 1 })

	wantTopic, _ := master.b.topics.Get("TopicSync")
	testutil.Eventually(t, "the slave syncs every table", func() bool {
		tc, ok := slave.b.topics.Get("TopicSync")
		g, gok := slave.b.subscriptions.Get("GroupSync")
		return ok && tc.ReadQueueNums == 3 && gok && g.RetryMaxTimes == 5 &&
			slave.b.offsets.Query("GroupSync", "TopicSync", 1) == 42 &&
			slave.b.schedule.Offsets()[1] == 1
	})

	got, _ := slave.b.topics.Get("TopicSync")
	require.Equal(t, wantTopic, got)
	require.Equal(t, master.b.topics.DataVersion(), slave.b.topics.DataVersion(), "the master's dataVersion is taken")
	require.Equal(t, master.b.topics.TopicNames(), slave.b.topics.TopicNames(), "the whole table is the master's")
	require.Equal(t, master.b.subscriptions.DataVersion(), slave.b.subscriptions.DataVersion())
	require.Equal(t, master.b.subscriptions.GroupNames(), slave.b.subscriptions.GroupNames())
	require.Equal(t, map[int32]int64{0: 9}, slave.b.offsets.QueryAll("GroupBoth", "TopicSync"))
	require.Equal(t, map[int32]int64{0: 7}, slave.b.offsets.QueryAll("GroupLocal", "TopicSync"), "local entries stay")
	require.Equal(t, master.b.schedule.Offsets(), slave.b.schedule.Offsets())
	require.Equal(t, 1, master.b.fastServer.ConnectionCount(), "the slave asked the fast port")

	// The files: written by the sync, not only in memory.
	dir := metadata.ConfigDir(slave.b.cfg.StorePathRootDir)
	data, err := os.ReadFile(filepath.Join(dir, metadata.TopicsFileName))
	require.NoError(t, err)
	tw, err := codec.DecodeTopicConfigSerializeWrapper(data)
	require.NoError(t, err)
	require.Equal(t, wantTopic.ReadQueueNums, tw.TopicConfigTable["TopicSync"].ReadQueueNums)
	data, err = os.ReadFile(filepath.Join(dir, metadata.SubscriptionGroupFileName))
	require.NoError(t, err)
	sw, err := codec.DecodeSubscriptionGroupWrapper(data)
	require.NoError(t, err)
	require.Equal(t, int32(5), sw.SubscriptionGroupTable["GroupSync"].RetryMaxTimes)
	data, err = os.ReadFile(filepath.Join(dir, metadata.ConsumerOffsetFileName))
	require.NoError(t, err)
	ow, err := codec.DecodeConsumerOffsetSerializeWrapper(data)
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{1: 42}, ow.OffsetTable["TopicSync@GroupSync"])
	data, err = os.ReadFile(filepath.Join(dir, metadata.DelayOffsetFileName))
	require.NoError(t, err)
	require.Equal(t, string(master.b.schedule.Encode(false)), string(data), "the master's answer, as it is")

	// The fast port serves the same requests as listenPort.
	want := c.Call(codec.NewRequest(codec.RequestGetAllTopicConfig, nil, nil))
	require.Equal(t, int32(codec.ResponseSuccess), want.Code, want.Remark)
	fast := remotingtest.Dial(t, master.b.FastAddr())
	resp := fast.Call(codec.NewRequest(codec.RequestGetAllTopicConfig, nil, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, string(want.Body), string(resp.Body))
}

// TestSlaveSynchronizeRoundByRound drives single rounds: none without a learnt master address or
// with its own, a table whose dataVersion did not change is not rewritten, a changed one is replaced
// whole (a topic deleted on the master goes), and topics come from listenPort when the slave's fast
// port is off.
func TestSlaveSynchronizeRoundByRound(t *testing.T) {
	master := startTestBroker(t, nil)
	slave := startTestBroker(t, func(c *Config) {
		c.BrokerRole = RoleSlave
		c.BrokerID = 1
		c.NamesrvEmbedded = false // no registration: the master address is set by hand below
		c.HAListenPort = 0
		c.slaveSyncInitialDelay = time.Hour // rounds are driven by the test
	})
	require.Zero(t, slave.b.cfg.FastListenPort, "listenPort was 0: fast port off")
	ctx := context.Background()
	sync := slave.b.slaveSync
	require.False(t, sync.syncAll(ctx), "no master address learnt")
	sync.setMasterAddr(slave.BrokerAddr)
	require.False(t, sync.syncAll(ctx), "its own address")

	createTopic(t, master.b, "TopicKept", 2)
	createTopic(t, master.b, "TopicGone", 2)
	require.NoError(t, master.b.subscriptions.Update(codec.NewSubscriptionGroupConfig("GroupRound")))
	sync.setMasterAddr(master.BrokerAddr)
	require.True(t, sync.syncAll(ctx))
	require.True(t, slave.b.topics.Contains("TopicGone"))
	require.True(t, slave.b.subscriptions.Contains("GroupRound"))

	dir := metadata.ConfigDir(slave.b.cfg.StorePathRootDir)
	stat := func(name string) os.FileInfo {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		return fi
	}
	topicsBefore, groupsBefore := stat(metadata.TopicsFileName), stat(metadata.SubscriptionGroupFileName)
	offsetsBefore := stat(metadata.ConsumerOffsetFileName)
	require.True(t, sync.syncAll(ctx))
	require.True(t, os.SameFile(topicsBefore, stat(metadata.TopicsFileName)), "same dataVersion: topics.json not rewritten")
	require.True(t, os.SameFile(groupsBefore, stat(metadata.SubscriptionGroupFileName)), "same dataVersion: not rewritten")
	require.False(t, os.SameFile(offsetsBefore, stat(metadata.ConsumerOffsetFileName)), "offsets are merged every round")

	_, err := master.b.topics.Delete("TopicGone")
	require.NoError(t, err)
	require.True(t, sync.syncAll(ctx))
	require.False(t, os.SameFile(topicsBefore, stat(metadata.TopicsFileName)), "new dataVersion: rewritten")
	require.False(t, slave.b.topics.Contains("TopicGone"))
	require.True(t, slave.b.topics.Contains("TopicKept"))
	require.Equal(t, master.b.topics.DataVersion(), slave.b.topics.DataVersion())
	require.True(t, os.SameFile(groupsBefore, stat(metadata.SubscriptionGroupFileName)), "groups unchanged")
	require.Nil(t, master.b.fastServer, "listenPort 0: no fast port")
}

// TestResolveFastListenPort: -1 is listenPort − 2 (off when listenPort was picked, or below 1, or
// when it is the HA port), 0 is off, an explicit port stays and must not be listenPort or haListenPort.
func TestResolveFastListenPort(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		fast, listen, ha     int
		listenWasZero        bool
		want                 int
		wantDefaulted, isErr bool
	}{
		{name: "default", fast: -1, listen: 10911, ha: 10912, want: 10909, wantDefaulted: true},
		{name: "picked listenPort", fast: -1, listen: 40000, ha: 40001, listenWasZero: true, want: 0},
		{name: "below 1", fast: -1, listen: 2, ha: 3, want: 0},
		{name: "default is the HA port", fast: -1, listen: 10911, ha: 10909, want: 0},
		{name: "off", fast: 0, listen: 10911, ha: 10912, want: 0},
		{name: "explicit", fast: 20000, listen: 10911, ha: 10912, want: 20000},
		{name: "explicit listenPort", fast: 10911, listen: 10911, ha: 10912, isErr: true},
		{name: "explicit haListenPort", fast: 10912, listen: 10911, ha: 10912, isErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.FastListenPort, c.ListenPort, c.HAListenPort = tc.fast, tc.listen, tc.ha
			defaulted, err := c.resolveFastListenPort(tc.listenWasZero)
			if tc.isErr {
				require.ErrorIs(t, err, ErrConfig)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c.FastListenPort)
			require.Equal(t, tc.wantDefaulted, defaulted)
		})
	}
	c := DefaultConfig()
	require.Equal(t, -1, c.FastListenPort)
	warning, err := c.Set("fastListenPort", "0", 1)
	require.NoError(t, err)
	require.Nil(t, warning)
	require.Equal(t, 0, c.FastListenPort, "a key now, not a not-needed one")
	require.NotContains(t, PropertyNames(), "", "untagged fields are not keys")
}

// TestFastPortSharesTheRequestBudget: listenPort and the fast port draw from one requestBudgetBytes
// (the broker's memory, not each listener's): a large frame on the fast port waits while one on
// listenPort holds the budget, and is served once that one is done.
func TestFastPortSharesTheRequestBudget(t *testing.T) {
	port := listenPortWithFreeNeighbours(t)
	tb := startTestBroker(t, func(c *Config) {
		c.ListenPort = port
		c.FastListenPort = -1
		c.RequestBudgetBytes = 1 << 20
	})
	require.NotEmpty(t, tb.b.FastAddr())
	waiting := func() float64 { return gaugeSum(t, tb.b, "ringmq_netio_request_budget_waiting_frames") }
	const unknownCode codec.RequestCode = 1999 // answered REQUEST_CODE_NOT_SUPPORTED once read
	held := remotingtest.Dial(t, tb.BrokerAddr)
	frame, err := codec.NewRequest(unknownCode, nil, bytes.Repeat([]byte{'a'}, 900<<10)).AppendFrame(nil)
	require.NoError(t, err)
	held.Write(frame[:len(frame)/2]) // admitted, holds 900 KiB until the rest comes
	// The two ports' frames are read by different event loops: the fast port's must come second.
	testutil.Eventually(t, "listenPort's large frame admitted", func() bool {
		return gaugeSum(t, tb.b, "ringmq_netio_request_budget_used_bytes") > 0
	})

	fast := remotingtest.Dial(t, tb.b.FastAddr())
	waiter := codec.NewRequest(unknownCode, nil, bytes.Repeat([]byte{'b'}, 600<<10))
	opaque := fast.Request(waiter)
	testutil.Eventually(t, "the fast port's large frame waits for listenPort's", func() bool { return waiting() == 1 })

	held.Write(frame[len(frame)/2:])
	require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), held.Next().Code)
	require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), fast.Await(opaque).Code)
	require.Zero(t, waiting())
}

// gaugeSum is the sum of every series of the gauge name in b's registry; -1 when there is none.
func gaugeSum(t *testing.T, b *Broker, name string) float64 {
	t.Helper()
	families, err := b.Registry().Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			var sum float64
			for _, m := range f.GetMetric() {
				sum += m.GetGauge().GetValue()
			}
			return sum
		}
	}
	return -1
}
