package broker

import "github.com/prometheus/client_golang/prometheus"

// metrics are the broker's own collectors (the store, flush and netio register theirs).
// Names follow Prometheus conventions: base units, _total for counters.
type metrics struct {
	replyErrors prometheus.Counter
	requests    *prometheus.CounterVec // by request code name
	busy        *prometheus.CounterVec // SYSTEM_BUSY answers, by reason (pull_hold_full: the read plane's; pc_synchronized, flush_queue_full: the send plane's)
	// The read plane registers its own (readplane.New): ringmq_broker_pull_runs_total and
	// ringmq_broker_pulls_held.
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
	reg.MustRegister(m.replyErrors, m.requests, m.busy,
		m.registrations, m.consumerNotifies, m.configWrites)
	return m
}
