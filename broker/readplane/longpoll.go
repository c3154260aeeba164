package readplane

import (
	"container/heap"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Long polling (RocketMQ PullRequestHoldService, PROTOCOL.md §9).
//
// A pull that finds nothing new (PULL_NOT_FOUND) on its first pass, with the SUSPEND
// sysFlag, is parked under topic@queueId until one of:
//
//   - the dispatcher appends an entry to that queue at or past the requested offset that
//     the request's filter accepts — by tag code, or for an SQL92 subscription by the new
//     message's properties (the store's ArrivingListener);
//   - the periodic sweep (every 5 s, or shortPollingTimeMills with longPollingEnable=false)
//     sees the queue's max offset past the requested offset — it catches notifications
//     dropped under overload;
//   - its suspend timeout (the request's suspendTimeoutMillis; shortPollingTimeMills with
//     longPollingEnable=false) passes.
//
// Then it is re-run against the store: the re-run never parks again and does not store
// the commit offset, and its answer carries the original opaque (PULL_NOT_FOUND when there
// is still nothing). Re-runs go to the pull pool (they read data that just arrived, or
// nothing), or run on the hold goroutine when the pool refuses them.
//
// # One goroutine owns the table
//
// The hold goroutine owns the table (key → parked requests) and a heap of deadlines, and
// sleeps on one timer set to the earliest deadline or the next sweep: no goroutine or
// timer per parked request. Parks (from event loops and pool workers) and arrivals (from
// the store's dispatcher goroutine, which must never block) are appended to two short
// lists under a mutex held only for the append, then the goroutine is woken through a
// one-slot channel. An arrival's properties are copied into one byte arena beside the
// list (the dispatcher's slice is not ours to keep), which is reused pass after pass. All
// are bounded: past maxHeld parked pulls a new one is answered SYSTEM_BUSY; past
// maxArrivals queued notifications, or maxArrivalPropertiesBytes of their properties,
// further ones are dropped and the next pass sweeps every parked queue instead.
//
// A park that raced with an arrival (the dispatcher notified before the park reached the
// table) is caught when the goroutine takes the park: it checks the queue's max offset
// first and re-runs at once if the data is already there.
//
// Stop answers every parked pull (by re-running it) before returning.

// remarkHoldFull answers a pull that would have been parked while the table is full.
const remarkHoldFull = "[OVERLOAD]too many pull requests held, start flow control for a while"

// holdKey is RocketMQ's "topic@queueId" without building the string.
type holdKey struct {
	topic   string
	queueID int32
}

// arrival is one ConsumeQueue append reported by the store. Its properties are
// props[propsStart:propsEnd] of the arena it was queued with.
type arrival struct {
	key                  holdKey
	logicOffset          int64
	tagsCode             int64
	propsStart, propsEnd int
}

// holdConfig bounds and paces the hold service.
type holdConfig struct {
	maxHeld     int // parked pulls, beyond which new ones get SYSTEM_BUSY
	maxArrivals int // queued arrival notifications before falling back to a sweep
	// maxArrivalPropertiesBytes bounds the queued arrivals' copied properties likewise.
	maxArrivalPropertiesBytes int
	sweepInterval             time.Duration // periodic check of every parked queue
}

func defaultHoldConfig(set Settings) holdConfig {
	hc := holdConfig{maxHeld: 1 << 18, maxArrivals: 1 << 16, maxArrivalPropertiesBytes: 4 << 20,
		sweepInterval: 5 * time.Second}
	if !set.LongPollingEnable && set.ShortPollingTime > 0 {
		hc.sweepInterval = set.ShortPollingTime
	}
	return hc
}

// pullRequestHoldService (RocketMQ's PullRequestHoldService) parks pulls that found nothing
// (long polling) and wakes them when the dispatcher appends to their queue or their suspend
// timeout passes. NotifyMessageArriving and the parking path are safe for concurrent use;
// Start and Stop are called once each (Plane.Start, Plane.Stop).
type pullRequestHoldService struct {
	p   *Plane
	cfg holdConfig

	held atomic.Int64 // parked or about to be; bounded by cfg.maxHeld
	// applied counts arrival notifications the hold goroutine has acted on (tests wait on
	// it to know an arrival was seen).
	applied atomic.Int64
	// queued counts parks handed to the hold goroutine that it has not yet put in its table (or
	// re-run): tests wait for 0 to know a pull is parked where an arrival's tag check applies.
	queued atomic.Int64

	mu struct {
		sync.Mutex
		parks    []*pullRequest
		arrivals []arrival
		props    []byte // the arrivals' properties, back to back
		overflow bool   // arrivals were dropped: sweep
		stopped  bool
	}
	wake chan struct{} // one slot: "there is work"
	stop chan struct{}
	done chan struct{}

	// Owned by the hold goroutine.
	table     map[holdKey][]*pullRequest
	deadlines deadlineHeap
	parkBuf   []*pullRequest
	arriveBuf []arrival
	propsBuf  []byte
	nextSweep time.Time
}

func newPullRequestHoldService(p *Plane, cfg holdConfig) *pullRequestHoldService {
	return &pullRequestHoldService{
		p:     p,
		cfg:   cfg,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		table: map[holdKey][]*pullRequest{},
	}
}

// Start starts the hold goroutine.
func (h *pullRequestHoldService) Start() error {
	go h.run()
	return nil
}

// Stop answers every parked pull and stops the hold goroutine. Pulls parked after Stop
// are answered at once.
func (h *pullRequestHoldService) Stop(ctx context.Context) error {
	h.mu.Lock()
	already := h.mu.stopped
	h.mu.stopped = true
	h.mu.Unlock()
	if !already {
		close(h.stop)
	}
	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// HeldCount is the number of parked pulls (including ones not yet in the table).
func (h *pullRequestHoldService) HeldCount() int { return int(h.held.Load()) }

// NotifyMessageArriving is the store's ArrivingListener. It runs on the dispatcher
// goroutine for every ConsumeQueue append, so it only queues the event (or, when the
// queue is full, flags a sweep) and never blocks beyond a short mutex section.
func (h *pullRequestHoldService) NotifyMessageArriving(topic string, queueID int32, logicOffset int64,
	tagsCode int64, storeTimestamp int64, properties []byte) {
	if h.held.Load() == 0 {
		return
	}
	h.mu.Lock()
	if len(h.mu.arrivals) < h.cfg.maxArrivals &&
		len(h.mu.props)+len(properties) <= h.cfg.maxArrivalPropertiesBytes {
		start := len(h.mu.props)
		h.mu.props = append(h.mu.props, properties...)
		h.mu.arrivals = append(h.mu.arrivals,
			arrival{holdKey{topic, queueID}, logicOffset, tagsCode, start, len(h.mu.props)})
	} else {
		h.mu.overflow = true
	}
	h.mu.Unlock()
	h.signal()
}

func (h *pullRequestHoldService) signal() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// suspend parks pr (first pass found nothing). false: the table is full and the caller
// answers SYSTEM_BUSY. After Stop the pull is answered at once instead of parked.
func (h *pullRequestHoldService) suspend(pr *pullRequest) bool {
	if h.held.Add(1) > int64(h.cfg.maxHeld) {
		h.held.Add(-1)
		return false
	}
	pr.key = holdKey{pr.header.Topic, pr.header.QueueID}
	pr.deadline = h.p.clock().Add(pr.suspendTimeout)
	h.mu.Lock()
	if h.mu.stopped {
		h.mu.Unlock()
		h.held.Add(-1)
		h.p.runPull(pr) // firstPass is false: answers without parking
		return true
	}
	h.queued.Add(1)
	h.mu.parks = append(h.mu.parks, pr)
	h.mu.Unlock()
	h.p.pullsHeld.Inc()
	h.signal()
	return true
}

// run is the hold goroutine. Each pass: take new parks (re-running those whose data came
// meanwhile), apply arrivals (or sweep after an overflow), sweep when due, re-run expired
// requests, then sleep until the earliest deadline, the next sweep, a wake-up or Stop.
func (h *pullRequestHoldService) run() {
	defer close(h.done)
	clock := h.p.clock
	h.nextSweep = clock().Add(h.cfg.sweepInterval)
	timer := time.NewTimer(h.cfg.sweepInterval)
	defer timer.Stop()
	for {
		select {
		case <-h.stop:
			h.answerAll()
			return
		case <-h.wake:
		case <-timer.C:
		}
		h.takeParks()
		sweep := h.takeArrivals()
		now := clock()
		if sweep || !now.Before(h.nextSweep) {
			h.sweep()
			h.nextSweep = now.Add(h.cfg.sweepInterval)
		}
		h.expire(now)
		next := h.nextSweep
		if len(h.deadlines) > 0 && h.deadlines[0].deadline.Before(next) {
			next = h.deadlines[0].deadline
		}
		timer.Reset(max(next.Sub(clock()), 0))
	}
}

// takeParks moves queued parks into the table. A park whose queue already holds data past
// its offset (an arrival that beat the park) is re-run at once.
func (h *pullRequestHoldService) takeParks() {
	h.mu.Lock()
	parks := h.mu.parks
	h.mu.parks = h.parkBuf[:0]
	h.mu.Unlock()
	st := h.p.store
	for i, pr := range parks {
		parks[i] = nil
		if st.GetMaxOffsetInQueue(pr.key.topic, pr.key.queueID) > pr.header.QueueOffset {
			h.rerun(pr)
			continue
		}
		h.table[pr.key] = append(h.table[pr.key], pr)
		heap.Push(&h.deadlines, pr)
	}
	h.queued.Add(-int64(len(parks)))
	h.parkBuf = parks[:0]
}

// takeArrivals wakes the parked pulls that an arrival satisfies. It reports whether
// notifications were dropped (the caller then sweeps).
func (h *pullRequestHoldService) takeArrivals() (overflow bool) {
	h.mu.Lock()
	arrivals, props := h.mu.arrivals, h.mu.props
	h.mu.arrivals, h.mu.props = h.arriveBuf[:0], h.propsBuf[:0]
	overflow = h.mu.overflow
	h.mu.overflow = false
	h.mu.Unlock()
	for _, a := range arrivals {
		list := h.table[a.key]
		if len(list) == 0 {
			continue
		}
		kept := list[:0]
		for _, pr := range list {
			if a.logicOffset >= pr.header.QueueOffset &&
				pr.filter.isMatchedByArrival(a.tagsCode, props[a.propsStart:a.propsEnd]) {
				heap.Remove(&h.deadlines, pr.heapIndex)
				h.rerun(pr)
				continue
			}
			kept = append(kept, pr)
		}
		h.setList(a.key, list, kept)
	}
	h.applied.Add(int64(len(arrivals)))
	clear(arrivals)
	h.arriveBuf, h.propsBuf = arrivals[:0], props[:0]
	return overflow
}

// sweep re-runs every parked pull whose queue has grown past its offset (Java's
// checkHoldRequest: no tag check, the re-run filters).
func (h *pullRequestHoldService) sweep() {
	st := h.p.store
	for key, list := range h.table {
		maxOffset := st.GetMaxOffsetInQueue(key.topic, key.queueID)
		kept := list[:0]
		for _, pr := range list {
			if maxOffset > pr.header.QueueOffset {
				heap.Remove(&h.deadlines, pr.heapIndex)
				h.rerun(pr)
				continue
			}
			kept = append(kept, pr)
		}
		h.setList(key, list, kept)
	}
}

// expire re-runs the pulls whose suspend timeout has passed.
func (h *pullRequestHoldService) expire(now time.Time) {
	for len(h.deadlines) > 0 && !h.deadlines[0].deadline.After(now) {
		pr := heap.Pop(&h.deadlines).(*pullRequest)
		list := h.table[pr.key]
		kept := list[:0]
		for _, other := range list {
			if other != pr {
				kept = append(kept, other)
			}
		}
		h.setList(pr.key, list, kept)
		h.rerun(pr)
	}
}

// setList stores a filtered list, dropping the key when empty, and clears the tail so the
// backing array does not keep released requests reachable.
func (h *pullRequestHoldService) setList(key holdKey, list, kept []*pullRequest) {
	clear(list[len(kept):])
	if len(kept) == 0 {
		delete(h.table, key)
		return
	}
	h.table[key] = kept
}

// rerun hands a woken pull back for its second (last) pass. The request no longer
// belongs to the hold service afterwards.
func (h *pullRequestHoldService) rerun(pr *pullRequest) {
	h.held.Add(-1)
	p := h.p
	p.pullsHeld.Dec()
	p.pullReruns.Inc()
	pr.heapIndex = -1
	rc := pr.to.Detached(&pr.cmd, p.clock())
	if err := p.pool.Submit(rc, pr.run); err != nil {
		p.logger.Debug("readplane: pull pool refused a woken pull; answering from the hold goroutine", "err", err)
		p.runPull(pr) // the pool is full or closing: answer from here
	}
}

// answerAll answers every parked and queued pull (Stop).
func (h *pullRequestHoldService) answerAll() {
	h.mu.Lock()
	parks := h.mu.parks
	h.mu.parks = nil
	h.mu.Unlock()
	h.queued.Add(-int64(len(parks)))
	for _, pr := range parks {
		h.held.Add(-1)
		h.p.pullsHeld.Dec()
		h.p.runPull(pr)
	}
	for key, list := range h.table {
		for _, pr := range list {
			h.held.Add(-1)
			h.p.pullsHeld.Dec()
			pr.heapIndex = -1
			h.p.runPull(pr)
		}
		delete(h.table, key)
	}
	h.deadlines = h.deadlines[:0]
}

// deadlineHeap orders parked pulls by deadline (container/heap); each request knows its
// index so that a woken request leaves the heap in O(log n).
type deadlineHeap []*pullRequest

func (q deadlineHeap) Len() int           { return len(q) }
func (q deadlineHeap) Less(i, j int) bool { return q[i].deadline.Before(q[j].deadline) }
func (q deadlineHeap) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].heapIndex = i
	q[j].heapIndex = j
}

func (q *deadlineHeap) Push(x any) {
	pr := x.(*pullRequest)
	pr.heapIndex = len(*q)
	*q = append(*q, pr)
}

func (q *deadlineHeap) Pop() any {
	old := *q
	n := len(old)
	pr := old[n-1]
	old[n-1] = nil
	pr.heapIndex = -1
	*q = old[:n-1]
	return pr
}
