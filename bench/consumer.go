package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ringmq/ringmq/codec"
)

// Where a consumer starts in each queue.
const (
	FromCommitted = "committed" // the group's committed offset, else the queue's first
	FromFirst     = "first"     // the queue's min offset
	FromLast      = "last"      // the queue's max offset: only messages sent from now on
)

// ConsumerConfig configures a consume run. Start from DefaultConsumerConfig.
type ConsumerConfig struct {
	// Namesrv (';'-separated) or Broker, exactly one: where the route comes from, as for
	// ProducerConfig. With Broker, queues 0..Queues-1 are read.
	Namesrv string
	Broker  string
	Topic   string
	// Queues caps the queues read per broker (0: every readable queue; 4 with Broker).
	Queues int
	// Group is the consumer group (committed offsets are kept per group).
	Group string
	// Conns connections share the queues; each queue has one pull in flight at a time.
	Conns int
	// Duration and Count end the run (whichever first; at least one is set).
	Duration time.Duration
	Count    int64
	// Warmup: messages received before it has passed are not counted.
	Warmup time.Duration
	// From is FromCommitted, FromFirst or FromLast.
	From string
	// LongPolling sets the SUSPEND flag: the broker holds an empty pull up to
	// SuspendTimeout. Without it an empty pull is repeated after PollInterval.
	LongPolling    bool
	SuspendTimeout time.Duration
	PollInterval   time.Duration
	// MaxMsgNums is the most messages per pull.
	MaxMsgNums int
	// Commit sets COMMIT_OFFSET on pulls (the offset consumed so far, as the Java push
	// consumer does) and stores the final offsets with UPDATE_CONSUMER_OFFSET at the end.
	Commit bool
	// Subscription is the TAG expression ("*" = all), sent with the SUBSCRIPTION flag so
	// no heartbeat is needed.
	Subscription string
	// DialTimeout bounds connecting and each control request.
	DialTimeout time.Duration
}

// DefaultConsumerConfig returns 4 connections, long polling with a 1 s suspend, 32
// messages per pull, committing, from the committed offset, group "mqbench_consumer",
// 10 s after 2 s warm-up.
func DefaultConsumerConfig() ConsumerConfig {
	return ConsumerConfig{
		Topic:          "BenchmarkTopic",
		Group:          "mqbench_consumer",
		Conns:          4,
		Duration:       10 * time.Second,
		Warmup:         2 * time.Second,
		From:           FromCommitted,
		LongPolling:    true,
		SuspendTimeout: time.Second,
		PollInterval:   10 * time.Millisecond,
		MaxMsgNums:     32,
		Commit:         true,
		Subscription:   "*",
		DialTimeout:    3 * time.Second,
	}
}

// Validate reports the first field out of range (errors wrap ErrConfig).
func (c *ConsumerConfig) Validate() error {
	switch {
	case (c.Namesrv == "") == (c.Broker == ""):
		return fmt.Errorf("%w: exactly one of Namesrv (--namesrv) and Broker (--broker) must be set", ErrConfig)
	case c.Topic == "":
		return fmt.Errorf("%w: Topic (--topic) is empty", ErrConfig)
	case c.Queues < 0:
		return fmt.Errorf("%w: Queues (--queues) %d < 0", ErrConfig, c.Queues)
	case c.Group == "":
		return fmt.Errorf("%w: Group (--group) is empty", ErrConfig)
	case c.Conns < 1:
		return fmt.Errorf("%w: Conns (--conns) %d < 1", ErrConfig, c.Conns)
	case c.Duration < 0 || c.Count < 0 || (c.Duration == 0 && c.Count == 0):
		return fmt.Errorf("%w: Duration (--duration) %v and Count (--count) %d: set at least one, neither negative", ErrConfig, c.Duration, c.Count)
	case c.Warmup < 0:
		return fmt.Errorf("%w: Warmup (--warmup) %v < 0", ErrConfig, c.Warmup)
	case c.From != FromCommitted && c.From != FromFirst && c.From != FromLast:
		return fmt.Errorf("%w: From (--from) %q is not committed, first or last", ErrConfig, c.From)
	case c.LongPolling && c.SuspendTimeout <= 0:
		return fmt.Errorf("%w: SuspendTimeout (--suspend-timeout) %v <= 0", ErrConfig, c.SuspendTimeout)
	case c.PollInterval < 0:
		return fmt.Errorf("%w: PollInterval (--poll-interval) %v < 0", ErrConfig, c.PollInterval)
	case c.MaxMsgNums < 1:
		return fmt.Errorf("%w: MaxMsgNums (--max-msgs) %d < 1", ErrConfig, c.MaxMsgNums)
	case c.Subscription == "":
		return fmt.Errorf("%w: Subscription (--subscription) is empty", ErrConfig)
	case c.DialTimeout <= 0:
		return fmt.Errorf("%w: DialTimeout (--dial-timeout) %v <= 0", ErrConfig, c.DialTimeout)
	}
	return nil
}

// ConsumeResult is the outcome of a consume run.
type ConsumeResult struct {
	Targets      []BrokerQueues
	Received     int64 // measured messages received
	Bytes        int64 // their body bytes
	Pulls        int64 // pull requests answered (all statuses, warm-up included)
	Errors       int64 // pulls answered with an error code (not counting NOT_FOUND and friends)
	ErrorsByCode map[string]int64
	WarmupMsgs   int64
	// Stamped messages carry mqbench's nanosecond send time; the others' end-to-end
	// latency comes from BORNTIMESTAMP (milliseconds).
	Stamped int64
	// OffsetGaps counts records whose queue offset was not the one expected next (tag
	// filtering or retention legitimately cause them; with "*" on a fresh topic: none).
	OffsetGaps int64
	Elapsed    time.Duration
	// Latency is end-to-end: receipt time minus the send stamp (or BORNTIMESTAMP).
	Latency     LatencySummary
	LatencyHist *hdrhistogram.Histogram
	Series      []SeriesRow
	// Lag is the sum over queues of max offset (GET_MAX_OFFSET at the end) minus the next
	// offset the consumer would read; LagByQueue has it per "addr/queueId".
	Lag        int64
	LagByQueue map[string]int64
	ConnErrors []string
	// ClientCPU is this process's CPU over the measurement (nil if unreadable; in a
	// mixed run it includes the producer's).
	ClientCPU *ClientCPU
}

// MsgsPerSec is received messages per second of Elapsed.
func (r *ConsumeResult) MsgsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Received) / r.Elapsed.Seconds()
}

// MBPerSec is body MB (10^6 bytes) received per second.
func (r *ConsumeResult) MBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// Consumer runs one consume load. Create with NewConsumer; Run once. Not safe for
// concurrent use.
type Consumer struct {
	cfg    ConsumerConfig
	log    *slog.Logger
	hooks  Hooks
	series *Series
}

// NewConsumer validates cfg. logger may be nil (discard).
func NewConsumer(cfg ConsumerConfig, logger *slog.Logger, hooks Hooks) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Consumer{cfg: cfg, log: logger, hooks: hooks}, nil
}

// Run resolves the route and start offsets, pulls until the run ends and returns the
// result.
func (c *Consumer) Run(ctx context.Context) (*ConsumeResult, error) {
	targets, err := consumerTargets(ctx, &c.cfg)
	if err != nil {
		return nil, err
	}
	p, err := c.prepare(ctx, targets)
	if err != nil {
		return nil, err
	}
	return p.run(ctx)
}

// queueState is one queue a consumer connection reads.
type queueState struct {
	addr   string
	id     int32
	next   int64        // reader-owned: next offset to read
	lag    atomic.Int64 // max offset - next, as of the last response
	opaque atomic.Int32 // the pull in flight, 0 when none
	gen    uint32       // writer-owned
}

// preparedConsume is a consume run with its queues and start offsets resolved (so that a
// mixed run can resolve before its producer starts).
type preparedConsume struct {
	c       *Consumer
	targets []BrokerQueues
	conns   []*consumerConn
	// matches, if set, is told the sequence number of every message received (e2e runs).
	matches *e2eMatcher
}

func (c *Consumer) prepare(ctx context.Context, targets []BrokerQueues) (*preparedConsume, error) {
	c.log.Info("consume", "targets", fmt.Sprint(targets), "conns", c.cfg.Conns, "from", c.cfg.From,
		"longPolling", c.cfg.LongPolling)
	queues, err := c.startOffsets(ctx, targets)
	if err != nil {
		return nil, err
	}
	// Connections go to brokers round-robin (at least one per broker); each broker's
	// queues are spread over its connections.
	nconns := max(c.cfg.Conns, len(targets))
	byBroker := make([][]int, len(targets)) // conn indices per target
	for i := range nconns {
		byBroker[i%len(targets)] = append(byBroker[i%len(targets)], i)
	}
	assigned := make([][]*queueState, nconns)
	for ti := range targets {
		cs := byBroker[ti]
		for qi, q := range queues[ti] {
			ci := cs[qi%len(cs)]
			assigned[ci] = append(assigned[ci], q)
		}
	}
	d := net.Dialer{Timeout: c.cfg.DialTimeout}
	p := &preparedConsume{c: c, targets: targets}
	for i := range nconns {
		if len(assigned[i]) == 0 {
			continue // more connections than queues
		}
		addr := targets[i%len(targets)].Addr
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			p.closeAll()
			return nil, fmt.Errorf("bench: dial %s: %w", addr, err)
		}
		p.conns = append(p.conns, newConsumerConn(i, nc, addr, assigned[i]))
	}
	return p, nil
}

func (p *preparedConsume) closeAll() {
	for _, cc := range p.conns {
		_ = cc.nc.Close()
	}
}

// startOffsets returns, per target, the queues with their start offsets and initial lag.
func (c *Consumer) startOffsets(ctx context.Context, targets []BrokerQueues) ([][]*queueState, error) {
	out := make([][]*queueState, len(targets))
	for ti, t := range targets {
		cc, err := dialControl(ctx, t.Addr, c.cfg.DialTimeout)
		if err != nil {
			return nil, err
		}
		for _, q := range t.Queues {
			maxOff, err := queueOffset(cc, codec.RequestGetMaxOffset, c.cfg.Topic, q)
			if err != nil {
				_ = cc.close()
				return nil, err
			}
			var start int64
			switch c.cfg.From {
			case FromLast:
				start = maxOff
			case FromFirst:
				start, err = queueOffset(cc, codec.RequestGetMinOffset, c.cfg.Topic, q)
			case FromCommitted:
				start, err = committedOffset(cc, c.cfg.Group, c.cfg.Topic, q)
				if err == nil && start < 0 {
					start, err = queueOffset(cc, codec.RequestGetMinOffset, c.cfg.Topic, q)
				}
			}
			if err != nil {
				_ = cc.close()
				return nil, err
			}
			qs := &queueState{addr: t.Addr, id: q, next: start}
			qs.lag.Store(max(maxOff-start, 0))
			out[ti] = append(out[ti], qs)
		}
		if err := cc.close(); err != nil {
			return nil, fmt.Errorf("bench: close %s: %w", t.Addr, err)
		}
	}
	return out, nil
}

// queueOffset asks GET_MAX_OFFSET or GET_MIN_OFFSET for one queue.
func queueOffset(cc *controlConn, code codec.RequestCode, topic string, queue int32) (int64, error) {
	ext := map[string]string{}
	if code == codec.RequestGetMaxOffset {
		h := codec.GetMaxOffsetRequestHeader{Topic: topic, QueueID: queue, Committed: true}
		h.Encode(ext)
	} else {
		h := codec.GetMinOffsetRequestHeader{Topic: topic, QueueID: queue}
		h.Encode(ext)
	}
	resp, err := cc.callOK(newRequest(code, ext, nil))
	if err != nil {
		return 0, err
	}
	var h codec.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("bench: %v response from %s: %w", code, cc.addr, err)
	}
	return h.Offset, nil
}

// committedOffset asks QUERY_CONSUMER_OFFSET; -1 when the group has none (QUERY_NOT_FOUND).
func committedOffset(cc *controlConn, group, topic string, queue int32) (int64, error) {
	ext := map[string]string{}
	h := codec.QueryConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue}
	h.Encode(ext)
	resp, err := cc.call(newRequest(codec.RequestQueryConsumerOffset, ext, nil))
	if err != nil {
		return 0, err
	}
	switch resp.Code {
	case int32(codec.ResponseSuccess):
		var oh codec.OffsetResponseHeader
		if err := oh.Decode(resp.ExtFields); err != nil {
			return 0, fmt.Errorf("bench: QUERY_CONSUMER_OFFSET response from %s: %w", cc.addr, err)
		}
		return oh.Offset, nil
	case int32(codec.ResponseQueryNotFound):
		return -1, nil
	}
	return 0, responseError(cc.addr, newRequest(codec.RequestQueryConsumerOffset, nil, nil), resp)
}

// consumeRun is what the connections of one run share.
type consumeRun struct {
	c            *Consumer
	clk          clock
	measureStart int64
	stop         chan struct{}
	stopOnce     sync.Once
	received     atomic.Int64 // measured messages, for Count
	subVersion   int64
}

func (r *consumeRun) stopNow() { r.stopOnce.Do(func() { close(r.stop) }) }

func (p *preparedConsume) run(ctx context.Context) (*ConsumeResult, error) {
	return p.runWith(ctx, nil)
}

// runWith is run on the shared clock (nil: the run's own).
func (p *preparedConsume) runWith(ctx context.Context, shared *clock) (*ConsumeResult, error) {
	c := p.c
	clk := newClock()
	if shared != nil {
		clk = *shared
	}
	measureStart := int64(c.cfg.Warmup)
	c.series = NewSeries()
	run := &consumeRun{c: c, clk: clk, measureStart: measureStart, stop: make(chan struct{}),
		subVersion: time.Now().UnixMilli()}
	endNs := int64(math.MaxInt64)
	if c.cfg.Duration > 0 {
		endNs = measureStart + int64(c.cfg.Duration)
	}
	var cpuStart cpuMark
	userStarted := c.hooks.started("consume")
	begun := false // runs on this goroutine only (here or in watchRun)
	started := func() {
		begun = true
		cpuStart = markCPU()
		if userStarted != nil {
			userStarted()
		}
	}
	if measureStart == 0 {
		started()
		started = nil
	}
	var wg sync.WaitGroup
	for _, cc := range p.conns {
		cc.run = run
		cc.matches = p.matches
		cc.rec = NewRecorder(measureStart, c.series, false)
		wg.Add(1)
		go func() {
			defer wg.Done()
			cc.serve()
		}()
	}
	allDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(allDone)
	}()
	// watchRun owns closing stop for time and ctx; Count closes it through stopNow, so
	// route both through one sync.Once.
	watchStop := make(chan struct{})
	go func() {
		select {
		case <-watchStop:
			run.stopNow()
		case <-allDone:
		}
	}()
	watchRun(ctx, clk, measureStart, endNs, watchStop, allDone, started, func(sec int) {
		c.series.SetLag(sec, p.lag())
		if c.hooks.Second != nil {
			c.hooks.Second("consume", c.series.Row(sec))
		}
	})
	c.series.Close()
	if !begun {
		started() // the run ended before the measurement began: an empty window
	}
	res, err := p.result(ctx, clk, measureStart)
	if res != nil {
		res.ClientCPU = clientCPUSince(cpuStart, res.Received)
	}
	return res, err
}

// lag sums the queues' last known lag (safe while the run goes on).
func (p *preparedConsume) lag() int64 {
	var sum int64
	for _, cc := range p.conns {
		for _, q := range cc.queues {
			sum += q.lag.Load()
		}
	}
	return sum
}

func (p *preparedConsume) result(ctx context.Context, clk clock, measureStart int64) (*ConsumeResult, error) {
	c := p.c
	res := &ConsumeResult{Targets: p.targets, LagByQueue: map[string]int64{}}
	recs := make([]*Recorder, len(p.conns))
	failed := 0
	for i, cc := range p.conns {
		recs[i] = cc.rec
		res.Pulls += cc.pulls
		res.Stamped += cc.stamped
		res.OffsetGaps += cc.gaps
		if cc.failErr != nil {
			failed++
			res.ConnErrors = append(res.ConnErrors, fmt.Sprintf("conn %d to %s: %v", cc.id, cc.addr, cc.failErr))
		}
	}
	counts, lat, _ := mergeRecorders(recs, false)
	res.Received = counts.Msgs
	res.Bytes = counts.Bytes
	res.Errors = counts.Errors
	res.ErrorsByCode = counts.ErrorsByCode
	res.WarmupMsgs = counts.WarmupMsgs
	res.LatencyHist = lat
	res.Latency = Summarize(lat)
	res.Elapsed = time.Duration(max(counts.LastNs-measureStart, 0))
	res.Series = c.series.Rows()
	// The final lag and commit run even when ctx ended the run (Ctrl-C): each call is
	// bounded by DialTimeout.
	if err := p.finish(context.WithoutCancel(ctx), res); err != nil {
		return res, err
	}
	if failed == len(p.conns) && len(p.conns) > 0 && res.Received == 0 {
		return res, fmt.Errorf("%w: %v", ErrAllConnsFailed, res.ConnErrors)
	}
	return res, nil
}

// finish asks every queue's max offset for the final lag and, with Commit, stores the
// offsets reached.
func (p *preparedConsume) finish(ctx context.Context, res *ConsumeResult) error {
	c := p.c
	byAddr := map[string][]*queueState{}
	var addrs []string
	for _, cc := range p.conns {
		for _, q := range cc.queues {
			if _, ok := byAddr[q.addr]; !ok {
				addrs = append(addrs, q.addr)
			}
			byAddr[q.addr] = append(byAddr[q.addr], q)
		}
	}
	sort.Strings(addrs)
	var errs []error
	for _, addr := range addrs {
		cc, err := dialControl(ctx, addr, c.cfg.DialTimeout)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, q := range byAddr[addr] {
			maxOff, err := queueOffset(cc, codec.RequestGetMaxOffset, c.cfg.Topic, q.id)
			if err != nil {
				errs = append(errs, err)
				break
			}
			lag := max(maxOff-q.next, 0)
			res.Lag += lag
			res.LagByQueue[fmt.Sprintf("%s/%d", addr, q.id)] = lag
			if c.cfg.Commit {
				ext := map[string]string{}
				h := codec.UpdateConsumerOffsetRequestHeader{ConsumerGroup: c.cfg.Group, Topic: c.cfg.Topic, QueueID: q.id, CommitOffset: q.next}
				h.Encode(ext)
				if _, err := cc.callOK(newRequest(codec.RequestUpdateConsumerOffset, ext, nil)); err != nil {
					errs = append(errs, err)
					break
				}
			}
		}
		if err := cc.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pullReq asks the writer for the next pull of one queue.
type pullReq struct {
	queue  int   // index in consumerConn.queues
	offset int64 // queueOffset (and commitOffset: everything before it is consumed)
	dueNs  int64 // not before this run-clock time
}

// Pull pacing after answers that carry no messages.
const (
	// pullErrorBackoff: wait after an error answer before pulling that queue again.
	pullErrorBackoff = 100 * time.Millisecond
	// badRecordError names pull bodies that did not decode as records.
	badRecordError = "BAD_RECORD"
	// badHeaderError names pull responses whose header did not decode.
	badHeaderError = "BAD_RESPONSE_HEADER"
)

// consumerConn is one connection with a writer goroutine (serve) that sends pulls and a
// reader goroutine (readLoop) that handles their responses and asks for the next pull of
// the same queue through next. Each queue has at most one pull in flight, so next never
// holds more than len(queues) requests and the reader never blocks on it.
type consumerConn struct {
	id     int
	nc     net.Conn
	addr   string
	queues []*queueState
	next   chan pullReq
	run    *consumeRun

	rec        *Recorder // reader-owned until the reader exits
	closing    atomic.Bool
	failed     chan struct{}
	failMu     sync.Mutex
	failErr    error
	readerDone chan struct{}

	matches *e2eMatcher // nil unless an e2e run

	// reader-owned
	pulls   int64
	stamped int64
	gaps    int64
}

func newConsumerConn(id int, nc net.Conn, addr string, queues []*queueState) *consumerConn {
	cc := &consumerConn{
		id: id, nc: nc, addr: addr, queues: queues,
		next:       make(chan pullReq, len(queues)),
		failed:     make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	for i, q := range queues {
		cc.next <- pullReq{queue: i, offset: q.next}
	}
	return cc
}

// fail records the first failure and unblocks the writer. Safe for concurrent use.
func (cc *consumerConn) fail(err error) {
	cc.failMu.Lock()
	defer cc.failMu.Unlock()
	if cc.failErr != nil || cc.closing.Load() {
		return
	}
	cc.failErr = err
	close(cc.failed)
	_ = cc.nc.Close()
}

func (cc *consumerConn) serve() {
	go cc.readLoop()
	cc.writeLoop()
	cc.closing.Store(true)
	_ = cc.nc.Close()
	<-cc.readerDone
	cc.rec.Flush()
}

// writeLoop sends the pulls the reader asks for, each when it is due, batching what is
// ready into one write. Pulls still held by the broker when the run stops are abandoned
// with the connection: they had delivered nothing yet.
func (cc *consumerConn) writeLoop() {
	run := cc.run
	cfg := &run.c.cfg
	sysFlag := codec.PullSysFlagSubscription
	if cfg.LongPolling {
		sysFlag |= codec.PullSysFlagSuspend
	}
	if cfg.Commit {
		sysFlag |= codec.PullSysFlagCommitOffset
	}
	hdr := codec.PullMessageRequestHeader{
		ConsumerGroup:        cfg.Group,
		Topic:                cfg.Topic,
		MaxMsgNums:           int32(cfg.MaxMsgNums),
		SysFlag:              sysFlag,
		SuspendTimeoutMillis: cfg.SuspendTimeout.Milliseconds(),
		Subscription:         cfg.Subscription,
		SubVersion:           run.subVersion,
		ExpressionType:       "TAG",
	}
	cmd := newRequest(codec.RequestPullMessage, make(map[string]string, 16), nil)
	nq := uint32(len(cc.queues))
	maxGen := (uint32(math.MaxInt32) - 1) / nq
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var delayed []pullReq
	var buf []byte
	for {
		var got []pullReq
		select {
		case <-run.stop:
			return
		case <-cc.failed:
			return
		case pr := <-cc.next:
			got = append(got, pr)
		case <-timer.C:
		}
	more:
		for {
			select {
			case pr := <-cc.next:
				got = append(got, pr)
			default:
				break more
			}
		}
		now := run.clk.now()
		delayed = append(delayed, got...)
		buf = buf[:0]
		kept := delayed[:0]
		nextDue := int64(math.MaxInt64)
		for _, pr := range delayed {
			if pr.dueNs > now {
				kept = append(kept, pr)
				nextDue = min(nextDue, pr.dueNs)
				continue
			}
			q := cc.queues[pr.queue]
			hdr.QueueID = q.id
			hdr.QueueOffset = pr.offset
			hdr.CommitOffset = 0
			if cfg.Commit {
				hdr.CommitOffset = pr.offset
			}
			hdr.Encode(cmd.ExtFields)
			cmd.Opaque = int32(1 + uint32(pr.queue) + nq*(q.gen%maxGen))
			q.gen++
			var err error
			if buf, err = cmd.AppendFrame(buf); err != nil {
				cc.fail(fmt.Errorf("bench: encode pull: %w", err))
				return
			}
			q.opaque.Store(cmd.Opaque)
		}
		delayed = kept
		if nextDue != math.MaxInt64 {
			timer.Reset(time.Duration(nextDue - now))
		}
		if len(buf) == 0 {
			continue
		}
		if _, err := cc.nc.Write(buf); err != nil {
			cc.fail(fmt.Errorf("bench: write: %w", err))
			return
		}
	}
}

// readLoop handles pull responses: records every message, moves the queue on and asks for
// its next pull.
func (cc *consumerConn) readLoop() {
	defer close(cc.readerDone)
	run := cc.run
	cfg := &run.c.cfg
	fr := codec.NewFrameReader(cc.nc, 0)
	var cmd codec.RemotingCommand
	var hdr codec.PullMessageResponseHeader
	nq := int32(len(cc.queues))
	for {
		payload, err := fr.Next()
		if err != nil {
			if !cc.closing.Load() {
				cc.fail(fmt.Errorf("bench: read: %w", err))
			}
			return
		}
		now := run.clk.now()
		if err := codec.DecodeCommandInto(&cmd, payload); err != nil {
			cc.fail(fmt.Errorf("bench: decode response: %w", err))
			return
		}
		if !cmd.IsResponse() || cmd.Opaque <= 0 {
			continue // broker-initiated requests (NOTIFY_CONSUMER_IDS_CHANGED ...): not ours
		}
		qi := int((cmd.Opaque - 1) % nq)
		q := cc.queues[qi]
		if q.opaque.Load() != cmd.Opaque {
			continue
		}
		q.opaque.Store(0)
		cc.pulls++
		due := now
		headerErr := hdr.Decode(cmd.ExtFields)
		switch codec.ResponseCode(cmd.Code) {
		case codec.ResponseSuccess:
			if headerErr != nil {
				cc.rec.RecordError(now, now, badHeaderError, 1)
				due = now + int64(pullErrorBackoff)
				break
			}
			cc.consumeBody(q, cmd.Body, now)
			q.next = hdr.NextBeginOffset
		case codec.ResponsePullNotFound:
			if headerErr == nil {
				q.next = hdr.NextBeginOffset
			}
			if !cfg.LongPolling {
				due = now + int64(cfg.PollInterval)
			}
		case codec.ResponsePullRetryImmediately, codec.ResponsePullOffsetMoved:
			if headerErr == nil {
				q.next = hdr.NextBeginOffset
			}
		default:
			cc.rec.RecordError(now, now, errorName(cmd.Code), 1)
			due = now + int64(pullErrorBackoff)
		}
		if headerErr == nil {
			q.lag.Store(max(hdr.MaxOffset-q.next, 0))
		}
		cc.next <- pullReq{queue: qi, offset: q.next, dueNs: due}
	}
}

// consumeBody records every message of a pull body (records back to back, PROTOCOL
// §5.2) with its end-to-end latency.
func (cc *consumerConn) consumeBody(q *queueState, body []byte, now int64) {
	run := cc.run
	nowWall := run.clk.wall(now)
	expect := q.next
	var n int64
	for len(body) > 0 {
		rec, err := codec.DecodeRecord(body, false)
		if err != nil {
			cc.rec.RecordError(now, now, badRecordError, 1)
			break
		}
		body = body[rec.TotalSize:]
		if rec.QueueOffset != expect {
			cc.gaps++
		}
		expect = rec.QueueOffset + 1
		var lat int64
		if ts, ok := BodyStamp(rec.Body); ok {
			lat = e2eLatencyNs(ts, nowWall)
			if now >= run.measureStart {
				cc.stamped++
			}
			if seq, ok := BodySeq(rec.Body); ok && cc.matches != nil {
				cc.matches.mark(seq)
			}
		} else {
			lat = nowWall - rec.BornTimestamp*int64(time.Millisecond)
		}
		cc.rec.Record(now, now, lat, lat, 1, int64(len(rec.Body)))
		n++
	}
	if n > 0 && now >= run.measureStart && run.c.cfg.Count > 0 {
		if run.received.Add(n) >= run.c.cfg.Count {
			run.stopNow()
		}
	}
}
