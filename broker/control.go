package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// The control plane: topic / subscription-group / consumer-offset managers and their
// files, client registries (heartbeats), orderly-consumption locks, the admin processors,
// the embedded name server and registration with name servers.
//
// Where its processors run (see dispatch.go):
//
//	inline (event loop): HEART_BEAT, UNREGISTER_CLIENT, GET_CONSUMER_LIST_BY_GROUP,
//	                     LOCK/UNLOCK_BATCH_MQ, QUERY/UPDATE_CONSUMER_OFFSET — memory only;
//	                     a topic or group they create is written by the config flusher.
//	adminPool:           everything in admin.go — they write files, scan tables, read
//	                     the store, or wait for a registration round.
//
// Services, in start order (stopped in reverse, after the remoting server has stopped):
//
//	config flusher       writes topics.json / subscriptionGroup.json when changed,
//	                     consumerOffset.json every flushConsumerOffsetInterval; all of
//	                     them once more at shutdown
//	client housekeeping  drops clients silent for channelExpiredTimeout, every 10 s
//	runtime stats        samples store counters every second (putTps, getTotalTps ...)
//	embedded name server (namesrvEmbedded=true)
//	registration         REGISTER_BROKER now, every period, and after topic changes

// clientHousekeepingInterval is how often silent clients are looked for (RocketMQ
// ClientHousekeepingService: every 10 s).
const clientHousekeepingInterval = 10 * time.Second

// controlPlane holds the control plane's parts that the contract stubs do not name.
type controlPlane struct {
	locks      *RebalanceLockManager
	registrar  *registrar
	runtime    *runtimeStats
	registerer prometheus.Registerer // where the embedded name server registers its metrics

	newNamesrv         NewEmbeddedNamesrvFunc // Deps.Namesrv
	embedded           EmbeddedNamesrv
	embeddedDialAddr   string // how the broker itself reaches the embedded name server
	embeddedAdvertised string // how clients reach it (brokerIP1:port)

	bootTime         time.Time
	totalMemoryBytes int64 // 0 = unknown: every offset counts as in memory (pull_linux.go)
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

	b.topics = newTopicConfigManager(topicOptionsFrom(cfg), cfg.StorePathRootDir, b.clock, b.logger)
	b.subscriptions = newSubscriptionGroupManager(cfg.AutoCreateSubscriptionGroup, cfg.StorePathRootDir, b.clock, b.logger)
	b.offsets = newConsumerOffsetManager(cfg.StorePathRootDir, b.logger)
	for _, load := range []func() error{b.topics.Load, b.subscriptions.Load, b.offsets.Load} {
		if err := load(); err != nil {
			return err
		}
	}
	// A forced deletion (cleanFileForciblyEnable) logs what each group loses.
	b.store.SetConsumerOffsets(b.offsets.All)
	for name, f := range map[string]*configFile{topicsFileName: b.topics.file,
		subscriptionGroupFileName: b.subscriptions.file, consumerOffsetFileName: b.offsets.file} {
		ok := b.metrics.configWrites.WithLabelValues(name, "ok")
		failed := b.metrics.configWrites.WithLabelValues(name, "error")
		f.observe = func(err error) {
			if err != nil {
				failed.Inc()
			} else {
				ok.Inc()
			}
		}
	}
	b.consumers = newConsumerManager(b.clock, cfg.ChannelExpiredTimeout, b.logger)
	b.consumers.notify = b.notifyConsumerIdsChanged
	b.producers = newProducerManager(b.clock, cfg.ChannelExpiredTimeout, b.logger)
	b.ctl.locks = newRebalanceLockManager(b.clock, DefaultLockMaxLiveTime)
	b.ctl.runtime = newRuntimeStats(b.store.Stats, b.clock)

	b.registerClientProcessors()
	b.registerOffsetProcessors()
	b.registerAdminProcessors()

	// Services.
	flusher := newControlFlusher(b)
	b.addGuardedService("config flusher", flusher.start, flusher.shutdown)
	housekeeping := newTicking(clientHousekeepingInterval, b.scanExpiredClients)
	b.addGuardedService("client housekeeping", housekeeping.start, housekeeping.shutdown)
	sampler := newTicking(time.Second, b.ctl.runtime.sample)
	b.addGuardedService("runtime stats", sampler.start, sampler.shutdown)
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
	b.topics.onChange = reg.trigger
	// New adds the registration service after the remoting server.
	return nil
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
}

// notifyConsumerIdsChanged sends NOTIFY_CONSUMER_IDS_CHANGED (oneway) to each member of a
// group whose members or subscriptions changed, so that they rebalance at once instead of
// on their 20 s timer. Off when the broker's notifyConsumerIdsChangedEnable is false or the
// group's own setting says so.
func (b *Broker) notifyConsumerIdsChanged(group string, members []netio.Conn) {
	if !b.cfg.NotifyConsumerIdsChanged || len(members) == 0 {
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

// controlFlusher writes the control plane's files in the background (see the file comment).
type controlFlusher struct {
	b    *Broker
	stop chan struct{}
	done chan struct{}
}

func newControlFlusher(b *Broker) *controlFlusher {
	return &controlFlusher{b: b, stop: make(chan struct{}), done: make(chan struct{})}
}

func (f *controlFlusher) start() error {
	go f.run()
	return nil
}

func (f *controlFlusher) run() {
	defer close(f.done)
	b := f.b
	interval := b.cfg.FlushConsumerOffsetInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	logErr := func(what string, err error) {
		if err != nil {
			b.logger.Error("broker: writing config file failed; will retry", "file", what, "err", err)
		}
	}
	for {
		select {
		case <-f.stop:
			return
		case <-b.topics.file.kick:
			logErr(topicsFileName, b.topics.file.persistIfDirty())
		case <-b.subscriptions.file.kick:
			logErr(subscriptionGroupFileName, b.subscriptions.file.persistIfDirty())
		case <-ticker.C:
			logErr(consumerOffsetFileName, b.offsets.file.persistIfDirty())
			// Retry writes that failed before.
			logErr(topicsFileName, b.topics.file.persistIfDirty())
			logErr(subscriptionGroupFileName, b.subscriptions.file.persistIfDirty())
		}
	}
}

// shutdown stops the loop and writes every pending change.
func (f *controlFlusher) shutdown(context.Context) error {
	close(f.stop)
	<-f.done
	b := f.b
	return errors.Join(b.topics.file.persistIfDirty(), b.subscriptions.file.persistIfDirty(),
		b.offsets.file.persistIfDirty())
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
