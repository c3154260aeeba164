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
	// GROUP_GET_LATENCY: per queue of the pairs with series of their own.
	m.Add(brokerstats.GroupGetLatency, func(yield func(brokerstats.Key, brokerstats.Counter) bool) {
		for k, c := range *flows.pulls.entries.Load() {
			more := true
			c.eachQueue(func(queueID int32, q *queueLatency) {
				if more {
					key := brokerstats.Key{Kind: brokerstats.KeyQueueTopicGroup, Name: k.topic, Group: k.group, Queue: queueID}
					more = yield(key, brokerstats.Counter{Value: &q.ms, Times: &q.calls})
				}
			})
			if !more {
				return
			}
		}
	})
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
		Help: "Items of RocketMQ's broker stats windows (VIEW_BROKER_STATS_DATA) with samples, about 1.2 KiB each: one per stats name and topic, group and topic, or queue of a group and topic, with series of their own (and per delay level); an item idle for a day or of a deleted topic or group is dropped."},
		func() float64 { return float64(m.Items()) })
}

// scheduleConsumerGroup is the group RocketMQ counts delayed deliveries under (MixAll.SCHEDULE_CONSUMER_GROUP).
const scheduleConsumerGroup = "SCHEDULE_CONSUMER"

// scheduleDeliveries is what the schedule service counts per delay level (delay.ScheduleMessageService).
type scheduleDeliveries interface {
	LevelDeliveries(index int) (msgs, bytes *atomic.Int64)
}

// addScheduleStats adds the per-queue items RocketMQ 4.9.8 keeps for delayed messages, each
// delay level's queue of SCHEDULE_TOPIC_XXXX since the broker started:
//
//	QUEUE_PUT_NUMS  topic@queue        messages stored in it (what its ConsumeQueue grew by)
//	QUEUE_PUT_SIZE  topic@queue        their record bytes (the new ConsumeQueue entries' sizes)
//	QUEUE_GET_NUMS  topic@queue@group  messages delivered from it, group SCHEDULE_CONSUMER
//	QUEUE_GET_SIZE  topic@queue@group  the bytes their copies were written in
//
// Each stored or delivered message is one call, as in RocketMQ. The put items read the store's
// queue offsets and the new ConsumeQueue entries when sampled, so nothing is counted on the send
// path; the get items are the schedule service's per-level counters.
func addScheduleStats(m *brokerstats.Manager, st store.MessageStore, sched scheduleDeliveries, levels int) {
	type queuePuts struct {
		put, bytes atomic.Int64 // since start
		base       int64        // the queue's end when the broker was built
		scanned    int64        // the queue's end when last sampled
	}
	queues := make([]queuePuts, levels)
	stored := func(i int) int64 { return max(st.GetMaxOffsetInQueue(metadata.ScheduleTopic, int32(i)), 0) }
	for i := range queues {
		queues[i].base = stored(i)
		queues[i].scanned = queues[i].base
	}
	var mu sync.Mutex // the two put sources take turns refreshing queues
	refresh := func() {
		for i := range queues {
			q := &queues[i]
			end := stored(i)
			q.put.Store(max(end-q.base, 0))
			var n int64
			for off := q.scanned; off < end; off++ {
				if e, ok := st.ConsumeQueueEntry(metadata.ScheduleTopic, int32(i), off); ok {
					n += int64(e.Size)
				}
			}
			q.bytes.Add(n)
			q.scanned = end
		}
	}
	putSource := func(value func(*queuePuts) *atomic.Int64) brokerstats.Source {
		return func(yield func(brokerstats.Key, brokerstats.Counter) bool) {
			mu.Lock()
			refresh()
			mu.Unlock()
			for i := range queues {
				key := brokerstats.Key{Kind: brokerstats.KeyTopicQueue, Name: metadata.ScheduleTopic, Queue: int32(i)}
				if !yield(key, brokerstats.Counter{Value: value(&queues[i]), Times: &queues[i].put}) {
					return
				}
			}
		}
	}
	getSource := func(size bool) brokerstats.Source {
		return func(yield func(brokerstats.Key, brokerstats.Counter) bool) {
			for i := range levels {
				msgs, bytes := sched.LevelDeliveries(i)
				if msgs == nil {
					return
				}
				c := brokerstats.Counter{Value: msgs, Times: msgs}
				if size {
					c.Value = bytes
				}
				key := brokerstats.Key{Kind: brokerstats.KeyTopicQueueGroup, Name: metadata.ScheduleTopic,
					Queue: int32(i), Group: scheduleConsumerGroup}
				if !yield(key, c) {
					return
				}
			}
		}
	}
	m.Add(brokerstats.QueuePutNums, putSource(func(q *queuePuts) *atomic.Int64 { return &q.put }))
	m.Add(brokerstats.QueuePutSize, putSource(func(q *queuePuts) *atomic.Int64 { return &q.bytes }))
	m.Add(brokerstats.QueueGetNums, getSource(false))
	m.Add(brokerstats.QueueGetSize, getSource(true))
}
