package flush

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
)

// Metrics counts one flush service's work: durable operations, their latency, the waiters (acks) each
// one completed, bytes, the waiter queue, timeouts and errors. One Metrics per service; services tell
// theirs apart with the "service" label (for example "commitlog_sync", "commitlog_async",
// "consumequeue", "commitlog_commit").
//
// Exposed collectors (all with the const label service):
//
//	ringmq_flush_latency_seconds          histogram  time of one durable operation
//	ringmq_flush_batch_waiters            histogram  waiters completed by one durable operation
//	ringmq_flush_acks_total               counter    waiters completed durable
//	ringmq_flush_durable_writes_total     counter    durable operations that succeeded
//	ringmq_flush_acks_per_durable_write   gauge      acks_total / durable_writes_total since start
//	ringmq_flush_bytes_total              counter    bytes made durable (or committed, for the commit service)
//	ringmq_flush_waiter_queue_depth       gauge      waiters queued or in flight
//	ringmq_flush_timeouts_total           counter    waiters completed with ErrFlushTimeout
//	ringmq_flush_rejected_total           counter    Submit calls refused with ErrQueueFull
//	ringmq_flush_errors_total             counter    durable operations that failed
//
// Gauges read atomics: a scrape never takes a lock of the data path (STYLE.md §4). Recording methods are
// safe for concurrent use; each is a handful of atomic adds, once per durable operation, not per message.
type Metrics struct {
	latency  prometheus.Histogram
	batch    prometheus.Histogram
	acks     prometheus.Counter
	writes   prometheus.Counter
	bytes    prometheus.Counter
	timeouts prometheus.Counter
	rejected prometheus.Counter
	errors   prometheus.Counter

	depth      atomic.Int64
	nAcks      atomic.Uint64
	nWrites    atomic.Uint64
	nBytes     atomic.Uint64
	nTimeouts  atomic.Uint64
	nRejected  atomic.Uint64
	nErrors    atomic.Uint64
	maxBatched atomic.Int64

	hdrMu sync.Mutex
	hdr   *hdrhistogram.Histogram // durable-operation latency in µs, for benchmark reports
}

// latencyMaxMicros bounds the HdrHistogram: anything slower than a minute is recorded as a minute.
const latencyMaxMicros = 60_000_000

// NewMetrics creates a service's collectors and registers them on reg (never the global registry). reg
// may be nil: the collectors then only feed Snapshot and LatencyHistogram (tests, benchmarks).
func NewMetrics(reg prometheus.Registerer, service string) (*Metrics, error) {
	return newMetrics(reg, service, true)
}

// NewIntervalMetrics is NewMetrics for a service without waiters (an IntervalFlusher or a
// CommitService): it registers the durable operations' series (latency, writes, bytes, errors) but
// not the waiter series (batch_waiters, acks, timeouts, rejected, queue depth, acks per write),
// which such a service never moves.
func NewIntervalMetrics(reg prometheus.Registerer, service string) (*Metrics, error) {
	return newMetrics(reg, service, false)
}

func newMetrics(reg prometheus.Registerer, service string, waiters bool) (*Metrics, error) {
	m := &Metrics{
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringmq_flush_latency_seconds",
			Help:    "Time of one durable operation (write and/or fdatasync, msync, io_uring submission).",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16), // 25 µs .. 0.8 s
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringmq_flush_batch_waiters",
			Help:    "SYNC_FLUSH waiters completed by one durable operation (group commit batch size).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 14), // 1 .. 8192
		}),
		acks: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_flush_acks_total", Help: "SYNC_FLUSH waiters completed as durable.",
		}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_flush_durable_writes_total", Help: "Durable operations that succeeded.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_flush_bytes_total", Help: "Bytes made durable (committed, for the commit service).",
		}),
		timeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_flush_timeouts_total", Help: "Waiters completed with FLUSH_DISK_TIMEOUT (syncFlushTimeout passed).",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_flush_rejected_total", Help: "Submissions refused because the waiter queue was full.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_flush_errors_total", Help: "Durable operations that failed.",
		}),
	}
	hdr := hdrhistogram.New(1, latencyMaxMicros, 3)
	m.hdr = hdr
	if reg == nil {
		return m, nil
	}
	wrapped := prometheus.WrapRegistererWith(prometheus.Labels{"service": service}, reg)
	collectors := []prometheus.Collector{m.latency, m.writes, m.bytes, m.errors}
	if waiters {
		collectors = append(collectors, m.batch, m.acks, m.timeouts, m.rejected,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "ringmq_flush_waiter_queue_depth", Help: "SYNC_FLUSH waiters queued or in flight.",
			}, func() float64 { return float64(m.depth.Load()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name: "ringmq_flush_acks_per_durable_write", Help: "Acknowledged waiters per successful durable operation since start.",
			}, func() float64 { return m.Snapshot().AcksPerDurableWrite() }))
	}
	for _, c := range collectors {
		if err := wrapped.Register(c); err != nil {
			return nil, fmt.Errorf("flush: register metrics for service %q: %w", service, err)
		}
	}
	return m, nil
}

// durableWrite records one successful durable operation that completed acks waiters and covered bytes.
func (m *Metrics) durableWrite(elapsed time.Duration, bytes int64, acks int) {
	m.latency.Observe(elapsed.Seconds())
	m.writes.Inc()
	m.nWrites.Add(1)
	if bytes > 0 {
		m.bytes.Add(float64(bytes))
		m.nBytes.Add(uint64(bytes))
	}
	if acks > 0 {
		m.batch.Observe(float64(acks))
		m.acks.Add(float64(acks))
		m.nAcks.Add(uint64(acks))
		for seen := m.maxBatched.Load(); int64(acks) > seen; seen = m.maxBatched.Load() {
			if m.maxBatched.CompareAndSwap(seen, int64(acks)) {
				break
			}
		}
	}
	micros := elapsed.Microseconds()
	if micros < 1 {
		micros = 1
	}
	m.hdrMu.Lock()
	_ = m.hdr.RecordValue(min(micros, latencyMaxMicros)) // clamped, so the error cannot happen
	m.hdrMu.Unlock()
}

// lateAcks records waiters completed durable without a new durable operation (their offset was already
// covered by an earlier one when they arrived).
func (m *Metrics) lateAcks(acks int) {
	m.acks.Add(float64(acks))
	m.nAcks.Add(uint64(acks))
}

func (m *Metrics) failedWrite(elapsed time.Duration) {
	m.latency.Observe(elapsed.Seconds())
	m.errors.Inc()
	m.nErrors.Add(1)
}

func (m *Metrics) timedOut(n int) {
	m.timeouts.Add(float64(n))
	m.nTimeouts.Add(uint64(n))
}

func (m *Metrics) rejectedOne() {
	m.rejected.Inc()
	m.nRejected.Add(1)
}

func (m *Metrics) setDepth(n int) { m.depth.Store(int64(n)) }

// MetricsSnapshot is a point-in-time copy of a service's counters.
type MetricsSnapshot struct {
	DurableWrites uint64 // successful durable operations
	Acks          uint64 // waiters completed durable
	Bytes         uint64
	Timeouts      uint64
	Rejected      uint64
	Errors        uint64
	QueueDepth    int64
	MaxBatch      int64 // most waiters one durable operation completed
}

// AcksPerDurableWrite is Acks / DurableWrites (0 before the first write).
func (s MetricsSnapshot) AcksPerDurableWrite() float64 {
	if s.DurableWrites == 0 {
		return 0
	}
	return float64(s.Acks) / float64(s.DurableWrites)
}

// Snapshot copies the counters. Safe for concurrent use; takes no lock.
func (m *Metrics) Snapshot() MetricsSnapshot {
	return MetricsSnapshot{
		DurableWrites: m.nWrites.Load(),
		Acks:          m.nAcks.Load(),
		Bytes:         m.nBytes.Load(),
		Timeouts:      m.nTimeouts.Load(),
		Rejected:      m.nRejected.Load(),
		Errors:        m.nErrors.Load(),
		QueueDepth:    m.depth.Load(),
		MaxBatch:      m.maxBatched.Load(),
	}
}

// LatencyHistogram returns a copy of the durable-operation latency histogram, in microseconds.
// Safe for concurrent use.
func (m *Metrics) LatencyHistogram() *hdrhistogram.Histogram {
	m.hdrMu.Lock()
	defer m.hdrMu.Unlock()
	return hdrhistogram.Import(m.hdr.Export())
}
