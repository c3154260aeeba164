package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Default names of the broker histograms a report puts beside the client's latency:
// the store's put-lock time and put latency (Prometheus naming, seconds).
const (
	DefaultPutLockMetric    = "ringmq_store_put_lock_seconds"
	DefaultPutLatencyMetric = "ringmq_store_put_latency_seconds"
	// DefaultPutLockMaxMetric is the gauge of the longest put-lock hold since start.
	DefaultPutLockMaxMetric = "ringmq_store_put_lock_max_seconds"
)

// MetricsSnapshot is one scrape of a broker's /metrics: histograms and gauges by series
// name ("name" or "name{label="v",...}" with labels sorted).
type MetricsSnapshot struct {
	Histograms map[string]PromHistogram
	Gauges     map[string]float64
}

// PromHistogram is a Prometheus histogram: cumulative bucket counts by upper bound
// (the +Inf bucket is Count), plus quantiles interpolated like PromQL's
// histogram_quantile (linear within a bucket; a quantile in the +Inf bucket reads as the
// highest finite bound).
type PromHistogram struct {
	Count   uint64       `json:"count"`
	Sum     float64      `json:"sum"`
	Buckets []PromBucket `json:"buckets"`
	P50     float64      `json:"p50"`
	P90     float64      `json:"p90"`
	P99     float64      `json:"p99"`
	P999    float64      `json:"p999"`
}

// PromBucket is one cumulative bucket.
type PromBucket struct {
	UpperBound float64 `json:"le"`
	Count      uint64  `json:"count"`
}

// ScrapeMetrics fetches http://addr/metrics (addr may also be a full URL) and parses the
// text exposition format.
func ScrapeMetrics(ctx context.Context, client *http.Client, addr string) (*MetricsSnapshot, error) {
	url := addr
	if !strings.Contains(url, "://") {
		url = "http://" + addr + "/metrics"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMetrics, url, err)
	}
	// Ask for the text format: it is what the parser reads.
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMetrics, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: %s: HTTP %s", ErrMetrics, url, resp.Status)
	}
	snap, err := ParseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrMetrics, url, err)
	}
	return snap, nil
}

// ParseMetrics parses the Prometheus text format, keeping histograms and gauges.
func ParseMetrics(r io.Reader) (*MetricsSnapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	snap := &MetricsSnapshot{Histograms: map[string]PromHistogram{}, Gauges: map[string]float64{}}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			key := seriesKey(name, m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				ph := PromHistogram{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
				for _, b := range h.GetBucket() {
					if math.IsInf(b.GetUpperBound(), +1) {
						continue
					}
					ph.Buckets = append(ph.Buckets, PromBucket{UpperBound: b.GetUpperBound(), Count: b.GetCumulativeCount()})
				}
				sort.Slice(ph.Buckets, func(i, j int) bool { return ph.Buckets[i].UpperBound < ph.Buckets[j].UpperBound })
				ph.fillQuantiles()
				snap.Histograms[key] = ph
			case dto.MetricType_GAUGE:
				snap.Gauges[key] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				snap.Gauges[key] = m.GetUntyped().GetValue()
			}
		}
	}
	return snap, nil
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	slices.Sort(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Delta returns after minus before for every histogram present in after (a histogram new
// in after is taken whole): the broker's histograms are cumulative since its start, and a
// run wants only its own window.
func Delta(before, after *MetricsSnapshot) map[string]PromHistogram {
	out := map[string]PromHistogram{}
	for key, a := range after.Histograms {
		d := a
		if b, ok := before.Histograms[key]; ok && b.Count <= a.Count {
			d = PromHistogram{Count: a.Count - b.Count, Sum: a.Sum - b.Sum}
			prev := map[float64]uint64{}
			for _, bb := range b.Buckets {
				prev[bb.UpperBound] = bb.Count
			}
			for _, ab := range a.Buckets {
				d.Buckets = append(d.Buckets, PromBucket{UpperBound: ab.UpperBound, Count: ab.Count - min(prev[ab.UpperBound], ab.Count)})
			}
		} else {
			d.Buckets = slices.Clone(a.Buckets)
		}
		d.fillQuantiles()
		out[key] = d
	}
	return out
}

func (h *PromHistogram) fillQuantiles() {
	h.P50 = h.Quantile(0.5)
	h.P90 = h.Quantile(0.9)
	h.P99 = h.Quantile(0.99)
	h.P999 = h.Quantile(0.999)
}

// Quantile estimates the q-quantile (0 < q < 1) as PromQL's histogram_quantile does:
// find the bucket holding rank q×Count and interpolate linearly inside it (the first
// bucket starts at 0). 0 for an empty histogram.
func (h *PromHistogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Buckets) == 0 {
		return 0
	}
	rank := q * float64(h.Count)
	lower, below := 0.0, uint64(0)
	for _, b := range h.Buckets {
		if float64(b.Count) >= rank {
			if b.Count == below {
				return b.UpperBound
			}
			return lower + (b.UpperBound-lower)*(rank-float64(below))/float64(b.Count-below)
		}
		lower, below = b.UpperBound, b.Count
	}
	return h.Buckets[len(h.Buckets)-1].UpperBound
}

// BrokerMetrics is what a run record keeps of the broker's own measurements: every
// histogram's change over the measured window, the gauges at the end, and which series
// are the put-lock and put-latency histograms.
type BrokerMetrics struct {
	URL              string                   `json:"url"`
	PutLockMetric    string                   `json:"put_lock_metric"`
	PutLatencyMetric string                   `json:"put_latency_metric"`
	PutLockMaxMetric string                   `json:"put_lock_max_metric"`
	Histograms       map[string]PromHistogram `json:"histograms"`
	Gauges           map[string]float64       `json:"gauges"`
	Error            string                   `json:"error,omitempty"`
}

// MetricsWatcher scrapes a broker's /metrics at the start and at the end of the measured
// window. Not safe for concurrent use.
type MetricsWatcher struct {
	addr    string
	names   [3]string
	client  *http.Client
	before  *MetricsSnapshot
	initErr error
}

// NewMetricsWatcher returns a watcher for the broker metrics at addr ("host:port" or a
// URL); empty names take the defaults.
func NewMetricsWatcher(addr, putLock, putLatency, putLockMax string) *MetricsWatcher {
	names := [3]string{putLock, putLatency, putLockMax}
	defaults := [3]string{DefaultPutLockMetric, DefaultPutLatencyMetric, DefaultPutLockMaxMetric}
	for i := range names {
		if names[i] == "" {
			names[i] = defaults[i]
		}
	}
	return &MetricsWatcher{addr: addr, names: names, client: &http.Client{Timeout: 10 * time.Second}}
}

// Start takes the first scrape. A failure is remembered and reported by Finish, so a
// broker without metrics does not stop the run.
func (w *MetricsWatcher) Start(ctx context.Context) error {
	w.before, w.initErr = ScrapeMetrics(ctx, w.client, w.addr)
	return w.initErr
}

// Finish takes the second scrape and returns the window's histograms. On error the
// returned record says why (and the error is returned too).
func (w *MetricsWatcher) Finish(ctx context.Context) (*BrokerMetrics, error) {
	bm := &BrokerMetrics{URL: w.addr, PutLockMetric: w.names[0], PutLatencyMetric: w.names[1], PutLockMaxMetric: w.names[2]}
	after, err := ScrapeMetrics(ctx, w.client, w.addr)
	if err == nil {
		err = w.initErr
	}
	if err != nil {
		bm.Error = err.Error()
		return bm, err
	}
	bm.Histograms = Delta(w.before, after)
	bm.Gauges = after.Gauges
	return bm, nil
}
