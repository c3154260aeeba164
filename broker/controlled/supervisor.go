// Package controlled runs a broker in controller mode (enableControllerMode=true): the controller (package
// controller, RocketMQ 5's controller on raft) decides which replica of a broker group is the master, and
// the Supervisor carries that out in this process.
//
// The Supervisor keeps one broker running at a time, in the role the controller gives it, and replaces it
// when the role changes: a slave becoming master after an election, a master that learns another was
// elected, a replica told by its master to truncate a divergent tail. A replacement is a stop of the
// broker (its listeners close, clients reconnect) and a new one on the same store, recovered, in the new
// role: simpler to get right than changing every part's role in place, and it costs a second or so, well
// inside what an election takes.
//
//  1. brokerId: kept in controllerBrokerId in storePathRootDir; a new replica asks the controller for
//     one (CONTROLLER_GET_NEXT_BROKER_ID, CONTROLLER_APPLY_BROKER_ID).
//  2. role: CONTROLLER_REGISTER_BROKER names the master; without one the replica asks to be elected
//     (CONTROLLER_ELECT_MASTER; the first replica of a group becomes its master).
//  3. master: a SYNC_MASTER registered as brokerId 0, its epoch appended to the epoch file
//     (epochFileCheckpoint) at its CommitLog's end; its HA server answers the epoch handshake; a SYNC
//     send waits for every replica of the SyncStateSet, which it shrinks and expands through the
//     controller (CONTROLLER_ALTER_SYNC_STATE_SET) as replicas fall behind for haMaxTimeSlaveNotCatchup
//     or catch up.
//  4. slave: brokerId as the controller gave it, following the master's HA port (read from the master's
//     GET_BROKER_CONFIG) with the epoch handshake; told to truncate, it reopens its store truncated.
//  5. every brokerHeartbeatInterval: BROKER_HEARTBEAT (epoch and CommitLog end), then
//     CONTROLLER_GET_REPLICA_INFO: another master or another epoch means a new role.
package controlled

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/controller"
	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/fsutil"
	"github.com/ringmq/ringmq/netio"
)

// controllerCallTimeout bounds one request to the controllers (a leader lookup and a retry included).
const controllerCallTimeout = 3 * time.Second

// BrokerIDFileName keeps a replica's brokerId at the controller, in storePathRootDir.
const BrokerIDFileName = "controllerBrokerId"

// BuildFunc builds a broker (internal/launch.New in mqbroker).
type BuildFunc func(cfg broker.Config, deps broker.Deps) (*broker.Broker, error)

// Supervisor runs the brokers of one replica in controller mode. Run it once.
type Supervisor struct {
	cfg    broker.Config
	deps   broker.Deps
	build  BuildFunc
	logger *slog.Logger
	net    *netio.Client // to the controllers and the master (masterHAAddr)
	ctl    *controller.Client
	epochs *ha.EpochFile
	addr   string // this replica's remoting address, as registered with the controller

	brokerID int64
	// events carry what the running broker's parts learn (a truncation asked for by the master).
	events chan event
	// notified (cap 1) wakes the watch loop when the controller announces a new role; notifications
	// counts them.
	notified      chan struct{}
	notifications atomic.Int64

	roleChanges atomic.Int64

	mu        sync.Mutex
	current   *broker.Broker
	brokerReg *prometheus.Registry // the running broker's metrics (ops.go)
	role      role
	started   chan struct{} // closed when the first broker has started
}

// role is what the controller said: the group's master and epochs, and the SyncStateSet.
type role struct {
	masterID          int64
	masterAddr        string
	masterEpoch       int32
	syncStateSet      []int64
	syncStateSetEpoch int32
}

func (r role) isMaster(id int64) bool { return r.masterID == id }

type event struct {
	truncateTo int64
}

// New checks cfg (enableControllerMode=true) and makes a Supervisor; Run starts it.
func New(cfg broker.Config, deps broker.Deps, build BuildFunc) (*Supervisor, error) {
	if !cfg.EnableControllerMode {
		return nil, fmt.Errorf("%w: enableControllerMode is false", broker.ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	addr, err := broker.ResolveBrokerAddr(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StorePathRootDir, 0o755); err != nil {
		return nil, fmt.Errorf("controlled: store directory: %w", err)
	}
	epochs, err := ha.OpenEpochFile(filepath.Join(cfg.StorePathRootDir, ha.EpochFileName))
	if err != nil {
		return nil, err
	}
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var addrs []string
	for _, a := range strings.Split(cfg.ControllerAddr, ";") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	nc, err := netio.NewClient(netio.DefaultClientConfig(), logger)
	if err != nil {
		return nil, err
	}
	return &Supervisor{cfg: cfg, deps: deps, build: build, logger: logger.With("component", "controlled"), net: nc,
		ctl: controller.NewClient(addrs, nc), epochs: epochs, addr: addr, events: make(chan event, 1),
		notified: make(chan struct{}, 1),
		started:  make(chan struct{})}, nil
}

// Current is the broker running now (nil between two).
func (s *Supervisor) Current() *broker.Broker {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current
}

// Started is closed once the first broker has started.
func (s *Supervisor) Started() <-chan struct{} { return s.started }

// IsMaster reports whether the running broker is the group's master.
func (s *Supervisor) IsMaster() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current != nil && s.role.isMaster(s.brokerID)
}

// SyncStateSet is the group's SyncStateSet as the controller last told this replica (brokerIds, the
// master's included): on a master, the set it waits for.
func (s *Supervisor) SyncStateSet() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.role.syncStateSet)
}

// BrokerID is this replica's id at the controller (0 until Run has it).
func (s *Supervisor) BrokerID() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.brokerID
}

// Run keeps a broker running in the controller's role until ctx ends, then shuts it down.
func (s *Supervisor) Run(ctx context.Context) error {
	defer s.net.Close()
	id, err := s.ensureBrokerID(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	s.mu.Lock()
	s.brokerID = id
	s.mu.Unlock()
	truncateTo := int64(-1)
	for {
		r, err := s.decideRole(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		b, err := s.startBroker(ctx, r, truncateTo)
		truncateTo = -1
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.logger.Error("controlled: broker did not start; trying again", "error", err)
			if !sleep(ctx, s.cfg.BrokerHeartbeatInterval) {
				return nil
			}
			continue
		}
		next := s.watch(ctx, b, r)
		stopping := time.Now()
		s.stopBroker(b)
		s.logger.Info("controlled: broker stopped for a role change", "took", time.Since(stopping))
		if ctx.Err() != nil {
			return nil
		}
		if next.truncateTo >= 0 {
			truncateTo = next.truncateTo
		}
	}
}

// ensureBrokerID reads this replica's brokerId, or has the controller give it one.
func (s *Supervisor) ensureBrokerID(ctx context.Context) (int64, error) {
	path := filepath.Join(s.cfg.StorePathRootDir, BrokerIDFileName)
	if data, err := os.ReadFile(path); err == nil {
		id, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(string(data), "\n", 2)[0]), 10, 64)
		if err != nil || id < 1 {
			return 0, fmt.Errorf("controlled: %s: %q is not a brokerId", path, data)
		}
		return id, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("controlled: %w", err)
	}
	for {
		at := time.Now().UnixMilli()
		actx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
		id, err := s.ctl.ApplyBrokerID(actx, s.cfg.BrokerClusterName, s.cfg.BrokerName, s.addr, at)
		cancel()
		if err == nil {
			checkCode := s.addr + ";" + strconv.FormatInt(at, 10)
			if err := fsutil.WriteFileAtomic(path, []byte(fmt.Sprintf("%d\n%s\n", id, checkCode)), nil); err != nil {
				return 0, fmt.Errorf("controlled: keep the brokerId: %w", err)
			}
			s.logger.Info("controlled: brokerId applied", "brokerId", id)
			return id, nil
		}
		s.logger.Warn("controlled: no brokerId from the controller yet", "error", err)
		if !sleep(ctx, s.cfg.BrokerHeartbeatInterval) {
			return 0, ctx.Err()
		}
	}
}

// decideRole registers with the controller until the group has a master (asking to be elected while it
// has none), heartbeating meanwhile so that the controller sees this replica alive.
func (s *Supervisor) decideRole(ctx context.Context) (role, error) {
	for {
		s.heartbeat(ctx, nil)
		r, err := s.register(ctx)
		if err == nil && r.masterID < 0 {
			var elected role
			if elected, err = s.elect(ctx); err == nil {
				r = elected
			}
		}
		if err == nil && r.masterID >= 0 {
			return r, nil
		}
		s.logger.Info("controlled: the group has no master yet", "error", err)
		if !sleep(ctx, s.cfg.BrokerHeartbeatInterval) {
			return role{}, ctx.Err()
		}
	}
}

func (s *Supervisor) register(ctx context.Context) (role, error) {
	ctx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
	defer cancel()
	r, err := s.ctl.RegisterBroker(ctx, s.cfg.BrokerClusterName, s.cfg.BrokerName, s.brokerID, s.addr)
	return roleOf(r), err
}

func (s *Supervisor) elect(ctx context.Context) (role, error) {
	ctx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
	defer cancel()
	r, err := s.ctl.ElectMaster(ctx, s.cfg.BrokerClusterName, s.cfg.BrokerName, s.brokerID)
	if err == nil && r.MasterBrokerID >= 0 && r.SyncStateSet == nil {
		return s.register(ctx) // CONTROLLER_MASTER_STILL_EXIST: the register answer has the set
	}
	return roleOf(r), err
}

// replicaInfo asks the controller who the master is now.
func (s *Supervisor) replicaInfo(ctx context.Context) (role, error) {
	ctx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
	defer cancel()
	r, err := s.ctl.ReplicaInfo(ctx, s.cfg.BrokerName)
	return roleOf(r), err
}

// roleOf is the controller's answer as a role (no master for nil).
func roleOf(r *controller.Role) role {
	if r == nil {
		return role{masterID: -1}
	}
	return role{masterID: r.MasterBrokerID, masterAddr: r.MasterAddress, masterEpoch: r.MasterEpoch,
		syncStateSet: r.SyncStateSet, syncStateSetEpoch: r.SyncStateSetEpoch}
}

// heartbeat tells the controller this replica is alive, with its epoch and CommitLog end (b's, or 0
// before a broker runs).
func (s *Supervisor) heartbeat(ctx context.Context, b *broker.Broker) {
	h := &codec.BrokerHeartbeatRequestHeader{ClusterName: s.cfg.BrokerClusterName, BrokerAddr: s.addr,
		BrokerName: s.cfg.BrokerName, BrokerID: codec.Some(s.brokerID),
		HeartbeatTimeoutMills: codec.Some(s.cfg.ControllerHeartBeatTimeoutMills.Milliseconds())}
	if last, ok := s.epochs.Last(); ok {
		h.Epoch = codec.Some(last.Epoch)
	}
	if b != nil {
		h.MaxOffset = codec.Some(b.CommitLogMaxOffset())
		if srv := b.HAServer(); srv != nil {
			h.ConfirmOffset = codec.Some(min(srv.AckedOffset(), b.CommitLogMaxOffset()))
		}
	}
	hctx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
	defer cancel()
	if err := s.ctl.Heartbeat(hctx, h); err != nil && ctx.Err() == nil {
		s.logger.Debug("controlled: heartbeat to the controller failed", "error", err)
	}
}

// startBroker builds and starts a broker in role r; truncateTo >= 0 has its store cut there first.
func (s *Supervisor) startBroker(ctx context.Context, r role, truncateTo int64) (*broker.Broker, error) {
	cfg := s.cfg
	deps := s.deps
	reg := prometheus.NewRegistry()
	deps.Registerer = reg
	ctl := &broker.Controlled{BrokerID: s.brokerID, Epochs: s.epochs, MinInSyncReplicas: s.cfg.MinInSyncReplicas,
		OnRoleNotified: func() {
			s.notifications.Add(1)
			select {
			case s.notified <- struct{}{}:
			default:
			}
		}}
	deps.Controlled = ctl
	master := r.isMaster(s.brokerID)
	if master {
		// A replica's CommitLog may end in the first bytes of a record (its master died mid-frame):
		// never acknowledged, and the new master's first put must start at a record boundary.
		cfg.BrokerRole, cfg.BrokerID, cfg.TrimPartialRecord = broker.RoleSyncMaster, 0, true
		ctl.SyncStateSet = withoutID(r.syncStateSet, s.brokerID)
	} else {
		haAddr, err := s.masterHAAddr(ctx, r.masterAddr)
		if err != nil {
			return nil, err
		}
		cfg.BrokerRole, cfg.BrokerID, cfg.HAMasterAddress = broker.RoleSlave, s.brokerID, haAddr
		ctl.MasterAddr = r.masterAddr
		ctl.OnTruncate = func(offset int64) {
			select {
			case s.events <- event{truncateTo: offset}:
			default:
			}
		}
	}
	if truncateTo >= 0 {
		cfg.TruncateCommitLog, cfg.TruncateCommitLogTo = true, truncateTo
	}
	building := time.Now()
	b, err := s.build(cfg, deps)
	if err != nil {
		return nil, err
	}
	if master {
		if last, ok := s.epochs.Last(); !ok || last.Epoch < r.masterEpoch {
			if err := s.epochs.Append(ha.EpochEntry{Epoch: r.masterEpoch, StartOffset: b.CommitLogMaxOffset()}); err != nil {
				s.shutdown(b)
				return nil, err
			}
		}
	}
	if err := b.Start(); err != nil {
		s.shutdown(b)
		return nil, err
	}
	s.mu.Lock()
	s.current, s.role, s.brokerReg = b, r, reg
	s.mu.Unlock()
	s.roleChanges.Add(1)
	select {
	case <-s.started:
	default:
		close(s.started)
	}
	roleName := "SLAVE"
	if master {
		roleName = "MASTER"
	}
	s.logger.Info("controlled: role changed", "role", roleName, "brokerId", s.brokerID, "masterBrokerId", r.masterID,
		"masterAddress", r.masterAddr, "masterEpoch", r.masterEpoch, "syncStateSet", r.syncStateSet,
		"commitLogMaxOffset", b.CommitLogMaxOffset(), "startedIn", time.Since(building))
	return b, nil
}

// masterHAAddr is the master's HA listener: its host and the haListenPort its GET_BROKER_CONFIG names.
func (s *Supervisor) masterHAAddr(ctx context.Context, masterAddr string) (string, error) {
	host, _, err := net.SplitHostPort(masterAddr)
	if err != nil {
		return "", fmt.Errorf("controlled: master address %q: %w", masterAddr, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	resp, err := s.net.Invoke(cctx, masterAddr, codec.NewRequest(codec.RequestGetBrokerConfig, map[string]string{}, nil))
	if err != nil {
		return "", fmt.Errorf("controlled: the master's config: %w", err)
	}
	sc := bufio.NewScanner(strings.NewReader(string(resp.Body)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok && strings.TrimSpace(k) == "haListenPort" {
			return net.JoinHostPort(host, strings.TrimSpace(v)), nil
		}
	}
	return "", fmt.Errorf("controlled: the master's config names no haListenPort (code %d)", resp.Code)
}

// watch heartbeats and looks for a role change every brokerHeartbeatInterval; a master also keeps its
// SyncStateSet. It returns what to do next.
func (s *Supervisor) watch(ctx context.Context, b *broker.Broker, r role) event {
	t := time.NewTicker(s.cfg.BrokerHeartbeatInterval)
	defer t.Stop()
	pending := map[int64]int64{} // a master's replicas joining its SyncStateSet (keepSyncStateSet)
	for {
		select {
		case <-ctx.Done():
			return event{truncateTo: -1}
		case ev := <-s.events:
			return ev
		case <-t.C:
		case <-s.notified: // the controller elected a master: look now, not at the next tick
		}
		s.heartbeat(ctx, b)
		now, err := s.replicaInfo(ctx)
		if err != nil {
			s.logger.Debug("controlled: replica info from the controller failed", "error", err)
			continue
		}
		if now.masterID != r.masterID || now.masterEpoch != r.masterEpoch {
			s.logger.Info("controlled: the controller names another master", "masterBrokerId", now.masterID,
				"masterEpoch", now.masterEpoch, "was", r.masterID, "wasEpoch", r.masterEpoch)
			return event{truncateTo: -1}
		}
		if r.isMaster(s.brokerID) {
			if now.syncStateSetEpoch > r.syncStateSetEpoch {
				// Changed elsewhere (mqadmin, a controller's own decision): take it; keepSyncStateSet
				// applies it with the candidates below.
				r.syncStateSet, r.syncStateSetEpoch = now.syncStateSet, now.syncStateSetEpoch
			}
			if fenced := s.keepSyncStateSet(ctx, b, &r, pending); fenced {
				return event{truncateTo: -1}
			}
			s.mu.Lock()
			s.role = r
			s.mu.Unlock()
		}
	}
}

// keepSyncStateSet keeps the SyncStateSet true to one rule: every acknowledged message is on every
// replica the controller has in the set, so that whichever it elects has them all.
//
//   - A replica that has not caught up for haMaxTimeSlaveNotCatchup, or is gone, leaves: the controller
//     first (CONTROLLER_ALTER_SYNC_STATE_SET), then this master, which until then still waits for it.
//   - A replica that caught up joins this master's set first (sends wait for it from then on) and the
//     controller's only once it has reported the CommitLog end of that moment: it then holds every
//     message acknowledged before it joined too. A candidate that falls behind again is dropped.
//
// It reports whether the controller no longer takes this broker for master (a fenced epoch).
func (s *Supervisor) keepSyncStateSet(ctx context.Context, b *broker.Broker, r *role, pending map[int64]int64) (fenced bool) {
	srv := b.HAServer()
	now := time.Now()
	want := []int64{s.brokerID}
	joining := false
	for _, st := range srv.ReplicaStates() {
		inSync := st.Addr != "" && !st.CaughtUpAt.IsZero() && now.Sub(st.CaughtUpAt) < s.cfg.HAMaxTimeSlaveNotCatchup
		switch from, isPending := pending[st.BrokerID]; {
		case slices.Contains(r.syncStateSet, st.BrokerID):
			if inSync {
				want = append(want, st.BrokerID)
			}
		case isPending && !inSync:
			delete(pending, st.BrokerID)
		case isPending && st.AckOffset >= from:
			want = append(want, st.BrokerID) // it has everything acknowledged before it joined
		case isPending:
			joining = true
		case inSync && now.Sub(st.CaughtUpAt) < 2*s.cfg.BrokerHeartbeatInterval:
			pending[st.BrokerID] = b.CommitLogMaxOffset()
			joining = true
		}
	}
	local := withoutID(r.syncStateSet, s.brokerID)
	for id := range pending {
		if !slices.Contains(local, id) {
			local = append(local, id)
		}
	}
	slices.Sort(local)
	if !slices.Equal(local, srv.SyncStateSet()) {
		srv.SetSyncStateSet(local) // the controller's set and the candidates: sends wait for them all
	}
	slices.Sort(want)
	cur := slices.Sorted(slices.Values(r.syncStateSet))
	if slices.Equal(want, cur) {
		return false
	}
	actx, cancel := context.WithTimeout(ctx, controllerCallTimeout)
	epoch, err := s.ctl.AlterSyncStateSet(actx, s.cfg.BrokerName, s.brokerID, r.masterEpoch, want, r.syncStateSetEpoch)
	cancel()
	var re *controller.ResponseError
	switch {
	case err == nil:
	case errors.As(err, &re) && (re.Code == codec.ResponseControllerFencedMasterEpoch || re.Code == codec.ResponseControllerInvalidMaster):
		s.logger.Warn("controlled: the controller no longer takes this broker for master", "error", err)
		return true
	default:
		s.logger.Info("controlled: SyncStateSet change refused", "want", want, "error", err, "joining", joining)
		return false
	}
	set := &codec.SyncStateSet{SyncStateSet: want, SyncStateSetEpoch: epoch}
	for _, id := range set.SyncStateSet {
		delete(pending, id)
	}
	local = withoutID(set.SyncStateSet, s.brokerID)
	for id := range pending {
		local = append(local, id)
	}
	slices.Sort(local)
	srv.SetSyncStateSet(local)
	s.logger.Info("controlled: SyncStateSet changed", "from", r.syncStateSet, "to", set.SyncStateSet,
		"epoch", set.SyncStateSetEpoch)
	r.syncStateSet, r.syncStateSetEpoch = set.SyncStateSet, set.SyncStateSetEpoch
	return false
}

// stopBroker shuts the running broker down (no broker runs until the next starts).
func (s *Supervisor) stopBroker(b *broker.Broker) {
	s.mu.Lock()
	s.current = nil
	s.mu.Unlock()
	s.shutdown(b)
}

func (s *Supervisor) shutdown(b *broker.Broker) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		s.logger.Warn("controlled: broker shutdown", "error", err)
	}
}

// withoutID is set without id.
func withoutID(set []int64, id int64) []int64 {
	out := make([]int64, 0, len(set))
	for _, x := range set {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
