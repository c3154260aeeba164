package controller

import (
	"testing"
	"time"

	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// groupWithSyncStateSet makes broker-a's replicas 1 (master, at addr1), 2 (at addr2) and 3
// (at addr3) with SyncStateSet {1, 2}, each heartbeating on its own connection, and
// returns those connections.
func groupWithSyncStateSet(t *testing.T, c *Controller, addr2 string) (b1, b2, b3 client) {
	t.Helper()
	b1, b2, b3 = dial(t, c), dial(t, c), dial(t, c)
	b1.registerReplica(1, addr1)
	b2.registerReplica(2, addr2)
	b3.registerReplica(3, addr3)
	b1.heartbeat(1, addr1, 1, 100)
	b2.heartbeat(2, addr2, 1, 90)
	b3.heartbeat(3, addr3, 1, 500)
	b1.requireOK(codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{ClusterName: "c1",
		BrokerName: "broker-a", BrokerID: 1}, nil)
	set, err := (&codec.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}).Encode()
	require.NoError(t, err)
	b1.requireOK(codec.RequestControllerAlterSyncStateSet, &codec.AlterSyncStateSetRequestHeader{BrokerName: "broker-a",
		MasterBrokerID: codec.Some[int64](1), MasterEpoch: codec.Some[int32](1)}, set)
	return b1, b2, b3
}

func TestHeartbeatTimeoutElectsFromSyncStateSetAndNotifies(t *testing.T) {
	clock := testutil.NewManualClock()
	c := waitLeader(t, startInmemCluster(t, 1, clock.Now))
	stub := startBrokerStub(t)
	_, b2, b3 := groupWithSyncStateSet(t, c, stub.addr())

	// The master goes silent; the others keep heartbeating. Broker 3 has the most bytes but
	// is not in the SyncStateSet.
	clock.Advance(6 * time.Second)
	b2.heartbeat(2, stub.addr(), 1, 90)
	b3.heartbeat(3, addr3, 1, 500)
	clock.Advance(5 * time.Second) // 11 s since broker 1's last heartbeat: past the 10 s timeout

	testutil.Eventually(t, "broker 2 elected", func() bool {
		g, _ := c.FSM().Group("broker-a")
		return g.MasterBrokerID == 2
	})
	g, _ := c.FSM().Group("broker-a")
	require.Equal(t, int32(2), g.MasterEpoch)
	require.Equal(t, []int64{2}, g.SyncStateSet)
	require.Equal(t, int32(3), g.SyncStateSetEpoch)
	// The first election and this one (counted once the apply returns to the proposer).
	testutil.Eventually(t, "two elections counted", func() bool {
		return promtest.ToFloat64(c.metrics.elections.WithLabelValues("new_master_elected")) == 2
	})
	require.Equal(t, 2.0, promtest.ToFloat64(c.metrics.masterEpoch.WithLabelValues("broker-a")))
	require.Equal(t, 1.0, promtest.ToFloat64(c.metrics.syncStateSize.WithLabelValues("broker-a")))
	require.Equal(t, 1.0, promtest.ToFloat64(c.metrics.leader))

	// The live replicas are told (broker 2 was told of the first election too).
	n := stub.next(t)
	if n.ExtFields["masterEpoch"] == "1" {
		n = stub.next(t)
	}
	require.Equal(t, int32(codec.RequestNotifyBrokerRoleChanged), n.Code)
	require.True(t, n.IsOneway())
	require.Equal(t, map[string]string{"masterBrokerId": "2", "masterAddress": stub.addr(), "masterEpoch": "2",
		"syncStateSetEpoch": "3"}, n.ExtFields)
	require.Equal(t, `{"syncStateSet":[2],"syncStateSetEpoch":3}`, string(n.Body))
}

func TestMasterConnectionCloseElectsAtOnce(t *testing.T) {
	clock := testutil.NewManualClock() // never advanced: no heartbeat times out
	c := waitLeader(t, startInmemCluster(t, 1, clock.Now))
	b1, _, _ := groupWithSyncStateSet(t, c, addr2)
	require.NoError(t, b1.Close()) // the master's process dies: its connection closes

	testutil.Eventually(t, "broker 2 elected", func() bool {
		g, _ := c.FSM().Group("broker-a")
		return g.MasterBrokerID == 2
	})
	g, _ := c.FSM().Group("broker-a")
	require.Equal(t, int32(2), g.MasterEpoch)
	require.Equal(t, []int64{2}, g.SyncStateSet)
}

func TestUncleanElectionRefusedByDefault(t *testing.T) {
	clock := testutil.NewManualClock()
	c := waitLeader(t, startInmemCluster(t, 1, clock.Now))
	_, _, b3 := groupWithSyncStateSet(t, c, addr2)

	// Only broker 3, outside the SyncStateSet, is alive after the timeout.
	clock.Advance(6 * time.Second)
	b3.heartbeat(3, addr3, 1, 500)
	clock.Advance(5 * time.Second)
	testutil.Eventually(t, "the group has no master", func() bool {
		g, _ := c.FSM().Group("broker-a")
		return !g.HasMaster()
	})
	g, _ := c.FSM().Group("broker-a")
	require.Equal(t, int32(2), g.MasterEpoch)
	require.Equal(t, []int64{1, 2}, g.SyncStateSet)
	testutil.Eventually(t, "a failed election counted", func() bool {
		return promtest.ToFloat64(c.metrics.elections.WithLabelValues("no_master_elected")) == 1
	})

	// Broker 3 asking for an election fails, until an operator enables unclean elections;
	// then the controller's scan or broker 3's request elects it, whichever comes first.
	resp := b3.call(codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{ClusterName: "c1",
		BrokerName: "broker-a", BrokerID: 3}, nil)
	require.Equal(t, int32(codec.ResponseControllerElectMasterFailed), resp.Code)
	b3.requireOK(codec.RequestUpdateControllerConfig, nil, []byte("enableElectUncleanMaster=true"))
	resp = b3.call(codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{ClusterName: "c1",
		BrokerName: "broker-a", BrokerID: 3}, nil)
	require.Contains(t, []int32{int32(codec.ResponseSuccess), int32(codec.ResponseControllerMasterStillExist)}, resp.Code, resp.Remark)
	require.Equal(t, "3", resp.ExtFields["masterBrokerId"])
	require.Equal(t, "3", resp.ExtFields["masterEpoch"])
}

// TestNoElectionInANewLeadersGracePeriod: a controller that just became leader has heard no
// heartbeats yet (the brokers were sending them to the old leader), so for one heartbeat
// timeout it elects nobody, then it does.
func TestNoElectionInANewLeadersGracePeriod(t *testing.T) {
	clock := testutil.NewManualClock()
	c := waitLeader(t, startInmemCluster(t, 1, clock.Now))
	_, b2, _ := groupWithSyncStateSet(t, c, addr2)

	// This controller leads since "now" below (set first: the scan runs all along)...
	c.leaderSince.Store(clock.Now().Add(11 * time.Second).UnixNano())
	clock.Advance(11 * time.Second) // ...and broker 1's heartbeats stopped 11 s ago.
	// Broker 2's last heartbeat is as old, so the scan may already have expired it and closed its
	// connection (as Java does): it comes back on a new one.
	b2 = dial(t, c)
	b2.heartbeat(2, addr2, 1, 90)
	c.scan()
	g, _ := c.FSM().Group("broker-a")
	require.Equal(t, int64(1), g.MasterBrokerID, "no election within the grace period")
	require.Equal(t, int32(1), g.MasterEpoch)

	clock.Advance(5 * time.Second)
	b2.heartbeat(2, addr2, 1, 90)
	clock.Advance(6 * time.Second) // past the grace period; broker 2 heartbeated 6 s ago
	testutil.Eventually(t, "broker 2 elected", func() bool {
		g, _ := c.FSM().Group("broker-a")
		return g.MasterBrokerID == 2
	})
}

// TestMasterlessGroupElectsAReturningInSyncReplica: a group left without a master (no member
// of its SyncStateSet was alive) gets one as soon as a member heartbeats again.
func TestMasterlessGroupElectsAReturningInSyncReplica(t *testing.T) {
	clock := testutil.NewManualClock()
	c := waitLeader(t, startInmemCluster(t, 1, clock.Now))
	_, b2, b3 := groupWithSyncStateSet(t, c, addr2)

	clock.Advance(6 * time.Second)
	b3.heartbeat(3, addr3, 1, 500) // only broker 3, outside the SyncStateSet, stays alive
	clock.Advance(5 * time.Second)
	testutil.Eventually(t, "the group has no master", func() bool {
		g, _ := c.FSM().Group("broker-a")
		return !g.HasMaster()
	})

	_ = b2                                // its connection was closed when its heartbeats timed out, as Java closes it
	dial(t, c).heartbeat(2, addr2, 1, 90) // broker 2 is back
	testutil.Eventually(t, "broker 2 elected", func() bool {
		g, _ := c.FSM().Group("broker-a")
		return g.MasterBrokerID == 2
	})
	g, _ := c.FSM().Group("broker-a")
	require.Equal(t, int32(3), g.MasterEpoch, "1, then no master (2), then broker 2 (3)")
	require.Equal(t, []int64{2}, g.SyncStateSet)
}
