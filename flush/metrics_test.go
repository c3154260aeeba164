package flush

import (
	"sort"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

func TestMetricsRegisterOnGivenRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, "commitlog_sync")
	require.NoError(t, err)
	m.durableWrite(150*time.Microsecond, 8192, 8)
	m.durableWrite(250*time.Microsecond, 4096, 24)
	m.lateAcks(2)
	m.timedOut(3)
	m.rejectedOne()
	m.failedWrite(time.Millisecond)
	m.setDepth(7)

	families, err := reg.Gather()
	require.NoError(t, err)
	values := map[string]float64{}
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
		require.Len(t, f.GetMetric(), 1)
		metric := f.GetMetric()[0]
		require.Equal(t, "service", metric.GetLabel()[0].GetName())
		require.Equal(t, "commitlog_sync", metric.GetLabel()[0].GetValue())
		switch {
		case metric.GetCounter() != nil:
			values[f.GetName()] = metric.GetCounter().GetValue()
		case metric.GetGauge() != nil:
			values[f.GetName()] = metric.GetGauge().GetValue()
		case metric.GetHistogram() != nil:
			values[f.GetName()] = float64(metric.GetHistogram().GetSampleCount())
		}
	}
	sort.Strings(names)
	require.Equal(t, []string{
		"ringmq_flush_acks_per_durable_write",
		"ringmq_flush_acks_total",
		"ringmq_flush_batch_waiters",
		"ringmq_flush_bytes_total",
		"ringmq_flush_durable_writes_total",
		"ringmq_flush_errors_total",
		"ringmq_flush_latency_seconds",
		"ringmq_flush_rejected_total",
		"ringmq_flush_timeouts_total",
		"ringmq_flush_waiter_queue_depth",
	}, names)
	require.Equal(t, map[string]float64{
		"ringmq_flush_acks_per_durable_write": 17, // (8 + 24 + 2) / 2
		"ringmq_flush_acks_total":             34,
		"ringmq_flush_batch_waiters":          2,
		"ringmq_flush_bytes_total":            12288,
		"ringmq_flush_durable_writes_total":   2,
		"ringmq_flush_errors_total":           1,
		"ringmq_flush_latency_seconds":        3,
		"ringmq_flush_rejected_total":         1,
		"ringmq_flush_timeouts_total":         3,
		"ringmq_flush_waiter_queue_depth":     7,
	}, values)

	h := m.LatencyHistogram()
	require.Equal(t, int64(2), h.TotalCount(), "HdrHistogram holds successful durable operations")
	require.InDelta(t, 150, h.ValueAtQuantile(50), 1)
	require.Equal(t, int64(24), m.Snapshot().MaxBatch)

	// A second service on the same registry is told apart by its label; the same label twice is an error.
	_, err = NewMetrics(reg, "consumequeue")
	require.NoError(t, err)
	_, err = NewMetrics(reg, "commitlog_sync")
	require.Error(t, err)
	require.Contains(t, err.Error(), `"commitlog_sync"`)
}

// TestIntervalMetricsRegisterNoWaiterSeries: a service without waiters registers the durable
// operations' series only, so every series it registers can move.
func TestIntervalMetricsRegisterNoWaiterSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewIntervalMetrics(reg, "commitlog_async")
	require.NoError(t, err)
	m.durableWrite(100*time.Microsecond, 4096, 0)
	m.failedWrite(time.Millisecond)
	families, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, f := range families {
		names = append(names, f.GetName())
	}
	require.ElementsMatch(t, []string{"ringmq_flush_bytes_total", "ringmq_flush_durable_writes_total",
		"ringmq_flush_errors_total", "ringmq_flush_latency_seconds"}, names)
}
