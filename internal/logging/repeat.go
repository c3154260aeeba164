package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// RepeatLimiter bounds log lines that a remote peer can make the process repeat (a connection
// closed for a malformed frame, a client registered, a group refused): per message and level,
// the first Burst lines of each Interval are logged, the rest are counted, and one line
//
//	level=INFO msg="similar log lines suppressed" line="netio: closing connection: malformed frame" suppressed=948 interval=10s
//
// says how many were dropped, when the next such line arrives after the interval or when the
// interval ends (a timer), whichever comes first, and at Close. Lines are keyed by message, not by
// attributes: the attributes of a flood (peer addresses, group names) are what varies.
//
// It is a fixed window with a count rather than golang.org/x/time/rate's token bucket: the
// count of what was dropped, per message, is the point, and a bucket keeps none. The keys are
// the callers' message constants, so the table stays small.
//
// Safe for concurrent use.
type RepeatLimiter struct {
	interval time.Duration
	burst    int
	clock    func() time.Time
	// afterFunc schedules the end-of-interval flush; time.AfterFunc outside tests.
	afterFunc func(time.Duration, func()) (stop func() bool)

	mu        sync.Mutex
	windows   map[repeatKey]*repeatWindow
	stopTimer func() bool // the pending flush, nil when none
	closed    bool
}

type repeatKey struct {
	level slog.Level
	msg   string
}

// repeatWindow is one message's current interval.
type repeatWindow struct {
	start      time.Time
	logged     int
	suppressed int
	handler    slog.Handler // where the summary goes: the handler of the latest suppressed line
}

// Defaults of NewRepeatLimiter's arguments (≤ 0).
const (
	DefaultRepeatInterval = 10 * time.Second
	DefaultRepeatBurst    = 10
)

// NewRepeatLimiter logs the first burst lines of each message per interval (≤ 0: the defaults);
// clock nil is time.Now.
func NewRepeatLimiter(interval time.Duration, burst int, clock func() time.Time) *RepeatLimiter {
	if interval <= 0 {
		interval = DefaultRepeatInterval
	}
	if burst <= 0 {
		burst = DefaultRepeatBurst
	}
	if clock == nil {
		clock = time.Now
	}
	return &RepeatLimiter{interval: interval, burst: burst, clock: clock, windows: map[repeatKey]*repeatWindow{},
		afterFunc: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
}

// Logger returns a logger that writes to base's handler through the limiter.
func (l *RepeatLimiter) Logger(base *slog.Logger) *slog.Logger {
	return slog.New(l.Handler(base.Handler()))
}

// Handler wraps h: records pass through the limiter first.
func (l *RepeatLimiter) Handler(h slog.Handler) slog.Handler { return &repeatHandler{inner: h, l: l} }

// suppressedLine is a summary to write once the limiter's lock is released.
type suppressedLine struct {
	handler    slog.Handler
	key        repeatKey
	suppressed int
}

func (s suppressedLine) write(ctx context.Context, now time.Time, interval time.Duration) {
	r := slog.NewRecord(now, s.key.level, "similar log lines suppressed", 0)
	r.AddAttrs(slog.String("line", s.key.msg), slog.Int("suppressed", s.suppressed),
		slog.Duration("interval", interval))
	_ = s.handler.Handle(ctx, r) // as slog.Logger does: a handler's error has nowhere to go
}

// admit decides on one line of key written to h: whether it is logged, and the summary of the
// previous interval to write before it, if any.
func (l *RepeatLimiter) admit(key repeatKey, h slog.Handler) (pass bool, previous *suppressedLine, now time.Time) {
	now = l.clock()
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.windows[key]
	if w == nil {
		w = &repeatWindow{start: now}
		l.windows[key] = w
	}
	if now.Sub(w.start) >= l.interval {
		if w.suppressed > 0 {
			previous = &suppressedLine{handler: w.handler, key: key, suppressed: w.suppressed}
		}
		*w = repeatWindow{start: now}
	}
	if w.logged < l.burst {
		w.logged++
		return true, previous, now
	}
	w.suppressed++
	w.handler = h
	if l.stopTimer == nil && !l.closed {
		l.stopTimer = l.afterFunc(w.start.Add(l.interval).Sub(now), l.Flush)
	}
	return false, previous, now
}

// Flush writes the summary of every interval that has ended with lines suppressed, and
// schedules itself for the next one that will. The timer calls it; tests call it after
// moving their clock.
func (l *RepeatLimiter) Flush() { l.flush(false) }

// Close writes the summary of every interval with lines suppressed, ended or not, and stops
// the timer. Later lines are still limited; their summaries wait for the next line of their
// message after the interval, or another Close.
func (l *RepeatLimiter) Close() { l.flush(true) }

func (l *RepeatLimiter) flush(all bool) {
	now := l.clock()
	var out []suppressedLine
	l.mu.Lock()
	if l.stopTimer != nil {
		l.stopTimer()
		l.stopTimer = nil
	}
	l.closed = l.closed || all
	var next time.Duration
	for key, w := range l.windows {
		left := w.start.Add(l.interval).Sub(now)
		if left > 0 && !all {
			if w.suppressed > 0 && (next == 0 || left < next) {
				next = left
			}
			continue
		}
		if w.suppressed > 0 {
			out = append(out, suppressedLine{handler: w.handler, key: key, suppressed: w.suppressed})
		}
		delete(l.windows, key) // the next line of this message starts a new interval
	}
	if next > 0 && !l.closed {
		l.stopTimer = l.afterFunc(next, l.Flush)
	}
	l.mu.Unlock()
	for _, s := range out {
		s.write(context.Background(), now, l.interval)
	}
}

// repeatHandler is the slog.Handler in front of a limited logger's own.
type repeatHandler struct {
	inner slog.Handler
	l     *RepeatLimiter
}

func (h *repeatHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.inner.Enabled(ctx, level)
}

func (h *repeatHandler) Handle(ctx context.Context, r slog.Record) error {
	pass, previous, now := h.l.admit(repeatKey{r.Level, r.Message}, h.inner)
	if previous != nil {
		previous.write(ctx, now, h.l.interval)
	}
	if !pass {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

func (h *repeatHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &repeatHandler{inner: h.inner.WithAttrs(attrs), l: h.l}
}

func (h *repeatHandler) WithGroup(name string) slog.Handler {
	return &repeatHandler{inner: h.inner.WithGroup(name), l: h.l}
}
