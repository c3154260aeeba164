package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

func TestLeanGeneratorKeepsTheWindowFull(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Count = 0
	cfg.Duration = 300 * time.Millisecond
	cfg.Warmup = 50 * time.Millisecond
	res, err := RunLean(context.Background(), cfg)
	require.NoError(t, err)
	require.Positive(t, res.Acked)
	require.Zero(t, res.Errors)
	require.NotNil(t, res.ClientCPU)
	require.GreaterOrEqual(t, b.sends.Load(), res.Acked, "every acknowledged message was sent")
	// Every request carried its own UNIQ_KEY: the broker stored distinct keys.
	keys := map[string]bool{}
	var stored int
	for q := range cfg.Queues {
		for _, rec := range b.stored(cfg.Topic, q) {
			r, err := codec.DecodeRecord(rec, true)
			require.NoError(t, err)
			key, ok := codec.LookupProperty(r.Properties, codec.PropertyUniqClientMessageIDKey)
			require.True(t, ok)
			keys[string(key)] = true
			stored++
		}
	}
	require.Equal(t, stored, len(keys))
	require.Regexp(t, `^mqbench: mode=lean msgs=\d+ secs=[\d.]+ rate=[\d.]+ errors=0 client_cpu_s=[\d.]+ client_cpu_share=[\d.]+ client_cpu_us_per_msg=[\d.]+ steal_share=(?:-1|[\d.]+)$`, res.SummaryLine())
}

func TestLeanGeneratorCountsFailedResponses(t *testing.T) {
	b := newTestFakeBroker(t)
	b.sendHook = func(int64) (codec.ResponseCode, <-chan struct{}) { return codec.ResponseCode(14), nil }
	cfg := testProducerConfig(b)
	cfg.Count = 0
	cfg.Duration = 200 * time.Millisecond
	res, err := RunLean(context.Background(), cfg)
	require.NoError(t, err)
	require.Zero(t, res.Acked)
	require.Positive(t, res.Errors)
}

func TestLeanGeneratorRefusesWhatItCannotDo(t *testing.T) {
	cfg := DefaultProducerConfig()
	cfg.Broker = "127.0.0.1:1"
	cfg.Batch = 2
	_, err := RunLean(context.Background(), cfg)
	require.True(t, errors.Is(err, ErrConfig), "%v", err)
}
