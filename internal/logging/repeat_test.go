package logging

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// fakeTimers records the limiter's scheduled flushes; a test runs them after moving its clock.
type fakeTimers struct {
	mu      sync.Mutex
	pending []fakeTimer
}

type fakeTimer struct {
	after   time.Duration
	f       func()
	stopped *bool
}

func (ft *fakeTimers) afterFunc(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	stopped := new(bool)
	ft.pending = append(ft.pending, fakeTimer{after: d, f: f, stopped: stopped})
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !*stopped
		*stopped = true
		return was
	}
}

// live returns the durations of the timers not stopped.
func (ft *fakeTimers) live() []time.Duration {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	var out []time.Duration
	for _, t := range ft.pending {
		if !*t.stopped {
			out = append(out, t.after)
		}
	}
	return out
}

// fire runs every live timer once.
func (ft *fakeTimers) fire() {
	ft.mu.Lock()
	var run []func()
	for _, t := range ft.pending {
		if !*t.stopped {
			*t.stopped = true
			run = append(run, t.f)
		}
	}
	ft.mu.Unlock()
	for _, f := range run {
		f()
	}
}

func newTestLimiter(interval time.Duration, burst int) (*RepeatLimiter, *testutil.ManualClock, *fakeTimers) {
	clock := testutil.NewManualClock()
	l := NewRepeatLimiter(interval, burst, clock.Now)
	timers := &fakeTimers{}
	l.afterFunc = timers.afterFunc
	return l, clock, timers
}

// messages returns the records' messages in order.
func messages(rs []slog.Record) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Message
	}
	return out
}

func TestRepeatLimiterLogsTheFirstLinesAndCountsTheRest(t *testing.T) {
	l, clock, timers := newTestLimiter(10*time.Second, 3)
	base, rec := logtest.Logger()
	log := l.Logger(base)
	for i := range 10 {
		log.Info("netio: closing connection: malformed frame", "remote", i)
	}
	log.Warn("netio: closing connection: malformed frame", "remote", "w") // another level: its own key
	log.Info("broker: consumer registered", "group", "G")                 // another message: its own key
	require.Equal(t, []string{
		"netio: closing connection: malformed frame", "netio: closing connection: malformed frame",
		"netio: closing connection: malformed frame",
		"netio: closing connection: malformed frame", "broker: consumer registered",
	}, messages(rec.All()))
	require.Equal(t, "2", logtest.Attr(rec.All()[2], "remote"), "the first three lines are the ones logged")
	require.Equal(t, []time.Duration{10 * time.Second}, timers.live(), "one flush at the interval's end")

	// Before the interval ends, a flush writes nothing and waits for the end.
	clock.Advance(4 * time.Second)
	timers.fire()
	require.Len(t, rec.All(), 5)
	require.Equal(t, []time.Duration{6 * time.Second}, timers.live())

	// At the end, one line with the count.
	clock.Advance(6 * time.Second)
	timers.fire()
	all := rec.All()
	require.Len(t, all, 6)
	s := all[5]
	require.Equal(t, "similar log lines suppressed", s.Message)
	require.Equal(t, slog.LevelInfo, s.Level)
	require.Equal(t, "netio: closing connection: malformed frame", logtest.Attr(s, "line"))
	require.Equal(t, "7", logtest.Attr(s, "suppressed"))
	require.Equal(t, "10s", logtest.Attr(s, "interval"))
	require.Empty(t, timers.live(), "nothing left to flush")

	// A new interval logs again.
	log.Info("netio: closing connection: malformed frame", "remote", "again")
	require.Len(t, rec.All(), 7)
	require.Equal(t, "again", logtest.Attr(rec.All()[6], "remote"))
}

func TestRepeatLimiterWritesTheCountBeforeTheNextLine(t *testing.T) {
	l, clock, timers := newTestLimiter(time.Minute, 1)
	base, rec := logtest.Logger()
	log := l.Logger(base).With("component", "x") // WithAttrs keeps the limiter
	for range 5 {
		log.Warn("broker: subscription group not auto-created: limit reached")
	}
	clock.Advance(time.Minute) // the timer has not run: the next line writes the count first
	log.Warn("broker: subscription group not auto-created: limit reached", "n", "next")
	require.Equal(t, []string{"broker: subscription group not auto-created: limit reached",
		"similar log lines suppressed", "broker: subscription group not auto-created: limit reached"},
		messages(rec.All()))
	require.Equal(t, "4", logtest.Attr(rec.All()[1], "suppressed"))
	require.Equal(t, slog.LevelWarn, rec.All()[1].Level)
	require.Equal(t, "next", logtest.Attr(rec.All()[2], "n"))
	timers.fire() // the stale timer finds nothing to write
	require.Len(t, rec.All(), 3)
}

func TestRepeatLimiterCloseWritesPendingCounts(t *testing.T) {
	l, _, timers := newTestLimiter(time.Hour, 2)
	base, rec := logtest.Logger()
	log := l.Logger(base)
	for range 102 {
		log.Info("a")
	}
	for range 2 {
		log.Info("b") // within the burst: no count to write
	}
	l.Close()
	require.Equal(t, []string{"a", "a", "b", "b", "similar log lines suppressed"}, messages(rec.All()))
	require.Equal(t, "100", logtest.Attr(rec.All()[4], "suppressed"))
	require.Empty(t, timers.live(), "Close stops the timer")
	// After Close lines are still limited, and no timer is started.
	for range 3 {
		log.Info("a")
	}
	require.Len(t, rec.All(), 7)
	require.Empty(t, timers.live())
}

func TestRepeatLimiterConcurrentLines(t *testing.T) {
	l, _, _ := newTestLimiter(time.Hour, 5)
	base, rec := logtest.Logger()
	log := l.Logger(base)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				log.Info("flood")
			}
		})
	}
	wg.Wait()
	l.Close()
	all := rec.All()
	require.Len(t, all, 6)
	require.Equal(t, "795", logtest.Attr(all[5], "suppressed"))
}

func TestRepeatLimiterRealTimer(t *testing.T) {
	// The production timer flushes on its own once an interval with suppressed lines ends.
	l := NewRepeatLimiter(20*time.Millisecond, 1, nil)
	base, rec := logtest.Logger()
	log := l.Logger(base)
	for range 1000 { // some of them land in one interval whatever the machine's speed
		log.Info("x")
	}
	summary := func() (slog.Record, bool) {
		for _, r := range rec.All() {
			if r.Message == "similar log lines suppressed" {
				return r, true
			}
		}
		return slog.Record{}, false
	}
	testutil.Eventually(t, "the count written by the timer", func() bool { _, ok := summary(); return ok })
	r, _ := summary()
	require.Equal(t, "x", logtest.Attr(r, "line"))
	l.Close()
}
