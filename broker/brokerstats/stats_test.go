package brokerstats

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// counters is a test source: one counter pair per key.
type counters struct {
	keys   []Key
	values map[Key]*[2]atomic.Int64
}

func (c *counters) add(k Key, value, times int64) {
	if c.values == nil {
		c.values = map[Key]*[2]atomic.Int64{}
	}
	p := c.values[k]
	if p == nil {
		p = new([2]atomic.Int64)
		c.values[k] = p
		c.keys = append(c.keys, k)
	}
	p[0].Add(value)
	p[1].Add(times)
}

func (c *counters) source(yield func(Key, Counter) bool) {
	for _, k := range c.keys {
		p := c.values[k]
		if !yield(k, Counter{Value: &p[0], Times: &p[1]}) {
			return
		}
	}
}

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestNewItemCountsSinceItAppeared(t *testing.T) {
	var c counters
	m := New()
	m.Add(TopicPutNums, c.source)
	topic := Key{Name: "T"}
	m.Sample(t0)
	_, ok := m.Get(TopicPutNums, "T")
	require.False(t, ok, "no item before anything is counted")

	c.add(topic, 5, 2)
	m.Sample(t0.Add(SampleInterval))
	d, ok := m.Get(TopicPutNums, "T")
	require.True(t, ok)
	// The made-up first sample is one period before, at 0.
	require.Equal(t, Snapshot{Sum: 5, Tps: 0.5, Avgpt: 2.5, Times: 2}, d.Minute)
	// The hour and day rings sampled at t0 (before the item existed) and are not due again yet.
	require.Equal(t, Snapshot{}, d.Hour)
	require.Equal(t, Snapshot{}, d.Day)
	require.EqualValues(t, 1, m.Items())
	_, ok = m.Get(TopicPutSize, "T")
	require.False(t, ok, "a name without a source has no items")
}

func TestWindowsSlide(t *testing.T) {
	var c counters
	m := New()
	m.Add(GroupGetNums, c.source)
	k := Key{Kind: KeyTopicGroup, Name: "T", Group: "G"}
	require.Equal(t, "T@G", k.String())
	require.Equal(t, "S@2", Key{Kind: KeyTopicQueue, Name: "S", Queue: 2}.String())
	require.Equal(t, "S@2@C", Key{Kind: KeyTopicQueueGroup, Name: "S", Queue: 2, Group: "C"}.String())
	require.Equal(t, "3@T@G", Key{Kind: KeyQueueTopicGroup, Name: "T", Queue: 3, Group: "G"}.String())
	c.add(k, 1, 1)
	now := t0
	m.Sample(now) // first sample of every window: fake at 0 one period before, then 1
	d, _ := m.Get(GroupGetNums, "T@G")
	require.Equal(t, int64(1), d.Minute.Sum)
	require.InDelta(t, 1.0/600, d.Hour.Tps, 1e-12)
	require.InDelta(t, 1.0/3600, d.Day.Tps, 1e-12)

	// 2 hours at 3 messages per 10 s in 1 pull each.
	for range 720 {
		now = now.Add(SampleInterval)
		c.add(k, 3, 1)
		m.Sample(now)
	}
	d, _ = m.Get(GroupGetNums, "T@G")
	// Minute: 7 samples, 60 s apart at the ends.
	require.Equal(t, Snapshot{Sum: 18, Tps: 0.3, Avgpt: 3, Times: 6}, d.Minute)
	// Hour: samples every 10 min, the newest 7: 60 min.
	require.Equal(t, Snapshot{Sum: 1080, Tps: 0.3, Avgpt: 3, Times: 360}, d.Hour)
	// Day: 3 samples (t0, +1h, +2h) after the made-up one: 3 hours since the item's start.
	require.Equal(t, int64(2161), d.Day.Sum)
	require.InDelta(t, 2161.0/(3*3600), d.Day.Tps, 1e-12)
	require.Equal(t, 0.3, m.MinuteTps(GroupGetNums, "T@G"))
	require.Zero(t, m.MinuteTps(GroupGetNums, "T@other"))
}

func TestForgetAndRestart(t *testing.T) {
	var c, latency counters
	m := New()
	m.Add(GroupGetNums, c.source)
	m.Add(TopicPutNums, c.source)
	m.Add(GroupGetLatency, latency.source)
	tg := Key{Kind: KeyTopicGroup, Name: "T", Group: "G"}
	other := Key{Kind: KeyTopicGroup, Name: "U", Group: "G2"}
	c.add(tg, 100, 10)
	c.add(other, 7, 7)
	latency.add(Key{Kind: KeyQueueTopicGroup, Name: "T", Group: "G", Queue: 1}, 12, 3)
	latency.add(Key{Kind: KeyQueueTopicGroup, Name: "U", Group: "G2", Queue: 0}, 5, 1)
	m.Sample(t0)
	d, ok := m.Get(GroupGetLatency, "1@T@G")
	require.True(t, ok)
	require.Equal(t, Snapshot{Sum: 12, Tps: 1.2, Avgpt: 4, Times: 3}, d.Minute)

	m.ForgetGroup("G")
	_, ok = m.Get(GroupGetNums, "T@G")
	require.False(t, ok, "a deleted group's items are gone")
	_, ok = m.Get(GroupGetLatency, "1@T@G")
	require.False(t, ok, "its latency items too")
	_, ok = m.Get(GroupGetNums, "U@G2")
	require.True(t, ok)
	m.Sample(t0.Add(SampleInterval))
	_, ok = m.Get(GroupGetNums, "T@G")
	require.False(t, ok, "still gone while its counter does not move")

	c.add(tg, 4, 1)
	m.Sample(t0.Add(2 * SampleInterval))
	d, ok = m.Get(GroupGetNums, "T@G")
	require.True(t, ok)
	require.Equal(t, Snapshot{Sum: 4, Tps: 0.4, Avgpt: 4, Times: 1}, d.Minute, "it restarts from the counts it had")

	m.ForgetTopic("U")
	_, ok = m.Get(GroupGetNums, "U@G2")
	require.False(t, ok)
	_, ok = m.Get(GroupGetLatency, "0@U@G2")
	require.False(t, ok, "a deleted topic's latency items are gone")
	_, ok = m.Get(TopicPutNums, "T@G")
	require.True(t, ok, "the test source feeds both names")
	m.ForgetTopic("T")
	_, ok = m.Get(TopicPutNums, "T@G")
	require.False(t, ok)
	require.EqualValues(t, 0, m.Items())
}

func TestIdleItemsExpire(t *testing.T) {
	var c counters
	m := New()
	m.Add(TopicPutSize, c.source)
	k := Key{Name: "T"}
	c.add(k, 10, 1)
	now := t0
	m.Sample(now)
	for now.Add(SampleInterval).Sub(t0) <= idleExpiry {
		now = now.Add(SampleInterval)
		m.Sample(now)
		_, ok := m.Get(TopicPutSize, "T")
		require.True(t, ok, "kept while idle for up to a day and an hour (%v)", now.Sub(t0))
	}
	now = now.Add(SampleInterval)
	m.Sample(now)
	_, ok := m.Get(TopicPutSize, "T")
	require.False(t, ok, "gone after a day and an hour without movement")
	require.EqualValues(t, 0, m.Items())
}

// The broker's items stay, traffic or not: tools ask for them at any time.
func TestBrokerItemsDoNotExpire(t *testing.T) {
	var total atomic.Int64
	m := New()
	m.Add(BrokerGetNums, func(yield func(Key, Counter) bool) { yield(Key{Name: "C"}, Counter{Value: &total}) })
	total.Store(1)
	now := t0
	for now.Sub(t0) <= 2*idleExpiry {
		m.Sample(now)
		now = now.Add(SampleInterval)
	}
	d, ok := m.Get(BrokerGetNums, "C")
	require.True(t, ok)
	require.Equal(t, Snapshot{}, d.Minute, "nothing moved in the last minute")
}

func TestBrokerItemsWithoutTimes(t *testing.T) {
	var total atomic.Int64
	m := New()
	m.Add(BrokerPutNums, func(yield func(Key, Counter) bool) { yield(Key{Name: "DefaultCluster"}, Counter{Value: &total}) })
	total.Store(30)
	m.Sample(t0)
	d, ok := m.Get(BrokerPutNums, "DefaultCluster")
	require.True(t, ok)
	require.Equal(t, Snapshot{Sum: 30, Tps: 3}, d.Minute, "no calls counted: avgpt 0")
}
