package flush

import "log/slog"

// CommitService moves appended bytes from the transient-pool buffer into the CommitLog file (RocketMQ
// CommitRealTimeService): commit(LeastPages) every Interval (200 ms), commit(0) every ThoroughInterval
// (200 ms), commit(0) once more on Close. The store's commit func typically calls Backend.WriteSync with
// sync=false for the dirty range (readers read what is not committed yet from the buffer). committed, when
// not nil, runs after every commit that moved bytes (wake the ASYNC_FLUSH flusher there, as RocketMQ
// does). Safe for concurrent use.
type CommitService struct {
	p *periodic
}

// NewCommitService starts a commit service. metrics, committed and logger may be nil.
func NewCommitService(name string, cfg IntervalConfig, commit WorkFunc, committed func(bytes int64),
	metrics *Metrics, logger *slog.Logger) (*CommitService, error) {
	p, err := newPeriodic(name+" commit", cfg, commit, committed, metrics, logger)
	if err != nil {
		return nil, err
	}
	return &CommitService{p: p}, nil
}

// Wake asks for a commit now (for example when a buffer is about to be full). Never blocks.
func (c *CommitService) Wake() { c.p.wakeUp() }

// Close stops the service and commits everything before returning that commit's error. A second Close
// returns ErrClosed.
func (c *CommitService) Close() error { return c.p.close() }
