package controller

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

// TestClientDrivesAGroupAcrossALeaderChange walks two brokers through what a broker in
// controller mode does, with the Client given every controller (a follower first), and goes
// on after the leader dies.
func TestClientDrivesAGroupAcrossALeaderChange(t *testing.T) {
	cs := startInmemCluster(t, 3, time.Now)
	leader := waitLeader(t, cs)
	rest := others(cs, leader)
	nc, err := netio.NewClient(netio.DefaultClientConfig(), testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, nc.Close()) })
	cl := NewClient([]string{rest[0].Addr().String(), leader.Addr().String(), rest[1].Addr().String()}, nc)
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()

	got, err := cl.Leader(ctx)
	require.NoError(t, err)
	require.Equal(t, leader.Addr().String(), got, "a follower names the leader")

	// Each broker gets an id, registers, heartbeats; the first asks for an election.
	id1, err := cl.ApplyBrokerID(ctx, "c1", "broker-a", addr1, 1)
	require.NoError(t, err)
	id2, err := cl.ApplyBrokerID(ctx, "c1", "broker-a", addr2, 2)
	require.NoError(t, err)
	require.Equal(t, []int64{1, 2}, []int64{id1, id2})
	role, err := cl.RegisterBroker(ctx, "c1", "broker-a", 1, addr1)
	require.NoError(t, err)
	require.Equal(t, &Role{MasterBrokerID: noMaster, SyncStateSet: []int64{}}, role)
	for id, addr := range map[int64]string{1: addr1, 2: addr2} {
		require.NoError(t, cl.Heartbeat(ctx, &codec.BrokerHeartbeatRequestHeader{ClusterName: "c1", BrokerAddr: addr,
			BrokerName: "broker-a", BrokerID: codec.Some(id), Epoch: codec.Some[int32](0), MaxOffset: codec.Some[int64](0)}))
	}
	role, err = cl.ElectMaster(ctx, "c1", "broker-a", 1)
	require.NoError(t, err)
	require.Equal(t, &Role{MasterBrokerID: 1, MasterAddress: addr1, MasterEpoch: 1, SyncStateSetEpoch: 1,
		SyncStateSet: []int64{1}}, role)
	role, err = cl.ElectMaster(ctx, "c1", "broker-a", 2)
	require.NoError(t, err, "the master still exists: an answer, not an error")
	require.Equal(t, int64(1), role.MasterBrokerID)

	// The master adds its slave; a stale epoch is fenced.
	epoch, err := cl.AlterSyncStateSet(ctx, "broker-a", 1, 1, []int64{1, 2}, 1)
	require.NoError(t, err)
	require.Equal(t, int32(2), epoch)
	_, err = cl.AlterSyncStateSet(ctx, "broker-a", 1, 1, []int64{1}, 1)
	var re *ResponseError
	require.ErrorAs(t, err, &re)
	require.Equal(t, codec.ResponseControllerFencedSyncStateSetEpoch, re.Code)

	// The leader dies; the client finds the new one.
	stop(t, leader)
	waitLeader(t, rest)
	role, err = cl.ReplicaInfo(ctx, "broker-a")
	require.NoError(t, err)
	require.Equal(t, &Role{MasterBrokerID: 1, MasterAddress: addr1, MasterEpoch: 1, SyncStateSetEpoch: 2,
		SyncStateSet: []int64{1, 2}}, role)
}
