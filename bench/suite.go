package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// BrokerSetup is one broker configuration of the suite: a name for reports and the
// mqbroker flags (broker.conf keys prefixed with --) that make it, or a peer broker.
type BrokerSetup struct {
	Name  string
	Flags []string
	// Peer is "" for ringmq (bin/mqbroker with Flags), PeerNATS or PeerNull.
	Peer string
	// SyncAlways (NATS) stores with sync_interval: always, the peer of SYNC_FLUSH.
	SyncAlways bool
}

// Durable reports whether the setup acknowledges a message only once it is on disk:
// SYNC_FLUSH for ringmq, sync_interval: always for NATS. Ratios pair setups by it.
func (s BrokerSetup) Durable() bool {
	if s.Peer == PeerNATS {
		return s.SyncAlways
	}
	return slices.Contains(s.Flags, "--flushDiskType=SYNC_FLUSH")
}

// PeerNull names the null server in BrokerSetup.Peer: `mqbench null-server`, the limit
// every other row is measured against.
const PeerNull = "null"

// NullSetups is the null server's setup: one, the same for ASYNC and SYNC points (it
// acknowledges at once either way).
func NullSetups() []BrokerSetup {
	return []BrokerSetup{{Name: "null-server", Peer: PeerNull}}
}

// Point is one load shape: connections × requests in flight per connection, closed
// loop; or, with E2ERate > 0, an end-to-end point: open loop at that many messages per
// second (on the suite's connections and in-flight bound, Conns and Inflight 0) with
// consumers pulling the same topic (RunE2E; RunNATSE2E for NATS). The null server runs
// an e2e point as an open-loop produce at the same rate (its send latency is the floor).
type Point struct {
	Conns    int
	Inflight int
	E2ERate  float64
}

func (p Point) String() string {
	if p.E2ERate > 0 {
		return "e2e@" + strconv.FormatFloat(p.E2ERate, 'f', -1, 64)
	}
	return fmt.Sprintf("%dx%d", p.Conns, p.Inflight)
}

// ComparePoints orders points for tables: closed-loop points by connections, then in
// flight; e2e points after them, by rate.
func ComparePoints(a, b Point) int {
	e2e := func(p Point) int {
		if p.E2ERate > 0 {
			return 1
		}
		return 0
	}
	return cmp.Or(cmp.Compare(e2e(a), e2e(b)), cmp.Compare(a.Conns, b.Conns),
		cmp.Compare(a.Inflight, b.Inflight), cmp.Compare(a.E2ERate, b.E2ERate))
}

// ParsePoints parses "1x1,4x16,16x32,e2e@20000".
func ParsePoints(s string) ([]Point, error) {
	var out []Point
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		if r, ok := strings.CutPrefix(f, "e2e@"); ok {
			rate, err := strconv.ParseFloat(r, 64)
			if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
				return nil, fmt.Errorf("%w: point %q is not e2e@RATE with RATE > 0 messages per second", ErrConfig, f)
			}
			out = append(out, Point{E2ERate: rate})
			continue
		}
		c, w, ok := strings.Cut(f, "x")
		conns, err1 := strconv.Atoi(c)
		inflight, err2 := strconv.Atoi(w)
		if !ok || err1 != nil || err2 != nil || conns < 1 || inflight < 1 {
			return nil, fmt.Errorf("%w: point %q is not CONNSxINFLIGHT with both ≥ 1", ErrConfig, f)
		}
		out = append(out, Point{Conns: conns, Inflight: inflight})
	}
	return out, nil
}

// DefaultMatrix is the configuration matrix of `make bench-report`: ASYNC_FLUSH on the
// mapped file and on the transient store pool, SYNC_FLUSH with each flush backend, all on
// the gnet engine, plus the std (goroutine per connection) engine for one ASYNC and one
// SYNC configuration. The first entry is the baseline of the ratios.
func DefaultMatrix() []BrokerSetup {
	async := []string{"--flushDiskType=ASYNC_FLUSH"}
	sync := func(backend string) []string {
		return []string{"--flushDiskType=SYNC_FLUSH", "--flushBackend=" + backend}
	}
	with := func(base []string, more ...string) []string {
		return append(append([]string(nil), base...), more...)
	}
	return []BrokerSetup{
		{Name: "async-mmap-gnet", Flags: with(async, "--transientStorePoolEnable=false", "--netEngine=gnet")},
		{Name: "async-pool-gnet", Flags: with(async, "--transientStorePoolEnable=true", "--netEngine=gnet")},
		{Name: "sync-iouring-gnet", Flags: with(sync("iouring"), "--transientStorePoolEnable=false", "--netEngine=gnet")},
		{Name: "sync-msync-gnet", Flags: with(sync("msync"), "--transientStorePoolEnable=false", "--netEngine=gnet")},
		{Name: "sync-fdatasync-gnet", Flags: with(sync("fdatasync"), "--transientStorePoolEnable=false", "--netEngine=gnet")},
		{Name: "async-mmap-std", Flags: with(async, "--transientStorePoolEnable=false", "--netEngine=std")},
		{Name: "sync-iouring-std", Flags: with(sync("iouring"), "--transientStorePoolEnable=false", "--netEngine=std")},
	}
}

// SelectSetups keeps the setups named in names (comma-separated; empty keeps all), in
// matrix order.
func SelectSetups(all []BrokerSetup, names string) ([]BrokerSetup, error) {
	if strings.TrimSpace(names) == "" {
		return all, nil
	}
	want := map[string]bool{}
	for n := range strings.SplitSeq(names, ",") {
		want[strings.TrimSpace(n)] = true
	}
	var out []BrokerSetup
	for _, s := range all {
		if want[s.Name] {
			out = append(out, s)
			delete(want, s.Name)
		}
	}
	for n := range want {
		return nil, fmt.Errorf("%w: unknown setup %q", ErrConfig, n)
	}
	return out, nil
}

// PlannedRun is one broker start and load in the suite's order.
type PlannedRun struct {
	Index int // position in the plan
	Round int // 1-based
	Setup BrokerSetup
	// Point is the load shape; Name the run's name in reports: the setup's, or
	// "setup@CxW" when the suite has several points.
	Point Point
	Name  string
}

// Plan interleaves the rounds of one load point (the zero Point: the suite's load).
func Plan(setups []BrokerSetup, rounds int) []PlannedRun {
	return PlanPoints(setups, []Point{{}}, rounds)
}

// PlanPoints interleaves the rounds: every round runs every setup once at every point,
// and each round starts one setup later than the previous one, so that no setup always
// runs first (on a cold page cache) or last (on a machine warmed by the others), and slow
// drift of a shared machine spreads over all setups instead of biasing one.
func PlanPoints(setups []BrokerSetup, points []Point, rounds int) []PlannedRun {
	var plan []PlannedRun
	for r := range rounds {
		for _, p := range points {
			for i := range setups {
				s := setups[(r+i)%len(setups)]
				name := s.Name
				if len(points) > 1 {
					name += "@" + p.String()
				}
				plan = append(plan, PlannedRun{Index: len(plan), Round: r + 1, Setup: s, Point: p, Name: name})
			}
		}
	}
	return plan
}

// SuiteConfig configures RunSuite.
type SuiteConfig struct {
	// BrokerBin is the mqbroker binary; BrokerEnv is added to its environment.
	BrokerBin string
	BrokerEnv []string
	// ResultsDir receives <stamp>/<setup>/round-<r>/ run directories; StoreDir the
	// brokers' stores, one fresh directory per run, removed after it (default
	// <ResultsDir>/tmp: on the repository's disk, not on a tmpfs /tmp).
	ResultsDir string
	StoreDir   string
	Setups     []BrokerSetup
	Rounds     int
	// Load is the produce load run against every setup (its Namesrv/Broker are set per
	// run; its Topic is created with CreateTopic).
	Load ProducerConfig
	// ConsumeDuration > 0 reads back what each run produced, for at most this long (pull
	// throughput); 0 skips it.
	ConsumeDuration time.Duration
	ConsumeConns    int
	// CommitLogBytes is --mappedFileSizeCommitLog: smaller than the 1 GiB default so a
	// run rolls files (and the put lock is measured across rolls) and a store is cheap.
	CommitLogBytes int64
	// Budget bounds the whole suite: a run that would end past it is skipped (and listed).
	Budget time.Duration
	// BrokerStartTimeout bounds waiting for a broker to serve routes; BrokerStopTimeout
	// for it to exit after SIGTERM (then it is killed).
	BrokerStartTimeout time.Duration
	BrokerStopTimeout  time.Duration
	// Stamp names the results directory (default: the start time, 2006-01-02T15-04-05).
	Stamp string
	// Points are the load shapes every setup runs at (empty: Load's Conns × Inflight).
	Points []Point
	// NATSServerBin and NATSBin are nats-server and natscli's nats, for PeerNATS setups.
	NATSServerBin string
	NATSBin       string
	// NullServerBin is the mqbench binary, started as `mqbench null-server` for PeerNull
	// setups (its own process, so its CPU is its own).
	NullServerBin string
}

// points is the plan's load shapes.
func (c *SuiteConfig) points() []Point {
	if len(c.Points) > 0 {
		return c.Points
	}
	return []Point{{Conns: c.Load.Conns, Inflight: c.Load.Inflight}}
}

// DefaultSuiteConfig is `make bench-report`: every setup of DefaultMatrix, the NATS
// JetStream peer (NATSSetups, binaries from `make tools`) and the null server (the
// limit, NullSetups), 3 rounds of 4 × 16 in flight,
// 1 KiB messages for 12 s after 2 s warm-up, 5 s of read-back, within 10 minutes. quick
// (QUICK=1) shortens it to fit 2.5 minutes: 2 s after 0.5 s warm-up, no read-back.
func DefaultSuiteConfig(quick bool) SuiteConfig {
	load := DefaultProducerConfig()
	load.Topic = "BenchmarkSuite"
	load.CreateTopic = true
	load.Queues = 8
	load.Duration = 12 * time.Second
	load.Warmup = 2 * time.Second
	load.DrainTimeout = 5 * time.Second
	cfg := SuiteConfig{
		BrokerBin:          "bin/mqbroker",
		ResultsDir:         "results",
		Setups:             append(append(DefaultMatrix(), NATSSetups()...), NullSetups()...),
		Rounds:             3,
		Load:               load,
		ConsumeDuration:    5 * time.Second,
		ConsumeConns:       4,
		CommitLogBytes:     128 << 20,
		Budget:             10 * time.Minute,
		BrokerStartTimeout: 20 * time.Second,
		BrokerStopTimeout:  20 * time.Second,
		NATSServerBin:      "bin/tools/nats-server",
		NATSBin:            "bin/tools/nats",
		NullServerBin:      "bin/mqbench",
	}
	if quick {
		cfg.Load.Duration = 2 * time.Second
		cfg.Load.Warmup = 500 * time.Millisecond
		cfg.Load.DrainTimeout = 2 * time.Second
		cfg.ConsumeDuration = 0
		cfg.CommitLogBytes = 64 << 20
		cfg.Budget = 150 * time.Second
	}
	return cfg
}

// Validate reports the first field out of range.
func (c *SuiteConfig) Validate() error {
	switch {
	case c.BrokerBin == "":
		return fmt.Errorf("%w: BrokerBin (--broker-bin) is empty", ErrConfig)
	case c.ResultsDir == "":
		return fmt.Errorf("%w: ResultsDir (--results) is empty", ErrConfig)
	case len(c.Setups) == 0:
		return fmt.Errorf("%w: no setups", ErrConfig)
	case c.Rounds < 1:
		return fmt.Errorf("%w: Rounds (--rounds) %d < 1", ErrConfig, c.Rounds)
	case c.Budget <= 0:
		return fmt.Errorf("%w: Budget (--budget) %v <= 0", ErrConfig, c.Budget)
	case c.CommitLogBytes <= 0:
		return fmt.Errorf("%w: CommitLogBytes %d <= 0", ErrConfig, c.CommitLogBytes)
	case c.ConsumeDuration < 0 || (c.ConsumeDuration > 0 && c.ConsumeConns < 1):
		return fmt.Errorf("%w: ConsumeDuration %v / ConsumeConns %d", ErrConfig, c.ConsumeDuration, c.ConsumeConns)
	case c.BrokerStartTimeout <= 0 || c.BrokerStopTimeout <= 0:
		return fmt.Errorf("%w: broker start/stop timeouts must be > 0", ErrConfig)
	}
	names := map[string]bool{}
	for _, s := range c.Setups {
		if s.Name == "" || strings.ContainsAny(s.Name, `/\ @`) || names[s.Name] {
			return fmt.Errorf("%w: setup name %q empty, duplicated or not a plain file name", ErrConfig, s.Name)
		}
		names[s.Name] = true
		switch s.Peer {
		case "":
		case PeerNATS:
			if c.NATSServerBin == "" || c.NATSBin == "" {
				return fmt.Errorf("%w: setup %s needs NATSServerBin and NATSBin (--nats-bin-dir)", ErrConfig, s.Name)
			}
		case PeerNull:
			if c.NullServerBin == "" {
				return fmt.Errorf("%w: setup %s needs NullServerBin (the mqbench binary)", ErrConfig, s.Name)
			}
		default:
			return fmt.Errorf("%w: setup %s: unknown peer %q", ErrConfig, s.Name, s.Peer)
		}
	}
	for _, p := range c.Points {
		if p.E2ERate > 0 {
			if c.Load.MessageBytes < BodySeqBytes || c.Load.Batch != 1 {
				return fmt.Errorf("%w: point %v needs single messages of at least %d bytes", ErrConfig, p, BodySeqBytes)
			}
			continue
		}
		if p.Conns < 1 || p.Inflight < 1 {
			return fmt.Errorf("%w: point %v: connections and in flight must be ≥ 1", ErrConfig, p)
		}
	}
	load := c.Load
	load.Namesrv, load.Broker = "127.0.0.1:1", ""
	return load.Validate()
}

// SuiteRun is one executed run.
type SuiteRun struct {
	PlannedRun
	Dir    string // the run directory (run.json, .hgrm, series.csv, broker.log)
	Record *RunRecord
	Err    error
}

// SuiteResult lists what ran and what the budget left out.
type SuiteResult struct {
	Dir     string // <ResultsDir>/<stamp>
	Runs    []SuiteRun
	Skipped []PlannedRun
	// LoadAvgBefore and LoadAvgAfter are /proc/loadavg's 1, 5 and 15 minute averages
	// before the first run and after the last ("" where unreadable): a suite on a busy
	// machine says so.
	LoadAvgBefore, LoadAvgAfter string
}

// RunDirs are the directories of the runs that completed, in plan order.
func (r *SuiteResult) RunDirs() []string {
	var dirs []string
	for _, run := range r.Runs {
		if run.Err == nil {
			dirs = append(dirs, run.Dir)
		}
	}
	return dirs
}

// RunSuite runs the plan: for each planned run it starts a broker with a fresh store,
// waits until its name server serves routes, runs the load (and the read-back), scrapes
// the broker's metrics around the measured window, stops the broker and writes the run
// directory. A failed run is recorded and the suite goes on; ctx cancels it.
func RunSuite(ctx context.Context, cfg SuiteConfig, logger *slog.Logger) (*SuiteResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	begin := time.Now()
	stamp := cfg.Stamp
	if stamp == "" {
		stamp = begin.Format("2006-01-02T15-04-05")
	}
	res := &SuiteResult{Dir: filepath.Join(cfg.ResultsDir, stamp)}
	storeRoot := cfg.StoreDir
	if storeRoot == "" {
		storeRoot = filepath.Join(cfg.ResultsDir, "tmp")
	}
	if err := os.MkdirAll(res.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	res.LoadAvgBefore = LoadAverage()
	defer func() { res.LoadAvgAfter = LoadAverage() }()
	plan := PlanPoints(cfg.Setups, cfg.points(), cfg.Rounds)
	// Until a run has been timed, assume start + warm-up + load + read-back + stop.
	estimate := cfg.RunEstimate(BrokerSetup{})
	timed := false
	for i, pr := range plan {
		if ctx.Err() != nil {
			res.Skipped = append(res.Skipped, plan[i:]...)
			break
		}
		if time.Since(begin)+estimate > cfg.Budget {
			logger.Warn("suite budget reached; skipping the remaining runs", "budget", cfg.Budget, "skipped", len(plan)-i)
			res.Skipped = append(res.Skipped, plan[i:]...)
			break
		}
		runStart := time.Now()
		if pr.Name == "" {
			pr.Name = pr.Setup.Name
		}
		dir := filepath.Join(res.Dir, pr.Name, fmt.Sprintf("round-%d", pr.Round))
		rec, err := runOne(ctx, &cfg, pr, dir, filepath.Join(storeRoot, fmt.Sprintf("%s-%s-round-%d", stamp, pr.Name, pr.Round)), logger)
		res.Runs = append(res.Runs, SuiteRun{PlannedRun: pr, Dir: dir, Record: rec, Err: err})
		if err != nil {
			logger.Error("suite run failed", "run", pr.Name, "round", pr.Round, "err", err)
		} else {
			p := rec.Results.Produce
			attrs := []any{"run", pr.Name, "round", pr.Round, "msgs_per_sec", int64(p.MsgsPerSec), "p99_us", p.Latency.P99Us, "errors", p.Errors}
			if c := p.ClientCPU; c != nil {
				attrs = append(attrs, "client_cpu_share", fmt.Sprintf("%.3f", c.Share), "client_cpu_us_per_msg", fmt.Sprintf("%.2f", c.UsPerMsg))
			}
			logger.Info("suite run done", attrs...)
		}
		// The longest successful run so far is the best estimate of the next one (a run
		// that failed early says nothing about how long a good one takes).
		if took := time.Since(runStart); err == nil && (!timed || took > estimate) {
			estimate, timed = took, true
		}
	}
	return res, nil
}

// RunEstimate is how long a run of setup is assumed to take before one has been timed:
// start, warm-up, load, read-back (ringmq only: the peers keep nothing to read or are
// read by their own tools) and stop.
func (c *SuiteConfig) RunEstimate(setup BrokerSetup) time.Duration {
	d := suiteRunOverhead + c.Load.Warmup + c.Load.Duration
	if setup.Peer == "" {
		d += c.ConsumeDuration
	}
	return d
}

// suiteRunOverhead is what a run costs besides its load: starting the broker until it
// serves routes, draining the last responses, and the clean shutdown (final flush).
const suiteRunOverhead = 2500 * time.Millisecond

// runOne is one planned run: broker up, load, broker down, run directory written.
func runOne(ctx context.Context, cfg *SuiteConfig, pr PlannedRun, dir, storeDir string, logger *slog.Logger) (*RunRecord, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := os.RemoveAll(storeDir); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(storeDir)
	if pr.Setup.Peer == PeerNATS {
		return runNATS(ctx, cfg, pr, dir, storeDir, logger)
	}
	logFile, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer logFile.Close()
	var bp *brokerProcess
	if pr.Setup.Peer == PeerNull {
		bp, err = startNullServerProcess(ctx, cfg, pr.Setup, logFile)
	} else {
		bp, err = startBroker(ctx, cfg, pr.Setup, storeDir, logFile)
	}
	if err != nil {
		return nil, err
	}
	started := time.Now()
	rec := NewRunRecord(pr.Name, "produce", started)
	load := cfg.Load
	load.Namesrv, load.Broker = bp.namesrvAddr, ""
	if pr.Point.Conns > 0 {
		load.Conns, load.Inflight = pr.Point.Conns, pr.Point.Inflight
	}
	if pr.Point.E2ERate > 0 {
		load.Rate = pr.Point.E2ERate
	}
	rec.Config["setup"] = pr.Setup.Name
	rec.Config["round"] = strconv.Itoa(pr.Round)
	rec.Config["broker_flags"] = strings.Join(bp.args, " ")
	if pr.Setup.Peer != "" {
		rec.Config["peer"] = pr.Setup.Peer
	}
	for k, v := range LoadConfigMap(&load) {
		rec.Config[k] = v
	}
	rec.Machine = DescribeMachine(ctx, storeDir)

	var watcher *MetricsWatcher
	if bp.metricsAddr != "" {
		watcher = NewMetricsWatcher(bp.metricsAddr, "", "", "")
	}
	pid := bp.cmd.Process.Pid
	var serverStart serverCPUMark
	var startOnce sync.Once // an e2e run's producer and consumer both start
	hooks := Hooks{Started: func(string) {
		startOnce.Do(func() {
			serverStart = markServerCPU(pid)
			if watcher == nil {
				return
			}
			if err := watcher.Start(ctx); err != nil {
				logger.Warn("broker metrics unavailable", "err", err)
			}
		})
	}}
	var pres *ProduceResult
	var cres *ConsumeResult
	var e2e *E2EResult
	var serverCPU *ClientCPU
	runErr := func() error {
		if pr.Point.E2ERate > 0 && pr.Setup.Peer == "" {
			// Produce open loop and pull at once; server CPU covers both.
			ccfg := DefaultConsumerConfig()
			ccfg.Namesrv, ccfg.Topic, ccfg.Group = bp.namesrvAddr, load.Topic, "mqbench_e2e"
			ccfg.Conns, ccfg.From = max(cfg.ConsumeConns, 1), FromLast
			var err error
			e2e, err = RunE2E(ctx, E2EConfig{Producer: load, Consumer: ccfg, DrainTimeout: load.DrainTimeout}, logger, hooks)
			if e2e != nil {
				pres, cres = e2e.Produce, e2e.Consume
			}
			if err != nil {
				return err
			}
		} else {
			// A closed-loop point, or the null server's open-loop send latency at an e2e
			// point's rate (it keeps nothing to consume).
			p, err := NewProducer(load, logger, hooks)
			if err != nil {
				return err
			}
			if pres, err = p.Run(ctx); err != nil {
				return err
			}
		}
		serverCPU = serverCPUSince(pid, serverStart, pres.Acked)
		if watcher != nil {
			bm, err := watcher.Finish(ctx)
			if err != nil {
				logger.Warn("broker metrics unavailable", "err", err)
			}
			rec.Broker = bm
		}
		if cfg.ConsumeDuration <= 0 || pr.Setup.Peer == PeerNull || pr.Point.E2ERate > 0 {
			return nil // the null server keeps nothing to read back; an e2e run has read
		}
		ccfg := DefaultConsumerConfig()
		ccfg.Namesrv, ccfg.Topic, ccfg.Group = bp.namesrvAddr, load.Topic, "mqbench_suite"
		ccfg.Conns, ccfg.From, ccfg.Warmup = cfg.ConsumeConns, FromFirst, 0
		ccfg.Count = pres.Sent + pres.WarmupMsgs
		ccfg.Duration = cfg.ConsumeDuration
		ccfg.Commit = false
		c, err := NewConsumer(ccfg, logger, Hooks{})
		if err != nil {
			return err
		}
		cres, err = c.Run(ctx)
		return err
	}()
	stopErr := bp.stop(cfg.BrokerStopTimeout)
	rec.Finished = time.Now()
	if runErr != nil || stopErr != nil {
		return nil, errors.Join(runErr, stopErr)
	}
	rec.SetProduce(&load, pres)
	rec.Results.Produce.ServerCPU = serverCPU
	switch {
	case e2e != nil:
		rec.Mode = "e2e"
		rec.SetConsume(cres)
		rec.SetE2E(e2e)
	case cres != nil:
		rec.Mode = "produce+consume"
		rec.SetConsume(cres)
	}
	if err := WriteRun(dir, rec, pres, cres); err != nil {
		return nil, err
	}
	return rec, nil
}

// LoadConfigMap is a producer configuration as the run record's text config.
func LoadConfigMap(c *ProducerConfig) map[string]string {
	return map[string]string{
		"topic":    c.Topic,
		"queues":   strconv.Itoa(c.Queues),
		"conns":    strconv.Itoa(c.Conns),
		"inflight": strconv.Itoa(c.Inflight),
		"size":     strconv.Itoa(c.MessageBytes),
		"batch":    strconv.Itoa(c.Batch),
		"duration": c.Duration.String(),
		"count":    strconv.FormatInt(c.Count, 10),
		"warmup":   c.Warmup.String(),
		"rate":     strconv.FormatFloat(c.Rate, 'g', -1, 64),
		"oneway":   strconv.FormatBool(c.Oneway),
		"tags":     strings.Join(c.Tags, ","),
		"keys":     strconv.FormatBool(c.Keys),
	}
}

// brokerProcess is one mqbroker started by the suite.
type brokerProcess struct {
	cmd         *exec.Cmd
	args        []string
	brokerAddr  string
	namesrvAddr string
	metricsAddr string
	exited      chan struct{}
	waitErr     error
}

// freePorts asks the kernel for n free loopback ports. They are released before the broker
// binds them, so another process could take one in between: the broker then fails to
// start and the run is reported failed, which is rare enough on a benchmark machine.
func freePorts(n int) ([]int, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			_ = ln.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// startNullServerProcess starts `mqbench null-server` on a free loopback port (it is its
// own name server) and waits until it serves routes.
func startNullServerProcess(ctx context.Context, cfg *SuiteConfig, setup BrokerSetup, log *os.File) (*brokerProcess, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	bp := &brokerProcess{brokerAddr: addr, namesrvAddr: addr, exited: make(chan struct{}),
		args: []string{"null-server", "--listen=" + addr, "--log-level=warn"}}
	return bp, bp.start(ctx, cfg, setup, cfg.NullServerBin, nil, log)
}

// startBroker starts the broker with the setup's flags on free loopback ports and waits
// until its embedded name server answers a route for TBW102 with a writable master.
func startBroker(ctx context.Context, cfg *SuiteConfig, setup BrokerSetup, storeDir string, log *os.File) (*brokerProcess, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	bp := &brokerProcess{
		brokerAddr:  fmt.Sprintf("127.0.0.1:%d", ports[0]),
		namesrvAddr: fmt.Sprintf("127.0.0.1:%d", ports[1]),
		metricsAddr: fmt.Sprintf("127.0.0.1:%d", ports[2]),
		exited:      make(chan struct{}),
	}
	bp.args = append([]string{
		"--storePathRootDir=" + storeDir,
		"--brokerIP1=127.0.0.1",
		"--listenPort=" + strconv.Itoa(ports[0]),
		"--namesrvListenPort=" + strconv.Itoa(ports[1]),
		"--haListenPort=" + strconv.Itoa(ports[3]), // listenPort + 1 may be taken
		"--fastListenPort=0",
		"--metricsAddr=" + bp.metricsAddr,
		"--mappedFileSizeCommitLog=" + strconv.FormatInt(cfg.CommitLogBytes, 10),
	}, setup.Flags...)
	return bp, bp.start(ctx, cfg, setup, cfg.BrokerBin, cfg.BrokerEnv, log)
}

// start runs bin with bp.args (env added to the environment) and waits until bp's name
// server answers a route for TBW102 with a writable master.
func (bp *brokerProcess) start(ctx context.Context, cfg *SuiteConfig, setup BrokerSetup, bin string, env []string, log *os.File) error {
	bp.cmd = exec.Command(bin, bp.args...)
	bp.cmd.Stdout, bp.cmd.Stderr = log, log
	bp.cmd.Env = append(os.Environ(), env...)
	if err := bp.cmd.Start(); err != nil {
		return fmt.Errorf("%w: start %s: %w", ErrBroker, bin, err)
	}
	go func() {
		bp.waitErr = bp.cmd.Wait()
		close(bp.exited)
	}()
	deadline := time.Now().Add(cfg.BrokerStartTimeout)
	for {
		rd, err := fetchRoute(ctx, bp.namesrvAddr, autoCreateTemplateTopic, time.Second)
		if err == nil && len(routeQueues(rd, permWrite, 0)) > 0 {
			return nil
		}
		select {
		case <-bp.exited:
			return fmt.Errorf("%w: %s exited during start (%v); see %s", ErrBroker, setup.Name, bp.waitErr, log.Name())
		case <-ctx.Done():
			_ = bp.stop(cfg.BrokerStopTimeout)
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = bp.stop(cfg.BrokerStopTimeout)
			return fmt.Errorf("%w: %s did not serve routes within %v (last: %v); see %s", ErrBroker, setup.Name, cfg.BrokerStartTimeout, err, log.Name())
		}
	}
}

// stop sends SIGTERM (a clean shutdown: final flush, checkpoint) and waits; after the
// timeout it kills the process.
func (bp *brokerProcess) stop(timeout time.Duration) error {
	select {
	case <-bp.exited:
		return bp.exitError()
	default:
	}
	if err := bp.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		<-bp.exited
		return bp.exitError()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-bp.exited:
		return bp.exitError()
	case <-t.C:
		_ = bp.cmd.Process.Kill()
		<-bp.exited
		return fmt.Errorf("%w: did not exit within %v of SIGTERM; killed", ErrBroker, timeout)
	}
}

func (bp *brokerProcess) exitError() error {
	if bp.waitErr != nil {
		return fmt.Errorf("%w: %w", ErrBroker, bp.waitErr)
	}
	return nil
}

// LoadAverage is /proc/loadavg's 1, 5 and 15 minute load averages ("" off Linux).
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
