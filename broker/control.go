package broker

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/admin"
	"github.com/ringmq/ringmq/broker/brokerstats"
	"github.com/ringmq/ringmq/broker/clients"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// The control plane: topic / subscription-group / consumer-offset managers and their
// files, client registries (heartbeats), orderly-consumption locks, the embedded name
// server and registration with name servers. The admin processors are the admin plane
// (broker/admin), wired here by initAdminPlane.
//
// Where its processors run: routes.go.
//
// Services, in start order (stopped in reverse, after the remoting server has stopped):
//
//	config flusher       writes topics.json / subscriptionGroup.json when changed,
//	                     consumerOffset.json every flushConsumerOffsetInterval; all of
//	                     them once more at shutdown
//	client housekeeping  drops clients silent for channelExpiredTimeout, every 10 s
//	runtime stats        samples store counters every second (putTps, getTotalTps ...)
//	broker stats         samples the per-topic and per-group counters every 10 s (statsAll's windows)
//	embedded name server (namesrvEmbedded=true)
//	registration         REGISTER_BROKER now, every period, and after topic changes

// clientHousekeepingInterval is how often silent clients are looked for (RocketMQ
// ClientHousekeepingService: every 10 s).
const clientHousekeepingInterval = 10 * time.Second

// controlPlane holds the control plane's parts that the contract stubs do not name.
type controlPlane struct {
	registrar  *registrar
	runtime    *admin.RuntimeStats   // sampled by the "runtime stats" service, read by the admin plane
	registerer prometheus.Registerer // where the embedded name server registers its metrics

	newNamesrv         NewEmbeddedNamesrvFunc // Deps.Namesrv
	embedded           EmbeddedNamesrv
	embeddedDialAddr   string // how the broker itself reaches the embedded name server
	embeddedAdvertised string // how clients reach it (brokerIP1:port)

	bootTime          time.Time
	totalMemoryBytes  int64         // 0 = unknown: every offset counts as in memory (memory_linux.go)
	clientCallTimeout time.Duration // Deps.clientCallTimeout
}

// initControlPlane builds the managers (topics, subscriptions, offsets, consumers,
// producers), registers the control-plane processors, adds their services (config
// file flushers, channel expiry, name-server registration, the embedded name
// server). New creates the pools before and the remoting server after it.
func (b *Broker) initControlPlane() error {
	cfg := &b.cfg
	b.ctl.bootTime = b.clock()
	b.ctl.totalMemoryBytes = totalMemoryBytes()
	if b.ctl.registerer == nil && b.registry != nil {
		b.ctl.registerer = b.registry
	}

	tables, err := metadata.Open(metadata.Options{
		StorePathRootDir:                 cfg.StorePathRootDir,
		Topics:                           topicOptionsFrom(cfg),
		AutoCreateSubscriptionGroup:      cfg.AutoCreateSubscriptionGroup,
		AutoCreateSubscriptionGroupLimit: cfg.AutoCreateSubscriptionGroupLimit,
		AutoCreateRetryTopicLimit:        cfg.AutoCreateRetryTopicLimit,
		ObserveAutoCreate:                b.metrics.observeAutoCreate,
		FlushConsumerOffsetInterval:      cfg.FlushConsumerOffsetInterval,
		Clock:                            b.clock,
		Logger:                           b.logger,
		ObserveWrite: func(file string, err error) {
			outcome := "ok"
			if err != nil {
				outcome = "error"
			}
			b.metrics.configWrites.WithLabelValues(file, outcome).Inc()
		},
	})
	if err != nil {
		return err
	}
	b.topics, b.subscriptions, b.offsets = tables.Topics, tables.Groups, tables.Offsets
	b.offsets.SetRefusalObserver(func(reason string) { b.metrics.clientRefusals.WithLabelValues(reason).Inc() })
	// A forced deletion (cleanFileForciblyEnable) logs what each group loses.
	b.store.SetConsumerOffsets(b.offsets.All)
	b.consumers = clients.NewConsumerManager(b.clock, cfg.ChannelExpiredTimeout, b.logger, b.notifyConsumerIdsChanged)
	b.producers = clients.NewProducerManager(b.clock, cfg.ChannelExpiredTimeout, b.logger)
	b.clients = clients.New(clients.Deps{
		Topics: b.topics, Groups: b.subscriptions, Offsets: b.offsets, Store: b.store,
		Consumers: b.consumers, Producers: b.producers, Live: b.live,
		Locks:                         clients.NewRebalanceLockManager(b.clock, clients.DefaultLockMaxLiveTime),
		TotalMemoryBytes:              func() int64 { return b.ctl.totalMemoryBytes },
		AccessMessageInMemoryMaxRatio: cfg.AccessMessageInMemoryMaxRatio,
	})
	b.ctl.runtime = admin.NewRuntimeStats(b.store.Stats, b.clock).WithPutLatency(b.store.PutLatency)

	// Services.
	b.addGuardedService("config flusher", tables.StartWriter, tables.StopWriter)
	housekeeping := newTicking(clientHousekeepingInterval, b.scanExpiredClients)
	b.addGuardedService("client housekeeping", housekeeping.start, housekeeping.shutdown)
	sampler := newTicking(time.Second, b.ctl.runtime.Sample)
	b.addGuardedService("runtime stats", sampler.start, sampler.shutdown)
	statsSampler := newTicking(brokerstats.SampleInterval, func() { b.metrics.stats.Sample(b.clock()) })
	b.addGuardedService("broker stats", statsSampler.start, statsSampler.shutdown)
	if cfg.NamesrvEmbedded {
		ns, err := b.newEmbeddedNamesrv()
		if err != nil {
			return fmt.Errorf("broker: embedded name server: %w", err)
		}
		b.ctl.embedded = ns
		b.addGuardedService("embedded name server", b.startEmbeddedNamesrv, ns.Shutdown)
	}
	reg, err := newRegistrar(b)
	if err != nil {
		return err
	}
	b.ctl.registrar = reg
	b.topics.SetOnChange(reg.trigger)
	// New adds the registration service after the remoting server.
	return nil
}

// initAdminPlane builds the admin plane (broker/admin) once the tables, the client
// registries, the schedule service and the pools exist. It adds no service: its runtime
// stats sampler is the control plane's "runtime stats" service.
func (b *Broker) initAdminPlane() {
	b.admin = admin.New(admin.Deps{
		Topics:       b.topics,
		Groups:       b.subscriptions,
		Offsets:      b.offsets,
		Store:        b.store,
		Consumers:    adminConsumers{b.consumers},
		Producers:    adminProducers{b.producers},
		DelayOffsets: b.schedule,
		Runtime:      b.ctl.runtime,
		Stats:        b.metrics.stats,
		Pools: admin.Pools{
			Pull:  admin.Pool{Depth: b.pullPool.Depth, Capacity: cap(b.pullPool.queue), HeadWait: b.pullPool.HeadWait},
			Query: admin.Pool{Depth: b.queryPool.Depth, Capacity: cap(b.queryPool.queue), HeadWait: b.queryPool.HeadWait},
			Admin: admin.Pool{Depth: b.adminPool.Depth, Capacity: cap(b.adminPool.queue), HeadWait: b.adminPool.HeadWait},
		},
		StorePaths: admin.StorePaths{Root: b.cfg.StorePathRootDir, CommitLog: b.cfg.Config.CommitLogDir(),
			ConsumeQueue: b.cfg.Config.ConsumeQueueDir()},
		BrokerName:       b.cfg.BrokerName,
		BrokerAddr:       b.brokerAddr,
		IsSlave:          b.cfg.IsSlave(),
		BootTime:         b.ctl.bootTime,
		Properties:       func(yield func(key, value string) bool) { b.runningConfig().cfg.allProperties(yield) },
		ConfigVersion:    func() codec.DataVersion { return b.runningConfig().version },
		UpdateConfig:     b.updateConfig,
		WaitRegistration: b.ctl.registrar.registerAndWait,
		Clock:            b.clock,
		Logger:           b.logger,

		ClientCallTimeout: b.ctl.clientCallTimeout,
	})
}

// adminConsumers shows the consumer registry to the admin plane (admin.Consumers).
type adminConsumers struct{ *clients.ConsumerManager }

func (c adminConsumers) Connection(group string) (admin.ConsumerConnection, bool) {
	g, ok := c.Group(group)
	if !ok {
		return admin.ConsumerConnection{}, false
	}
	return admin.ConsumerConnection{Members: adminClients(g.Members), Subscriptions: g.Subscriptions,
		ConsumeType: g.ConsumeType, MessageModel: g.MessageModel, ConsumeFromWhere: g.ConsumeFromWhere}, true
}

// Oneway writes a request to each live member of group (INVOKE_BROKER_TO_RESET_OFFSET's
// RESET_CONSUMER_CLIENT_OFFSET); a member whose connection fails is skipped, as RocketMQ does.
func (c adminConsumers) Oneway(group string, newRequest func() *codec.RemotingCommand) int {
	g, ok := c.Group(group)
	if !ok {
		return 0
	}
	sent := 0
	for _, m := range g.Members {
		if m.Conn.InvokeOneway(newRequest()) == nil {
			sent++
		}
	}
	return sent
}

// Members lists a group's live members with their connections (the relayed requests).
func (c adminConsumers) Members(group string) []admin.Member {
	g, ok := c.Group(group)
	if !ok {
		return nil
	}
	clients := adminClients(g.Members)
	out := make([]admin.Member, len(clients))
	for i, m := range g.Members {
		out[i] = admin.Member{Client: clients[i], Conn: m.Conn}
	}
	return out
}

// adminProducers shows the producer registry to the admin plane (admin.Producers).
type adminProducers struct{ *clients.ProducerManager }

func (p adminProducers) Connections(group string) []admin.Client {
	return adminClients(p.Members(group))
}

func adminClients(members []clients.ClientChannelInfo) []admin.Client {
	out := make([]admin.Client, len(members))
	for i, m := range members {
		out[i] = admin.Client{Addr: m.Conn.RemoteAddr().String(), ClientID: m.ClientID, Language: m.Language,
			Version: m.Version, LastUpdate: m.LastUpdate}
	}
	return out
}

// addGuardedService adds a service whose stop runs only if its start succeeded: Shutdown
// stops every service, also when Start was never called or failed early.
func (b *Broker) addGuardedService(name string, start func() error, stop func(context.Context) error) {
	var started atomic.Bool
	b.addService(name, func() error {
		if err := start(); err != nil {
			return err
		}
		started.Store(true)
		return nil
	}, func(ctx context.Context) error {
		if !started.Swap(false) {
			return nil
		}
		return stop(ctx)
	})
}

// startEmbeddedNamesrv starts the embedded name server and records its addresses (its
// port is only known now when namesrvListenPort is 0).
func (b *Broker) startEmbeddedNamesrv() error {
	ns := b.ctl.embedded
	if err := ns.Start(); err != nil {
		return err
	}
	_, port, err := net.SplitHostPort(ns.Addr().String())
	if err != nil {
		return err
	}
	dialHost := b.bindHost()
	if dialHost == "" {
		dialHost = "127.0.0.1"
	}
	b.ctl.embeddedDialAddr = net.JoinHostPort(dialHost, port)
	b.ctl.embeddedAdvertised = net.JoinHostPort(b.storeHost.Addr().String(), port)
	b.logger.Info("broker: embedded name server listening", "addr", ns.Addr().String(),
		"advertised", b.ctl.embeddedAdvertised)
	return nil
}

// EmbeddedNamesrv returns the embedded name server (built by Deps.Namesrv), or nil when
// namesrvEmbedded=false.
func (b *Broker) EmbeddedNamesrv() EmbeddedNamesrv { return b.ctl.embedded }

// onConnClosed forgets a closed connection's producer and consumer registrations
// (and notifies the groups that lost a member).
func (b *Broker) onConnClosed(c netio.Conn, err error) {
	b.consumers.OnConnClosed(c)
	b.producers.OnConnClosed(c)
}

// scanExpiredClients drops clients whose last heartbeat is older than
// channelExpiredTimeout and closes their connections (RocketMQ does the same).
func (b *Broker) scanExpiredClients() {
	gone := append(b.consumers.ScanExpired(), b.producers.ScanExpired()...)
	closed := map[uint64]bool{}
	for _, c := range gone {
		if closed[c.ID()] {
			continue
		}
		closed[c.ID()] = true
		b.logger.Info("broker: closing connection of expired client", "addr", c.RemoteAddr().String())
		_ = c.Close()
	}
	b.clients.RemoveExpiredLocks()
}

// notifyConsumerIdsChanged sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) to each member of a
// group whose members or subscriptions changed, so that they rebalance at once instead of
// on their 20 s timer. Off when the broker's notifyConsumerIdsChangedEnable is false or the
// group's own setting says so.
func (b *Broker) notifyConsumerIdsChanged(group string, members []netio.Conn) {
	if !b.live.NotifyConsumerIdsChanged.Load() || len(members) == 0 {
		return
	}
	if g, ok := b.subscriptions.Get(group); ok && !g.NotifyConsumerIdsChangedEnable {
		return
	}
	for _, c := range members {
		ext := map[string]string{}
		(&codec.NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: group}).Encode(ext)
		if err := c.InvokeOneway(codec.NewRequest(codec.RequestNotifyConsumerIdsChanged, ext, nil)); err != nil {
			b.logger.Debug("broker: notify consumer ids changed failed", "group", group,
				"addr", c.RemoteAddr().String(), "err", err)
			continue
		}
		b.metrics.consumerNotifies.Inc()
	}
}

// ticking runs fn every interval on its own goroutine until shutdown.
type ticking struct {
	interval time.Duration
	fn       func()
	stop     chan struct{}
	done     chan struct{}
}

func newTicking(interval time.Duration, fn func()) *ticking {
	return &ticking{interval: interval, fn: fn, stop: make(chan struct{}), done: make(chan struct{})}
}

func (t *ticking) start() error {
	go func() {
		defer close(t.done)
		tk := time.NewTicker(t.interval)
		defer tk.Stop()
		for {
			select {
			case <-t.stop:
				return
			case <-tk.C:
				t.fn()
			}
		}
	}()
	return nil
}

func (t *ticking) shutdown(context.Context) error {
	close(t.stop)
	<-t.done
	return nil
}

// namesrvKVConfigPath is where the embedded name server keeps its KV config.
func namesrvKVConfigPath(storePathRootDir string) string {
	return filepath.Join(storePathRootDir, "namesrv", "kvConfig.json")
}

// pickListenPort resolves listenPort 0 to a free port before anything uses the port: the
// port is written into every stored record (STOREHOST, offsetMsgId) and registered with
// name servers, so it must be known when the store opens, before the server binds. The
// probe listener is closed at once; another process could take the port before the server
// binds it, in which case Start fails with "address in use".
func pickListenPort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("%w: key listenPort: picking a free port: %w", ErrConfig, err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		return 0, fmt.Errorf("%w: key listenPort: picking a free port: %w", ErrConfig, err)
	}
	return port, nil
}

// topicOptionsFrom picks the topic table's settings from cfg.
func topicOptionsFrom(cfg *Config) metadata.TopicOptions {
	return metadata.TopicOptions{
		ClusterName:           cfg.BrokerClusterName,
		BrokerName:            cfg.BrokerName,
		AutoCreateTopicEnable: cfg.AutoCreateTopicEnable,
		DefaultTopicQueueNums: int32(cfg.DefaultTopicQueueNums),
		ClusterTopicEnable:    cfg.ClusterTopicEnable,
		BrokerTopicEnable:     cfg.BrokerTopicEnable,
		TraceTopicEnable:      cfg.TraceTopicEnable,
		TraceTopicName:        cfg.MsgTraceTopicName,
	}
}
