package store

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
)

// Put lock time is recorded for every put, in nanoseconds, from 1 ns to 100 s with 3 significant digits.
const (
	lockHistLowest  = 1
	lockHistHighest = int64(100 * time.Second)
	lockHistDigits  = 3
)

// lockStats measures time spent in the put lock: RocketMQ's beginTimeInLock and the [NOTIFYME] warning,
// plus an HdrHistogram of every put.
//
// Recording happens inside the put lock, so the active histogram needs no lock of its own. A snapshot
// swaps the active histogram with a spare under the put lock (a pointer swap), then merges the swapped-out
// one into the cumulative histogram outside it: readers never make a put wait for more than the swap.
type lockStats struct {
	base  time.Time    // monotonic origin of begin
	begin atomic.Int64 // ns since base at which the current holder took the lock; 0 = nobody inside

	active *hdrhistogram.Histogram // guarded by the put lock
	spare  *hdrhistogram.Histogram // guarded by snapMu

	snapMu     sync.Mutex
	cumulative *hdrhistogram.Histogram // guarded by snapMu
	maxNanos   atomic.Int64
}

func newLockStats() *lockStats {
	return &lockStats{
		base:       time.Now(),
		active:     hdrhistogram.New(lockHistLowest, lockHistHighest, lockHistDigits),
		spare:      hdrhistogram.New(lockHistLowest, lockHistHighest, lockHistDigits),
		cumulative: hdrhistogram.New(lockHistLowest, lockHistHighest, lockHistDigits),
	}
}

// enter marks the lock taken at start. Caller holds the put lock.
func (ls *lockStats) enter(start time.Time) {
	ls.begin.Store(int64(start.Sub(ls.base)) | 1) // never 0, which means "not in lock"
}

// exit records the time since start. Caller holds the put lock.
func (ls *lockStats) exit(start time.Time) time.Duration {
	d := time.Since(start)
	ls.begin.Store(0)
	v := max(int64(d), lockHistLowest)
	_ = ls.active.RecordValue(min(v, lockHistHighest))
	if v > ls.maxNanos.Load() {
		ls.maxNanos.Store(v)
	}
	return d
}

// inLock is how long the current holder has held the lock, 0 when free (RocketMQ's
// now - beginTimeInLock).
func (ls *lockStats) inLock() time.Duration {
	b := ls.begin.Load()
	if b == 0 {
		return 0
	}
	return time.Since(ls.base) - time.Duration(b)
}

// withCumulative runs f on every put's lock time since start (f must not keep the histogram). lock is
// the put lock.
func (ls *lockStats) withCumulative(lock sync.Locker, f func(*hdrhistogram.Histogram)) {
	ls.snapMu.Lock()
	defer ls.snapMu.Unlock()
	lock.Lock()
	ls.active, ls.spare = ls.spare, ls.active
	lock.Unlock()
	ls.cumulative.Merge(ls.spare)
	ls.spare.Reset()
	f(ls.cumulative)
}

// snapshot returns a copy of every put's lock time since start. lock is the put lock.
func (ls *lockStats) snapshot(lock sync.Locker) (h *hdrhistogram.Histogram) {
	ls.withCumulative(lock, func(c *hdrhistogram.Histogram) { h = c.Clone() })
	return h
}

// lockTimeCollector is ringmq_store_put_lock_seconds: a Prometheus histogram computed at scrape time from
// the HdrHistogram every put already records, so a put records its lock time once. Bucket counts are
// exact to the HdrHistogram's 3 significant digits; the sum is its mean × count. Reset with it
// (ResetLockTime: benchmark phases only).
type lockTimeCollector struct {
	desc  *prometheus.Desc
	stats *lockStats
	lock  sync.Locker
}

func newLockTimeCollector(stats *lockStats, lock sync.Locker) *lockTimeCollector {
	return &lockTimeCollector{
		desc: prometheus.NewDesc("ringmq_store_put_lock_seconds",
			"Time each put held the CommitLog put lock (RocketMQ warns above 0.5 s).", nil, nil),
		stats: stats, lock: lock,
	}
}

func (c *lockTimeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *lockTimeCollector) Collect(ch chan<- prometheus.Metric) {
	var count uint64
	var sum float64
	buckets := make(map[float64]uint64, len(putLatencyBuckets))
	c.stats.withCumulative(c.lock, func(h *hdrhistogram.Histogram) {
		count = uint64(h.TotalCount())
		sum = h.Mean() * float64(count) / 1e9
		bars := h.Distribution()
		var cum uint64
		i := 0
		for _, upper := range putLatencyBuckets {
			for ; i < len(bars) && float64(bars[i].To) <= upper*1e9; i++ {
				cum += uint64(bars[i].Count)
			}
			buckets[upper] = cum
		}
	})
	ch <- prometheus.MustNewConstHistogram(c.desc, count, sum, buckets)
}

// reset clears the histograms (benchmarks, between phases).
func (ls *lockStats) reset(lock sync.Locker) {
	ls.snapMu.Lock()
	defer ls.snapMu.Unlock()
	lock.Lock()
	ls.active.Reset()
	lock.Unlock()
	ls.spare.Reset()
	ls.cumulative.Reset()
	ls.maxNanos.Store(0)
}

// spinLock is RocketMQ's PutMessageSpinLock (useReentrantLockWhenPutMessage=false): a CAS loop that
// yields the processor between attempts. Good when the lock is held for tens of nanoseconds and writers
// are fewer than cores; a mutex is the default because goroutines outnumber cores.
type spinLock struct{ state atomic.Int32 }

func (l *spinLock) Lock() {
	for !l.state.CompareAndSwap(0, 1) {
		runtime.Gosched()
	}
}

func (l *spinLock) Unlock() { l.state.Store(0) }
