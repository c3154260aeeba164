package clients

import (
	"testing"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/stretchr/testify/require"
)

// The control-plane lookups on the send and pull paths allocate nothing.
func TestControlLookupsDoNotAllocate(t *testing.T) {
	topics := metadata.NewTopicConfigManager(metadata.TopicOptions{ClusterName: "C1", BrokerName: "b1", DefaultTopicQueueNums: 8}, t.TempDir(), time.Now, logtest.Discard())
	topics.CreateInSendMessageBack("T", 4, 6, 0)
	offsets := metadata.NewConsumerOffsetManager(t.TempDir(), logtest.Discard())
	offsets.Commit("G", "T", 1, 5)
	consumers := NewConsumerManager(time.Now, time.Minute, logtest.Discard(), nil)
	consumers.Register("G", ClientChannelInfo{Conn: &ctlConn{id: 1}, ClientID: "c"}, remotingtest.ConsumerData("G", remotingtest.Subscription("T", 1, "TagA")))
	groups := metadata.NewSubscriptionGroupManager(true, t.TempDir(), time.Now, logtest.Discard())
	groups.FindOrCreate("G")
	var sink int64
	allocs := testing.AllocsPerRun(1000, func() {
		tc, _ := topics.Get("T")
		sink += int64(tc.WriteQueueNums)
		offsets.Commit("G", "T", 1, sink)
		sink += offsets.Query("G", "T", 1)
		if sd := consumers.FindSubscriptionData("G", "T"); sd != nil {
			sink += int64(len(sd.CodeSet))
		}
		g, _ := groups.FindOrCreate("G")
		sink += int64(g.RetryQueueNums)
	})
	require.Zero(t, allocs)
	require.NotZero(t, sink)
}

func BenchmarkTopicGet(b *testing.B) {
	m := metadata.NewTopicConfigManager(metadata.TopicOptions{ClusterName: "C1", BrokerName: "b1", DefaultTopicQueueNums: 8}, b.TempDir(), time.Now, logtest.Discard())
	for i := range 1000 {
		m.CreateInSendMessageBack("T"+string(rune('a'+i%26))+string(rune('a'+i/26)), 4, 6, 0)
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var n int32
		for pb.Next() {
			tc, _ := m.Get("Tab")
			n += tc.WriteQueueNums
		}
		_ = n
	})
}

func BenchmarkConsumerOffsetCommit(b *testing.B) {
	m := metadata.NewConsumerOffsetManager(b.TempDir(), logtest.Discard())
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		m.Commit("G", "T", int32(i&7), i)
	}
}
