package controller

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/ringmq/ringmq/codec"
)

// commandType names what a raft log entry does to the FSM.
type commandType string

const (
	// cmdApplyBrokerID adds a replica with the id it applied for (CONTROLLER_APPLY_BROKER_ID).
	cmdApplyBrokerID commandType = "applyBrokerId"
	// cmdUpdateAddress records a registered replica's new address (CONTROLLER_REGISTER_BROKER).
	cmdUpdateAddress commandType = "updateBrokerAddress"
	// cmdAlterSyncStateSet replaces a group's SyncStateSet (CONTROLLER_ALTER_SYNC_STATE_SET).
	cmdAlterSyncStateSet commandType = "alterSyncStateSet"
	// cmdElectMaster elects a master (CONTROLLER_ELECT_MASTER, or the heartbeat scan).
	cmdElectMaster commandType = "electMaster"
	// cmdCleanBrokerData removes replicas or a whole group (CLEAN_BROKER_DATA).
	cmdCleanBrokerData commandType = "cleanBrokerData"
	// cmdControllerAddress records a controller's remoting address; a controller appends it
	// when it becomes leader, so that followers can tell callers where the leader answers.
	cmdControllerAddress commandType = "controllerAddress"
)

// Candidate is what the leader knew of one live replica when it proposed an election or a
// SyncStateSet: the FSM decides from these, so that every controller applying the entry
// decides the same.
type Candidate struct {
	BrokerID         int64 `json:"brokerId"`
	Epoch            int32 `json:"epoch"`
	MaxOffset        int64 `json:"maxOffset"`
	ElectionPriority int32 `json:"electionPriority"`
}

// command is one raft log entry's payload (JSON). Which fields matter depends on Type.
type command struct {
	Type              commandType `json:"type"`
	ClusterName       string      `json:"clusterName,omitempty"`
	BrokerName        string      `json:"brokerName,omitempty"`
	BrokerID          int64       `json:"brokerId"`
	Address           string      `json:"address,omitempty"`
	RegisterCheckCode string      `json:"registerCheckCode,omitempty"`
	// alterSyncStateSet: the sender's view, checked against the group's.
	MasterBrokerID    int64   `json:"masterBrokerId,omitempty"`
	MasterEpoch       int32   `json:"masterEpoch,omitempty"`
	SyncStateSetEpoch int32   `json:"syncStateSetEpoch,omitempty"`
	SyncStateSet      []int64 `json:"syncStateSet,omitempty"`
	// electMaster: BrokerID -1 = triggered by the controller; Designate = elect BrokerID or
	// nothing; Unclean = replicas outside the SyncStateSet may be elected.
	Designate bool `json:"designate,omitempty"`
	Unclean   bool `json:"unclean,omitempty"`
	// Alive: the replicas alive when proposed (electMaster, alterSyncStateSet).
	Alive []Candidate `json:"alive,omitempty"`
	// cleanBrokerData: the ids to remove; empty = the whole group.
	BrokerIDs []int64 `json:"brokerIds,omitempty"`
	// controllerAddress.
	ControllerID string `json:"controllerId,omitempty"`
}

func (c *command) encode() ([]byte, error) { return json.Marshal(c) }

func decodeCommand(data []byte) (*command, error) {
	var c command
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%w: log entry: %w", ErrCorruptState, err)
	}
	return &c, nil
}

// Result is what applying a command gives back (raft's ApplyFuture.Response): RocketMQ's
// response code and remark, and the group as the command left it.
type Result struct {
	Code   codec.ResponseCode
	Remark string
	// Group is a copy of the group after the command; nil when it does not exist (any more).
	Group *Group
	// Elected: electMaster chose a new master.
	Elected bool
}

func fail(code codec.ResponseCode, format string, args ...any) *Result {
	return &Result{Code: code, Remark: fmt.Sprintf(format, args...)}
}

// FSM is the controller's replicated state machine (raft.FSM): every broker group's
// replicas, master, epochs and SyncStateSet, plus the controllers' remoting addresses. Its
// commands check what Java's ReplicasInfoManager checks before it emits an event, so a
// command proposed on a stale view is refused when applied rather than applied wrongly.
// Safe for concurrent use: raft applies from one goroutine while requests read.
type FSM struct {
	mu          sync.RWMutex
	groups      map[string]*Group // brokerName → group
	controllers map[string]string // controller id → remoting address
	// changed, if not nil, is called after a command or a restore changed state, outside
	// the lock (metrics).
	changed func()
}

// NewFSM returns an empty FSM.
func NewFSM() *FSM {
	return &FSM{groups: map[string]*Group{}, controllers: map[string]string{}}
}

var _ raft.FSM = (*FSM)(nil)

// Apply applies one committed raft log entry and returns a *Result.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	c, err := decodeCommand(l.Data)
	if err != nil {
		return fail(codec.ResponseSystemError, "%v", err)
	}
	res := f.apply(c)
	if f.changed != nil {
		f.changed()
	}
	return res
}

// apply runs one command under the lock.
func (f *FSM) apply(c *command) *Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	var res *Result
	switch c.Type {
	case cmdApplyBrokerID:
		res = f.applyBrokerID(c)
	case cmdUpdateAddress:
		res = f.updateAddress(c)
	case cmdAlterSyncStateSet:
		res = f.alterSyncStateSet(c)
	case cmdElectMaster:
		res = f.electMaster(c)
	case cmdCleanBrokerData:
		res = f.cleanBrokerData(c)
	case cmdControllerAddress:
		f.controllers[c.ControllerID] = c.Address
		return &Result{}
	default:
		return fail(codec.ResponseSystemError, "unknown controller command %q", c.Type)
	}
	if res.Group == nil && res.Code == codec.ResponseSuccess {
		if g, ok := f.groups[c.BrokerName]; ok {
			res.Group = g.clone()
		}
	}
	return res
}

// applyBrokerID: Java ReplicasInfoManager.applyBrokerId + handleApplyBrokerId. A new group
// accepts only id 1; an existing one any id not taken, or taken with the same check code.
func (f *FSM) applyBrokerID(c *command) *Result {
	g, ok := f.groups[c.BrokerName]
	if !ok {
		if c.BrokerID != firstBrokerID {
			return fail(codec.ResponseControllerBrokerIDInvalid,
				"Broker-set: %s hasn't been registered in controller, but broker try to apply brokerId: %d",
				c.BrokerName, c.BrokerID)
		}
		g = newGroup(c.ClusterName, c.BrokerName)
		f.groups[c.BrokerName] = g
	}
	if r, taken := g.Replicas[c.BrokerID]; taken {
		if r.RegisterCheckCode != c.RegisterCheckCode {
			return fail(codec.ResponseControllerBrokerIDInvalid, "Fail to apply brokerId: %d in broker-set: %s",
				c.BrokerID, c.BrokerName)
		}
		return &Result{}
	}
	g.Replicas[c.BrokerID] = Replica{Address: c.Address, RegisterCheckCode: c.RegisterCheckCode}
	g.NextBrokerID++
	return &Result{}
}

// updateAddress: Java handleUpdateBrokerAddress.
func (f *FSM) updateAddress(c *command) *Result {
	g, ok := f.groups[c.BrokerName]
	if !ok {
		return fail(codec.ResponseControllerBrokerNeedToBeRegistered,
			"Broker-set: %s hasn't been registered in controller", c.BrokerName)
	}
	r, ok := g.Replicas[c.BrokerID]
	if !ok {
		return fail(codec.ResponseControllerBrokerNeedToBeRegistered,
			"BrokerId: %d hasn't been registered in broker-set: %s", c.BrokerID, c.BrokerName)
	}
	r.Address = c.Address
	g.Replicas[c.BrokerID] = r
	return &Result{}
}

// alterSyncStateSet: Java ReplicasInfoManager.alterSyncStateSet, its checks in its order:
// only the current master, at the current master and SyncStateSet epochs, may change the
// set, to registered live replicas, keeping itself in it.
func (f *FSM) alterSyncStateSet(c *command) *Result {
	g, ok := f.groups[c.BrokerName]
	if !ok {
		return fail(codec.ResponseControllerAlterSyncStateSetFailed, "Broker metadata is not existed")
	}
	proposed := slices.Sorted(slices.Values(c.SyncStateSet))
	proposed = slices.Compact(proposed)
	if slices.Equal(proposed, g.SyncStateSet) {
		return fail(codec.ResponseControllerAlterSyncStateSetFailed,
			"The newSyncStateSet is equal with oldSyncStateSet, no needed to update syncStateSet")
	}
	if !g.HasMaster() || g.MasterBrokerID != c.MasterBrokerID {
		return fail(codec.ResponseControllerInvalidMaster,
			"Rejecting alter syncStateSet request because the current leader is:{%s}, not {%d}",
			masterString(g), c.MasterBrokerID)
	}
	if c.MasterEpoch != g.MasterEpoch {
		return fail(codec.ResponseControllerFencedMasterEpoch,
			"Rejecting alter syncStateSet request because the current master epoch is:{%d}, not {%d}",
			g.MasterEpoch, c.MasterEpoch)
	}
	if c.SyncStateSetEpoch != g.SyncStateSetEpoch {
		return fail(codec.ResponseControllerFencedSyncStateSetEpoch,
			"Rejecting alter syncStateSet request because the current syncStateSet epoch is:{%d}, not {%d}",
			g.SyncStateSetEpoch, c.SyncStateSetEpoch)
	}
	for _, id := range proposed {
		if _, ok := g.Replicas[id]; !ok {
			return fail(codec.ResponseControllerInvalidReplicas,
				"Rejecting alter syncStateSet request because the replicas {%d} don't exist", id)
		}
		if !aliveContains(c.Alive, id) {
			return fail(codec.ResponseControllerBrokerNotAlive,
				"Rejecting alter syncStateSet request because the replicas {%d} don't alive", id)
		}
	}
	if !slices.Contains(proposed, g.MasterBrokerID) {
		return fail(codec.ResponseControllerAlterSyncStateSetFailed,
			"Rejecting alter syncStateSet request because the newSyncStateSet don't contains origin leader {%d}",
			g.MasterBrokerID)
	}
	g.setSyncStateSet(proposed)
	return &Result{}
}

// electMaster: Java ReplicasInfoManager.electMaster with DefaultElectPolicy. The first
// election of a group takes the requesting replica; later ones choose among the live members
// of the SyncStateSet (all live replicas only with Unclean) — see elect.
func (f *FSM) electMaster(c *command) *Result {
	g, ok := f.groups[c.BrokerName]
	if !ok {
		return fail(codec.ResponseControllerBrokerNeedToBeRegistered, "Broker hasn't been registered")
	}
	newMaster := noMaster
	if g.MasterEpoch == 0 && c.BrokerID != noMaster {
		if _, ok := g.Replicas[c.BrokerID]; ok {
			newMaster = c.BrokerID
		}
	}
	if newMaster == noMaster {
		prefer := noMaster
		if c.Designate {
			prefer = c.BrokerID
		}
		var all []int64
		if c.Unclean {
			all = g.ReplicaIDs()
		}
		newMaster = elect(g.SyncStateSet, all, c.Alive, g.MasterBrokerID, prefer)
	}
	if newMaster != noMaster && newMaster == g.MasterBrokerID {
		return &Result{Code: codec.ResponseControllerMasterStillExist, Group: g.clone(), Remark: fmt.Sprintf(
			"The old master %d is still alive, not need to elect new master for broker %s", g.MasterBrokerID, g.BrokerName)}
	}
	if newMaster != noMaster {
		g.setMaster(newMaster)
		g.setSyncStateSet([]int64{newMaster})
		return &Result{Elected: true}
	}
	if c.BrokerID == noMaster {
		// Triggered by the controller because the master is gone: record that there is no
		// master (bumping the epoch, as Java does) but keep the SyncStateSet, whose members
		// may come back.
		if g.HasMaster() {
			g.setMaster(noMaster)
		}
		return &Result{Code: codec.ResponseControllerMasterNotAvailable, Group: g.clone(),
			Remark: "Old master has down and failed to elect a new broker master"}
	}
	return fail(codec.ResponseControllerElectMasterFailed, "Failed to elect a new master")
}

// cleanBrokerData: Java handleCleanBrokerDataEvent. The liveness checks happen on the
// leader before proposing (they need the heartbeats); here only what is registered counts.
func (f *FSM) cleanBrokerData(c *command) *Result {
	g, ok := f.groups[c.BrokerName]
	if !ok {
		return fail(codec.ResponseControllerInvalidCleanBrokerMetadata,
			"Broker %s is not existed,clean broker data failure.", c.BrokerName)
	}
	if len(c.BrokerIDs) == 0 {
		delete(f.groups, c.BrokerName)
		return &Result{}
	}
	for _, id := range c.BrokerIDs {
		delete(g.Replicas, id)
		g.SyncStateSet = slices.DeleteFunc(g.SyncStateSet, func(v int64) bool { return v == id })
		if g.MasterBrokerID == id {
			g.MasterBrokerID = noMaster
		}
	}
	if len(g.Replicas) == 0 || len(g.SyncStateSet) == 0 {
		// Java drops each table when it empties, and a group is known only while both hold it.
		delete(f.groups, c.BrokerName)
	}
	return &Result{}
}

func masterString(g *Group) string {
	if !g.HasMaster() {
		return "null"
	}
	return fmt.Sprint(g.MasterBrokerID)
}

func aliveContains(alive []Candidate, id int64) bool {
	for _, a := range alive {
		if a.BrokerID == id {
			return true
		}
	}
	return false
}

// Group returns a copy of the group named brokerName.
func (f *FSM) Group(brokerName string) (*Group, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	g, ok := f.groups[brokerName]
	if !ok {
		return nil, false
	}
	return g.clone(), true
}

// Groups returns copies of every group, by broker name.
func (f *FSM) Groups() []*Group {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*Group, 0, len(f.groups))
	for _, g := range f.groups {
		out = append(out, g.clone())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BrokerName < out[j].BrokerName })
	return out
}

// ControllerAddress returns the remoting address a controller recorded when it led.
func (f *FSM) ControllerAddress(id string) (string, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	a, ok := f.controllers[id]
	return a, ok
}

// snapshotState is the snapshot format (JSON), versioned so a later format can read it.
type snapshotState struct {
	Version     int               `json:"version"`
	Groups      map[string]*Group `json:"groups"`
	Controllers map[string]string `json:"controllers"`
}

const snapshotVersion = 1

// Snapshot captures the state (it is small: a few hundred bytes per group).
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	data, err := json.Marshal(snapshotState{Version: snapshotVersion, Groups: f.groups, Controllers: f.controllers})
	if err != nil {
		return nil, fmt.Errorf("controller: snapshot: %w", err)
	}
	return fsmSnapshot(data), nil
}

// Restore replaces the state with a snapshot's.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("controller: restore: %w", err)
	}
	var s snapshotState
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%w: snapshot: %w", ErrCorruptState, err)
	}
	if s.Version != snapshotVersion {
		return fmt.Errorf("%w: snapshot version %d, want %d", ErrCorruptState, s.Version, snapshotVersion)
	}
	if s.Groups == nil {
		s.Groups = map[string]*Group{}
	}
	if s.Controllers == nil {
		s.Controllers = map[string]string{}
	}
	for name, g := range s.Groups {
		if g == nil || g.BrokerName != name || g.Replicas == nil {
			return fmt.Errorf("%w: snapshot: group %q malformed", ErrCorruptState, name)
		}
		if g.SyncStateSet == nil {
			g.SyncStateSet = []int64{}
		}
	}
	f.mu.Lock()
	f.groups, f.controllers = s.Groups, s.Controllers
	f.mu.Unlock()
	if f.changed != nil {
		f.changed()
	}
	return nil
}

// fsmSnapshot is the encoded state, written out by Persist.
type fsmSnapshot []byte

func (s fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(s); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("controller: snapshot write: %w", err)
	}
	return sink.Close()
}

func (s fsmSnapshot) Release() {}
