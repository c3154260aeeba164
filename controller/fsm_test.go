package controller

import (
	"bytes"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// applyTo applies cmd to f as a committed raft entry.
func applyTo(t testing.TB, f *FSM, cmd *command) *Result {
	t.Helper()
	data, err := cmd.encode()
	require.NoError(t, err)
	res, ok := f.Apply(&raft.Log{Type: raft.LogCommand, Data: data}).(*Result)
	require.True(t, ok)
	return res
}

func requireCode(t testing.TB, res *Result, code codec.ResponseCode) {
	t.Helper()
	require.Equal(t, code, res.Code, "remark: %s", res.Remark)
}

// threeReplicas is a group "broker-a" in "c1" with ids 1, 2, 3 and broker 1 elected first.
func threeReplicas(t testing.TB) *FSM {
	t.Helper()
	f := NewFSM()
	for id := int64(1); id <= 3; id++ {
		requireCode(t, applyTo(t, f, &command{Type: cmdApplyBrokerID, ClusterName: "c1", BrokerName: "broker-a",
			BrokerID: id, Address: addrOf(id), RegisterCheckCode: addrOf(id) + ";1"}), codec.ResponseSuccess)
	}
	res := applyTo(t, f, &command{Type: cmdElectMaster, ClusterName: "c1", BrokerName: "broker-a", BrokerID: 1})
	requireCode(t, res, codec.ResponseSuccess)
	require.True(t, res.Elected)
	return f
}

func addrOf(id int64) string { return "127.0.0.1:1091" + string(rune('0'+id)) }

func group(t *testing.T, f *FSM) *Group {
	t.Helper()
	g, ok := f.Group("broker-a")
	require.True(t, ok)
	return g
}

func alive(ids ...int64) []Candidate {
	out := make([]Candidate, len(ids))
	for i, id := range ids {
		out[i] = Candidate{BrokerID: id, Epoch: 1, MaxOffset: 100}
	}
	return out
}

func TestFSMApplyBrokerID(t *testing.T) {
	f := NewFSM()
	apply := func(id int64, check string) *Result {
		return applyTo(t, f, &command{Type: cmdApplyBrokerID, ClusterName: "c1", BrokerName: "broker-a",
			BrokerID: id, Address: "127.0.0.1:10911", RegisterCheckCode: check})
	}
	res := apply(2, "127.0.0.1:10911;1")
	requireCode(t, res, codec.ResponseControllerBrokerIDInvalid)
	require.Equal(t, "Broker-set: broker-a hasn't been registered in controller, but broker try to apply brokerId: 2", res.Remark)
	_, ok := f.Group("broker-a")
	require.False(t, ok)

	requireCode(t, apply(1, "127.0.0.1:10911;1"), codec.ResponseSuccess)
	g := group(t, f)
	require.Equal(t, int64(2), g.NextBrokerID)
	require.Equal(t, "c1", g.ClusterName)
	require.Equal(t, Replica{Address: "127.0.0.1:10911", RegisterCheckCode: "127.0.0.1:10911;1"}, g.Replicas[1])
	require.False(t, g.HasMaster())
	require.Zero(t, g.MasterEpoch)

	res = apply(1, "127.0.0.1:10921;2")
	requireCode(t, res, codec.ResponseControllerBrokerIDInvalid)
	require.Equal(t, "Fail to apply brokerId: 1 in broker-set: broker-a", res.Remark)
	requireCode(t, apply(1, "127.0.0.1:10911;1"), codec.ResponseSuccess) // the same broker again
	require.Equal(t, int64(2), group(t, f).NextBrokerID)
	requireCode(t, apply(2, "127.0.0.1:10921;2"), codec.ResponseSuccess)
	require.Equal(t, int64(3), group(t, f).NextBrokerID)
	require.Equal(t, []int64{1, 2}, group(t, f).ReplicaIDs())

	requireCode(t, applyTo(t, f, &command{Type: cmdUpdateAddress, BrokerName: "broker-a", BrokerID: 2,
		Address: "127.0.0.2:10921"}), codec.ResponseSuccess)
	require.Equal(t, "127.0.0.2:10921", group(t, f).Replicas[2].Address)
	requireCode(t, applyTo(t, f, &command{Type: cmdUpdateAddress, BrokerName: "broker-a", BrokerID: 7,
		Address: "x"}), codec.ResponseControllerBrokerNeedToBeRegistered)
}

func TestFSMFirstElectionTakesTheRequester(t *testing.T) {
	f := threeReplicas(t)
	g := group(t, f)
	require.Equal(t, int64(1), g.MasterBrokerID)
	require.Equal(t, addrOf(1), g.MasterAddress())
	require.Equal(t, int32(1), g.MasterEpoch)
	require.Equal(t, int32(1), g.SyncStateSetEpoch)
	require.Equal(t, []int64{1}, g.SyncStateSet)
}

func TestFSMAlterSyncStateSet(t *testing.T) {
	f := threeReplicas(t)
	alter := func(master int64, masterEpoch, setEpoch int32, set []int64, live []Candidate) *Result {
		return applyTo(t, f, &command{Type: cmdAlterSyncStateSet, BrokerName: "broker-a", MasterBrokerID: master,
			MasterEpoch: masterEpoch, SyncStateSetEpoch: setEpoch, SyncStateSet: set, Alive: live})
	}
	for _, tc := range []struct {
		name        string
		master      int64
		masterEpoch int32
		setEpoch    int32
		set         []int64
		live        []Candidate
		code        codec.ResponseCode
		remark      string
	}{
		{"not the master", 2, 1, 1, []int64{1, 2}, alive(1, 2), codec.ResponseControllerInvalidMaster,
			"Rejecting alter syncStateSet request because the current leader is:{1}, not {2}"},
		{"stale master epoch", 1, 0, 1, []int64{1, 2}, alive(1, 2), codec.ResponseControllerFencedMasterEpoch,
			"Rejecting alter syncStateSet request because the current master epoch is:{1}, not {0}"},
		{"stale set epoch", 1, 1, 0, []int64{1, 2}, alive(1, 2), codec.ResponseControllerFencedSyncStateSetEpoch,
			"Rejecting alter syncStateSet request because the current syncStateSet epoch is:{1}, not {0}"},
		{"unknown replica", 1, 1, 1, []int64{1, 9}, alive(1, 9), codec.ResponseControllerInvalidReplicas,
			"Rejecting alter syncStateSet request because the replicas {9} don't exist"},
		{"dead replica", 1, 1, 1, []int64{1, 2}, alive(1), codec.ResponseControllerBrokerNotAlive,
			"Rejecting alter syncStateSet request because the replicas {2} don't alive"},
		{"without the master", 1, 1, 1, []int64{2, 3}, alive(2, 3), codec.ResponseControllerAlterSyncStateSetFailed,
			"Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {1}"},
		{"unchanged", 1, 1, 1, []int64{1}, alive(1), codec.ResponseControllerAlterSyncStateSetFailed,
			"The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet"},
	} {
		res := alter(tc.master, tc.masterEpoch, tc.setEpoch, tc.set, tc.live)
		requireCode(t, res, tc.code)
		require.Equal(t, tc.remark, res.Remark, tc.name)
		g := group(t, f)
		require.Equal(t, []int64{1}, g.SyncStateSet, tc.name)
		require.Equal(t, int32(1), g.SyncStateSetEpoch, tc.name)
	}

	res := alter(1, 1, 1, []int64{2, 1, 2}, alive(1, 2))
	requireCode(t, res, codec.ResponseSuccess)
	require.Equal(t, []int64{1, 2}, res.Group.SyncStateSet)
	require.Equal(t, int32(2), res.Group.SyncStateSetEpoch)
	require.Equal(t, int32(1), res.Group.MasterEpoch, "a SyncStateSet change keeps the master epoch")
	// The old epoch is fenced now.
	requireCode(t, alter(1, 1, 1, []int64{1}, alive(1)), codec.ResponseControllerFencedSyncStateSetEpoch)
	requireCode(t, alter(1, 1, 2, []int64{1}, alive(1)), codec.ResponseSuccess)
	require.Equal(t, int32(3), group(t, f).SyncStateSetEpoch)
}

// withSyncStateSet makes broker 1's SyncStateSet {1, 2}.
func withSyncStateSet(t testing.TB) *FSM {
	f := threeReplicas(t)
	requireCode(t, applyTo(t, f, &command{Type: cmdAlterSyncStateSet, BrokerName: "broker-a", MasterBrokerID: 1,
		MasterEpoch: 1, SyncStateSetEpoch: 1, SyncStateSet: []int64{1, 2}, Alive: alive(1, 2)}), codec.ResponseSuccess)
	return f
}

func TestFSMElectPicksTheInSyncReplicaWithTheLargestOffset(t *testing.T) {
	f := withSyncStateSet(t)
	// Broker 3 has more bytes but is not in the SyncStateSet: it may lack acknowledged ones
	// it never had and hold others nobody acknowledged.
	res := applyTo(t, f, &command{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: noMaster, Alive: []Candidate{
		{BrokerID: 2, Epoch: 1, MaxOffset: 100}, {BrokerID: 3, Epoch: 1, MaxOffset: 500}}})
	requireCode(t, res, codec.ResponseSuccess)
	require.True(t, res.Elected)
	g := res.Group
	require.Equal(t, int64(2), g.MasterBrokerID)
	require.Equal(t, int32(2), g.MasterEpoch)
	require.Equal(t, int32(3), g.SyncStateSetEpoch)
	require.Equal(t, []int64{2}, g.SyncStateSet)
}

func TestElectOrder(t *testing.T) {
	set := []int64{1, 2, 3, 4}
	for _, tc := range []struct {
		name   string
		alive  []Candidate
		old    int64
		prefer int64
		want   int64
	}{
		{"largest offset", []Candidate{{2, 1, 10, 0}, {3, 1, 30, 0}, {4, 1, 20, 0}}, 1, noMaster, 3},
		{"epoch first", []Candidate{{2, 2, 10, 0}, {3, 1, 30, 0}}, 1, noMaster, 2},
		{"priority breaks an offset tie", []Candidate{{2, 1, 30, 5}, {3, 1, 30, 1}}, 1, noMaster, 3},
		{"lowest id breaks a full tie", []Candidate{{4, 1, 30, 1}, {2, 1, 30, 1}}, 1, noMaster, 2},
		{"old master kept", []Candidate{{1, 1, 10, 0}, {3, 1, 30, 0}}, 1, noMaster, 1},
		{"designated", []Candidate{{1, 1, 10, 0}, {3, 1, 30, 0}, {4, 1, 40, 0}}, 1, 3, 3},
		{"designated but dead", []Candidate{{1, 1, 10, 0}, {4, 1, 40, 0}}, 1, 3, noMaster},
		{"nobody alive", nil, 1, noMaster, noMaster},
	} {
		require.Equal(t, tc.want, elect(set, nil, tc.alive, tc.old, tc.prefer), tc.name)
	}
}

func TestFSMElectRefusedWithoutLiveInSyncReplica(t *testing.T) {
	f := withSyncStateSet(t)
	// Only broker 3, outside the SyncStateSet, is alive. A broker asking fails and changes
	// nothing.
	res := applyTo(t, f, &command{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: 3, Alive: alive(3)})
	requireCode(t, res, codec.ResponseControllerElectMasterFailed)
	require.Equal(t, "Failed to elect a new master", res.Remark)
	require.Equal(t, int64(1), group(t, f).MasterBrokerID)
	require.Equal(t, int32(1), group(t, f).MasterEpoch)

	// The controller asking (its master is gone) records that there is no master.
	res = applyTo(t, f, &command{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: noMaster, Alive: alive(3)})
	requireCode(t, res, codec.ResponseControllerMasterNotAvailable)
	require.Equal(t, "Old master has down and failed to elect a new broker master", res.Remark)
	g := group(t, f)
	require.False(t, g.HasMaster())
	require.Equal(t, int32(2), g.MasterEpoch)
	require.Equal(t, []int64{1, 2}, g.SyncStateSet, "the SyncStateSet waits for its members")
	require.Equal(t, int32(2), g.SyncStateSetEpoch)

	// With unclean election enabled broker 3 is taken.
	res = applyTo(t, f, &command{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: noMaster, Alive: alive(3),
		Unclean: true})
	requireCode(t, res, codec.ResponseSuccess)
	require.Equal(t, int64(3), res.Group.MasterBrokerID)
	require.Equal(t, int32(3), res.Group.MasterEpoch)
	require.Equal(t, []int64{3}, res.Group.SyncStateSet)
	require.Equal(t, int32(3), res.Group.SyncStateSetEpoch)
}

func TestFSMElectKeepsALiveMaster(t *testing.T) {
	f := withSyncStateSet(t)
	res := applyTo(t, f, &command{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: noMaster, Alive: alive(1, 2)})
	requireCode(t, res, codec.ResponseControllerMasterStillExist)
	require.Equal(t, "The old master 1 is still alive, not need to elect new master for broker broker-a", res.Remark)
	require.False(t, res.Elected)
	require.Equal(t, int32(1), res.Group.MasterEpoch)

	res = applyTo(t, f, &command{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: 2, Designate: true,
		Alive: alive(1, 2)})
	requireCode(t, res, codec.ResponseSuccess)
	require.Equal(t, int64(2), res.Group.MasterBrokerID)
	require.Equal(t, int32(2), res.Group.MasterEpoch)

	requireCode(t, applyTo(t, f, &command{Type: cmdElectMaster, BrokerName: "nope", BrokerID: noMaster}),
		codec.ResponseControllerBrokerNeedToBeRegistered)
}

func TestFSMCleanBrokerData(t *testing.T) {
	f := withSyncStateSet(t)
	requireCode(t, applyTo(t, f, &command{Type: cmdCleanBrokerData, BrokerName: "broker-a", BrokerIDs: []int64{2, 3}}),
		codec.ResponseSuccess)
	g := group(t, f)
	require.Equal(t, []int64{1}, g.ReplicaIDs())
	require.Equal(t, []int64{1}, g.SyncStateSet)
	requireCode(t, applyTo(t, f, &command{Type: cmdCleanBrokerData, BrokerName: "broker-a"}), codec.ResponseSuccess)
	_, ok := f.Group("broker-a")
	require.False(t, ok)
	res := applyTo(t, f, &command{Type: cmdCleanBrokerData, BrokerName: "broker-a"})
	requireCode(t, res, codec.ResponseControllerInvalidCleanBrokerMetadata)
	require.Equal(t, "Broker broker-a is not existed,clean broker data failure.", res.Remark)
}

// memSink is a raft.SnapshotSink into memory.
type memSink struct {
	bytes.Buffer
	closed bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

func TestFSMSnapshotRestoreGivesIdenticalState(t *testing.T) {
	f := withSyncStateSet(t)
	applyTo(t, f, &command{Type: cmdApplyBrokerID, ClusterName: "c1", BrokerName: "broker-b", BrokerID: 1,
		Address: "127.0.0.1:20911", RegisterCheckCode: "127.0.0.1:20911;5"})
	applyTo(t, f, &command{Type: cmdControllerAddress, ControllerID: "n0", Address: "127.0.0.1:9879"})

	snap, err := f.Snapshot()
	require.NoError(t, err)
	var sink memSink
	require.NoError(t, snap.Persist(&sink))
	snap.Release()
	require.True(t, sink.closed)

	restored := NewFSM()
	require.NoError(t, restored.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))))
	require.Equal(t, f.Groups(), restored.Groups())
	addr, ok := restored.ControllerAddress("n0")
	require.True(t, ok)
	require.Equal(t, "127.0.0.1:9879", addr)

	// The restored FSM goes on exactly as the original.
	cmd := &command{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: noMaster, Alive: alive(2)}
	require.Equal(t, applyTo(t, f, cmd), applyTo(t, restored, cmd))
	require.Equal(t, f.Groups(), restored.Groups())

	for _, bad := range []string{"", "{", `{"version":2}`, `{"version":1,"groups":{"x":{"brokerName":"y","replicas":{}}}}`} {
		err := NewFSM().Restore(io.NopCloser(bytes.NewReader([]byte(bad))))
		require.ErrorIs(t, err, ErrCorruptState, bad)
	}
}

func TestFSMRefusesUndecodableEntries(t *testing.T) {
	f := NewFSM()
	res, ok := f.Apply(&raft.Log{Type: raft.LogCommand, Data: []byte("{")}).(*Result)
	require.True(t, ok)
	requireCode(t, res, codec.ResponseSystemError)
	requireCode(t, applyTo(t, f, &command{Type: "nope"}), codec.ResponseSystemError)
	require.Nil(t, f.Apply(&raft.Log{Type: raft.LogNoop}))
}
