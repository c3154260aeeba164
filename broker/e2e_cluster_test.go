package broker

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/testutil"
)

// TestGoClientCluster (issue 16 item 5): two brokerNames, each a master with a slave, under one name
// server, with the unmodified Go client. Producers spread over both masters; with broker-b's master gone,
// a producer sends everything to broker-a, and a consumer group gets every message once: broker-a's from
// its master, broker-b's backlog from broker-b's slave.
func TestGoClientCluster(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("end-to-end with the Go client")
	}
	const topic, queues = "ClusterTopic", 4
	masterA, slaveA := startPair(t, "ASYNC_MASTER", func(c *Config) { c.BrokerName = "broker-a" })
	masterB, slaveB := startPair(t, "ASYNC_MASTER", func(c *Config) {
		c.BrokerName = "broker-b"
		c.NamesrvEmbedded = false
		c.NamesrvAddr = masterA.NamesrvAddr
	})
	// Until slaves sync topics from their masters, every broker gets the topic.
	for _, tb := range []*testBroker{masterA, slaveA, masterB, slaveB} {
		createTopic(t, tb.b, topic, queues)
	}
	// After every broker: the driver is killed before they stop.
	e := newE2EEnv(t, masterA, "cluster")
	ns := embeddedNamesrv(masterA.b)
	masters := func() map[string]bool {
		out := map[string]bool{}
		if r, ok := ns.TopicRoute(topic); ok {
			for _, bd := range r.BrokerDatas {
				if _, ok := bd.BrokerAddrs[0]; ok {
					out[bd.BrokerName] = true
				}
			}
		}
		return out
	}
	testutil.Eventually(t, "both masters serve the topic", func() bool { return len(masters()) == 2 })

	p := e.producer(t, "PG-cluster")
	want := map[string]bool{}
	for i := range 40 {
		body := fmt.Sprintf("before-%02d", i)
		sendSync(t, p, primitive.NewMessage(topic, []byte(body)))
		want[body] = true
	}
	var onA, onB int64
	testutil.Eventually(t, "dispatched on the masters", func() bool {
		onA, onB = queueTotal(masterA.b, topic, queues), queueTotal(masterB.b, topic, queues)
		return onA+onB == 40
	})
	require.Positive(t, onA, "the producer spreads over both masters")
	require.Positive(t, onB, "the producer spreads over both masters")
	testutil.Eventually(t, "broker-b's slave has its backlog", func() bool {
		return slaveB.b.store.GetMaxOffsetInQueue(topic, 0)+
			slaveB.b.store.GetMaxOffsetInQueue(topic, 1)+slaveB.b.store.GetMaxOffsetInQueue(topic, 2)+
			slaveB.b.store.GetMaxOffsetInQueue(topic, 3) == onB
	})

	masterB.shutdown(t)
	testutil.Eventually(t, "broker-b has no master in the route",
		func() bool { m := masters(); return m["broker-a"] && !m["broker-b"] })
	p2 := e.producer(t, "PG-cluster-after")
	for i := range 20 {
		body := fmt.Sprintf("after-%02d", i)
		sendSync(t, p2, primitive.NewMessage(topic, []byte(body)))
		want[body] = true
	}
	testutil.Eventually(t, "every send went to broker-a",
		func() bool { return queueTotal(masterA.b, topic, queues) == onA+20 })

	// A push consumer group gets broker-a's messages. (The pinned Go client cannot start a push consumer
	// on a brokerName without a master: its offset store asks only the master, consumer/offset_store.go
	// fetchConsumeOffsetFromBroker. Apache RocketMQ's Java client asks any listed address.)
	wantA := masterAMessages(t, masterA.b, topic, queues)
	got := &deliveries{}
	e.consumerFunc(t, "G-cluster", topic, "*", func(_ context.Context, msgs ...*primitive.MessageExt) (goclient.ConsumeResult, error) {
		got.add(msgs...)
		return goclient.ConsumeSuccess, nil
	})
	testutil.Eventually(t, "broker-a's messages consumed", func() bool { return got.len() >= len(wantA) })
	var bodies []string
	for _, d := range got.snapshot() {
		bodies = append(bodies, string(d.msg.Body))
	}
	sort.Strings(bodies)
	sort.Strings(wantA)
	require.Equal(t, wantA, bodies, "broker-a's messages, once each")

	// broker-b's backlog is read from its slave, the route's remaining address for broker-b.
	pc, err := e.client.NewPullConsumer(goclient.ConsumerOptions{NameServers: e.nameServers(), Group: "G-cluster-pull",
		Instance: e.instance("pull")})
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, goclient.MessageSelector{Type: goclient.TAG, Expression: "*"}))
	require.NoError(t, pc.Start())
	mqs, err := pc.GetTopicRouteInfo(topic)
	require.NoError(t, err)
	var fromB []string
	for _, mq := range mqs {
		if mq.BrokerName != "broker-b" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := pc.PullFrom(ctx, mq, 0, 32)
		cancel()
		require.NoError(t, err)
		for _, m := range res.GetMessageExts() {
			fromB = append(fromB, string(m.Body))
		}
	}
	require.Len(t, fromB, int(onB), "broker-b's backlog, served by its slave")
	for _, b := range fromB {
		require.True(t, want[b], b)
	}
}

// masterAMessages lists the bodies of a topic's messages on one broker.
func masterAMessages(t *testing.T, b *Broker, topic string, queues int32) []string {
	t.Helper()
	var out []string
	for q := range queues {
		for _, r := range queueRecords(t, b.store, topic, q) {
			out = append(out, string(r.Body))
		}
	}
	return out
}
