package ha

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/flush"
)

// Outcomes of a SYNC_MASTER wait (the broker answers them as RocketMQ does: SLAVE_NOT_AVAILABLE 11,
// FLUSH_SLAVE_TIMEOUT 12; in both the message is stored).
var (
	// ErrSlaveNotAvailable: no slave is connected, or the slaves trail the message by
	// haSlaveFallbehindMax or more. Answered at once, without waiting.
	ErrSlaveNotAvailable = errors.New("ha: slave not available")
	// ErrSlaveTimeout: no slave acknowledged the message within slaveTimeout. It is the group commit's
	// timeout error (the wait is a group commit), so that Wait passes the caller's waiter through without
	// wrapping it in one more allocation per put.
	ErrSlaveTimeout = flush.ErrFlushTimeout
)

// The SYNC_MASTER wait is a flush group commit; these re-export what its users need, so that they
// (the broker) do not import package flush.
type (
	// Waiter learns the outcome of a Replicas.Wait (flush.Waiter).
	Waiter = flush.Waiter
	// WaiterFunc adapts a function to Waiter (flush.WaiterFunc). Bind it once: a method value made
	// per Wait allocates.
	WaiterFunc = flush.WaiterFunc
	// Metrics are the wait's group commit metrics (flush.Metrics).
	Metrics = flush.Metrics
)

// NewMetrics creates the SYNC_MASTER wait's collectors (service "replica") and registers them on reg,
// which may be nil.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) { return flush.NewMetrics(reg, "replica") }

// ReplicasConfig configures the SYNC_MASTER wait.
type ReplicasConfig struct {
	// SlaveTimeout (slaveTimeout, 3 s) is how long a put waits for a slave's acknowledgement.
	SlaveTimeout time.Duration
	// FallBehindMax (haSlaveFallbehindMax, 256 MiB): a slave this far behind a message does not count.
	FallBehindMax int64
	// WaiterQueueMax bounds the puts waiting at once (the flush group commit's bound).
	WaiterQueueMax int
}

// DefaultReplicasConfig is RocketMQ 4.9.3+'s: 3 s, 256 MiB (DefaultSettings).
func DefaultReplicasConfig() ReplicasConfig {
	s := DefaultSettings()
	return s.ReplicasConfig()
}

// Replicas is RocketMQ's GroupTransferService: puts wait until a slave reports an offset at or past their
// end. It is the flush group commit with the slaves' acknowledgement as its durable operation: waiters
// queue without a goroutine or timer each, are completed in offset order as acknowledgements arrive, and
// time out together on one timer. Safe for concurrent use.
type Replicas struct {
	cfg  ReplicasConfig
	srv  *Server
	gc   *flush.GroupCommit
	ack  chan struct{} // cap 1: the acknowledged offset moved
	quit chan struct{}
}

// NewReplicas waits on srv's acknowledgements. metrics may be nil.
func NewReplicas(cfg ReplicasConfig, srv *Server, metrics *Metrics, logger *slog.Logger) (*Replicas, error) {
	r := &Replicas{cfg: cfg, srv: srv, ack: make(chan struct{}, 1), quit: make(chan struct{})}
	gc, err := flush.NewGroupCommit(flush.GroupCommitConfig{SyncFlushTimeout: cfg.SlaveTimeout,
		WaiterQueueMax: cfg.WaiterQueueMax}, srv.AckedOffset(), r.awaitAck, metrics, logger)
	if err != nil {
		return nil, err
	}
	r.gc = gc
	srv.SetAckListener(func() {
		select {
		case r.ack <- struct{}{}:
		default:
		}
	})
	return r, nil
}

// SlaveOK is RocketMQ's isSlaveOK: a slave is connected and the acknowledged offset trails msgEnd by less
// than haSlaveFallbehindMax.
func (r *Replicas) SlaveOK(msgEnd int64) bool {
	return r.srv.SlaveCount() > 0 && msgEnd-r.srv.AckedOffset() < r.cfg.FallBehindMax
}

// Wait calls done once a slave has acknowledged every byte below msgEnd: nil, or ErrSlaveNotAvailable at
// once (no slave, or too far behind), ErrSlaveTimeout after SlaveTimeout, flush.ErrClosed at Close. done runs on the
// waiter's goroutine and must not block. It returns an error instead of calling done only when the queue
// is full (flush.ErrQueueFull) or closed.
func (r *Replicas) Wait(msgEnd int64, done Waiter) error {
	if !r.SlaveOK(msgEnd) {
		done.FlushDone(ErrSlaveNotAvailable)
		return nil
	}
	return r.gc.Submit(msgEnd, done)
}

// Full reports whether a Wait now would find the queue full.
func (r *Replicas) Full() bool { return r.gc.Full() }

// Close completes every waiter (ErrClosed for those not acknowledged) and stops.
func (r *Replicas) Close() error {
	close(r.quit)
	err := r.gc.Close()
	if errors.Is(err, flush.ErrClosed) {
		return ErrClosed
	}
	return err
}

// awaitAck is the group commit's durable operation: it returns once a slave acknowledged target, or
// at Close with what was acknowledged by then.
func (r *Replicas) awaitAck(target int64) (int64, error) {
	for {
		if acked := r.srv.AckedOffset(); acked >= target {
			return acked, nil
		}
		select {
		case <-r.ack:
		case <-r.quit:
			return r.srv.AckedOffset(), nil
		}
	}
}
