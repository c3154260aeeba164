package readplane

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conntest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

func testLongPollWakesOnArrival(t *testing.T, fileStore bool) {
	rp := startPlane(t, planeOptions{fileStore: fileStore})
	rp.put("TopicW", 0, "first", "")
	rp.waitMax("TopicW", 0, 1)

	const suspend = 20 * time.Second // what the Go client asks for
	parked := rp.pull(remotingtest.PullRequest("G", "TopicW", 0, 1, 32, suspendFlags, suspend, "*"))
	rp.waitHeld(1)

	sentAt := time.Now()
	phys := rp.put("TopicW", 0, "second", "")
	resp := parked.Await()
	latency := time.Since(sentAt)
	require.Less(t, latency, 2*time.Second, "woken by the arrival, long before the %v suspend timeout", suspend)
	t.Logf("parked pull answered %v after the put", latency)
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 2, 0, 2)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "second", string(recs[0].Body))
	require.Equal(t, phys, recs[0].PhysicalOffset)
	require.Equal(t, 0, rp.p.HeldCount())
}

func TestLongPollWakesOnArrival(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testLongPollWakesOnArrival(t, false) })
	t.Run("filestore", func(t *testing.T) { testLongPollWakesOnArrival(t, true) })
}

func TestLongPollTagMismatchStaysParked(t *testing.T) {
	rp := startPlane(t, planeOptions{})
	rp.createTopic("TopicM", 1)
	parked := rp.pull(remotingtest.PullRequest("G", "TopicM", 0, 0, 32, suspendFlags, 20*time.Second, "TagB"))
	rp.waitHeld(1)

	applied := rp.p.hold.applied.Load()
	rp.put("TopicM", 0, "a", "TagA")
	testutil.Eventually(t, "the arrival applied to the hold table",
		func() bool { return rp.p.hold.applied.Load() > applied })
	require.Equal(t, 1, rp.p.HeldCount(), "a TagA arrival does not wake a TagB pull")
	require.False(t, parked.answered(), "answered on a non-matching arrival")

	rp.put("TopicM", 0, "b", "TagB")
	resp := parked.Await()
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 2, 0, 2)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "b", string(recs[0].Body))
}

func TestLongPollTimesOutWithPullNotFound(t *testing.T) {
	rp := startPlane(t, planeOptions{})
	rp.put("TopicT", 0, "x", "")
	const suspend = 300 * time.Millisecond
	start := time.Now()
	resp := rp.pull(remotingtest.PullRequest("G", "TopicT", 0, 1, 32, suspendFlags, suspend, "*")).Await()
	elapsed := time.Since(start)
	require.GreaterOrEqual(t, elapsed, suspend)
	require.Less(t, elapsed, 3*time.Second)
	requirePull(t, resp, codec.ResponsePullNotFound, "OFFSET_OVERFLOW_ONE", 1, 0, 1)
	require.Equal(t, 0, rp.p.HeldCount())
}

func TestShortPollingWhenLongPollingDisabled(t *testing.T) {
	rp := startPlane(t, planeOptions{settings: func(s *Settings) {
		s.LongPollingEnable = false
		s.ShortPollingTime = 200 * time.Millisecond
	}})
	rp.createTopic("TopicT", 1)
	require.Equal(t, 200*time.Millisecond, rp.p.hold.cfg.sweepInterval, "shortPollingTimeMills is the sweep period")
	start := time.Now()
	resp := rp.pull(remotingtest.PullRequest("G", "TopicT", 0, 0, 32, suspendFlags, 20*time.Second, "*")).Await()
	require.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond)
	require.Less(t, time.Since(start), 5*time.Second)
	requirePull(t, resp, codec.ResponsePullNotFound, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
}

func TestLongPollCommitsOffsetOnFirstPassOnly(t *testing.T) {
	rp := startPlane(t, planeOptions{})
	rp.createTopic("TopicC", 1)
	for range 8 {
		rp.put("TopicC", 0, "x", "")
	}
	cmd := remotingtest.PullRequest("GC", "TopicC", 0, 8, 32, suspendFlags|codec.PullSysFlagCommitOffset, 20*time.Second, "*")
	cmd.ExtFields["commitOffset"] = "7"
	parked := rp.pull(cmd)
	rp.waitHeld(1)
	require.Equal(t, int64(7), rp.tables.Offsets.Query("GC", "TopicC", 0))
	// Someone else moves the offset while the pull is parked; the re-run must not undo it.
	rp.tables.Offsets.Commit("GC", "TopicC", 0, 9)
	rp.put("TopicC", 0, "x", "")
	requirePull(t, parked.Await(), codec.ResponseSuccess, "FOUND", 9, 0, 9)
	require.Equal(t, int64(9), rp.tables.Offsets.Query("GC", "TopicC", 0))
}

// A pull's commit offset outside [0, the queue's max offset] is not stored; the pull itself is
// answered as usual and the refusal counted.
func TestPullCommitOffsetOutsideTheQueueIsNotStored(t *testing.T) {
	rp := startPlane(t, planeOptions{})
	var refused []string
	rp.tables.Offsets.SetRefusalObserver(func(reason string) { refused = append(refused, reason) })
	rp.createTopic("TopicO", 1)
	for range 3 {
		rp.put("TopicO", 0, "x", "")
	}
	for _, commit := range []string{"-1", "4", "9223372036854775807"} {
		cmd := remotingtest.PullRequest("GO", "TopicO", 0, 0, 32, codec.PullSysFlagSubscription|codec.PullSysFlagCommitOffset, 0, "*")
		cmd.ExtFields["commitOffset"] = commit
		requirePull(t, rp.pull(cmd).Await(), codec.ResponseSuccess, "FOUND", 3, 0, 3)
		require.Equal(t, int64(-1), rp.tables.Offsets.Query("GO", "TopicO", 0), "commit offset %s stored", commit)
	}
	require.Equal(t, []string{"offset_negative", "offset_past_max", "offset_past_max"}, refused)
	cmd := remotingtest.PullRequest("GO", "TopicO", 0, 0, 32, codec.PullSysFlagSubscription|codec.PullSysFlagCommitOffset, 0, "*")
	cmd.ExtFields["commitOffset"] = "3" // the max offset itself: everything consumed
	requirePull(t, rp.pull(cmd).Await(), codec.ResponseSuccess, "FOUND", 3, 0, 3)
	require.Equal(t, int64(3), rp.tables.Offsets.Query("GO", "TopicO", 0))
}

func TestLongPollHoldTableIsBounded(t *testing.T) {
	rp := startPlane(t, planeOptions{beforeRun: func(p *Plane) { p.hold.cfg.maxHeld = 2 }})
	rp.createTopic("TopicB", 4)
	var parked []*pending
	for q := range int32(2) {
		parked = append(parked, rp.pull(remotingtest.PullRequest("G", "TopicB", q, 0, 32, suspendFlags, 20*time.Second, "*")))
	}
	rp.waitHeld(2)
	busy := counterValue(t, rp.busy)
	resp := rp.pull(remotingtest.PullRequest("G", "TopicB", 2, 0, 32, suspendFlags, 20*time.Second, "*")).Await()
	require.Equal(t, int32(codec.ResponseSystemBusy), resp.Code)
	require.Equal(t, remarkHoldFull, resp.Remark)
	require.Equal(t, busy+1, counterValue(t, rp.busy), "counted as SYSTEM_BUSY pull_hold_full")

	// Stopping the hold service answers everything parked.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rp.p.Stop(ctx))
	for _, pr := range parked {
		requirePull(t, pr.Await(), codec.ResponsePullNotFound, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
	}
	require.Equal(t, 0, rp.p.HeldCount())
	// After Stop a pull that would park is answered at once.
	resp = rp.pull(remotingtest.PullRequest("G", "TopicB", 0, 0, 32, suspendFlags, 20*time.Second, "*")).Await()
	requirePull(t, resp, codec.ResponsePullNotFound, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
}

func TestLongPollParkRacingArrivalIsRerun(t *testing.T) {
	// A request that reaches the hold service after its data arrived (the arrival was
	// notified while nothing was parked) must not wait for the sweep or its timeout.
	rp := startPlane(t, planeOptions{})
	rp.put("TopicR", 0, "already here", "")
	conn := &conntest.Conn{}
	pr := rp.p.pulls.Get().(*pullRequest)
	pr.to = rp.replies.To(conn, &codec.RemotingCommand{Opaque: 42})
	pr.header = codec.PullMessageRequestHeader{ConsumerGroup: "G", Topic: "TopicR", QueueID: 0, QueueOffset: 0, MaxMsgNums: 32}
	pr.filter.all = true
	pr.suspendTimeout = time.Minute
	require.True(t, rp.p.hold.suspend(pr))
	testutil.Eventually(t, "the parked pull's answer", func() bool { return len(conn.MustResponses(t)) == 1 })
	resp := conn.MustResponses(t)[0]
	require.Equal(t, int32(42), resp.Opaque)
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 1, 0, 1)
	require.Equal(t, 0, rp.p.HeldCount())
}

func TestLongPollManyParkedPullsAllWake(t *testing.T) {
	rp := startPlane(t, planeOptions{})
	const queues = 4
	const perQueue = 8
	rp.createTopic("TopicMany", queues)
	type parkedPull struct {
		q  int32
		pr *pending
	}
	var all []parkedPull
	for i := range perQueue {
		for q := range int32(queues) {
			pr := rp.pull(remotingtest.PullRequest("G"+strconv.Itoa(i), "TopicMany", q, 0, 32, suspendFlags, 20*time.Second, "*"))
			all = append(all, parkedPull{q, pr})
		}
	}
	rp.waitHeld(queues * perQueue)
	for q := range int32(queues) {
		rp.put("TopicMany", q, "q"+strconv.Itoa(int(q)), "")
	}
	for _, p := range all {
		resp := p.pr.Await()
		requirePull(t, resp, codec.ResponseSuccess, "FOUND", 1, 0, 1)
		recs := remotingtest.Records(t, resp.Body)
		require.Len(t, recs, 1)
		require.Equal(t, "q"+strconv.Itoa(int(p.q)), string(recs[0].Body))
	}
	require.Equal(t, 0, rp.p.HeldCount())
}
