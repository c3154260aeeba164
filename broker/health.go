package broker

import (
	"fmt"
	"time"

	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// The probes (served by internal/opsserver). Every check reads atomics and the clock only: a
// probe must answer while a put holds the put lock, a disk stalls or an event loop is stuck.
//
// Liveness (/livez, and /healthz with the same meaning) fails only when this process cannot make
// progress and a restart is what helps: an event loop stuck in one request, the put path stuck,
// the store failed. Readiness (/readyz) fails when the broker should get no traffic: not started,
// not registered with its name servers, the store not taking writes (a full disk too: it clears
// itself), a slave without its master. Name servers that cannot be reached make every broker
// unready, never dead: a liveness probe that followed them would restart all brokers at once.

// registrationFreshPeriods is how many registration periods may pass without a name server in
// namesrvAddr accepting one before /readyz fails: name servers drop a broker after 120 s of
// silence, four 30 s periods.
const registrationFreshPeriods = 3

// defaultStallBound is how long an event loop or the put path may be stuck before /livez fails:
// far beyond any healthy hiccup (RocketMQ answers busy after 1 s in the put lock), short enough
// that Kubernetes restarts a wedged broker within a minute or two.
const defaultStallBound = 30 * time.Second

var _ opsserver.Checker = (*Broker)(nil)

// namedServer is a remoting server the liveness probe watches.
type namedServer struct {
	name   string // the listener's key: listenPort, fastListenPort
	server netio.Server
}

// Live is /livez: the event loops and the put path move (netio's Stalled and the store's
// BeginTimeInLock within stallBound), and the store has not failed (no NOT_WRITEABLE, which only a
// failed CommitLog flush sets and only a restart clears). Safe for concurrent use.
func (b *Broker) Live() []opsserver.Check {
	bound := b.stallBound()
	loops := opsserver.Check{Name: "event_loops", OK: true}
	if servers := b.watchedServers.Load(); servers != nil {
		for _, s := range *servers {
			if d := s.server.Stalled(); d > bound {
				loops.OK, loops.Detail = false, fmt.Sprintf("a request has held an event loop of %s for %s (bound %s)",
					s.name, d.Round(time.Second), bound)
				break
			}
		}
	}
	put := opsserver.Check{Name: "put_path", OK: true}
	if d := b.store.BeginTimeInLock(); d > bound {
		put.OK, put.Detail = false, fmt.Sprintf("a put has held the CommitLog put lock, or puts have not finished, for %s (bound %s)",
			d.Round(time.Second), bound)
	}
	failed := opsserver.Check{Name: "store_failed", OK: true}
	if flags := b.store.RunningFlags(); flags&store.FlagNotWriteable != 0 {
		failed.OK, failed.Detail = false, "store running flags "+flags.String()+
			": a CommitLog flush failed with an I/O error; sends are refused until a restart"
	}
	return []opsserver.Check{loops, put, failed}
}

// Ready is /readyz: the store recovered and started, the listeners are up, a name server of
// namesrvAddr accepted a registration within registrationFreshPeriods periods (the embedded one
// when namesrvAddr is empty), the store takes writes, and a slave is connected to its master.
// Safe for concurrent use.
func (b *Broker) Ready() []opsserver.Check {
	checks := []opsserver.Check{{Name: "store_recovered", OK: b.storeStarted.Load()}, {Name: "listeners_up", OK: b.serving.Load()}}
	if !checks[0].OK {
		checks[0].Detail = "the store has not started"
	}
	if !checks[1].OK {
		checks[1].Detail = "not started, or shutting down"
	}
	return append(checks, b.registeredCheck(), b.storeWritableCheck(), b.roleCheck())
}

// stallBound is how long Live lets an event loop or the put path be stuck.
func (b *Broker) stallBound() time.Duration {
	if b.livenessStallBound > 0 {
		return b.livenessStallBound
	}
	return defaultStallBound
}

// storeWritableCheck fails while the store refuses puts or has stopped indexing: any RunningFlags
// bit (DISK_FULL, NOT_WRITEABLE after a failed flush, a ConsumeQueue or IndexFile write error).
func (b *Broker) storeWritableCheck() opsserver.Check {
	c := opsserver.Check{Name: "store_writable", OK: true}
	if flags := b.store.RunningFlags(); flags != 0 {
		c.OK, c.Detail = false, "store running flags "+flags.String()
		// The operator's next step differs: a full disk clears itself, a failed flush needs a restart.
		switch {
		case flags&store.FlagDiskFull != 0:
			c.Detail += ": disk above diskSpaceWarningLevelRatio or out of space, sends refused until space is freed"
		case flags&store.FlagNotWriteable != 0:
			c.Detail += ": a CommitLog flush failed, sends refused until a restart"
		}
	}
	return c
}

// registeredCheck: a name server routes clients here. With namesrvAddr, one of its name servers
// (the embedded one when namesrvAddr names it) accepted a registration within
// registrationFreshPeriods periods; without, the embedded name server did.
func (b *Broker) registeredCheck() opsserver.Check {
	c := opsserver.Check{Name: "namesrv_registered", OK: true}
	r := b.ctl.registrar
	// Not namesrvTargets: the embedded name server's address is written while Start runs.
	if r == nil || (len(b.cfg.NamesrvAddrs()) == 0 && b.ctl.embedded == nil) {
		c.Detail = "no name server: namesrvAddr is empty and namesrvEmbedded=false"
		return c
	}
	last, which := r.lastOK.Load(), "the embedded name server"
	if len(b.cfg.NamesrvAddrs()) > 0 {
		last, which = r.lastNamesrvAddrOK.Load(), "a name server of namesrvAddr"
	}
	limit := registrationFreshPeriods * r.period
	if last == 0 {
		c.OK, c.Detail = false, "no registration accepted yet by "+which
		return c
	}
	if age := b.clock().Sub(time.Unix(0, last)); age > limit {
		c.OK, c.Detail = false, fmt.Sprintf("last registration accepted by %s %s ago (limit %s)", which,
			age.Round(time.Second), limit)
	}
	return c
}

// roleCheck: a master serves as it is; a slave is connected to its master's HA port.
func (b *Broker) roleCheck() opsserver.Check {
	c := opsserver.Check{Name: "role", OK: true, Detail: b.cfg.BrokerRole.String()}
	if b.haClient != nil && !b.haClient.Connected() {
		master := b.haClient.MasterAddr()
		if master == "" {
			master = "not learnt yet from the name servers"
		}
		c.OK, c.Detail = false, "SLAVE not connected to its master's HA port ("+master+")"
	}
	return c
}
