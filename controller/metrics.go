package controller

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the controller's series (METRICS.md, "Controller"). The per-group gauges
// carry broker_name, bounded by the groups the controllers know.
type metrics struct {
	leader        prometheus.Gauge
	masterEpoch   *prometheus.GaugeVec
	syncStateSize *prometheus.GaugeVec
	elections     *prometheus.CounterVec
	requests      *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ringmq", Subsystem: "controller", Name: "leader",
			Help: "1 while this controller leads the raft group, else 0.",
		}),
		masterEpoch: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ringmq", Subsystem: "controller", Name: "master_epoch",
			Help: "A broker group's master epoch, as this controller's state machine holds it.",
		}, []string{"broker_name"}),
		syncStateSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "ringmq", Subsystem: "controller", Name: "sync_state_set_size",
			Help: "Replicas in a broker group's SyncStateSet.",
		}, []string{"broker_name"}),
		elections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ringmq", Subsystem: "controller", Name: "elections_total",
			Help: "Elections this controller ran as leader, by result (new_master_elected, keep_current_master, no_master_elected).",
		}, []string{"result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ringmq", Subsystem: "controller", Name: "requests_total",
			Help: "Controller requests received, by request code name.",
		}, []string{"code"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range m.collectors() {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("controller: register metrics: %w", err)
		}
	}
	return m, nil
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.leader, m.masterEpoch, m.syncStateSize, m.elections, m.requests}
}

// updateGauges sets the per-group gauges from the FSM after a change.
func (c *Controller) updateGauges() {
	groups := c.fsm.Groups()
	c.metrics.masterEpoch.Reset()
	c.metrics.syncStateSize.Reset()
	for _, g := range groups {
		c.metrics.masterEpoch.WithLabelValues(g.BrokerName).Set(float64(g.MasterEpoch))
		c.metrics.syncStateSize.WithLabelValues(g.BrokerName).Set(float64(len(g.SyncStateSet)))
	}
}
