package broker

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/brokerstats"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/netio"
)

// Every series the broker process serves, with its labels, is listed in METRICS.md at the
// repository root; TestMetricsDocListsEveryRegisteredSeries keeps the two equal.

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
	autoCreated      *prometheus.CounterVec // groups and topics created implicitly, by kind (metadata.Kind*)
	clientRefusals   *prometheus.CounterVec // client requests refused to bound their state, by reason

	// Per request code (metrics_requests.go) and per topic / group × topic (metrics_topics.go).
	reqs  *requestMetrics
	flows *flowStats
	lag   *topicCollector // set by registerLiveMetrics
	// stats are RocketMQ's broker stats windows over flows (metrics_stats.go).
	stats *brokerstats.Manager
}

func newMetrics(reg prometheus.Registerer, cfg *Config, clock func() time.Time) *metrics {
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
	m.autoCreated = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringmq_broker_auto_created_total",
		Help: "Consumer groups and retry and dead-letter topics created implicitly (heartbeats, pulls, send-backs, sends), by kind (subscription_group, retry_topic, dlq_topic).",
	}, []string{"kind"})
	m.clientRefusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringmq_broker_client_refusals_total",
		Help: "Client requests refused so that clients cannot grow the broker's state, by reason (subscription_group_limit, retry_topic_limit, offset_unknown_queue, offset_negative, offset_past_max).",
	}, []string{"reason"})
	// Every label value exists from the start, at 0: a rate() over them needs no first refusal.
	for _, kind := range []string{metadata.KindSubscriptionGroup, metadata.KindRetryTopic, metadata.KindDLQTopic} {
		m.autoCreated.WithLabelValues(kind)
	}
	for _, reason := range []string{"subscription_group_limit", "retry_topic_limit", metadata.RefusedOffsetUnknownQueue,
		metadata.RefusedOffsetNegative, metadata.RefusedOffsetPastMax} {
		m.clientRefusals.WithLabelValues(reason)
	}
	m.reqs = newRequestMetrics(m.requests, clock)
	m.flows = newFlowStats(cfg.MetricsMaxTopics, cfg.MetricsMaxGroupTopics)
	m.stats = newBrokerStats(m.flows, cfg.BrokerClusterName)
	reg.MustRegister(m.replyErrors, m.requests, m.busy,
		m.registrations, m.consumerNotifies, m.configWrites, m.autoCreated, m.clientRefusals)
	reg.MustRegister(m.reqs.collectors()...)
	reg.MustRegister(brokerStatsCollector(m.stats))
	return m
}

// observeAutoCreate counts an implicit creation, or its refusal at a limit
// (metadata.AutoCreateObserver).
func (m *metrics) observeAutoCreate(kind string, created bool) {
	switch {
	case created:
		m.autoCreated.WithLabelValues(kind).Inc()
	case kind == metadata.KindSubscriptionGroup:
		m.clientRefusals.WithLabelValues("subscription_group_limit").Inc()
	default:
		m.clientRefusals.WithLabelValues("retry_topic_limit").Inc()
	}
}

// registerLiveMetrics registers the collectors that read the broker's state at scrape time: consumer
// lag, connections by role, replication. Called by New once the store, the tables and the servers
// exist.
func (b *Broker) registerLiveMetrics(reg prometheus.Registerer) {
	if levels, err := ParseDelayLevels(b.cfg.MessageDelayLevel); err == nil && b.schedule != nil {
		addScheduleStats(b.metrics.stats, b.store, b.schedule, len(levels))
	}
	b.metrics.lag = newTopicCollector(b.metrics.flows, b.store, b.offsets.All, b.clock)
	reg.MustRegister(b.metrics.lag)
	reg.MustRegister(&connectionCollector{b: b, desc: prometheus.NewDesc("ringmq_broker_connections",
		"Open client connections by role: producer and consumer (registered by heartbeat; a connection of a client "+
			"that is both counts in both), other (neither: admin tools, name servers, clients before their first heartbeat).",
		[]string{"role"}, nil)})
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_broker_subscription_groups",
			Help: "Consumer groups in subscriptionGroup.json besides the built-in ones (what autoCreateSubscriptionGroupLimit bounds)."},
			func() float64 { return float64(b.subscriptions.Count()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_broker_group_topics",
			Help: "Retry (%RETRY%) and dead-letter (%DLQ%) topics in topics.json (what autoCreateRetryTopicLimit bounds)."},
			func() float64 { return float64(b.topics.GroupTopicCount()) }),
	)
	if srv := b.haServer; srv != nil {
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_replica_slaves_connected",
				Help: "Slaves connected to this master's HA port."}, func() float64 { return float64(srv.SlaveCount()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_replica_behind_bytes",
				Help: "CommitLog bytes the most advanced connected slave has not acknowledged (0 without a slave)."},
				func() float64 {
					if srv.SlaveCount() == 0 {
						return 0
					}
					return float64(max(b.store.MaxPhyOffset()-srv.AckedOffset(), 0))
				}),
		)
	}
	if c := b.haClient; c != nil {
		// A 4.x slave learns the master's offsets only from the frames it receives, so it cannot tell how
		// far behind it is (the master's ringmq_replica_behind_bytes does). It can tell that replication
		// is alive: frames keep coming (an idle master sends a heartbeat every haSendHeartbeatInterval)
		// and the connection holds.
		reg.MustRegister(
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ringmq_replica_slave_frames_received_total",
				Help: "Transfer frames this slave received from its master (data and heartbeats): a rate of 0 means replication stalled."},
				func() float64 { return float64(c.Frames()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ringmq_replica_slave_connects_total",
				Help: "Connections this slave made to its master's HA port: more than one means it reconnected."},
				func() float64 { return float64(c.Connects()) }),
		)
	}
}

// connectionCollector counts the remoting servers' connections by role at scrape time.
type connectionCollector struct {
	b    *Broker
	desc *prometheus.Desc
}

func (c *connectionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *connectionCollector) Collect(ch chan<- prometheus.Metric) {
	producers, consumers := map[uint64]struct{}{}, map[uint64]struct{}{}
	c.b.producers.AddConnIDs(producers)
	c.b.consumers.AddConnIDs(consumers)
	total := 0
	for _, srv := range []netio.Server{c.b.server, c.b.fastServer} {
		if srv != nil {
			total += srv.ConnectionCount()
		}
	}
	clients := len(producers) + len(consumers)
	for id := range producers {
		if _, both := consumers[id]; both {
			clients--
		}
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(len(producers)), "producer")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(len(consumers)), "consumer")
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(max(total-clients, 0)), "other")
}

// MetricsListenAddr is the address the operators' HTTP endpoint (metrics, pprof, probes) listens
// on, or "" when metricsAddr is empty or "off" (or not an address: Validate refuses it).
func (c *Config) MetricsListenAddr() string {
	addr, _ := opsserver.ListenAddr(c.MetricsAddr)
	return addr
}

// metricsAddrProblem says what is wrong with metricsAddr, "" when nothing.
func (c *Config) metricsAddrProblem() string {
	if _, err := opsserver.ListenAddr(c.MetricsAddr); err != nil {
		return err.Error()
	}
	return ""
}
