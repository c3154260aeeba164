// Package brokerstats keeps RocketMQ's broker statistics (BrokerStatsManager): for each stats
// name (TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...) and key (a topic, topic@group, a cluster name) the
// sum, rate and average of the last minute, hour and day, as VIEW_BROKER_STATS_DATA answers them
// and GET_CONSUME_STATS' consumeTps reads them.
//
// It keeps no counters of its own: every item samples a cumulative counter pair that the hot
// paths already add to for the Prometheus series (broker/metrics_topics.go), so a put or a pull
// costs nothing here. Sample, called every SampleInterval, reads each source's counters and
// appends to three rings per item, as RocketMQ's StatsItem does:
//
//	minute  a sample every 10 s, the newest 7 kept  (60 s between the oldest and newest)
//	hour    a sample every 10 min, the newest 7     (60 min)
//	day     a sample every hour, the newest 25      (24 h)
//
// A window's figures are those of its oldest and newest samples: sum = value difference,
// tps = sum per second between them, avgpt = sum / difference of times (the calls that added to
// the value). An item's first sample in a window is preceded by a made-up one a period earlier
// at the counts the item started from, so a new item reports what it counted since it appeared.
//
// Memory is bounded: items exist only for counters that have their own Prometheus labels (the
// metricsMaxTopics and metricsMaxGroupTopics caps), an item of a topic or group that did not move
// for a day, or whose topic or group was deleted, drops its rings (Forget; RocketMQ deletes the
// item) and answers "not exist" until it moves again, starting afresh from the counts it had.
package brokerstats

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stats names RocketMQ 4.9.8's broker keeps and ringmq samples (RocketMQ's Stats constants).
const (
	TopicPutNums    = "TOPIC_PUT_NUMS"  // key topic: messages stored; times: puts
	TopicPutSize    = "TOPIC_PUT_SIZE"  // key topic: bytes stored; times: puts
	GroupGetNums    = "GROUP_GET_NUMS"  // key topic@group: messages pulled; times: pulls that found some
	GroupGetSize    = "GROUP_GET_SIZE"  // key topic@group: bytes pulled; times: pulls that found some
	SendBackPutNums = "SNDBCK_PUT_NUMS" // key topic@group: messages sent back by consumers
	BrokerPutNums   = "BROKER_PUT_NUMS" // key cluster name: messages stored by the broker
	BrokerGetNums   = "BROKER_GET_NUMS" // key cluster name: messages pulled from the broker
	// RocketMQ 4.9.8 counts per queue only the delayed messages: stored in a delay level's queue
	// of SCHEDULE_TOPIC_XXXX (key SCHEDULE_TOPIC_XXXX@<level−1>) and delivered from it (key
	// SCHEDULE_TOPIC_XXXX@<level−1>@SCHEDULE_CONSUMER); times: messages.
	QueuePutNums = "QUEUE_PUT_NUMS" // messages stored
	QueuePutSize = "QUEUE_PUT_SIZE" // bytes stored
	QueueGetNums = "QUEUE_GET_NUMS" // messages delivered
	QueueGetSize = "QUEUE_GET_SIZE" // bytes of their delivered copies
	// GroupGetLatency is keyed queueId@topic@group (RocketMQ's default, enableDetailStat=true):
	// milliseconds the pulls that found messages took; times: those pulls.
	GroupGetLatency = "GROUP_GET_LATENCY"
)

// SampleInterval is how often Sample must be called (RocketMQ's samplingInSeconds).
const SampleInterval = 10 * time.Second

// Window lengths and sizes (RocketMQ's StatsItem).
const (
	hourSampleInterval = 10 * time.Minute
	daySampleInterval  = time.Hour
	minuteSamples      = 7
	hourSamples        = 7
	daySamples         = 25
	// idleExpiry: an item whose value has not moved for this long drops its rings (its windows are
	// all zero by then).
	idleExpiry = 24*time.Hour + daySampleInterval
)

// Snapshot is one window's figures (RocketMQ's StatsSnapshot).
type Snapshot struct {
	Sum   int64   // value added in the window
	Tps   float64 // Sum per second
	Avgpt float64 // Sum per call (0 when no call was counted)
	Times int64   // calls counted in the window
}

// Data is an item's three windows (RocketMQ's BrokerStatsData).
type Data struct {
	Minute, Hour, Day Snapshot
}

// Counter is a cumulative value and the number of calls that added to it; the hot paths own
// them. Times may be nil (RocketMQ's BROKER_* items count no calls).
type Counter struct {
	Value, Times *atomic.Int64
}

func (c Counter) load() (value, times int64) {
	value = c.Value.Load()
	if c.Times != nil {
		times = c.Times.Load()
	}
	return value, times
}

// KeyKind says how a Key is written.
type KeyKind uint8

const (
	// KeyName is Name alone: a topic (TOPIC_PUT_*), a cluster name (BROKER_*).
	KeyName KeyKind = iota
	// KeyTopicGroup is topic@group (GROUP_GET_*, SNDBCK_PUT_NUMS).
	KeyTopicGroup
	// KeyTopicQueue is topic@queueId (QUEUE_PUT_*).
	KeyTopicQueue
	// KeyTopicQueueGroup is topic@queueId@group (QUEUE_GET_*).
	KeyTopicQueueGroup
	// KeyQueueTopicGroup is queueId@topic@group (GROUP_GET_LATENCY).
	KeyQueueTopicGroup
)

// Key identifies an item without building its text: sources pass it by value at every sample,
// and its text (RocketMQ's statsKey) is built only when the item is created.
type Key struct {
	Kind  KeyKind
	Name  string // the topic, or the cluster name
	Group string // the group of KeyTopicGroup, KeyTopicQueueGroup and KeyQueueTopicGroup
	Queue int32  // the queue of KeyTopicQueue, KeyTopicQueueGroup and KeyQueueTopicGroup
}

// String is RocketMQ's statsKey (BrokerStatsManager.buildStatsKey).
func (k Key) String() string {
	switch k.Kind {
	case KeyTopicGroup:
		return k.Name + "@" + k.Group
	case KeyTopicQueue:
		return k.Name + "@" + strconv.Itoa(int(k.Queue))
	case KeyTopicQueueGroup:
		return k.Name + "@" + strconv.Itoa(int(k.Queue)) + "@" + k.Group
	case KeyQueueTopicGroup:
		return strconv.Itoa(int(k.Queue)) + "@" + k.Name + "@" + k.Group
	}
	return k.Name
}

// Source yields the counters of one stats name with their keys; yield returns false to stop.
// It runs on the sampling goroutine and must not block.
type Source func(yield func(key Key, c Counter) bool)

// sample is one CallSnapshot: when, and the counts then.
type sample struct {
	atMs, times, value int64
}

// ring keeps the newest samples of one window.
type ring struct {
	buf        []sample
	next, size int
}

func newRing(n int) ring { return ring{buf: make([]sample, n)} }

// add appends s, first a made-up sample one period earlier at base when the ring is empty
// (StatsItem.samplingInSeconds).
func (r *ring) add(s sample, period time.Duration, base sample) {
	if r.size == 0 {
		base.atMs = s.atMs - period.Milliseconds()
		r.push(base)
	}
	r.push(s)
}

func (r *ring) push(s sample) {
	r.buf[r.next] = s
	r.next = (r.next + 1) % len(r.buf)
	r.size = min(r.size+1, len(r.buf))
}

// snapshot computes the window's figures from its oldest and newest samples
// (StatsItem.computeStatsData).
func (r *ring) snapshot() Snapshot {
	if r.size == 0 {
		return Snapshot{}
	}
	first := r.buf[(r.next-r.size+len(r.buf))%len(r.buf)]
	last := r.buf[(r.next-1+len(r.buf))%len(r.buf)]
	s := Snapshot{Sum: last.value - first.value, Times: last.times - first.times}
	if span := last.atMs - first.atMs; span > 0 {
		s.Tps = float64(s.Sum) * 1000 / float64(span)
	}
	if s.Times > 0 {
		s.Avgpt = float64(s.Sum) / float64(s.Times)
	}
	return s
}

// item is one stats key's windows. While dormant (forgotten, or idle for a day) it keeps only
// the counts it had, and its rings are nil.
type item struct {
	key         Key
	text        string
	counter     Counter
	base        sample // the counts the item (re)started from
	last        sample // the newest sample taken
	lastMovedMs int64
	dormant     bool
	minute      ring
	hour, day   ring
}

func (it *item) wake(now sample) {
	it.dormant = false
	it.minute, it.hour, it.day = newRing(minuteSamples), newRing(hourSamples), newRing(daySamples)
	it.lastMovedMs = now.atMs
}

// sleep drops the rings; the item restarts from the counts it has now.
func (it *item) sleep() {
	it.dormant = true
	it.base.value, it.base.times = it.counter.load()
	it.last = it.base
	it.minute, it.hour, it.day = ring{}, ring{}, ring{}
}

// set is one stats name's items (RocketMQ's StatsItemSet), by counter and by key text.
type set struct {
	name   string
	source Source
	byID   map[*atomic.Int64]*item
	byKey  map[string]*item
	// idleExpires: an item idle for a day drops its rings. Not for the broker's and the delay
	// levels' items, a fixed few that tools ask for whether or not there is traffic.
	idleExpires bool
}

// Manager holds every stats name's items. Safe for concurrent use: Sample runs on one
// goroutine, Get and Forget on any.
type Manager struct {
	mu       sync.Mutex
	sets     map[string]*set
	nextHour int64 // ms; the hour rings' next sample is due at the first Sample at or after it
	nextDay  int64
	sampled  bool
	items    atomic.Int64 // items with rings (the ringmq_broker_stats_items gauge)
}

// New returns a Manager without sources; Add them before the first Sample.
func New() *Manager {
	return &Manager{sets: map[string]*set{}}
}

// Add registers the source of a stats name.
func (m *Manager) Add(name string, src Source) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fixed := name == BrokerPutNums || name == BrokerGetNums || strings.HasPrefix(name, "QUEUE_")
	m.sets[name] = &set{name: name, source: src, byID: map[*atomic.Int64]*item{}, byKey: map[string]*item{},
		idleExpires: !fixed}
}

// Sample takes the 10-second samples of every item, and the 10-minute and hourly ones when they
// are due, at now. Call it every SampleInterval.
func (m *Manager) Sample(now time.Time) {
	nowMs := now.UnixMilli()
	m.mu.Lock()
	defer m.mu.Unlock()
	hourDue := !m.sampled || nowMs >= m.nextHour
	dayDue := !m.sampled || nowMs >= m.nextDay
	if hourDue {
		m.nextHour = nowMs + hourSampleInterval.Milliseconds()
	}
	if dayDue {
		m.nextDay = nowMs + daySampleInterval.Milliseconds()
	}
	m.sampled = true
	for _, s := range m.sets {
		s.source(func(key Key, c Counter) bool {
			m.sampleOne(s, key, c, nowMs, hourDue, dayDue)
			return true
		})
	}
}

// sampleOne samples one counter of s, creating, waking or putting to sleep its item. Caller
// holds m.mu.
func (m *Manager) sampleOne(s *set, key Key, c Counter, nowMs int64, hourDue, dayDue bool) {
	value, times := c.load()
	cur := sample{atMs: nowMs, times: times, value: value}
	it := s.byID[c.Value]
	switch {
	case it == nil:
		if value == 0 && times == 0 {
			return // nothing counted yet: RocketMQ has no item either
		}
		it = &item{key: key, text: key.String(), counter: c, dormant: true}
		s.byID[c.Value] = it
		it.wake(cur)
		s.byKey[it.text] = it
		m.items.Add(1)
	case it.dormant:
		if value == it.base.value && times == it.base.times {
			it.last = cur
			return
		}
		it.wake(cur)
		s.byKey[it.text] = it
		m.items.Add(1)
	}
	if value != it.last.value || times != it.last.times {
		it.lastMovedMs = nowMs
	}
	it.last = cur
	it.minute.add(cur, SampleInterval, it.base)
	if hourDue {
		it.hour.add(cur, hourSampleInterval, it.base)
	}
	if dayDue {
		it.day.add(cur, daySampleInterval, it.base)
	}
	if s.idleExpires && nowMs-it.lastMovedMs > idleExpiry.Milliseconds() {
		m.sleepLocked(s, it)
	}
}

// sleepLocked drops it's rings and its key. Caller holds m.mu.
func (m *Manager) sleepLocked(s *set, it *item) {
	if it.dormant {
		return
	}
	it.sleep()
	delete(s.byKey, it.text)
	m.items.Add(-1)
}

// Get returns the windows of a stats name's key (VIEW_BROKER_STATS_DATA); false when there is
// no such item (RocketMQ's "The stats <name> <key> not exist").
func (m *Manager) Get(name, key string) (Data, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sets[name]
	if s == nil {
		return Data{}, false
	}
	it := s.byKey[key]
	if it == nil {
		return Data{}, false
	}
	return Data{Minute: it.minute.snapshot(), Hour: it.hour.snapshot(), Day: it.day.snapshot()}, true
}

// MinuteTps is the last minute's rate of a key, 0 when it has no item
// (StatsItemSet.getStatsDataInMinute(key).getTps()).
func (m *Manager) MinuteTps(name, key string) float64 {
	d, _ := m.Get(name, key)
	return d.Minute.Tps
}

// Forget drops the items whose keys match (RocketMQ's onTopicDeleted and onGroupDeleted): they
// answer "not exist" until their counters move again.
func (m *Manager) Forget(match func(Key) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sets {
		for _, it := range s.byKey {
			if match(it.key) {
				m.sleepLocked(s, it)
			}
		}
	}
}

// ForgetTopic forgets every item of a deleted topic.
func (m *Manager) ForgetTopic(topic string) {
	m.Forget(func(k Key) bool { return k.Name == topic })
}

// ForgetGroup forgets every item of a deleted consumer group.
func (m *Manager) ForgetGroup(group string) {
	m.Forget(func(k Key) bool {
		return (k.Kind == KeyTopicGroup || k.Kind == KeyTopicQueueGroup || k.Kind == KeyQueueTopicGroup) && k.Group == group
	})
}

// Items is how many items have windows now.
func (m *Manager) Items() int64 { return m.items.Load() }
