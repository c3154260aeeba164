package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClientCPUShares(t *testing.T) {
	c := newClientCPU(500*time.Millisecond, 2*time.Second, 100_000, 2)
	require.InDelta(t, 0.5, c.Secs, 1e-12)
	require.InDelta(t, 2.0, c.WallSecs, 1e-12)
	require.Equal(t, 2, c.NumCPU)
	require.InDelta(t, 0.125, c.Share, 1e-12, "0.5 CPU-s over 2 s on 2 CPUs")
	require.InDelta(t, 5.0, c.UsPerMsg, 1e-12, "500,000 µs over 100,000 messages")
	require.Equal(t, "client_cpu_s=0.500 client_cpu_share=0.125 client_cpu_us_per_msg=5.00 steal_share=-1", c.SummaryFields())
	c.StealShare = 0.0625
	require.Equal(t, "client_cpu_s=0.500 client_cpu_share=0.125 client_cpu_us_per_msg=5.00 steal_share=0.062", c.SummaryFields())

	zero := newClientCPU(time.Second, 0, 0, 2)
	require.Zero(t, zero.Share)
	require.Zero(t, zero.UsPerMsg)
	var none *ClientCPU
	require.Equal(t, "client_cpu_s=-1 client_cpu_share=-1 client_cpu_us_per_msg=-1 steal_share=-1", none.SummaryFields())
}

func TestProcessCPUAdvancesWithWork(t *testing.T) {
	start := markCPU()
	require.True(t, start.ok, "getrusage works on this platform")
	// Burn CPU until the process clock moves (rusage ticks are coarse).
	x := uint64(1)
	for {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		if cpu, _ := processCPU(); cpu > start.cpu {
			break
		}
	}
	c := clientCPUSince(start, 10)
	require.NotNil(t, c)
	require.Positive(t, c.Secs)
	require.Positive(t, c.UsPerMsg)
	require.NotZero(t, x)
}

// The produce run's summary carries the client CPU and the 250 ms throughput points, and
// the run directory their file.
func TestProduceRecordsClientCPUAndThroughput(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Count = 0
	cfg.Duration = 600 * time.Millisecond
	res := runProducer(t, cfg)
	require.NotNil(t, res.ClientCPU)
	require.Positive(t, res.ClientCPU.Secs)
	require.Positive(t, res.ClientCPU.UsPerMsg)
	require.InEpsilon(t, res.ClientCPU.Secs*1e6/float64(res.Acked), res.ClientCPU.UsPerMsg, 0.01)
	require.NotEmpty(t, res.Throughput)
	var sum int64
	for i, p := range res.Throughput {
		require.Positive(t, p.IntervalMs, "interval %d", i)
		sum += p.Msgs
	}
	// The sampler stops after the last response: every measured message is in some
	// interval; the warm-up is 0, so nothing else is.
	require.Equal(t, res.Acked, sum)

	rec := NewRunRecord("cpu", "produce", time.Now())
	rec.SetProduce(&cfg, res)
	require.Same(t, res.ClientCPU, rec.Results.Produce.ClientCPU)
	dir := t.TempDir()
	require.NoError(t, WriteRun(dir, rec, res, nil))
	back, err := ReadRunRecord(dir)
	require.NoError(t, err)
	require.Equal(t, ThroughputFile, back.Throughput)
	require.Equal(t, *res.ClientCPU, *back.Results.Produce.ClientCPU)
	data, err := os.ReadFile(filepath.Join(dir, ThroughputFile))
	require.NoError(t, err)
	require.Contains(t, string(data), "t_ms,interval_ms,msgs\n")
}

func TestSampleThroughputDifferencesTheTotal(t *testing.T) {
	stop := make(chan struct{})
	totals := []int64{100, 130, -1, 200, 200, 260}
	calls := 0
	pts := sampleThroughput(stop, time.Now(), time.Millisecond, func() (int64, bool) {
		v := totals[min(calls, len(totals)-1)]
		calls++
		if calls == len(totals) {
			close(stop) // the sampler reads once more at stop: the final partial interval
		}
		return v, v >= 0 // -1: a failed read, whose interval folds into the next
	})
	require.Equal(t, len(totals)+1, calls)
	msgs := make([]int64, len(pts))
	var lastEnd int64
	for i, p := range pts {
		msgs[i] = p.Msgs
		require.Equal(t, p.EndMs-lastEnd, p.IntervalMs, "intervals tile the run")
		lastEnd = p.EndMs
	}
	require.Equal(t, []int64{30, 70, 0, 60, 0}, msgs)
}

// TestParseProcStatCPU: the steal ticks are the eighth number of /proc/stat's cpu line, the total
// the first eight (guest time is inside user and nice); other lines and short ones are refused.
func TestParseProcStatCPU(t *testing.T) {
	steal, total, ok := parseProcStatCPU("cpu  1937142 0 915726 2043033 105667 0 73759 455124 0 0")
	require.True(t, ok)
	require.Equal(t, uint64(455124), steal)
	require.Equal(t, uint64(1937142+915726+2043033+105667+73759+455124), total)
	for _, bad := range []string{"cpu0 1 2 3 4 5 6 7 8 9 10", "cpu 1 2 3", "cpu 1 2 x 4 5 6 7 8 9 10", ""} {
		_, _, ok := parseProcStatCPU(bad)
		require.False(t, ok, bad)
	}
	require.Equal(t, 0.25, stealShare(cpuMark{machineOK: true, steal: 10, total: 100}, cpuMark{machineOK: true, steal: 20, total: 140}))
	require.Equal(t, -1.0, stealShare(cpuMark{}, cpuMark{machineOK: true}))
}
