package ha

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/round"
)

// Outcomes of a SYNC_MASTER wait (the broker answers them as RocketMQ does: SLAVE_NOT_AVAILABLE 11,
// FLUSH_SLAVE_TIMEOUT 12; in both the message is stored).
var (
	// ErrSlaveNotAvailable: no slave is connected, or the slaves trail the message by
	// haSlaveFallbehindMax or more. Answered at once, without waiting.
	ErrSlaveNotAvailable = errors.New("ha: slave not available")
	// ErrSlaveTimeout: no slave acknowledged the message within slaveTimeout. It is the flush group
	// commit's timeout error, so that callers that handle both waits alike (the broker's send) see the
	// same value.
	ErrSlaveTimeout = flush.ErrFlushTimeout
)

// The SYNC_MASTER wait completes the same waiters as the flush group commit, so that the broker's send
// waits on both alike; these re-export them, so that its users (the broker) do not import package flush.
type (
	// Waiter learns the outcome of a Replicas.Wait (flush.Waiter).
	Waiter = flush.Waiter
	// WaiterFunc adapts a function to Waiter (flush.WaiterFunc). Bind it once: a method value made
	// per Wait allocates.
	WaiterFunc = flush.WaiterFunc
	// RoundWaiterFunc is a WaiterFunc that takes part in the round of the acknowledgement that
	// completes it with others (flush.RoundWaiterFunc): a SYNC_MASTER send's answer.
	RoundWaiterFunc = flush.RoundWaiterFunc
)

// ReplicasConfig configures the SYNC_MASTER wait.
type ReplicasConfig struct {
	// SlaveTimeout (slaveTimeout, 3 s) is how long a put waits for a slave's acknowledgement.
	SlaveTimeout time.Duration
	// FallBehindMax (haSlaveFallbehindMax, 256 MiB): a slave this far behind a message does not count.
	FallBehindMax int64
	// WaiterQueueMax bounds the puts waiting at once (the flush group commit's bound).
	WaiterQueueMax int
	// MinInSyncReplicas (minInSyncReplicas, controller mode; 0 in 4.x mode): a send is refused
	// (SLAVE_NOT_AVAILABLE) while the SyncStateSet, the master included, has fewer replicas; otherwise it
	// waits for every replica of the set (with the master alone in it, for none).
	MinInSyncReplicas int
}

// DefaultReplicasConfig is RocketMQ 4.9.3+'s: 3 s, 256 MiB (DefaultSettings).
func DefaultReplicasConfig() ReplicasConfig {
	s := DefaultSettings()
	return s.ReplicasConfig()
}

// Replicas is RocketMQ's GroupTransferService: puts wait until a slave reports an offset at or past their
// end. Waiters queue in offset order without a goroutine or timer each and are completed on the goroutine
// that learns of the acknowledgement: the reader of the slave's reports (Server.SetAckListener), or Wait
// itself when the acknowledgement is already in. One timer, armed for the earliest deadline, times them
// out. Safe for concurrent use.
//
// It used to be a flush.GroupCommit over the acknowledgements, whose loop and syncer goroutines put two
// more goroutine hand-offs into every SYNC_MASTER answer, and whose wake-up on each Wait took the run
// queue's next slot from the HA writer that carries the message to the slave (runtime/trace: the writer
// then waited behind the dispatcher, 17 µs).
type Replicas struct {
	cfg     ReplicasConfig
	srv     *Server
	metrics replicaMetrics
	logger  *slog.Logger
	epoch   time.Time

	mu struct {
		sync.Mutex
		waiters []replicaWaiter // waiters[head:], sorted by target; cap WaiterQueueMax
		head    int
		closed  bool
		timerAt int64 // the deadline the timer is armed for; -1: stopped
	}
	timer    *time.Timer
	expireMu sync.Mutex      // one expiry pass at a time
	expired  []replicaWaiter // the expiry pass's scratch, under expireMu
	rounds   sync.Pool       // *round.Round of acknowledged, which several goroutines may run at once
}

// replicaWaiter is one queued Wait, stored by value so that queuing never allocates.
type replicaWaiter struct {
	target   int64
	deadline int64 // nanoseconds since Replicas.epoch (monotonic)
	w        flush.Waiter
}

// NewReplicas waits on srv's acknowledgements and registers its metrics on reg (nil: none).
func NewReplicas(cfg ReplicasConfig, srv *Server, reg prometheus.Registerer, logger *slog.Logger) (*Replicas, error) {
	gcCfg := flush.GroupCommitConfig{SyncFlushTimeout: cfg.SlaveTimeout, WaiterQueueMax: cfg.WaiterQueueMax}
	if err := gcCfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &Replicas{cfg: cfg, srv: srv, logger: logger, epoch: time.Now()}
	r.metrics.register(reg, logger)
	r.mu.waiters = make([]replicaWaiter, 0, cfg.WaiterQueueMax)
	r.mu.timerAt = -1
	r.timer = time.AfterFunc(time.Hour, r.expire)
	r.timer.Stop()
	srv.SetAckListener(r.acknowledged)
	return r, nil
}

// SlaveOK is RocketMQ's isSlaveOK: a slave is connected and the acknowledged offset trails msgEnd by less
// than haSlaveFallbehindMax.
//
// In controller mode (MinInSyncReplicas > 0) it is the SyncStateSet's size instead: the master and the
// replicas in sync are at least MinInSyncReplicas. A replica that falls behind leaves the set (the
// broker asks the controller), which bounds the wait the way haSlaveFallbehindMax does in 4.x mode.
func (r *Replicas) SlaveOK(msgEnd int64) bool {
	if r.cfg.MinInSyncReplicas > 0 {
		p := r.srv.syncSet.Load()
		return p != nil && 1+len(*p) >= r.cfg.MinInSyncReplicas
	}
	return r.srv.SlaveCount() > 0 && msgEnd-r.srv.AckedOffset() < r.cfg.FallBehindMax
}

// Wait calls done once a slave has acknowledged every byte below msgEnd: nil, or ErrSlaveNotAvailable at
// once (no slave, or too far behind), ErrSlaveTimeout after SlaveTimeout, flush.ErrClosed at Close. done
// runs on the goroutine that learns the outcome (the caller's, when it is known at once; a slave
// connection's report reader; the timeout timer's) and must not block; it may call Wait. Wait returns an
// error instead of calling done only when the queue is full (flush.ErrQueueFull) or closed
// (flush.ErrClosed). It never allocates.
func (r *Replicas) Wait(msgEnd int64, done Waiter) error {
	if !r.SlaveOK(msgEnd) {
		r.metrics.notAvailable.Add(1)
		done.FlushDone(ErrSlaveNotAvailable)
		return nil
	}
	if r.srv.AckedOffset() >= msgEnd {
		r.metrics.acks.Add(1)
		done.FlushDone(nil)
		return nil
	}
	deadline := r.now() + int64(r.cfg.SlaveTimeout)
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return flush.ErrClosed
	}
	if len(r.mu.waiters)-r.mu.head >= r.cfg.WaiterQueueMax {
		r.mu.Unlock()
		r.metrics.rejected.Add(1)
		return flush.ErrQueueFull
	}
	if r.mu.head > 0 && len(r.mu.waiters) == cap(r.mu.waiters) {
		n := copy(r.mu.waiters, r.mu.waiters[r.mu.head:])
		clear(r.mu.waiters[n:])
		r.mu.waiters, r.mu.head = r.mu.waiters[:n], 0
	}
	// Puts take their offsets under the store's lock but wait after releasing it: arrival order can
	// differ from offset order a little, and completions follow offsets.
	ws := append(r.mu.waiters, replicaWaiter{target: msgEnd, deadline: deadline, w: done})
	for i := len(ws) - 1; i > r.mu.head && ws[i-1].target > ws[i].target; i-- {
		ws[i-1], ws[i] = ws[i], ws[i-1]
	}
	r.mu.waiters = ws
	r.metrics.depth.Add(1)
	if r.mu.timerAt < 0 {
		r.mu.timerAt = deadline
		r.timer.Reset(time.Duration(deadline - r.now()))
	}
	r.mu.Unlock()
	// An acknowledgement that arrived after the check above may have found the queue without this waiter.
	if r.srv.AckedOffset() >= msgEnd {
		r.acknowledged()
	}
	return nil
}

// Full reports whether a Wait now would find the queue full.
func (r *Replicas) Full() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.mu.waiters)-r.mu.head >= r.cfg.WaiterQueueMax
}

// Close completes every waiter still queued with flush.ErrClosed and stops the timer. A second Close
// returns ErrClosed.
func (r *Replicas) Close() error {
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	r.mu.closed = true
	r.timer.Stop()
	r.mu.timerAt = -1
	r.mu.Unlock()
	for {
		w, ok := r.popFirst(func(replicaWaiter) bool { return true })
		if !ok {
			return nil
		}
		w.w.FlushDone(flush.ErrClosed)
	}
}

func (r *Replicas) now() int64 { return int64(time.Since(r.epoch)) }

// acknowledged completes, in offset order, every waiter at or below the acknowledged offset, in one round
// (flush.RoundWaiter) ended after the last: the answers one report releases are written once per
// connection. It runs on the report reader's goroutine (the Server's ack listener) and after a Wait that
// raced an acknowledgement, so the rounds come from a pool.
func (r *Replicas) acknowledged() {
	var rd *round.Round
	for {
		acked := r.srv.AckedOffset()
		w, ok := r.popFirst(func(w replicaWaiter) bool { return w.target <= acked })
		if !ok {
			break
		}
		if rd == nil {
			if rd, _ = r.rounds.Get().(*round.Round); rd == nil {
				rd = new(round.Round)
			}
		}
		r.metrics.acks.Add(1)
		flush.CompleteIn(w.w, nil, rd)
	}
	if rd != nil {
		rd.End()
		r.rounds.Put(rd)
	}
}

// popFirst removes and returns the first waiter if take accepts it.
func (r *Replicas) popFirst(take func(replicaWaiter) bool) (replicaWaiter, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.head == len(r.mu.waiters) || !take(r.mu.waiters[r.mu.head]) {
		return replicaWaiter{}, false
	}
	w := r.mu.waiters[r.mu.head]
	r.metrics.depth.Add(-1)
	r.mu.waiters[r.mu.head] = replicaWaiter{}
	r.mu.head++
	if r.mu.head == len(r.mu.waiters) {
		r.mu.waiters, r.mu.head = r.mu.waiters[:0], 0
	}
	return w, true
}

// expire (the timer's goroutine) completes the waiters past their deadline with ErrSlaveTimeout, keeping
// the rest in order, and arms the timer for the earliest deadline left.
func (r *Replicas) expire() {
	r.expireMu.Lock()
	defer r.expireMu.Unlock()
	r.mu.Lock()
	if r.mu.closed {
		r.mu.Unlock()
		return
	}
	now := r.now()
	kept := r.mu.head
	next := int64(-1)
	for i := r.mu.head; i < len(r.mu.waiters); i++ {
		w := r.mu.waiters[i]
		if w.deadline <= now {
			r.expired = append(r.expired, w)
			continue
		}
		if next < 0 || w.deadline < next {
			next = w.deadline
		}
		r.mu.waiters[kept] = w
		kept++
	}
	clear(r.mu.waiters[kept:])
	r.mu.waiters = r.mu.waiters[:kept]
	r.metrics.depth.Add(-int64(len(r.expired)))
	r.metrics.timeouts.Add(uint64(len(r.expired)))
	r.mu.timerAt = next
	if next >= 0 {
		r.timer.Reset(time.Duration(next - now))
	}
	r.mu.Unlock()
	for i := range r.expired {
		r.expired[i].w.FlushDone(ErrSlaveTimeout)
	}
	if len(r.expired) > 0 {
		r.logger.Debug("ha: SYNC_MASTER waits timed out", "waiters", len(r.expired))
	}
	clear(r.expired)
	r.expired = r.expired[:0]
}

// replicaMetrics counts the SYNC_MASTER waits (atomics: a scrape takes no lock of the send path).
//
//	ringmq_replica_waiters                 gauge    puts waiting for a slave's acknowledgement
//	ringmq_replica_acks_total              counter  waits completed acknowledged
//	ringmq_replica_timeouts_total          counter  waits completed with FLUSH_SLAVE_TIMEOUT
//	ringmq_replica_not_available_total     counter  waits answered SLAVE_NOT_AVAILABLE at once
//	ringmq_replica_rejected_total          counter  waits refused with a full queue
type replicaMetrics struct {
	depth                                  atomic.Int64
	acks, timeouts, notAvailable, rejected atomic.Uint64
}

func (m *replicaMetrics) register(reg prometheus.Registerer, logger *slog.Logger) {
	if reg == nil {
		return
	}
	counter := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v.Load()) })
	}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_replica_waiters",
			Help: "SYNC_MASTER puts waiting for a slave's acknowledgement."}, func() float64 { return float64(m.depth.Load()) }),
		counter("ringmq_replica_acks_total", "SYNC_MASTER waits completed acknowledged by a slave.", &m.acks),
		counter("ringmq_replica_timeouts_total", "SYNC_MASTER waits completed with FLUSH_SLAVE_TIMEOUT.", &m.timeouts),
		counter("ringmq_replica_not_available_total", "SYNC_MASTER waits answered SLAVE_NOT_AVAILABLE at once.", &m.notAvailable),
		counter("ringmq_replica_rejected_total", "SYNC_MASTER waits refused because the waiter queue was full.", &m.rejected),
	} {
		if err := reg.Register(c); err != nil { // registered by an earlier broker on this registry
			logger.Debug("ha: a replica metric is not registered", "error", err)
		}
	}
}
