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
	unmatched   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, server, engine string) (*metrics, error) {
	labels := prometheus.Labels{"server": server, "engine": engine}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ringmq", Subsystem: "netio", Name: name, Help: help, ConstLabels: labels,
		})
	}
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ringmq", Subsystem: "netio", Name: "connections",
			Help: "Open accepted connections.", ConstLabels: labels,
		}),
		refused:     counter("connections_refused_total", "Connections closed right after accept because MaxConnections were open or the server was stopping."),
		frameErrors: counter("frame_errors_total", "Connections closed because a frame could not be cut or decoded."),
		idleClosed:  counter("idle_closed_total", "Connections closed by the idle timeout."),
		framesIn:    counter("frames_received_total", "Frames received (requests and responses)."),
		framesOut:   counter("frames_sent_total", "Frames written to sockets."),
		unmatched:   counter("unmatched_responses_total", "Responses whose opaque matched no pending call (dropped)."),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.connections, m.refused, m.frameErrors, m.idleClosed, m.framesIn, m.framesOut, m.unmatched} {
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
