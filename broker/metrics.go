package broker

import "github.com/prometheus/client_golang/prometheus"

// metrics are the broker's own collectors (the store, flush and netio register theirs).
// Names follow Prometheus conventions: base units, _total for counters.
type metrics struct {
	replyErrors prometheus.Counter
	requests    *prometheus.CounterVec // by request code name
	busy        *prometheus.CounterVec // SYSTEM_BUSY answers, by reason
	pullRuns    *prometheus.CounterVec // pull store reads, by where they ran (data plane)
	pullsHeld   prometheus.Gauge       // pulls parked by long polling (data plane)
	// Control plane.
	registrations    *prometheus.CounterVec // REGISTER_BROKER calls, by result
	consumerNotifies prometheus.Counter     // NOTIFY_CONSUMER_IDS_CHANGED sent
	configWrites     *prometheus.CounterVec // config file writes, by file and result
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		replyErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_broker_reply_errors_total",
			Help: "Responses that could not be written because the connection was gone.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringmq_broker_requests_total",
			Help: "Requests received, by request code.",
		}, []string{"code"}),
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringmq_broker_system_busy_total",
			Help: "Requests answered SYSTEM_BUSY, by reason (overload, timeout_clean_queue, pc_synchronized, flush_queue_full, pooled_bytes).",
		}, []string{"reason"}),
		pullRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringmq_broker_pull_runs_total",
			Help: "Pull store reads, by where they ran (loop: event loop, pool: pull pool, rerun: after long polling).",
		}, []string{"where"}),
		pullsHeld: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "ringmq_broker_pulls_held",
			Help: "Pull requests parked by long polling.",
		}),
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringmq_broker_namesrv_registrations_total",
			Help: "REGISTER_BROKER calls to name servers, by result (ok, error).",
		}, []string{"result"}),
		consumerNotifies: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ringmq_broker_consumer_ids_changed_notifications_total",
			Help: "NOTIFY_CONSUMER_IDS_CHANGED requests sent to consumers.",
		}),
		configWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringmq_broker_config_file_writes_total",
			Help: "Writes of topics.json, subscriptionGroup.json and consumerOffset.json, by file and result (ok, error).",
		}, []string{"file", "result"}),
	}
	reg.MustRegister(m.replyErrors, m.requests, m.busy, m.pullRuns, m.pullsHeld,
		m.registrations, m.consumerNotifies, m.configWrites)
	return m
}
