package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRunE2EMatchesEveryMessageOnce: against the in-process fake broker, every message
// written is received exactly once, and both latencies have one sample per message.
func TestRunE2EMatchesEveryMessageOnce(t *testing.T) {
	b := newTestFakeBroker(t)
	pcfg := testProducerConfig(b)
	pcfg.Rate, pcfg.Count, pcfg.MessageBytes = 4000, 600, 64
	ccfg := testConsumerConfig(b)
	ccfg.From, ccfg.Conns = FromLast, 2
	res, err := RunE2E(context.Background(), E2EConfig{Producer: pcfg, Consumer: ccfg, DrainTimeout: 10 * time.Second}, nil, Hooks{})
	require.NoError(t, err)
	require.EqualValues(t, 600, res.Produce.Acked)
	require.EqualValues(t, 600, res.Written)
	require.Equal(t, [4]int64{600, 0, 0, 0}, [4]int64{res.Matched, res.Missing, res.Duplicates, res.Foreign})
	require.EqualValues(t, 600, res.Consume.Received)
	require.EqualValues(t, 600, res.Consume.Stamped)
	require.EqualValues(t, 600, res.Consume.Latency.Count, "an end-to-end sample per message")
	require.EqualValues(t, 600, res.Produce.Latency.Count, "a send sample per message")
	require.Positive(t, res.Consume.Latency.P50Us)
	require.EqualValues(t, 600, b.storedTotal("T"))
}

func TestE2EConfigValidate(t *testing.T) {
	b := newTestFakeBroker(t)
	ok := E2EConfig{Producer: testProducerConfig(b), Consumer: testConsumerConfig(b), DrainTimeout: time.Second}
	ok.Producer.Rate = 100
	require.NoError(t, ok.Validate())
	for name, mutate := range map[string]func(*E2EConfig){
		"Rate":         func(c *E2EConfig) { c.Producer.Rate = 0 },
		"MessageBytes": func(c *E2EConfig) { c.Producer.MessageBytes = BodySeqBytes - 1 },
		"Batch":        func(c *E2EConfig) { c.Producer.Batch = 4 },
		"DrainTimeout": func(c *E2EConfig) { c.DrainTimeout = 0 },
		"Group":        func(c *E2EConfig) { c.Consumer.Group = "" },
	} {
		c := ok
		mutate(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrConfig, name)
		require.ErrorContains(t, err, name)
	}
}

// TestE2ELatencyOnOneClock: stamp and receipt are wall() readings of one clock, so the
// latency is the monotonic time between them whatever the clock's wall start (injected
// here); a stamp ahead of the receipt reads 0.
func TestE2ELatencyOnOneClock(t *testing.T) {
	for _, base := range []time.Time{time.Unix(1_700_000_000, 0), time.Unix(0, 42), time.Date(2286, 1, 1, 0, 0, 0, 0, time.UTC)} {
		clk := clock{base: base}
		stamp := clk.wall(int64(5 * time.Millisecond))
		require.Equal(t, int64(750*time.Microsecond), e2eLatencyNs(stamp, clk.wall(int64(5750*time.Microsecond))), base)
	}
	require.Zero(t, e2eLatencyNs(2_000, 1_000))

	// Through the body: the producer stamps, the consumer reads it back.
	clk := clock{base: time.Unix(1_800_000_000, 0)}
	body := make([]byte, 64)
	fillBody(body)
	stampBody(body, clk.wall(100))
	stampBodySeq(body, bodySeq(3, 77))
	ts, ok := BodyStamp(body)
	require.True(t, ok)
	require.EqualValues(t, 900, e2eLatencyNs(ts, clk.wall(1000)))
	seq, ok := BodySeq(body)
	require.True(t, ok)
	require.Equal(t, uint64(3)<<40|77, seq)

	short := make([]byte, BodySeqBytes-1)
	fillBody(short)
	_, ok = BodyStamp(short)
	require.True(t, ok, "16..23 bytes: a stamp without a sequence number")
	_, ok = BodySeq(short)
	require.False(t, ok)
}

func TestE2EMatcherCounts(t *testing.T) {
	m := newE2EMatcher(2)
	for n := range int64(3000) {
		m.mark(bodySeq(int(n%2), n/2))
	}
	m.mark(bodySeq(1, 7))     // again
	m.mark(bodySeq(2, 0))     // no such connection
	m.mark(bodySeq(0, 1<<33)) // beyond what a run writes
	done := m.expect(3001)
	select {
	case <-done:
		t.Fatal("3000 of 3001 received")
	default:
	}
	require.Equal(t, e2eCounts{distinct: 3000, duplicates: 1, foreign: 2}, m.counts())
	m.mark(bodySeq(0, 1500))
	<-done
	require.Equal(t, e2eCounts{distinct: 3001, duplicates: 1, foreign: 2}, m.counts())
	m.mark(bodySeq(0, 1501)) // past the target: no second close
	<-m.expect(1)
}
