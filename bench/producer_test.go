package bench

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

func newTestFakeBroker(t *testing.T) *fakeBroker {
	t.Helper()
	b, err := startFakeBroker("")
	require.NoError(t, err)
	t.Cleanup(b.close)
	return b
}

func testProducerConfig(b *fakeBroker) ProducerConfig {
	cfg := DefaultProducerConfig()
	cfg.Broker = b.addr
	cfg.Topic = "T"
	cfg.Queues = 4
	cfg.Conns = 2
	cfg.Inflight = 8
	cfg.MessageBytes = 100
	cfg.Duration = 0
	cfg.Count = 2000
	cfg.Warmup = 0
	cfg.DrainTimeout = 5 * time.Second
	return cfg
}

func runProducer(t *testing.T, cfg ProducerConfig) *ProduceResult {
	t.Helper()
	p, err := NewProducer(cfg, nil, Hooks{})
	require.NoError(t, err)
	res, err := p.Run(context.Background())
	require.NoError(t, err)
	return res
}

// requireAccounted checks the invariant of every acknowledged run.
func requireAccounted(t *testing.T, res *ProduceResult) {
	t.Helper()
	require.Equal(t, res.Sent, res.Acked+res.Errors, "sent = acknowledged + errors")
	var byCode int64
	for _, n := range res.ErrorsByCode {
		byCode += n
	}
	require.Equal(t, res.Errors, byCode, "every error has a code")
	var seriesMsgs, seriesErrs int64
	for _, r := range res.Series {
		seriesMsgs += r.Msgs
		seriesErrs += r.Errors
	}
	require.Equal(t, res.Acked, seriesMsgs, "per-second series adds up")
	require.Equal(t, res.Errors, seriesErrs)
}

func TestProduceClosedLoopAccountsEveryMessage(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Tags = []string{"TagA", "TagB"}
	cfg.Keys = true
	res := runProducer(t, cfg)
	requireAccounted(t, res)
	require.EqualValues(t, 2000, res.Sent)
	require.EqualValues(t, 2000, res.Acked)
	require.EqualValues(t, 0, res.Errors)
	require.EqualValues(t, 2000*100, res.Bytes)
	require.EqualValues(t, 2000, res.Latency.Count, "one latency sample per request")
	require.Greater(t, res.Latency.MaxUs, 0.0)
	require.Nil(t, res.Service, "closed loop keeps no separate service time")
	require.Greater(t, res.MsgsPerSec(), 0.0)
	require.EqualValues(t, 2000, b.storedTotal("T"))
	// Two connections round-robin over 4 queues, starting on different queues: even.
	for q := range 4 {
		recs := b.stored("T", q)
		require.Len(t, recs, 500, "queue %d", q)
		r, err := codec.DecodeRecord(recs[0], true)
		require.NoError(t, err)
		require.Len(t, r.Body, 100)
		stamp, ok := BodyStamp(r.Body)
		require.True(t, ok, "body carries the send stamp")
		require.InDelta(t, float64(time.Now().UnixNano()), float64(stamp), float64(time.Minute))
		props := codec.DecodeProperties(r.Properties)
		require.Len(t, props[codec.PropertyUniqClientMessageIDKey], 32)
		require.Contains(t, []string{"TagA", "TagB"}, props[codec.PropertyTags])
		require.Regexp(t, `^mqbench-[01]-\d+$`, props[codec.PropertyKeys])
	}
}

func TestProduceCountsErrorsByCode(t *testing.T) {
	b := newTestFakeBroker(t)
	b.sendHook = func(n int64) (codec.ResponseCode, <-chan struct{}) {
		if n%10 == 0 {
			return codec.ResponseSystemBusy, nil
		}
		return codec.ResponseSuccess, nil
	}
	res := runProducer(t, testProducerConfig(b))
	requireAccounted(t, res)
	require.EqualValues(t, 2000, res.Sent)
	require.EqualValues(t, 1800, res.Acked)
	require.Equal(t, map[string]int64{"SYSTEM_BUSY(2)": 200}, res.ErrorsByCode)
	require.EqualValues(t, 1800, b.storedTotal("T"))
}

// Requests the broker never answers become TIMEOUT errors after the drain timeout.
func TestProduceUnansweredRequestsTimeOut(t *testing.T) {
	b := newTestFakeBroker(t)
	never := make(chan struct{})
	t.Cleanup(func() { close(never) }) // runs before b.close (cleanups are LIFO)
	b.sendHook = func(n int64) (codec.ResponseCode, <-chan struct{}) {
		if n == 5 || n == 6 {
			return codec.ResponseSuccess, never
		}
		return codec.ResponseSuccess, nil
	}
	cfg := testProducerConfig(b)
	cfg.Count = 100
	cfg.DrainTimeout = 200 * time.Millisecond
	res := runProducer(t, cfg)
	requireAccounted(t, res)
	require.EqualValues(t, 100, res.Sent)
	require.EqualValues(t, 98, res.Acked)
	require.Equal(t, map[string]int64{ErrorTimeout: 2}, res.ErrorsByCode)
}

// A connection the broker closes fails its requests in flight as CONNECTION_LOST.
func TestProduceConnectionLost(t *testing.T) {
	b := newTestFakeBroker(t)
	release := make(chan struct{})
	var once sync.Once
	b.sendHook = func(n int64) (codec.ResponseCode, <-chan struct{}) {
		if n == 50 {
			// Drop every connection while this request is held.
			b.mu.Lock()
			for c := range b.conns {
				_ = c.Close()
			}
			b.mu.Unlock()
			once.Do(func() { close(release) })
			return codec.ResponseSuccess, release
		}
		return codec.ResponseSuccess, nil
	}
	cfg := testProducerConfig(b)
	cfg.Conns, cfg.Inflight, cfg.Count = 1, 4, 1000
	p, err := NewProducer(cfg, nil, Hooks{})
	require.NoError(t, err)
	res, err := p.Run(context.Background())
	require.NoError(t, err, "a run with results is not an error")
	requireAccounted(t, res)
	require.Len(t, res.ConnErrors, 1)
	require.Positive(t, res.ErrorsByCode[ErrorConnectionLost])
	require.Less(t, res.Sent, int64(1000), "the connection stopped sending")
}

func TestProduceBatch(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Batch = 10
	cfg.Count = 1005 // the last request of one connection carries the remainder
	res := runProducer(t, cfg)
	requireAccounted(t, res)
	require.EqualValues(t, 1005, res.Acked)
	require.EqualValues(t, 102, res.Latency.Count, "latency per request: 503 and 502 messages = 51 requests each")
	require.EqualValues(t, 1005, b.storedTotal("T"))
	for q := range 4 {
		for _, raw := range b.stored("T", q) {
			r, err := codec.DecodeRecord(raw, true)
			require.NoError(t, err)
			_, ok := BodyStamp(r.Body)
			require.True(t, ok, "every batch item is stamped")
			require.Len(t, codec.DecodeProperties(r.Properties)[codec.PropertyUniqClientMessageIDKey], 32)
		}
	}
}

func TestProduceOneway(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Oneway = true
	cfg.Count = 500
	res := runProducer(t, cfg)
	require.EqualValues(t, 500, res.Sent)
	require.EqualValues(t, 0, res.Acked)
	require.EqualValues(t, 0, res.Latency.Count)
	require.EqualValues(t, 500*100, res.Bytes)
	testutil.Poll(testutil.WaitTimeout, func() bool { return b.storedTotal("T") >= 500 }) // asserted right below
	require.EqualValues(t, 500, b.storedTotal("T"))
	require.EqualValues(t, 500, b.sends.Load(), "no responses were awaited")
}

// Through a name server: a topic without a route is sent with defaultTopic TBW102 and
// auto-created by the broker; with CreateTopic it is created with the asked queue count.
func TestProduceRouteFromNamesrv(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Broker, cfg.Namesrv = "", "127.0.0.1:1;"+b.addr // the first name server is down
	cfg.Queues = 0
	cfg.Count = 40
	res := runProducer(t, cfg)
	requireAccounted(t, res)
	require.EqualValues(t, 40, res.Acked)
	require.Len(t, res.Targets, 1)
	require.Equal(t, b.addr, res.Targets[0].Addr)
	require.Equal(t, []int32{0, 1, 2, 3}, res.Targets[0].Queues, "no route: 4 queues")

	cfg.Topic, cfg.Queues, cfg.CreateTopic = "Created", 3, true
	res = runProducer(t, cfg)
	require.EqualValues(t, 40, res.Acked)
	require.Equal(t, []int32{0, 1, 2}, res.Targets[0].Queues)
	b.mu.Lock()
	require.Equal(t, 3, b.topics["Created"])
	b.mu.Unlock()

	// Now the topic has a route: every writable queue is used unless capped.
	cfg.CreateTopic, cfg.Queues = false, 0
	res = runProducer(t, cfg)
	require.Equal(t, []int32{0, 1, 2}, res.Targets[0].Queues)
	cfg.Queues = 2
	res = runProducer(t, cfg)
	require.Equal(t, []int32{0, 1}, res.Targets[0].Queues)
}

// countAtLeast counts samples of h at or above v ns.
func countAtLeast(h *hdrhistogram.Histogram, v int64) int64 {
	var n int64
	for _, bar := range h.Distribution() {
		if bar.From >= v {
			n += bar.Count
		}
	}
	return n
}

// Open loop, one slot: while the broker holds request 50 for 200 ms, the messages
// intended during the stall cannot be sent. Measured from their intended times, requests
// 50..100 (intended 0..100 ms into the stall, 2 ms apart) waited at least 100 ms — a bound
// that holds however slow the machine is. Their service times (from the actual write)
// do not show the stall; only request 50's does.
func TestProduceRateModeMeasuresFromIntendedTime(t *testing.T) {
	b := newTestFakeBroker(t)
	held := make(chan struct{})
	b.sendHook = func(n int64) (codec.ResponseCode, <-chan struct{}) {
		if n == 50 {
			time.AfterFunc(200*time.Millisecond, func() { close(held) })
			return codec.ResponseSuccess, held
		}
		return codec.ResponseSuccess, nil
	}
	cfg := testProducerConfig(b)
	cfg.Conns, cfg.Inflight = 1, 1
	cfg.Rate = 500
	cfg.Count = 150
	res := runProducer(t, cfg)
	requireAccounted(t, res)
	require.EqualValues(t, 150, res.Acked)
	require.NotNil(t, res.Service)
	slowLat := countAtLeast(res.LatencyHist, int64(100*time.Millisecond))
	slowSvc := countAtLeast(res.ServiceHist, int64(100*time.Millisecond))
	require.GreaterOrEqual(t, slowLat, int64(51), "requests 50..100 waited ≥ 100 ms from their intended time")
	require.Less(t, slowSvc, slowLat, "service time hides the stall")
	require.GreaterOrEqual(t, res.Latency.MaxUs, 200_000.0)
	require.GreaterOrEqual(t, res.Elapsed, 290*time.Millisecond, "150 messages at 500/s span 298 ms")
}

// An open-loop duration run sends exactly the messages intended in its window, whenever
// the pacer gets the CPU: 2,000 msgs/s for 300 ms after 100 ms of warm-up is messages
// 200..799 of the run (k/rate in [100 ms, 400 ms)), 600 measured and 200 warm-up.
func TestProduceRateDurationSendsTheExactCount(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Conns, cfg.Inflight = 2, 1024 // never short of a slot
	cfg.Rate = 2000
	cfg.Count = 0
	cfg.Warmup = 100 * time.Millisecond
	cfg.Duration = 300 * time.Millisecond
	res := runProducer(t, cfg)
	requireAccounted(t, res)
	require.EqualValues(t, 600, res.Sent)
	require.EqualValues(t, 600, res.Acked)
	require.EqualValues(t, 200, res.WarmupMsgs)
	require.EqualValues(t, 800, b.storedTotal("T"))
	require.EqualValues(t, 600, res.Latency.Count)
}

// Warm-up messages are sent but not measured; a duration run stops on time.
func TestProduceWarmupAndDuration(t *testing.T) {
	b := newTestFakeBroker(t)
	cfg := testProducerConfig(b)
	cfg.Count = 0
	cfg.Warmup = 200 * time.Millisecond
	cfg.Duration = 300 * time.Millisecond
	startedCalls := 0
	p, err := NewProducer(cfg, nil, Hooks{Started: func(role string) { startedCalls++ }})
	require.NoError(t, err)
	start := time.Now()
	res, err := p.Run(context.Background())
	require.NoError(t, err)
	require.Less(t, time.Since(start), 10*time.Second)
	requireAccounted(t, res)
	require.Positive(t, res.WarmupMsgs)
	require.Positive(t, res.Acked)
	require.Equal(t, res.Acked+res.WarmupMsgs, b.storedTotal("T"))
	require.Equal(t, 1, startedCalls)
	require.LessOrEqual(t, res.Elapsed, 5*time.Second)
}

func TestProducerConfigValidate(t *testing.T) {
	base := DefaultProducerConfig()
	base.Broker = "127.0.0.1:1"
	require.NoError(t, base.Validate())
	for name, mutate := range map[string]func(*ProducerConfig){
		"both addresses": func(c *ProducerConfig) { c.Namesrv = "x:1" },
		"no address":     func(c *ProducerConfig) { c.Broker = "" },
		"topic":          func(c *ProducerConfig) { c.Topic = "" },
		"conns":          func(c *ProducerConfig) { c.Conns = 0 },
		"inflight":       func(c *ProducerConfig) { c.Inflight = 0 },
		"size":           func(c *ProducerConfig) { c.MessageBytes = 0 },
		"batch":          func(c *ProducerConfig) { c.Batch = 0 },
		"no end":         func(c *ProducerConfig) { c.Duration, c.Count = 0, 0 },
		"rate":           func(c *ProducerConfig) { c.Rate = -1 },
		"negative tick":  func(c *ProducerConfig) { c.Tick = -1 },
		"tick too long":  func(c *ProducerConfig) { c.Tick = time.Second },
		"tag":            func(c *ProducerConfig) { c.Tags = []string{""} },
	} {
		c := base
		mutate(&c)
		require.ErrorIs(t, c.Validate(), ErrConfig, name)
	}
}

func TestBodyStamp(t *testing.T) {
	body := make([]byte, 32)
	fillBody(body)
	_, ok := BodyStamp(body)
	require.True(t, ok, "marker present before the first stamp")
	stampBody(body, 1234567890123456789)
	ts, ok := BodyStamp(body)
	require.True(t, ok)
	require.EqualValues(t, 1234567890123456789, ts)
	_, ok = BodyStamp(bytes.Repeat([]byte{'x'}, 32))
	require.False(t, ok, "a foreign body")
	small := make([]byte, 15)
	fillBody(small)
	_, ok = BodyStamp(small)
	require.False(t, ok, "too small to carry a stamp")
}
