// Package hiccup measures the stalls a process suffers from outside its own code: a goroutine that
// does nothing but sleep for a fixed interval records how much later than asked it woke up. Whatever
// delays it — the hypervisor taking the vCPU (steal), the kernel's scheduler, a GC stop-the-world,
// the Go scheduler finding no free P — delays every request being handled at that moment by as much.
// This is jHiccup's idea (Azul), written here in a few lines because the measurement must run inside
// the measured process (the broker, the load generator) and export through its Prometheus registry;
// no Go library does it.
//
// The sleep itself is not exact: Go's timers can wake up to about a millisecond late on an idle process
// (the netpoller waits in whole milliseconds), so recorded stalls just over 1 ms may be that rounding
// (about a tenth of them in the open-loop runs of docs/benchmarks/history.md, "Every target side by side").
//
// Stalls over a threshold are also kept, with their wall-clock start, in a bounded ring, so that a
// load generator's slow requests can be matched against them afterwards (scripts/tail-attribution.py,
// issue 17 item 1): a slow send that overlaps a broker stall is explained by it.
package hiccup

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stall is one wake-up later than asked: it began at Start (when the sleep should have ended) and
// lasted Late.
type Stall struct {
	Start time.Time
	Late  time.Duration
}

// Config sets a Meter up.
type Config struct {
	// Interval is how long each sleep asks for (1 ms: stalls shorter than about that are not seen).
	Interval time.Duration
	// Record: stalls at least this long go into the ring with their start time (1 ms if 0).
	Record time.Duration
	// Ring is how many recorded stalls are kept, the oldest dropped first (65,536 if 0: 1.5 MiB).
	Ring int
	// Sleep and Now replace time.Sleep and time.Now (tests).
	Sleep func(time.Duration)
	Now   func() time.Time
}

// Meter runs one sleeping goroutine from Start until Stop.
type Meter struct {
	cfg  Config
	hist prometheus.Histogram
	quit chan struct{}
	done chan struct{}

	mu      sync.Mutex
	ring    []Stall
	next    int   // where the next stall goes
	dropped int64 // stalls pushed out of the ring
	samples int64
}

// New returns a stopped meter; its errors name the field.
func New(cfg Config) (*Meter, error) {
	if cfg.Interval <= 0 {
		return nil, fmt.Errorf("hiccup: Interval = %v, want > 0", cfg.Interval)
	}
	if cfg.Record < 0 || cfg.Ring < 0 {
		return nil, fmt.Errorf("hiccup: Record = %v, Ring = %d, want >= 0", cfg.Record, cfg.Ring)
	}
	if cfg.Record == 0 {
		cfg.Record = time.Millisecond
	}
	if cfg.Ring == 0 {
		cfg.Ring = 1 << 16
	}
	if cfg.Sleep == nil {
		cfg.Sleep = time.Sleep
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Meter{
		cfg: cfg,
		hist: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ringmq_hiccup_seconds",
			Help: "How much later than asked a goroutine that only sleeps woke up (hiccupMeterInterval): stalls " +
				"every request in the process saw at that moment (vCPU steal, OS scheduling, GC stop-the-world, no free P).",
			// 10 µs .. 1.3 s
			Buckets: prometheus.ExponentialBuckets(10e-6, 2, 18),
		}),
		ring: make([]Stall, 0, min(cfg.Ring, 1024)),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}, nil
}

// Collector is the ringmq_hiccup_seconds histogram.
func (m *Meter) Collector() prometheus.Collector { return m.hist }

// Start runs the sleeper.
func (m *Meter) Start() { go m.run() }

// Stop ends the sleeper and waits for it.
func (m *Meter) Stop() {
	close(m.quit)
	<-m.done
}

func (m *Meter) run() {
	defer close(m.done)
	for {
		select {
		case <-m.quit:
			return
		default:
		}
		m.sample()
	}
}

// sample sleeps once and records how late it woke.
func (m *Meter) sample() {
	asked := m.cfg.Now()
	m.cfg.Sleep(m.cfg.Interval)
	woke := m.cfg.Now()
	late := max(woke.Sub(asked)-m.cfg.Interval, 0)
	m.hist.Observe(late.Seconds())
	m.mu.Lock()
	defer m.mu.Unlock()
	m.samples++
	if late < m.cfg.Record {
		return
	}
	s := Stall{Start: asked.Add(m.cfg.Interval), Late: late}
	if len(m.ring) < m.cfg.Ring {
		m.ring = append(m.ring, s)
		return
	}
	m.ring[m.next] = s
	m.next = (m.next + 1) % m.cfg.Ring
	m.dropped++
}

// Stalls returns the recorded stalls, oldest first, and how many older ones the ring dropped.
func (m *Meter) Stalls() ([]Stall, int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Stall, 0, len(m.ring))
	out = append(out, m.ring[m.next:]...)
	out = append(out, m.ring[:m.next]...)
	return out, m.dropped
}

// WriteStalls writes the recorded stalls as text, one per line, oldest first: the start in Unix
// nanoseconds and the length in nanoseconds. A first comment line gives the interval, the threshold,
// the samples taken and the stalls dropped.
func (m *Meter) WriteStalls(w io.Writer) error {
	stalls, dropped := m.Stalls()
	m.mu.Lock()
	samples := m.samples
	m.mu.Unlock()
	if _, err := fmt.Fprintf(w, "# start_unix_ns late_ns (interval %v, recorded from %v, samples %d, dropped %d)\n",
		m.cfg.Interval, m.cfg.Record, samples, dropped); err != nil {
		return err
	}
	for _, s := range stalls {
		if _, err := fmt.Fprintf(w, "%d %d\n", s.Start.UnixNano(), s.Late.Nanoseconds()); err != nil {
			return err
		}
	}
	return nil
}
