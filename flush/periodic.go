package flush

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// IntervalConfig configures a periodic service: the ASYNC_FLUSH flusher (CommitLog or ConsumeQueue) or
// the transient-pool commit service.
type IntervalConfig struct {
	// Interval is the longest time between two runs (flushIntervalCommitLog, commitIntervalCommitLog, ...).
	Interval time.Duration
	// LeastPages is the dirty-page threshold below which a run may do nothing (flushCommitLogLeastPages,
	// commitCommitLogLeastPages, ...). 0 means any dirty byte is enough.
	LeastPages int
	// ThoroughInterval forces a run with LeastPages 0 at least this often (flushCommitLogThoroughInterval...).
	ThoroughInterval time.Duration
}

// DefaultCommitLogFlushConfig is RocketMQ's ASYNC_FLUSH CommitLog schedule: every 500 ms when 4 pages are
// dirty, everything every 10 s.
func DefaultCommitLogFlushConfig() IntervalConfig {
	return IntervalConfig{Interval: 500 * time.Millisecond, LeastPages: 4, ThoroughInterval: 10 * time.Second}
}

// DefaultConsumeQueueFlushConfig is RocketMQ's ConsumeQueue schedule: every 1 s when 2 pages are dirty,
// everything every 60 s.
func DefaultConsumeQueueFlushConfig() IntervalConfig {
	return IntervalConfig{Interval: time.Second, LeastPages: 2, ThoroughInterval: 60 * time.Second}
}

// DefaultCommitConfig is RocketMQ's transient-pool commit schedule: every 200 ms when 4 pages wait,
// everything every 200 ms.
func DefaultCommitConfig() IntervalConfig {
	return IntervalConfig{Interval: 200 * time.Millisecond, LeastPages: 4, ThoroughInterval: 200 * time.Millisecond}
}

// Validate checks every field and names the first bad one.
func (c IntervalConfig) Validate() error {
	switch {
	case c.Interval <= 0:
		return fmt.Errorf("%w: Interval = %v, want > 0", ErrConfig, c.Interval)
	case c.LeastPages < 0:
		return fmt.Errorf("%w: LeastPages = %d, want >= 0", ErrConfig, c.LeastPages)
	case c.ThoroughInterval <= 0:
		return fmt.Errorf("%w: ThoroughInterval = %v, want > 0", ErrConfig, c.ThoroughInterval)
	}
	return nil
}

// WorkFunc flushes (or commits) when at least leastPages pages are waiting, everything that waits when
// leastPages is 0, and returns how many bytes it moved. Called on the service's goroutine, one call at a
// time (and once more on the Close caller's goroutine, after the service goroutine has exited).
type WorkFunc func(leastPages int) (bytes int64, err error)

// periodic is the loop shared by IntervalFlusher and CommitService (RocketMQ's FlushRealTimeService and
// CommitRealTimeService differ only in their numbers and in what they call).
type periodic struct {
	service string // for logs: "commitlog flush", "consumequeue flush", "commitlog commit"
	cfg     IntervalConfig
	work    WorkFunc
	after   func(bytes int64) // optional; called after a run that moved bytes
	metrics *Metrics
	logger  *slog.Logger

	wake chan struct{} // cap 1
	quit chan struct{}
	done chan struct{}

	mu struct {
		sync.Mutex
		closed bool
	}
	failing bool // loop-owned (then Close-owned): log failures on change, not on every run
}

func newPeriodic(service string, cfg IntervalConfig, work WorkFunc, after func(int64), metrics *Metrics,
	logger *slog.Logger) (*periodic, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", service, err)
	}
	if work == nil {
		return nil, fmt.Errorf("%w: %s work func is nil", ErrInvalidArgument, service)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if metrics == nil {
		metrics, _ = NewMetrics(nil, "") // cannot fail without a registry
	}
	p := &periodic{
		service: service, cfg: cfg, work: work, after: after, metrics: metrics, logger: logger,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{}),
	}
	go p.loop()
	return p, nil
}

// loop: sleep until Interval passes or Wake is called, then run with LeastPages, or with 0 when
// ThoroughInterval has passed since the last thorough run. Stops on quit.
func (p *periodic) loop() {
	defer close(p.done)
	timer := time.NewTimer(p.cfg.Interval)
	defer timer.Stop()
	lastThorough := time.Now()
	for {
		select {
		case <-p.quit:
			return
		case <-timer.C:
		case <-p.wake:
		}
		least := p.cfg.LeastPages
		if now := time.Now(); now.Sub(lastThorough) >= p.cfg.ThoroughInterval {
			least = 0
			lastThorough = now
		}
		_ = p.run(least) // failures are counted and logged in run; the next run tries again
		timer.Reset(p.cfg.Interval)
	}
}

func (p *periodic) run(leastPages int) error {
	start := time.Now()
	n, err := p.work(leastPages)
	elapsed := time.Since(start)
	if err != nil {
		p.metrics.failedWrite(elapsed)
		if !p.failing {
			p.failing = true
			p.logger.Error("flush: "+p.service+" failed; retrying every interval", "error", err)
		}
		return err
	}
	if p.failing {
		p.failing = false
		p.logger.Info("flush: " + p.service + " recovered")
	}
	if n > 0 {
		p.metrics.durableWrite(elapsed, n, 0)
		if p.after != nil {
			p.after(n)
		}
	}
	return nil
}

func (p *periodic) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// close stops the loop, then runs once more with leastPages 0 so everything waiting is moved.
func (p *periodic) close() error {
	p.mu.Lock()
	if p.mu.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.mu.closed = true
	p.mu.Unlock()
	close(p.quit)
	<-p.done
	return p.run(0)
}
