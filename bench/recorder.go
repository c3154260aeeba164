package bench

import (
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: nanoseconds from 1 ns to one hour with 3 significant digits (a
// value is off by at most 0.1 %). A dense histogram of this shape is ~270 KiB.
const (
	histLowestNs  = 1
	histHighestNs = int64(time.Hour)
	histDigits    = 3
)

func newHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowestNs, histHighestNs, histDigits)
}

func newPackedHistogram() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(histLowestNs, histHighestNs, histDigits)
}

// clampNs keeps a value inside the histogram's range: a negative latency (clock skew
// between producer and consumer hosts) records as 0, anything beyond an hour as an hour.
func clampNs(v int64) int64 {
	return min(max(v, 0), histHighestNs)
}

// Interval is what one Recorder saw during one second of the run: the unit a Recorder
// hands to its Series. Hist is nil when the second saw only errors.
type Interval struct {
	Second int // seconds since the measurement began (by completion time)
	Hist   *hdrhistogram.Histogram
	Msgs   int64 // messages acknowledged (producer) or received (consumer)
	Bytes  int64 // their body bytes
	Errors int64 // messages that failed
}

// Counts are a Recorder's totals for the measured part of a run.
type Counts struct {
	Msgs         int64            // messages acknowledged / received
	Bytes        int64            // their body bytes
	Requests     int64            // latency samples (requests for a producer, messages for a consumer)
	Errors       int64            // messages that failed
	ErrorsByCode map[string]int64 // failed messages by response code name or local error name
	WarmupMsgs   int64            // messages started before the measurement began (not counted above)
	LastNs       int64            // run-clock time of the last measured completion
}

func (c *Counts) add(o *Counts) {
	c.Msgs += o.Msgs
	c.Bytes += o.Bytes
	c.Requests += o.Requests
	c.Errors += o.Errors
	c.WarmupMsgs += o.WarmupMsgs
	c.LastNs = max(c.LastNs, o.LastNs)
	for k, v := range o.ErrorsByCode {
		if c.ErrorsByCode == nil {
			c.ErrorsByCode = map[string]int64{}
		}
		c.ErrorsByCode[k] += v
	}
}

// Recorder records the latencies and counts of one goroutine: a whole-run HdrHistogram of
// latency (from the intended start), optionally one of service time (from the actual
// write), and per-second intervals handed to a Series. Work whose start lies before the
// measurement start is warm-up: counted in WarmupMsgs only.
//
// Not safe for concurrent use: each goroutine that completes requests owns one, which is
// why the hot path takes no lock. Merge recorders after their goroutines have finished.
type Recorder struct {
	measureStart int64 // run-clock ns
	series       *Series
	latency      *hdrhistogram.Histogram
	service      *hdrhistogram.Histogram // nil unless keepService
	cur          Interval
	curOpen      bool
	Counts

	slowNs      int64      // > 0: keep sends at least this late (KeepSlow)
	slow        []SlowSend // run-clock ns
	slowDropped int64
}

// SlowSend is one request at least ProducerConfig.SlowThreshold late: when it was due (the intended
// time; the write in a closed loop), when it was written and when its answer was read. A Recorder keeps
// them on the run clock; ProduceResult.Slow has them in wall-clock Unix nanoseconds.
type SlowSend struct {
	IntendedNs, SentNs, DoneNs int64
}

// slowKeep bounds the slow sends one recorder keeps (24 bytes each: 1.5 MiB per connection); later
// ones are counted in SlowDropped only.
const slowKeep = 1 << 16

// KeepSlow makes r keep every measured request at least thresholdNs late (0: none).
func (r *Recorder) KeepSlow(thresholdNs int64) { r.slowNs = thresholdNs }

// NewRecorder returns a recorder for a run whose measurement begins at measureStartNs on
// the run clock. series may be nil (no per-second series); keepService also keeps a
// service-time histogram (open-loop runs).
func NewRecorder(measureStartNs int64, series *Series, keepService bool) *Recorder {
	r := &Recorder{measureStart: measureStartNs, series: series, latency: newHistogram()}
	if keepService {
		r.service = newHistogram()
	}
	return r
}

// Record records one completed request of msgs messages and bytes body bytes, started
// (intended) at startNs and completed at endNs on the run clock. latencyNs is what the
// user waited (from the intended start); serviceNs is from the actual write (equal to
// latencyNs in closed-loop runs).
func (r *Recorder) Record(startNs, endNs, latencyNs, serviceNs int64, msgs, bytes int64) {
	if startNs < r.measureStart {
		r.WarmupMsgs += msgs
		return
	}
	v := clampNs(latencyNs)
	_ = r.latency.RecordValue(v) // cannot fail: clamped into range
	if r.slowNs > 0 && latencyNs >= r.slowNs {
		if len(r.slow) < slowKeep {
			r.slow = append(r.slow, SlowSend{IntendedNs: endNs - latencyNs, SentNs: endNs - serviceNs, DoneNs: endNs})
		} else {
			r.slowDropped++
		}
	}
	if r.service != nil {
		_ = r.service.RecordValue(clampNs(serviceNs))
	}
	r.Msgs += msgs
	r.Bytes += bytes
	r.Requests++
	r.LastNs = max(r.LastNs, endNs)
	iv := r.interval(endNs)
	if iv.Hist == nil {
		iv.Hist = r.series.histogram()
	}
	_ = iv.Hist.RecordValue(v)
	iv.Msgs += msgs
	iv.Bytes += bytes
}

// RecordError records msgs messages that failed with the named error (a response code
// name, ErrorConnectionLost or ErrorTimeout).
func (r *Recorder) RecordError(startNs, endNs int64, name string, msgs int64) {
	if startNs < r.measureStart {
		r.WarmupMsgs += msgs
		return
	}
	r.Errors += msgs
	if r.ErrorsByCode == nil {
		r.ErrorsByCode = map[string]int64{}
	}
	r.ErrorsByCode[name] += msgs
	r.LastNs = max(r.LastNs, endNs)
	r.interval(endNs).Errors += msgs
}

// interval returns the interval for completion time endNs, handing the previous one to
// the series when the second changed. A completion that arrives late for an earlier
// second than the current one (out-of-order clocks cannot happen on one goroutine, but
// stay safe) is folded into the current interval.
func (r *Recorder) interval(endNs int64) *Interval {
	sec := int(max(endNs-r.measureStart, 0) / int64(time.Second))
	if r.curOpen && sec > r.cur.Second {
		r.flushInterval()
	}
	if !r.curOpen {
		r.cur = Interval{Second: sec}
		r.curOpen = true
	}
	return &r.cur
}

func (r *Recorder) flushInterval() {
	if !r.curOpen {
		return
	}
	r.curOpen = false
	if r.series != nil {
		r.series.add(r.cur)
	}
	r.cur = Interval{}
}

// Flush hands the open interval to the series. The owner calls it once its goroutine
// is done recording.
func (r *Recorder) Flush() { r.flushInterval() }

// Latency is the whole-run latency histogram (owned by the recorder).
func (r *Recorder) Latency() *hdrhistogram.Histogram { return r.latency }

// Service is the whole-run service-time histogram, nil unless kept.
func (r *Recorder) Service() *hdrhistogram.Histogram { return r.service }

// mergeRecorders folds recorders into one set of totals and histograms.
func mergeRecorders(rs []*Recorder, keepService bool) (Counts, *hdrhistogram.Histogram, *hdrhistogram.Histogram) {
	var c Counts
	lat := newHistogram()
	var svc *hdrhistogram.Histogram
	if keepService {
		svc = newHistogram()
	}
	for _, r := range rs {
		c.add(&r.Counts)
		lat.Merge(r.latency)
		if svc != nil && r.service != nil {
			svc.Merge(r.service)
		}
	}
	return c, lat, svc
}

// LatencySummary is a histogram's summary in microseconds.
type LatencySummary struct {
	Count   int64   `json:"count"`
	MeanUs  float64 `json:"mean_us"`
	P50Us   float64 `json:"p50_us"`
	P90Us   float64 `json:"p90_us"`
	P99Us   float64 `json:"p99_us"`
	P999Us  float64 `json:"p999_us"`
	P9999Us float64 `json:"p9999_us"`
	MaxUs   float64 `json:"max_us"`
}

// Summarize reads the usual percentiles off h (values in ns) in microseconds.
func Summarize(h *hdrhistogram.Histogram) LatencySummary {
	if h == nil || h.TotalCount() == 0 {
		return LatencySummary{}
	}
	us := func(ns int64) float64 { return float64(ns) / 1e3 }
	return LatencySummary{
		Count:   h.TotalCount(),
		MeanUs:  math.Round(h.Mean()) / 1e3,
		P50Us:   us(h.ValueAtPercentile(50)),
		P90Us:   us(h.ValueAtPercentile(90)),
		P99Us:   us(h.ValueAtPercentile(99)),
		P999Us:  us(h.ValueAtPercentile(99.9)),
		P9999Us: us(h.ValueAtPercentile(99.99)),
		MaxUs:   us(h.Max()),
	}
}

// SeriesRow is one second of a run, merged over all recorders of one role.
type SeriesRow struct {
	Second int
	Msgs   int64
	Bytes  int64
	Errors int64
	P50Us  float64
	P99Us  float64
	P999Us float64
	MaxUs  float64
	Lag    int64 // consumer lag sampled at the end of the second; -1 when not sampled
}

type secondAgg struct {
	hist                *hdrhistogram.PackedHistogram
	msgs, bytes, errors int64
	lag                 int64
	lagSet              bool
}

// Series merges the intervals of many recorders into per-second rows. Recorders hand it
// intervals through a channel (once per second each), so recording never takes its lock;
// the lock only orders the merging goroutine against Row and Rows. Safe for concurrent
// use. Start it with NewSeries and stop it with Close.
type Series struct {
	in   chan Interval
	free chan *hdrhistogram.Histogram // reset dense histograms for the next intervals
	done chan struct{}

	mu struct {
		sync.Mutex
		secs []secondAgg
	}
}

// NewSeries starts the merging goroutine.
func NewSeries() *Series {
	s := &Series{
		in:   make(chan Interval, 256),
		free: make(chan *hdrhistogram.Histogram, 64),
		done: make(chan struct{}),
	}
	go s.run()
	return s
}

// histogram returns an empty dense histogram for a new interval (recycled if one is free).
// A nil Series (no per-second series) still hands out histograms.
func (s *Series) histogram() *hdrhistogram.Histogram {
	if s != nil {
		select {
		case h := <-s.free:
			return h
		default:
		}
	}
	return newHistogram()
}

func (s *Series) add(iv Interval) { s.in <- iv }

func (s *Series) run() {
	defer close(s.done)
	for iv := range s.in {
		s.mu.Lock()
		a := s.second(iv.Second)
		a.msgs += iv.Msgs
		a.bytes += iv.Bytes
		a.errors += iv.Errors
		if iv.Hist != nil {
			if a.hist == nil {
				a.hist = newPackedHistogram()
			}
			a.hist.MergeFrom(iv.Hist)
		}
		s.mu.Unlock()
		if iv.Hist != nil {
			iv.Hist.Reset()
			select {
			case s.free <- iv.Hist:
			default:
			}
		}
	}
}

// second returns the aggregate of second sec, growing the table. Caller holds s.mu.
func (s *Series) second(sec int) *secondAgg {
	for len(s.mu.secs) <= sec {
		s.mu.secs = append(s.mu.secs, secondAgg{})
	}
	return &s.mu.secs[sec]
}

// SetLag records the consumer lag sampled at the end of second sec.
func (s *Series) SetLag(sec int, lag int64) {
	s.mu.Lock()
	a := s.second(sec)
	a.lag, a.lagSet = lag, true
	s.mu.Unlock()
}

// Close waits until every interval handed in so far is merged. Recorders must have
// flushed, and no Recorder may use the series afterwards.
func (s *Series) Close() {
	close(s.in)
	<-s.done
}

// Row returns second sec as merged so far (the progress line reads it while the run goes
// on; intervals arrive shortly after their second ends).
func (s *Series) Row(sec int) SeriesRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec < 0 || sec >= len(s.mu.secs) {
		return SeriesRow{Second: sec, Lag: -1}
	}
	return s.mu.secs[sec].row(sec)
}

// Rows returns every second from 0 to the last one that saw anything.
func (s *Series) Rows() []SeriesRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := make([]SeriesRow, len(s.mu.secs))
	for i := range s.mu.secs {
		rows[i] = s.mu.secs[i].row(i)
	}
	return rows
}

func (a *secondAgg) row(sec int) SeriesRow {
	r := SeriesRow{Second: sec, Msgs: a.msgs, Bytes: a.bytes, Errors: a.errors, Lag: -1}
	if a.lagSet {
		r.Lag = a.lag
	}
	if a.hist != nil && a.hist.TotalCount() > 0 {
		us := func(ns int64) float64 { return float64(ns) / 1e3 }
		r.P50Us = us(a.hist.ValueAtPercentile(50))
		r.P99Us = us(a.hist.ValueAtPercentile(99))
		r.P999Us = us(a.hist.ValueAtPercentile(99.9))
		r.MaxUs = us(a.hist.Max())
	}
	return r
}
