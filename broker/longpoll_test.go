package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// Long polling itself (parking, arrivals, tag checks, timeouts, the bounded table, Stop) is
// tested in package readplane (longpoll_test.go there). Here: the broker's wiring of it — the
// hold service runs, the store's arriving listener reaches it, and a woken pull is answered on
// its connection.

const suspendFlags = codec.PullSysFlagSuspend | codec.PullSysFlagSubscription

// createTopic creates a read-write topic with queues queues.
func createTopic(t testing.TB, b *Broker, name string, queues int32) {
	t.Helper()
	tc := codec.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	require.NoError(t, b.topics.Update(tc))
}

func testLongPollWiring(t *testing.T, fileStore bool) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: fileStore})
	consumer := remotingtest.Dial(t, db.addr)
	producer := remotingtest.Dial(t, db.addr)
	sendOK(t, producer, sendV1("TopicW", 0, []byte("first"), ""))
	testutil.Eventually(t, "TopicW/0 dispatched",
		func() bool { return db.b.store.GetMaxOffsetInQueue("TopicW", 0) == 1 })

	opaque := consumer.Request(remotingtest.PullRequest("G", "TopicW", 0, 1, 32, suspendFlags, 20*time.Second, "*"))
	// Parked (a "*" pull whose park is taken after the arrival is re-run at once, with the
	// same answer: no need to wait for the hold goroutine's table).
	testutil.Eventually(t, "the pull parked", func() bool { return db.b.read.HeldCount() == 1 })

	h := sendOK(t, producer, sendV1("TopicW", 0, []byte("second"), ""))
	resp := consumer.Await(opaque)
	require.Equal(t, opaque, resp.Opaque)
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 2, 0, 2)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "second", string(recs[0].Body))
	require.Equal(t, offsetOf(t, h.MsgID), recs[0].PhysicalOffset)
	require.Equal(t, 0, db.b.read.HeldCount())
}

func TestLongPollWiring(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testLongPollWiring(t, false) })
	t.Run("filestore", func(t *testing.T) { testLongPollWiring(t, true) })
}
