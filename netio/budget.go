package netio

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Request budget (Config.RequestBudgetBytes, broker key requestBudgetBytes).
//
// A server holds the bytes of a request twice at most while it reads and decodes it: the
// frame itself, and the header's strings copied out of it. Without a bound, N connections
// sending 16 MiB frames at once cost N × 16 MiB or more, however few of them the handlers
// could process at a time. The budget bounds the sum over all connections of a server:
//
//   - A frame larger than LargeFrameBytes is charged its length plus its header length as
//     soon as its first 8 bytes (length and header words) are in, before its other bytes
//     are read. A frame that does not fit waits, in arrival order, and its connection stops
//     reading meanwhile (gnet: read interest off, readstop_linux.go; std: the reading
//     goroutine blocks), so its bytes stay in the kernel and TCP pushes back on the peer.
//   - The charge is returned when the handler's OnRequest (or the pending call's
//     completion) has returned: by then nobody refers to the frame's bytes (the handler
//     contract: a handler that answers later copies what it keeps, DESIGN.md "Buffer
//     ownership").
//   - A frame larger than the whole budget is charged the whole budget: it is read when
//     nothing else is, so it never waits forever.
//   - Smaller frames are not charged and never wait: a connection holds at most one of them
//     partly read (gnet reads at most 64 KiB at a time and every complete frame is handed on
//     at once), so they cost at most LargeFrameBytes per connection, and the requests of
//     well-behaved clients (a few KiB) are never queued behind big ones.
type requestBudget struct {
	limit int64

	mu struct {
		sync.Mutex
		used    int64
		waiters []*budgetWaiter // FIFO: the head is granted first, nobody overtakes it
	}

	used    prometheus.Gauge
	waiting prometheus.Gauge
	waits   prometheus.Counter
}

// LargeFrameBytes: frames (length word included) above this size are charged to the
// request budget; smaller ones never wait. It is gnet's read size (64 KiB, the default
// ReadBufferCap), so a small frame is at most one read.
const LargeFrameBytes = 64 << 10

// budgetWaiter is one frame's claim on the budget. A connection has at most one.
type budgetWaiter struct {
	bytes   int64
	granted atomic.Bool // set when the bytes are charged; read by the waiting connection
	queued  bool        // in the waiters list (budget mu)
	// notify is called once when a queued waiter is granted, on the goroutine that freed the
	// bytes, without locks held; it must not block.
	notify func()
}

func newRequestBudget(limit int64, m *metrics) *requestBudget {
	return &requestBudget{limit: limit, used: m.budgetUsed, waiting: m.budgetWaiting, waits: m.budgetWaits}
}

// RequestBudget is a request budget that several servers draw from (Config.Budget): a broker's
// listenPort and fast port are one process's memory, so a second listener must not double what a
// burst of large frames may hold. Safe for concurrent use.
type RequestBudget struct {
	b       *requestBudget
	adopted atomic.Bool
}

// NewRequestBudget makes a budget of limit bytes for servers to share; its gauges are those of the
// first server built with it (the others' budget metrics stay at zero), so they show the total.
func NewRequestBudget(limit int64) (*RequestBudget, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: RequestBudgetBytes %d <= 0", ErrConfig, limit)
	}
	m, err := newMetrics(nil, "", "")
	if err != nil {
		return nil, err
	}
	return &RequestBudget{b: newRequestBudget(limit, m)}, nil
}

// InUse is the number of bytes charged now, over every server drawing from the budget.
func (r *RequestBudget) InUse() int64 { return r.b.inUse() }

// budgetFor is the budget a server built with cfg and metrics m draws from: cfg.Budget, whose
// gauges become m's if no server took it before, or one of its own of RequestBudgetBytes.
func budgetFor(cfg *Config, m *metrics) *requestBudget {
	r := cfg.Budget
	if r == nil {
		return newRequestBudget(cfg.RequestBudgetBytes, m)
	}
	if r.adopted.CompareAndSwap(false, true) {
		r.b.mu.Lock() // the gauges are only touched under mu
		r.b.used, r.b.waiting, r.b.waits = m.budgetUsed, m.budgetWaiting, m.budgetWaits
		r.b.used.Set(float64(r.b.mu.used))
		r.b.waiting.Set(float64(len(r.b.mu.waiters)))
		r.b.mu.Unlock()
	}
	return r.b
}

// frameCost is what a frame is charged: its bytes plus the copy of its header's strings,
// at most the whole budget.
func (b *requestBudget) frameCost(frameBytes, headerBytes int) int64 {
	return min(int64(frameBytes)+int64(headerBytes), b.limit)
}

// acquire charges w.bytes (w.granted set) if they fit and nobody is waiting, and reports
// true; otherwise it queues w, whose notify is called once it is granted, and reports
// false. w must not be queued or hold a grant already.
func (b *requestBudget) acquire(w *budgetWaiter) bool {
	w.granted.Store(false)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.mu.waiters) == 0 && b.mu.used+w.bytes <= b.limit {
		b.mu.used += w.bytes
		b.used.Set(float64(b.mu.used))
		w.granted.Store(true)
		return true
	}
	w.queued = true
	b.mu.waiters = append(b.mu.waiters, w)
	b.waiting.Set(float64(len(b.mu.waiters)))
	b.waits.Inc()
	return false
}

// cancel withdraws w (its connection is closing). It reports whether w holds a grant, which
// the caller then gives back with release.
func (b *requestBudget) cancel(w *budgetWaiter) (granted bool) {
	b.mu.Lock()
	if w.queued {
		for i, q := range b.mu.waiters {
			if q == w {
				b.mu.waiters = append(b.mu.waiters[:i], b.mu.waiters[i+1:]...)
				break
			}
		}
		w.queued = false
		b.waiting.Set(float64(len(b.mu.waiters)))
	}
	granted = w.granted.Load() // set under mu only
	waiters := b.grantLocked() // removing a head that did not fit may let the next ones in
	b.mu.Unlock()
	notifyAll(waiters)
	return granted
}

// release gives n charged bytes back and grants the waiters that now fit, in order.
func (b *requestBudget) release(n int64) {
	b.mu.Lock()
	b.mu.used -= n
	if b.mu.used < 0 {
		panic("netio: request budget released more than was charged")
	}
	waiters := b.grantLocked()
	b.used.Set(float64(b.mu.used))
	b.mu.Unlock()
	notifyAll(waiters)
}

// grantLocked charges the queued waiters that fit, head first, and returns them for
// notifying. Caller holds mu.
func (b *requestBudget) grantLocked() []*budgetWaiter {
	n := 0
	for _, w := range b.mu.waiters {
		if b.mu.used+w.bytes > b.limit {
			break
		}
		b.mu.used += w.bytes
		w.queued = false
		w.granted.Store(true)
		n++
	}
	if n == 0 {
		return nil
	}
	granted := make([]*budgetWaiter, n)
	copy(granted, b.mu.waiters)
	b.mu.waiters = append(b.mu.waiters[:0], b.mu.waiters[n:]...)
	b.used.Set(float64(b.mu.used))
	b.waiting.Set(float64(len(b.mu.waiters)))
	return granted
}

func notifyAll(waiters []*budgetWaiter) {
	for _, w := range waiters {
		w.notify()
	}
}

// inUse is the number of bytes charged now (tests, logs).
func (b *requestBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.mu.used
}
