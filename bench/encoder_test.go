package bench

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

func testEncoderConfig() ProducerConfig {
	cfg := DefaultProducerConfig()
	cfg.Broker = "127.0.0.1:1"
	return cfg
}

// A templated frame is byte for byte the frame the full encoder makes for the same opaque,
// time and UNIQ_KEY, and decodes to the message's fields.
func TestTemplatedFrameEqualsFullEncoding(t *testing.T) {
	cfg := testEncoderConfig()
	ip := netip.MustParseAddr("10.1.2.3")
	fast := newEncoder(&cfg, 0, codec.NewUniqKeyGenerator(ip, 7, 99))
	full := newEncoder(&cfg, 0, codec.NewUniqKeyGenerator(ip, 7, 99))
	require.True(t, fast.templated)
	base := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	seen := map[int32]bool{}
	for i, q := range []int32{0, 3, 0, 11, 3} {
		now := base.Add(time.Duration(i) * 1234567 * time.Microsecond)
		opaque := int32(opaqueBase + 17*i)
		got, err := fast.appendRequest([]byte("prefix"), opaque, q, 1, now)
		require.NoError(t, err)
		if !seen[q] {
			// Building queue q's template took a key from fast's generator; keep full's
			// keys in step.
			seen[q] = true
			full.uniq.Append(nil, now)
		}
		want, err := full.encodeRequest([]byte("prefix"), opaque, q, 1, now, now.UnixMilli())
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "message %d, queue %d", i, q)

		var cmd codec.RemotingCommand
		require.NoError(t, codec.DecodeCommandInto(&cmd, got[len("prefix")+4:]))
		require.Equal(t, opaque, cmd.Opaque)
		require.Equal(t, strconv.FormatInt(now.UnixMilli(), 10), cmd.ExtFields["g"], "bornTimestamp (V2 name)")
		require.Equal(t, strconv.Itoa(int(q)), cmd.ExtFields["e"], "queueId (V2 name)")
		require.Len(t, cmd.Body, cfg.MessageBytes)
	}
	require.Len(t, fast.templates, 3, "one template per queue")
	require.Equal(t, full.bodyOffs, fast.bodyOffs, "body offsets for stamping")
}

// Tags, keys and batches are encoded in full (their lengths vary per message).
func TestEncoderTemplatesOnlyPlainSends(t *testing.T) {
	for _, mod := range []func(*ProducerConfig){
		func(c *ProducerConfig) { c.Tags = []string{"A"} },
		func(c *ProducerConfig) { c.Keys = true },
		func(c *ProducerConfig) { c.Batch = 4 },
	} {
		cfg := testEncoderConfig()
		mod(&cfg)
		enc := newEncoder(&cfg, 0, codec.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), 1, 1))
		require.False(t, enc.templated)
		_, err := enc.appendRequest(nil, opaqueBase, 0, cfg.Batch, time.Now())
		require.NoError(t, err)
		require.Empty(t, enc.templates)
	}
}

// The writer's per-message work allocates nothing once the buffers have grown: encode,
// stamp, and the reader's peek at the response.
func TestSendPathAllocatesNothingPerMessage(t *testing.T) {
	cfg := testEncoderConfig()
	enc := newEncoder(&cfg, 0, codec.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), 1, 1))
	buf := make([]byte, 0, 64<<10)
	now := time.Now()
	resp := sendResponseFrame(t, codec.ResponseSuccess, opaqueBase+3)
	opaque := int32(opaqueBase)
	step := func() {
		enc.bodyOffs = enc.bodyOffs[:0]
		buf = buf[:0]
		for range 16 { // one write's worth
			opaque++
			var err error
			if buf, err = enc.appendRequest(buf, opaque, opaque%8, 1, now); err != nil {
				t.Fatal(err)
			}
		}
		enc.stamp(buf, now.UnixNano())
		if _, _, _, ok := peekResponse(resp); !ok {
			t.Fatal("peek failed")
		}
	}
	step() // the templates and buffers
	require.Zero(t, testing.AllocsPerRun(200, step))
}
