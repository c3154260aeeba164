package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Per topic and per consumer group × topic series (METRICS.md), with bounded labels.
//
// The hot paths (a put, a pull) add to plain atomic counters found in a copy-on-write map read
// without a lock: no label formatting and no allocation per message. The labels are made only at
// scrape time, by topicCollector. The first metricsMaxTopics topics and metricsMaxGroupTopics
// group×topic pairs seen keep their own series for the life of the process (counters must not
// go backwards); the ones after them share the series labelled <other>, so a topic storm costs a
// bounded amount of memory and series.

// flowCounters are one label set's message and byte counts, and the calls (puts, pulls that
// found messages) that added them: RocketMQ's broker stats windows sample the same counters
// (brokerstats, metrics_stats.go).
type flowCounters struct {
	messages atomic.Int64
	bytes    atomic.Int64
	calls    atomic.Int64
	// queues: a pair's pull latency by queue ID (RocketMQ's GROUP_GET_LATENCY), grown when a
	// higher queue is first pulled; nil for puts and send-backs.
	queues atomic.Pointer[[]*queueLatency]
}

// queueLatency is one queue's pulls that found messages and the milliseconds they took.
type queueLatency struct {
	ms, calls atomic.Int64
}

// latencyQueuesMax bounds the queues of a pair with GROUP_GET_LATENCY counters: pulls from a
// queue ID at or past it are not timed.
const latencyQueuesMax = 1024

// latencyGrowMu serializes the growth of the queues slices (once per pair and higher queue).
var latencyGrowMu sync.Mutex

// addLatency counts a pull from queueID that found messages and took ms. It allocates only when
// the pair's queue slice must grow.
func (c *flowCounters) addLatency(queueID int32, ms int64) {
	if queueID < 0 || queueID >= latencyQueuesMax {
		return
	}
	qs := c.queues.Load()
	if qs == nil || int(queueID) >= len(*qs) {
		qs = c.growQueues(int(queueID) + 1)
	}
	q := (*qs)[queueID]
	q.ms.Add(ms)
	q.calls.Add(1)
}

// growQueues makes room for at least n queues: copy on write of the pointers, so the counters
// there are stay where they are (the stats windows know them by address).
func (c *flowCounters) growQueues(n int) *[]*queueLatency {
	latencyGrowMu.Lock()
	defer latencyGrowMu.Unlock()
	var old []*queueLatency
	if qs := c.queues.Load(); qs != nil {
		if len(*qs) >= n {
			return qs
		}
		old = *qs
	}
	next := make([]*queueLatency, n)
	copy(next, old)
	for i := len(old); i < n; i++ {
		next[i] = &queueLatency{}
	}
	c.queues.Store(&next)
	return &next
}

// eachQueue visits the queues with latency counters.
func (c *flowCounters) eachQueue(f func(queueID int32, q *queueLatency)) {
	qs := c.queues.Load()
	if qs == nil {
		return
	}
	for i, q := range *qs {
		f(int32(i), q)
	}
}

// groupTopic is a consumer group × topic label pair.
type groupTopic struct{ group, topic string }

// cappedTable maps keys to counters, giving at most max keys their own. Safe for concurrent use;
// get does not lock or allocate once its key is in the table (or the table is full).
type cappedTable[K comparable] struct {
	max     int
	entries atomic.Pointer[map[K]*flowCounters]
	full    atomic.Bool
	other   flowCounters
	mu      sync.Mutex // serializes additions
}

func newCappedTable[K comparable](max int) *cappedTable[K] {
	t := &cappedTable[K]{max: max}
	t.entries.Store(&map[K]*flowCounters{})
	return t
}

// get returns k's counters, or the shared <other> counters when k has none and the table is full.
func (t *cappedTable[K]) get(k K) *flowCounters {
	if c, ok := (*t.entries.Load())[k]; ok {
		return c
	}
	if t.full.Load() {
		return &t.other
	}
	return t.add(k)
}

func (t *cappedTable[K]) add(k K) *flowCounters {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.entries.Load()
	if c, ok := old[k]; ok {
		return c
	}
	if len(old) >= t.max {
		t.full.Store(true)
		return &t.other
	}
	// Copy on write: at most max copies over the process's life, each of fewer than max entries.
	next := make(map[K]*flowCounters, len(old)+1)
	for key, c := range old {
		next[key] = c
	}
	c := &flowCounters{}
	next[k] = c
	t.entries.Store(&next)
	return c
}

// has reports whether k has counters of its own.
func (t *cappedTable[K]) has(k K) bool {
	_, ok := (*t.entries.Load())[k]
	return ok
}

// each calls f for every key with counters of its own (not <other>).
func (t *cappedTable[K]) each(f func(k K, c *flowCounters)) {
	for k, c := range *t.entries.Load() {
		f(k, c)
	}
}

// flowStats are the broker's per-topic put and per-pair pull and send-back counters.
type flowStats struct {
	puts      *cappedTable[string]
	pulls     *cappedTable[groupTopic]
	sentBacks *cappedTable[groupTopic] // by the topic the message was first sent to
}

func newFlowStats(maxTopics, maxPairs int) *flowStats {
	return &flowStats{puts: newCappedTable[string](maxTopics), pulls: newCappedTable[groupTopic](maxPairs),
		sentBacks: newCappedTable[groupTopic](maxPairs)}
}

// sentBack counts a message a group sent back for another try (or to its dead-letter queue),
// by the topic it was first sent to.
func (s *flowStats) sentBack(group, topic string) {
	c := s.sentBacks.get(groupTopic{group, topic})
	c.messages.Add(1)
	c.calls.Add(1)
}

// put counts a stored put of messages records and bytes bytes to topic.
func (s *flowStats) put(topic string, messages, bytes int64) {
	c := s.puts.get(topic)
	c.messages.Add(messages)
	c.bytes.Add(bytes)
	c.calls.Add(1)
}

// pulled counts messages returned to a group's pull from a topic's queue, and the
// milliseconds the pull took.
func (s *flowStats) pulled(group, topic string, queueID int32, messages, bytes, ms int64) {
	c := s.pulls.get(groupTopic{group, topic})
	c.messages.Add(messages)
	c.bytes.Add(bytes)
	c.calls.Add(1)
	if c != &s.pulls.other {
		c.addLatency(queueID, ms)
	}
}

// meteredStore counts what passes through the store for the planes: puts per topic (every plane's,
// sends, send-backs, delayed deliveries, transactions) and, with pulls set, the messages a consumer
// group's pull returned. Everything else goes straight to the store.
type meteredStore struct {
	store.MessageStore
	stats *flowStats
	pulls bool // count GetMessage results with a group (the read plane's pulls)
	// now times the pulls (GROUP_GET_LATENCY): from the call to the store to its answer, as
	// RocketMQ times from the pull's start to its body read; nil: time.Now.
	now func() time.Time
}

func (m meteredStore) PutMessage(msg *codec.Message) (store.PutResult, error) {
	r, err := m.MessageStore.PutMessage(msg)
	if r.Status == store.PutOK {
		m.stats.put(msg.Topic, int64(r.MsgNum), int64(r.WroteBytes))
	}
	return r, err
}

func (m meteredStore) PutMessages(batch *store.BatchPut) (store.PutResult, error) {
	r, err := m.MessageStore.PutMessages(batch)
	if r.Status == store.PutOK && len(batch.Messages) > 0 {
		m.stats.put(batch.Messages[0].Topic, int64(r.MsgNum), int64(r.WroteBytes))
	}
	return r, err
}

func (m meteredStore) PutGroup(g *store.PutGroup) error {
	err := m.MessageStore.PutGroup(g)
	for i, r := range g.Results {
		if r.Status == store.PutOK {
			m.stats.put(g.Topic(i), int64(r.MsgNum), int64(r.WroteBytes))
		}
	}
	return err
}

func (m meteredStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int,
	filter store.MessageFilter) (*store.GetMessageResult, error) {
	if !m.pulls || group == "" {
		return m.MessageStore.GetMessage(group, topic, queueID, offset, maxMsgNums, maxBytes, filter)
	}
	now := m.now
	if now == nil {
		now = time.Now
	}
	start := now()
	r, err := m.MessageStore.GetMessage(group, topic, queueID, offset, maxMsgNums, maxBytes, filter)
	if err == nil && r != nil && r.MessageCount > 0 {
		m.stats.pulled(group, topic, queueID, int64(r.MessageCount), int64(r.BufferTotalSize),
			now().Sub(start).Milliseconds())
	}
	return r, err
}

// consumerLagLookupsPerScrape bounds the records a scrape reads to date the oldest unconsumed
// message: a queue whose committed offset did not move since the last scrape reuses the date it
// had, so a steady state costs no reads; past the bound, queues keep last scrape's date.
const consumerLagLookupsPerScrape = 256

// topicCollector exports the flow counters and, at scrape time, every group's committed offsets,
// lag and the age of its oldest unconsumed message from the offset table and the store.
type topicCollector struct {
	stats   *flowStats
	store   store.MessageStore
	offsets func() []store.ConsumerOffset
	clock   func() time.Time

	putMessages, putBytes, pulledMessages, pulledBytes *prometheus.Desc
	sentBack                                           *prometheus.Desc
	committed, lagMessages, lagSeconds                 *prometheus.Desc

	mu      sync.Mutex // one scrape at a time owns dated
	dated   map[queueOfGroup]datedOffset
	lookups atomic.Int64 // records read by scrapes (tests)
}

type queueOfGroup struct {
	group, topic string
	queueID      int32
}

// datedOffset is the store time (ms) of the message at a committed offset, as last read.
type datedOffset struct {
	offset, storeTimeMs int64
}

func newTopicCollector(stats *flowStats, st store.MessageStore, offsets func() []store.ConsumerOffset,
	clock func() time.Time) *topicCollector {
	topic := []string{"topic"}
	pair := []string{"group", "topic"}
	return &topicCollector{
		stats: stats, store: st, offsets: offsets, clock: clock, dated: map[queueOfGroup]datedOffset{},
		putMessages: prometheus.NewDesc("ringmq_broker_topic_put_messages_total",
			"Messages stored per topic (sends, batches, send-backs, delayed deliveries).", topic, nil),
		putBytes: prometheus.NewDesc("ringmq_broker_topic_put_bytes_total",
			"CommitLog bytes stored per topic (whole records).", topic, nil),
		pulledMessages: prometheus.NewDesc("ringmq_broker_consumer_pulled_messages_total",
			"Messages returned to a consumer group's pulls, per group and topic.", pair, nil),
		pulledBytes: prometheus.NewDesc("ringmq_broker_consumer_pulled_bytes_total",
			"CommitLog bytes returned to a consumer group's pulls, per group and topic.", pair, nil),
		sentBack: prometheus.NewDesc("ringmq_broker_consumer_sent_back_messages_total",
			"Messages a consumer group sent back for another try or to its dead-letter queue, per group and the topic they were first sent to.", pair, nil),
		committed: prometheus.NewDesc("ringmq_broker_consumer_offset",
			"A group's committed offsets in a topic, summed over the topic's queues.", pair, nil),
		lagMessages: prometheus.NewDesc("ringmq_broker_consumer_lag_messages",
			"Messages stored and not yet consumed by the group (queue max offset minus committed offset, summed over queues).", pair, nil),
		lagSeconds: prometheus.NewDesc("ringmq_broker_consumer_lag_seconds",
			"Age of the group's oldest unconsumed message in the topic (0 when caught up).", pair, nil),
	}
}

func (c *topicCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.putMessages, c.putBytes, c.pulledMessages, c.pulledBytes, c.sentBack,
		c.committed, c.lagMessages, c.lagSeconds} {
		ch <- d
	}
}

// pairLag is one label pair's offset figures in a scrape.
type pairLag struct {
	committed, lag int64
	oldestMs       int64 // store time of the oldest unconsumed message; 0: none
}

func (c *topicCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	c.stats.puts.each(func(topic string, f *flowCounters) {
		counter(c.putMessages, f.messages.Load(), topic)
		counter(c.putBytes, f.bytes.Load(), topic)
	})
	if c.stats.puts.full.Load() {
		counter(c.putMessages, c.stats.puts.other.messages.Load(), otherLabel)
		counter(c.putBytes, c.stats.puts.other.bytes.Load(), otherLabel)
	}
	c.stats.pulls.each(func(k groupTopic, f *flowCounters) {
		counter(c.pulledMessages, f.messages.Load(), k.group, k.topic)
		counter(c.pulledBytes, f.bytes.Load(), k.group, k.topic)
	})

	c.stats.sentBacks.each(func(k groupTopic, f *flowCounters) {
		counter(c.sentBack, f.messages.Load(), k.group, k.topic)
	})
	if c.stats.sentBacks.full.Load() {
		counter(c.sentBack, c.stats.sentBacks.other.messages.Load(), otherLabel, otherLabel)
	}

	lags := c.scrapeLag()
	if c.stats.pulls.full.Load() {
		counter(c.pulledMessages, c.stats.pulls.other.messages.Load(), otherLabel, otherLabel)
		counter(c.pulledBytes, c.stats.pulls.other.bytes.Load(), otherLabel, otherLabel)
	}
	nowMs := c.clock().UnixMilli()
	for k, l := range lags {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, k.group, k.topic)
		}
		gauge(c.committed, float64(l.committed))
		gauge(c.lagMessages, float64(l.lag))
		age := 0.0
		if l.oldestMs > 0 && nowMs > l.oldestMs {
			age = float64(nowMs-l.oldestMs) / 1000
		}
		gauge(c.lagSeconds, age)
	}
}

// scrapeLag sums every committed offset into its label pair (the <other> pair past the cap).
func (c *topicCollector) scrapeLag() map[groupTopic]pairLag {
	c.mu.Lock()
	defer c.mu.Unlock()
	lags := map[groupTopic]pairLag{}
	seen := make(map[queueOfGroup]struct{}, len(c.dated))
	budget := consumerLagLookupsPerScrape
	for _, o := range c.offsets() {
		key := groupTopic{o.Group, o.Topic}
		if !c.stats.pulls.has(key) {
			// A pair known only from its offsets takes a slot as a pull would; past the cap it is <other>.
			if c.stats.pulls.get(key) == &c.stats.pulls.other {
				key = groupTopic{otherLabel, otherLabel}
			}
		}
		l := lags[key]
		l.committed += o.Offset
		maxOffset := c.store.GetMaxOffsetInQueue(o.Topic, o.QueueID)
		if lag := maxOffset - o.Offset; lag > 0 {
			l.lag += lag
			q := queueOfGroup{o.Group, o.Topic, o.QueueID}
			seen[q] = struct{}{}
			at := max(o.Offset, c.store.GetMinOffsetInQueue(o.Topic, o.QueueID))
			d, ok := c.dated[q]
			if (!ok || d.offset != at) && budget > 0 {
				budget--
				c.lookups.Add(1)
				if ms := c.storeTimeAt(o.Topic, o.QueueID, at); ms > 0 {
					d, ok = datedOffset{offset: at, storeTimeMs: ms}, true
					c.dated[q] = d
				}
			}
			if ok && (l.oldestMs == 0 || d.storeTimeMs < l.oldestMs) {
				l.oldestMs = d.storeTimeMs
			}
		}
		lags[key] = l
	}
	for q := range c.dated { // caught up or gone: forget, so the cache stays as small as the lagging queues
		if _, ok := seen[q]; !ok {
			delete(c.dated, q)
		}
	}
	return lags
}

// storeTimeAt is the store time (ms) of the message at a queue offset, 0 when it cannot be read.
func (c *topicCollector) storeTimeAt(topic string, queueID int32, offset int64) int64 {
	return store.RecordStoreTime(c.store, c.store.GetCommitLogOffsetInQueue(topic, queueID, offset))
}
