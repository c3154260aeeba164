package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// Registration with name servers (PROTOCOL.md §3.8, §10).
//
// The broker sends REGISTER_BROKER with its whole topic table to every name server in
// namesrvAddr and to its embedded name server:
//
//   - once when it starts (synchronously, so that routes exist when Start returns: the
//     remoting server starts right after, so a client can see the route a moment before it
//     can connect);
//   - every registerNameServerPeriod (30 s; values above 60 s are clamped to 60 s as
//     RocketMQ does, since name servers drop a broker after 120 s of silence);
//   - at once after the topic table changes (auto-created topics, retry topics of new
//     groups, admin updates). Changes that come while a round is under way share the next
//     round, so a burst of changes costs two rounds, not one per change.
//
// Every round goes to all name servers in parallel; a failing one is logged and retried on
// the next round. At shutdown UNREGISTER_BROKER is sent to each.
//
// The body is the plain JSON RegisterBrokerBody (compressed=false), which every name server
// accepts (Java 4.x and 5.x, ringmq), with bodyCrc32 set so that the receiver can verify it.

const (
	// maxRegisterPeriod is RocketMQ's upper clamp of registerNameServerPeriod.
	maxRegisterPeriod = 60 * time.Second
	// unregisterTimeout bounds UNREGISTER_BROKER at shutdown.
	unregisterTimeout = 3 * time.Second
)

// ErrRegister wraps a failed registration round; the message names the name servers.
var ErrRegister = errors.New("broker: register with name server")

// registrar runs the registration loop. Safe for concurrent use.
type registrar struct {
	b       *Broker
	client  *netio.Client
	logger  *slog.Logger
	period  time.Duration
	timeout time.Duration

	kick chan struct{} // a round is wanted (cap 1)
	stop chan struct{}
	done chan struct{}

	// lastOK and lastNamesrvAddrOK are when a name server (any; one named in namesrvAddr, the
	// embedded one included when it is named there) last accepted a registration, in clock
	// nanoseconds, 0 never: the readiness probe's (health.go).
	lastOK, lastNamesrvAddrOK atomic.Int64

	mu      sync.Mutex
	waiters []func(error) // called when the next round ends (registerAndWait, AfterRegistration)
	closed  bool          // the loop has ended: no round will come
	rounds  uint64        // completed rounds (tests)
}

func newRegistrar(b *Broker) (*registrar, error) {
	client, err := netio.NewClient(netio.DefaultClientConfig(), b.logger)
	if err != nil {
		return nil, err
	}
	period := b.cfg.RegisterNameServerPeriod
	if period <= 0 || period > maxRegisterPeriod {
		period = maxRegisterPeriod
	}
	timeout := b.cfg.RegisterBrokerTimeoutMills
	if timeout <= 0 {
		timeout = 24 * time.Second
	}
	return &registrar{
		b: b, client: client, logger: b.logger, period: period, timeout: timeout,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}, nil
}

// start registers once and starts the loop.
func (r *registrar) start() error {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	err := r.registerAll(ctx)
	cancel()
	if err != nil {
		r.logger.Warn("broker: first registration failed; retrying every period", "err", err, "period", r.period)
	}
	go r.loop()
	return nil
}

// shutdown stops the loop, unregisters from every name server and closes the client.
func (r *registrar) shutdown(ctx context.Context) error {
	close(r.stop)
	<-r.done
	uctx, cancel := context.WithTimeout(ctx, unregisterTimeout)
	r.unregisterAll(uctx)
	cancel()
	return r.client.Close()
}

// trigger asks for a registration round now (merged with one already asked for). Never blocks.
func (r *registrar) trigger() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// registerAndWait asks for a round and waits until one that started after the call has
// finished, or ctx ends. It returns that round's error.
func (r *registrar) registerAndWait(ctx context.Context) error {
	ch := make(chan error, 1)
	r.afterNextRound(func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-r.done:
		return fmt.Errorf("%w: broker shutting down", ErrRegister)
	}
}

// afterNextRound asks for a round and calls cb with its result once a round that started
// after this call has ended (or with an error when the broker shuts down first). cb runs on
// the registration goroutine: it must not block. Never blocks.
func (r *registrar) afterNextRound(cb func(error)) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		cb(fmt.Errorf("%w: broker shutting down", ErrRegister))
		return
	}
	r.waiters = append(r.waiters, cb)
	r.mu.Unlock()
	r.trigger()
}

func (r *registrar) loop() {
	defer close(r.done)
	ticker := time.NewTicker(r.period)
	defer ticker.Stop()
	for {
		select {
		case <-r.stop:
			r.failWaiters(fmt.Errorf("%w: broker shutting down", ErrRegister))
			return
		case <-ticker.C:
		case <-r.kick:
		}
		r.mu.Lock()
		waiters := r.waiters
		r.waiters = nil
		r.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		go func() { // shutdown must not wait out a slow name server
			select {
			case <-r.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		err := r.registerAll(ctx)
		cancel()
		if err != nil {
			r.logger.Warn("broker: registration failed", "err", err)
		}
		for _, w := range waiters {
			w(err)
		}
	}
}

// failWaiters ends the loop's promise: current and later waiters get err.
func (r *registrar) failWaiters(err error) {
	r.mu.Lock()
	r.closed = true
	waiters := r.waiters
	r.waiters = nil
	r.mu.Unlock()
	for _, w := range waiters {
		w(err)
	}
}

// Rounds returns the number of completed periodic/triggered rounds (for tests).
func (r *registrar) completedRounds() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rounds
}

// registerAll sends REGISTER_BROKER to every name server in parallel and joins the errors.
func (r *registrar) registerAll(ctx context.Context) error {
	addrs := r.b.namesrvTargets()
	if len(addrs) == 0 {
		return nil
	}
	body, header, err := r.b.buildRegisterRequest()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRegister, err)
	}
	// namesrvTargets lists namesrvAddr's name servers first, then the embedded one when
	// namesrvAddr does not name it.
	named := len(r.b.cfg.NamesrvAddrs())
	errs := make([]error, len(addrs))
	answers := make([]*codec.RegisterBrokerResponseHeader, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ext := map[string]string{}
			header.Encode(ext)
			resp, err := r.client.Invoke(ctx, addr, codec.NewRequest(codec.RequestRegisterBroker, ext, body))
			switch {
			case err != nil:
				errs[i] = fmt.Errorf("%s: %w", addr, err)
			case resp.Code != int32(codec.ResponseSuccess):
				errs[i] = fmt.Errorf("%s: code %d: %s", addr, resp.Code, resp.Remark)
			default:
				var rh codec.RegisterBrokerResponseHeader
				if err := rh.Decode(resp.ExtFields); err != nil {
					errs[i] = fmt.Errorf("%s: response header: %w", addr, err)
				} else {
					answers[i] = &rh
				}
			}
			if errs[i] != nil {
				r.b.metrics.registrations.WithLabelValues("error").Inc()
			} else {
				r.b.metrics.registrations.WithLabelValues("ok").Inc()
				now := r.b.clock().UnixNano()
				r.lastOK.Store(now)
				if i < named {
					r.lastNamesrvAddrOK.Store(now)
				}
			}
		}()
	}
	wg.Wait()
	r.mu.Lock()
	r.rounds++
	r.mu.Unlock()
	// RocketMQ takes the master's addresses from the first answer of the round.
	if learned := r.b.onMasterLearned; learned != nil {
		for _, a := range answers {
			if a != nil {
				learned(a.MasterAddr, a.HAServerAddr)
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%w: %w", ErrRegister, err)
	}
	return nil
}

// unregisterAll sends UNREGISTER_BROKER to every name server, best effort.
func (r *registrar) unregisterAll(ctx context.Context) {
	h := codec.UnregisterBrokerRequestHeader{
		BrokerName:  r.b.cfg.BrokerName,
		BrokerAddr:  r.b.brokerAddr,
		ClusterName: r.b.cfg.BrokerClusterName,
		BrokerID:    r.b.cfg.BrokerID,
	}
	var wg sync.WaitGroup
	for _, addr := range r.b.namesrvTargets() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ext := map[string]string{}
			h.Encode(ext)
			if _, err := r.client.Invoke(ctx, addr, codec.NewRequest(codec.RequestUnregisterBroker, ext, nil)); err != nil {
				r.logger.Warn("broker: unregister from name server failed", "namesrv", addr, "err", err)
			}
		}()
	}
	wg.Wait()
}

// buildRegisterRequest builds the REGISTER_BROKER body and header from the current topic
// table. When brokerPermission withholds read or write, every topic's perm is masked with it
// so that clients route around this broker (RocketMQ does the same).
func (b *Broker) buildRegisterRequest() ([]byte, codec.RegisterBrokerRequestHeader, error) {
	w := b.topics.Snapshot()
	brokerPerm := b.live.BrokerPermission.Load() // UPDATE_BROKER_CONFIG changes it (liveconfig.go)
	if !metadata.IsReadable(brokerPerm) || !metadata.IsWriteable(brokerPerm) {
		for name, tc := range w.TopicConfigTable {
			tc.Perm &= brokerPerm
			w.TopicConfigTable[name] = tc
		}
	}
	body, err := (&codec.RegisterBrokerBody{TopicConfigSerializeWrapper: *w}).Encode()
	if err != nil {
		return nil, codec.RegisterBrokerRequestHeader{}, err
	}
	h := codec.RegisterBrokerRequestHeader{
		BrokerName:   b.cfg.BrokerName,
		BrokerAddr:   b.brokerAddr,
		ClusterName:  b.cfg.BrokerClusterName,
		HAServerAddr: b.haServerAddr(),
		BrokerID:     b.cfg.BrokerID,
		BodyCrc32:    codec.RegisterBrokerBodyCRC32(body),
	}
	return body, h, nil
}

// haServerAddr is brokerIP2 (default brokerIP1) with haListenPort (resolved by New), as
// RocketMQ advertises it from masters and slaves alike.
func (b *Broker) haServerAddr() string {
	host := b.cfg.BrokerIP2
	if host == "" {
		host = b.storeHost.Addr().String()
	}
	return net.JoinHostPort(host, strconv.Itoa(b.cfg.HAListenPort))
}

// HAServerAddr is the HA address the broker registers with name servers
// ("brokerIP2:haListenPort"). Safe for concurrent use.
func (b *Broker) HAServerAddr() string { return b.haServerAddr() }

// namesrvTargets lists the name servers to register with: namesrvAddr, plus the embedded
// one unless namesrvAddr already names it (same port on a local host name), last.
func (b *Broker) namesrvTargets() []string {
	addrs := b.cfg.NamesrvAddrs()
	if b.ctl.embedded == nil {
		return addrs
	}
	self := b.ctl.embeddedDialAddr
	_, selfPort, _ := net.SplitHostPort(self)
	for _, a := range addrs {
		host, port, err := net.SplitHostPort(a)
		if err == nil && port == selfPort && b.isLocalHost(host) {
			return addrs
		}
	}
	return append(addrs, self)
}

// isLocalHost reports whether host names this machine as the embedded name server sees it.
func (b *Broker) isLocalHost(host string) bool {
	if host == "localhost" || host == "" || host == b.cfg.BrokerIP1 || host == b.storeHost.Addr().String() {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && (ip.IsLoopback() || ip.IsUnspecified())
}

// newEmbeddedNamesrv builds the in-process name server (namesrvEmbedded=true) through
// Deps.Namesrv. Its KV config lives under the store directory, so that a broker's whole state
// is in one place.
func (b *Broker) newEmbeddedNamesrv() (EmbeddedNamesrv, error) {
	return b.ctl.newNamesrv(EmbeddedNamesrvSpec{
		ListenAddr:   net.JoinHostPort(b.bindHost(), strconv.Itoa(b.cfg.NamesrvListenPort)),
		NetEngine:    b.cfg.NetEngine.String(),
		KVConfigPath: namesrvKVConfigPath(b.cfg.StorePathRootDir),
		Logger:       b.logger,
		Registerer:   b.ctl.registerer,
	})
}

// bindHost is the host the broker's listeners bind: all interfaces, except when brokerIP1
// is a loopback address — a broker that advertises loopback cannot be reached from other
// hosts anyway, and binding loopback keeps tests and local runs off external interfaces.
func (b *Broker) bindHost() string {
	if ip, err := netip.ParseAddr(b.cfg.BrokerIP1); err == nil && ip.IsLoopback() {
		return ip.String()
	}
	return ""
}

// EmbeddedNamesrvAddr is the address clients use for the embedded name server
// ("brokerIP1:port", the actual port when namesrvListenPort was 0), or "" when there is
// none or it has not started.
func (b *Broker) EmbeddedNamesrvAddr() string {
	if b.ctl.embedded == nil || b.ctl.embedded.Addr() == nil {
		return ""
	}
	return b.ctl.embeddedAdvertised
}

// AfterRegistration calls cb once the name servers have been sent the current topic table:
// after the next registration round that starts after this call (nil error when every name
// server accepted it). It lets a processor that created a topic answer only when clients can
// find the topic's route, as RocketMQ's synchronous registration does, without blocking an
// event loop. cb runs on the registration goroutine and must not block; b.Reply is fine.
// Safe for concurrent use.
func (b *Broker) AfterRegistration(cb func(error)) { b.ctl.registrar.afterNextRound(cb) }

// BrokerAddr is the address the broker registers with name servers ("brokerIP1:listenPort").
func (b *Broker) BrokerAddr() string { return b.brokerAddr }
