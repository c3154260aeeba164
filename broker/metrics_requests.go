package broker

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
)

// Per request code: requests, errors by response code, latency. Counting runs on every request,
// so a code's series are resolved once (the first time it is seen) into a slot of an array indexed
// by the code: after that a request costs an array index and atomic adds, no map lookup, no label
// formatting, no allocation. Codes without a RocketMQ name, and the few named ones above
// requestCodeSlots (5.x POP codes ringmq does not serve), share code="<other>", so a client
// sending made-up codes cannot grow the series.

const (
	// requestCodeSlots covers every request code ringmq serves (the highest is 904).
	requestCodeSlots = 1024
	// responseCodeSlots covers the response codes the broker answers with (the highest is 215).
	responseCodeSlots = 256
	// otherLabel is the label value of series shared by whatever is over a cap or has no name;
	// '<' and '>' are not allowed in topic and group names, so it never collides with one.
	otherLabel = "<other>"
)

// requestLatencyBuckets: 50 µs doubling to ~26 s, so a loopback send (~100 µs), a SYNC_FLUSH
// send (~1 ms) and a long-polling pull held 15–20 s all fall inside the range.
var requestLatencyBuckets = prometheus.ExponentialBuckets(50e-6, 2, 20)

// requestMetrics are the per-code series. Safe for concurrent use.
type requestMetrics struct {
	clock    func() time.Time
	requests *prometheus.CounterVec   // code
	errors   *prometheus.CounterVec   // code, response
	latency  *prometheus.HistogramVec // code

	slots [requestCodeSlots]atomic.Pointer[codeMetrics]
	other atomic.Pointer[codeMetrics]
	mu    sync.Mutex // serializes the first resolution of a slot
}

// codeMetrics are one request code's series, resolved once.
type codeMetrics struct {
	name     string
	requests prometheus.Counter
	latency  prometheus.Observer
	errors   [responseCodeSlots]atomic.Pointer[prometheus.Counter] // by response code, resolved on first use
}

func newRequestMetrics(requests *prometheus.CounterVec, clock func() time.Time) *requestMetrics {
	return &requestMetrics{
		clock:    clock,
		requests: requests,
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ringmq_broker_request_errors_total",
			Help: "Responses other than SUCCESS, by request code and response code (PULL_NOT_FOUND and PULL_RETRY_IMMEDIATELY, a pull's \"nothing new\", are not errors).",
		}, []string{"code", "response"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ringmq_broker_request_duration_seconds",
			Help:    "Time from a request's arrival to its response being handed to the connection, by request code; a held pull (long polling) counts its wait.",
			Buckets: requestLatencyBuckets,
		}, []string{"code"}),
	}
}

func (m *requestMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.errors, m.latency}
}

// forCode returns code's series, resolving them the first time.
func (m *requestMetrics) forCode(code int32) *codeMetrics {
	if code >= 0 && code < requestCodeSlots {
		if cm := m.slots[code].Load(); cm != nil {
			return cm
		}
	} else if cm := m.other.Load(); cm != nil {
		return cm
	}
	return m.resolve(code)
}

func (m *requestMetrics) resolve(code int32) *codeMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	name := codec.RequestCode(code).String()
	named := code >= 0 && code < requestCodeSlots && !strings.HasPrefix(name, "RequestCode(")
	if !named {
		if cm := m.other.Load(); cm != nil {
			m.storeSlot(code, cm)
			return cm
		}
		name = otherLabel
	} else if cm := m.slots[code].Load(); cm != nil {
		return cm
	}
	cm := &codeMetrics{name: name, requests: m.requests.WithLabelValues(name), latency: m.latency.WithLabelValues(name)}
	if !named {
		m.other.Store(cm)
	}
	m.storeSlot(code, cm)
	return cm
}

// storeSlot remembers cm for code when code has a slot. Caller holds m.mu.
func (m *requestMetrics) storeSlot(code int32, cm *codeMetrics) {
	if code >= 0 && code < requestCodeSlots {
		m.slots[code].Store(cm)
	}
}

// received counts a request (every request, one-way ones and those ACL refuses included).
func (m *requestMetrics) received(code int32) { m.forCode(code).requests.Inc() }

// answered records a response: its latency (when the request's arrival is known) and, unless it is
// a success, an error by response code. It is remoting.Replies' observer.
func (m *requestMetrics) answered(requestCode int32, response codec.ResponseCode, received time.Time) {
	cm := m.forCode(requestCode)
	if !received.IsZero() {
		cm.latency.Observe(m.clock().Sub(received).Seconds())
	}
	switch response {
	case codec.ResponseSuccess, codec.ResponsePullNotFound, codec.ResponsePullRetryImmediately:
		return
	}
	if response < 0 || response >= responseCodeSlots {
		m.errors.WithLabelValues(cm.name, response.String()).Inc() // a code the broker does not answer with
		return
	}
	c := cm.errors[response].Load()
	if c == nil {
		counter := m.errors.WithLabelValues(cm.name, response.String())
		cm.errors[response].CompareAndSwap(nil, &counter)
		c = cm.errors[response].Load()
	}
	(*c).Inc()
}
