// Package broker wires ringmq's RocketMQ-compatible broker together: its configuration
// (config.go, RocketMQ's keys; liveconfig.go, the keys UPDATE_BROKER_CONFIG changes while it
// runs), the store and the remoting servers, the dispatch table
// (routes.go: every request code, where it runs, its handler and its ACL rule) and the
// dispatcher with its bounded pools (dispatch.go), the ACL check (wiring.go, broker/acl),
// registration with name servers (register.go), replication (ha.go, slavesync.go), delayed
// delivery (data.go, broker/delay) and the lifecycle (New, Start, Shutdown).
//
// The request processors live in the plane packages, each built here with what it needs
// passed in: broker/sendplane (sends, send-back, request-reply, transactions),
// broker/readplane (pulls with long polling, query, queue offsets), broker/clients
// (heartbeats, client registries, queue locks, consumer offsets), broker/admin (topics,
// groups, stats); the services beside them likewise: broker/acl (the plain ACL, its file
// and the requests that edit it), broker/delay (delayed delivery). Their tables are
// broker/metadata's; they answer through broker/remoting's Reply. DESIGN.md at the
// repository root draws the map.
//
// # Files (under <storePathRootDir>/config, RocketMQ's names and JSON)
//
//	topics.json  subscriptionGroup.json  consumerOffset.json  delayOffset.json
//
// Each is written atomically (temp file, fsync, rename, fsync dir) with the previous
// version kept as <file>.bak, and read back from .bak when the main file is missing
// or damaged (broker/metadata).
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/acl"
	"github.com/ringmq/ringmq/broker/admin"
	"github.com/ringmq/ringmq/broker/clients"
	"github.com/ringmq/ringmq/broker/delay"
	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/readplane"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/broker/sendplane"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/logging"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// Deps are the broker's collaborators. Zero values get defaults.
type Deps struct {
	// Logger receives broker events. nil = discard.
	Logger *slog.Logger
	// Registerer receives metrics. nil = a private registry (see Broker.Registry).
	Registerer prometheus.Registerer
	// Store replaces the file store (tests pass storetest.NewMemStore()). nil = store.Open
	// on the configured directory.
	Store store.MessageStore
	// Clock, nil = time.Now.
	Clock func() time.Time
	// Namesrv builds the embedded name server; required when namesrvEmbedded=true (New fails
	// with ErrConfig without it). launch.New sets it.
	Namesrv NewEmbeddedNamesrvFunc
	// ConfigFile is the properties file the configuration was read from (mqbroker -c): the keys
	// UPDATE_BROKER_CONFIG changes are written to it, so that a restart keeps them
	// (liveconfig.go). "" = changes last until the broker stops.
	ConfigFile string
	// Controlled, when set, is what the controller decided for this replica (controller mode: the
	// broker/controlled supervisor builds each broker of its process with it); nil in 4.x mode.
	Controlled *Controlled

	// logRepeatInterval and logRepeatBurst replace logging's defaults for repeated lines (10 per
	// 10 s per message): only tests set them.
	logRepeatInterval time.Duration
	logRepeatBurst    int
	// clientCallTimeout replaces the timeouts of admin requests relayed to clients
	// (admin.Deps.ClientCallTimeout): only tests set it.
	clientCallTimeout time.Duration
}

// Broker is one running broker. Create with New, then Start; Shutdown once.
type Broker struct {
	// cfg is the configuration the broker started with. The keys that change at run time
	// (liveconfig.go) are read from live and the metadata tables, never from cfg; the running
	// configuration, as GET_BROKER_CONFIG shows it, is running's.
	cfg        Config
	live       *live.Settings
	running    runningConfig
	logger     *slog.Logger // Deps.Logger behind logRepeats
	logRepeats *logging.RepeatLimiter
	clock      func() time.Time
	realClock  bool                 // clock is time.Now: a connection's pass start may stand in for it (newRequestContext)
	registry   *prometheus.Registry // set when Deps.Registerer was nil
	metrics    *metrics
	storeHost  netip.AddrPort // brokerIP1:listenPort, written into records and msgIds
	brokerAddr string         // "ip:port" as registered with name servers

	store store.MessageStore

	// Control plane (control.go, register.go; tables in broker/metadata, clients in broker/clients).
	topics        *metadata.TopicConfigManager
	subscriptions *metadata.SubscriptionGroupManager
	offsets       *metadata.ConsumerOffsetManager
	consumers     *clients.ConsumerManager
	producers     *clients.ProducerManager
	clients       *clients.Plane // the client requests (broker/clients)
	ctl           controlPlane   // control.go: registration, embedded name server, runtime stats

	// Admin plane (broker/admin): topic and group changes, tables, stats, runtime info.
	admin *admin.Plane
	// The ACL's admin requests (broker/acl): edits of aclFile, its version.
	aclAdmin *acl.Plane

	// Data plane (data.go): sends, send-backs, replies, END_TRANSACTION and the transaction
	// check service are package sendplane; reads (pull with long polling, query, view, queue
	// offsets and times) are package readplane; delayed delivery is package delay.
	send     *sendplane.Plane
	read     *readplane.Plane
	schedule *delay.ScheduleMessageService

	// Bounded pools for work that may block on disk (dispatch.go).
	pullPool  *workerPool
	queryPool *workerPool
	adminPool *workerPool
	// Replication (ha.go): the HA server of a master, the SYNC_MASTER wait (nil unless SYNC_MASTER),
	// the HA client of a slave.
	haServer *ha.Server
	replicas *ha.Replicas
	haClient *ha.Client
	// controlled is Deps.Controlled: controller mode's part for this replica (nil in 4.x mode).
	controlled *Controlled
	// slaveSync copies topics, groups and offsets from the master (slavesync.go); nil on masters.
	slaveSync *slaveSync

	// pooledBytes counts the bytes of requests copied for the pools and not yet processed, bounded
	// by requestBudgetBytes.
	pooledBytes atomic.Int64

	// onMasterLearned, when set (before Start, by the replication wiring), is called after
	// every registration round in which a name server answered: with the master's remoting
	// address (masterAddr, for metadata sync) and HA address (haServerAddr, for the HA client)
	// from the first name server, in namesrvAddr order then the embedded one, that answered
	// SUCCESS. Both are empty when the brokerName has no live master or this broker is the
	// master. It runs on the registration goroutine (the first round on Start's), one call at
	// a time, and must not block.
	onMasterLearned func(masterAddr, haServerAddr string)

	replies *remoting.Replies // the pooled frames every Reply writes with (respond.go)
	routes  map[int32]*route  // routeByCode (routes.go); read without locks once New returns
	server  netio.Server
	// fastServer serves the same handler on fastListenPort (RocketMQ's fast/VIP port); nil
	// when it is off. fastPortDefaulted: fastListenPort was not set (listenPort − 2), so a
	// port already in use costs a warning, not the start.
	fastServer        netio.Server
	fastPortDefaulted bool

	// services started by Start and stopped by Shutdown, in reverse order.
	services []service

	shutdownOnce sync.Once
	shutdownErr  error

	// Probe state (health.go).
	storeStarted atomic.Bool // Start started the store (recovered in New)
	serving      atomic.Bool // Start returned nil and Shutdown has not begun
	// watchedServers are the remoting servers that started (startServers), for Live.
	watchedServers atomic.Pointer[[]namedServer]
	// livenessStallBound overrides defaultStallBound (tests); not a key.
	livenessStallBound time.Duration
}

// service is a background part with a lifecycle (flushers of config files, the
// registration loop, the hold service, the embedded name server...).
type service struct {
	name  string
	start func() error
	stop  func(ctx context.Context) error
}

// addService appends a service; Start runs them in order, Shutdown in reverse.
func (b *Broker) addService(name string, start func() error, stop func(ctx context.Context) error) {
	b.services = append(b.services, service{name: name, start: start, stop: stop})
}

// ErrStart wraps failures to start.
var ErrStart = errors.New("broker: start")

// New builds a broker from a validated config. It opens (and recovers) the store
// unless deps.Store is given, but starts nothing: call Start.
func New(cfg Config, deps Deps) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.EnableControllerMode && deps.Controlled == nil {
		return nil, fmt.Errorf("%w: key enableControllerMode: true: the role comes from the controller, run the broker with broker/controlled's Supervisor (mqbroker does)", ErrConfig)
	}
	if cfg.NamesrvEmbedded && deps.Namesrv == nil {
		return nil, fmt.Errorf("%w: key namesrvEmbedded: true, but Deps.Namesrv is nil (launch.New sets it)", ErrConfig)
	}
	codec.SetServerVersion(cfg.RocketmqVersion)
	logger := deps.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Clients can make the broker repeat a line at will (a connection closed for a malformed
	// frame, a group refused, a consumer registered): every line goes through one limiter, which
	// logs the first lines of a message per interval and then how many it dropped. Lines logged
	// once (the start summary, a config change) are not affected. Real time: a test's clock may
	// stand still.
	logRepeats := logging.NewRepeatLimiter(deps.logRepeatInterval, deps.logRepeatBurst, nil)
	logger = logRepeats.Logger(logger)
	if id := cfg.forceMasterID(); id != 0 {
		logger.Info("broker: brokerId of a master is always 0; using 0", "brokerRole", cfg.BrokerRole, "brokerId", id)
	}
	if cfg.IsSlave() {
		// RocketMQ lowers it by 10 on a slave, so slave pulls switch to the smaller on-disk
		// batch sizes sooner (PROTOCOL.md §13.1).
		cfg.AccessMessageInMemoryMaxRatio = max(cfg.AccessMessageInMemoryMaxRatio-10, 0)
	}
	b := &Broker{cfg: cfg, logger: logger, logRepeats: logRepeats, clock: deps.Clock, live: newLive(&cfg),
		controlled: deps.Controlled}
	b.running.file = deps.ConfigFile
	b.ctl.newNamesrv = deps.Namesrv
	b.ctl.clientCallTimeout = deps.clientCallTimeout
	if b.clock == nil {
		b.clock, b.realClock = time.Now, true
	}
	reg := deps.Registerer
	if reg == nil {
		b.registry = prometheus.NewRegistry()
		reg = b.registry
	}
	b.metrics = newMetrics(reg, &cfg, b.clock)
	b.replies = remoting.NewReplies(b.metrics.replyErrors, b.logger)
	b.replies.SetObserver(b.metrics.reqs.answered)
	b.routes = maps.Clone(routeByCode)
	b.ctl.registerer = reg
	host, err := resolveBrokerIP(cfg.BrokerIP1)
	if err != nil {
		return nil, err
	}
	listenPortWasZero := cfg.ListenPort == 0
	if listenPortWasZero { // the port goes into stored records: resolve it now (control.go)
		port, err := pickListenPort(b.bindHost())
		if err != nil {
			return nil, err
		}
		cfg.ListenPort, b.cfg.ListenPort = port, port
	}
	// The HA port is registered with name servers (haServerAddr): resolve it now too.
	if err := b.cfg.resolveHAListenPort(listenPortWasZero, func() (int, error) {
		for {
			port, err := pickListenPort(b.bindHost())
			if err != nil || port != b.cfg.ListenPort {
				return port, err
			}
		}
	}); err != nil {
		return nil, err
	}
	cfg.HAListenPort = b.cfg.HAListenPort
	fastDefaulted, err := b.cfg.resolveFastListenPort(listenPortWasZero)
	if err != nil {
		return nil, err
	}
	b.fastPortDefaulted = fastDefaulted
	cfg.FastListenPort = b.cfg.FastListenPort
	b.storeHost = netip.AddrPortFrom(host, uint16(cfg.ListenPort))
	b.brokerAddr = b.storeHost.String()

	b.store = deps.Store
	if b.store == nil {
		st, err := openStore(&cfg, b.storeHost, b.logger, reg, b.clock)
		if err != nil {
			return nil, err
		}
		b.store = st
		// A failure below must not leave the store locked and mapped.
		defer func() {
			if b.server == nil {
				b.closePools()
				_ = st.Shutdown()
			}
		}()
	}

	// Pools for work that may block on disk. Sizes follow the cores: more workers than
	// cores only helps while they wait on page faults, which is exactly their job.
	workers := max(4, 2*runtime.GOMAXPROCS(0))
	expired := func(p *workerPool, rc *remoting.Request, waited time.Duration) {
		b.metrics.busy.WithLabelValues("timeout_clean_queue").Inc()
		rc.Reply.Answer(codec.ResponseSystemBusy, fmt.Sprintf(
			"[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: %dms, size of queue: %d",
			waited.Milliseconds(), p.Depth()))
	}
	b.pullPool = newWorkerPool("pull", workers, 10000, cfg.WaitTimeMillsInPullQueue, b.clock, expired, b.logger)
	b.queryPool = newWorkerPool("query", workers, 1000, 0, b.clock, expired, b.logger)
	b.adminPool = newWorkerPool("admin", 2, 1000, 0, b.clock, expired, b.logger)
	for _, p := range []*workerPool{b.pullPool, b.queryPool, b.adminPool} {
		p.held = &b.pooledBytes
	}

	if err := b.initControlPlane(); err != nil {
		return nil, err
	}
	if err := b.initDataPlane(reg); err != nil {
		return nil, err
	}
	b.initAdminPlane()
	if err := b.initReplication(); err != nil {
		return nil, err
	}
	defer func() {
		if b.server == nil { // New failed: the HA listener and the replica wait are made already
			b.closeReplication()
		}
	}()
	if err := b.initServer(reg); err != nil {
		return nil, err
	}
	b.registerLiveMetrics(reg)
	// The server starts after everything it serves. At shutdown, parked pulls are
	// answered while their connections are still open, then the server drains.
	b.addService("remoting server", b.startServers, func(ctx context.Context) error {
		if b.read != nil {
			if err := b.read.Stop(ctx); err != nil {
				return fmt.Errorf("pull request hold: %w", err)
			}
		}
		var fastErr error
		if b.fastServer != nil {
			fastErr = b.fastServer.Stop(ctx)
		}
		return errors.Join(fastErr, b.server.Stop(ctx))
	})
	// Registration last: a route is published only once the server listens, and the
	// broker unregisters before it stops serving.
	b.addGuardedService("name server registration", b.ctl.registrar.start, b.ctl.registrar.shutdown)
	b.running.current.Store(&versionedConfig{cfg: b.cfg, version: codec.DataVersion{Timestamp: b.ctl.bootTime.UnixMilli()}})
	return b, nil
}

// Start starts the store, the services and the network server, in that order, so a
// client is never accepted before the broker can serve it.
func (b *Broker) Start() error {
	if err := b.store.Start(); err != nil {
		return fmt.Errorf("%w: store: %w", ErrStart, err)
	}
	b.storeStarted.Store(true)
	for i, s := range b.services {
		if s.start == nil {
			continue
		}
		if err := s.start(); err != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for j := i - 1; j >= 0; j-- {
				if b.services[j].stop != nil {
					_ = b.services[j].stop(ctx)
				}
			}
			b.closePools()
			b.storeStarted.Store(false)
			_ = b.store.Shutdown()
			return fmt.Errorf("%w: %s: %w", ErrStart, s.name, err)
		}
	}
	b.serving.Store(true)
	return nil
}

// Shutdown stops the broker once, in order: stop accepting and drain (the server is
// the last service, so it stops first), stop the other services (which persist their
// files), then shut the store down (final flush, checkpoint, abort marker removed).
// Later calls return the first call's result.
func (b *Broker) Shutdown(ctx context.Context) error {
	b.shutdownOnce.Do(func() {
		b.serving.Store(false)
		var errs []error
		for i := len(b.services) - 1; i >= 0; i-- {
			s := b.services[i]
			if s.stop == nil {
				continue
			}
			if err := s.stop(ctx); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", s.name, err))
			}
		}
		b.closePools()
		if err := b.store.Shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("store: %w", err))
		}
		b.logRepeats.Close() // the counts of lines dropped in the last interval
		b.shutdownErr = errors.Join(errs...)
	})
	return b.shutdownErr
}

// closePools lets queued pool work finish and stops the workers. Idempotent.
func (b *Broker) closePools() {
	for _, p := range []*workerPool{b.pullPool, b.queryPool, b.adminPool} {
		if p != nil {
			p.close()
		}
	}
}

// FastAddr is the address the fast-port server listens on, or "" when it is off or not started.
func (b *Broker) FastAddr() string {
	if b.fastServer == nil || b.fastServer.Addr() == nil {
		return ""
	}
	return b.fastServer.Addr().String()
}

// Addr is the address the remoting server listens on (useful with listenPort 0).
func (b *Broker) Addr() string {
	if b.server == nil {
		return ""
	}
	return b.server.Addr().String()
}

// Registry is the broker's private metrics registry when Deps.Registerer was nil.
func (b *Broker) Registry() *prometheus.Registry { return b.registry }

// Config returns the broker's running configuration: as it started, with every
// UPDATE_BROKER_CONFIG since applied. Safe for concurrent use.
func (b *Broker) Config() Config { return b.runningConfig().cfg }
