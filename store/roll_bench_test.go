package store

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/testutil"
)

// Benchmarks for issue 4: put latency across CommitLog file rolls, with the transient pool on and off and
// file warming on and off; and SYNC_FLUSH with 64 writers waiting for durability. Target: the put
// latency around rolls no worse than in steady state at p99.9. Run (a directory under /work: the runs
// write a few GB):
//
//	TMPDIR=/work/storebench/tmp GOFLAGS=-ldflags=-checklinkname=0 go test -run '^$' \
//	    -bench 'BenchmarkPutRoll' -benchtime 2000000x -benchmem ./store/
//	TMPDIR=/work/storebench/tmp GOFLAGS=-ldflags=-checklinkname=0 go test -run '^$' \
//	    -bench 'BenchmarkPutSyncFlush' -benchtime 300000x -benchmem ./store/
//
// Run the variants interleaved, several passes, and compare medians: the machine is shared and noisy.
// Latency is taken around each PutMessage call (two clock reads, ~50 ns, included).

// rollBenchFileSize: 64 MiB CommitLog files, so a run of 2M 1 KiB messages rolls ~36 times.
const rollBenchFileSize = 64 << 20

// rollWindowPuts: a put counts as "around a roll" when it lies within this many puts of one, either
// side. 1,024 puts is ~1 ms here: the roll itself, the first appends into the new file, and the
// allocator preparing the next file on the other CPU.
const rollWindowPuts = 1024

func newLatencyHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(1, int64(10*time.Second), 3)
}

// rollClassifier sorts put latencies into "around a roll" (within rollWindowPuts of a put that landed in
// a new file) and "steady". It keeps the last rollWindowPuts latencies pending, since a roll also claims
// the puts before it. Recording allocates nothing.
type rollClassifier struct {
	roll, steady *hdrhistogram.Histogram
	rollPut      *hdrhistogram.Histogram // the puts that switched files, alone
	pending      []int64                 // ring of not yet classified latencies
	head, n      int
	claimLeft    int // puts after a roll still to count as around it
	rolls        int
}

func newRollClassifier() *rollClassifier {
	return &rollClassifier{roll: newLatencyHistogram(), steady: newLatencyHistogram(),
		rollPut: newLatencyHistogram(), pending: make([]int64, rollWindowPuts)}
}

func (c *rollClassifier) add(latency int64, rolled bool) {
	if rolled {
		c.rolls++
		_ = c.rollPut.RecordValue(latency)
		for ; c.n > 0; c.n-- { // the puts just before the roll
			_ = c.roll.RecordValue(c.pending[(c.head+len(c.pending)-c.n)%len(c.pending)])
		}
		_ = c.roll.RecordValue(latency)
		c.claimLeft = rollWindowPuts
		return
	}
	if c.claimLeft > 0 {
		c.claimLeft--
		_ = c.roll.RecordValue(latency)
		return
	}
	if c.n == len(c.pending) { // the oldest pending put is too far from any roll
		_ = c.steady.RecordValue(c.pending[(c.head+len(c.pending)-c.n)%len(c.pending)])
		c.n--
	}
	c.pending[c.head] = latency
	c.head = (c.head + 1) % len(c.pending)
	c.n++
}

func (c *rollClassifier) finish() {
	for ; c.n > 0; c.n-- {
		_ = c.steady.RecordValue(c.pending[(c.head+len(c.pending)-c.n)%len(c.pending)])
	}
}

// slowPutNanos is where slowPPM counts a put as slow: a scheduling quantum stolen, a fault on a fresh folio.
const slowPutNanos = 50_000

// slowPPM is the share of latencies in h above slowPutNanos, in parts per million.
func slowPPM(h *hdrhistogram.Histogram) float64 {
	if h.TotalCount() == 0 {
		return 0
	}
	var slow int64
	for _, bar := range h.Distribution() {
		if bar.From > slowPutNanos {
			slow += bar.Count
		}
	}
	return float64(slow) * 1e6 / float64(h.TotalCount())
}

func reportQuantiles(b *testing.B, prefix string, h *hdrhistogram.Histogram) {
	b.ReportMetric(float64(h.ValueAtQuantile(50)), prefix+"p50-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99)), prefix+"p99-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99.9)), prefix+"p99.9-ns")
	b.ReportMetric(float64(h.Max()), prefix+"max-ns")
}

// BenchmarkPutRoll: one writer, 1 KiB messages, ASYNC_FLUSH, 64 MiB files; per-put latency around rolls
// ("roll-") and away from them ("steady-"), and the puts that switched files ("rollput-max-ns"). Under
// ASYNC_FLUSH warmMapedFileEnable leaves the populating to the prefault window (16 MiB ahead of the
// writer), so warm=true runs the same code as warm=false: the pairs are a noise gauge (before ed5bb5f
// warm=true populated each whole new file after the roll). The transient pool (5 buffers, the default;
// unpinned here: RLIMIT_MEMLOCK) appends into pool buffers, and the prefaulter populates only the files
// that fall back to the mapping when the committer is behind and the pool runs out ("pool-fallbacks", a
// quarter to a half of the files at this rate on two cores).
func BenchmarkPutRoll(b *testing.B) {
	for _, transient := range []bool{false, true} {
		for _, warm := range []bool{false, true} {
			mode := "mmap"
			if transient {
				mode = "transientpool"
			}
			b.Run(fmt.Sprintf("%s/warm=%t", mode, warm), func(b *testing.B) {
				cfg := DefaultConfig(b.TempDir())
				cfg.MappedFileSizeCommitLog = rollBenchFileSize
				cfg.WarmMappedFileEnable = warm
				if transient {
					cfg.TransientStorePoolEnable, cfg.TransientStorePoolPinned, cfg.TransientStorePoolSize = true, false, 5
					cfg.CommitCommitLogLeastPages = 4
				}
				benchPutRoll(b, cfg)
			})
		}
	}
}

func benchPutRoll(b *testing.B, cfg Config) {
	s := openStarted(b, cfg, Deps{})
	m := benchMessage()
	if _, err := s.PutMessage(m); err != nil { // the first IndexFile and ConsumeQueue files, outside the timing
		b.Fatal(err)
	}
	waitDispatched(b, s)
	c := newRollClassifier()
	file := s.MaxPhyOffset() / rollBenchFileSize
	b.SetBytes(int64(m.EncodedSize()))
	b.ReportAllocs()
	s.ResetLockTime()
	rollsBefore := s.SyncRolls()
	start := time.Now()
	for b.Loop() {
		t0 := time.Now()
		res, err := s.PutMessage(m)
		lat := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		f := res.WroteOffset / rollBenchFileSize
		c.add(int64(lat), f != file)
		file = f
	}
	elapsed := time.Since(start)
	c.finish()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	reportQuantiles(b, "steady-", c.steady)
	reportQuantiles(b, "roll-", c.roll)
	// Puts over 50 µs per million, around rolls and away from them: a count, steadier than one quantile
	// of the ~2,000 puts around each of a few dozen rolls.
	b.ReportMetric(slowPPM(c.roll), "roll-slow-ppm")
	b.ReportMetric(slowPPM(c.steady), "steady-slow-ppm")
	b.ReportMetric(float64(c.rollPut.Max()), "rollput-max-ns")
	b.ReportMetric(float64(c.rolls), "rolls")
	b.ReportMetric(float64(s.LockTimeHistogram().Max()), "lock-max-ns")
	b.ReportMetric(float64(s.SyncRolls()-rollsBefore), "sync-rolls")
	b.ReportMetric(float64(s.commitLog.poolFallbacks.Load()), "pool-fallbacks")
	b.StopTimer()
	waitDispatched(b, s)
}

// BenchmarkPutSyncFlush: SYNC_FLUSH, 1 or 64 writers each with one message waiting for durability (put,
// then WaitDurable), 1 KiB messages, 64 MiB files, file warming (warmMapedFileEnable) off, and on with a
// sync every 4,096 pages (RocketMQ's default flushLeastPagesWhenWarmMapedFile) or every 256. Latency
// is put start to acknowledgement; acks-per-write is the group commit's batch: acknowledged messages per
// durable operation (the flush metrics). Warming writes each file's zeros to the disk before the writer
// gets there, so the durable writes into it convert no unwritten extents. warm=prewrite is not warmed but
// pre-written (prewriteMappedFileEnable, at 100 % duty: the first file is done before the first put);
// the other variants run with pre-writing off.
func BenchmarkPutSyncFlush(b *testing.B) {
	for _, transient := range []bool{false, true} {
		mode := "mmap"
		if transient {
			mode = "transientpool"
		}
		for _, writers := range []int{1, 64} {
			for _, warmPages := range []int{0, 4096, 256, -1} { // 0: off; -1: pre-written; else flushLeastPagesWhenWarmMapedFile
				warm := "off"
				switch {
				case warmPages > 0:
					warm = fmt.Sprintf("%dpages", warmPages)
				case warmPages < 0:
					warm = "prewrite"
				}
				b.Run(fmt.Sprintf("%s/writers=%d/warm=%s", mode, writers, warm), func(b *testing.B) {
					cfg := DefaultConfig(b.TempDir())
					cfg.MappedFileSizeCommitLog = rollBenchFileSize
					cfg.FlushDiskType = SyncFlush
					cfg.WarmMappedFileEnable = warmPages > 0
					cfg.FlushLeastPagesWhenWarmMappedFile = max(warmPages, 1)
					cfg.PrewriteMappedFileEnable, cfg.PrewriteMappedFileDutyPercent = warmPages < 0, 100
					if transient {
						cfg.TransientStorePoolEnable, cfg.TransientStorePoolPinned, cfg.TransientStorePoolSize = true, false, 5
					}
					benchPutSyncFlush(b, cfg, writers)
				})
			}
		}
	}
}

// syncWaiter is one writer's reusable durability callback: no allocation per put.
type syncWaiter struct{ done chan error }

func (w *syncWaiter) flushDone(err error) { w.done <- err }

func benchPutSyncFlush(b *testing.B, cfg Config, writers int) {
	reg := prometheus.NewRegistry()
	s := openStarted(b, cfg, Deps{Registerer: reg})
	if cfg.PrewriteMappedFileEnable {
		testutil.Eventually(b, "the first file pre-written", func() bool {
			sb := standbysAt(s.commitLog)
			return len(sb) > 0 && sb[0].prewritten.Load() == sb[0].size
		})
	}
	if _, err := s.PutMessage(benchMessage()); err != nil {
		b.Fatal(err)
	}
	waitDispatched(b, s)
	acks0, writes0 := syncFlushCounters(b, reg)
	var (
		mu  sync.Mutex
		all = newLatencyHistogram()
	)
	b.SetBytes(int64(benchMessage().EncodedSize()))
	b.ReportAllocs()
	// One writer: put, wait, record, until next says stop.
	writer := func(next func() bool) {
		m := benchMessage()
		h := newLatencyHistogram()
		w := &syncWaiter{done: make(chan error, 1)}
		done := w.flushDone
		for next() {
			t0 := time.Now()
			res, err := s.PutMessage(m)
			if err != nil {
				b.Error(err)
				return
			}
			s.WaitDurable(res.EndOffset(), done)
			if err := <-w.done; err != nil {
				b.Error(err)
				return
			}
			_ = h.RecordValue(int64(time.Since(t0)))
		}
		mu.Lock()
		all.Merge(h)
		mu.Unlock()
	}
	start := time.Now()
	if writers == 1 {
		i := 0
		writer(func() bool { i++; return i <= b.N })
	} else {
		b.SetParallelism((writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		b.RunParallel(func(pb *testing.PB) { writer(pb.Next) })
	}
	elapsed := time.Since(start)
	acks1, writes1 := syncFlushCounters(b, reg)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	reportQuantiles(b, "", all)
	if writes1 > writes0 {
		b.ReportMetric((acks1-acks0)/(writes1-writes0), "acks/durable-write")
		b.ReportMetric((writes1-writes0)/elapsed.Seconds(), "durable-writes/s")
	}
	b.StopTimer()
	waitDispatched(b, s)
}

// syncFlushCounters reads the group commit's acks and durable writes from the store's registry.
func syncFlushCounters(b *testing.B, reg *prometheus.Registry) (acks, writes float64) {
	return gathered(b, reg, "ringmq_flush_acks_total", "commitlog_sync"),
		gathered(b, reg, "ringmq_flush_durable_writes_total", "commitlog_sync")
}

func TestRollClassifier(t *testing.T) {
	c := newRollClassifier()
	for i := 0; i < 5000; i++ {
		lat := int64(100)
		if i >= 976 && i <= 3124 {
			lat = 7000 // the puts within rollWindowPuts of the rolls at 2000 and 2100
		}
		c.add(lat, i == 2000 || i == 2100)
	}
	c.finish()
	require.Equal(t, 2, c.rolls)
	require.Equal(t, int64(2), c.rollPut.TotalCount())
	require.Equal(t, int64(3124-976+1), c.roll.TotalCount())
	require.Equal(t, int64(5000-(3124-976+1)), c.steady.TotalCount())
	require.Equal(t, int64(100), c.steady.Max(), "no put near a roll counted as steady")
	require.Equal(t, int64(7000), c.roll.ValueAtQuantile(0), "no steady put counted near a roll")
}
