package readplane

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

const remarkSQL92Off = "The broker does not support consumer to filter message by SQL92"

// sqlPlane is a plane with enablePropertyFilter as given.
func sqlPlane(t *testing.T, fileStore, on bool) *readPlane {
	return startPlane(t, planeOptions{fileStore: fileStore, live: func(l *live.Settings) { l.EnablePropertyFilter.Store(on) }})
}

// subscribeSQL sets group's heartbeat subscription to topic: an SQL92 expression.
func (rp *readPlane) subscribeSQL(group, topic, expr string, version int64) {
	rp.subs.mu.Lock()
	defer rp.subs.mu.Unlock()
	rp.subs.m[[2]string{group, topic}] = &codec.SubscriptionData{Topic: topic, SubString: expr, SubVersion: version,
		ExpressionType: codec.ExpressionTypeSQL92}
}

// putPriced stores n messages body-i with price=i and TAGS TagA (even i) or TagB, returning
// their CommitLog offsets.
func (rp *readPlane) putPriced(topic string, n int) []int64 {
	phys := make([]int64, n)
	for i := range n {
		tag := "TagA"
		if i%2 == 1 {
			tag = "TagB"
		}
		props := codec.AppendProperty(nil, codec.PropertyTags, tag)
		props = codec.AppendProperty(props, "price", strconv.Itoa(i))
		phys[i] = rp.putProps(topic, 0, "body-"+strconv.Itoa(i), props)
	}
	rp.waitMax(topic, 0, int64(n))
	return phys
}

// sqlPull is a pull that carries its SQL92 subscription (the SUBSCRIPTION sys flag).
func sqlPull(group, topic string, offset int64, sysFlag int32, suspend time.Duration, expr string) *codec.RemotingCommand {
	cmd := remotingtest.PullRequest(group, topic, 0, offset, 32, sysFlag, suspend, expr)
	cmd.ExtFields["expressionType"] = codec.ExpressionTypeSQL92
	return cmd
}

// requireBodies checks a FOUND answer's records: bodies and CommitLog offsets.
func requireBodies(t *testing.T, resp *codec.RemotingCommand, bodies []string, phys []int64) {
	t.Helper()
	recs := remotingtest.Records(t, resp.Body)
	got, gotPhys := make([]string, len(recs)), make([]int64, len(recs))
	for i, r := range recs {
		got[i], gotPhys[i] = string(r.Body), r.PhysicalOffset
	}
	require.Equal(t, bodies, got)
	require.Equal(t, phys, gotPhys)
}

// TestPullSQL92FromHeartbeat: a heartbeat's SQL92 subscription gets exactly the matching
// messages; nextBeginOffset passes the ones filtered out, and a range with no match answers
// PULL_RETRY_IMMEDIATELY (NO_MATCHED_MESSAGE) with the offset past it, as RocketMQ does.
func TestPullSQL92FromHeartbeat(t *testing.T) {
	for _, fileStore := range []bool{false, true} {
		t.Run(map[bool]string{false: "memstore", true: "filestore"}[fileStore], func(t *testing.T) {
			rp := sqlPlane(t, fileStore, true)
			phys := rp.putPriced("TopicS", 8)
			rp.subscribeSQL("G", "TopicS", "TAGS = 'TagA' AND price BETWEEN 2 AND 6", 1)

			resp := rp.call(remotingtest.PullRequest("G", "TopicS", 0, 0, 32, 0, 0, ""))
			requirePull(t, resp, codec.ResponseSuccess, "FOUND", 8, 0, 8)
			requireBodies(t, resp, []string{"body-2", "body-4", "body-6"}, []int64{phys[2], phys[4], phys[6]})

			resp = rp.call(remotingtest.PullRequest("G", "TopicS", 0, 7, 32, 0, 0, ""))
			requirePull(t, resp, codec.ResponsePullRetryImmediately, "NO_MATCHED_MESSAGE", 8, 0, 8)
			require.Empty(t, resp.Body)

			// A new subscription version with another expression replaces the compiled one.
			rp.subscribeSQL("G", "TopicS", "price IN ('1', '7') OR missing IS NOT NULL", 2)
			resp = rp.call(remotingtest.PullRequest("G", "TopicS", 0, 0, 32, 0, 0, ""))
			requirePull(t, resp, codec.ResponseSuccess, "FOUND", 8, 0, 8)
			requireBodies(t, resp, []string{"body-1", "body-7"}, []int64{phys[1], phys[7]})
			require.Equal(t, 1, rp.p.filters.Len(), "one compiled subscription per group and topic")
		})
	}
}

func TestPullSQL92Refusals(t *testing.T) {
	off := sqlPlane(t, false, false)
	off.putPriced("TopicS", 1)
	off.subscribeSQL("G", "TopicS", "price > 0", 1)
	resp := off.call(remotingtest.PullRequest("G", "TopicS", 0, 0, 32, 0, 0, ""))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, remarkSQL92Off, resp.Remark)
	resp = off.call(sqlPull("G", "TopicS", 0, subFlag, 0, "price > 0"))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, remarkSQL92Off, resp.Remark)

	// A heartbeat expression that does not compile: Java keeps no filter data for it.
	off.subscribeSQL("G", "TopicS", "price >", 2)
	resp = off.call(remotingtest.PullRequest("G", "TopicS", 0, 0, 32, 0, 0, ""))
	require.Equal(t, int32(codec.ResponseFilterDataNotExist), resp.Code)
	require.Equal(t, remarkFilterDataNotExist, resp.Remark)

	on := sqlPlane(t, false, true)
	on.putPriced("TopicS", 1)
	on.subscribeSQL("G", "TopicS", "price > 'x'", 1)
	resp = on.call(remotingtest.PullRequest("G", "TopicS", 0, 0, 32, 0, 0, ""))
	require.Equal(t, int32(codec.ResponseFilterDataNotExist), resp.Code)
	resp = on.call(sqlPull("G2", "TopicS", 0, subFlag, 0, "price >"))
	require.Equal(t, int32(codec.ResponseSubscriptionParseFailed), resp.Code)
	require.Equal(t, "parse the consumer's subscription failed", resp.Remark)
	resp = on.call(sqlPull("G2", "TopicS", 0, subFlag, 0, ""))
	require.Equal(t, int32(codec.ResponseSubscriptionParseFailed), resp.Code)
}

// TestPullSQL92InRequest: a pull that carries its SQL92 subscription (lite pull consumers).
func TestPullSQL92InRequest(t *testing.T) {
	rp := sqlPlane(t, true, true)
	phys := rp.putPriced("TopicR", 5)
	resp := rp.call(sqlPull("G", "TopicR", 0, subFlag, 0, "price >= 3"))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 5, 0, 5)
	requireBodies(t, resp, []string{"body-3", "body-4"}, []int64{phys[3], phys[4]})
}

// TestLongPollSQL92WakesOnMatchingArrival: a parked SQL92 pull stays parked on an arrival
// whose properties do not match, and wakes on one that does (PullRequestHoldService checks
// the properties of the new message).
func TestLongPollSQL92WakesOnMatchingArrival(t *testing.T) {
	for _, fileStore := range []bool{false, true} {
		t.Run(map[bool]string{false: "memstore", true: "filestore"}[fileStore], func(t *testing.T) {
			rp := sqlPlane(t, fileStore, true)
			rp.createTopic("TopicL", 1)
			rp.subscribeSQL("G", "TopicL", "color = 'red'", 1)
			parked := rp.pull(remotingtest.PullRequest("G", "TopicL", 0, 0, 32, codec.PullSysFlagSuspend, 20*time.Second, ""))
			rp.waitHeld(1)

			applied := rp.p.hold.applied.Load()
			rp.putProps("TopicL", 0, "blue", codec.AppendProperty(nil, "color", "blue"))
			testutil.Eventually(t, "the arrival applied to the hold table",
				func() bool { return rp.p.hold.applied.Load() > applied })
			require.Equal(t, 1, rp.p.HeldCount(), "a blue arrival does not wake a red pull")
			require.False(t, parked.answered())

			phys := rp.putProps("TopicL", 0, "red", codec.AppendProperty(nil, "color", "red"))
			resp := parked.Await()
			requirePull(t, resp, codec.ResponseSuccess, "FOUND", 2, 0, 2)
			requireBodies(t, resp, []string{"red"}, []int64{phys})
		})
	}
}
