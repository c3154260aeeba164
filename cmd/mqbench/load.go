package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/bench"
	"github.com/ringmq/ringmq/internal/hiccup"
)

// errHelp: --help was asked for and printed (exit status 0).
var errHelp = errors.New("mqbench: help")

// loadOptions are the flags of produce, consume and mixed.
type loadOptions struct {
	mode string
	fs   *pflag.FlagSet
	p    bench.ProducerConfig
	c    bench.ConsumerConfig

	// common
	namesrv, broker, topic string
	queues                 int
	duration, warmup, dial time.Duration
	out, name, diskPath    string
	metrics                string
	putLock, putLatency    string
	putLockMax             string
	logLevel, progress     string
	cpuProfile             string
	// consume
	noLongPolling bool
	// tail attribution (issue 17 item 1)
	slowLog, hiccupLog string
	// e2e against NATS JetStream
	natsURL, natsStream string
}

func newLoadOptions(mode string, stderr io.Writer) *loadOptions {
	o := &loadOptions{mode: mode, p: bench.DefaultProducerConfig(), c: bench.DefaultConsumerConfig()}
	fs := pflag.NewFlagSet("mqbench "+mode, pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	o.fs = fs
	fs.StringVar(&o.namesrv, "namesrv", "", "name server address(es), ';'-separated: the topic's route gives the masters and queues")
	fs.StringVar(&o.broker, "broker", "", "broker address to use directly (instead of --namesrv), with queues 0..--queues-1")
	fs.StringVar(&o.topic, "topic", o.p.Topic, "topic")
	fs.IntVar(&o.queues, "queues", 0, "queues per broker to use (0: all of the route; 4 without a route)")
	fs.DurationVar(&o.duration, "duration", o.p.Duration, "how long to measure, after --warmup (0: until --count)")
	fs.DurationVar(&o.warmup, "warmup", o.p.Warmup, "load before measuring (not counted)")
	if mode != "consume" {
		fs.BoolVar(&o.p.CreateTopic, "create-topic", false, "create the topic with UPDATE_AND_CREATE_TOPIC (--queues queues) first; else a new topic is auto-created by the first send (defaultTopic TBW102)")
		fs.StringVar(&o.p.ProducerGroup, "producer-group", o.p.ProducerGroup, "producer group of the send header")
		fs.IntVar(&o.p.Conns, "conns", o.p.Conns, "producer connections")
		fs.IntVar(&o.p.Inflight, "inflight", o.p.Inflight, "requests in flight per connection")
		fs.IntVar(&o.p.MessageBytes, "size", o.p.MessageBytes, "message body bytes (≥ 16 carries a nanosecond send stamp for end-to-end latency)")
		fs.StringSliceVar(&o.p.Tags, "tags", nil, "tags to put on messages, rotating (comma-separated)")
		fs.BoolVar(&o.p.Keys, "keys", false, "put a unique KEYS property on every message (indexed by the broker)")
		fs.BoolVar(&o.p.Oneway, "oneway", false, "send oneway: no responses, throughput only")
		fs.IntVar(&o.p.Batch, "batch", 1, "messages per request (> 1: SEND_BATCH_MESSAGE)")
		fs.Int64Var(&o.p.Count, "count", 0, "messages to measure (0: until --duration)")
		fs.Float64Var(&o.p.Rate, "rate", 0, "open loop: messages per second in total, latency from the intended send time (0: closed loop)")
		fs.DurationVar(&o.p.Tick, "tick", bench.DefaultTick, "open loop: the pacer wakes at most once per tick and sends everything due (a message waits at most a tick, counted in its latency)")
		fs.DurationVar(&o.p.DrainTimeout, "drain-timeout", o.p.DrainTimeout, "wait this long for the last responses; unanswered requests count as TIMEOUT")
		fs.StringVar(&o.slowLog, "slow-log", "", "write every measured send at least --slow-threshold late to FILE: intended, written, answered (Unix ns)")
		fs.DurationVar(&o.p.SlowThreshold, "slow-threshold", time.Millisecond, "what --slow-log counts as slow")
	}
	if mode != "produce" {
		fs.StringVar(&o.c.Group, "group", o.c.Group, "consumer group")
		if mode == "consume" {
			fs.IntVar(&o.c.Conns, "conns", o.c.Conns, "consumer connections")
			fs.Int64Var(&o.c.Count, "count", 0, "messages to receive (0: until --duration)")
			fs.StringVar(&o.c.From, "from", o.c.From, "where to start: committed (else first), first or last")
		} else {
			fs.IntVar(&o.c.Conns, "consume-conns", o.c.Conns, "consumer connections")
			fs.StringVar(&o.c.From, "from", bench.FromLast, "where the consumer starts: last (what this run sends), committed or first")
		}
		fs.BoolVar(&o.noLongPolling, "no-long-polling", false, "pull without the SUSPEND flag (poll every --poll-interval when empty)")
		fs.DurationVar(&o.c.SuspendTimeout, "suspend-timeout", o.c.SuspendTimeout, "long-polling hold (suspendTimeoutMillis)")
		fs.DurationVar(&o.c.PollInterval, "poll-interval", o.c.PollInterval, "wait after an empty pull without long polling")
		fs.IntVar(&o.c.MaxMsgNums, "max-msgs", o.c.MaxMsgNums, "messages per pull (maxMsgNums)")
		fs.BoolVar(&o.c.Commit, "commit", true, "commit offsets with the pulls (COMMIT_OFFSET) and at the end; --commit=false: never")
		fs.StringVar(&o.c.Subscription, "subscription", o.c.Subscription, "TAG expression, e.g. '*' or 'TagA || TagB'")
	}
	if mode == "e2e" {
		fs.StringVar(&o.natsURL, "nats-url", "", "run against NATS JetStream at this URL (nats://host:port) instead of a RocketMQ broker: --topic is the subject, published with the NATS Go client, pulled by a durable pull consumer")
		fs.StringVar(&o.natsStream, "nats-stream", "MQBENCH_E2E", "with --nats-url: the stream capturing --topic (created with file storage, one replica, if missing)")
	}
	fs.DurationVar(&o.dial, "dial-timeout", o.p.DialTimeout, "connect and control-request timeout")
	fs.StringVar(&o.out, "out", "", "write the run directory here (run.json, .hgrm, series.csv)")
	fs.StringVar(&o.name, "name", "", "name of the run in reports (default: mode and start time)")
	fs.StringVar(&o.diskPath, "disk-path", ".", "directory whose disk the run record describes (the broker's store, when local)")
	fs.StringVar(&o.metrics, "metrics", "", "broker metrics address (its metricsAddr, host:port or URL): scrape /metrics around the measurement")
	fs.StringVar(&o.putLock, "put-lock-metric", bench.DefaultPutLockMetric, "broker put-lock histogram name")
	fs.StringVar(&o.putLatency, "put-latency-metric", bench.DefaultPutLatencyMetric, "broker put-latency histogram name")
	fs.StringVar(&o.putLockMax, "put-lock-max-metric", bench.DefaultPutLockMaxMetric, "broker longest put-lock gauge name")
	fs.StringVar(&o.progress, "progress", "auto", "progress line per second on stderr: auto (when a terminal), always, never")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	fs.StringVar(&o.cpuProfile, "cpu-profile", "", "write mqbench's own CPU profile (pprof) of the whole run to FILE")
	fs.StringVar(&o.hiccupLog, "hiccup-log", "", "run a hiccup meter (a goroutine sleeping 1 ms over and over) and write its wake-ups late by ≥ 1 ms to FILE: start, length (ns)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage of mqbench %s:\n%s", mode, fs.FlagUsages())
	}
	return o
}

// parse parses args and fills the configurations.
func (o *loadOptions) parse(args []string) error {
	if err := o.fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if o.fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, o.fs.Args())
	}
	switch o.progress {
	case "auto", "always", "never":
	default:
		return fmt.Errorf("%w: --progress %q is not auto, always or never", errUsage, o.progress)
	}
	p, c := &o.p, &o.c
	if o.natsURL != "" && o.namesrv == "" && o.broker == "" {
		o.broker = "nats" // not dialled: keeps the RocketMQ checks below quiet
	}
	p.Namesrv, p.Broker, p.Topic, p.Queues = o.namesrv, o.broker, o.topic, o.queues
	c.Namesrv, c.Broker, c.Topic, c.Queues = o.namesrv, o.broker, o.topic, o.queues
	p.Duration, p.Warmup, p.DialTimeout = o.duration, o.warmup, o.dial
	c.Duration, c.Warmup, c.DialTimeout = o.duration, o.warmup, o.dial
	c.LongPolling = !o.noLongPolling
	if o.mode == "e2e" {
		// The run drives the consumer (bench.E2EConfig): it ends when everything written
		// has been received; a placeholder duration passes the check below.
		c.Count, c.Duration = 0, time.Hour
		if p.Rate <= 0 {
			return fmt.Errorf("%w: e2e is open loop: --rate must be > 0", errUsage)
		}
	}
	if o.mode == "mixed" {
		// The consumer measures the same window and stops on the producer's count; a
		// duration run gives it a moment to read the last messages (its throughput is
		// measured up to its last receipt, so the grace does not dilute it).
		c.Count = p.Count
		if p.Duration > 0 {
			c.Duration = p.Duration + min(p.DrainTimeout, 2*time.Second)
		} else {
			c.Duration = 0
		}
	}
	var err error
	if o.mode != "consume" {
		err = errors.Join(err, p.Validate())
	}
	if o.mode != "produce" {
		err = errors.Join(err, c.Validate())
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

// natsE2EConfig is the e2e run's shape for NATS JetStream.
func (o *loadOptions) natsE2EConfig() bench.NATSE2EConfig {
	return bench.NATSE2EConfig{URL: o.natsURL, Stream: o.natsStream, Subject: o.topic, Conns: o.p.Conns, Inflight: o.p.Inflight,
		Rate: o.p.Rate, MessageBytes: o.p.MessageBytes, Duration: o.p.Duration, Warmup: o.p.Warmup, Count: o.p.Count,
		ConsumeConns: o.c.Conns, Tick: o.p.Tick, DrainTimeout: o.p.DrainTimeout, DialTimeout: o.dial}
}

// progressPrinter prints one line per measured second (to a terminal).
type progressPrinter struct {
	mu sync.Mutex
	w  io.Writer
}

func (pp *progressPrinter) second(role string, row bench.SeriesRow) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	fmt.Fprintf(pp.w, "mqbench: %-7s %4ds %10d msgs/s  p99 %9.1f µs  errors %d\n", role, row.Second+1, row.Msgs, row.P99Us, row.Errors)
}

// runLoad runs produce, consume or mixed.
func runLoad(ctx context.Context, mode string, args []string, stdout, stderr io.Writer) error {
	o := newLoadOptions(mode, stderr)
	if err := o.parse(args); err != nil {
		return err
	}
	logger, err := newLogger(stderr, o.logLevel)
	if err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	var hooks bench.Hooks
	showProgress := o.progress == "always"
	if o.slowLog == "" {
		o.p.SlowThreshold = 0 // keep nothing
	}
	if o.hiccupLog != "" {
		meter, err := hiccup.New(hiccup.Config{Interval: time.Millisecond})
		if err != nil {
			return err
		}
		meter.Start()
		defer func() {
			meter.Stop()
			if err := writeHiccups(o.hiccupLog, meter); err != nil {
				logger.Warn("hiccup log not written", "err", err)
			}
		}()
	}
	if o.progress == "auto" {
		if f, ok := stderr.(*os.File); ok && bench.IsTerminal(f) {
			showProgress = true
		}
	}
	if showProgress {
		pp := &progressPrinter{w: stderr}
		hooks.Second = pp.second
	}
	var watcher *bench.MetricsWatcher
	if o.metrics != "" {
		watcher = bench.NewMetricsWatcher(o.metrics, o.putLock, o.putLatency, o.putLockMax)
		var once sync.Once
		hooks.Started = func(string) {
			once.Do(func() {
				if err := watcher.Start(ctx); err != nil {
					logger.Warn("broker metrics unavailable", "err", err)
				}
			})
		}
	}
	started := time.Now()
	var pres *bench.ProduceResult
	var cres *bench.ConsumeResult
	var e2e *bench.E2EResult
	var runErr error
	switch mode {
	case "produce":
		var p *bench.Producer
		if p, runErr = bench.NewProducer(o.p, logger, hooks); runErr == nil {
			pres, runErr = p.Run(ctx)
		}
	case "consume":
		var c *bench.Consumer
		if c, runErr = bench.NewConsumer(o.c, logger, hooks); runErr == nil {
			cres, runErr = c.Run(ctx)
		}
	case "mixed":
		pres, cres, runErr = bench.RunMixed(ctx, o.p, o.c, logger, hooks)
	case "e2e":
		if o.natsURL != "" {
			e2e, runErr = bench.RunNATSE2E(ctx, o.natsE2EConfig(), logger)
		} else {
			e2e, runErr = bench.RunE2E(ctx, bench.E2EConfig{Producer: o.p, Consumer: o.c, DrainTimeout: o.p.DrainTimeout}, logger, hooks)
		}
		if errors.Is(runErr, bench.ErrConfig) {
			return fmt.Errorf("%w: %w", errUsage, runErr)
		}
		if e2e != nil {
			pres, cres = e2e.Produce, e2e.Consume
		}
	}
	if pres == nil && cres == nil {
		return runErr
	}
	rec := bench.NewRunRecord(o.name, mode, started)
	rec.Command = append([]string{"mqbench", mode}, args...)
	o.fs.VisitAll(func(f *pflag.Flag) { rec.Config[f.Name] = f.Value.String() })
	rec.Machine = bench.DescribeMachine(ctx, o.diskPath)
	if watcher != nil {
		bm, err := watcher.Finish(context.WithoutCancel(ctx)) // also after Ctrl-C; the client has a timeout
		if err != nil {
			logger.Warn("broker metrics unavailable", "err", err)
		}
		rec.Broker = bm
	}
	rec.Finished = time.Now()
	if pres != nil {
		rec.SetProduce(&o.p, pres)
		for _, e := range pres.ConnErrors {
			logger.Warn("producer connection failed", "err", e)
		}
	}
	if cres != nil {
		rec.SetConsume(cres)
		for _, e := range cres.ConnErrors {
			logger.Warn("consumer connection failed", "err", e)
		}
	}
	if e2e != nil {
		rec.SetE2E(e2e)
	}
	var writeErr error
	if o.out != "" {
		writeErr = bench.WriteRun(o.out, rec, pres, cres)
	}
	if o.slowLog != "" && pres != nil {
		writeErr = errors.Join(writeErr, bench.WriteSlowLog(o.slowLog, o.p.SlowThreshold, pres))
	}
	if pres != nil {
		if len(pres.ErrorsByCode) > 0 {
			fmt.Fprintf(stdout, "mqbench: produce errors by code: %s\n", formatCodes(pres.ErrorsByCode))
		}
		fmt.Fprintln(stdout, bench.ProduceSummaryLine("produce", pres))
	}
	if cres != nil {
		if len(cres.ErrorsByCode) > 0 {
			fmt.Fprintf(stdout, "mqbench: consume errors by code: %s\n", formatCodes(cres.ErrorsByCode))
		}
		fmt.Fprintln(stdout, bench.ConsumeSummaryLine("consume", cres))
	}
	if e2e != nil {
		fmt.Fprintln(stdout, bench.E2ESummaryLine(o.p.Rate, e2e))
		if runErr == nil && e2e.Missing > 0 {
			runErr = fmt.Errorf("%d of %d messages written were not received within --drain-timeout %v", e2e.Missing, e2e.Written, o.p.DrainTimeout)
		}
	}
	return errors.Join(runErr, writeErr)
}

func formatCodes(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// runLean is `mqbench lean`: the lean generator (bench.RunLean) with produce's flags, the
// yardstick for mqbench produce's own cost. It prints one summary line.
func runLean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o := newLoadOptions("produce", stderr)
	o.fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage of mqbench lean (closed loop, throughput only; produce's flags, without --batch, --rate, --oneway, --count, --tags, --keys):\n%s", o.fs.FlagUsages())
	}
	if err := o.parse(args); err != nil {
		return err
	}
	stopProfile, err := startCPUProfile(o.cpuProfile)
	if err != nil {
		return err
	}
	defer stopProfile()
	res, err := bench.RunLean(ctx, o.p)
	if errors.Is(err, bench.ErrConfig) {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if res != nil {
		fmt.Fprintln(stdout, res.SummaryLine())
	}
	return err
}

// startCPUProfile starts a pprof CPU profile into path (none when path is empty); the
// returned function stops it and closes the file.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}, nil
}

func writeHiccups(path string, m *hiccup.Meter) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := m.WriteStalls(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
