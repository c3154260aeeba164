package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// Request dispatch: routes.go says where each request code runs; dispatch does it.

// newRequestContext wraps a request frame received on conn, stamped with the start of the read pass
// that brought it where the engine says (one clock read for a pass's window of sends), else with the
// broker's clock. A test's clock is always read.
func (b *Broker) newRequestContext(conn netio.Conn, cmd *codec.RemotingCommand) *remoting.Request {
	if b.realClock {
		if pc, ok := conn.(netio.PassClock); ok {
			if t := pc.PassStarted(); !t.IsZero() {
				return b.replies.NewRequest(conn, cmd, t)
			}
		}
	}
	return b.replies.NewRequest(conn, cmd, b.clock())
}

type processorFunc func(rc *remoting.Request)

// pool is the named pool's workers.
func (b *Broker) pool(name poolName) *workerPool {
	switch name {
	case poolPull:
		return b.pullPool
	case poolQuery:
		return b.queryPool
	case poolAdmin:
		return b.adminPool
	}
	panic(fmt.Sprintf("broker: no pool %d", name))
}

// dispatch runs on the event loop for every request frame.
func (b *Broker) dispatch(conn netio.Conn, cmd *codec.RemotingCommand) {
	rc := b.newRequestContext(conn, cmd)
	r := b.routes[cmd.Code]
	if r == nil || r.where == notServed {
		b.notSupported(conn, rc, cmd.Code, r)
		return
	}
	switch r.where {
	case onLoop:
		r.handle(b, rc)
	case onLoopThenPool:
		if rest := r.split(b, rc); rest != nil {
			b.submitRest(r.pool, rc.Reply, rc.Received, rest)
		}
	case onPool:
		b.submitOwned(r, rc)
	}
}

// notSupported answers a request no route serves as a RocketMQ server answers a code it has
// no processor for, and logs it at DEBUG with the reason (through the broker's logger, whose
// repeat limiter bounds a client that sends such codes in a loop).
func (b *Broker) notSupported(conn netio.Conn, rc *remoting.Request, code int32, r *route) {
	rc.Reply.Answer(codec.ResponseRequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", code))
	if !b.logger.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	reason := "unknown request code"
	if r != nil {
		reason = r.reason
	}
	b.logger.Debug("broker: request code not supported", "code", code, "name", codec.RequestCode(code).String(),
		"reason", reason, "remote", conn.RemoteAddr().String())
}

// submitRest queues the pool part of an onLoopThenPool request; a refused submission is
// answered SYSTEM_BUSY. rest holds only owned values (its handler copied what it needs).
func (b *Broker) submitRest(name poolName, to remoting.Reply, received time.Time, rest func()) {
	rc := to.Detached(&codec.RemotingCommand{}, received)
	if err := b.pool(name).submitTask(poolTask{rc: rc, rest: rest}); err != nil {
		b.metrics.busy.WithLabelValues("overload").Inc()
		to.Answer(codec.ResponseSystemBusy, err.Error())
	}
}

// submitOwned queues an onPool request with a private copy of its command.
func (b *Broker) submitOwned(r *route, rc *remoting.Request) {
	cmd := rc.Cmd
	// The command escapes the event loop: give it a private copy of the body and of the
	// header map (the engine recycles both for the connection's next frame).
	// The copies count against requestBudgetBytes until the processor returns: netio's budget
	// ends when this function returns, and a pool's queue bounds requests, not bytes (1,000
	// queued 16 MiB admin frames would hold 16 GiB).
	cost := pooledCopyBytes(cmd)
	if held := b.pooledBytes.Add(cost) - cost; held > 0 && held+cost > b.cfg.RequestBudgetBytes {
		b.pooledBytes.Add(-cost)
		b.metrics.busy.WithLabelValues("pooled_bytes").Inc()
		rc.Reply.Answer(codec.ResponseSystemBusy, fmt.Sprintf(
			"[OVERLOAD]system busy: queued requests hold %d bytes, requestBudgetBytes is %d", held, b.cfg.RequestBudgetBytes))
		return
	}
	rc.Cmd = cmd.Clone()
	handle := r.handle
	if err := b.pool(r.pool).submitTask(poolTask{rc: rc, fn: func(rc *remoting.Request) { handle(b, rc) }, cost: cost}); err != nil {
		b.pooledBytes.Add(-cost)
		b.metrics.busy.WithLabelValues("overload").Inc()
		rc.Reply.Answer(codec.ResponseSystemBusy, err.Error())
	}
}

// pooledCopyBytes is what dispatch copies for a pooled processor: the body and the header's fields.
func pooledCopyBytes(cmd *codec.RemotingCommand) int64 {
	n := len(cmd.Body)
	for k, v := range cmd.ExtAll() {
		n += len(k) + len(v)
	}
	return int64(n)
}

// errPoolFull is the SYSTEM_BUSY remark when a pool's queue is full; RocketMQ says
// "[OVERLOAD]system busy" for a rejected executor submission.
var errPoolFull = errors.New("[OVERLOAD]system busy, start flow control for a while")

// workerPool is a fixed set of goroutines serving a bounded queue. Bounded in both
// directions: at most workers requests run, at most queue wait; more is refused at
// once (errPoolFull) so the client backs off instead of timing out.
type workerPool struct {
	name      string
	queue     chan poolTask
	maxWait   time.Duration // 0: no fast-failure by wait time
	clock     func() time.Time
	onExpired func(p *workerPool, rc *remoting.Request, waited time.Duration)
	wg        sync.WaitGroup
	depth     atomic.Int64
	logger    *slog.Logger
	// arrivals[n % cap] is the arrival (ns since the epoch) of the n-th task queued; taken counts
	// the tasks workers took and queued those submitted, so the oldest waiting is arrivals[taken]
	// (HeadWait). Concurrent submitters may queue in another order than they counted: the figure is
	// a report, off by a submission at most.
	arrivals      []atomic.Int64
	taken, queued atomic.Int64
	// held is the broker's count of bytes pooled requests hold (Broker.pooledBytes): a task's
	// cost is given back when it has run.
	held *atomic.Int64

	// mu orders submit against close: submitters hold it shared while sending, close
	// holds it exclusively while it marks the pool closed and closes the queue.
	mu     sync.RWMutex
	closed bool
}

// poolTask is fn(rc), or rest() with rc for the fast-failure answer.
type poolTask struct {
	rc   *remoting.Request
	fn   processorFunc
	rest func()
	cost int64 // bytes counted in held until the task has run
}

func newWorkerPool(name string, workers, queue int, maxWait time.Duration, clock func() time.Time,
	onExpired func(p *workerPool, rc *remoting.Request, waited time.Duration), logger *slog.Logger) *workerPool {
	p := &workerPool{name: name, queue: make(chan poolTask, queue), maxWait: maxWait, clock: clock,
		onExpired: onExpired, logger: logger, arrivals: make([]atomic.Int64, max(queue, 1))}
	p.wg.Add(workers)
	for range workers {
		go p.run()
	}
	return p
}

func (p *workerPool) submit(rc *remoting.Request, fn processorFunc) error {
	return p.submitTask(poolTask{rc: rc, fn: fn})
}

// submitTask queues t, which holds t.cost bytes of held until it has run. On error nothing is
// queued and the caller still owns the cost.
func (p *workerPool) submitTask(t poolTask) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return fmt.Errorf("[OVERLOAD]broker is shutting down, %s pool closed", p.name)
	}
	// Counted before the send: a worker may take the task before this goroutine runs again, and
	// the depth must not read -1 meanwhile.
	p.depth.Add(1)
	select {
	case p.queue <- t:
		arrived := t.rc.Received
		if arrived.IsZero() {
			arrived = p.clock()
		}
		n := p.queued.Add(1) - 1
		p.arrivals[n%int64(len(p.arrivals))].Store(arrived.UnixNano())
		return nil
	default:
		p.depth.Add(-1)
		return fmt.Errorf("%w (%s queue full: %d waiting)", errPoolFull, p.name, cap(p.queue))
	}
}

func (p *workerPool) run() {
	defer p.wg.Done()
	for t := range p.queue {
		p.depth.Add(-1)
		p.taken.Add(1)
		p.runTask(t)
	}
}

func (p *workerPool) runTask(t poolTask) {
	if t.cost != 0 {
		defer p.held.Add(-t.cost)
	}
	if p.maxWait > 0 {
		if waited := p.clock().Sub(t.rc.Received); waited > p.maxWait {
			p.onExpired(p, t.rc, waited)
			return
		}
	}
	if t.rest != nil {
		t.rest()
		return
	}
	t.fn(t.rc)
}

// Depth is the number of queued, not yet started requests.
func (p *workerPool) Depth() int64 { return p.depth.Load() }

// HeadWait is how long the oldest queued request has waited since it arrived, 0 when none waits
// (RocketMQ's headSlowTimeMills4*ThreadPoolQueue). Safe for concurrent use.
func (p *workerPool) HeadWait() time.Duration {
	head := p.taken.Load()
	if head >= p.queued.Load() {
		return 0
	}
	arrived := p.arrivals[head%int64(len(p.arrivals))].Load()
	if arrived == 0 {
		return 0
	}
	return max(p.clock().Sub(time.Unix(0, arrived)), 0)
}

// close stops taking work, lets the queued requests run, and waits for the workers.
func (p *workerPool) close() {
	p.mu.Lock()
	already := p.closed
	p.closed = true
	if !already {
		close(p.queue)
	}
	p.mu.Unlock()
	p.wg.Wait()
}
