package controller

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/netio"
)

// Sentinel errors. Check with errors.Is; returned errors wrap them with detail.
var (
	// ErrConfig: a Config field is out of range; the message names the key.
	ErrConfig = errors.New("controller: invalid config")
	// ErrState: Start or Shutdown called out of order.
	ErrState = errors.New("controller: wrong state")
	// ErrNotLeader: a write was asked of a controller that does not lead.
	ErrNotLeader = errors.New("controller: not the leader")
	// ErrCorruptState: a raft log entry or snapshot does not decode.
	ErrCorruptState = errors.New("controller: corrupt state")
)

// Controller is one controller: a raft member whose FSM holds the broker groups, the
// heartbeat table, the election trigger and the request handler. Create it with New, then
// Start; Shutdown once. Its methods are safe for concurrent use.
type Controller struct {
	cfg    Config
	logger *slog.Logger
	now    func() time.Time

	// Settings UPDATE_CONTROLLER_CONFIG may change at run time.
	unclean   atomic.Bool
	notify    atomic.Bool
	hbTimeout atomic.Int64 // time.Duration

	fsm     *FSM
	hb      *heartbeats
	metrics *metrics

	raftCfg   *raft.Config
	logs      raft.LogStore
	stable    raft.StableStore
	snaps     raft.SnapshotStore
	transport raft.Transport
	closers   []io.Closer               // bolt store, TCP transport
	raftPtr   atomic.Pointer[raft.Raft] // nil until Start has built it

	advertise string        // this controller's remoting address
	server    netio.Server  // standalone only
	client    *netio.Client // NOTIFY_BROKER_ROLE_CHANGED
	work      *workers

	// ready: this controller leads and its FSM holds every entry committed before its
	// leadership (becomeReady); requests are served only then.
	ready atomic.Bool
	// leaderSince is when this controller last became leader (UnixNano; 0 while follower):
	// no election is triggered for one heartbeat timeout after, while the brokers find it.
	leaderSince atomic.Int64

	state atomic.Int32
	stop  chan struct{}
	wg    sync.WaitGroup
}

const (
	stateNew int32 = iota
	stateStarted
	stateStopped
)

// raftDeps are the raft pieces; New builds bolt, file snapshots and TCP, tests may pass
// in-memory ones.
type raftDeps struct {
	logs      raft.LogStore
	stable    raft.StableStore
	snaps     raft.SnapshotStore
	transport raft.Transport
	closers   []io.Closer
}

// New builds a controller from cfg: it opens the raft store under cfg.StorePath (raft.db and
// snapshots/) and binds the raft transport. With embedded the controller serves no port of
// its own: the name server routes the controller codes to OnRequest. logger may not be nil;
// registerer, if not nil, receives the metrics.
func New(cfg Config, embedded bool, logger *slog.Logger, registerer prometheus.Registerer) (*Controller, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		return nil, fmt.Errorf("%w: nil logger", ErrConfig)
	}
	deps, err := openRaftStores(&cfg, logger)
	if err != nil {
		return nil, err
	}
	c, err := newController(cfg, embedded, logger, registerer, deps, time.Now)
	if err != nil {
		for _, cl := range deps.closers {
			_ = cl.Close()
		}
		return nil, err
	}
	return c, nil
}

func openRaftStores(cfg *Config, logger *slog.Logger) (raftDeps, error) {
	if err := os.MkdirAll(cfg.StorePath, 0o755); err != nil {
		return raftDeps{}, fmt.Errorf("controller: controllerStorePath %s: %w", cfg.StorePath, err)
	}
	bolt, err := raftboltdb.NewBoltStore(filepath.Join(cfg.StorePath, "raft.db"))
	if err != nil {
		return raftDeps{}, fmt.Errorf("controller: raft log %s: %w", filepath.Join(cfg.StorePath, "raft.db"), err)
	}
	hl := raftLogger(logger)
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.StorePath, 3, hl)
	if err != nil {
		_ = bolt.Close()
		return raftDeps{}, fmt.Errorf("controller: snapshots in %s: %w", cfg.StorePath, err)
	}
	self, _ := cfg.self()
	advertise, err := net.ResolveTCPAddr("tcp", self.Addr)
	if err != nil {
		_ = bolt.Close()
		return raftDeps{}, fmt.Errorf("controller: controllerPeers address %s of %s: %w", self.Addr, self.ID, err)
	}
	trans, err := raft.NewTCPTransportWithLogger(self.Addr, advertise, 3, 10*time.Second, hl)
	if err != nil {
		_ = bolt.Close()
		return raftDeps{}, fmt.Errorf("controller: raft transport on %s: %w", self.Addr, err)
	}
	return raftDeps{logs: bolt, stable: bolt, snaps: snaps, transport: trans, closers: []io.Closer{tcpTransportCloser{trans}, bolt}}, nil
}

func newController(cfg Config, embedded bool, logger *slog.Logger, registerer prometheus.Registerer,
	deps raftDeps, now func() time.Time) (*Controller, error) {
	logger = logger.With("component", "controller", "controllerId", cfg.SelfID)
	m, err := newMetrics(registerer)
	if err != nil {
		return nil, err
	}
	c := &Controller{
		cfg: cfg, logger: logger, now: now,
		fsm: NewFSM(), metrics: m,
		logs: deps.logs, stable: deps.stable, snaps: deps.snaps, transport: deps.transport, closers: deps.closers,
		stop: make(chan struct{}),
	}
	c.unclean.Store(cfg.ElectUncleanMaster)
	c.notify.Store(cfg.NotifyBrokerRoleChanged)
	c.hbTimeout.Store(int64(cfg.BrokerHeartbeatTimeout))
	c.hb = newHeartbeats(now, func() time.Duration { return time.Duration(c.hbTimeout.Load()) })
	c.fsm.changed = c.updateGauges

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.SelfID)
	rc.HeartbeatTimeout = cfg.RaftHeartbeatTimeout
	rc.ElectionTimeout = cfg.RaftElectionTimeout
	rc.LeaderLeaseTimeout = cfg.RaftHeartbeatTimeout / 2
	rc.Logger = raftLogger(logger)
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("%w: raft: %w", ErrConfig, err)
	}
	c.raftCfg = rc

	c.advertise = cfg.AdvertiseAddr
	if c.advertise == "" {
		self, _ := cfg.self()
		host, _, _ := net.SplitHostPort(self.Addr)
		_, port, err := net.SplitHostPort(cfg.ListenAddr)
		if err != nil {
			return nil, fmt.Errorf("%w: listen address %q: %w", ErrConfig, cfg.ListenAddr, err)
		}
		c.advertise = net.JoinHostPort(host, port)
	}

	ccfg := netio.DefaultClientConfig()
	if c.client, err = netio.NewClient(ccfg, logger); err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	c.work = newWorkers(workerCount, workQueueLength)
	if !embedded {
		ncfg := netio.DefaultConfig()
		ncfg.Name = "controller"
		ncfg.Engine = cfg.NetEngine
		ncfg.Addr = cfg.ListenAddr
		ncfg.EventLoops = cfg.NetEventLoops
		ncfg.Registerer = registerer
		if c.server, err = netio.NewServer(ncfg, serverHandler{c}, logger); err != nil {
			_ = c.client.Close()
			return nil, fmt.Errorf("controller: %w", err)
		}
	}
	return c, nil
}

// Start bootstraps the raft group on first start (every controller bootstraps the same
// peers, which raft allows), starts raft, the remoting server when standalone, the
// request workers and the heartbeat scan. Call it once.
func (c *Controller) Start() error {
	if !c.state.CompareAndSwap(stateNew, stateStarted) {
		return fmt.Errorf("%w: Start called twice or after Shutdown", ErrState)
	}
	has, err := raft.HasExistingState(c.logs, c.stable, c.snaps)
	if err != nil {
		return c.failStart(fmt.Errorf("controller: reading the raft store: %w", err))
	}
	if has {
		if err := c.checkStoredPeers(); err != nil {
			return c.failStart(err)
		}
	} else {
		servers := make([]raft.Server, len(c.cfg.Peers))
		for i, p := range c.cfg.Peers {
			servers[i] = raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)}
		}
		if err := raft.BootstrapCluster(c.raftCfg, c.logs, c.stable, c.snaps, c.transport,
			raft.Configuration{Servers: servers}); err != nil {
			return c.failStart(fmt.Errorf("controller: bootstrap: %w", err))
		}
	}
	if c.server != nil {
		if err := c.server.Start(); err != nil {
			return c.failStart(fmt.Errorf("controller: listen %s: %w", c.cfg.ListenAddr, err))
		}
		if c.cfg.AdvertiseAddr == "" {
			c.advertise = AdvertiseOn(c.cfg, c.server.Addr()) // ListenAddr may say port 0
		}
	}
	r, err := raft.NewRaft(c.raftCfg, c.fsm, c.logs, c.stable, c.snaps, c.transport)
	if err != nil {
		return c.failStart(fmt.Errorf("controller: raft: %w", err))
	}
	c.raftPtr.Store(r)
	c.wg.Add(2)
	go func() {
		defer c.wg.Done()
		c.work.run()
	}()
	go func() {
		defer c.wg.Done()
		c.leaderLoop()
	}()
	c.logger.Info("controller: started", "peers", FormatPeers(c.cfg.Peers), "storePath", c.cfg.StorePath,
		"remoting", c.advertise, "enableElectUncleanMaster", c.unclean.Load())
	return nil
}

// checkStoredPeers refuses a store whose raft group is not controllerPeers: the peers are
// read only when the store is new (raft keeps its membership in its log), and controllers
// that disagree on the group could each elect a leader.
func (c *Controller) checkStoredPeers() error {
	rc := *c.raftCfg // GetConfiguration marks the config it is given "skip startup"
	cfg, err := raft.GetConfiguration(&rc, NewFSM(), c.logs, c.stable, c.snaps, c.transport)
	if err != nil {
		return fmt.Errorf("controller: reading the raft group in %s: %w", c.cfg.StorePath, err)
	}
	stored := make(Peers, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		stored = append(stored, Peer{ID: string(s.ID), Addr: string(s.Address)})
	}
	want := slices.Clone(c.cfg.Peers)
	byID := func(a, b Peer) int { return strings.Compare(a.ID, b.ID) }
	slices.SortFunc(stored, byID)
	slices.SortFunc(want, byID)
	if !slices.Equal(stored, want) {
		return fmt.Errorf("%w: controllerPeers %q differs from the raft group %q stored in controllerStorePath %s: "+
			"give the stored peers, or start every controller with a new controllerStorePath",
			ErrConfig, FormatPeers(want), FormatPeers(stored), c.cfg.StorePath)
	}
	return nil
}

func (c *Controller) failStart(err error) error {
	c.state.Store(stateStopped)
	if c.server != nil && c.server.Addr() != nil {
		_ = c.server.Stop(context.Background())
	}
	_ = c.client.Close()
	c.closeStores()
	return err
}

func (c *Controller) closeStores() {
	for _, cl := range c.closers {
		if err := cl.Close(); err != nil {
			c.logger.Warn("controller: closing the raft store", "err", err)
		}
	}
}

// Addr is the standalone remoting server's bound address; nil when embedded or before
// Start.
func (c *Controller) Addr() net.Addr {
	if c.server == nil {
		return nil
	}
	return c.server.Addr()
}

// AdvertiseOn is the remoting address a controller configured with cfg and serving on
// listener's port advertises: the host of its raft address, the listener's port.
func AdvertiseOn(cfg Config, listener net.Addr) string {
	self, _ := cfg.self()
	host, _, _ := net.SplitHostPort(self.Addr)
	_, port, _ := net.SplitHostPort(listener.String())
	return net.JoinHostPort(host, port)
}

// SetAdvertiseAddr sets the remoting address this controller records when it leads; the
// embedding name server calls it once its port is bound, before Start.
func (c *Controller) SetAdvertiseAddr(addr string) { c.advertise = addr }

// Shutdown stops serving, finishes the queued requests, leaves raft (without handing over
// leadership: the others elect a new leader after their election timeout) and closes the
// store. Call it once; before Start it only closes the store.
func (c *Controller) Shutdown(ctx context.Context) error {
	if c.state.CompareAndSwap(stateNew, stateStopped) {
		// Never started: only release what New opened.
		_ = c.client.Close()
		c.closeStores()
		return nil
	}
	if !c.state.CompareAndSwap(stateStarted, stateStopped) {
		return fmt.Errorf("%w: Shutdown without a running Start", ErrState)
	}
	var errs []error
	if c.server != nil {
		errs = append(errs, c.server.Stop(ctx))
	}
	close(c.stop)
	c.work.close()
	c.wg.Wait()
	if err := c.raftPtr.Load().Shutdown().Error(); err != nil {
		errs = append(errs, fmt.Errorf("controller: raft shutdown: %w", err))
	}
	errs = append(errs, c.client.Close())
	c.closeStores()
	c.metrics.leader.Set(0)
	c.logger.Info("controller: stopped")
	return errors.Join(errs...)
}

// IsLeader reports whether this controller leads the raft group and serves as leader (its
// state caught up with everything committed before: becomeReady).
func (c *Controller) IsLeader() bool { return c.raftLeader() && c.ready.Load() }

// raftLeader reports whether raft has this controller lead, ready or not.
func (c *Controller) raftLeader() bool {
	r := c.raftPtr.Load()
	return r != nil && r.State() == raft.Leader
}

// FSM returns the state machine (read-only use: its reads return copies).
func (c *Controller) FSM() *FSM { return c.fsm }

// Leader returns the leader's id and remoting address as far as this controller knows
// (empty when there is none, or it never recorded its address).
func (c *Controller) Leader() (id, addr string) {
	r := c.raftPtr.Load()
	if r == nil {
		return "", ""
	}
	_, lid := r.LeaderWithID()
	id = string(lid)
	if id == c.cfg.SelfID {
		if c.IsLeader() {
			return id, c.advertise
		}
		return id, "" // not serving yet: callers ask again
	}
	addr, _ = c.fsm.ControllerAddress(id)
	return id, addr
}

// propose appends cmd to the raft log and waits until it is applied here, returning its
// Result. ErrNotLeader when this controller does not lead (or lost leadership meanwhile).
func (c *Controller) propose(cmd *command) (*Result, error) {
	if !c.raftLeader() {
		return nil, ErrNotLeader
	}
	data, err := cmd.encode()
	if err != nil {
		return nil, fmt.Errorf("controller: encode %s: %w", cmd.Type, err)
	}
	f := c.raftPtr.Load().Apply(data, requestTimeout)
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) ||
			errors.Is(err, raft.ErrLeadershipTransferInProgress) {
			return nil, fmt.Errorf("%w: %w", ErrNotLeader, err)
		}
		return nil, fmt.Errorf("controller: raft apply %s: %w", cmd.Type, err)
	}
	res, ok := f.Response().(*Result)
	if !ok {
		return nil, fmt.Errorf("controller: raft apply %s: no result", cmd.Type)
	}
	return res, nil
}

// leaderLoop follows leadership and, while leading, runs the heartbeat scan every
// ScanNotActiveBrokerInterval. On becoming leader it records its remoting address in the
// FSM (so that followers can point callers at it) and starts a grace period of one
// heartbeat timeout before triggering elections: the brokers heartbeat to the old leader
// until they find this one.
func (c *Controller) leaderLoop() {
	ticker := time.NewTicker(c.cfg.ScanNotActiveBrokerInterval)
	defer ticker.Stop()
	leaderCh := c.raftPtr.Load().LeaderCh()
	for {
		select {
		case <-c.stop:
			return
		case isLeader := <-leaderCh:
			c.onLeadership(isLeader)
		case <-ticker.C:
			c.scan()
		}
	}
}

func (c *Controller) onLeadership(isLeader bool) {
	if !isLeader {
		c.ready.Store(false)
		c.leaderSince.Store(0)
		c.metrics.leader.Set(0)
		c.logger.Info("controller: no longer the leader")
		return
	}
	c.leaderSince.Store(c.now().UnixNano())
	c.metrics.leader.Set(1)
	c.logger.Info("controller: became the leader", "remoting", c.advertise)
	c.becomeReady()
}

// becomeReady waits until the FSM holds every entry committed before this leadership (a new
// leader commits them with its first entry of the term; until then its state may lack some),
// then serves requests and records this controller's remoting address. If the wait fails it
// is tried again at the next scan.
func (c *Controller) becomeReady() {
	r := c.raftPtr.Load()
	if err := r.Barrier(requestTimeout).Error(); err != nil {
		c.logger.Warn("controller: leader cannot catch its state up yet", "err", err)
		return
	}
	c.ready.Store(r.State() == raft.Leader)
	// Ready first: whoever reads this address from the FSM finds a leader that serves.
	if addr, ok := c.fsm.ControllerAddress(c.cfg.SelfID); !ok || addr != c.advertise {
		if _, err := c.propose(&command{Type: cmdControllerAddress, ControllerID: c.cfg.SelfID, Address: c.advertise}); err != nil {
			c.logger.Warn("controller: cannot record the leader's address", "err", err)
		}
	}
}

// scan drops replicas whose heartbeats stopped and, on the leader after its grace period,
// elects a new master for every group whose master is not alive while another replica is
// (Java scanNotActiveBroker + scanInactiveMasterAndTriggerReelect).
func (c *Controller) scan() {
	expired := c.hb.expire()
	for _, k := range expired {
		c.logger.Warn("controller: broker heartbeat timed out", "brokerName", k.brokerName, "brokerId", k.brokerID)
	}
	since := c.leaderSince.Load()
	if since == 0 || !c.raftLeader() {
		return
	}
	if !c.ready.Load() {
		c.becomeReady()
		return
	}
	if c.now().Sub(time.Unix(0, since)) < time.Duration(c.hbTimeout.Load()) {
		return
	}
	for _, g := range c.fsm.Groups() {
		switch {
		case g.HasMaster():
			if c.hb.isAlive(g.BrokerName, g.MasterBrokerID) || len(c.hb.alive(g.BrokerName, g.ReplicaIDs())) == 0 {
				continue // alive, or nobody to elect: Java waits until a replica is back
			}
			c.logger.Warn("controller: master is not alive; electing", "clusterName", g.ClusterName,
				"brokerName", g.BrokerName, "masterBrokerId", g.MasterBrokerID, "masterEpoch", g.MasterEpoch)
		case g.MasterEpoch > 0 && c.electable(g):
			// A group left without a master by a failed election, whose SyncStateSet has a live
			// member again (Java leaves this to the returning broker's own election request).
			c.logger.Warn("controller: group without a master has an electable replica; electing",
				"clusterName", g.ClusterName, "brokerName", g.BrokerName, "masterEpoch", g.MasterEpoch)
		default:
			continue
		}
		c.electForInactiveMaster(g.BrokerName)
	}
}

// electable reports whether an election in g (which has no master) could elect anyone: a
// live member of the SyncStateSet, or with unclean elections any live replica.
func (c *Controller) electable(g *Group) bool {
	if len(c.hb.alive(g.BrokerName, g.SyncStateSet)) > 0 {
		return true
	}
	return c.unclean.Load() && len(c.hb.alive(g.BrokerName, g.ReplicaIDs())) > 0
}

// tcpTransportCloser closes the raft TCP transport and its pooled outbound connections
// (NetworkTransport.Close leaves those open, and with them the peers' goroutines reading
// them).
type tcpTransportCloser struct{ t *raft.NetworkTransport }

func (c tcpTransportCloser) Close() error {
	c.t.CloseStreams()
	return c.t.Close()
}

// raftLogger sends hashicorp/raft's log lines to logger, at hclog's Info level and above.
func raftLogger(logger *slog.Logger) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "raft",
		Level:  hclog.Info,
		Output: slogWriter{logger.With("component", "raft")},
	})
}

// slogWriter logs each line written to it.
type slogWriter struct{ logger *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	level := slog.LevelInfo
	switch {
	case strings.Contains(line, "[ERROR]"):
		level = slog.LevelError
	case strings.Contains(line, "[WARN]"):
		level = slog.LevelWarn
	}
	w.logger.Log(context.Background(), level, line)
	return len(p), nil
}
