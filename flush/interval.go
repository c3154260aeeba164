package flush

import "log/slog"

// IntervalFlusher is the ASYNC_FLUSH service (RocketMQ FlushRealTimeService) for the CommitLog, and the
// ConsumeQueue flusher (FlushConsumeQueueService): flush(LeastPages) every Interval, flush(0) every
// ThoroughInterval, flush(0) once more on Close. Wake runs it early (RocketMQ wakes it after each put;
// the LeastPages threshold keeps that cheap). Safe for concurrent use.
type IntervalFlusher struct {
	p *periodic
}

// NewIntervalFlusher starts a flusher. name appears in logs ("commitlog", "consumequeue"). flush is the
// store's flush; its returned bytes feed metrics. metrics and logger may be nil.
func NewIntervalFlusher(name string, cfg IntervalConfig, flush WorkFunc, metrics *Metrics,
	logger *slog.Logger) (*IntervalFlusher, error) {
	p, err := newPeriodic(name+" flush", cfg, flush, nil, metrics, logger)
	if err != nil {
		return nil, err
	}
	return &IntervalFlusher{p: p}, nil
}

// Wake asks for a flush now instead of at the next interval. Never blocks; wake-ups coalesce.
func (f *IntervalFlusher) Wake() { f.p.wakeUp() }

// Close stops the flusher and flushes everything (flush(0)) before returning that flush's error, so a clean
// shutdown leaves nothing dirty. A second Close returns ErrClosed.
func (f *IntervalFlusher) Close() error { return f.p.close() }
