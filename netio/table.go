package netio

import (
	"sync"
	"sync/atomic"
	"time"
)

// connTable holds a server's open connections: it enforces MaxConnections, finds idle
// connections and lists everything at Stop. Opening and closing take a mutex (rare events);
// the data path never touches the table. Safe for concurrent use.
type connTable struct {
	maxConnections int // 0: no limit
	nextID         atomic.Uint64
	// nowNanos is a coarse clock, advanced by every sweep, that connections stamp their
	// activity with instead of reading the time per frame.
	nowNanos atomic.Int64
	// oldestHandlerNanos is, as of the last sweep, when the oldest handler call still running
	// began (coarse unix nanos), 0 when none ran; serving is true while the server runs. Both
	// for stalled.
	oldestHandlerNanos atomic.Int64
	serving            atomic.Bool

	mu    sync.Mutex
	conns map[uint64]*connCore
}

func newConnTable(maxConnections int) *connTable {
	t := &connTable{maxConnections: maxConnections, conns: make(map[uint64]*connCore)}
	t.nowNanos.Store(time.Now().UnixNano())
	return t
}

// newID returns a fresh connection ID.
func (t *connTable) newID() uint64 { return t.nextID.Add(1) }

// tryAdd registers c unless MaxConnections are already open.
func (t *connTable) tryAdd(c *connCore) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.maxConnections > 0 && len(t.conns) >= t.maxConnections {
		return false
	}
	t.conns[c.id] = c
	return true
}

func (t *connTable) remove(c *connCore) {
	t.mu.Lock()
	delete(t.conns, c.id)
	t.mu.Unlock()
}

func (t *connTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

// all returns a snapshot of the open connections.
func (t *connTable) all() []*connCore {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*connCore, 0, len(t.conns))
	for _, c := range t.conns {
		out = append(out, c)
	}
	return out
}

// sweep advances the coarse clock, notes the oldest handler call in progress (stalled) and
// returns the connections idle for longer than idle (0: never) and, among the others, those
// still reading a large frame admitted longer than largeFrame ago (0: never).
func (t *connTable) sweep(now time.Time, idle, largeFrame time.Duration) (idleConns, slowConns []*connCore) {
	nowNanos := now.UnixNano()
	t.nowNanos.Store(nowNanos)
	var oldest int64
	t.mu.Lock()
	for _, c := range t.conns {
		if since := c.handlerSinceNanos.Load(); since != 0 && (oldest == 0 || since < oldest) {
			oldest = since
		}
		if idle > 0 && nowNanos-c.lastActiveNanos.Load() > int64(idle) {
			idleConns = append(idleConns, c)
		} else if since := c.largeSinceNanos.Load(); largeFrame > 0 && since != 0 && nowNanos-since > int64(largeFrame) {
			slowConns = append(slowConns, c)
		}
	}
	t.mu.Unlock()
	t.oldestHandlerNanos.Store(oldest)
	return idleConns, slowConns
}

// stalled is Server.Stalled for a server whose sweep runs every interval: the longer of how long
// the oldest handler call seen by the last sweep has been running and how much later than two
// intervals the sweep itself is. It reads atomics only (a probe calls it). 0 while the server
// does not run.
func (t *connTable) stalled(now time.Time, interval time.Duration) time.Duration {
	if !t.serving.Load() {
		return 0
	}
	n := now.UnixNano()
	var d int64
	if since := t.oldestHandlerNanos.Load(); since != 0 {
		d = n - since
	}
	d = max(d, n-t.nowNanos.Load()-2*int64(interval))
	return time.Duration(max(d, 0))
}

// sweepInterval is how often idle connections and slow large frames are looked for and the
// coarse clock ticks: a quarter of the shorter timeout, between 10 ms and 1 s. Activity
// stamps lag real time by up to one interval and the sweep runs up to one interval late, so
// a connection is closed after its timeout give or take a quarter (120 s ± 1 s by default).
func sweepInterval(idle, largeFrame time.Duration) time.Duration {
	shortest := idle
	if shortest <= 0 || (largeFrame > 0 && largeFrame < shortest) {
		shortest = largeFrame
	}
	if shortest <= 0 {
		return time.Second
	}
	return min(max(shortest/4, 10*time.Millisecond), time.Second)
}
