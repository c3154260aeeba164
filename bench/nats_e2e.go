package bench

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// The end-to-end run against NATS JetStream, the peer of RunE2E: the same shape with the
// NATS Go client (nats.go, pinned in go.mod for this alone): C connections publish
// asynchronously, open loop at the rate on the same pacer, at most W publishes awaiting
// their ack per connection; consumers on their own connections pull from one durable
// pull consumer that starts at the stream's end (DeliverNew, no acks, as mqbench's
// RocketMQ pulls commit nothing per message). Bodies carry the intended send time on the
// run's clock and a sequence number, exactly as mqbench's own (BodyStamp, BodySeq).
//
// Send latency is from the intended time to the ack; acks are awaited in publish order
// per connection, so an ack that overtakes an earlier one is recorded when the earlier one
// arrives (JetStream acknowledges one stream's publishes on one connection in order).
// Each publish gets its own body: the client keeps a message for a retry.

// NATSE2EConfig configures RunNATSE2E.
type NATSE2EConfig struct {
	// URL is the server ("nats://127.0.0.1:4222").
	URL string
	// Stream and Subject: the stream is created (file storage, one replica) if missing.
	Stream, Subject string
	Conns, Inflight int
	Rate            float64
	MessageBytes    int
	// Duration and Count end the sends (whichever first; at least one set); Warmup is
	// sent but not measured.
	Duration, Warmup time.Duration
	Count            int64
	ConsumeConns     int
	// Tick is the pacer's (0: DefaultTick).
	Tick time.Duration
	// DrainTimeout bounds waiting for the last acks, then for the last receipts.
	DrainTimeout time.Duration
	DialTimeout  time.Duration
}

// Validate reports the first field out of range.
func (c *NATSE2EConfig) Validate() error {
	switch {
	case c.URL == "":
		return fmt.Errorf("%w: URL (--nats-url) is empty", ErrConfig)
	case c.Stream == "" || c.Subject == "":
		return fmt.Errorf("%w: Stream and Subject must be set", ErrConfig)
	case c.Conns < 1 || c.Inflight < 1 || c.ConsumeConns < 1:
		return fmt.Errorf("%w: Conns %d, Inflight %d and ConsumeConns %d must be ≥ 1", ErrConfig, c.Conns, c.Inflight, c.ConsumeConns)
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("%w: Rate (--rate) must be > 0", ErrConfig)
	case c.MessageBytes < BodySeqBytes:
		return fmt.Errorf("%w: MessageBytes (--size) %d < %d", ErrConfig, c.MessageBytes, BodySeqBytes)
	case c.Duration < 0 || c.Count < 0 || (c.Duration == 0 && c.Count == 0):
		return fmt.Errorf("%w: Duration %v and Count %d: set at least one, neither negative", ErrConfig, c.Duration, c.Count)
	case c.Warmup < 0 || c.Tick < 0 || c.Tick > maxTick:
		return fmt.Errorf("%w: Warmup %v or Tick %v out of range", ErrConfig, c.Warmup, c.Tick)
	case c.DrainTimeout <= 0 || c.DialTimeout <= 0:
		return fmt.Errorf("%w: DrainTimeout %v and DialTimeout %v must be > 0", ErrConfig, c.DrainTimeout, c.DialTimeout)
	}
	return nil
}

// natsLane is one publishing connection as the pacer sees it.
type natsLane struct {
	id           int
	js           jetstream.JetStream
	subject      string
	size         int
	clk          clock
	sched        *schedule
	endNs        int64 // no message intended at or after it is sent
	measureStart int64
	quota        int64 // measured messages still to send when Count bounds the run (-1: no bound)
	pending      chan natsPending
	written      int64
	failures     int64 // publishes the client refused at once
}

type natsPending struct {
	fut      jetstream.PubAckFuture
	intended int64
}

// sendDue publishes every message due by now, as far as W unacknowledged publishes allow.
func (l *natsLane) sendDue(now int64) int64 {
	for {
		due := l.sched.due()
		if due >= l.endNs || l.quota == 0 {
			close(l.pending)
			return math.MaxInt64
		}
		if due > now {
			return due
		}
		if len(l.pending) == cap(l.pending) {
			return due // no slot: retried at the next wake-up, latency from its intended time
		}
		body := make([]byte, l.size)
		fillBody(body)
		stampBody(body, l.clk.wall(due))
		stampBodySeq(body, bodySeq(l.id, l.written))
		fut, err := l.js.PublishAsync(l.subject, body)
		l.sched.advance()
		l.written++
		if l.quota > 0 && due >= l.measureStart {
			l.quota--
		}
		if err != nil {
			l.failures++
			continue
		}
		l.pending <- natsPending{fut: fut, intended: due}
	}
}

// natsSide is what one side of the run records: a histogram (ns), counts, the last time.
type natsSide struct {
	mu     sync.Mutex
	hist   *hdrhistogram.Histogram
	msgs   int64
	errs   int64
	lastNs int64
}

func newNATSSide() *natsSide {
	return &natsSide{hist: hdrhistogram.New(1, int64(time.Hour), 3)}
}

func (s *natsSide) record(now, latNs int64) {
	s.mu.Lock()
	_ = s.hist.RecordValue(max(latNs, 1))
	s.msgs++
	s.lastNs = max(s.lastNs, now)
	s.mu.Unlock()
}

// RunNATSE2E runs the end-to-end measurement against NATS JetStream.
func RunNATSE2E(ctx context.Context, cfg NATSE2EConfig, logger *slog.Logger) (*E2EResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var conns []*nats.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	dial := func() (*nats.Conn, error) {
		nc, err := nats.Connect(cfg.URL, nats.Timeout(cfg.DialTimeout), nats.Name("mqbench e2e"))
		if err != nil {
			return nil, fmt.Errorf("bench: nats connect %s: %w", cfg.URL, err)
		}
		conns = append(conns, nc)
		return nc, nil
	}
	ctl, err := dial()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(ctl)
	if err != nil {
		return nil, fmt.Errorf("bench: jetstream: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	stream, err := js.CreateOrUpdateStream(sctx, jetstream.StreamConfig{Name: cfg.Stream, Subjects: []string{cfg.Subject},
		Storage: jetstream.FileStorage, Replicas: 1})
	if err != nil {
		return nil, fmt.Errorf("bench: nats stream %s: %w", cfg.Stream, err)
	}
	durable := cfg.Stream + "_e2e"
	if _, err := stream.CreateOrUpdateConsumer(sctx, jetstream.ConsumerConfig{Durable: durable,
		DeliverPolicy: jetstream.DeliverNewPolicy, AckPolicy: jetstream.AckNonePolicy}); err != nil {
		return nil, fmt.Errorf("bench: nats consumer %s: %w", durable, err)
	}

	clk := newClock()
	measureStart := int64(cfg.Warmup)
	matches := newE2EMatcher(cfg.Conns)
	send, recv := newNATSSide(), newNATSSide()
	// Consumers first, so that nothing published is missed.
	var consumes []jetstream.ConsumeContext
	defer func() {
		for _, cc := range consumes {
			cc.Stop()
		}
	}()
	for range cfg.ConsumeConns {
		nc, err := dial()
		if err != nil {
			return nil, err
		}
		cjs, err := jetstream.New(nc)
		if err != nil {
			return nil, fmt.Errorf("bench: jetstream: %w", err)
		}
		cons, err := cjs.Consumer(sctx, cfg.Stream, durable)
		if err != nil {
			return nil, fmt.Errorf("bench: nats consumer %s: %w", durable, err)
		}
		cc, err := cons.Consume(func(m jetstream.Msg) {
			now := clk.now()
			body := m.Data()
			ts, ok := BodyStamp(body)
			if !ok {
				return
			}
			if seq, ok := BodySeq(body); ok {
				matches.mark(seq)
			}
			if now >= measureStart {
				recv.record(now, e2eLatencyNs(ts, clk.wall(now)))
			}
		}, jetstream.PullMaxMessages(256))
		if err != nil {
			return nil, fmt.Errorf("bench: nats consume: %w", err)
		}
		consumes = append(consumes, cc)
	}

	endNs := int64(math.MaxInt64)
	if cfg.Duration > 0 {
		endNs = measureStart + int64(cfg.Duration)
	}
	lanes := make([]paceLane, 0, cfg.Conns)
	nl := make([]*natsLane, 0, cfg.Conns)
	var ackers sync.WaitGroup
	for i := range cfg.Conns {
		nc, err := dial()
		if err != nil {
			return nil, err
		}
		pjs, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(cfg.Inflight))
		if err != nil {
			return nil, fmt.Errorf("bench: jetstream: %w", err)
		}
		quota := int64(-1)
		if cfg.Count > 0 {
			// The measured count, split over the connections (warm-up messages on top).
			quota = cfg.Count / int64(cfg.Conns)
			if int64(i) < cfg.Count%int64(cfg.Conns) {
				quota++
			}
		}
		l := &natsLane{id: i, js: pjs, subject: cfg.Subject, size: cfg.MessageBytes, clk: clk,
			sched: newSchedule(cfg.Rate, i, cfg.Conns, 0), endNs: endNs, measureStart: measureStart, quota: quota,
			pending: make(chan natsPending, cfg.Inflight)}
		lanes, nl = append(lanes, l), append(nl, l)
		ackers.Add(1)
		go func() {
			defer ackers.Done()
			drain := time.NewTimer(time.Hour)
			defer drain.Stop()
			for p := range l.pending {
				select {
				case <-p.fut.Ok():
					if now := clk.now(); p.intended >= measureStart {
						send.record(now, now-p.intended)
					}
				case <-p.fut.Err():
					send.mu.Lock()
					send.errs++
					send.mu.Unlock()
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			close(stop)
		case <-stop:
		}
	}()
	cpuStart := markCPU()
	runPacer(clk, stop, cfg.Tick, lanes)
	select {
	case <-stop:
	default:
		close(stop)
	}
	// A lane the stop cut short has not closed its queue.
	for _, l := range nl {
		if l.sched.due() < l.endNs && l.quota != 0 {
			close(l.pending)
		}
	}
	acked := make(chan struct{})
	go func() {
		ackers.Wait()
		close(acked)
	}()
	drain := time.NewTimer(cfg.DrainTimeout)
	defer drain.Stop()
	select {
	case <-acked:
	case <-drain.C:
		logger.Warn("nats e2e: acks still outstanding after the drain timeout")
	}
	var written, failures int64
	for _, l := range nl {
		written += l.written
		failures += l.failures
	}
	select {
	case <-matches.expect(written):
	case <-drain.C:
	case <-ctx.Done():
	}
	for _, cc := range consumes {
		cc.Stop()
	}
	consumes = nil
	cpu := clientCPUSince(cpuStart, written)

	send.mu.Lock()
	defer send.mu.Unlock()
	recv.mu.Lock()
	defer recv.mu.Unlock()
	m := matches.counts()
	pres := &ProduceResult{Sent: send.msgs + send.errs + failures, Acked: send.msgs, Errors: send.errs + failures,
		Written: written, Bytes: send.msgs * int64(cfg.MessageBytes), Elapsed: time.Duration(max(send.lastNs-measureStart, 0)),
		Latency: Summarize(send.hist), LatencyHist: send.hist, ClientCPU: cpu}
	if pres.Errors > 0 {
		pres.ErrorsByCode = map[string]int64{"NATS_PUBLISH_ERROR": pres.Errors}
	}
	cres := &ConsumeResult{Received: recv.msgs, Stamped: recv.msgs, Bytes: recv.msgs * int64(cfg.MessageBytes),
		Elapsed: time.Duration(max(recv.lastNs-measureStart, 0)), Latency: Summarize(recv.hist), LatencyHist: recv.hist,
		ClientCPU: cpu, LagByQueue: map[string]int64{}}
	res := &E2EResult{Produce: pres, Consume: cres, Written: written, Matched: m.distinct, Duplicates: m.duplicates, Foreign: m.foreign}
	res.Missing = max(res.Written-res.Matched, 0)
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}
