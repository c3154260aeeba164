package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/acl"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// storeConfig is the store's configuration: cfg's embedded store.Config, which the store's
// keys set directly, with the two settings no key sets, derived from other keys here:
// StoreHost, the address written into every record (brokerIP1:listenPort, resolved by New
// and passed as storeHost), and Slave (brokerRole=SLAVE). It is validated on a copy:
// store.Config.Validate normalizes values (ConsumeQueue file size, disk ratio, flush
// backend), and cfg keeps what the operator wrote.
func storeConfig(cfg *Config, storeHost netip.AddrPort) (store.Config, error) {
	sc := cfg.Config
	sc.StoreHost = storeHost
	sc.Slave = cfg.IsSlave()
	return sc, sc.Validate()
}

func openStore(cfg *Config, storeHost netip.AddrPort, logger *slog.Logger, reg prometheus.Registerer,
	clock func() time.Time) (store.MessageStore, error) {
	sc, err := storeConfig(cfg, storeHost)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(sc, store.Deps{Logger: logger, Clock: clock, Registerer: reg})
	if err != nil {
		return nil, err
	}
	return st, nil
}

// resolveBrokerIP returns brokerIP1, or when it is empty the first non-loopback IPv4
// address of this host (RocketMQ's RemotingUtil.getLocalAddress), else 127.0.0.1.
func resolveBrokerIP(configured string) (netip.Addr, error) {
	if configured != "" {
		a, err := netip.ParseAddr(configured)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("%w: key brokerIP1: %q is not an IP address", ErrConfig, configured)
		}
		return a.Unmap(), nil
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
					ip = ip.Unmap()
					if ip.Is4() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
						return ip, nil
					}
				}
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
}

// serverConfig maps the broker's keys onto the remoting server's netio.Config (listening on
// bindHost:listenPort).
func serverConfig(cfg *Config, bindHost string, reg prometheus.Registerer) (netio.Config, error) {
	nc := netio.DefaultConfig()
	nc.Name = "broker"
	nc.Addr = net.JoinHostPort(bindHost, strconv.Itoa(cfg.ListenPort))
	nc.MaxFrameBytes = max(codec.DefaultMaxFrameBytes, cfg.MaxMessageSize+store.RecordSizeReserveBytes+64*1024)
	nc.Registerer = reg
	if err := cfg.ServerSettings.Apply(&nc); err != nil {
		return nc, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return nc, nil
}

// initServer builds the remoting server; it is registered as the last service so it
// starts last and stops first. With aclEnable it loads the ACL file (the broker does not
// start without a valid one) and registers the file watcher as a service, so it starts
// before the server and stops after it.
func (b *Broker) initServer(reg prometheus.Registerer) error {
	h := &brokerHandler{b: b}
	aclDeps := acl.PlaneDeps{BrokerName: b.cfg.BrokerName, ClusterName: b.cfg.BrokerClusterName,
		BrokerAddr: b.brokerAddr, Logger: b.logger}
	if b.cfg.AclEnable {
		path := b.cfg.AclFile
		if path == "" {
			path = DefaultAclFile
		}
		v, err := acl.New(acl.Deps{File: path, RuleOf: aclRuleOf, Logger: b.logger, Registerer: reg, Clock: b.clock})
		if err != nil {
			return err
		}
		h.acl, aclDeps.Validator = v, v
		b.addService("acl file watcher", v.Start, v.Stop)
	}
	b.aclAdmin = acl.NewPlane(aclDeps)
	nc, err := serverConfig(&b.cfg, b.bindHost(), reg) // bindHost: register.go
	if err != nil {
		return err
	}
	if b.cfg.FastListenPort != 0 {
		// requestBudgetBytes bounds the broker's memory, not each listener's: both draw from one.
		if nc.Budget, err = netio.NewRequestBudget(nc.RequestBudgetBytes); err != nil {
			return err
		}
	}
	srv, err := netio.NewServer(nc, h, b.logger)
	if err != nil {
		return err
	}
	b.server = srv
	if b.cfg.FastListenPort != 0 {
		// The fast port serves the same requests (same handler, same ACL); one event loop is
		// enough for what goes there (a slave's topic sync, Java 4.x clients with
		// vipChannelEnabled), and its connections are counted on their own; its large
		// frames are charged to the same request budget.
		fc := nc
		fc.Name = "broker-fast"
		fc.Addr = net.JoinHostPort(b.bindHost(), strconv.Itoa(b.cfg.FastListenPort))
		fc.EventLoops = 1
		fast, err := netio.NewServer(fc, h, b.logger)
		if err != nil {
			return err
		}
		b.fastServer = fast
	}
	return nil
}

// startServers starts the remoting server, then the fast-port server. A fast port that was
// only defaulted (listenPort − 2) and cannot be bound is given up with a warning: ringmq
// serves everything on listenPort too.
func (b *Broker) startServers() error {
	if err := b.server.Start(); err != nil {
		return err
	}
	if b.fastServer == nil {
		b.watchServers()
		return nil
	}
	if err := b.fastServer.Start(); err != nil {
		if !b.fastPortDefaulted {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = b.server.Stop(ctx)
			return fmt.Errorf("fast port %d (fastListenPort): %w", b.cfg.FastListenPort, err)
		}
		b.logger.Warn("broker: fast port (listenPort - 2) not available; serving on listenPort only",
			"fastListenPort", b.cfg.FastListenPort, "err", err)
		b.fastServer = nil
	} else {
		b.logger.Info("broker: fast port listening", "addr", b.fastServer.Addr().String())
	}
	b.watchServers()
	return nil
}

// watchServers hands the started remoting servers to the liveness probe (Live).
func (b *Broker) watchServers() {
	servers := []namedServer{{"listenPort", b.server}}
	if b.fastServer != nil {
		servers = append(servers, namedServer{"fastListenPort", b.fastServer})
	}
	b.watchedServers.Store(&servers)
}

// brokerHandler adapts the Broker to netio.Handler; with aclEnable every request passes
// the ACL check (broker/acl) before its processor runs.
type brokerHandler struct {
	b   *Broker
	acl *acl.Validator // nil: aclEnable=false
}

func (h *brokerHandler) OnOpen(c netio.Conn) {}

func (h *brokerHandler) OnRequest(c netio.Conn, cmd *codec.RemotingCommand) {
	h.b.metrics.reqs.received(cmd.Code)
	if h.acl != nil {
		if remark := h.acl.Check(c.RemoteAddr().Addr(), cmd); remark != "" {
			// NO_PERMISSION, where Apache RocketMQ answers SYSTEM_ERROR (broker/acl).
			h.b.replies.To(c, cmd).Answer(codec.ResponseNoPermission, remark)
			return
		}
	}
	h.b.dispatch(c, cmd)
}

// OnPassEnd implements netio.PassEnder: the send plane stores the sends it grouped over the pass.
func (h *brokerHandler) OnPassEnd(c netio.Conn) {
	h.b.send.PassEnd(c)
}

func (h *brokerHandler) OnClose(c netio.Conn, err error) {
	h.b.onConnClosed(c, err)
}
