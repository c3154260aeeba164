package readplane

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/store"
)

func TestPullFarBehindRunsOnPool(t *testing.T) {
	rp := startPlane(t, planeOptions{fileStore: true, settings: func(s *Settings) {
		s.HotMaxBehindBytes = 0 // everything already written counts as cold
	}})
	for i := range 5 {
		rp.put("TopicF", 0, "f"+strconv.Itoa(i), "")
	}
	rp.waitMax("TopicF", 0, 5)
	loop, pool := counterValue(t, rp.p.pullsOnLoop), counterValue(t, rp.p.pullsOnPool)
	rc, pr := rp.request(remotingtest.PullRequest("G", "TopicF", 0, 0, 32, subFlag, 0, "*"))
	rest := rp.p.ProcessPullMessage(rc)
	require.NotNil(t, rest, "a cold pull continues on the pull pool")
	rp.pool.run(rest)
	resp := pr.Await()
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 5, 0, 5)
	require.Len(t, remotingtest.Records(t, resp.Body), 5)
	require.Equal(t, pool+1, counterValue(t, rp.p.pullsOnPool))
	// Offset == max needs no CommitLog read: the loop answers.
	rc, pr = rp.request(remotingtest.PullRequest("G", "TopicF", 0, 5, 32, subFlag, 0, "*"))
	require.Nil(t, rp.p.ProcessPullMessage(rc), "answered on the loop")
	requirePull(t, pr.Await(), codec.ResponsePullNotFound, "OFFSET_OVERFLOW_ONE", 5, 0, 5)
	require.Equal(t, loop+1, counterValue(t, rp.p.pullsOnLoop))
}

func TestPullHotRunsOnLoopWithFileStore(t *testing.T) {
	rp := startPlane(t, planeOptions{fileStore: true})
	phys := rp.put("TopicL", 0, "hot", "T")
	rp.waitMax("TopicL", 0, 1)
	loop := counterValue(t, rp.p.pullsOnLoop)
	rc, pr := rp.request(remotingtest.PullRequest("G", "TopicL", 0, 0, 32, subFlag, 0, "T"))
	require.Nil(t, rp.p.ProcessPullMessage(rc), "answered on the loop")
	resp := pr.Await()
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 1, 0, 1)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, phys, recs[0].PhysicalOffset)
	require.Equal(t, loop+1, counterValue(t, rp.p.pullsOnLoop))
}

func TestPullStatusCodeMapping(t *testing.T) {
	require.Equal(t, codec.ResponsePullNotFound, pullStatusCode(store.NoMessageInQueue, 0))
	require.Equal(t, codec.ResponsePullOffsetMoved, pullStatusCode(store.NoMessageInQueue, 1))
	require.Equal(t, codec.ResponseSystemError, pullStatusCode(store.GetMessageStatus(200), 0))
}
