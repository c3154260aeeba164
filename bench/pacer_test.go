package bench

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// discardConn swallows writes, counting them.
type discardConn struct {
	net.Conn
	writes int
	bytes  int
}

func (d *discardConn) Write(p []byte) (int, error) {
	d.writes++
	d.bytes += len(p)
	return len(p), nil
}

func (d *discardConn) Close() error { return nil }

// pacedRun builds an open-loop run of conns connections writing into discardConns, not
// started: the test drives the pacer with its own clock. The run clock starts an hour in
// the past, so every write happens after every fake intended time and a slot's start
// time is the message's intended time exactly.
func pacedRun(t *testing.T, cfg ProducerConfig) (*produceRun, []*producerConn, []*discardConn) {
	t.Helper()
	require.NoError(t, cfg.Validate())
	p, err := NewProducer(cfg, nil, Hooks{})
	require.NoError(t, err)
	run := &produceRun{
		p:     p,
		clk:   clock{base: time.Now().Add(-time.Hour)},
		endNs: int64(cfg.Warmup + cfg.Duration),
		stop:  make(chan struct{}),
		uniq:  codec.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), 1, 1),
	}
	run.measureStart = int64(cfg.Warmup)
	conns := make([]*producerConn, cfg.Conns)
	ncs := make([]*discardConn, cfg.Conns)
	for i := range conns {
		ncs[i] = &discardConn{}
		conns[i] = newProducerConn(i, ncs[i], "fake", []int32{0, 1, 2, 3}, cfg.Inflight)
		conns[i].run = run
		conns[i].quota = quota(cfg.Count, cfg.Conns, i)
		conns[i].initSender()
	}
	return run, conns, ncs
}

func pacedConfig() ProducerConfig {
	cfg := DefaultProducerConfig()
	cfg.Broker = "127.0.0.1:1"
	cfg.MessageBytes = 64
	cfg.Warmup = 0
	return cfg
}

// sentMsg is one message as a test lane saw it leave.
type sentMsg struct {
	conn     int
	intended int64
	at       int64 // fake time of the wake-up that sent it
}

// recordingLane wraps a connection and notes every message it sends (slots are taken in
// index order and never returned, so message n of the connection is in slot n).
type recordingLane struct {
	c    *producerConn
	seen int64
	out  *[]sentMsg
}

func (l *recordingLane) sendDue(now int64) int64 {
	next := l.c.sendDue(now)
	for ; l.seen < l.c.sent; l.seen++ {
		*l.out = append(*l.out, sentMsg{conn: l.c.id, intended: l.c.slots[l.seen].startNs.Load(), at: now})
	}
	return next
}

// runFakePaced runs the pacer on a fake clock whose wake-ups come late by late(u) for a
// wake-up asked for at u; it returns what was sent and the times asked for.
func runFakePaced(conns []*producerConn, tick time.Duration, late func(int64) int64) (sent []sentMsg, asked []int64) {
	var fakeNow int64
	lanes := make([]paceLane, len(conns))
	for i, c := range conns {
		lanes[i] = &recordingLane{c: c, out: &sent}
	}
	p := newPacer(tick, lanes, func() int64 { return fakeNow }, func(u int64) bool {
		asked = append(asked, u)
		fakeNow = max(fakeNow, u+late(u))
		return true
	})
	p.run()
	return sent, asked
}

// 4,000 msgs/s over 4 connections for 1 s: message k of the run (k = i×4 + connection)
// is intended at exactly k × 250 µs, every connection sends exactly 250 messages, and
// each goes out at the first wake-up at or after its intended time, less than a tick
// later; the pacer never asks to wake twice within a tick.
func TestPacerScheduleIsExact(t *testing.T) {
	cfg := pacedConfig()
	cfg.Rate, cfg.Conns, cfg.Inflight, cfg.Duration = 4000, 4, 1000, time.Second
	for _, tick := range []time.Duration{100 * time.Microsecond, 250 * time.Microsecond, time.Millisecond} {
		_, conns, ncs := pacedRun(t, cfg)
		sent, asked := runFakePaced(conns, tick, func(int64) int64 { return 0 })
		require.Len(t, sent, 4000, "tick %v: ⌈rate × duration⌉ messages", tick)
		perConn := make([]int64, 4)
		for _, m := range sent {
			i := perConn[m.conn]
			perConn[m.conn]++
			require.Equal(t, (i*4+int64(m.conn))*250_000, m.intended, "tick %v: conn %d message %d", tick, m.conn, i)
			require.GreaterOrEqual(t, m.at, m.intended, "sent before its intended time")
			require.Less(t, m.at-m.intended, int64(tick), "tick %v: waited a tick or more", tick)
		}
		require.Equal(t, []int64{1000, 1000, 1000, 1000}, perConn)
		for i, c := range conns {
			require.EqualValues(t, 1000, c.sent)
			require.Positive(t, ncs[i].writes)
		}
		for i := 1; i < len(asked); i++ {
			require.GreaterOrEqual(t, asked[i]-asked[i-1], int64(tick), "tick %v: two wake-ups within a tick", tick)
		}
	}
}

// Wake-ups that come late (a stolen CPU) send everything due by then: no message is
// skipped or delayed past the first wake-up after it, and the count stays exact.
func TestPacerLateWakeUpsSendEverythingDue(t *testing.T) {
	cfg := pacedConfig()
	cfg.Rate, cfg.Conns, cfg.Inflight, cfg.Duration = 3000, 3, 1100, time.Second
	_, conns, ncs := pacedRun(t, cfg)
	// Every 7th wake-up comes 5 ms late, the others 30 µs late.
	n := 0
	sent, _ := runFakePaced(conns, 100*time.Microsecond, func(int64) int64 {
		n++
		if n%7 == 0 {
			return int64(5 * time.Millisecond)
		}
		return int64(30 * time.Microsecond)
	})
	require.Len(t, sent, 3000)
	prevAt := make([]int64, 3)
	for _, m := range sent {
		require.GreaterOrEqual(t, m.at, m.intended)
		require.Less(t, m.at-m.intended, int64(100*time.Microsecond+5*time.Millisecond))
		require.GreaterOrEqual(t, m.at, prevAt[m.conn], "in order per connection")
		prevAt[m.conn] = m.at
	}
	// A late wake-up batches what became due: fewer writes than messages, at most 64
	// requests in one write.
	for _, nc := range ncs {
		require.Less(t, nc.writes, 1000)
		require.GreaterOrEqual(t, nc.writes, 1000/writeBatchMaxRequests)
	}
}

// With every slot in flight, due messages wait (their intended time unchanged) and go
// out at the first wake-up after slots are back.
func TestPacerWaitsForSlots(t *testing.T) {
	cfg := pacedConfig()
	cfg.Rate, cfg.Conns, cfg.Inflight, cfg.Duration = 1000, 1, 2, 10*time.Millisecond
	_, conns, _ := pacedRun(t, cfg)
	c := conns[0]
	require.Equal(t, int64(2*time.Millisecond), c.sendDue(int64(5*time.Millisecond)), "slots 0 and 1 taken, message 2 still due")
	require.EqualValues(t, 2, c.sent)
	for i := range c.slots {
		require.NotZero(t, c.slots[i].opaque.Load())
		c.slots[i].opaque.Store(0)
		c.free <- int32(i)
	}
	require.Equal(t, int64(4*time.Millisecond), c.sendDue(int64(6*time.Millisecond)), "messages 2 and 3 sent, 4 still due")
	require.EqualValues(t, 4, c.sent)
	require.Equal(t, int64(2*time.Millisecond), c.slots[0].startNs.Load(), "latency still counts from message 2's intended time")
	require.Equal(t, int64(3*time.Millisecond), c.slots[1].startNs.Load())
}

// The open loop's send path — the pacer's pass, encoding, stamping, publishing the slots
// and the write — allocates nothing per message once its buffers have grown.
func TestOpenLoopSendPathAllocatesNothingPerMessage(t *testing.T) {
	cfg := pacedConfig()
	cfg.Rate, cfg.Conns, cfg.Inflight, cfg.Duration = 20000, 2, 64, time.Hour
	_, conns, ncs := pacedRun(t, cfg)
	lanes := []paceLane{conns[0], conns[1]}
	var fakeNow int64
	p := newPacer(DefaultTick, lanes, func() int64 { return fakeNow }, func(int64) bool { return true })
	steps := 0
	step := func() {
		steps++
		fakeNow += int64(400 * time.Microsecond) // 8 messages due, 4 per connection
		p.pass(fakeNow)
		for _, c := range conns { // the responses: every slot back
			for i := range c.slots {
				if c.slots[i].opaque.Load() != 0 {
					c.slots[i].opaque.Store(0)
					c.free <- int32(i)
				}
			}
		}
	}
	step()
	require.Zero(t, testing.AllocsPerRun(200, step))
	// Connection 0's messages are intended at 0, 100 µs, 200 µs, ...
	require.EqualValues(t, fakeNow/int64(100*time.Microsecond)+1, conns[0].sent, "every step sent what was due")
	require.Equal(t, steps, ncs[0].writes, "one write per connection per wake-up")
}
