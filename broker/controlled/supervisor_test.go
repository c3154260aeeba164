package controlled

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/controller"
	"github.com/ringmq/ringmq/internal/launch"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

// testLogger writes to stderr with RINGMQ_TEST_LOG=1 (debugging), else nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("RINGMQ_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startController runs one controller (startControllers) and returns its remoting address.
func startController(t *testing.T) string {
	t.Helper()
	_, addr := startControllers(t, 1)
	return addr
}

// replica is one broker process of the group, as a supervisor in this test process.
type replica struct {
	t      *testing.T
	cfg    broker.Config
	sup    *Supervisor
	stop   context.CancelFunc
	done   chan error
	closed sync.Once
}

func replicaConfig(t *testing.T, controllerAddr string) broker.Config {
	cfg := broker.DefaultConfig()
	cfg.BrokerClusterName = "FailoverCluster"
	cfg.BrokerName = "failover-a"
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.ListenPort = freePort(t)
	cfg.HAListenPort = freePort(t)
	cfg.FastListenPort = 0
	cfg.NamesrvEmbedded = false
	cfg.MetricsAddr = "off"
	cfg.StorePathRootDir = t.TempDir()
	cfg.MappedFileSizeCommitLog = 1 << 20
	cfg.MappedFileSizeConsumeQueue = 1024 * 20
	cfg.MaxMessageSize = 256 << 10
	cfg.MaxHashSlotNum = 1024
	cfg.MaxIndexNum = 4096
	cfg.NetEventLoops = 1
	cfg.MaxConnections = 1000
	cfg.EnableControllerMode = true
	cfg.ControllerAddr = controllerAddr
	cfg.BrokerHeartbeatInterval = 100 * time.Millisecond
	cfg.ControllerHeartBeatTimeoutMills = 3 * time.Second
	cfg.HAMaxTimeSlaveNotCatchup = 3 * time.Second
	cfg.SlaveTimeout = time.Minute // a timeout is not what these tests are about
	return cfg
}

func startReplica(t *testing.T, cfg broker.Config) *replica {
	t.Helper()
	sup, err := New(cfg, broker.Deps{Logger: testLogger()}, launch.New)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	r := &replica{t: t, cfg: cfg, sup: sup, stop: cancel, done: make(chan error, 1)}
	go func() { r.done <- sup.Run(ctx) }()
	t.Cleanup(r.close)
	return r
}

// close stops the replica's supervisor (its broker shuts down) and waits for it, once.
func (r *replica) close() {
	r.closed.Do(func() {
		r.stop()
		select {
		case err := <-r.done:
			require.NoError(r.t, err, "the supervisor's Run")
		case <-time.After(testutil.WaitTimeout):
			r.t.Error("the supervisor did not stop")
		}
	})
}

func (r *replica) addr() string { return "127.0.0.1:" + strconv.Itoa(r.cfg.ListenPort) }

// acked is a message a SYNC send got SUCCESS for.
type acked struct {
	body string
	phys int64
}

// sendSync sends n messages with WAIT=true to addr (creating the topic there first) and requires
// SUCCESS for each.
func sendSync(t *testing.T, addr, prefix string, n int) []acked {
	t.Helper()
	c := remotingtest.Dial(t, addr)
	defer c.Close()
	ext := map[string]string{}
	(&codec.UpdateAndCreateTopicRequestHeader{Topic: "FailoverTopic", DefaultTopic: "TBW102", ReadQueueNums: 2,
		WriteQueueNums: 2, Perm: 6, TopicFilterType: codec.TopicFilterSingleTag}).Encode(ext)
	resp := c.Call(codec.NewRequest(codec.RequestUpdateAndCreateTopic, ext, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	var out []acked
	for i := range n {
		body := fmt.Sprintf("%s-%04d", prefix, i)
		h := codec.SendMessageRequestHeader{ProducerGroup: "PG", Topic: "FailoverTopic", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 2, QueueID: int32(i % 2), BornTimestamp: time.Now().UnixMilli(),
			Properties: string(codec.AppendProperty(nil, codec.PropertyWaitStoreMsgOK, "true"))}
		ext := map[string]string{}
		h.EncodeV2(ext)
		resp, err := c.TryCall(codec.NewRequest(codec.RequestSendMessageV2, ext, []byte(body)), 30*time.Second)
		require.NoError(t, err, body)
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "%s: %s", body, resp.Remark)
		var rh codec.SendMessageResponseHeader
		require.NoError(t, rh.Decode(resp.ExtFields))
		_, phys, err := codec.DecodeOffsetMsgID(rh.MsgID)
		require.NoError(t, err)
		out = append(out, acked{body: body, phys: phys})
	}
	return out
}

// requireHolds reads each acknowledged message at its CommitLog offset from the broker at addr.
func requireHolds(t *testing.T, addr string, msgs []acked) {
	t.Helper()
	c := remotingtest.Dial(t, addr)
	defer c.Close()
	for _, m := range msgs {
		resp := c.Call(codec.NewRequest(codec.RequestViewMessageByID, map[string]string{"offset": strconv.FormatInt(m.phys, 10)}, nil))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "%s at %d: %s", m.body, m.phys, resp.Remark)
		rec, err := codec.DecodeRecord(resp.Body, true)
		require.NoError(t, err)
		require.Equal(t, m.body, string(rec.Body), "at %d", m.phys)
	}
}

// The group's life: the first replica becomes master, the second follows and joins the SyncStateSet,
// SYNC sends wait for it; the master stops and the controller elects the replica in sync, which takes
// writes with every acknowledged message; the old master comes back with a tail the new master never
// had, is told to truncate it, reopens its store cut there and follows, and ends with the new
// master's CommitLog.
func TestFailoverElectsTheInSyncReplicaAndTheOldMasterTruncates(t *testing.T) {
	testutil.SkipInSecondPass(t)
	ctrl := startController(t)
	a := startReplica(t, replicaConfig(t, ctrl))
	testutil.Eventually(t, "A is master", a.sup.IsMaster)
	b := startReplica(t, replicaConfig(t, ctrl))
	testutil.Eventually(t, "B follows", func() bool { return b.sup.Current() != nil })
	require.False(t, b.sup.IsMaster())
	testutil.Eventually(t, "B joins the SyncStateSet", func() bool { return len(a.sup.SyncStateSet()) == 2 })
	first := sendSync(t, a.addr(), "epoch1", 40)

	// NOTIFY_BROKER_ROLE_CHANGED (oneway, as the controller sends it after an election) reaches the
	// supervisor, which then asks the controller at once.
	nc := remotingtest.Dial(t, b.addr())
	notify := codec.NewRequest(codec.RequestNotifyBrokerRoleChanged, map[string]string{"brokerName": "failover-a"}, nil)
	notify.Flag |= codec.FlagOneway
	before := b.sup.notifications.Load()
	nc.Send(notify)
	testutil.Eventually(t, "the notification", func() bool { return b.sup.notifications.Load() > before })
	nc.Close()
	require.False(t, b.sup.IsMaster(), "a notification is a reason to look, not a role")

	// A stops: the controller sees its connection close and elects B, the only replica in sync, whose
	// epoch starts where A's CommitLog ended (B holds all of it: every message was acknowledged).
	epoch2Start := a.sup.Current().CommitLogMaxOffset()
	a.close()
	testutil.Eventually(t, "B is master", b.sup.IsMaster)
	requireHolds(t, b.addr(), first)
	second := sendSync(t, b.addr(), "epoch2", 40)

	// A's store gets a tail B never had (a master's last writes that no replica acknowledged).
	scfg := store.DefaultConfig(a.cfg.StorePathRootDir)
	scfg.MappedFileSizeCommitLog = a.cfg.MappedFileSizeCommitLog
	scfg.MappedFileSizeConsumeQueue = a.cfg.MappedFileSizeConsumeQueue
	scfg.MaxHashSlotNum, scfg.MaxIndexNum = a.cfg.MaxHashSlotNum, a.cfg.MaxIndexNum
	scfg.MaxMessageSize = a.cfg.MaxMessageSize
	st, err := store.Open(scfg, store.Deps{})
	require.NoError(t, err)
	require.NoError(t, st.Start())
	tailFrom := st.MaxPhyOffset()
	for i := range 5 {
		res, err := st.PutMessage(&codec.Message{Topic: "FailoverTopic", QueueID: 0, Body: []byte(fmt.Sprintf("lost-%d", i)),
			BornTimestamp: 1, BornHost: scfg.StoreHost})
		require.NoError(t, err)
		require.Equal(t, store.PutOK, res.Status)
	}
	require.Greater(t, st.MaxPhyOffset(), tailFrom)
	require.NoError(t, st.Shutdown())

	a = startReplica(t, a.cfg)
	testutil.Eventually(t, "A follows B again", func() bool {
		return len(b.sup.SyncStateSet()) == 2 && a.sup.Current() != nil
	})
	require.False(t, a.sup.IsMaster())
	third := sendSync(t, b.addr(), "epoch2b", 20) // waits for A's acknowledgement
	all := append(append(append([]acked{}, first...), second...), third...)
	requireHolds(t, a.addr(), all)
	requireHolds(t, b.addr(), all)
	require.Equal(t, b.sup.Current().CommitLogMaxOffset(), a.sup.Current().CommitLogMaxOffset())
	// A took B's epochs, and both answer GET_BROKER_EPOCH_CACHE (mqadmin getBrokerEpoch) with them.
	fileA, err := os.ReadFile(a.cfg.StorePathRootDir + "/epochFileCheckpoint")
	require.NoError(t, err)
	fileB, err := os.ReadFile(b.cfg.StorePathRootDir + "/epochFileCheckpoint")
	require.NoError(t, err)
	require.Equal(t, string(fileB), string(fileA))
	for _, r := range []*replica{a, b} {
		c := remotingtest.Dial(t, r.addr())
		resp := c.Call(codec.NewRequest(codec.RequestGetBrokerEpochCache, map[string]string{}, nil))
		c.Close()
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		cache, err := codec.DecodeEpochEntryCache(resp.Body)
		require.NoError(t, err)
		require.Equal(t, r.sup.BrokerID(), cache.BrokerID)
		require.Len(t, cache.EpochList, 2)
		require.Equal(t, []codec.EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: epoch2Start},
			{Epoch: 2, StartOffset: epoch2Start, EndOffset: math.MaxInt64}}, cache.EpochList)
		require.Equal(t, b.sup.Current().CommitLogMaxOffset(), cache.MaxOffset)
	}
}

// Every series the supervisor registers is in METRICS.md, and METRICS.md names no other of its prefix.
func TestMetricsDocListsSupervisorSeries(t *testing.T) {
	sup, err := New(replicaConfig(t, "127.0.0.1:1"), broker.Deps{Logger: testLogger()}, launch.New)
	require.NoError(t, err)
	defer sup.net.Close()
	reg := prometheus.NewRegistry()
	require.NoError(t, sup.RegisterMetrics(reg))
	families, err := reg.Gather()
	require.NoError(t, err)
	var registered []string
	for _, f := range families {
		registered = append(registered, f.GetName())
	}
	doc, err := os.ReadFile("../../METRICS.md")
	require.NoError(t, err)
	documented := regexp.MustCompile("`(ringmq_controlled_[a-z_]+)`").FindAllStringSubmatch(string(doc), -1)
	var names []string
	for _, m := range documented {
		names = append(names, m[1])
	}
	slices.Sort(registered)
	slices.Sort(names)
	require.Equal(t, registered, slices.Compact(names))
}

// startControllers runs n controllers on 127.0.0.1 (raft over TCP, bolt stores in temporary
// directories, fast timings) and returns them with their remoting addresses ';'-separated, as
// controllerAddr names them, once one leads.
func startControllers(t *testing.T, n int) ([]*controller.Controller, string) {
	t.Helper()
	peers := make(controller.Peers, n)
	for i := range peers {
		peers[i] = controller.Peer{ID: "n" + strconv.Itoa(i), Addr: "127.0.0.1:" + strconv.Itoa(freePort(t))}
	}
	var cs []*controller.Controller
	var addrs []string
	for i := range peers {
		cfg := controller.DefaultConfig()
		cfg.SelfID, cfg.Peers = peers[i].ID, peers
		cfg.StorePath = t.TempDir()
		cfg.ListenAddr = "127.0.0.1:0"
		cfg.NetEngine = netio.EngineStd
		cfg.RaftHeartbeatTimeout = 250 * time.Millisecond
		cfg.RaftElectionTimeout = 250 * time.Millisecond
		cfg.ScanNotActiveBrokerInterval = 50 * time.Millisecond
		c, err := controller.New(cfg, false, testLogger(), prometheus.NewRegistry())
		require.NoError(t, err)
		require.NoError(t, c.Start())
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
			defer cancel()
			_ = c.Shutdown(ctx)
		})
		cs = append(cs, c)
		addrs = append(addrs, c.Addr().String())
	}
	testutil.Eventually(t, "a controller leads", func() bool {
		return slices.ContainsFunc(cs, func(c *controller.Controller) bool { return c.IsLeader() })
	})
	return cs, strings.Join(addrs, ";")
}

// The controller leader and the master die together: the two other controllers elect a raft leader,
// which (after the grace period that lets brokers find it) elects the replica in sync; it has every
// acknowledged message and takes writes.
func TestFailoverAcrossAControllerLeaderLoss(t *testing.T) {
	testutil.SkipInSecondPass(t)
	cs, addrs := startControllers(t, 3)
	a := startReplica(t, replicaConfig(t, addrs))
	testutil.Eventually(t, "A is master", a.sup.IsMaster)
	b := startReplica(t, replicaConfig(t, addrs))
	testutil.Eventually(t, "B joins the SyncStateSet", func() bool { return len(a.sup.SyncStateSet()) == 2 })
	acked := sendSync(t, a.addr(), "before", 30)

	leader := slices.IndexFunc(cs, func(c *controller.Controller) bool { return c.IsLeader() })
	require.GreaterOrEqual(t, leader, 0)
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	a.close()
	require.NoError(t, cs[leader].Shutdown(ctx))
	testutil.EventuallyWithin(t, time.Minute, "B is master under the new controller leader", b.sup.IsMaster)
	requireHolds(t, b.addr(), acked)
	requireHolds(t, b.addr(), sendSync(t, b.addr(), "after", 10))
}
