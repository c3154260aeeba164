package broker

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

const suspendFlags = codec.PullSysFlagSuspend | codec.PullSysFlagSubscription

// createTopic creates a read-write topic with queues queues.
func createTopic(t testing.TB, b *Broker, name string, queues int32) {
	t.Helper()
	tc := codec.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	require.NoError(t, b.topics.Update(tc))
}

// waitHeld waits until n pulls are parked, each in the hold goroutine's table. Counted but still
// queued for it is not enough: a park taken after an arrival is re-run without a tag check (as
// Java's checkHoldRequest), so a test sending right after would race it.
func waitHeld(t testing.TB, b *Broker, n int) {
	t.Helper()
	testutil.Eventually(t, fmt.Sprintf("want %d parked pulls, have %d", n, b.pullHold.HeldCount()),
		func() bool { return b.pullHold.HeldCount() == n && b.pullHold.queued.Load() == 0 })
}

func testLongPollWakesOnArrival(t *testing.T, fileStore bool) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: fileStore})
	consumer := remotingtest.Dial(t, db.addr)
	producer := remotingtest.Dial(t, db.addr)
	sendOK(t, producer, sendV1("TopicW", 0, []byte("first"), ""))
	testutil.Eventually(t, "TopicW/0 dispatched",
		func() bool { return db.b.store.GetMaxOffsetInQueue("TopicW", 0) == 1 })

	const suspend = 20 * time.Second // what the Go client asks for
	opaque := consumer.Request(pullCmd("G", "TopicW", 0, 1, 32, suspendFlags, suspend, "*"))
	waitHeld(t, db.b, 1)

	sentAt := time.Now()
	h := sendOK(t, producer, sendV1("TopicW", 0, []byte("second"), ""))
	resp := consumer.Await(opaque)
	latency := time.Since(sentAt)
	require.Less(t, latency, 2*time.Second, "woken by the arrival, long before the %v suspend timeout", suspend)
	t.Logf("parked pull answered %v after the send", latency)
	require.Equal(t, opaque, resp.Opaque)
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 2, 0, 2)
	recs := decodeRecords(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "second", string(recs[0].Body))
	require.Equal(t, offsetOf(t, h.MsgID), recs[0].PhysicalOffset)
	require.Equal(t, 0, db.b.pullHold.HeldCount())
}

func TestLongPollWakesOnArrival(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testLongPollWakesOnArrival(t, false) })
	t.Run("filestore", func(t *testing.T) { testLongPollWakesOnArrival(t, true) })
}

func TestLongPollTagMismatchStaysParked(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	consumer := remotingtest.Dial(t, db.addr)
	producer := remotingtest.Dial(t, db.addr)
	createTopic(t, db.b, "TopicM", 1)
	parked := consumer.Request(pullCmd("G", "TopicM", 0, 0, 32, suspendFlags, 20*time.Second, "TagB"))
	waitHeld(t, db.b, 1)

	applied := db.b.pullHold.applied.Load()
	sendOK(t, producer, sendV1("TopicM", 0, []byte("a"), props("TAGS", "TagA")))
	testutil.Eventually(t, "the arrival applied to the hold table",
		func() bool { return db.b.pullHold.applied.Load() > applied })
	require.Equal(t, 1, db.b.pullHold.HeldCount(), "a TagA arrival does not wake a TagB pull")
	if resp, err := consumer.TryAwait(parked, time.Millisecond); err == nil { // what has arrived by now
		t.Fatalf("answered on a non-matching arrival: %d %s", resp.Code, resp.Remark)
	}

	sendOK(t, producer, sendV1("TopicM", 0, []byte("b"), props("TAGS", "TagB")))
	resp := consumer.Await(parked)
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 2, 0, 2)
	recs := decodeRecords(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "b", string(recs[0].Body))
}

func TestLongPollTimesOutWithPullNotFound(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	sendOK(t, c, sendV1("TopicT", 0, []byte("x"), ""))
	const suspend = 300 * time.Millisecond
	start := time.Now()
	opaque := c.Request(pullCmd("G", "TopicT", 0, 1, 32, suspendFlags, suspend, "*"))
	resp := c.Await(opaque)
	elapsed := time.Since(start)
	require.GreaterOrEqual(t, elapsed, suspend)
	require.Less(t, elapsed, 3*time.Second)
	require.Equal(t, opaque, resp.Opaque)
	requirePull(t, resp, codec.ResponsePullNotFound, "OFFSET_OVERFLOW_ONE", 1, 0, 1)
	require.Equal(t, 0, db.b.pullHold.HeldCount())
}

func TestShortPollingWhenLongPollingDisabled(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) {
		c.LongPollingEnable = false
		c.ShortPollingTimeMills = 200 * time.Millisecond
	}})
	c := remotingtest.Dial(t, db.addr)
	createTopic(t, db.b, "TopicT", 1)
	start := time.Now()
	resp := c.Await(c.Request(pullCmd("G", "TopicT", 0, 0, 32, suspendFlags, 20*time.Second, "*")))
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	require.Less(t, time.Since(start), 5*time.Second)
	requirePull(t, resp, codec.ResponsePullNotFound, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
}

func TestLongPollCommitsOffsetOnFirstPassOnly(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	consumer := remotingtest.Dial(t, db.addr)
	producer := remotingtest.Dial(t, db.addr)
	createTopic(t, db.b, "TopicC", 1)
	cmd := pullCmd("GC", "TopicC", 0, 0, 32, suspendFlags|codec.PullSysFlagCommitOffset, 20*time.Second, "*")
	cmd.ExtFields["commitOffset"] = "7"
	parked := consumer.Request(cmd)
	waitHeld(t, db.b, 1)
	require.Equal(t, int64(7), db.b.offsets.Query("GC", "TopicC", 0))
	// Someone else moves the offset while the pull is parked; the re-run must not undo it.
	db.b.offsets.Commit("GC", "TopicC", 0, 9)
	sendOK(t, producer, sendV1("TopicC", 0, []byte("x"), ""))
	requirePull(t, consumer.Await(parked), codec.ResponseSuccess, "FOUND", 1, 0, 1)
	require.Equal(t, int64(9), db.b.offsets.Query("GC", "TopicC", 0))
}

func TestLongPollHoldTableIsBounded(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{beforeRun: func(b *Broker) { b.pullHold.cfg.maxHeld = 2 }})
	c := remotingtest.Dial(t, db.addr)
	createTopic(t, db.b, "TopicB", 4)
	var parked []int32
	for q := range int32(2) {
		parked = append(parked, c.Request(pullCmd("G", "TopicB", q, 0, 32, suspendFlags, 20*time.Second, "*")))
	}
	waitHeld(t, db.b, 2)
	resp := c.Call(pullCmd("G", "TopicB", 2, 0, 32, suspendFlags, 20*time.Second, "*"))
	require.Equal(t, int32(codec.ResponseSystemBusy), resp.Code)
	require.Equal(t, remarkHoldFull, resp.Remark)

	// Stopping the hold service answers everything parked.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, db.b.pullHold.Stop(ctx))
	for _, opaque := range parked {
		resp := c.Await(opaque)
		requirePull(t, resp, codec.ResponsePullNotFound, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
	}
	require.Equal(t, 0, db.b.pullHold.HeldCount())
	// After Stop a pull that would park is answered at once.
	resp = c.Call(pullCmd("G", "TopicB", 0, 0, 32, suspendFlags, 20*time.Second, "*"))
	requirePull(t, resp, codec.ResponsePullNotFound, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
}

func TestLongPollParkRacingArrivalIsRerun(t *testing.T) {
	// A request that reaches the hold service after its data arrived (the arrival was
	// notified while nothing was parked) must not wait for the sweep or its timeout.
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	sendOK(t, c, sendV1("TopicR", 0, []byte("already here"), ""))
	conn := &fakeConn{}
	pr := db.b.data.pulls.Get().(*pullRequest)
	pr.to = db.b.replies.To(conn, &codec.RemotingCommand{Opaque: 42})
	pr.header = codec.PullMessageRequestHeader{ConsumerGroup: "G", Topic: "TopicR", QueueID: 0, QueueOffset: 0, MaxMsgNums: 32}
	pr.filter.all = true
	pr.suspendTimeout = time.Minute
	require.True(t, db.b.pullHold.suspend(pr))
	testutil.Eventually(t, "the parked pull's answer", func() bool { return len(conn.responses(t)) == 1 })
	resp := conn.responses(t)[0]
	require.Equal(t, int32(42), resp.Opaque)
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 1, 0, 1)
	require.Equal(t, 0, db.b.pullHold.HeldCount())
}

func TestLongPollManyParkedPullsAllWake(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	producer := remotingtest.Dial(t, db.addr)
	const queues = 4
	const perQueue = 8
	createTopic(t, db.b, "TopicMany", queues)
	type parkedPull struct {
		q      int32
		c      *remotingtest.Conn
		opaque int32
	}
	var all []parkedPull
	for i := range perQueue {
		c := remotingtest.Dial(t, db.addr)
		for q := range int32(queues) {
			opaque := c.Request(pullCmd("G"+strconv.Itoa(i), "TopicMany", q, 0, 32, suspendFlags, 20*time.Second, "*"))
			all = append(all, parkedPull{q, c, opaque})
		}
	}
	waitHeld(t, db.b, queues*perQueue)
	for q := range int32(queues) {
		sendOK(t, producer, sendV1("TopicMany", q, []byte("q"+strconv.Itoa(int(q))), ""))
	}
	for _, p := range all {
		resp := p.c.Await(p.opaque)
		requirePull(t, resp, codec.ResponseSuccess, "FOUND", 1, 0, 1)
		recs := decodeRecords(t, resp.Body)
		require.Len(t, recs, 1)
		require.Equal(t, "q"+strconv.Itoa(int(p.q)), string(recs[0].Body))
	}
	require.Equal(t, 0, db.b.pullHold.HeldCount())
}
