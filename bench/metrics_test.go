package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

const metricsBefore = `# HELP ringmq_store_put_lock_seconds Put-lock hold time.
# TYPE ringmq_store_put_lock_seconds histogram
ringmq_store_put_lock_seconds_bucket{le="1e-06"} 10
ringmq_store_put_lock_seconds_bucket{le="1e-05"} 20
ringmq_store_put_lock_seconds_bucket{le="0.0001"} 20
ringmq_store_put_lock_seconds_bucket{le="+Inf"} 20
ringmq_store_put_lock_seconds_sum 0.0001
ringmq_store_put_lock_seconds_count 20
# HELP ringmq_store_put_lock_max_seconds Longest put-lock hold.
# TYPE ringmq_store_put_lock_max_seconds gauge
ringmq_store_put_lock_max_seconds 9e-06
# HELP ringmq_broker_requests_total Requests.
# TYPE ringmq_broker_requests_total counter
ringmq_broker_requests_total{code="310"} 20
`

// After: 100 more puts, 50 in (0, 1 µs], 30 in (1, 10 µs], 20 in (10, 100 µs]; a new
// labelled histogram appears.
const metricsAfter = `# HELP ringmq_store_put_lock_seconds Put-lock hold time.
# TYPE ringmq_store_put_lock_seconds histogram
ringmq_store_put_lock_seconds_bucket{le="1e-06"} 60
ringmq_store_put_lock_seconds_bucket{le="1e-05"} 100
ringmq_store_put_lock_seconds_bucket{le="0.0001"} 120
ringmq_store_put_lock_seconds_bucket{le="+Inf"} 120
ringmq_store_put_lock_seconds_sum 0.0011
ringmq_store_put_lock_seconds_count 120
# HELP ringmq_store_put_lock_max_seconds Longest put-lock hold.
# TYPE ringmq_store_put_lock_max_seconds gauge
ringmq_store_put_lock_max_seconds 9.5e-05
# HELP ringmq_flush_latency_seconds Flush latency.
# TYPE ringmq_flush_latency_seconds histogram
ringmq_flush_latency_seconds_bucket{backend="msync",le="0.001"} 4
ringmq_flush_latency_seconds_bucket{backend="msync",le="+Inf"} 5
ringmq_flush_latency_seconds_sum{backend="msync"} 0.01
ringmq_flush_latency_seconds_count{backend="msync"} 5
`

func TestMetricsDeltaAndQuantiles(t *testing.T) {
	before, err := ParseMetrics(strings.NewReader(metricsBefore))
	require.NoError(t, err)
	after, err := ParseMetrics(strings.NewReader(metricsAfter))
	require.NoError(t, err)
	require.InDelta(t, 9.5e-05, after.Gauges[DefaultPutLockMaxMetric], 1e-12)

	d := Delta(before, after)
	lock := d[DefaultPutLockMetric]
	require.EqualValues(t, 100, lock.Count)
	require.InDelta(t, 0.001, lock.Sum, 1e-12)
	require.Equal(t, []PromBucket{{1e-6, 50}, {1e-5, 80}, {1e-4, 100}}, lock.Buckets)
	// histogram_quantile: rank 50 is the top of the first bucket; rank 90 is halfway
	// into (1e-5, 1e-4]; rank 99 is 95 % into it.
	require.InDelta(t, 1e-6, lock.P50, 1e-15)
	require.InDelta(t, 1e-5+0.5*9e-5, lock.P90, 1e-12)
	require.InDelta(t, 1e-5+0.95*9e-5, lock.P99, 1e-12)

	flush := d[`ringmq_flush_latency_seconds{backend="msync"}`]
	require.EqualValues(t, 5, flush.Count, "new in the window: taken whole")
	require.InDelta(t, 0.001, flush.P99, 1e-12, "in the +Inf bucket: the highest finite bound")
}

func TestMetricsWatcher(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if calls.Add(1) == 1 {
			_, _ = w.Write([]byte(metricsBefore))
			return
		}
		_, _ = w.Write([]byte(metricsAfter))
	}))
	defer srv.Close()
	w := NewMetricsWatcher(strings.TrimPrefix(srv.URL, "http://"), "", "", "")
	require.NoError(t, w.Start(context.Background()))
	bm, err := w.Finish(context.Background())
	require.NoError(t, err)
	require.Equal(t, DefaultPutLockMetric, bm.PutLockMetric)
	require.Equal(t, DefaultPutLatencyMetric, bm.PutLatencyMetric)
	require.EqualValues(t, 100, bm.Histograms[DefaultPutLockMetric].Count)

	// No broker metrics: the run goes on, the record says why.
	w = NewMetricsWatcher("127.0.0.1:1", "custom_lock", "", "")
	require.ErrorIs(t, w.Start(context.Background()), ErrMetrics)
	bm, err = w.Finish(context.Background())
	require.ErrorIs(t, err, ErrMetrics)
	require.Equal(t, "custom_lock", bm.PutLockMetric)
	require.NotEmpty(t, bm.Error)
}
