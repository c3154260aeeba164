package broker

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/brokerstats"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/store"
)

// RocketMQ's broker stats windows (VIEW_BROKER_STATS_DATA, consumeTps) sample the counters the
// Prometheus series count (flowStats): one source, no second count on the hot paths. Only the
// label sets with series of their own have items; what shares <other> has none.

// newBrokerStats builds the stats windows over flows; clusterName keys the BROKER_* items.
func newBrokerStats(flows *flowStats, clusterName string) *brokerstats.Manager {
	m := brokerstats.New()
	topicSource := func(value func(*flowCounters) *atomic.Int64) brokerstats.Source {
		return func(yield func(brokerstats.Key, brokerstats.Counter) bool) {
			for topic, c := range *flows.puts.entries.Load() {
				if !yield(brokerstats.Key{Name: topic}, brokerstats.Counter{Value: value(c), Times: &c.calls}) {
					return
				}
			}
		}
	}
	pairSource := func(t *cappedTable[groupTopic], value func(*flowCounters) *atomic.Int64) brokerstats.Source {
		return func(yield func(brokerstats.Key, brokerstats.Counter) bool) {
			for k, c := range *t.entries.Load() {
				key := brokerstats.Key{Kind: brokerstats.KeyTopicGroup, Name: k.topic, Group: k.group}
				if !yield(key, brokerstats.Counter{Value: value(c), Times: &c.calls}) {
					return
				}
			}
		}
	}
	messages := func(c *flowCounters) *atomic.Int64 { return &c.messages }
	bytes := func(c *flowCounters) *atomic.Int64 { return &c.bytes }
	m.Add(brokerstats.TopicPutNums, topicSource(messages))
	m.Add(brokerstats.TopicPutSize, topicSource(bytes))
	m.Add(brokerstats.GroupGetNums, pairSource(flows.pulls, messages))
	m.Add(brokerstats.GroupGetSize, pairSource(flows.pulls, bytes))
	m.Add(brokerstats.SendBackPutNums, pairSource(flows.sentBacks, messages))
	// BROKER_PUT_NUMS and BROKER_GET_NUMS: every topic's (and pair's) messages, <other> included,
	// summed when sampled (RocketMQ counts them apart, without calls).
	var putTotal, getTotal atomic.Int64
	sum := func(t interface {
		each(func(*flowCounters))
	}, total *atomic.Int64) brokerstats.Source {
		return func(yield func(brokerstats.Key, brokerstats.Counter) bool) {
			var n int64
			t.each(func(c *flowCounters) { n += c.messages.Load() })
			total.Store(n)
			yield(brokerstats.Key{Name: clusterName}, brokerstats.Counter{Value: total})
		}
	}
	m.Add(brokerstats.BrokerPutNums, sum(allCounters[string]{flows.puts}, &putTotal))
	m.Add(brokerstats.BrokerGetNums, sum(allCounters[groupTopic]{flows.pulls}, &getTotal))
	return m
}

// allCounters visits a table's counters, <other>'s included.
type allCounters[K comparable] struct{ t *cappedTable[K] }

func (a allCounters[K]) each(f func(*flowCounters)) {
	a.t.each(func(_ K, c *flowCounters) { f(c) })
	f(&a.t.other)
}

// brokerStatsCollector is the size of the stats windows.
func brokerStatsCollector(m *brokerstats.Manager) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_broker_stats_items",
		Help: "Items of RocketMQ's broker stats windows (VIEW_BROKER_STATS_DATA) with samples, about 1.2 KiB each: one per stats name and topic, or group and topic, with series of their own; an item idle for a day or of a deleted topic or group is dropped."},
		func() float64 { return float64(m.Items()) })
}

// scheduleConsumerGroup is the group RocketMQ counts delayed deliveries under (MixAll.SCHEDULE_CONSUMER_GROUP).
const scheduleConsumerGroup = "SCHEDULE_CONSUMER"

// addScheduleStats adds the per-queue items RocketMQ 4.9.8 keeps for delayed messages:
// QUEUE_PUT_NUMS of each delay level's queue of SCHEDULE_TOPIC_XXXX (what its ConsumeQueue grew
// by) and QUEUE_GET_NUMS of the same queue and SCHEDULE_CONSUMER (how far delivery moved), both
// since the broker started. They read the store's queue offsets and the schedule service's
// cursors when sampled: nothing is counted on the put path. RocketMQ's QUEUE_*_SIZE are not kept.
func addScheduleStats(m *brokerstats.Manager, st store.MessageStore, cursors func() map[int32]int64, levels int) {
	type queueCounts struct {
		put, got         atomic.Int64 // since start
		putBase, gotBase int64        // when the broker was built
	}
	queues := make([]queueCounts, levels)
	read := func(i int, cur map[int32]int64) (stored, delivered int64) {
		return max(st.GetMaxOffsetInQueue(metadata.ScheduleTopic, int32(i)), 0), cur[int32(i+1)] // level = queue + 1
	}
	start := cursors()
	for i := range queues {
		queues[i].putBase, queues[i].gotBase = read(i, start)
	}
	var mu sync.Mutex // the two sources take turns refreshing queues
	refresh := func() {
		cur := cursors()
		for i := range queues {
			q := &queues[i]
			stored, delivered := read(i, cur)
			q.put.Store(max(stored-q.putBase, 0))
			q.got.Store(max(delivered-q.gotBase, 0))
		}
	}
	source := func(get bool) brokerstats.Source {
		return func(yield func(brokerstats.Key, brokerstats.Counter) bool) {
			mu.Lock()
			refresh()
			mu.Unlock()
			for i := range queues {
				key := brokerstats.Key{Kind: brokerstats.KeyTopicQueue, Name: metadata.ScheduleTopic, Queue: int32(i)}
				c := brokerstats.Counter{Value: &queues[i].put}
				if get {
					key.Kind, key.Group = brokerstats.KeyTopicQueueGroup, scheduleConsumerGroup
					c.Value = &queues[i].got
				}
				if !yield(key, c) {
					return
				}
			}
		}
	}
	m.Add(brokerstats.QueuePutNums, source(false))
	m.Add(brokerstats.QueueGetNums, source(true))
}
