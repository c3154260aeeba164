package namesrv

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
)

// metrics are the name server's counters and gauges. They exist (unregistered) without a
// Registerer, so the request path never checks for nil. Gauges are set by the code that
// changes the tables, so a scrape never takes the route table's lock.
type metrics struct {
	requests       *prometheus.CounterVec // by request code name; "unsupported" for the rest
	registrations  prometheus.Counter
	brokersExpired prometheus.Counter
	brokers        prometheus.Gauge
	topics         prometheus.Gauge

	// byCode caches the request counters of the codes the processor serves, so that counting
	// a request is one map read, not a label lookup.
	byCode      map[codec.RequestCode]prometheus.Counter
	unsupported prometheus.Counter
}

// servedCodes are the request codes the processor answers (everything else counts as
// "unsupported").
var servedCodes = []codec.RequestCode{
	codec.RequestRegisterBroker, codec.RequestUnregisterBroker, codec.RequestGetRouteInfoByTopic,
	codec.RequestGetBrokerClusterInfo, codec.RequestGetAllTopicListFromNameServer,
	codec.RequestDeleteTopicInNamesrv, codec.RequestPutKVConfig, codec.RequestGetKVConfig,
	codec.RequestDeleteKVConfig, codec.RequestGetKVListByNamespace, codec.RequestGetTopicsByCluster,
	codec.RequestGetSystemTopicListFromNS, codec.RequestQueryDataVersion,
	codec.RequestWipeWritePermOfBroker, codec.RequestAddWritePermOfBroker,
	codec.RequestRegisterTopicInNamesrv, codec.RequestBrokerHeartbeat,
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "ringmq", Subsystem: "namesrv", Name: "requests_total",
			Help: "Requests received, by request code name (unsupported codes as \"unsupported\").",
		}, []string{"code"}),
		registrations: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ringmq", Subsystem: "namesrv", Name: "broker_registrations_total",
			Help: "REGISTER_BROKER requests accepted.",
		}),
		brokersExpired: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ringmq", Subsystem: "namesrv", Name: "brokers_expired_total",
			Help: "Broker addresses dropped for not re-registering within their heartbeat timeout.",
		}),
		brokers: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ringmq", Subsystem: "namesrv", Name: "brokers",
			Help: "Live registered broker addresses.",
		}),
		topics: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "ringmq", Subsystem: "namesrv", Name: "topics",
			Help: "Topics with a route.",
		}),
		byCode: make(map[codec.RequestCode]prometheus.Counter, len(servedCodes)),
	}
	for _, c := range servedCodes {
		m.byCode[c] = m.requests.WithLabelValues(c.String())
	}
	m.unsupported = m.requests.WithLabelValues("unsupported")
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.requests, m.registrations, m.brokersExpired, m.brokers, m.topics} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("namesrv: register metrics: %w", err)
		}
	}
	return m, nil
}

// request counts one request.
func (m *metrics) request(code codec.RequestCode) {
	if c, ok := m.byCode[code]; ok {
		c.Inc()
		return
	}
	m.unsupported.Inc()
}
