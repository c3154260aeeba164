package controller

import (
	"bytes"
	"io"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

// checkInvariants fails t when a group breaks what every command keeps: the master and the
// SyncStateSet's members are registered replicas and the master is in its SyncStateSet.
func checkInvariants(t *testing.T, f *FSM) {
	for _, g := range f.Groups() {
		if g.HasMaster() {
			if _, ok := g.Replicas[g.MasterBrokerID]; !ok {
				t.Fatalf("%s: master %d is not a replica", g.BrokerName, g.MasterBrokerID)
			}
			if !g.InSyncStateSet(g.MasterBrokerID) {
				t.Fatalf("%s: master %d not in SyncStateSet %v", g.BrokerName, g.MasterBrokerID, g.SyncStateSet)
			}
		}
		for _, id := range g.SyncStateSet {
			if _, ok := g.Replicas[id]; !ok {
				t.Fatalf("%s: SyncStateSet member %d is not a replica", g.BrokerName, id)
			}
		}
		if !slices.IsSorted(g.SyncStateSet) {
			t.Fatalf("%s: SyncStateSet %v not sorted", g.BrokerName, g.SyncStateSet)
		}
	}
}

// FuzzFSMApply: any log entry applied to a group with a master and a SyncStateSet gives a
// Result, never a panic, and leaves the state consistent.
func FuzzFSMApply(f *testing.F) {
	for _, c := range []*command{
		{Type: cmdApplyBrokerID, ClusterName: "c1", BrokerName: "broker-a", BrokerID: 4, Address: "a", RegisterCheckCode: "a;1"},
		{Type: cmdAlterSyncStateSet, BrokerName: "broker-a", MasterBrokerID: 1, MasterEpoch: 1, SyncStateSetEpoch: 2,
			SyncStateSet: []int64{1, 3}, Alive: alive(1, 3)},
		{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: noMaster, Alive: alive(2, 3), Unclean: true},
		{Type: cmdElectMaster, BrokerName: "broker-a", BrokerID: 3, Designate: true, Alive: alive(3)},
		{Type: cmdCleanBrokerData, BrokerName: "broker-a", BrokerIDs: []int64{1}},
		{Type: cmdUpdateAddress, BrokerName: "broker-a", BrokerID: 2, Address: "b"},
	} {
		data, err := c.encode()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"type":"alterSyncStateSet","brokerName":"broker-a","syncStateSet":[1,99]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := withSyncStateSet(t)
		for range 2 { // twice: a command applied again is refused or changes nothing wrongly
			if _, ok := fsm.Apply(&raft.Log{Type: raft.LogCommand, Data: data}).(*Result); !ok {
				t.Fatal("no Result")
			}
			checkInvariants(t, fsm)
		}
	})
}

// FuzzFSMRestore: any snapshot bytes restore or fail with an error, never a panic; a restored
// state snapshots to bytes that restore to the same state.
func FuzzFSMRestore(f *testing.F) {
	snap, err := withSyncStateSet(f).Snapshot()
	if err != nil {
		f.Fatal(err)
	}
	f.Add([]byte(snap.(fsmSnapshot)))
	f.Add([]byte(`{"version":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsm := NewFSM()
		if err := fsm.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
			return
		}
		s, err := fsm.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		again := NewFSM()
		if err := again.Restore(io.NopCloser(bytes.NewReader(s.(fsmSnapshot)))); err != nil {
			t.Fatalf("a snapshot of a restored state does not restore: %v", err)
		}
		if !slices.EqualFunc(fsm.Groups(), again.Groups(), func(a, b *Group) bool {
			return a.BrokerName == b.BrokerName && a.MasterEpoch == b.MasterEpoch &&
				slices.Equal(a.SyncStateSet, b.SyncStateSet) && len(a.Replicas) == len(b.Replicas)
		}) {
			t.Fatal("restore round trip changed the state")
		}
	})
}
