package flush

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/round"
)

// completion is one FlushDone call seen by a test.
type completion struct {
	target int64
	err    error
}

// recorder collects completions in the order the GroupCommit made them.
type recorder struct {
	mu   sync.Mutex
	done []completion
}

func (r *recorder) waiter(target int64) Waiter {
	return WaiterFunc(func(err error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.done = append(r.done, completion{target, err})
	})
}

func (r *recorder) get() []completion {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]completion(nil), r.done...)
}

// scriptedDurable is a DurableFunc the test steers: each call reports its target on calls and returns
// what the test sends on answers.
type scriptedDurable struct {
	calls   chan int64
	answers chan syncAnswer
	n       atomic.Int64
}

type syncAnswer struct {
	durable int64
	err     error
}

func newScriptedDurable() *scriptedDurable {
	return &scriptedDurable{calls: make(chan int64), answers: make(chan syncAnswer)}
}

// newScriptedGroupCommit is a group commit (test config, unregistered metrics, returned too) whose
// durable operations the test answers through the returned scriptedDurable.
func newScriptedGroupCommit(t *testing.T) (*scriptedDurable, *GroupCommit, *Metrics) {
	t.Helper()
	d := newScriptedDurable()
	m, err := NewMetrics(nil, "test")
	require.NoError(t, err)
	g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, m, nil)
	require.NoError(t, err)
	return d, g, m
}

func (s *scriptedDurable) durable(target int64) (int64, error) {
	s.n.Add(1)
	s.calls <- target
	a := <-s.answers
	return a.durable, a.err
}

// seriesValue is the value of the one series of the named counter or gauge on reg (0 when absent).
func seriesValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			require.Len(t, f.GetMetric(), 1, name)
			return f.GetMetric()[0].GetCounter().GetValue() + f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

func testGroupCommitConfig() GroupCommitConfig {
	return GroupCommitConfig{SyncFlushTimeout: 5 * time.Second, WaiterQueueMax: 64}
}

func TestGroupCommitConfigValidate(t *testing.T) {
	require.NoError(t, DefaultGroupCommitConfig().Validate())
	require.Equal(t, 5*time.Second, DefaultGroupCommitConfig().SyncFlushTimeout)
	err := GroupCommitConfig{SyncFlushTimeout: 0, WaiterQueueMax: 1}.Validate()
	require.ErrorIs(t, err, ErrConfig)
	require.Contains(t, err.Error(), "syncFlushTimeout")
	err = GroupCommitConfig{SyncFlushTimeout: time.Second, WaiterQueueMax: 0}.Validate()
	require.ErrorIs(t, err, ErrConfig)
	require.Contains(t, err.Error(), "WaiterQueueMax")
	_, err = NewGroupCommit(DefaultGroupCommitConfig(), 0, nil, nil, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestGroupCommitCompletesInOffsetOrderAfterDurableReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, g, m := newScriptedGroupCommit(t)
		var rec recorder

		require.NoError(t, g.Submit(100, rec.waiter(100)))
		require.Equal(t, int64(100), <-d.calls, "the first waiter starts a durable operation at once")

		// While it runs, more waiters arrive out of offset order (puts release the put lock before Submit).
		for _, target := range []int64{500, 300, 400, 200} {
			require.NoError(t, g.Submit(target, rec.waiter(target)))
		}
		synctest.Wait()
		require.Empty(t, rec.get(), "nothing completes before the durable operation returns")
		require.Equal(t, 5, g.QueueDepth())

		d.answers <- syncAnswer{durable: 100}
		require.Equal(t, int64(500), <-d.calls, "one operation for all four queued waiters, up to the highest")
		synctest.Wait()
		require.Equal(t, []completion{{100, nil}}, rec.get(), "only the covered waiter completed")

		d.answers <- syncAnswer{durable: 650} // later appends rode along
		synctest.Wait()
		require.Equal(t, []completion{{100, nil}, {200, nil}, {300, nil}, {400, nil}, {500, nil}}, rec.get())
		require.Equal(t, 0, g.QueueDepth())
		require.Equal(t, int64(2), d.n.Load(), "two durable operations for five waiters")

		snap := m.Snapshot()
		require.Equal(t, uint64(2), snap.DurableWrites)
		require.Equal(t, uint64(5), snap.Acks)
		require.Equal(t, int64(4), snap.MaxBatch)
		require.Equal(t, uint64(650), snap.Bytes)
		require.InDelta(t, 2.5, snap.AcksPerDurableWrite(), 1e-9)
		require.Equal(t, int64(2), m.LatencyHistogram().TotalCount())

		// A waiter at or below the durable offset completes without another operation.
		require.NoError(t, g.Submit(600, rec.waiter(600)))
		synctest.Wait()
		require.Equal(t, completion{600, nil}, rec.get()[5])
		require.Equal(t, int64(2), d.n.Load())

		require.NoError(t, g.Close())
	})
}

func TestGroupCommitTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg, "test")
		require.NoError(t, err)
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, m, nil)
		require.NoError(t, err)
		var rec recorder

		require.NoError(t, g.Submit(10, rec.waiter(10)))
		require.Equal(t, int64(10), <-d.calls)
		require.Equal(t, 1.0, seriesValue(t, reg, "ringmq_flush_waiter_queue_depth"))
		// The disk is stuck: the durable operation does not return.
		time.Sleep(5*time.Second - time.Millisecond)
		synctest.Wait()
		require.Empty(t, rec.get(), "not before syncFlushTimeout")

		time.Sleep(time.Millisecond)
		synctest.Wait()
		got := rec.get()
		require.Len(t, got, 1)
		require.ErrorIs(t, got[0].err, ErrFlushTimeout)
		require.Equal(t, uint64(1), m.Snapshot().Timeouts)
		require.Equal(t, 0, g.QueueDepth())
		require.Equal(t, 1.0, seriesValue(t, reg, "ringmq_flush_timeouts_total"))
		require.Zero(t, seriesValue(t, reg, "ringmq_flush_waiter_queue_depth"))

		// The stuck operation finally returns: the waiter is not completed a second time.
		d.answers <- syncAnswer{durable: 10}
		synctest.Wait()
		require.Len(t, rec.get(), 1)

		// A waiter that arrives later is served normally.
		require.NoError(t, g.Submit(20, rec.waiter(20)))
		require.Equal(t, int64(20), <-d.calls)
		d.answers <- syncAnswer{durable: 20}
		synctest.Wait()
		require.Equal(t, completion{20, nil}, rec.get()[1])
		require.NoError(t, g.Close())
	})
}

// TimeoutErr replaces ErrFlushTimeout for a user with its own error (the store's, ha's).
func TestGroupCommitTimeoutErr(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		cfg := testGroupCommitConfig()
		own := fmt.Errorf("user: not durable in time: %w", ErrFlushTimeout)
		cfg.TimeoutErr = own
		g, err := NewGroupCommit(cfg, 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder
		require.NoError(t, g.Submit(10, rec.waiter(10)))
		require.Equal(t, int64(10), <-d.calls)
		time.Sleep(cfg.SyncFlushTimeout)
		synctest.Wait()
		got := rec.get()
		require.Len(t, got, 1)
		require.Same(t, own, got[0].err)
		require.ErrorIs(t, got[0].err, ErrFlushTimeout)
		d.answers <- syncAnswer{durable: 10}
		require.NoError(t, g.Close())
	})
}

func TestGroupCommitDurableErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		h := &logtest.Recorder{}
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, nil, slog.New(h))
		require.NoError(t, err)
		var rec recorder

		// ENOSPC fails the covered waiters, never reports success, and is not sticky.
		noSpace := fmt.Errorf("%w: test", ErrNoSpace)
		require.NoError(t, g.Submit(10, rec.waiter(10)))
		<-d.calls
		require.NoError(t, g.Submit(30, rec.waiter(30))) // arrives during the failing operation
		d.answers <- syncAnswer{durable: 0, err: noSpace}
		require.Equal(t, int64(30), <-d.calls, "the next waiter gets its own attempt")
		synctest.Wait()
		require.Len(t, rec.get(), 1)
		require.ErrorIs(t, rec.get()[0].err, ErrNoSpace)
		d.answers <- syncAnswer{durable: 30}
		synctest.Wait()
		require.Equal(t, completion{30, nil}, rec.get()[1], "space came back")

		// EIO is sticky: this waiter and every later one fail, without another durable operation.
		ioErr := fmt.Errorf("%w: test", ErrIO)
		require.NoError(t, g.Submit(40, rec.waiter(40)))
		<-d.calls
		d.answers <- syncAnswer{durable: 40, err: ioErr}
		synctest.Wait()
		require.NoError(t, g.Submit(50, rec.waiter(50)))
		synctest.Wait()
		got := rec.get()
		require.Len(t, got, 4)
		require.ErrorIs(t, got[2].err, ErrIO)
		require.ErrorIs(t, got[3].err, ErrIO)
		require.Equal(t, int64(3), d.n.Load())
		require.Len(t, h.AtLevel(slog.LevelError), 1, "one log line for the I/O error")

		require.NoError(t, g.Close())
	})
}

func TestGroupCommitFailedSyncIsSticky(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder
		// ENOSPC reported by fdatasync (writeback failed), not by a write: the bytes may be lost.
		syncNoSpace := fmt.Errorf("%w: %w: test", ErrNoSpace, ErrDurability)
		require.NoError(t, g.Submit(10, rec.waiter(10)))
		<-d.calls
		d.answers <- syncAnswer{err: syncNoSpace}
		synctest.Wait()
		require.NoError(t, g.Submit(20, rec.waiter(20)))
		synctest.Wait()
		got := rec.get()
		require.Len(t, got, 2)
		require.ErrorIs(t, got[1].err, ErrDurability, "a later waiter is not told its bytes are safe")
		require.Equal(t, int64(1), d.n.Load())
		require.NoError(t, g.Close())
	})
}

func TestGroupCommitQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		reg := prometheus.NewRegistry()
		m, err := NewMetrics(reg, "test")
		require.NoError(t, err)
		cfg := testGroupCommitConfig()
		cfg.WaiterQueueMax = 2
		g, err := NewGroupCommit(cfg, 0, d.durable, m, nil)
		require.NoError(t, err)
		var rec recorder

		require.NoError(t, g.Submit(1, rec.waiter(1)))
		<-d.calls
		require.NoError(t, g.Submit(2, rec.waiter(2)))
		require.ErrorIs(t, g.Submit(3, rec.waiter(3)), ErrQueueFull, "refused at once, not after a timeout")
		require.Equal(t, uint64(1), m.Snapshot().Rejected)
		require.Equal(t, 2, g.QueueDepth())
		require.Equal(t, 1.0, seriesValue(t, reg, "ringmq_flush_rejected_total"))
		require.Equal(t, 2.0, seriesValue(t, reg, "ringmq_flush_waiter_queue_depth"))

		d.answers <- syncAnswer{durable: 1}
		require.Equal(t, int64(2), <-d.calls)
		d.answers <- syncAnswer{durable: 2}
		synctest.Wait()
		require.Equal(t, []completion{{1, nil}, {2, nil}}, rec.get())
		require.NoError(t, g.Submit(3, rec.waiter(3)), "room again once waiters completed")
		require.Equal(t, int64(3), <-d.calls)
		d.answers <- syncAnswer{durable: 3}
		require.NoError(t, g.Close())
		require.Len(t, rec.get(), 3)
	})
}

func TestGroupCommitCloseDrains(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder
		require.NoError(t, g.Submit(10, rec.waiter(10)))
		<-d.calls
		require.NoError(t, g.Submit(20, rec.waiter(20)))
		require.NoError(t, g.Submit(15, rec.waiter(15)))

		closed := make(chan error, 1)
		go func() { closed <- g.Close() }()
		synctest.Wait()
		require.ErrorIs(t, g.Submit(30, rec.waiter(30)), ErrClosed, "no new waiters once closing")
		d.answers <- syncAnswer{durable: 10}
		require.Equal(t, int64(20), <-d.calls, "closing still makes queued waiters durable")
		d.answers <- syncAnswer{durable: 20}
		require.NoError(t, <-closed)
		require.Equal(t, []completion{{10, nil}, {15, nil}, {20, nil}}, rec.get())
		require.ErrorIs(t, g.Close(), ErrClosed)
	})
}

func TestGroupCommitCloseReportsDrainError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder
		require.NoError(t, g.Submit(10, rec.waiter(10)))
		<-d.calls
		closed := make(chan error, 1)
		go func() { closed <- g.Close() }()
		synctest.Wait()
		d.answers <- syncAnswer{err: fmt.Errorf("%w: test", ErrNoSpace)}
		require.ErrorIs(t, <-closed, ErrNoSpace)
		require.ErrorIs(t, rec.get()[0].err, ErrNoSpace)
	})
}

func TestGroupCommitStalledStoreDoesNotBusyLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder
		require.NoError(t, g.Submit(100, rec.waiter(100)))
		<-d.calls
		d.answers <- syncAnswer{durable: 50} // success, but short of the target
		synctest.Wait()
		require.Equal(t, int64(1), d.n.Load(), "no second operation for the same target")
		require.Empty(t, rec.get())

		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Len(t, rec.get(), 1)
		require.ErrorIs(t, rec.get()[0].err, ErrFlushTimeout)
		require.NoError(t, g.Close())
	})
}

func TestGroupCommitCloseFailsWaitersThatCannotProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder
		require.NoError(t, g.Submit(100, rec.waiter(100)))
		<-d.calls
		d.answers <- syncAnswer{durable: 50}
		synctest.Wait()
		require.NoError(t, g.Close())
		require.Len(t, rec.get(), 1)
		require.ErrorIs(t, rec.get()[0].err, ErrClosed)
	})
}

func TestGroupCommitWaiterMaySubmit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, func(target int64) (int64, error) { return target, nil }, nil, nil)
		require.NoError(t, err)
		var rec recorder
		inner := rec.waiter(20)
		require.NoError(t, g.Submit(10, WaiterFunc(func(err error) {
			rec.waiter(10).FlushDone(err)
			if err := g.Submit(20, inner); err != nil {
				panic(err)
			}
		})))
		synctest.Wait()
		require.Equal(t, []completion{{10, nil}, {20, nil}}, rec.get())
		require.NoError(t, g.Close())
	})
}

// TestGroupCommitConcurrentSubmitters checks, with real goroutines and the race detector, that every waiter
// completes exactly once, successfully, and that completions never go backwards in offset. Submit runs
// under the "put lock" here so that arrival order is offset order; a waiter that arrives after a higher
// offset already completed is completed late by nature (TestGroupCommitCompletesInOffsetOrder... covers
// reordering inside one batch).
func TestGroupCommitConcurrentSubmitters(t *testing.T) {
	var written atomic.Int64
	var durableCalls atomic.Int64
	durable := func(target int64) (int64, error) {
		durableCalls.Add(1)
		return written.Load(), nil // everything written so far becomes durable
	}
	m, err := NewMetrics(nil, "test")
	require.NoError(t, err)
	cfg := DefaultGroupCommitConfig()
	g, err := NewGroupCommit(cfg, 0, durable, m, nil)
	require.NoError(t, err)

	const submitters, perSubmitter = 8, 500
	var (
		orderMu sync.Mutex
		last    int64
		ordered = true
		count   int
	)
	var putMu sync.Mutex
	var wg sync.WaitGroup
	for s := 0; s < submitters; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			for i := 0; i < perSubmitter; i++ {
				putMu.Lock()
				target := written.Add(1024)
				mine := target
				err := g.Submit(target, WaiterFunc(func(err error) {
					orderMu.Lock()
					if mine < last {
						ordered = false
					}
					last = mine
					count++
					orderMu.Unlock()
					done <- err
				}))
				putMu.Unlock()
				if err != nil {
					panic(err)
				}
				if err := <-done; err != nil {
					panic(err)
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, g.Close())
	require.True(t, ordered, "completions follow offsets")
	require.Equal(t, submitters*perSubmitter, count)
	snap := m.Snapshot()
	require.Equal(t, uint64(submitters*perSubmitter), snap.Acks)
	require.LessOrEqual(t, durableCalls.Load(), int64(submitters*perSubmitter))
	require.Equal(t, durableCalls.Load(), int64(snap.DurableWrites))
}

// allocWaiter is a preallocated waiter, the way the broker will pass pooled requests.
type allocWaiter struct{ done chan error }

func (w *allocWaiter) FlushDone(err error) { w.done <- err }

func TestGroupCommitSubmitDoesNotAllocate(t *testing.T) {
	var next int64
	g, err := NewGroupCommit(DefaultGroupCommitConfig(), 0, func(target int64) (int64, error) { return target, nil }, nil, nil)
	require.NoError(t, err)
	w := &allocWaiter{done: make(chan error, 1)}
	var failed error
	allocs := testing.AllocsPerRun(2000, func() {
		next += 1024
		if err := g.Submit(next, w); err != nil {
			failed = err
		}
		if err := <-w.done; err != nil {
			failed = err
		}
	})
	require.NoError(t, failed)
	require.NoError(t, g.Close())
	// AllocsPerRun counts the whole process: this covers Submit, the loop, the syncer and the metrics.
	require.Zero(t, allocs)
}

func TestWaiterFuncAndErrors(t *testing.T) {
	var got error
	WaiterFunc(func(err error) { got = err }).FlushDone(ErrFlushTimeout)
	require.ErrorIs(t, got, ErrFlushTimeout)
	g, err := NewGroupCommit(testGroupCommitConfig(), 0, func(t int64) (int64, error) { return t, nil }, nil, nil)
	require.NoError(t, err)
	require.ErrorIs(t, g.Submit(1, nil), ErrInvalidArgument)
	require.NoError(t, g.Close())
	require.False(t, errors.Is(ErrFlushTimeout, ErrQueueFull))
}

// TestGroupCommitStartsSyncsWithoutTheLoop: the only hand-off before a sync is the syncer's. A Submit that
// finds the syncer idle hands it the operation itself, and the syncer starts the next operation for what
// was submitted meanwhile as soon as one returns: both happen here while the loop is held in a callback,
// so neither waits for the loop. Completions still come in offset order, each after its operation.
func TestGroupCommitStartsSyncsWithoutTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, g, m := newScriptedGroupCommit(t)
		var rec recorder
		release := make(chan struct{})
		held := make(chan struct{})
		require.NoError(t, g.Submit(50, rec.waiter(50)))
		require.Equal(t, int64(50), <-d.calls)
		// Submitted while 50 is in flight and not covered by it: the loop takes both with 50's result
		// (the syncer completes waiters itself only when all of them are covered) and completes 100
		// after the next operation.
		require.NoError(t, g.Submit(100, WaiterFunc(func(err error) {
			close(held)
			<-release // the loop is busy in this callback until the test lets it go
			rec.waiter(100).FlushDone(err)
		})))
		d.answers <- syncAnswer{durable: 50}
		require.Equal(t, int64(100), <-d.calls, "the syncer went on with what arrived meanwhile")
		synctest.Wait() // the loop has taken 50's result and both waiters, so the syncer completes none
		d.answers <- syncAnswer{durable: 100}
		<-held

		require.NoError(t, g.Submit(200, rec.waiter(200)))
		require.Equal(t, int64(200), <-d.calls, "Submit started the operation, the loop being busy")
		require.NoError(t, g.Submit(300, rec.waiter(300)))
		require.NoError(t, g.Submit(250, rec.waiter(250)))
		d.answers <- syncAnswer{durable: 200}
		require.Equal(t, int64(300), <-d.calls, "the syncer went on with what arrived meanwhile")
		d.answers <- syncAnswer{durable: 300}
		synctest.Wait()
		require.Equal(t, []completion{{50, nil}}, rec.get())

		close(release)
		synctest.Wait()
		require.Equal(t, []completion{{50, nil}, {100, nil}, {200, nil}, {250, nil}, {300, nil}}, rec.get())
		require.Equal(t, int64(4), d.n.Load())
		require.Equal(t, uint64(4), m.Snapshot().DurableWrites)
		require.Equal(t, uint64(5), m.Snapshot().Acks)
		require.Equal(t, 0, g.QueueDepth())
		require.NoError(t, g.Close())
	})
}

// TestGroupCommitSyncerCompletesWhatTheLoopDoesNotHold: a waiter whose Submit started the operation
// stays in pending while it runs (the loop, woken, does not take it), and the syncer completes it as
// soon as the operation returns, without the loop's wake-up in between; the loop still counts it.
func TestGroupCommitSyncerCompletesWhatTheLoopDoesNotHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, g, m := newScriptedGroupCommit(t)
		var rec recorder
		for i, target := range []int64{10, 20} {
			require.NoError(t, g.Submit(target, rec.waiter(target)))
			require.Equal(t, target, <-d.calls)
			synctest.Wait() // the loop has run on the Submit's wake
			g.mu.Lock()
			require.Len(t, g.mu.pending, 1, "the loop took the waiter of a running operation")
			g.mu.Unlock()
			d.answers <- syncAnswer{durable: target}
			synctest.Wait()
			require.Len(t, rec.get(), i+1)
		}
		require.Equal(t, []completion{{10, nil}, {20, nil}}, rec.get())
		require.Equal(t, uint64(2), m.Snapshot().DurableWrites)
		require.Equal(t, uint64(2), m.Snapshot().Acks)
		require.Equal(t, 0, g.QueueDepth())
		require.NoError(t, g.Close())
	})
}

// TestGroupCommitTimeoutOfAWaiterThatDidNotWakeTheLoop: waiters submitted while an operation is in flight
// do not wake the loop, yet each times out at its own deadline while the disk is stuck.
func TestGroupCommitTimeoutOfAWaiterThatDidNotWakeTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		g, err := NewGroupCommit(testGroupCommitConfig(), 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder
		require.NoError(t, g.Submit(10, rec.waiter(10)))
		require.Equal(t, int64(10), <-d.calls) // stuck from here
		time.Sleep(time.Second)
		require.NoError(t, g.Submit(20, rec.waiter(20)))
		time.Sleep(4 * time.Second)
		synctest.Wait()
		require.Len(t, rec.get(), 1)
		require.Equal(t, int64(10), rec.get()[0].target)
		require.ErrorIs(t, rec.get()[0].err, ErrFlushTimeout)

		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		require.Len(t, rec.get(), 1, "not before its own syncFlushTimeout")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Len(t, rec.get(), 2)
		require.Equal(t, int64(20), rec.get()[1].target)
		require.ErrorIs(t, rec.get()[1].err, ErrFlushTimeout)

		// The stuck operation returns; the syncer goes on up to the highest target submitted (its waiter
		// has timed out, which the syncer does not know): nothing completes twice.
		d.answers <- syncAnswer{durable: 10}
		require.Equal(t, int64(20), <-d.calls)
		d.answers <- syncAnswer{durable: 20}
		synctest.Wait()
		require.Len(t, rec.get(), 2)
		require.NoError(t, g.Close())
	})
}

// Reserved places count as waiters: Submit and Reserve are refused once reservations and waiters fill
// the queue, a reserved SubmitReserved never is, and an unused reservation given back makes room.
func TestGroupCommitReservations(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newScriptedDurable()
		cfg := testGroupCommitConfig()
		cfg.WaiterQueueMax = 3
		g, err := NewGroupCommit(cfg, 0, d.durable, nil, nil)
		require.NoError(t, err)
		var rec recorder

		require.True(t, g.Reserve())
		require.True(t, g.Reserve())
		require.NoError(t, g.Submit(1, rec.waiter(1)))
		<-d.calls
		require.Equal(t, 3, g.QueueDepth())
		require.False(t, g.Reserve(), "full: two reserved, one waiting")
		require.ErrorIs(t, g.Submit(2, rec.waiter(2)), ErrQueueFull)
		require.NoError(t, g.SubmitReserved(2, rec.waiter(2)), "a reserved place is always taken")
		require.Equal(t, 3, g.QueueDepth())
		g.Unreserve()
		require.Equal(t, 2, g.QueueDepth())
		require.True(t, g.Reserve(), "the place given back")
		require.NoError(t, g.SubmitReserved(3, rec.waiter(3)))

		d.answers <- syncAnswer{durable: 1}
		require.Equal(t, int64(3), <-d.calls)
		d.answers <- syncAnswer{durable: 3}
		synctest.Wait()
		require.Equal(t, []completion{{1, nil}, {2, nil}, {3, nil}}, rec.get())
		require.Equal(t, 0, g.QueueDepth())
		require.NoError(t, g.Close())
		require.True(t, g.Reserve(), "after Close: nothing to hold, the submit reports ErrClosed")
		require.ErrorIs(t, g.SubmitReserved(4, rec.waiter(4)), ErrClosed)
	})
}

// roundLog records RoundWaiter completions and the ends of the rounds they deferred to, in order.
type roundLog struct {
	mu       sync.Mutex
	events   []string
	deferred bool // deferred to the current round, not ended yet
}

func (l *roundLog) EndRound() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, "end")
	l.deferred = false
}

func (l *roundLog) waiter(target int64) Waiter {
	return RoundWaiterFunc(func(err error, rd *round.Round) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.events = append(l.events, fmt.Sprintf("%d:%v:round=%t", target, err, rd != nil))
		if rd != nil && !l.deferred {
			l.deferred = true
			rd.Defer(l)
		}
	})
}

func (l *roundLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// The waiters a sync covers complete in one round, ended after the last of them, whether the syncer
// completes them (the loop holds none) or the loop does; a plain Waiter among them completes as before,
// and waiters completed one at a time (a timeout) get no round.
func TestGroupCommitCompletesCoveredWaitersInOneRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, g, _ := newScriptedGroupCommit(t)
		var l roundLog
		var rec recorder

		// The syncer's own completion: the loop holds nothing while the first operation runs.
		require.NoError(t, g.Submit(100, l.waiter(100)))
		require.Equal(t, int64(100), <-d.calls)
		require.NoError(t, g.Submit(90, l.waiter(90)))
		require.NoError(t, g.Submit(80, rec.waiter(80)))
		synctest.Wait()
		d.answers <- syncAnswer{durable: 100}
		synctest.Wait()
		require.Equal(t, []string{"90:<nil>:round=true", "100:<nil>:round=true", "end"}, l.get())
		require.Equal(t, []completion{{80, nil}}, rec.get())

		// The loop's completion: waiters beyond what an operation covered, which the loop takes when it
		// handles that result, covered by the next operation.
		require.NoError(t, g.Submit(150, l.waiter(150)))
		require.Equal(t, int64(150), <-d.calls)
		require.NoError(t, g.Submit(300, l.waiter(300)))
		require.NoError(t, g.Submit(200, l.waiter(200)))
		synctest.Wait()
		d.answers <- syncAnswer{durable: 150}
		require.Equal(t, int64(300), <-d.calls)
		synctest.Wait()
		g.mu.Lock()
		require.Equal(t, 2, g.mu.outstanding-len(g.mu.pending), "the loop holds the two waiters")
		g.mu.Unlock()
		d.answers <- syncAnswer{durable: 300}
		synctest.Wait()
		require.Equal(t, []string{"90:<nil>:round=true", "100:<nil>:round=true", "end",
			"150:<nil>:round=true", "end", "200:<nil>:round=true", "300:<nil>:round=true", "end"}, l.get())

		// A timeout completes its waiter alone, with no round.
		require.NoError(t, g.Submit(400, l.waiter(400)))
		require.Equal(t, int64(400), <-d.calls)
		time.Sleep(testGroupCommitConfig().SyncFlushTimeout + time.Millisecond) // synctest's fake clock
		synctest.Wait()
		require.Equal(t, fmt.Sprintf("400:%v:round=false", ErrFlushTimeout), l.get()[8])
		require.Len(t, l.get(), 9)
		d.answers <- syncAnswer{durable: 400}
		require.NoError(t, g.Close())
	})
}
