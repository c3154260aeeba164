package controller

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ringmq/ringmq/codec"
)

// firstBrokerID is the id the first replica of a group applies for (Java
// MixAll.FIRST_BROKER_CONTROLLER_ID); ids count up from it.
const firstBrokerID int64 = 1

// noMaster is Group.MasterBrokerID while the group has no master.
const noMaster int64 = -1

// Replica is one broker of a group as the controller records it.
type Replica struct {
	Address string `json:"address"`
	// RegisterCheckCode is what the broker sent when it applied for its id
	// ("brokerAddr;timestamp"); the same code may apply for the same id again.
	RegisterCheckCode string `json:"registerCheckCode"`
}

// Group is one broker group (all replicas of one brokerName): Java's BrokerReplicaInfo and
// SyncStateInfo together. A Group value handed out by the FSM is a copy.
type Group struct {
	ClusterName string `json:"clusterName"`
	BrokerName  string `json:"brokerName"`
	// Replicas maps brokerId to the replica.
	Replicas map[int64]Replica `json:"replicas"`
	// NextBrokerID is what CONTROLLER_GET_NEXT_BROKER_ID answers: one more per replica
	// added, as Java counts it.
	NextBrokerID int64 `json:"nextBrokerId"`
	// MasterBrokerID is the master's id, noMaster (-1) while there is none.
	MasterBrokerID int64 `json:"masterBrokerId"`
	// MasterEpoch counts master changes (0: never elected); SyncStateSetEpoch counts changes
	// of SyncStateSet.
	MasterEpoch       int32 `json:"masterEpoch"`
	SyncStateSetEpoch int32 `json:"syncStateSetEpoch"`
	// SyncStateSet holds the ids of the replicas in sync with the master, sorted.
	SyncStateSet []int64 `json:"syncStateSet"`
}

func newGroup(clusterName, brokerName string) *Group {
	return &Group{
		ClusterName: clusterName, BrokerName: brokerName,
		Replicas: map[int64]Replica{}, NextBrokerID: firstBrokerID, MasterBrokerID: noMaster,
		SyncStateSet: []int64{},
	}
}

func (g *Group) clone() *Group {
	c := *g
	c.Replicas = maps.Clone(g.Replicas)
	c.SyncStateSet = slices.Clone(g.SyncStateSet)
	return &c
}

// HasMaster reports whether the group has a master.
func (g *Group) HasMaster() bool { return g.MasterBrokerID != noMaster }

// MasterAddress is the master's address, "" without a master.
func (g *Group) MasterAddress() string {
	if !g.HasMaster() {
		return ""
	}
	return g.Replicas[g.MasterBrokerID].Address
}

// InSyncStateSet reports whether id is in the SyncStateSet.
func (g *Group) InSyncStateSet(id int64) bool { return slices.Contains(g.SyncStateSet, id) }

// ReplicaIDs returns the replicas' ids, ascending.
func (g *Group) ReplicaIDs() []int64 { return slices.Sorted(maps.Keys(g.Replicas)) }

// BrokerAddrs is the group's id → address table (BrokerMemberGroup.brokerAddrs).
func (g *Group) BrokerAddrs() map[int64]string {
	m := make(map[int64]string, len(g.Replicas))
	for id, r := range g.Replicas {
		m[id] = r.Address
	}
	return m
}

// syncStateSetBody is the group's SyncStateSet as a response body.
func (g *Group) syncStateSetBody() ([]byte, error) {
	s := codec.SyncStateSet{SyncStateSet: g.SyncStateSet, SyncStateSetEpoch: g.SyncStateSetEpoch}
	return s.Encode()
}

// setSyncStateSet replaces the set (sorted, without duplicates) and bumps its epoch, as
// Java's SyncStateInfo.updateSyncStateSetInfo does.
func (g *Group) setSyncStateSet(ids []int64) {
	s := slices.Clone(ids)
	slices.Sort(s)
	g.SyncStateSet = slices.Compact(s)
	g.SyncStateSetEpoch++
}

// setMaster records a new master (or noMaster) and bumps the master epoch, as Java's
// SyncStateInfo.updateMasterInfo does.
func (g *Group) setMaster(id int64) {
	g.MasterBrokerID = id
	g.MasterEpoch++
}

// formatIDs writes ids as "1,2,3" for remarks and logs.
func formatIDs(ids []int64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	return b.String()
}
