package controller

import (
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// buildGroup registers broker-a's replicas 1 and 2 through the leader, elects 1 and puts 2
// in its SyncStateSet.
func buildGroup(t *testing.T, leader *Controller) {
	t.Helper()
	cl := dial(t, leader)
	cl.registerReplica(1, addr1)
	cl.registerReplica(2, addr2)
	cl.heartbeat(1, addr1, 0, 0)
	cl.heartbeat(2, addr2, 0, 0)
	cl.requireOK(codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{ClusterName: "c1",
		BrokerName: "broker-a", BrokerID: 1}, nil)
	set, err := (&codec.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}).Encode()
	require.NoError(t, err)
	cl.requireOK(codec.RequestControllerAlterSyncStateSet, &codec.AlterSyncStateSetRequestHeader{BrokerName: "broker-a",
		MasterBrokerID: codec.Some[int64](1), MasterEpoch: codec.Some[int32](1)}, set)
}

// requireGroupState checks broker-a as buildGroup left it, through c's port.
func requireGroupState(t *testing.T, c *Controller) {
	t.Helper()
	resp := dial(t, c).requireOK(codec.RequestControllerGetReplicaInfo, &codec.BrokerNameRequestHeader{BrokerName: "broker-a"}, nil)
	require.Equal(t, map[string]string{"masterBrokerId": "1", "masterAddress": addr1, "masterEpoch": "1"}, resp.ExtFields)
	require.Equal(t, `{"syncStateSet":[1,2],"syncStateSetEpoch":2}`, string(resp.Body))
}

func others(cs []*Controller, not *Controller) []*Controller {
	var out []*Controller
	for _, c := range cs {
		if c != not {
			out = append(out, c)
		}
	}
	return out
}

func TestClusterLeaderLossKeepsServingAndState(t *testing.T) {
	cs := startInmemCluster(t, 3, time.Now)
	leader := waitLeader(t, cs)
	buildGroup(t, leader)
	requireGroupState(t, leader)

	// A follower sends callers to the leader.
	follower := others(cs, leader)[0]
	resp := dial(t, follower).call(codec.RequestControllerGetReplicaInfo, &codec.BrokerNameRequestHeader{BrokerName: "broker-a"}, nil)
	require.Equal(t, int32(codec.ResponseControllerNotLeader), resp.Code)
	require.Equal(t, "The controller is not in leader state", resp.Remark)
	require.Equal(t, leader.cfg.SelfID, resp.ExtFields["controllerLeaderId"])
	require.Equal(t, leader.Addr().String(), resp.ExtFields["controllerLeaderAddress"])
	resp = dial(t, follower).requireOK(codec.RequestControllerGetMetadataInfo, nil, nil)
	require.Equal(t, "false", resp.ExtFields["isLeader"])
	require.Equal(t, leader.Addr().String(), resp.ExtFields["controllerLeaderAddress"])

	// The leader dies; the other two elect a leader that has the state and takes writes.
	stop(t, leader)
	rest := others(cs, leader)
	next := waitLeader(t, rest)
	requireGroupState(t, next)
	dial(t, next).registerReplica(3, addr3)
	for _, c := range rest {
		testutil.Eventually(t, "both controllers hold replica 3", func() bool {
			g, ok := c.FSM().Group("broker-a")
			return ok && len(g.Replicas) == 3
		})
	}
	require.Equal(t, rest[0].FSM().Groups(), rest[1].FSM().Groups())
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// tcpConfigs are n controllers on raft TCP transports with bolt stores in temporary
// directories.
func tcpConfigs(t *testing.T, n int) []Config {
	peers := make([]Peer, n)
	for i := range n {
		peers[i] = Peer{ID: "n" + strconv.Itoa(i), Addr: freeAddr(t)}
	}
	cfgs := make([]Config, n)
	for i := range n {
		cfgs[i] = testConfig(t, peers[i].ID, peers)
	}
	return cfgs
}

func startTCP(t *testing.T, cfg Config) *Controller {
	t.Helper()
	c, err := New(cfg, false, testLogger(), prometheus.NewRegistry())
	require.NoError(t, err)
	require.NoError(t, c.Start())
	t.Cleanup(func() { stop(t, c) })
	return c
}

func TestClusterOverTCPAndBoltSurvivesRestarts(t *testing.T) {
	cfgs := tcpConfigs(t, 3)
	cs := make([]*Controller, 3)
	for i, cfg := range cfgs {
		cs[i] = startTCP(t, cfg)
	}
	leader := waitLeader(t, cs)
	buildGroup(t, leader)
	require.NoError(t, leader.raftPtr.Load().Snapshot().Error(), "a snapshot, so that restarts restore from one")

	// Kill the leader: the other two serve, with the state.
	stop(t, leader)
	killed := leader
	rest := others(cs, leader)
	next := waitLeader(t, rest)
	requireGroupState(t, next)
	dial(t, next).registerReplica(3, addr3)

	// The killed controller comes back from its store and catches up.
	for i, c := range cs {
		if c == killed {
			cs[i] = startTCP(t, cfgs[i])
			back := cs[i]
			testutil.Eventually(t, "the restarted controller has replica 3", func() bool {
				g, ok := back.FSM().Group("broker-a")
				return ok && len(g.Replicas) == 3
			})
		}
	}

	// Every controller restarts: the state is still there.
	want := waitLeader(t, cs).FSM().Groups()
	for _, c := range cs {
		stop(t, c)
	}
	for i := range cs {
		cs[i] = startTCP(t, cfgs[i])
	}
	leader = waitLeader(t, cs)
	require.Equal(t, want, leader.FSM().Groups())
	requireGroupState(t, leader)
}

func TestSingleControllerRestartKeepsState(t *testing.T) {
	cfg := tcpConfigs(t, 1)[0]
	c := startTCP(t, cfg)
	waitLeader(t, []*Controller{c})
	buildGroup(t, c)
	stop(t, c)

	c = startTCP(t, cfg)
	waitLeader(t, []*Controller{c})
	requireGroupState(t, c)
	dial(t, c).registerReplica(3, addr3) // and it takes writes
}

// TestStoredPeersMustMatch: a store whose raft group is not controllerPeers is refused (two
// controllers disagreeing on the group could each elect a leader), and releases the store.
func TestStoredPeersMustMatch(t *testing.T) {
	cfg := tcpConfigs(t, 1)[0]
	c := startTCP(t, cfg)
	waitLeader(t, []*Controller{c})
	stop(t, c)

	changed := cfg
	changed.Peers = append(slices.Clone(cfg.Peers), Peer{ID: "n1", Addr: freeAddr(t)})
	c, err := New(changed, false, testLogger(), prometheus.NewRegistry())
	require.NoError(t, err)
	err = c.Start()
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "differs from the raft group \""+FormatPeers(cfg.Peers)+"\" stored in controllerStorePath")

	c = startTCP(t, cfg) // the store was released
	waitLeader(t, []*Controller{c})
}
