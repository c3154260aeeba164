package broker

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// End to end with the pinned Go client (github.com/apache/rocketmq-client-go/v2): producers
// and consumers find the broker through its embedded name server and use it unchanged.
//
// One broker serves every subtest (each uses its own topics and groups). Every client gets
// its own instance name: the Go client shares one connection set per client id within a
// process, and consumers of one group must be told apart.
//
// The client runs in a driver process of its own, built without -race (goclienttest): the
// pinned client has data races of its own, which the race detector would report here whatever
// the broker does. The broker stays in the test's process, under the detector. The driver is
// killed at the end of the suite, before the broker stops; its clients' goroutines die with it.

// e2eWait bounds every wait for asynchronous delivery.
const e2eWait = 20 * time.Second

// e2eEnv is a suite's broker and the Go-client driver that talks to it.
type e2eEnv struct {
	tb     *testBroker
	client *goclienttest.Driver
	seq    atomic.Int64
	name   string
}

// newE2EEnv starts a driver for tb (after tb, so that it is killed before tb stops).
func newE2EEnv(t *testing.T, tb *testBroker, name string) *e2eEnv {
	t.Helper()
	return &e2eEnv{tb: tb, client: goclienttest.Start(t), name: name}
}

func (e *e2eEnv) instance(kind string) string {
	return fmt.Sprintf("%s-%s-%d-%d", e.name, kind, time.Now().UnixNano(), e.seq.Add(1))
}

func (e *e2eEnv) nameServers() []string { return []string{e.tb.NamesrvAddr} }

// producerOptions are a producer's options in the suite: its name server, 2 retries, a 5 s
// send timeout, then opts.
func (e *e2eEnv) producerOptions(group string, opts ...func(*goclient.ProducerOptions)) goclient.ProducerOptions {
	o := goclient.ProducerOptions{NameServers: e.nameServers(), Group: group, Instance: e.instance("p"),
		Retries: 2, SendMsgTimeout: 5 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

func (e *e2eEnv) producer(t *testing.T, group string, opts ...func(*goclient.ProducerOptions)) *goclienttest.Producer {
	t.Helper()
	p, err := e.client.NewProducer(e.producerOptions(group, opts...))
	require.NoError(t, err)
	require.NoError(t, p.Start())
	t.Cleanup(func() { _ = p.Shutdown() })
	return p
}

// consumerOptions are a clustering consumer's options in the suite, from the first offset,
// then opts.
func (e *e2eEnv) consumerOptions(group, kind string, opts ...func(*goclient.ConsumerOptions)) goclient.ConsumerOptions {
	o := goclient.ConsumerOptions{NameServers: e.nameServers(), Group: group, Instance: e.instance(kind),
		FromWhere: goclient.ConsumeFromFirstOffset}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// received collects what a consumer got, by body.
type received struct {
	mu     sync.Mutex
	msgs   []*primitive.MessageExt
	counts map[string]int
	queues map[int]bool
}

func newReceived() *received { return &received{counts: map[string]int{}, queues: map[int]bool{}} }

func (r *received) add(msgs ...*primitive.MessageExt) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.msgs = append(r.msgs, m)
		r.counts[string(m.Body)]++
		r.queues[m.Queue.QueueId] = true
	}
}

func (r *received) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.counts)
}

func (r *received) snapshot() (map[string]int, []*primitive.MessageExt, []int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := make(map[string]int, len(r.counts))
	for k, v := range r.counts {
		counts[k] = v
	}
	var qs []int
	for q := range r.queues {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	return counts, slices.Clone(r.msgs), qs
}

// pushConsumer starts a clustering push consumer from the first offset that records what
// it gets in rec.
func (e *e2eEnv) pushConsumer(t *testing.T, group, topic, expr string, rec *received,
	opts ...func(*goclient.ConsumerOptions)) *goclienttest.PushConsumer {
	t.Helper()
	return e.consumerFunc(t, group, topic, expr, func(_ context.Context, msgs ...*primitive.MessageExt) (goclient.ConsumeResult, error) {
		rec.add(msgs...)
		return goclient.ConsumeSuccess, nil
	}, opts...)
}

// consumerFunc starts a clustering push consumer from the first offset with its own function.
func (e *e2eEnv) consumerFunc(t *testing.T, group, topic, expr string, fn goclienttest.ConsumeFunc,
	opts ...func(*goclient.ConsumerOptions)) *goclienttest.PushConsumer {
	t.Helper()
	c, err := e.client.NewPushConsumer(e.consumerOptions(group, "c", opts...))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, goclient.MessageSelector{Type: goclient.TAG, Expression: expr}, fn))
	require.NoError(t, c.Start())
	return c
}

// sendSync sends one message and requires SEND_OK.
func sendSync(t *testing.T, p *goclienttest.Producer, msg *primitive.Message) *primitive.SendResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := p.SendSync(ctx, msg)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	return res
}

// waitRoute waits until the name server serves the topic's route: a topic auto-created by a
// send is registered in the background, and a consumer that starts before that fails.
func (e *e2eEnv) waitRoute(t *testing.T, topic string) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("route of %s registered", topic), func() bool {
		_, ok := embeddedNamesrv(e.tb.b).TopicRoute(topic)
		return ok
	})
}

// queueTotal is the number of messages in a topic's first n queues.
func queueTotal(b *Broker, topic string, n int32) int64 {
	var total int64
	for q := range n {
		total += b.store.GetMaxOffsetInQueue(topic, q)
	}
	return total
}

// committed is the sum of a group's committed offsets over a topic's first n queues.
func committed(b *Broker, group, topic string, n int32) int64 {
	var total int64
	for q := range n {
		if off := b.offsets.Query(group, topic, q); off > 0 {
			total += off
		}
	}
	return total
}

func TestGoClientEndToEnd(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("end-to-end with the Go client")
	}
	e := newE2EEnv(t, startTestBroker(t, nil), "e2e")

	t.Run("GroupRestartResumesFromCommittedOffset", func(t *testing.T) { testE2ERestart(t, e) })
	t.Run("SendModesDeliveredExactlyOnce", func(t *testing.T) { testE2ESendModes(t, e) })
	t.Run("TagSubscription", func(t *testing.T) { testE2ETagSubscription(t, e) })
	t.Run("TwoGroupsEachGetEverything", func(t *testing.T) { testE2ETwoGroups(t, e) })
	t.Run("OneGroupSplitsQueues", func(t *testing.T) { testE2ESplitQueues(t, e) })
	t.Run("PullConsumer", func(t *testing.T) { testE2EPullConsumer(t, e) })
	t.Run("ChosenQueueConsecutiveOffsets", func(t *testing.T) { testE2EChosenQueue(t, e) })
	t.Run("Orderly", func(t *testing.T) { testE2EOrderly(t, e) })
}

// Sync, async, oneway and batch sends; one push consumer gets each message once with body,
// tags, keys and user properties intact.
func testE2ESendModes(t *testing.T, e *e2eEnv) {
	const topic = "E2ESendModes"
	p := e.producer(t, "PG-modes")
	ctx, cancel := context.WithTimeout(context.Background(), e2eWait)
	defer cancel()

	type want struct{ tag, keys, prop string }
	expect := map[string]want{}
	newMsg := func(kind string, i int) *primitive.Message {
		body := fmt.Sprintf("%s-%d", kind, i)
		m := primitive.NewMessage(topic, []byte(body))
		w := want{tag: "T" + kind, keys: "k-" + body, prop: "v-" + body}
		m.WithTag(w.tag)
		m.WithKeys([]string{w.keys})
		m.WithProperty("userProp", w.prop)
		expect[body] = w
		return m
	}
	for i := range 5 {
		sendSync(t, p, newMsg("sync", i))
	}
	var asyncErrs atomic.Int32
	var asyncWG sync.WaitGroup
	for i := range 5 {
		asyncWG.Add(1)
		require.NoError(t, p.SendAsync(ctx, func(_ context.Context, res *primitive.SendResult, err error) {
			defer asyncWG.Done()
			if err != nil || res.Status != primitive.SendOK {
				asyncErrs.Add(1)
			}
		}, newMsg("async", i)))
	}
	asyncWG.Wait()
	require.Zero(t, asyncErrs.Load())
	for i := range 5 {
		require.NoError(t, p.SendOneWay(ctx, newMsg("oneway", i)))
	}
	batch := []*primitive.Message{newMsg("batch", 0), newMsg("batch", 1), newMsg("batch", 2)}
	res, err := p.SendSync(ctx, batch...)
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	require.Len(t, strings.Split(res.OffsetMsgID, ","), 3)
	testutil.Eventually(t, "every send (oneway too) is stored",
		func() bool { return queueTotal(e.tb.b, topic, 4) == 18 })

	e.waitRoute(t, topic)
	rec := newReceived()
	e.pushConsumer(t, "G-modes", topic, "*", rec)
	testutil.Eventually(t, "18 messages consumed", func() bool { return rec.distinct() == 18 })
	counts, msgs, _ := rec.snapshot()
	for body, n := range counts {
		require.Equal(t, 1, n, "%s delivered once", body)
	}
	for _, m := range msgs {
		w, ok := expect[string(m.Body)]
		require.True(t, ok, "unexpected body %q", m.Body)
		require.Equal(t, w.tag, m.GetTags())
		require.Equal(t, w.keys, m.GetKeys())
		require.Equal(t, w.prop, m.GetProperty("userProp"))
		require.Equal(t, topic, m.Topic)
		require.NotEmpty(t, m.MsgId)
		require.Equal(t, "TestCluster", m.GetProperty(primitive.PropertyCluster))
	}
}

// A "A || B" subscription gets exactly the A and B messages.
func testE2ETagSubscription(t *testing.T, e *e2eEnv) {
	const topic = "E2ETags"
	p := e.producer(t, "PG-tags")
	wantBodies := map[string]bool{}
	for i := range 30 {
		tag := []string{"A", "B", "C"}[i%3]
		body := tag + "-" + strconv.Itoa(i)
		sendSync(t, p, primitive.NewMessage(topic, []byte(body)).WithTag(tag))
		if tag != "C" {
			wantBodies[body] = true
		}
	}
	e.waitRoute(t, topic)
	rec := newReceived()
	e.pushConsumer(t, "G-tags", topic, "A || B", rec)
	testutil.Eventually(t, "the wanted messages consumed", func() bool { return rec.distinct() >= len(wantBodies) })
	// One more A per queue (the producer goes round the 4 queues): once the consumer has those,
	// it has scanned every C before them in every queue, and none may have been delivered.
	for q := range 4 {
		body := "A-marker-" + strconv.Itoa(q)
		sendSync(t, p, primitive.NewMessage(topic, []byte(body)).WithTag("A"))
		wantBodies[body] = true
	}
	testutil.Eventually(t, "the wanted messages consumed", func() bool { return rec.distinct() >= len(wantBodies) })
	counts, _, queues := rec.snapshot()
	require.Len(t, queues, 4)
	require.Len(t, counts, len(wantBodies))
	for body, n := range counts {
		require.True(t, wantBodies[body], "%s is not A or B", body)
		require.Equal(t, 1, n, body)
	}
}

// A group stopped and restarted resumes from its committed offsets: nothing lost, nothing
// consumed twice.
func testE2ERestart(t *testing.T, e *e2eEnv) {
	const topic, group = "E2ERestart", "G-restart"
	p := e.producer(t, "PG-restart")
	for i := range 10 {
		sendSync(t, p, primitive.NewMessage(topic, []byte("first-"+strconv.Itoa(i))))
	}
	e.waitRoute(t, topic)
	first := newReceived()
	c1 := e.pushConsumer(t, group, topic, "*", first)
	testutil.Eventually(t, "the first consumer's 10 messages", func() bool { return first.distinct() == 10 })
	// Once the client's own offsets caught up with every queue, its Shutdown stores them
	// (UPDATE_CONSUMER_OFFSET).
	testutil.Eventually(t, "the consumer's own offsets caught up", func() bool {
		diffs, err := c1.GetOffsetDiffMap()
		require.NoError(t, err)
		diff, ok := diffs[topic]
		return ok && diff == 0
	})
	require.NoError(t, c1.Shutdown())
	testutil.Eventually(t, "the offsets committed on Shutdown",
		func() bool { return committed(e.tb.b, group, topic, 4) == 10 })

	for i := range 10 {
		sendSync(t, p, primitive.NewMessage(topic, []byte("second-"+strconv.Itoa(i))))
	}
	second := newReceived()
	e.pushConsumer(t, group, topic, "*", second)
	// A message consumed before the restart would come back before the new ones of its queue.
	testutil.Eventually(t, "the second consumer's messages", func() bool { return second.distinct() >= 10 })
	counts, _, _ := second.snapshot()
	require.Len(t, counts, 10)
	for body, n := range counts {
		require.True(t, strings.HasPrefix(body, "second-"), "%s was consumed before the restart", body)
		require.Equal(t, 1, n, body)
	}
}

func testE2ETwoGroups(t *testing.T, e *e2eEnv) {
	const topic = "E2ETwoGroups"
	p := e.producer(t, "PG-two")
	for i := range 12 {
		sendSync(t, p, primitive.NewMessage(topic, []byte("m-"+strconv.Itoa(i))))
	}
	e.waitRoute(t, topic)
	ra, rb := newReceived(), newReceived()
	e.pushConsumer(t, "G-two-a", topic, "*", ra)
	e.pushConsumer(t, "G-two-b", topic, "*", rb)
	for _, r := range []*received{ra, rb} {
		testutil.Eventually(t, "12 messages consumed", func() bool { return r.distinct() == 12 })
	}
	for _, r := range []*received{ra, rb} {
		counts, _, _ := r.snapshot()
		for body, n := range counts {
			require.Equal(t, 1, n, body)
		}
	}
}

// allocations records the latest queue allocation of each consumer of a group.
type allocations struct {
	topic  string
	mu     sync.Mutex
	latest map[string][]int // by client id: queue ids
	cids   map[string]int   // by client id: how many consumers the allocation saw
}

// observe records one allocation of the client's default strategy (AllocateByAveragely).
func (a *allocations) observe(got goclient.AllocationArgs) {
	if len(got.Queues) == 0 || got.Queues[0].Topic != a.topic {
		return // the group's retry topic is balanced too
	}
	var ids []int
	for _, mq := range got.Allocated {
		ids = append(ids, mq.QueueId)
	}
	a.mu.Lock()
	a.latest[got.ClientID] = ids
	a.cids[got.ClientID] = len(got.ClientIDs)
	a.mu.Unlock()
}

// settled reports whether n consumers each allocated with n members, disjointly, all queues.
func (a *allocations) settled(n, queues int) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.latest) != n {
		return false
	}
	seen := map[int]bool{}
	for cid, ids := range a.latest {
		if a.cids[cid] != n || len(ids) == 0 {
			return false
		}
		for _, q := range ids {
			if seen[q] {
				return false
			}
			seen[q] = true
		}
	}
	return len(seen) == queues
}

// Two consumers of one group split the queues: each message is consumed once, each consumer
// only from its own queues.
func testE2ESplitQueues(t *testing.T, e *e2eEnv) {
	const topic, group = "E2ESplit", "G-split"
	p := e.producer(t, "PG-split")
	sendSync(t, p, primitive.NewMessage(topic, []byte("create")))
	e.waitRoute(t, topic)
	alloc := &allocations{topic: topic, latest: map[string][]int{}, cids: map[string]int{}}
	r1, r2 := newReceived(), newReceived()
	observe := func(o *goclient.ConsumerOptions) { o.OnAllocate = alloc.observe }
	e.pushConsumer(t, group, topic, "*", r1, observe)
	e.pushConsumer(t, group, topic, "*", r2, observe)
	testutil.Eventually(t, "both consumers rebalanced onto two queues each", func() bool { return alloc.settled(2, 4) })
	testutil.Eventually(t, "the first message consumed", func() bool { return r1.distinct()+r2.distinct() == 1 })

	for i := range 40 {
		sendSync(t, p, primitive.NewMessage(topic, []byte("s-"+strconv.Itoa(i))))
	}
	testutil.Eventually(t, "41 messages consumed", func() bool { return r1.distinct()+r2.distinct() == 41 })
	c1Counts, _, q1 := r1.snapshot()
	c2Counts, _, q2 := r2.snapshot()
	for body, n := range c1Counts {
		require.Equal(t, 1, n, body)
		require.Zero(t, c2Counts[body], "%s consumed by both", body)
	}
	for body, n := range c2Counts {
		require.Equal(t, 1, n, body)
	}
	require.NotEmpty(t, q1)
	require.NotEmpty(t, q2)
	for _, q := range q1 {
		require.NotContains(t, q2, q, "queue %d consumed by both", q)
	}
}

// The Go pull consumer: Poll (its lite-pull mode, with rebalance and ACK) and PullFrom
// (a chosen queue from a chosen offset).
func testE2EPullConsumer(t *testing.T, e *e2eEnv) {
	const topic = "E2EPull"
	p := e.producer(t, "PG-pull")
	for i := range 8 {
		sendSync(t, p, primitive.NewMessage(topic, []byte("p-"+strconv.Itoa(i))).WithTag("P"))
	}
	e.waitRoute(t, topic)
	pc, err := e.client.NewPullConsumer(e.consumerOptions("G-pull", "pull",
		func(o *goclient.ConsumerOptions) { o.PullBatchSize = 4 }))
	require.NoError(t, err)
	require.NoError(t, pc.Subscribe(topic, goclient.MessageSelector{Type: goclient.TAG, Expression: "P"}))
	require.NoError(t, pc.Start())

	got := map[string]int{}
	testutil.Poll(e2eWait, func() bool { // asserted below
		if cr, err := pc.Poll(context.Background(), time.Second); err == nil { // else no new message within a second
			for _, m := range cr.GetMsgList() {
				got[string(m.Body)]++
			}
			require.NoError(t, pc.ACK(context.Background(), cr, goclient.ConsumeSuccess))
		}
		return len(got) >= 8
	})
	require.Len(t, got, 8)
	for body, n := range got {
		require.Equal(t, 1, n, body)
	}

	// PullFrom one queue from offset 0: exactly what that queue holds, in order.
	mqs, err := pc.GetTopicRouteInfo(topic)
	require.NoError(t, err)
	require.NotEmpty(t, mqs)
	var total int
	for _, mq := range mqs {
		want := e.tb.b.store.GetMaxOffsetInQueue(topic, int32(mq.QueueId))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := pc.PullFrom(ctx, mq, 0, 32)
		cancel()
		require.NoError(t, err)
		if want == 0 {
			require.NotEqual(t, primitive.PullFound, res.Status)
			continue
		}
		require.Equal(t, primitive.PullFound, res.Status)
		require.Equal(t, want, res.NextBeginOffset)
		msgs := res.GetMessageExts()
		require.Len(t, msgs, int(want))
		for i, m := range msgs {
			require.Equal(t, int64(i), m.QueueOffset)
		}
		total += len(msgs)
	}
	require.Equal(t, 8, total)
}

// Sending to a chosen queue gives consecutive queue offsets.
func testE2EChosenQueue(t *testing.T, e *e2eEnv) {
	const topic = "E2EChosen"
	p := e.producer(t, "PG-chosen", func(o *goclient.ProducerOptions) { o.QueueSelector = goclient.ManualQueueSelector })
	// Create the topic (auto-create through TBW102), then learn its broker name.
	first := sendSync(t, p, &primitive.Message{Topic: topic, Body: []byte("create"),
		Queue: &primitive.MessageQueue{Topic: topic, BrokerName: "broker-test", QueueId: 2}})
	require.Equal(t, 2, first.MessageQueue.QueueId)
	require.Equal(t, int64(0), first.QueueOffset)
	for i := 1; i <= 9; i++ {
		res := sendSync(t, p, &primitive.Message{Topic: topic, Body: []byte("q-" + strconv.Itoa(i)),
			Queue: &primitive.MessageQueue{Topic: topic, BrokerName: first.MessageQueue.BrokerName, QueueId: 2}})
		require.Equal(t, 2, res.MessageQueue.QueueId)
		require.Equal(t, int64(i), res.QueueOffset)
	}
	testutil.Eventually(t, "queue 2 dispatched",
		func() bool { return e.tb.b.store.GetMaxOffsetInQueue(topic, 2) == 10 })
	require.Equal(t, int64(10), queueTotal(e.tb.b, topic, 4))
}

// Messages with one sharding key go to one queue (hash selector) and an orderly consumer
// sees each key's messages in send order.
func testE2EOrderly(t *testing.T, e *e2eEnv) {
	const topic = "E2EOrderly"
	p := e.producer(t, "PG-orderly", func(o *goclient.ProducerOptions) { o.QueueSelector = goclient.HashQueueSelector })
	keys := []string{"order-a", "order-b", "order-c"}
	const perKey = 10
	for i := range perKey {
		for _, k := range keys {
			m := primitive.NewMessage(topic, []byte(k+":"+strconv.Itoa(i)))
			m.WithShardingKey(k)
			sendSync(t, p, m)
		}
	}
	e.waitRoute(t, topic)
	var mu sync.Mutex
	seq := map[string][]int{}
	c, err := e.client.NewPushConsumer(e.consumerOptions("G-orderly", "orderly",
		func(o *goclient.ConsumerOptions) { o.Orderly = true }))
	require.NoError(t, err)
	require.NoError(t, c.Subscribe(topic, goclient.MessageSelector{},
		func(_ context.Context, msgs ...*primitive.MessageExt) (goclient.ConsumeResult, error) {
			mu.Lock()
			defer mu.Unlock()
			for _, m := range msgs {
				k, n, _ := strings.Cut(string(m.Body), ":")
				i, _ := strconv.Atoi(n)
				seq[k] = append(seq[k], i)
			}
			return goclient.ConsumeSuccess, nil
		}))
	require.NoError(t, c.Start())
	testutil.Eventually(t, "every keyed message consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range seq {
			n += len(s)
		}
		return n >= perKey*len(keys)
	})
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		want := make([]int, perKey)
		for i := range want {
			want[i] = i
		}
		require.Equal(t, want, seq[k], "key %s in send order", k)
	}
}
