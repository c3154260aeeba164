// Package namesrv is ringmq's NameServer: the registry that RocketMQ brokers register with
// and clients ask for topic routes (PROTOCOL.md §10). It runs inside the broker process by
// default (the broker embeds it) or alone (cmd/mqnamesrv), and speaks the remoting
// protocol as the Java name server does, so that RocketMQ brokers, clients and tools can
// use it unchanged (tested with the Go client's admin API and with register bodies in Java
// 4.9 and 5.x form).
//
// # What it keeps
//
// In memory only, rebuilt from registrations after a restart (brokers re-register every
// 30 s):
//
//	topic       → broker name → QueueData {perm, readQueueNums, writeQueueNums, topicSysFlag}
//	broker name → BrokerData  {cluster, brokerAddrs: id → "ip:port" (0 = master)}
//	cluster     → broker names
//	"ip:port"   → last registration time, heartbeat timeout, dataVersion, connection, HA address
//
// plus the KV config (namespace → key → value), which is persisted to KVConfigPath.
//
// # Contract
//
//   - REGISTER_BROKER (103) from a master (brokerId 0) creates or refreshes the queue data
//     of every topic in its body; a slave only adds its address and learns its master's
//     (response header masterAddr / haServerAddr). An unchanged dataVersion refreshes only
//     the timestamp. See routeInfoManager.registerBroker for every rule.
//   - A broker address not re-registered within its heartbeat timeout (BrokerExpiry, 120 s,
//     or the request's heartbeatTimeoutMillis) is dropped by a scan every ScanInterval (5 s);
//     one whose registering connection closes is dropped at once. Dropping removes the
//     address and, with the broker name's last address, its queue data, emptied topics and
//     an emptied cluster.
//   - GET_ROUTEINFO_BY_TOPIC (105) answers the route, or TOPIC_NOT_EXIST (17) with remark
//     "No topic route info in name server for the topic: <topic>". brokerAddrs keys are bare
//     ({0:"..."}) for clients older than 4.9.4 (version < 401, e.g. the Go client) unless
//     they ask for acceptStandardJsonOnly, quoted otherwise — what the Java name server does.
//   - Also served: UNREGISTER_BROKER (104), GET_BROKER_CLUSTER_INFO (106),
//     GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206), DELETE_TOPIC_IN_NAMESRV (216),
//     PUT/GET/DELETE_KV_CONFIG (100/101/102), GET_KVLIST_BY_NAMESPACE (219),
//     GET_TOPICS_BY_CLUSTER (224), GET_SYSTEM_TOPIC_LIST_FROM_NS (304), QUERY_DATA_VERSION
//     (322), WIPE/ADD_WRITE_PERM_OF_BROKER (205/327), REGISTER_TOPIC_IN_NAMESRV (217),
//     BROKER_HEARTBEAT (904). An embedded controller (SetExtension) answers its own codes on
//     the same port, BROKER_HEARTBEAT with a brokerId among them. Any other code gets
//     REQUEST_CODE_NOT_SUPPORTED (3) with remark " request type <code> not supported".
//
// # Threads
//
// Requests are handled on the netio event loop that read them when the work is a short
// in-memory read or update under the route table's RWMutex (routes, lists, cluster info,
// deletes, permission changes; a route lookup takes a few microseconds). Two kinds of work
// that can take long go to their own goroutine each, through a bounded queue (full:
// SYSTEM_BUSY at once), and are answered from there:
//
//   - REGISTER_BROKER and UNREGISTER_BROKER: decoding a register body costs about 13 µs per
//     topic in JSON form and 2–3 µs compressed (10,000 topics: ~130 ms / ~25 ms), which
//     must not stall every connection of a loop. One goroutine applies them in arrival
//     order. A registration applied after its connection closed is undone when its response
//     cannot be written (netio marks a connection closed before OnClose runs); a oneway
//     registration, which Java brokers never send, cannot be checked that way and lives
//     until it expires.
//   - PUT/DELETE_KV_CONFIG: each rewrites the KV file with fsync; answered once persisted.
//
// A third goroutine runs the expiry scan.
package namesrv

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logging"
	"github.com/ringmq/ringmq/internal/workqueue"
	"github.com/ringmq/ringmq/netio"
)

// Sentinel errors. Check with errors.Is; returned errors wrap them with detail.
var (
	// ErrConfig: a Config field is out of range; the message names the field.
	ErrConfig = errors.New("namesrv: invalid config")
	// ErrKVConfig: the KV config file cannot be read, parsed or written; the message names
	// the file.
	ErrKVConfig = errors.New("namesrv: kv config")
	// ErrState: Start or Shutdown called out of order (Start twice, Shutdown before Start).
	ErrState = errors.New("namesrv: wrong state")

	// errRegisterFirstSingleTopic: a broker id's first registration carried exactly one
	// topic (see routeInfoManager.registerBroker); answered as Java does.
	errRegisterFirstSingleTopic = errors.New("register broker failed")
)

// Defaults (Java NamesrvConfig / NamesrvStartup).
const (
	// DefaultListenAddr is the NameServer port 9876 on all interfaces.
	DefaultListenAddr = ":9876"
	// DefaultScanInterval is scanNotActiveBrokerInterval (5 s; 4.x used 10 s).
	DefaultScanInterval = 5 * time.Second
	// DefaultBrokerExpiry is how long a broker address lives without re-registering when its
	// registration names no heartbeatTimeoutMillis (Java DEFAULT_BROKER_CHANNEL_EXPIRED_TIME).
	DefaultBrokerExpiry = 120 * time.Second
	// DefaultWaitForService is waitSecondsForService (45 s), used only with
	// NeedWaitForService.
	DefaultWaitForService = 45 * time.Second
	// kvQueueLength bounds the KV changes waiting for their worker; more answer SYSTEM_BUSY.
	kvQueueLength = 1024
	// brokerQueueLength bounds the registrations waiting for their worker: a few rounds of
	// 30-second registrations of a large cluster.
	brokerQueueLength = 4096
)

// Config configures a NameServer. Build it with DefaultConfig and override; New validates.
// The comments give the namesrv.conf key each field is read from by cmd/mqnamesrv.
type Config struct {
	// ListenAddr is the TCP listen address, host:port (listenPort, bindAddress); port 0
	// picks a free port (see Namesrv.Addr).
	ListenAddr string
	// NetEngine is netio.EngineGnet or netio.EngineStd (netEngine).
	NetEngine string
	// NetEventLoops is the number of gnet event loops (netEventLoops); 0 = GOMAXPROCS.
	NetEventLoops int
	// IdleTimeout closes a connection silent for this long (serverChannelMaxIdleTimeSeconds,
	// 120 s); 0 disables it. Brokers register every 30 s and clients poll routes as often.
	IdleTimeout time.Duration
	// ScanInterval is how often expired brokers are looked for (scanNotActiveBrokerInterval).
	ScanInterval time.Duration
	// BrokerExpiry is a broker address's lifetime without re-registering, unless its
	// registration carries heartbeatTimeoutMillis.
	BrokerExpiry time.Duration
	// OrderMessageEnable adds the topic's ORDER_TOPIC_CONFIG KV entry to routes as
	// orderTopicConf (orderMessageEnable, default false).
	OrderMessageEnable bool
	// ReturnOrderTopicConfigToBroker answers REGISTER_BROKER with the ORDER_TOPIC_CONFIG
	// namespace as a KVTable body (returnOrderTopicConfigToBroker, default true).
	ReturnOrderTopicConfigToBroker bool
	// EnableAllTopicList serves GET_ALL_TOPIC_LIST_FROM_NAMESERVER (enableAllTopicList,
	// default true); off, it answers SYSTEM_ERROR "disable".
	EnableAllTopicList bool
	// EnableTopicList serves GET_TOPICS_BY_CLUSTER (enableTopicList, default true).
	EnableTopicList bool
	// NeedWaitForService answers routes with SYSTEM_ERROR "name server not ready" for
	// WaitForService after start, so that brokers have re-registered after a restart
	// (needWaitForService, default false; waitSecondsForService, 45 s).
	NeedWaitForService bool
	WaitForService     time.Duration
	// KVConfigPath is the KV config file (kvConfigPath, default ~/namesrv/kvConfig.json);
	// empty keeps the KV config in memory only.
	KVConfigPath string
}

// DefaultConfig returns Java's defaults: port 9876, gnet, 120 s idle timeout, 5 s scan,
// 120 s broker expiry, ~/namesrv/kvConfig.json (memory only when the home directory is
// unknown).
func DefaultConfig() Config {
	kvPath := ""
	if home, err := os.UserHomeDir(); err == nil {
		kvPath = filepath.Join(home, "namesrv", "kvConfig.json")
	}
	return Config{
		ListenAddr:                     DefaultListenAddr,
		NetEngine:                      netio.EngineGnet,
		IdleTimeout:                    netio.DefaultIdleTimeout,
		ScanInterval:                   DefaultScanInterval,
		BrokerExpiry:                   DefaultBrokerExpiry,
		ReturnOrderTopicConfigToBroker: true,
		EnableAllTopicList:             true,
		EnableTopicList:                true,
		WaitForService:                 DefaultWaitForService,
		KVConfigPath:                   kvPath,
	}
}

// Validate reports the first field out of range, naming it (errors wrap ErrConfig).
func (c *Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.ListenAddr); err != nil {
		return fmt.Errorf("%w: ListenAddr %q: %w", ErrConfig, c.ListenAddr, err)
	}
	switch c.NetEngine {
	case netio.EngineGnet, netio.EngineStd:
	default:
		return fmt.Errorf("%w: netEngine %q: want %q or %q", ErrConfig, c.NetEngine, netio.EngineGnet, netio.EngineStd)
	}
	if c.NetEventLoops < 0 {
		return fmt.Errorf("%w: netEventLoops %d < 0", ErrConfig, c.NetEventLoops)
	}
	if c.IdleTimeout < 0 {
		return fmt.Errorf("%w: IdleTimeout %v < 0", ErrConfig, c.IdleTimeout)
	}
	if c.ScanInterval <= 0 {
		return fmt.Errorf("%w: ScanInterval %v must be positive", ErrConfig, c.ScanInterval)
	}
	if c.BrokerExpiry <= 0 {
		return fmt.Errorf("%w: BrokerExpiry %v must be positive", ErrConfig, c.BrokerExpiry)
	}
	if c.WaitForService < 0 {
		return fmt.Errorf("%w: WaitForService %v < 0", ErrConfig, c.WaitForService)
	}
	return nil
}

// Namesrv is one NameServer. Create it with New, then Start; Shutdown once. Its methods
// are safe for concurrent use.
type Namesrv struct {
	cfg     Config
	logger  *slog.Logger // New's logger behind repeats
	repeats *logging.RepeatLimiter
	routes  *routeInfoManager
	kv      *kvConfig
	metrics *metrics
	server  netio.Server
	proc    *processor

	state     atomic.Int32 // stateNew → stateStarted → stateStopped
	startedAt time.Time    // set by Start, before any request is served
	stop      chan struct{}
	wg        sync.WaitGroup

	ext Extension // nil unless a controller is embedded

	brokerWorker *workqueue.Queue // REGISTER_BROKER, UNREGISTER_BROKER, in arrival order
	kvWorker     *workqueue.Queue // PUT/DELETE_KV_CONFIG, in arrival order
}

const (
	stateNew int32 = iota
	stateStarted
	stateStopped
)

// NewEmbedded builds the name server a broker runs beside itself (namesrvEmbedded=true): the
// default config on listenAddr with one event loop — its load is a few requests per client
// per 30 s — and its KV config at kvConfigPath.
func NewEmbedded(listenAddr, netEngine, kvConfigPath string, logger *slog.Logger,
	registerer prometheus.Registerer) (*Namesrv, error) {
	cfg := DefaultConfig()
	cfg.ListenAddr = listenAddr
	cfg.NetEngine = netEngine
	cfg.NetEventLoops = 1
	cfg.KVConfigPath = kvConfigPath
	return New(cfg, logger, registerer)
}

// New builds a NameServer from cfg: it validates cfg, loads the KV config file and
// prepares (but does not bind) the listener. logger may not be nil; registerer, if not
// nil, receives the name server's and its network server's metrics.
func New(cfg Config, logger *slog.Logger, registerer prometheus.Registerer) (*Namesrv, error) {
	if logger == nil {
		return nil, fmt.Errorf("%w: nil logger", ErrConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv, err := loadKVConfig(cfg.KVConfigPath)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(registerer)
	if err != nil {
		return nil, err
	}
	// Clients can make a name server repeat a line at will (a connection closed for a malformed
	// frame): the first lines of a message per interval are logged, then how many were dropped.
	repeats := logging.NewRepeatLimiter(0, 0, nil)
	logger = repeats.Logger(logger).With("component", "namesrv")
	n := &Namesrv{
		cfg:     cfg,
		logger:  logger,
		repeats: repeats,
		routes:  newRouteInfoManager(logger, time.Now, cfg.BrokerExpiry),
		kv:      kv,
		metrics: m,
		stop:    make(chan struct{}),

		brokerWorker: workqueue.New(brokerQueueLength),
		kvWorker:     workqueue.New(kvQueueLength),
	}
	n.proc = &processor{n: n}

	ncfg := netio.DefaultConfig()
	ncfg.Name = "namesrv"
	ncfg.Engine = cfg.NetEngine
	ncfg.Addr = cfg.ListenAddr
	ncfg.EventLoops = cfg.NetEventLoops
	ncfg.IdleTimeout = cfg.IdleTimeout
	ncfg.Registerer = registerer
	n.server, err = netio.NewServer(ncfg, n.proc, logger)
	if err != nil {
		return nil, fmt.Errorf("namesrv: %w", err)
	}
	return n, nil
}

// Extension answers request codes on the name server's port besides its own: the
// controller embedded with enableControllerInNamesrv=true, as RocketMQ 5 embeds it.
// OnRequest runs first, on the event loop, for every request; it reports whether it
// answered (a BROKER_HEARTBEAT with a brokerId refreshes the route table's entry first, then
// goes to the extension; one without stays with the name server). OnClose is called for every closed connection. Neither may block.
type Extension interface {
	OnRequest(c netio.Conn, req *codec.RemotingCommand) bool
	OnClose(c netio.Conn)
}

// SetExtension plugs e in; call it before Start.
func (n *Namesrv) SetExtension(e Extension) { n.ext = e }

// Start binds the listen address, starts serving and starts the expiry scan and the
// workers. It returns once connections are accepted. Call it once.
func (n *Namesrv) Start() error {
	if !n.state.CompareAndSwap(stateNew, stateStarted) {
		return fmt.Errorf("%w: Start called twice or after Shutdown", ErrState)
	}
	n.startedAt = time.Now()
	if err := n.server.Start(); err != nil {
		n.state.Store(stateStopped)
		return fmt.Errorf("namesrv: listen %s: %w", n.cfg.ListenAddr, err)
	}
	n.wg.Add(3)
	go func() {
		defer n.wg.Done()
		runScanner(n.stop, n.cfg.ScanInterval, n.routes, n.afterExpiry)
	}()
	go func() {
		defer n.wg.Done()
		n.brokerWorker.Run()
	}()
	go func() {
		defer n.wg.Done()
		n.kvWorker.Run()
	}()
	n.logger.Info("namesrv: started", "addr", n.server.Addr().String(), "engine", n.cfg.NetEngine,
		"kvConfigPath", n.cfg.KVConfigPath, "brokerExpiry", n.cfg.BrokerExpiry)
	return nil
}

// Addr is the bound listen address (the actual port when ListenAddr had port 0); nil
// before Start.
func (n *Namesrv) Addr() net.Addr { return n.server.Addr() }

// Shutdown stops accepting, closes every connection (waiting until ctx ends for responses
// already written to reach their sockets), finishes the registrations and KV changes
// already queued (their responses can no longer be delivered; KV changes are still
// persisted), and returns once every goroutine of the name server has exited. It returns ctx's error if the
// network drain was cut short. Call it once, after Start.
func (n *Namesrv) Shutdown(ctx context.Context) error {
	if !n.state.CompareAndSwap(stateStarted, stateStopped) {
		return fmt.Errorf("%w: Shutdown without a running Start", ErrState)
	}
	// The server first: once Stop returns no handler runs any more, so nothing is submitted.
	err := n.server.Stop(ctx)
	n.brokerWorker.Close()
	n.kvWorker.Close()
	close(n.stop)
	n.wg.Wait()
	n.logger.Info("namesrv: stopped")
	n.repeats.Close()
	return err
}

// TopicRoute returns a copy of a topic's route as GET_ROUTEINFO_BY_TOPIC would (without
// orderTopicConf), for in-process callers such as the embedding broker's tests.
func (n *Namesrv) TopicRoute(topic string) (*codec.TopicRouteData, bool) {
	return n.routes.pickupTopicRouteData(topic)
}

// ClusterInfo returns a copy of the broker and cluster tables (GET_BROKER_CLUSTER_INFO).
func (n *Namesrv) ClusterInfo() *codec.ClusterInfo { return n.routes.clusterInfo() }

// afterExpiry updates metrics after a scan dropped brokers.
func (n *Namesrv) afterExpiry(dropped int) {
	n.metrics.brokersExpired.Add(float64(dropped))
	n.updateGauges()
}

// updateGauges refreshes the broker and topic gauges after a change of the tables.
func (n *Namesrv) updateGauges() {
	brokers, topics := n.routes.counts()
	n.metrics.brokers.Set(float64(brokers))
	n.metrics.topics.Set(float64(topics))
}

// runScanner drops expired brokers every interval until stop is closed; onDropped (may be
// nil) is told how many a scan dropped when it dropped any.
func runScanner(stop <-chan struct{}, interval time.Duration, routes *routeInfoManager, onDropped func(int)) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ticker.C:
			if dropped := routes.scanNotActiveBrokers(); dropped > 0 && onDropped != nil {
				onDropped(dropped)
			}
		}
	}
}
