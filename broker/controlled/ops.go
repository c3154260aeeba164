package controlled

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ringmq/ringmq/internal/opsserver"
)

// The operators' view of a controller-mode broker process: its probes and metrics follow whichever
// broker runs now. Each broker registers its metrics on a registry of its own (a replacement would
// otherwise register every series twice); Gatherer serves the running one's, and the supervisor's own
// series come from RegisterMetrics on the process's registry.
//
//	ringmq_controlled_is_master            gauge    1 while this replica's broker is the group's master
//	ringmq_controlled_master_epoch         gauge    the master epoch the running broker follows or leads
//	ringmq_controlled_sync_state_set_size  gauge    replicas in the SyncStateSet, the master included (masters only)
//	ringmq_controlled_role_changes_total   counter  brokers started by the supervisor (a role change or a truncation each)

// Live is the running broker's liveness; between two brokers (a role change) the process is live.
func (s *Supervisor) Live() []opsserver.Check {
	if b := s.Current(); b != nil {
		return b.Live()
	}
	return []opsserver.Check{{Name: "role", OK: true, Detail: "changing role (the controller's decision is being carried out)"}}
}

// Ready is the running broker's readiness; between two brokers it is not ready.
func (s *Supervisor) Ready() []opsserver.Check {
	if b := s.Current(); b != nil {
		return b.Ready()
	}
	return []opsserver.Check{{Name: "role", OK: false, Detail: "changing role (the controller's decision is being carried out)"}}
}

// Gatherer serves the running broker's metrics (nothing between two brokers).
func (s *Supervisor) Gatherer() prometheus.Gatherer {
	return prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		s.mu.Lock()
		reg := s.brokerReg
		s.mu.Unlock()
		if reg == nil {
			return nil, nil
		}
		return reg.Gather()
	})
}

// RegisterMetrics registers the supervisor's series on reg.
func (s *Supervisor) RegisterMetrics(reg prometheus.Registerer) error {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	for _, c := range []prometheus.Collector{
		gauge("ringmq_controlled_is_master", "1 while this replica's broker is its group's master (controller mode).", func() float64 {
			if s.IsMaster() {
				return 1
			}
			return 0
		}),
		gauge("ringmq_controlled_master_epoch", "The master epoch the running broker follows or leads (controller mode).", func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			return float64(s.role.masterEpoch)
		}),
		gauge("ringmq_controlled_sync_state_set_size", "Replicas in the SyncStateSet, the master included (controller mode; on the master, 0 elsewhere).", func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.current == nil || !s.role.isMaster(s.brokerID) {
				return 0
			}
			return float64(len(s.role.syncStateSet))
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ringmq_controlled_role_changes_total",
			Help: "Brokers the controller-mode supervisor started: one per role change or truncation."},
			func() float64 { return float64(s.roleChanges.Load()) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
