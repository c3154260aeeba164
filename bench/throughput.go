package bench

import (
	"encoding/csv"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ThroughputInterval is the resolution of the throughput-over-time file: fine enough to
// show a stall of a fraction of a second (a flush, a GC pause, a file roll) that a
// per-second series averages away.
const ThroughputInterval = 250 * time.Millisecond

// ThroughputFile is the run directory's throughput-over-time file:
//
//	t_ms,interval_ms,msgs
//
// one row per interval: its end in milliseconds since the measurement began, its length,
// and the messages completed in it.
const ThroughputFile = "throughput.csv"

// ThroughputPoint is one interval of the throughput file.
type ThroughputPoint struct {
	EndMs      int64
	IntervalMs int64
	Msgs       int64
}

// sampleThroughput reads a running total every interval from start until stop closes
// (and once more then, for the last partial interval), and returns the increments. read must be safe to call from another goroutine (atomic
// counters, an HTTP poll); a read that fails (ok false) leaves its interval out and the
// next one spans both.
func sampleThroughput(stop <-chan struct{}, start time.Time, interval time.Duration, read func() (int64, bool)) []ThroughputPoint {
	first, ok := read()
	for !ok {
		select {
		case <-stop:
			return nil
		case <-time.After(interval / 10):
		}
		first, ok = read()
	}
	return sampleThroughputFrom(stop, start, interval, first, read)
}

// sampleThroughputFrom is sampleThroughput with the total at start already read (first): a
// caller whose counters move as soon as it returns reads them before it starts the sampler's
// goroutine, so that nothing completed before that goroutine runs is left out.
func sampleThroughputFrom(stop <-chan struct{}, start time.Time, interval time.Duration, first int64, read func() (int64, bool)) []ThroughputPoint {
	var out []ThroughputPoint
	last := first
	lastAt := time.Duration(0)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	sample := func(now time.Time) {
		v, ok := read()
		if !ok {
			return
		}
		at := now.Sub(start)
		endMs := at.Milliseconds()
		out = append(out, ThroughputPoint{EndMs: endMs, IntervalMs: endMs - lastAt.Milliseconds(), Msgs: v - last})
		last, lastAt = v, at
	}
	for {
		select {
		case <-stop:
			// The last, partial interval: up to the end of the run.
			if now := time.Now(); now.Sub(start) > lastAt {
				sample(now)
			}
			return out
		case now := <-tick.C:
			sample(now)
		}
	}
}

// WriteThroughputCSV writes the throughput file.
func WriteThroughputCSV(path string, pts []ThroughputPoint) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"t_ms", "interval_ms", "msgs"})
	for _, p := range pts {
		_ = w.Write([]string{strconv.FormatInt(p.EndMs, 10), strconv.FormatInt(p.IntervalMs, 10), strconv.FormatInt(p.Msgs, 10)})
	}
	w.Flush()
	err = w.Error()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}
