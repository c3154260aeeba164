package flush

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/ringmq/ringmq/internal/round"
)

// Waiter learns the outcome of a SYNC_FLUSH put: whether its offset became durable.
type Waiter interface {
	// FlushDone is called exactly once per Submit: nil when the target offset is durable; ErrFlushTimeout
	// (or GroupCommitConfig.TimeoutErr) when SyncFlushTimeout passed first; ErrClosed when the GroupCommit closed before the offset could be
	// made durable; otherwise the durable operation's error (ErrNoSpace, ErrIO, ...). It runs on the
	// GroupCommit's loop goroutine and must not block; it may call Submit, never Close.
	FlushDone(err error)
}

// WaiterFunc adapts a function to Waiter. A method value or capturing closure allocates when created;
// the broker's hot path should pass a pooled request that implements Waiter instead.
type WaiterFunc func(err error)

// FlushDone calls f(err).
func (f WaiterFunc) FlushDone(err error) { f(err) }

// RoundWaiter is a Waiter that takes part in the round of the batch it completes with (internal/round):
// the goroutine completing a batch of covered waiters (the syncer, the loop) calls FlushDoneIn with its
// round and ends the round after the batch's last waiter, so that work the waiters share — the answers
// of a sync going to one connection — is done once, after all of them. Waiters completed one at a time
// (errors, timeouts, Close) get FlushDone.
type RoundWaiter interface {
	Waiter
	FlushDoneIn(err error, rd *round.Round)
}

// RoundWaiterFunc adapts a function to RoundWaiter; FlushDone calls it with no round (nil).
type RoundWaiterFunc func(err error, rd *round.Round)

// FlushDone calls f(err, nil).
func (f RoundWaiterFunc) FlushDone(err error) { f(err, nil) }

// FlushDoneIn calls f(err, rd).
func (f RoundWaiterFunc) FlushDoneIn(err error, rd *round.Round) { f(err, rd) }

// CompleteIn completes w with err in rd, or, for a Waiter that takes no part in rounds, at once.
func CompleteIn(w Waiter, err error, rd *round.Round) {
	if rw, ok := w.(RoundWaiter); ok {
		rw.FlushDoneIn(err, rd)
		return
	}
	w.FlushDone(err)
}

// DurableFunc makes every byte up to at least target durable in one operation and returns the offset up
// to which the file is now durable: target or more (later appends may ride along). It is called on
// GroupCommit's own goroutine, one call at a time. An error means nothing is promised beyond what an
// earlier call returned; the waiters up to target fail with it. Errors wrapping ErrIO or ErrDurability
// fail every later waiter too (a later sync could succeed without the lost bytes).
type DurableFunc func(target int64) (durableOffset int64, err error)

// GroupCommitConfig configures a GroupCommit.
type GroupCommitConfig struct {
	// SyncFlushTimeout is how long a waiter may wait for durability (syncFlushTimeout, default 5 s) before
	// it completes with ErrFlushTimeout (FLUSH_DISK_TIMEOUT on the wire).
	SyncFlushTimeout time.Duration
	// WaiterQueueMax bounds the waiters queued or in flight; Submit beyond it returns ErrQueueFull at once
	// (answer SYSTEM_BUSY). The three waiter slices (pending, the loop's, the syncer's) are allocated at
	// this capacity up front.
	WaiterQueueMax int
	// TimeoutErr is what waiters past SyncFlushTimeout complete with; nil = ErrFlushTimeout. A user of the
	// group commit sets its own error here (it should wrap ErrFlushTimeout), so that its callers need not
	// know package flush and no waiter is wrapped per Submit to translate the error.
	TimeoutErr error
}

// DefaultGroupCommitConfig: 5 s timeout (RocketMQ's syncFlushTimeout), 16,384 waiters (1,000 producers
// with 16 sends in flight each).
func DefaultGroupCommitConfig() GroupCommitConfig {
	return GroupCommitConfig{SyncFlushTimeout: 5 * time.Second, WaiterQueueMax: 16384}
}

// Validate checks every field and names the first bad one.
func (c GroupCommitConfig) Validate() error {
	if c.SyncFlushTimeout <= 0 {
		return fmt.Errorf("%w: syncFlushTimeout = %v, want > 0", ErrConfig, c.SyncFlushTimeout)
	}
	if c.WaiterQueueMax < 1 || c.WaiterQueueMax > 1<<22 {
		return fmt.Errorf("%w: WaiterQueueMax = %d, want 1..%d", ErrConfig, c.WaiterQueueMax, 1<<22)
	}
	return nil
}

// waiter is one queued Submit. 32 bytes; stored by value so queuing never allocates.
type waiter struct {
	target   int64
	deadline int64 // nanoseconds since GroupCommit.epoch (monotonic clock)
	w        Waiter
}

type syncResult struct {
	target  int64 // what the operation was asked for
	durable int64
	err     error
	elapsed time.Duration
	acked   int // waiters the syncer completed itself (see syncer)
}

// GroupCommit is RocketMQ's GroupCommitService without a thread parked per request: waiters queue up,
// one durable operation covers all of them, and they complete in offset order.
//
// Two goroutines: the loop owns the waiters, runs the callbacks and the timeouts; the syncer calls
// DurableFunc. Keeping the (possibly slow) durable call off the loop is what lets timeouts fire while
// the disk is stuck. Submit and Close are safe for concurrent use.
//
// The only hand-off on the way to the disk is the syncer's: a Submit that finds the syncer idle hands it
// the highest target submitted so far itself, and the syncer, when an operation returns, starts the next
// one at once for everything submitted meanwhile, before the loop has seen the result. So each operation
// carries everything that arrived while the previous one ran, and a waiter waits for at most the
// operation in flight when it came plus its own. The loop starts operations only where these two may
// not (see mu.directOK): after a failed or short operation, and while closing.
type GroupCommit struct {
	cfg        GroupCommitConfig
	timeoutErr error // cfg.TimeoutErr, or ErrFlushTimeout
	durable    DurableFunc
	metrics    *Metrics
	logger     *slog.Logger
	epoch      time.Time

	mu struct {
		sync.Mutex
		pending []waiter // appended by Submit, taken whole by the loop (or the syncer)
		// pendingDeadline is the deadline of the oldest waiter in pending (later ones have later ones).
		pendingDeadline int64
		outstanding     int  // pending + held by the loop; bounded by WaiterQueueMax
		wakeWanted      bool // the loop waits for new waiters: the next Submit signals wake
		closed          bool
		// Durable operations: busy while the syncer has one (started by Submit, the loop or the syncer
		// itself); started counts them all, so the loop knows how many results to expect. highest is the
		// highest target ever submitted, durable the loop's durableOffset. directOK (set by the loop) lets
		// Submit and the syncer start operations: false after a failed or short operation (the loop
		// decides when to try again) and while closing.
		busy     bool
		started  uint64
		highest  int64
		durable  int64
		directOK bool
	}

	wake       chan struct{}   // cap 1: "pending is not empty"
	quit       chan struct{}   // closed by Close
	syncReq    chan int64      // cap 1: loop → syncer, a target
	syncDone   chan syncResult // cap 1: syncer → loop
	syncerDone chan struct{}
	done       chan struct{} // closed when the loop has exited

	// Owned by the syncer goroutine: the waiters it completes itself (swapped with mu.pending, so both
	// keep capacity WaiterQueueMax and taking them allocates nothing).
	spare       []waiter
	syncerRound round.Round // the syncer's batches of waiters it completes itself

	// Owned by the loop goroutine.
	batch         []waiter    // waiters taken from pending, sorted by target; cap WaiterQueueMax
	loopRound     round.Round // the loop's batches of covered waiters (completePrefix)
	durableOffset int64       // highest offset DurableFunc has reported durable
	failed        error       // sticky: set after ErrIO or ErrDurability; every waiter completes with it
	closeErr      error       // last durable error while draining for Close
}

// NewGroupCommit starts a group commit over durable. metrics and logger may be nil. durableOffset is the
// offset already durable at start (waiters at or below it complete without a durable operation).
func NewGroupCommit(cfg GroupCommitConfig, durableOffset int64, durable DurableFunc, metrics *Metrics,
	logger *slog.Logger) (*GroupCommit, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if durable == nil {
		return nil, fmt.Errorf("%w: NewGroupCommit durable func is nil", ErrInvalidArgument)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if metrics == nil {
		metrics, _ = NewMetrics(nil, "") // cannot fail without a registry
	}
	g := &GroupCommit{
		cfg:           cfg,
		timeoutErr:    cmp.Or(cfg.TimeoutErr, ErrFlushTimeout),
		durable:       durable,
		metrics:       metrics,
		logger:        logger,
		epoch:         time.Now(),
		wake:          make(chan struct{}, 1),
		quit:          make(chan struct{}),
		syncReq:       make(chan int64, 1),
		syncDone:      make(chan syncResult, 1),
		syncerDone:    make(chan struct{}),
		done:          make(chan struct{}),
		batch:         make([]waiter, 0, cfg.WaiterQueueMax),
		durableOffset: durableOffset,
	}
	g.mu.pending = make([]waiter, 0, cfg.WaiterQueueMax)
	g.spare = make([]waiter, 0, cfg.WaiterQueueMax)
	g.mu.durable, g.mu.highest, g.mu.directOK = durableOffset, durableOffset, true
	go g.syncer()
	go g.loop()
	return g, nil
}

// Submit queues w to learn when every byte below target is durable. It never blocks and never allocates:
// it returns ErrQueueFull at once when WaiterQueueMax waiters are already outstanding, ErrClosed after
// Close; otherwise w.FlushDone will be called exactly once, on the GroupCommit's goroutine.
// Safe for concurrent use.
func (g *GroupCommit) Submit(target int64, w Waiter) error { return g.submit(target, w, false) }

// Reserve holds a place among the WaiterQueueMax outstanding waiters for a SubmitReserved to come, or
// reports false when they are all taken (what Submit would answer ErrQueueFull). A caller that must not
// act on a refusal after the fact reserves first: the broker reserves before storing a send it will
// wait for, so that a send refused for a full queue is never one that was stored. After Close it
// reports true and reserves nothing (the SubmitReserved returns ErrClosed). Safe for concurrent use.
func (g *GroupCommit) Reserve() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.mu.closed {
		return true
	}
	if g.mu.outstanding >= g.cfg.WaiterQueueMax {
		g.metrics.rejectedOne()
		return false
	}
	g.mu.outstanding++
	g.metrics.setDepth(g.mu.outstanding)
	return true
}

// Unreserve gives back a place Reserve held that no SubmitReserved will use. Safe for concurrent use.
func (g *GroupCommit) Unreserve() { g.release(1) }

// SubmitReserved is Submit into the place a Reserve held: never ErrQueueFull. Safe for concurrent use.
func (g *GroupCommit) SubmitReserved(target int64, w Waiter) error { return g.submit(target, w, true) }

func (g *GroupCommit) submit(target int64, w Waiter, reserved bool) error {
	if w == nil {
		if reserved {
			g.Unreserve()
		}
		return fmt.Errorf("%w: Submit waiter is nil", ErrInvalidArgument)
	}
	deadline := g.now() + int64(g.cfg.SyncFlushTimeout)
	g.mu.Lock()
	if g.mu.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	if reserved {
		g.mu.outstanding-- // counted again below, as the waiter
	} else if g.mu.outstanding >= g.cfg.WaiterQueueMax {
		g.mu.Unlock()
		g.metrics.rejectedOne()
		return ErrQueueFull
	}
	if len(g.mu.pending) == 0 {
		g.mu.pendingDeadline = deadline
	}
	g.mu.pending = append(g.mu.pending, waiter{target: target, deadline: deadline, w: w})
	g.mu.outstanding++
	g.metrics.setDepth(g.mu.outstanding)
	g.mu.highest = max(g.mu.highest, target)
	// An idle syncer gets the operation from here, not through the loop: one goroutine switch less
	// between a send and its sync.
	direct := g.mu.directOK && !g.mu.busy && target > g.mu.durable
	if direct {
		g.mu.busy = true
		g.mu.started++
	}
	highest := g.mu.highest
	signal := g.mu.wakeWanted
	g.mu.wakeWanted = false // one signal is enough: the loop takes everything queued when it runs
	g.mu.Unlock()
	if direct {
		g.syncReq <- highest // the syncer is idle: never blocks
	}
	if signal { // the loop takes the waiter (and arms its deadline) while the operation runs
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// QueueDepth is the number of waiters queued or in flight. Safe for concurrent use.
func (g *GroupCommit) QueueDepth() int { return int(g.metrics.depth.Load()) }

// Close stops accepting waiters, makes every queued waiter's offset durable (or fails it), completes them
// all, and stops the goroutines. It returns the error of a durable operation that failed while draining.
// A second Close returns ErrClosed. Must not be called from a Waiter.
func (g *GroupCommit) Close() error {
	g.mu.Lock()
	if g.mu.closed {
		g.mu.Unlock()
		return ErrClosed
	}
	g.mu.closed = true
	g.mu.Unlock()
	close(g.quit)
	<-g.done
	return g.closeErr
}

func (g *GroupCommit) now() int64 { return int64(time.Since(g.epoch)) }

// syncer runs DurableFunc for each target it is handed (by Submit or the loop), and after each
// successful operation that reached its target, at once the next one up to the highest target submitted
// meanwhile, if any and if directOK. Each result goes to the loop, which completes the waiters while the
// next operation runs.
//
// When the loop holds no waiter and every pending one is covered by a successful operation, the syncer
// completes them itself before handing the result over: the usual case of a few producers, where the
// loop's wake-up was one more goroutine switch between the disk and the answer (tens of microseconds on
// a VM's idle vCPU). The loop still gets the result, for the durable offset and the metrics.
func (g *GroupCommit) syncer() {
	defer close(g.syncerDone)
	for target := range g.syncReq {
		for {
			start := time.Now()
			durable, err := g.durable(target)
			elapsed := time.Since(start)
			next := int64(0)
			g.mu.Lock()
			ok := err == nil && durable >= target && g.mu.directOK
			if ok && g.mu.outstanding == len(g.mu.pending) && len(g.mu.pending) > 0 && allCovered(g.mu.pending, durable) {
				g.spare, g.mu.pending = g.mu.pending, g.spare[:0]
				g.mu.outstanding -= len(g.spare)
				g.metrics.setDepth(g.mu.outstanding)
				g.mu.durable = max(g.mu.durable, durable)
			}
			if ok && g.mu.highest > durable {
				next = g.mu.highest
				g.mu.started++
			} else {
				g.mu.busy = false
			}
			g.mu.Unlock()
			acked := len(g.spare)
			if acked > 0 {
				if !slices.IsSortedFunc(g.spare, byTarget) {
					slices.SortStableFunc(g.spare, byTarget)
				}
				for i := range g.spare {
					CompleteIn(g.spare[i].w, nil, &g.syncerRound)
				}
				g.syncerRound.End()
				clear(g.spare) // drop Waiter references
				g.spare = g.spare[:0]
			}
			g.syncDone <- syncResult{target: target, durable: durable, err: err, elapsed: elapsed, acked: acked}
			if next == 0 {
				break
			}
			target = next
		}
	}
}

// allCovered reports whether every waiter in ws has its target at or below durable.
func allCovered(ws []waiter, durable int64) bool {
	for i := range ws {
		if ws[i].target > durable {
			return false
		}
	}
	return true
}

// tryStart hands target to the syncer unless it is busy. Loop only.
func (g *GroupCommit) tryStart(target int64) bool {
	g.mu.Lock()
	if g.mu.busy {
		g.mu.Unlock()
		return false
	}
	g.mu.busy = true
	g.mu.started++
	g.mu.Unlock()
	g.syncReq <- target // the syncer is idle: never blocks
	return true
}

// inflight reports whether results of started operations are still to come. Loop only.
func (g *GroupCommit) inflight(consumed uint64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.mu.started > consumed
}

// publish tells Submit and the syncer the durable offset and whether they may start operations. Loop only.
func (g *GroupCommit) publish(directOK bool) {
	g.mu.Lock()
	g.mu.durable = g.durableOffset
	g.mu.directOK = directOK
	g.mu.Unlock()
}

// loop owns the waiters. Each pass:
//
//  1. wait for an event: new waiters (wake; only asked for when no operation is in flight), a durable
//     result (syncDone), the earliest deadline (timer: of batch, or while an operation is in flight
//     the earliest a pending waiter can have), or Close (quit);
//  2. on a result: take the pending waiters, then raise durableOffset, or fail every waiter the failed
//     operation was meant to cover; then tell Submit and the syncer the new durable offset and whether
//     they may start operations;
//  3. take all pending waiters into batch (one lock, one copy) and keep batch sorted by target;
//  4. if the syncer is idle and waiters beyond durableOffset remain, ask it for one durable operation
//     up to the highest target in batch (normally Submit or the syncer itself has started it already);
//  5. complete the covered prefix of batch (target <= durableOffset) in offset order, while the
//     operation in flight runs;
//  6. when the timer fired, complete waiters past their deadline with ErrFlushTimeout;
//  7. when closing: leave once nothing is queued or in flight.
//
// State: consumed (results handled; operations started beyond it are in flight), stalled (the last
// successful operation did not reach its target: ask again only for a higher target, and nobody else
// may start one, so a store that cannot make progress causes no busy loop; those waiters time out),
// quitting.
func (g *GroupCommit) loop() {
	defer close(g.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	timerAt := int64(-1) // deadline the timer is armed for; -1 when stopped
	var (
		consumed  uint64 // results handled
		requested int64  // highest target of an operation asked for
		stalled   bool   // the last successful operation did not reach its target
		quitting  bool
	)
	quit := g.quit
	for {
		var (
			result      syncResult
			resultOK    bool  // this pass handles a successful durable operation
			resultBytes int64 // bytes it made durable
			timerFired  bool
		)
		inflight := g.inflight(consumed)
		// While a durable operation runs, new waiters need not wake the loop: the operation in flight or
		// the one the syncer chains covers them, and its result (or the syncer itself) takes them. Waking
		// only when needed saves a goroutine switch per Submit. Their deadlines still fire while the disk
		// is stuck: the timer is armed for the earliest deadline in batch, or the earliest a pending
		// waiter has or can have (guard), when the loop takes them.
		guard := g.setWakeWanted(!inflight)
		next := int64(-1)
		for i := range g.batch {
			if d := g.batch[i].deadline; next < 0 || d < next {
				next = d
			}
		}
		if inflight && (next < 0 || guard < next) {
			next = guard
		}
		if next != timerAt {
			timer.Stop()
			if next >= 0 {
				timer.Reset(time.Duration(next - g.now()))
			}
			timerAt = next
		}
		wakeOnly := false
		select {
		case <-g.wake:
			wakeOnly = true
		case result = <-g.syncDone:
			consumed++
			requested = max(requested, result.target)
			// Waiters submitted while it ran are in pending (they did not wake the loop): take them first,
			// so that a failed operation fails every waiter it was meant to cover.
			g.takePending()
			if result.err != nil {
				g.onDurableError(result.target, result)
				if quitting {
					g.closeErr = result.err
				}
			} else {
				resultOK = true
				if result.durable > g.durableOffset {
					resultBytes = result.durable - g.durableOffset
					g.durableOffset = result.durable
				}
				stalled = g.durableOffset < result.target
			}
			g.publish(!stalled && g.failed == nil && !quitting)
		case <-timer.C:
			timerAt = -1
			timerFired = true
		case <-quit:
			quitting = true
			quit = nil
			g.publish(false)
		}
		inflight = g.inflight(consumed)

		// Woken by a Submit that started an operation: leave its waiters in pending, where the syncer
		// completes them itself if it can (see syncer); the timer covers their deadlines.
		if !(wakeOnly && inflight) {
			g.takePending()
		}
		if g.failed != nil {
			g.completeAll(g.failed)
		}
		covered := g.coveredPrefix()

		// Start the next durable operation before running callbacks, so the disk works while the loop
		// completes the previous batch.
		if !inflight && len(g.batch) > covered {
			highest := g.batch[len(g.batch)-1].target
			if (!stalled || highest > requested) && g.tryStart(highest) {
				requested = highest
				inflight = true
			}
		}

		g.completePrefix(covered)
		if resultOK {
			g.metrics.durableWrite(result.elapsed, resultBytes, covered+result.acked)
		} else if covered > 0 {
			g.metrics.lateAcks(covered)
		}
		if timerFired {
			// Deadlines only pass when the timer (armed for the earliest) fires, so only then scan.
			g.expire()
		}

		if quitting && !g.inflight(consumed) {
			if len(g.batch) > 0 { // stalled: nothing will make these durable now
				g.completeAll(ErrClosed)
			}
			break
		}
	}
	timer.Stop()
	close(g.syncReq)
	<-g.syncerDone
}

// takePending moves every pending waiter into batch and sorts batch by target. Loop only.
func (g *GroupCommit) takePending() {
	g.mu.Lock()
	n := len(g.mu.pending)
	if n == 0 {
		g.mu.Unlock()
		return
	}
	g.batch = append(g.batch, g.mu.pending...) // within capacity: outstanding ≤ WaiterQueueMax
	clear(g.mu.pending)                        // drop Waiter references
	g.mu.pending = g.mu.pending[:0]
	g.mu.Unlock()
	// Puts take offsets under the store's lock but call Submit after releasing it, so arrival order can
	// differ from offset order; completions must follow offsets.
	if !slices.IsSortedFunc(g.batch, byTarget) {
		slices.SortStableFunc(g.batch, byTarget)
	}
}

func byTarget(a, b waiter) int { return cmp.Compare(a.target, b.target) }

// coveredPrefix counts the waiters at the front of batch whose target is durable. Loop only.
func (g *GroupCommit) coveredPrefix() int {
	k := 0
	for k < len(g.batch) && g.batch[k].target <= g.durableOffset {
		k++
	}
	return k
}

// completePrefix completes the first k waiters, in offset order, as durable. Loop only.
func (g *GroupCommit) completePrefix(k int) {
	for i := 0; i < k; i++ {
		CompleteIn(g.batch[i].w, nil, &g.loopRound)
	}
	g.loopRound.End()
	g.removePrefix(k)
}

// setWakeWanted tells Submit whether to wake the loop. When wakes become wanted while waiters are already
// pending, the loop wakes itself so none is left behind. It returns the earliest deadline a waiter in
// pending has, or, with none, can have (one submitted from now on). Loop only.
func (g *GroupCommit) setWakeWanted(wanted bool) (guard int64) {
	g.mu.Lock()
	g.mu.wakeWanted = wanted
	pending := len(g.mu.pending) > 0
	guard = g.mu.pendingDeadline
	g.mu.Unlock()
	if !pending {
		guard = g.now() + int64(g.cfg.SyncFlushTimeout)
	}
	if wanted && pending {
		select {
		case g.wake <- struct{}{}:
		default:
		}
	}
	return guard
}

// completeAll completes every waiter in batch with err, in offset order. Loop only.
func (g *GroupCommit) completeAll(err error) {
	for i := range g.batch {
		g.batch[i].w.FlushDone(err)
	}
	g.removePrefix(len(g.batch))
}

// onDurableError fails every waiter the failed operation was meant to cover (target <= requested): a
// failed operation never reports success. ErrIO and ErrDurability are sticky (see package doc); other
// errors (ErrNoSpace from a write) leave later waiters to the next operation, so the broker recovers when
// space returns.
func (g *GroupCommit) onDurableError(requested int64, r syncResult) {
	g.metrics.failedWrite(r.elapsed)
	if (errors.Is(r.err, ErrIO) || errors.Is(r.err, ErrDurability)) && g.failed == nil {
		g.failed = r.err
		g.logger.Error("flush: durable write failed and may have lost data; every later SYNC_FLUSH waiter will fail",
			"error", r.err)
	}
	k := 0
	for k < len(g.batch) && g.batch[k].target <= requested {
		g.batch[k].w.FlushDone(r.err)
		k++
	}
	g.removePrefix(k)
}

// expire completes waiters past their deadline with ErrFlushTimeout, keeping the rest in order. Loop only.
func (g *GroupCommit) expire() {
	if len(g.batch) == 0 {
		return
	}
	now := g.now()
	kept := 0
	expired := 0
	for i := range g.batch {
		if g.batch[i].deadline <= now {
			g.batch[i].w.FlushDone(g.timeoutErr)
			expired++
			continue
		}
		g.batch[kept] = g.batch[i]
		kept++
	}
	if expired == 0 {
		return
	}
	clear(g.batch[kept:])
	g.batch = g.batch[:kept]
	g.metrics.timedOut(expired)
	g.release(expired)
}

// removePrefix drops the first k waiters of batch (already completed). Loop only.
func (g *GroupCommit) removePrefix(k int) {
	if k == 0 {
		return
	}
	n := copy(g.batch, g.batch[k:])
	clear(g.batch[n:])
	g.batch = g.batch[:n]
	g.release(k)
}

// release gives k completed waiters' room in the bound back to Submit.
func (g *GroupCommit) release(k int) {
	g.mu.Lock()
	g.mu.outstanding -= k
	g.metrics.setDepth(g.mu.outstanding)
	g.mu.Unlock()
}
