package broker

import (
	"fmt"
	"time"

	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/store"
)

// The probes (/healthz, /readyz, served by internal/opsserver). Every check reads atomics and the
// clock only: a probe must answer while a put holds the put lock or a disk stalls.

// registrationFreshPeriods is how many registration periods may pass without a name server in
// namesrvAddr accepting one before /healthz fails: name servers drop a broker after 120 s of
// silence, four 30 s periods.
const registrationFreshPeriods = 3

var _ opsserver.Checker = (*Broker)(nil)

// Health is /healthz: the store accepts writes, and a name server of namesrvAddr accepted a
// registration within registrationFreshPeriods periods (passes with none configured: the embedded
// name server, in this process, cannot fall behind). Safe for concurrent use.
func (b *Broker) Health() []opsserver.Check {
	return []opsserver.Check{b.storeWritableCheck(), b.registrationFreshCheck()}
}

// Ready is /readyz: the store recovered and started, the listeners are up, and a name server
// accepted a registration once (or there is none). Safe for concurrent use.
func (b *Broker) Ready() []opsserver.Check {
	checks := []opsserver.Check{{Name: "store_recovered", OK: b.storeStarted.Load()}, {Name: "listeners_up", OK: b.serving.Load()}}
	if !checks[0].OK {
		checks[0].Detail = "the store has not started"
	}
	if !checks[1].OK {
		checks[1].Detail = "not started, or shutting down"
	}
	registered := opsserver.Check{Name: "namesrv_registered", OK: true}
	if r := b.ctl.registrar; r != nil && len(b.namesrvTargets()) > 0 && r.lastOK.Load() == 0 {
		registered.OK, registered.Detail = false, "no name server has accepted a registration yet"
	}
	return append(checks, registered)
}

// storeWritableCheck fails while the store refuses puts or has stopped indexing: any RunningFlags
// bit (DISK_FULL, NOT_WRITEABLE after a failed flush or at shutdown, a ConsumeQueue or IndexFile
// write error).
func (b *Broker) storeWritableCheck() opsserver.Check {
	c := opsserver.Check{Name: "store_writable", OK: true}
	if flags := b.store.RunningFlags(); flags != 0 {
		c.OK, c.Detail = false, "store running flags "+flags.String()
		// The operator's next step differs: a full disk clears itself, a failed flush needs a restart.
		switch {
		case flags&store.FlagDiskFull != 0:
			c.Detail += ": disk above diskSpaceWarningLevelRatio or out of space, sends refused"
		case flags&store.FlagNotWriteable != 0:
			c.Detail += ": a CommitLog flush failed or the store is shutting down, sends refused until a restart"
		}
	}
	return c
}

// registrationFreshCheck: see Health.
func (b *Broker) registrationFreshCheck() opsserver.Check {
	c := opsserver.Check{Name: "namesrv_registration_fresh", OK: true}
	r := b.ctl.registrar
	if r == nil || len(b.cfg.NamesrvAddrs()) == 0 {
		c.Detail = "no namesrvAddr: embedded name server only"
		return c
	}
	limit := registrationFreshPeriods * r.period
	last := r.lastExternalOK.Load()
	if last == 0 {
		if b.serving.Load() {
			c.OK, c.Detail = false, "no name server of namesrvAddr has accepted a registration"
		}
		return c
	}
	if age := b.clock().Sub(time.Unix(0, last)); age > limit {
		c.OK, c.Detail = false, fmt.Sprintf("last registration accepted by a name server of namesrvAddr %s ago (limit %s)",
			age.Round(time.Second), limit)
	}
	return c
}
