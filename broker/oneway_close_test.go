package broker

import (
	"strconv"
	"testing"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

// TestOffsetsSentJustBeforeACloseCount: the Go client's Shutdown writes its consumer offsets
// (UPDATE_CONSUMER_OFFSET, one per queue, without waiting for the answers) and closes its connections
// at once. Every one of those requests counts, however soon the close follows, with either network
// engine: each round moves all four queues' offsets to a value the round before did not have. With
// gnet, a request still unread when writing an earlier answer failed (the peer had reset the
// connection) was lost: 1 run in 4 of the Go client's end-to-end restart test, and every run of this
// one within 20 rounds.
func TestOffsetsSentJustBeforeACloseCount(t *testing.T) {
	for _, engine := range []netio.NetEngine{netio.NetEngineGnet, netio.NetEngineStd} {
		t.Run(engine.String(), func(t *testing.T) {
			const topic, group = "CloseOffsets", "CloseOffsetsG"
			rb := startRelBroker(t, func(c *Config) { c.NetEngine = engine }, nil)
			c := remotingtest.Dial(t, rb.addr)
			relCreateTopic(t, c, topic, 4)
			for q := range int32(4) {
				for range 3 {
					sendOK(t, c, sendV2(topic, q, []byte("m"), ""))
				}
			}
			testutil.Eventually(t, "12 messages dispatched", func() bool {
				for q := range int32(4) {
					if rb.b.store.GetMaxOffsetInQueue(topic, q) != 3 {
						return false
					}
				}
				return true
			})
			heartbeat(t, c, group, topic, "*", 1)
			for round := range 40 {
				want := int64(round%3 + 1)
				oc := remotingtest.Dial(t, rb.addr)
				for q := range 4 {
					oc.Send(codec.NewRequest(codec.RequestUpdateConsumerOffset, map[string]string{"consumerGroup": group,
						"topic": topic, "queueId": strconv.Itoa(q), "commitOffset": strconv.FormatInt(want, 10)}, nil))
				}
				_ = oc.Close()
				testutil.Eventually(t, "round "+strconv.Itoa(round)+": the four offsets", func() bool {
					for q := range int32(4) {
						if rb.b.offsets.Query(group, topic, q) != want {
							return false
						}
					}
					return true
				})
			}
		})
	}
}
