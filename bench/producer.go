package bench

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ringmq/ringmq/codec"
)

// ProducerConfig configures a produce run. The zero value is not valid; start from
// DefaultProducerConfig.
type ProducerConfig struct {
	// Namesrv is the name server address list (';'-separated); the route of Topic gives
	// the masters and their writable queues. Exactly one of Namesrv and Broker is set.
	Namesrv string
	// Broker is a broker address to send to directly, on queues 0..Queues-1.
	Broker string
	// Topic is the topic sent to. Without a route it is created: with CreateTopic by
	// UPDATE_AND_CREATE_TOPIC, else by the broker on the first send (defaultTopic TBW102,
	// autoCreateTopicEnable), with min(Queues, TBW102's write queues) queues.
	Topic string
	// Queues is how many queues (per broker) to send to: 0 means every writable queue of
	// the route, or 4 when there is no route (Broker, or a topic still to be created).
	Queues int
	// CreateTopic sends UPDATE_AND_CREATE_TOPIC (Queues read and write queues, perm 6)
	// before the run.
	CreateTopic bool
	// ProducerGroup is the send header's producer group.
	ProducerGroup string
	// Conns is the number of connections (spread over the masters round-robin).
	Conns int
	// Inflight is the most requests in flight per connection (pipelined by opaque).
	Inflight int
	// MessageBytes is the body size of each message.
	MessageBytes int
	// Tags, if any, are put in the TAGS property, rotating.
	Tags []string
	// Keys puts a unique KEYS property ("mqbench-<conn>-<seq>") on every message, which the
	// broker indexes.
	Keys bool
	// Oneway sends with the oneway flag: no responses, no latency; throughput only.
	Oneway bool
	// Batch > 1 sends SEND_BATCH_MESSAGE with Batch messages per request.
	Batch int
	// Duration is how long to measure (after Warmup); Count how many messages to measure.
	// At least one is set; the run stops at whichever comes first.
	Duration time.Duration
	Count    int64
	// Warmup runs the load before measuring; its messages are not counted.
	Warmup time.Duration
	// Rate > 0 is an open-loop run: messages per second in total, each with an intended
	// send time on a fixed schedule; latency is measured from the intended time.
	Rate float64
	// Tick is the open loop's pacing step: the pacer wakes up at most once per Tick and
	// sends everything due, so a message waits at most a Tick past its intended time
	// (counted in its latency) for the wake-up that sends it. 0 means DefaultTick.
	Tick time.Duration
	// DrainTimeout bounds the wait for responses after the last send; requests still
	// unanswered then count as TIMEOUT errors.
	DrainTimeout time.Duration
	// DialTimeout bounds connecting and each control request.
	DialTimeout time.Duration
	// SlowThreshold > 0 keeps every measured send at least this late (from its intended time) in
	// ProduceResult.Slow, up to 65,536 per connection (mqbench --slow-log; issue 17 item 1).
	SlowThreshold time.Duration
}

// DefaultProducerConfig returns 4 connections × 16 in flight, 1 KiB messages, 10 s with
// 2 s warm-up, closed loop, topic "BenchmarkTopic", group "mqbench_producer".
func DefaultProducerConfig() ProducerConfig {
	return ProducerConfig{
		Topic:         "BenchmarkTopic",
		ProducerGroup: "mqbench_producer",
		Conns:         4,
		Inflight:      16,
		MessageBytes:  1024,
		Batch:         1,
		Duration:      10 * time.Second,
		Warmup:        2 * time.Second,
		DrainTimeout:  10 * time.Second,
		DialTimeout:   3 * time.Second,
	}
}

// maxMessageBytes bounds MessageBytes: a frame must stay under the 16 MiB frame cap.
const maxMessageBytes = 8 << 20

// Validate reports the first field out of range (errors wrap ErrConfig).
func (c *ProducerConfig) Validate() error {
	switch {
	case (c.Namesrv == "") == (c.Broker == ""):
		return fmt.Errorf("%w: exactly one of Namesrv (--namesrv) and Broker (--broker) must be set", ErrConfig)
	case c.Topic == "":
		return fmt.Errorf("%w: Topic (--topic) is empty", ErrConfig)
	case c.Queues < 0:
		return fmt.Errorf("%w: Queues (--queues) %d < 0", ErrConfig, c.Queues)
	case c.ProducerGroup == "":
		return fmt.Errorf("%w: ProducerGroup (--producer-group) is empty", ErrConfig)
	case c.Conns < 1:
		return fmt.Errorf("%w: Conns (--conns) %d < 1", ErrConfig, c.Conns)
	case c.Inflight < 1 || c.Inflight > 1<<16:
		return fmt.Errorf("%w: Inflight (--inflight) %d not in [1, 65536]", ErrConfig, c.Inflight)
	case c.MessageBytes < 1 || c.MessageBytes > maxMessageBytes:
		return fmt.Errorf("%w: MessageBytes (--size) %d not in [1, %d]", ErrConfig, c.MessageBytes, maxMessageBytes)
	case c.Batch < 1 || c.Batch*(c.MessageBytes+128) > maxMessageBytes:
		return fmt.Errorf("%w: Batch (--batch) %d < 1 or the batch body exceeds %d bytes", ErrConfig, c.Batch, maxMessageBytes)
	case c.Duration < 0 || c.Count < 0 || (c.Duration == 0 && c.Count == 0):
		return fmt.Errorf("%w: Duration (--duration) %v and Count (--count) %d: set at least one, neither negative", ErrConfig, c.Duration, c.Count)
	case c.Warmup < 0:
		return fmt.Errorf("%w: Warmup (--warmup) %v < 0", ErrConfig, c.Warmup)
	case c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return fmt.Errorf("%w: Rate (--rate) %v", ErrConfig, c.Rate)
	case c.SlowThreshold < 0:
		return fmt.Errorf("%w: SlowThreshold (--slow-threshold) %v", ErrConfig, c.SlowThreshold)
	case c.Tick < 0 || c.Tick > maxTick:
		return fmt.Errorf("%w: Tick (--tick) %v not in [0, %v]", ErrConfig, c.Tick, maxTick)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("%w: DrainTimeout (--drain-timeout) %v <= 0", ErrConfig, c.DrainTimeout)
	case c.DialTimeout <= 0:
		return fmt.Errorf("%w: DialTimeout (--dial-timeout) %v <= 0", ErrConfig, c.DialTimeout)
	}
	for _, t := range c.Tags {
		if t == "" {
			return fmt.Errorf("%w: Tags (--tags) has an empty tag", ErrConfig)
		}
	}
	return nil
}

// ProduceResult is the outcome of a produce run. For a closed-loop or rate run,
// Sent = Acked + Errors: every measured message is either acknowledged or counted
// under a response code, CONNECTION_LOST or TIMEOUT. A oneway run has no responses:
// Acked is 0 and Sent is what was written.
type ProduceResult struct {
	Targets      []BrokerQueues
	Sent         int64
	Acked        int64
	Errors       int64
	ErrorsByCode map[string]int64
	WarmupMsgs   int64
	// Written is every message written, warm-up included: each carries its own sequence
	// number (BodySeq) when the body has room, so that consumers can match them.
	Written int64
	Bytes   int64         // body bytes acknowledged (written, for oneway)
	Elapsed time.Duration // measurement start to the last completion (or the last write, oneway)
	Latency LatencySummary
	Service *LatencySummary // open-loop runs: service time, from the actual write
	// LatencyHist (ns) is the send latency (from the intended time in open-loop runs);
	// ServiceHist (ns) the service time of open-loop runs, else nil.
	LatencyHist *hdrhistogram.Histogram
	ServiceHist *hdrhistogram.Histogram
	Series      []SeriesRow
	ConnErrors  []string // why connections failed, if any did
	// Throughput is the acknowledged (written, oneway) messages per ThroughputInterval of
	// the measurement.
	Throughput []ThroughputPoint
	// ClientCPU is this process's CPU over the measurement (nil if unreadable).
	ClientCPU *ClientCPU
	// Slow are the measured sends at least ProducerConfig.SlowThreshold late, by intended time, in
	// wall-clock Unix ns; SlowDropped counts those past the per-connection bound.
	Slow        []SlowSend
	SlowDropped int64
}

// MsgsPerSec is the measured throughput: acknowledged messages (written, oneway) per
// second of Elapsed.
func (r *ProduceResult) MsgsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	n := r.Acked
	if n == 0 && r.Errors == 0 {
		n = r.Sent // oneway
	}
	return float64(n) / r.Elapsed.Seconds()
}

// MBPerSec is the body throughput in MB (10^6 bytes) per second.
func (r *ProduceResult) MBPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds()
}

// Hooks let a caller watch a run. Every field may be nil. The functions are called from
// the run's own goroutine, once per second of measurement.
type Hooks struct {
	// Second receives each measured second shortly after it ends: role is "produce" or
	// "consume"; row is what had been merged by then.
	Second func(role string, row SeriesRow)
	// Started is called when the measurement begins (the warm-up is over).
	Started func(role string)
}

func (h Hooks) started(role string) func() {
	if h.Started == nil {
		return nil
	}
	return func() { h.Started(role) }
}

// Producer runs one produce load. Create with NewProducer; Run once. Not safe for
// concurrent use.
type Producer struct {
	cfg    ProducerConfig
	log    *slog.Logger
	hooks  Hooks
	series *Series
}

// NewProducer validates cfg. logger may be nil (discard).
func NewProducer(cfg ProducerConfig, logger *slog.Logger, hooks Hooks) (*Producer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Producer{cfg: cfg, log: logger, hooks: hooks}, nil
}

// Run resolves the targets, connects, runs the load and returns the result. Cancelling
// ctx ends the run early (the result covers what was measured until then).
func (p *Producer) Run(ctx context.Context) (*ProduceResult, error) {
	targets, err := producerTargets(ctx, &p.cfg)
	if err != nil {
		return nil, err
	}
	return p.run(ctx, targets)
}

func (p *Producer) run(ctx context.Context, targets []BrokerQueues) (*ProduceResult, error) {
	return p.runWith(ctx, targets, nil)
}

// runWith is run on the shared clock (nil: the run's own, started after dialing): a
// producer and consumers in one process stamp and read on one monotonic clock.
func (p *Producer) runWith(ctx context.Context, targets []BrokerQueues, shared *clock) (*ProduceResult, error) {
	p.log.Info("produce", "targets", fmt.Sprint(targets), "conns", p.cfg.Conns, "inflight", p.cfg.Inflight,
		"size", p.cfg.MessageBytes, "batch", p.cfg.Batch, "rate", p.cfg.Rate, "oneway", p.cfg.Oneway)
	conns, err := p.dial(ctx, targets)
	if err != nil {
		return nil, err
	}
	clk := newClock()
	if shared != nil {
		clk = *shared
	}
	measureStart := int64(p.cfg.Warmup)
	p.series = NewSeries()
	run := &produceRun{
		p:            p,
		clk:          clk,
		measureStart: measureStart,
		stop:         make(chan struct{}),
		uniq:         codec.NewUniqKeyGenerator(localAddr(conns[0].nc), os.Getpid(), int32(time.Now().UnixNano())),
	}
	if p.cfg.Duration > 0 {
		run.endNs = measureStart + int64(p.cfg.Duration)
	} else {
		run.endNs = math.MaxInt64
	}
	// When the measurement begins: mark the process CPU and start sampling the
	// connections' completion counters for the throughput file.
	var cpuStart cpuMark
	samplerStop := make(chan struct{})
	samplerDone := make(chan struct{})
	var throughput []ThroughputPoint
	userStarted := p.hooks.started("produce")
	begun := false // started runs on this goroutine only (here or in watchRun)
	started := func() {
		begun = true
		cpuStart = markCPU()
		completed := func() (int64, bool) {
			var n int64
			for _, c := range conns {
				n += c.completed.Load()
			}
			return n, true
		}
		// The starting total is read here, not on the sampler's goroutine: responses may
		// arrive before that goroutine first runs.
		first, _ := completed()
		startedAt := time.Now()
		go func() {
			defer close(samplerDone)
			throughput = sampleThroughputFrom(samplerStop, startedAt, ThroughputInterval, first, completed)
		}()
		if userStarted != nil {
			userStarted()
		}
	}
	if measureStart == 0 {
		started() // before the first measured send
		started = nil
	}
	var wg sync.WaitGroup
	var pacerDone chan struct{}
	var lanes []paceLane
	if p.cfg.Rate > 0 {
		pacerDone = make(chan struct{})
		lanes = make([]paceLane, 0, len(conns))
	}
	for i, c := range conns {
		c.run = run
		c.rec = NewRecorder(measureStart, p.series, p.cfg.Rate > 0)
		c.rec.KeepSlow(int64(p.cfg.SlowThreshold))
		c.quota = quota(p.cfg.Count, len(conns), i)
		c.initSender()
		writes := c.writeLoop
		if pacerDone != nil {
			writes = nil
			lanes = append(lanes, c)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.serve(writes, pacerDone)
		}()
	}
	if pacerDone != nil {
		go func() {
			defer close(pacerDone)
			run.pace(lanes)
		}()
	}
	allDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(allDone)
	}()
	watchRun(ctx, clk, measureStart, run.endNs, run.stop, allDone, started, func(sec int) {
		if p.hooks.Second != nil {
			p.hooks.Second("produce", p.series.Row(sec))
		}
	})
	p.series.Close()
	if !begun {
		started() // the run ended before the measurement began: an empty window
	}
	close(samplerStop)
	<-samplerDone
	res, err := p.result(targets, conns, clk, measureStart)
	if res != nil {
		for _, c := range conns {
			res.Written += c.snd.enc.written
		}
		msgs := res.Acked
		if p.cfg.Oneway {
			msgs = res.Sent
		}
		res.ClientCPU = clientCPUSince(cpuStart, msgs)
		res.Throughput = throughput
	}
	return res, err
}

// watchRun waits until allDone, closing stop when ctx ends or the measurement reaches
// endNs. It calls started() once the measurement begins (warm-up over) and second(k)
// shortly after each measured second k ends.
func watchRun(ctx context.Context, clk clock, measureStart, endNs int64, stop chan struct{}, allDone <-chan struct{},
	started func(), second func(int)) {
	var stopOnce sync.Once
	closeStop := func() { stopOnce.Do(func() { close(stop) }) }
	defer closeStop()
	// Report second k at measureStart + (k+1) s + 100 ms: intervals reach the series when
	// their recorder sees the next completion, normally microseconds after the boundary.
	const slack = int64(100 * time.Millisecond)
	next := 0
	begun := false
	secondDue := func() int64 { return measureStart + int64(next+1)*int64(time.Second) + slack }
	timer := time.NewTimer(0)
	defer timer.Stop()
	draining := false
	arm := func(now int64) {
		due := secondDue()
		if !begun {
			due = measureStart
		}
		if !draining {
			due = min(due, endNs)
		}
		timer.Reset(time.Duration(max(due-now, 0)))
	}
	for {
		select {
		case <-allDone:
			return
		case <-ctx.Done():
			closeStop()
			ctx = context.Background() // stop once; keep waiting for the connections
		case <-timer.C:
			now := clk.now()
			if !begun && now >= measureStart {
				begun = true
				if started != nil {
					started()
				}
			}
			for begun && now >= secondDue() {
				second(next)
				next++
			}
			if now >= endNs {
				closeStop()
				draining = true // keep reporting seconds while the connections drain
			}
			arm(clk.now())
		}
	}
}

// quota is connection i's share of count messages (0 = no count limit).
func quota(count int64, conns, i int) int64 {
	if count == 0 {
		return math.MaxInt64
	}
	q := count / int64(conns)
	if int64(i) < count%int64(conns) {
		q++
	}
	return q
}

func localAddr(nc net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(nc.LocalAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// dial opens the connections, spreading them over the targets round-robin.
func (p *Producer) dial(ctx context.Context, targets []BrokerQueues) ([]*producerConn, error) {
	conns := make([]*producerConn, 0, p.cfg.Conns)
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	for i := range p.cfg.Conns {
		t := targets[i%len(targets)]
		nc, err := d.DialContext(ctx, "tcp", t.Addr)
		if err != nil {
			for _, c := range conns {
				_ = c.nc.Close()
			}
			return nil, fmt.Errorf("bench: dial %s: %w", t.Addr, err)
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		// Rotate the queue list so that connections to one broker start on different
		// queues and cover them evenly.
		qs := make([]int32, len(t.Queues))
		for j := range qs {
			qs[j] = t.Queues[(i/len(targets)+j)%len(t.Queues)]
		}
		conns = append(conns, newProducerConn(i, nc, t.Addr, qs, p.cfg.Inflight))
	}
	return conns, nil
}

func (p *Producer) result(targets []BrokerQueues, conns []*producerConn, clk clock, measureStart int64) (*ProduceResult, error) {
	recs := make([]*Recorder, len(conns))
	res := &ProduceResult{Targets: targets}
	failed := 0
	for i, c := range conns {
		recs[i] = c.rec
		res.Sent += c.sent
		if c.failErr != nil {
			failed++
			res.ConnErrors = append(res.ConnErrors, fmt.Sprintf("conn %d to %s: %v", c.id, c.addr, c.failErr))
		}
	}
	counts, lat, svc := mergeRecorders(recs, p.cfg.Rate > 0)
	for _, r := range recs {
		for _, sl := range r.slow {
			res.Slow = append(res.Slow, SlowSend{IntendedNs: clk.wall(sl.IntendedNs), SentNs: clk.wall(sl.SentNs), DoneNs: clk.wall(sl.DoneNs)})
		}
		res.SlowDropped += r.slowDropped
	}
	slices.SortFunc(res.Slow, func(a, b SlowSend) int { return cmp.Compare(a.IntendedNs, b.IntendedNs) })
	res.Acked = counts.Msgs
	res.Errors = counts.Errors
	res.ErrorsByCode = counts.ErrorsByCode
	res.WarmupMsgs = counts.WarmupMsgs
	res.Bytes = counts.Bytes
	res.LatencyHist, res.ServiceHist = lat, svc
	res.Latency = Summarize(lat)
	if svc != nil {
		s := Summarize(svc)
		res.Service = &s
	}
	last := counts.LastNs
	if p.cfg.Oneway {
		res.Acked = 0
		res.Bytes = res.Sent * int64(p.cfg.MessageBytes)
		for _, c := range conns {
			last = max(last, c.lastWriteNs)
		}
	}
	res.Elapsed = time.Duration(max(last-measureStart, 0))
	res.Series = p.series.Rows()
	if failed == len(conns) && res.Acked == 0 && res.Sent == 0 {
		return res, fmt.Errorf("%w: %v", ErrAllConnsFailed, res.ConnErrors)
	}
	return res, nil
}

// produceRun is what the connections of one run share (read-only during the run, except
// stop which is closed once).
type produceRun struct {
	p            *Producer
	clk          clock
	measureStart int64
	endNs        int64 // no message intended at or after this is sent
	stop         chan struct{}
	uniq         *codec.UniqKeyGenerator
}

// prodSlot is one of a connection's W request slots. The writer fills it before writing
// the request and publishes it by storing the opaque last; the reader matches a response
// by loading the opaque first. Atomics make that order visible across the two goroutines
// (the TCP round trip in between is invisible to Go's memory model).
type prodSlot struct {
	opaque  atomic.Int32 // 0 when free
	startNs atomic.Int64 // intended send time (= write time in closed loop)
	sentNs  atomic.Int64 // actual write time
	msgs    atomic.Int32
}

// producerConn is one pipelined connection: a writer goroutine (serve) and a reader
// goroutine (readLoop). free is the semaphore of W slots: the writer takes a slot for each
// request, the reader gives it back when the response arrives.
type producerConn struct {
	id     int
	nc     net.Conn
	addr   string
	queues []int32
	slots  []prodSlot
	free   chan int32
	gens   []uint32 // writer-owned: generation of each slot, for unique opaques
	run    *produceRun

	rec     *Recorder // reader-owned until the reader exits, then the writer's
	quota   int64     // messages to measure (MaxInt64: no limit)
	closing atomic.Bool
	failed  chan struct{}
	failMu  sync.Mutex
	failErr error // set once, before failed is closed

	// writer-owned (the writer goroutine's, or the pacer's in an open-loop run)
	snd         sender
	sent        int64 // measured messages written
	lastWriteNs int64
	unmatched   int64 // reader-owned: responses with an unknown opaque
	readerDone  chan struct{}
	// completed counts acknowledged messages (written ones, oneway), warm-up included,
	// for the throughput sampler: one uncontended atomic add per response.
	completed atomic.Int64
}

func newProducerConn(id int, nc net.Conn, addr string, queues []int32, inflight int) *producerConn {
	c := &producerConn{
		id: id, nc: nc, addr: addr, queues: queues,
		slots:      make([]prodSlot, inflight),
		free:       make(chan int32, inflight),
		gens:       make([]uint32, inflight),
		failed:     make(chan struct{}),
		readerDone: make(chan struct{}),
	}
	for i := range inflight {
		c.free <- int32(i)
	}
	return c
}

// fail records the first failure and unblocks the writer. Safe for concurrent use.
func (c *producerConn) fail(err error) {
	c.failMu.Lock()
	defer c.failMu.Unlock()
	if c.failErr != nil || c.closing.Load() {
		return
	}
	c.failErr = err
	close(c.failed)
	_ = c.nc.Close()
}

// opaqueBase is the least opaque a producer uses: every opaque has opaqueDigits decimal
// digits, so that a templated frame (encoder.template) takes any of them in place.
const opaqueBase = 1_000_000_000

// opaqueFor returns a new opaque for slot idx: opaqueBase + idx + W×generation, unique
// among the requests in flight, and mapping back to idx.
func (c *producerConn) opaqueFor(idx int32) int32 {
	w := uint32(len(c.slots))
	maxGen := (uint32(math.MaxInt32) - opaqueBase) / w
	g := c.gens[idx] % maxGen
	c.gens[idx]++
	return int32(opaqueBase + uint32(idx) + w*g)
}

// Batching limits of one write: enough to amortize the syscall, small enough to keep
// latency of the first request in the batch honest.
const (
	writeBatchMaxRequests = 64
	writeBatchMaxBytes    = 256 << 10
)

// serve runs the connection: its reader, its writes (writes, or nil in an open-loop run
// where the pacer writes and pacerDone closes when it is done), then drains the
// responses, closes the connection and accounts for unanswered requests.
func (c *producerConn) serve(writes func(), pacerDone <-chan struct{}) {
	go c.readLoop()
	if writes != nil {
		writes()
	} else {
		<-pacerDone
	}
	c.drain()
	c.closing.Store(true)
	_ = c.nc.Close()
	<-c.readerDone
	c.accountLost()
	c.rec.Flush()
}

// pendingReq is a request encoded into the write buffer, published to its slot just
// before the write.
type pendingReq struct {
	idx      int32 // slot; -1 oneway
	opaque   int32
	intended int64
	msgs     int32
}

// sender is a connection's write side: requests are encoded into buf and written
// together by flush. Owned by the connection's writer goroutine (closed loop) or by the
// pacer (open loop).
type sender struct {
	enc       *encoder
	buf       []byte
	pending   []pendingReq
	queueIdx  int
	remaining int64     // measured messages still to send (the quota)
	wall      time.Time // the bornTimestamp of the messages of this write
	sched     *schedule // open loop only
}

func (c *producerConn) initSender() {
	run := c.run
	cfg := &run.p.cfg
	c.snd = sender{
		enc:       newEncoder(cfg, c.id, run.uniq),
		buf:       make([]byte, 0, 64<<10),
		pending:   make([]pendingReq, 0, writeBatchMaxRequests),
		remaining: c.quota,
	}
	if cfg.Rate > 0 {
		c.snd.sched = newSchedule(cfg.Rate, c.id, cfg.Conns, 0)
	}
}

// begin starts a write at run-clock time now.
func (c *producerConn) begin(now int64) {
	s := &c.snd
	s.pending = s.pending[:0]
	s.buf = s.buf[:0]
	s.enc.bodyOffs = s.enc.bodyOffs[:0]
	s.wall = time.Unix(0, c.run.clk.wall(now))
}

// add encodes one request in slot idx (-1: oneway) intended at intended into the write.
// Warm-up messages do not use the quota. false: the connection failed (encoding).
func (c *producerConn) add(idx int32, intended int64) bool {
	s := &c.snd
	cfg := &c.run.p.cfg
	msgs := int32(min(int64(cfg.Batch), s.remaining))
	if intended < c.run.measureStart {
		msgs = int32(cfg.Batch)
	} else {
		s.remaining -= int64(msgs)
	}
	opaque := int32(opaqueBase) // oneway: no response to match, any opaque of the width
	if idx >= 0 {
		opaque = c.opaqueFor(idx)
	}
	var err error
	s.buf, err = s.enc.appendRequest(s.buf, opaque, c.queues[s.queueIdx], int(msgs), s.wall)
	if err != nil {
		// Only an impossible header (validated sizes) gets here.
		c.release(idx)
		c.fail(fmt.Errorf("bench: encode send: %w", err))
		return false
	}
	s.queueIdx = (s.queueIdx + 1) % len(c.queues)
	s.pending = append(s.pending, pendingReq{idx: idx, opaque: opaque, intended: intended, msgs: msgs})
	return true
}

// full reports whether the write has reached its batching limit.
func (c *producerConn) full() bool {
	return len(c.snd.pending) >= writeBatchMaxRequests || len(c.snd.buf) >= writeBatchMaxBytes
}

// flush stamps and publishes every request of the write, then writes them in one go.
// false: the connection failed.
func (c *producerConn) flush() bool {
	s := &c.snd
	run := c.run
	sentNs := run.clk.now()
	if run.p.cfg.Rate > 0 {
		// Open loop: each body carries its request's intended send time, the origin of
		// its send latency too, so that end-to-end latency counts the generator's own
		// lateness the same way.
		k := 0
		for _, b := range s.pending {
			s.enc.stampRange(s.buf, k, k+int(b.msgs), run.clk.wall(min(b.intended, sentNs)))
			k += int(b.msgs)
		}
	} else {
		s.enc.stamp(s.buf, run.clk.wall(sentNs))
	}
	var oneway int64
	for _, b := range s.pending {
		if b.intended >= run.measureStart {
			c.sent += int64(b.msgs)
		}
		if b.idx < 0 {
			oneway += int64(b.msgs)
			continue
		}
		sl := &c.slots[b.idx]
		sl.startNs.Store(min(b.intended, sentNs))
		sl.sentNs.Store(sentNs)
		sl.msgs.Store(b.msgs)
		sl.opaque.Store(b.opaque)
	}
	s.pending = s.pending[:0]
	if _, err := c.nc.Write(s.buf); err != nil {
		c.fail(fmt.Errorf("bench: write: %w", err))
		return false
	}
	c.lastWriteNs = run.clk.now()
	if oneway > 0 {
		c.completed.Add(oneway)
	}
	return true
}

// writeLoop is the closed loop's writer: a request goes out as soon as a slot is free,
// and every request that has a free slot goes out in one write.
func (c *producerConn) writeLoop() {
	run := c.run
	oneway := run.p.cfg.Oneway
	for c.snd.remaining > 0 {
		idx := int32(-1)
		if !oneway {
			select {
			case idx = <-c.free:
			case <-run.stop:
				return
			case <-c.failed:
				return
			}
		}
		select {
		case <-run.stop:
			c.release(idx)
			return
		default:
		}
		now := run.clk.now()
		if now >= run.endNs {
			c.release(idx)
			return
		}
		c.begin(now)
		for {
			if !c.add(idx, now) {
				return
			}
			if c.snd.remaining <= 0 || c.full() {
				break
			}
			if !oneway {
				var ok bool
				if idx, ok = c.takeFree(); !ok {
					break // take more only if it is ready right now
				}
			}
		}
		if !c.flush() {
			return
		}
	}
}

// sendDue is the open loop's send (paceLane, called by the pacer): every message intended
// at or before now and before the end of the run goes out, as many per write as the
// batching limits allow, as long as slots are free. It returns the intended time of the
// next message, which is ≤ now when a slot was missing, and math.MaxInt64 when the
// connection is done (quota sent, the run's end reached, or the connection failed).
func (c *producerConn) sendDue(now int64) int64 {
	run := c.run
	s := &c.snd
	oneway := run.p.cfg.Oneway
	select {
	case <-c.failed:
		return math.MaxInt64
	default:
	}
	begun := false
	// stop writes what was begun and returns next (math.MaxInt64 if that write failed).
	stop := func(next int64) int64 {
		if begun && !c.flush() {
			return math.MaxInt64
		}
		return next
	}
	for {
		intended := s.sched.due()
		if s.remaining <= 0 || intended >= run.endNs {
			return stop(math.MaxInt64)
		}
		if intended > now {
			return stop(intended)
		}
		idx := int32(-1)
		if !oneway {
			var ok bool
			if idx, ok = c.takeFree(); !ok {
				// Every slot in flight: the message stays due and goes out at a later
				// wake-up, its latency counted from its intended time.
				return stop(intended)
			}
		}
		if !begun {
			c.begin(now)
			begun = true
		}
		s.sched.advance()
		if !c.add(idx, intended) {
			return math.MaxInt64
		}
		if c.full() {
			if !c.flush() {
				return math.MaxInt64
			}
			begun = false
		}
	}
}

// takeFree takes a free slot if one is free right now.
func (c *producerConn) takeFree() (int32, bool) {
	select {
	case idx := <-c.free:
		return idx, true
	default:
		return -1, false
	}
}

// release gives back a slot taken but not used.
func (c *producerConn) release(idx int32) {
	if idx >= 0 {
		c.free <- idx
	}
}

// drain waits until every slot is back (all responses in), the drain timeout passes, or
// the connection fails.
func (c *producerConn) drain() {
	cfg := &c.run.p.cfg
	if cfg.Oneway {
		return
	}
	timer := time.NewTimer(cfg.DrainTimeout)
	defer timer.Stop()
	for collected := 0; collected < len(c.slots); collected++ {
		select {
		case <-c.free:
		case <-timer.C:
			return
		case <-c.failed:
			return
		}
	}
}

// accountLost counts every request still in flight after the reader exited: TIMEOUT if
// the connection was healthy, CONNECTION_LOST if it failed.
func (c *producerConn) accountLost() {
	name := ErrorTimeout
	if c.failErr != nil {
		name = ErrorConnectionLost
	}
	now := c.run.clk.now()
	for i := range c.slots {
		s := &c.slots[i]
		if s.opaque.Load() == 0 {
			continue
		}
		s.opaque.Store(0)
		c.rec.RecordError(s.startNs.Load(), now, name, int64(s.msgs.Load()))
	}
}

// readLoop is the reader goroutine: it matches responses to slots by opaque, records
// latency (or the error code) and frees the slot.
func (c *producerConn) readLoop() {
	defer close(c.readerDone)
	fr := codec.NewFrameReader(c.nc, 0)
	var cmd codec.RemotingCommand
	run := c.run
	w := int32(len(c.slots))
	bytesPerMsg := int64(run.p.cfg.MessageBytes)
	for {
		payload, err := fr.Next()
		if err != nil {
			if !c.closing.Load() {
				c.fail(fmt.Errorf("bench: read: %w", err))
			}
			return
		}
		now := run.clk.now()
		code, opaque, flag, ok := peekResponse(payload)
		if !ok {
			if err := codec.DecodeCommandInto(&cmd, payload); err != nil {
				c.fail(fmt.Errorf("bench: decode response: %w", err))
				return
			}
			code, opaque, flag = cmd.Code, cmd.Opaque, cmd.Flag
		}
		if flag&codec.FlagResponse == 0 || opaque < opaqueBase {
			continue // a broker-initiated request (e.g. a transaction check): not ours
		}
		idx := (opaque - opaqueBase) % w
		s := &c.slots[idx]
		if s.opaque.Load() != opaque {
			c.unmatched++
			continue
		}
		start, sent, msgs := s.startNs.Load(), s.sentNs.Load(), int64(s.msgs.Load())
		s.opaque.Store(0)
		if code == int32(codec.ResponseSuccess) {
			c.completed.Add(msgs)
			c.rec.Record(start, now, now-start, now-sent, msgs, msgs*bytesPerMsg)
		} else {
			c.rec.RecordError(start, now, errorName(code), msgs)
		}
		c.free <- idx
	}
}
