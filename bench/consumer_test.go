package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func testConsumerConfig(b *fakeBroker) ConsumerConfig {
	cfg := DefaultConsumerConfig()
	cfg.Broker = b.addr
	cfg.Topic = "T"
	cfg.Queues = 4
	cfg.Conns = 2
	cfg.Warmup = 0
	cfg.Duration = 20 * time.Second // a bound; the runs below stop on Count
	cfg.SuspendTimeout = 200 * time.Millisecond
	cfg.MaxMsgNums = 16
	return cfg
}

func runConsumer(t *testing.T, cfg ConsumerConfig) *ConsumeResult {
	t.Helper()
	c, err := NewConsumer(cfg, nil, Hooks{})
	require.NoError(t, err)
	res, err := c.Run(context.Background())
	require.NoError(t, err)
	return res
}

// A consume run reads back exactly what a produce run sent: every acknowledged message,
// once, stamped, in queue-offset order, leaving no lag, and commits the offsets reached.
func TestConsumeReadsBackExactlyWhatWasSent(t *testing.T) {
	for _, longPolling := range []bool{true, false} {
		t.Run(fmt.Sprintf("longPolling=%v", longPolling), func(t *testing.T) {
			b := newTestFakeBroker(t)
			pcfg := testProducerConfig(b)
			pcfg.Count = 1000
			pcfg.MessageBytes = 64
			pres := runProducer(t, pcfg)
			require.EqualValues(t, 1000, pres.Acked)

			cfg := testConsumerConfig(b)
			cfg.LongPolling = longPolling
			cfg.Count = 1000
			res := runConsumer(t, cfg)
			require.EqualValues(t, 1000, res.Received)
			require.EqualValues(t, 64000, res.Bytes)
			require.EqualValues(t, 1000, res.Stamped)
			require.EqualValues(t, 0, res.OffsetGaps)
			require.EqualValues(t, 0, res.Errors)
			require.EqualValues(t, 0, res.Lag)
			require.Len(t, res.LagByQueue, 4)
			require.EqualValues(t, 1000, res.Latency.Count)
			require.Greater(t, res.Latency.MaxUs, 0.0)
			b.mu.Lock()
			for q := range 4 {
				require.EqualValues(t, 250, b.committed[fmt.Sprintf("%s/T/%d", cfg.Group, q)], "queue %d", q)
			}
			b.mu.Unlock()

			// The same group again starts at the committed offsets: nothing left to read.
			cfg.Count = 0
			cfg.Duration = 300 * time.Millisecond
			res = runConsumer(t, cfg)
			require.EqualValues(t, 0, res.Received)
			require.Positive(t, res.Pulls)
			require.EqualValues(t, 0, res.Lag)
		})
	}
}

func TestConsumeFromLastSeesOnlyNewMessages(t *testing.T) {
	b := newTestFakeBroker(t)
	pcfg := testProducerConfig(b)
	pcfg.Count = 100
	runProducer(t, pcfg)

	cfg := testConsumerConfig(b)
	cfg.From = FromLast
	cfg.Count = 0
	cfg.Duration = 200 * time.Millisecond
	cfg.Commit = false
	res := runConsumer(t, cfg)
	require.EqualValues(t, 0, res.Received)
	b.mu.Lock()
	require.Empty(t, b.committed, "no commit")
	b.mu.Unlock()

	cfg.From = FromFirst
	cfg.Count = 100
	cfg.Duration = 20 * time.Second
	res = runConsumer(t, cfg)
	require.EqualValues(t, 100, res.Received)
}

// Mixed: the consumer (from the last offset) receives exactly what the producer sends
// during the run, with end-to-end latency from the body stamps; it also finds the
// topic's queues through the producer when the name server has no route yet.
func TestRunMixed(t *testing.T) {
	b := newTestFakeBroker(t)
	pcfg := testProducerConfig(b)
	pcfg.Broker, pcfg.Namesrv, pcfg.Queues = "", b.addr, 0
	pcfg.Topic = "Mixed"
	pcfg.Count = 500
	ccfg := testConsumerConfig(b)
	ccfg.Broker, ccfg.Namesrv, ccfg.Queues = "", b.addr, 0
	ccfg.Topic = "Mixed"
	ccfg.From = FromLast
	ccfg.Count = 500
	pres, cres, err := RunMixed(context.Background(), pcfg, ccfg, nil, Hooks{})
	require.NoError(t, err)
	require.EqualValues(t, 500, pres.Acked)
	require.EqualValues(t, 500, cres.Received)
	require.EqualValues(t, 500, cres.Stamped)
	require.EqualValues(t, 0, cres.Lag)
	require.Equal(t, pres.Targets, cres.Targets)
}

// The lag of each second is sampled into the series.
func TestConsumeSeriesLag(t *testing.T) {
	series := NewSeries()
	series.SetLag(2, 42)
	series.Close()
	rows := series.Rows()
	require.Len(t, rows, 3)
	require.EqualValues(t, -1, rows[0].Lag)
	require.EqualValues(t, 42, rows[2].Lag)
}

func TestConsumerConfigValidate(t *testing.T) {
	base := DefaultConsumerConfig()
	base.Namesrv = "127.0.0.1:1"
	require.NoError(t, base.Validate())
	for name, mutate := range map[string]func(*ConsumerConfig){
		"both":    func(c *ConsumerConfig) { c.Broker = "x:1" },
		"group":   func(c *ConsumerConfig) { c.Group = "" },
		"from":    func(c *ConsumerConfig) { c.From = "middle" },
		"suspend": func(c *ConsumerConfig) { c.SuspendTimeout = 0 },
		"max":     func(c *ConsumerConfig) { c.MaxMsgNums = 0 },
		"no end":  func(c *ConsumerConfig) { c.Duration, c.Count = 0, 0 },
	} {
		c := base
		mutate(&c)
		require.ErrorIs(t, c.Validate(), ErrConfig, name)
	}
}
