package netio

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are a server's counters. They exist (unregistered) even without a Registerer so
// that the data path never checks for nil. Frame counters are added once per read pass or
// written batch, not per frame, to keep the shared cache line cold.
type metrics struct {
	connections prometheus.Gauge
	refused     prometheus.Counter
	frameErrors prometheus.Counter
	idleClosed  prometheus.Counter
	framesIn    prometheus.Counter
	framesOut   prometheus.Counter
	roundWrites prometheus.Counter
	unmatched   prometheus.Counter
	overLimit   prometheus.Counter

	budgetUsed    prometheus.Gauge
	budgetWaiting prometheus.Gauge
	budgetWaits   prometheus.Counter

	// readPass is how long one gnet read pass (OnTraffic: decode and handle every complete
	// frame of one connection, then write) held its event loop; its sum over time is the
	// loops' busy share. Every other connection of that loop waits meanwhile, so a long pass
	// is a tail-latency cause of its own. gnet engine only.
	readPass prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, server, engine string) (*metrics, error) {
	labels := prometheus.Labels{"server": server, "engine": engine}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ringmq", Subsystem: "netio", Name: name, Help: help, ConstLabels: labels,
		})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ringmq", Subsystem: "netio", Name: name, Help: help, ConstLabels: labels,
		})
	}
	m := &metrics{
		connections:   gauge("connections", "Open accepted connections."),
		refused:       counter("connections_refused_total", "Connections closed right after accept because MaxConnections were open or the server was stopping."),
		frameErrors:   counter("frame_errors_total", "Connections closed because a frame could not be cut or decoded."),
		idleClosed:    counter("idle_closed_total", "Connections closed by the idle timeout."),
		framesIn:      counter("frames_received_total", "Frames received (requests and responses)."),
		framesOut:     counter("frames_sent_total", "Frames written to sockets."),
		roundWrites:   counter("round_writes_total", "Socket writes made at the end of a round by the goroutine that answered a batch of requests (a group commit's sync), instead of by the connection's event loop (gnet engine)."),
		unmatched:     counter("unmatched_responses_total", "Responses whose opaque matched no pending call (dropped)."),
		overLimit:     counter("frames_over_header_limit_total", "Frames skipped because a header field was over its cap (codec.ErrHeaderLimit); requests among them were answered SYSTEM_ERROR."),
		budgetUsed:    gauge("request_budget_used_bytes", "Bytes of large request frames being read or decoded, charged to the request budget (requestBudgetBytes)."),
		budgetWaiting: gauge("request_budget_waiting_frames", "Large frames waiting for room in the request budget; their connections do not read meanwhile."),
		budgetWaits:   counter("request_budget_waits_total", "Large frames that had to wait for room in the request budget."),
		readPass: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "ringmq", Subsystem: "netio", Name: "read_pass_seconds", ConstLabels: labels,
			Help:    "How long one read pass (decode and handle a connection's complete frames, then write) held its event loop (gnet engine).",
			Buckets: prometheus.ExponentialBuckets(5e-6, 2, 16), // 5 µs .. 164 ms
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.connections, m.refused, m.frameErrors, m.idleClosed, m.framesIn, m.framesOut,
		m.roundWrites, m.unmatched, m.overLimit, m.budgetUsed, m.budgetWaiting, m.budgetWaits, m.readPass} {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("%w: metrics for server %q engine %q already registered: give each server its own Name", ErrConfig, server, engine)
			}
			return nil, fmt.Errorf("netio: register metrics: %w", err)
		}
	}
	return m, nil
}
