package bench

import (
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/require"
)

// requireNear checks v against want (µs) within hdrhistogram's 3-digit precision.
func requireNear(t *testing.T, want, got float64, what string) {
	t.Helper()
	require.InDelta(t, want, got, want*0.002+0.001, what)
}

// TestCoordinatedOmissionKnownAnswers drives the recorder with a synthetic open-loop run
// whose answers are worked out by hand: 10,000 requests intended 1 ms apart (1,000/s),
// one in flight, each served in 100 µs except request 5,000 which stalls for 1 s.
//
// Service time (what a naive closed-loop tester records) sees one slow request:
// p50 = p99 = p99.9 = 100 µs, max 1 s.
//
// From the intended time, request 5000+k (k = 1..1110) is sent back to back after the
// stall, at 6,000 ms + (k-1)×0.1 ms, completes 0.1 ms later, and was intended at
// 5,000 ms + k ms: it waited 1,000 ms − 0.9k ms. From k = 1111 the sender has caught up
// (sent exactly when intended). So 8,889 samples of 100 µs and 1,111 large ones; the m-th
// smallest large one is 100 µs + 900 µs×m. Hence p90 (rank 9,000 → m = 111) = 100 ms,
// p99 (rank 9,900 → m = 1,011) = 910 ms, p99.9 (rank 9,990 → m = 1,101) = 991 ms,
// max = 1,000 ms.
//
// HdrHistogram's RecordCorrectedValue(1 s, 1 ms) instead back-fills 999, 998, ... 1 ms
// (10,999 samples): p99 (rank 10,889 → the 890th smallest of 1..1000 ms) = 890 ms,
// p99.9 (rank 10,988) = 989 ms. It approximates the same picture.
func TestCoordinatedOmissionKnownAnswers(t *testing.T) {
	const (
		n        = 10_000
		interval = int64(time.Millisecond)
		service  = int64(100 * time.Microsecond)
		stallAt  = 5_000
		stall    = int64(time.Second)
	)
	rec := NewRecorder(0, nil, true)
	corrected := hdrhistogram.New(histLowestNs, histHighestNs, histDigits)
	free := int64(0) // when the single slot is free again
	for i := range int64(n) {
		intended := i * interval
		sent := max(intended, free)
		svc := service
		if i == stallAt {
			svc = stall
		}
		done := sent + svc
		free = done
		rec.Record(min(intended, sent), done, done-intended, done-sent, 1, 0)
		require.NoError(t, corrected.RecordCorrectedValue(svc, interval))
	}
	rec.Flush()

	svc := Summarize(rec.Service())
	require.EqualValues(t, n, svc.Count)
	requireNear(t, 100, svc.P50Us, "service p50")
	requireNear(t, 100, svc.P99Us, "service p99")
	requireNear(t, 100, svc.P999Us, "service p99.9")
	requireNear(t, 1_000_000, svc.MaxUs, "service max")

	lat := Summarize(rec.Latency())
	require.EqualValues(t, n, lat.Count)
	requireNear(t, 100, lat.P50Us, "latency p50")
	requireNear(t, 100_000, lat.P90Us, "latency p90")
	requireNear(t, 910_000, lat.P99Us, "latency p99")
	requireNear(t, 991_000, lat.P999Us, "latency p99.9")
	requireNear(t, 1_000_000, lat.MaxUs, "latency max")

	cor := Summarize(corrected)
	require.EqualValues(t, n+999, cor.Count)
	requireNear(t, 100, cor.P90Us, "corrected p90")
	requireNear(t, 890_000, cor.P99Us, "corrected p99")
	requireNear(t, 989_000, cor.P999Us, "corrected p99.9")
	requireNear(t, 1_000_000, cor.MaxUs, "corrected max")
}

// The schedule spreads connections over the interval and never drifts: message i of
// connection c is message k = 4i + c of the run, due at start + k/rate exactly.
func TestScheduleIsFixed(t *testing.T) {
	s := newSchedule(4000, 1, 4, int64(time.Second)) // 4,000/s in all, 1,000/s per conn, conn 1 of 4
	require.EqualValues(t, int64(time.Second)+250*int64(time.Microsecond), s.due())
	for range 999_999 {
		s.advance()
	}
	require.EqualValues(t, int64(time.Second)+250*int64(time.Microsecond)+999_999*int64(time.Millisecond), s.due())
}

func TestRecorderWarmupAndSeries(t *testing.T) {
	series := NewSeries()
	measureStart := int64(time.Second)
	a := NewRecorder(measureStart, series, false)
	b := NewRecorder(measureStart, series, false)
	ms := int64(time.Millisecond)
	sec := int64(time.Second)
	// Warm-up: started before the measurement, even if completed after it.
	a.Record(measureStart-ms, measureStart+ms, 2*ms, 2*ms, 3, 300)
	a.RecordError(measureStart-ms, measureStart+ms, "SYSTEM_BUSY(2)", 1)
	// Second 0: a has 10 ms and 20 ms samples of 1 msg; b has 30 ms and an error.
	a.Record(measureStart, measureStart+10*ms, 10*ms, 10*ms, 1, 100)
	a.Record(measureStart+ms, measureStart+20*ms, 20*ms, 20*ms, 1, 100)
	b.Record(measureStart, measureStart+30*ms, 30*ms, 30*ms, 1, 100)
	b.RecordError(measureStart, measureStart+40*ms, "SYSTEM_BUSY(2)", 2)
	// Second 2 (second 1 empty): a 5 ms with a batch of 4.
	a.Record(measureStart+2*sec, measureStart+2*sec+5*ms, 5*ms, 5*ms, 4, 400)
	a.Flush()
	b.Flush()
	series.Close()

	counts, lat, svc := mergeRecorders([]*Recorder{a, b}, false)
	require.Nil(t, svc)
	require.EqualValues(t, 7, counts.Msgs)
	require.EqualValues(t, 700, counts.Bytes)
	require.EqualValues(t, 4, counts.Requests)
	require.EqualValues(t, 2, counts.Errors)
	require.Equal(t, map[string]int64{"SYSTEM_BUSY(2)": 2}, counts.ErrorsByCode)
	require.EqualValues(t, 4, counts.WarmupMsgs)
	require.Equal(t, measureStart+2*sec+5*ms, counts.LastNs)
	require.EqualValues(t, 4, lat.TotalCount())

	rows := series.Rows()
	require.Len(t, rows, 3)
	require.EqualValues(t, 3, rows[0].Msgs)
	require.EqualValues(t, 300, rows[0].Bytes)
	require.EqualValues(t, 2, rows[0].Errors)
	requireNear(t, 20_000, rows[0].P50Us, "p50 of second 0")
	requireNear(t, 30_000, rows[0].MaxUs, "max of second 0")
	require.EqualValues(t, 0, rows[1].Msgs)
	require.EqualValues(t, -1, rows[1].Lag)
	require.EqualValues(t, 4, rows[2].Msgs)
	requireNear(t, 5_000, rows[2].P99Us, "p99 of second 2")
}

func TestRecorderKeepsSlowSends(t *testing.T) {
	r := NewRecorder(1000, nil, true)
	r.KeepSlow(500)
	r.Record(900, 2000, 1100, 1000, 1, 0)  // warm-up: not kept
	r.Record(1000, 1400, 400, 300, 1, 0)   // fast: not kept
	r.Record(1100, 1600, 500, 200, 1, 0)   // exactly the threshold: kept
	r.Record(1200, 3000, 1800, 1700, 1, 0) // kept
	want := []SlowSend{{IntendedNs: 1100, SentNs: 1400, DoneNs: 1600}, {IntendedNs: 1200, SentNs: 1300, DoneNs: 3000}}
	if len(r.slow) != len(want) || r.slow[0] != want[0] || r.slow[1] != want[1] {
		t.Fatalf("slow = %v, want %v", r.slow, want)
	}
	for i := range slowKeep {
		r.Record(int64(2000+i), int64(4000+i), 2000, 2000, 1, 0)
	}
	if len(r.slow) != slowKeep || r.slowDropped != 2 {
		t.Errorf("kept %d, dropped %d; want %d and 2", len(r.slow), r.slowDropped, slowKeep)
	}
}
