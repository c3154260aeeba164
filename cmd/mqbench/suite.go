package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/bench"
	"github.com/ringmq/ringmq/perf"
)

// Markers around the suite's section in BENCHMARKS.md: the suite replaces what lies
// between them and leaves the rest of the file alone.
const (
	benchmarksBegin = "<!-- mqbench-suite:begin -->"
	benchmarksEnd   = "<!-- mqbench-suite:end -->"
)

// runSuite is `mqbench suite` (make bench-report).
func runSuite(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fset := pflag.NewFlagSet("mqbench suite", pflag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.SortFlags = false
	quick := fset.Bool("quick", false, "the ≤ 2 minute variant (QUICK=1): 2 s runs, no read-back")
	brokerBin := fset.String("broker-bin", "bin/mqbroker", "the broker binary")
	results := fset.String("results", "results", "results directory: runs go to <results>/<stamp>/<setup>/round-<n>/")
	storeDir := fset.String("store-dir", "", "where the brokers' temporary stores go (default <results>/tmp; avoid a tmpfs)")
	rounds := fset.Int("rounds", 3, "rounds; every round runs every setup once, interleaved")
	setups := fset.String("setups", "", "comma-separated setups to run (default all): "+setupNames())
	budget := fset.Duration("budget", 10*time.Minute, "bound on the whole suite (quick: 2m); runs that would pass it are skipped")
	conns := fset.Int("conns", 4, "producer connections")
	inflight := fset.Int("inflight", 16, "requests in flight per connection")
	size := fset.Int("size", 1024, "message bytes")
	duration := fset.Duration("duration", 12*time.Second, "measured time per run (quick: 2s)")
	warmup := fset.Duration("warmup", 2*time.Second, "warm-up per run (quick: 500ms)")
	consume := fset.Duration("consume-duration", 5*time.Second, "read back for at most this long after each run (0: no read-back; quick: 0)")
	commitLog := fset.Int64("commitlog-bytes", 128<<20, "--mappedFileSizeCommitLog of the brokers (quick: 64 MiB)")
	points := fset.String("points", "", "load points CONNSxINFLIGHT or e2e@RATE (open loop at RATE msgs/s with consumers: end-to-end latency), comma-separated (e.g. 1x1,4x16,16x32,e2e@20000); default --conns x --inflight")
	peers := fset.String("peers", bench.PeerNATS+","+bench.PeerNull, "peers run in the same rounds, comma-separated: nats (NATS JetStream, binaries from `make tools`), null (mqbench null-server, the limit), or none")
	natsBinDir := fset.String("nats-bin-dir", "bin/tools", "directory holding nats-server and nats (make tools)")
	writeBenchmarks := fset.Bool("write-benchmarks", false, "replace the "+benchmarksBegin+" … "+benchmarksEnd+" section of --benchmarks-md with the tables (WRITE_BENCHMARKS=1; never with --quick). Without it BENCHMARKS.md is left alone")
	benchmarksMD := fset.String("benchmarks-md", "BENCHMARKS.md", "file whose marked section --write-benchmarks replaces (skipped if it has no markers)")
	logLevel := fset.String("log-level", "info", "log level")
	fset.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mqbench suite [flags]\n\nStarts the broker once per setup (and the NATS JetStream peer) with a fresh store on loopback,\n"+
			"runs the same load against each (interleaved rounds), and writes <results>/<stamp>/report.html\n"+
			"and <results>/<stamp>/BENCHMARKS.md (medians, ringmq / NATS ratios).\n\n%s", fset.FlagUsages())
	}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fset.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fset.Args())
	}
	if *quick && *writeBenchmarks {
		return fmt.Errorf("%w: --write-benchmarks with --quick: a quick run's figures never go into BENCHMARKS.md", errUsage)
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	cfg := bench.DefaultSuiteConfig(*quick)
	cfg.BrokerBin, cfg.ResultsDir, cfg.StoreDir, cfg.Rounds = *brokerBin, *results, *storeDir, *rounds
	cfg.NATSServerBin = filepath.Join(*natsBinDir, "nats-server")
	cfg.NATSBin = filepath.Join(*natsBinDir, "nats")
	if cfg.Setups, err = withPeers(*peers); err != nil {
		return err
	}
	if cfg.NullServerBin, err = os.Executable(); err != nil {
		return fmt.Errorf("mqbench: the null server is this binary: %w", err)
	}
	if cfg.Setups, err = bench.SelectSetups(cfg.Setups, *setups); err != nil {
		return fmt.Errorf("%w: --setups: %w", errUsage, err)
	}
	if *points != "" {
		if cfg.Points, err = bench.ParsePoints(*points); err != nil {
			return fmt.Errorf("%w: --points: %w", errUsage, err)
		}
	}
	for _, s := range cfg.Setups {
		if s.Peer != bench.PeerNATS {
			continue
		}
		for _, bin := range []string{cfg.NATSServerBin, cfg.NATSBin} {
			if _, err := os.Stat(bin); err != nil {
				return fmt.Errorf("%w: setup %s needs %s: run `make tools` (or --peers none): %w", errUsage, s.Name, bin, err)
			}
		}
	}
	changed := fset.Changed
	if changed("budget") {
		cfg.Budget = *budget
	}
	cfg.Load.Conns, cfg.Load.Inflight, cfg.Load.MessageBytes = *conns, *inflight, *size
	if changed("duration") {
		cfg.Load.Duration = *duration
	}
	if changed("warmup") {
		cfg.Load.Warmup = *warmup
	}
	if changed("consume-duration") {
		cfg.ConsumeDuration = *consume
	}
	if changed("commitlog-bytes") {
		cfg.CommitLogBytes = *commitLog
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	res, err := bench.RunSuite(ctx, cfg, logger)
	if err != nil {
		return err
	}
	dirs := res.RunDirs()
	var failed []string
	for _, r := range res.Runs {
		if r.Err != nil {
			failed = append(failed, fmt.Sprintf("%s round %d: %v", r.Name, r.Round, r.Err))
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no run completed: %s", strings.Join(failed, "; "))
	}
	runs, err := perf.LoadAll(dirs)
	if err != nil {
		return err
	}
	machine := bench.DescribeMachine(ctx, storeRoot(&cfg))
	notes := suiteNotes(&cfg, res, failed, *quick, machine)
	medians := perf.Medians(perf.GroupByName(runs))
	htmlPath := filepath.Join(res.Dir, "report.html")
	mdPath := filepath.Join(res.Dir, "BENCHMARKS.md")
	var tables []perf.Table
	for _, t := range []*perf.Table{peerRatios(res, medians), limitRatios(res, medians)} {
		if t != nil && len(t.Rows) > 0 {
			tables = append(tables, *t)
		}
	}
	if err := writeSuiteReport(runs, "ringmq broker configurations", htmlPath, notes, tables); err != nil {
		return err
	}
	section, err := benchmarksSection(runs, notes, tables, htmlPath)
	if err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(section), 0o644); err != nil {
		return err
	}
	fmt.Fprint(stdout, section)
	fmt.Fprintf(stdout, "\nmqbench: report %s, tables %s\n", htmlPath, mdPath)
	if *writeBenchmarks {
		updated, err := replaceSection(*benchmarksMD, section)
		if err != nil {
			return err
		}
		if updated {
			fmt.Fprintf(stdout, "mqbench: updated the suite section of %s\n", *benchmarksMD)
		} else {
			fmt.Fprintf(stdout, "mqbench: %s has no suite section; left alone\n", *benchmarksMD)
		}
	} else {
		fmt.Fprintf(stdout, "mqbench: %s left alone (--write-benchmarks / WRITE_BENCHMARKS=1 rewrites its suite section)\n", *benchmarksMD)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed: %s", len(failed), len(res.Runs), strings.Join(failed, "; "))
	}
	return nil
}

// withPeers is the default matrix and the peers named ("none": no peer).
func withPeers(peers string) ([]bench.BrokerSetup, error) {
	setups := bench.DefaultMatrix()
	if peers == "none" {
		return setups, nil
	}
	seen := map[string]bool{}
	for p := range strings.SplitSeq(peers, ",") {
		p = strings.TrimSpace(p)
		if seen[p] {
			continue
		}
		seen[p] = true
		switch p {
		case bench.PeerNATS:
			setups = append(setups, bench.NATSSetups()...)
		case bench.PeerNull:
			setups = append(setups, bench.NullSetups()...)
		default:
			return nil, fmt.Errorf("%w: --peers %q: %q is not nats or null (or use none alone)", errUsage, peers, p)
		}
	}
	return setups, nil
}

func setupNames() string {
	var names []string
	for _, s := range append(append(bench.DefaultMatrix(), bench.NATSSetups()...), bench.NullSetups()...) {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

// storeRoot is where the suite's stores went (the disk the report describes).
func storeRoot(cfg *bench.SuiteConfig) string {
	if cfg.StoreDir != "" {
		return cfg.StoreDir
	}
	return cfg.ResultsDir
}

// suiteNotes are the report's opening paragraphs: the machine and how busy it was, the
// command and load, each configuration, then what was skipped or failed.
func suiteNotes(cfg *bench.SuiteConfig, res *bench.SuiteResult, failed []string, quick bool, m bench.Machine) []string {
	cmd := "make bench-report"
	if quick {
		cmd = "make bench-report QUICK=1"
	}
	disk := orDash(m.Disk.Device) + " " + orDash(m.Disk.FSType)
	if m.Disk.Model != "" {
		disk += " (" + m.Disk.Model + ")"
	}
	if m.Disk.Rotational != nil {
		disk += map[bool]string{true: ", rotational", false: ", not rotational"}[*m.Disk.Rotational]
	}
	rev := m.GitRevision
	if m.GitDirty {
		rev += " (modified)"
	}
	notes := []string{
		fmt.Sprintf("Machine: nproc %d, %s, Linux %s, store disk %s at %s, %s, git %s. Load average (1, 5, 15 min) before the suite: %s; after: %s. The load generators run on the same cores as the brokers.",
			m.NumCPU, orDash(m.CPUModel), orDash(m.Kernel), disk, orDash(m.Disk.MountPoint), m.GoVersion, orDash(rev),
			orDash(res.LoadAvgBefore), orDash(res.LoadAvgAfter)),
	}
	l := cfg.Load
	var pts []string
	for _, p := range suitePoints(cfg) {
		if p.E2ERate > 0 {
			pts = append(pts, fmt.Sprintf("end to end (%v) at %.0f msgs/s open loop on %d connections × %d in flight, consumers pulling the topic "+
				"from its end (mqbench e2e: send and produce-to-consume latency on one clock, every message matched; NATS by mqbench e2e --nats-url, the NATS Go client; the null server runs the same rate as an open-loop produce)",
				p, p.E2ERate, cfg.Load.Conns, cfg.Load.Inflight))
			continue
		}
		pts = append(pts, fmt.Sprintf("%d connections × %d in flight", p.Conns, p.Inflight))
	}
	notes = append(notes, fmt.Sprintf("Command: %s (mqbench suite). Load: %s, %d-byte messages, %v measured after %v warm-up, against each broker setup on loopback with a fresh store; %d rounds, interleaved; figures are medians.",
		cmd, strings.Join(pts, "; "), l.MessageBytes, l.Duration, l.Warmup, cfg.Rounds))
	for _, s := range cfg.Setups {
		notes = append(notes, "Configuration "+s.Name+": "+describeSetup(cfg, s))
	}
	if cfg.ConsumeDuration > 0 {
		notes = append(notes, fmt.Sprintf("After each ringmq run the messages are read back (pull, %d connections, at most %v): pull msgs/s.", cfg.ConsumeConns, cfg.ConsumeDuration))
	}
	if len(res.Skipped) > 0 {
		notes = append(notes, fmt.Sprintf("%d planned runs were skipped to stay within the %v budget.", len(res.Skipped), cfg.Budget))
	}
	for _, f := range failed {
		notes = append(notes, "Failed: "+f)
	}
	return notes
}

func suitePoints(cfg *bench.SuiteConfig) []bench.Point {
	if len(cfg.Points) > 0 {
		return cfg.Points
	}
	return []bench.Point{{Conns: cfg.Load.Conns, Inflight: cfg.Load.Inflight}}
}

// describeSetup says how a setup is configured and loaded.
func describeSetup(cfg *bench.SuiteConfig, s bench.BrokerSetup) string {
	if s.Peer == bench.PeerNull {
		return "mqbench null-server (the limit): answers every send SEND_OK at once and stores nothing, one read and one write per batch of frames; the same load by mqbench produce. Server CPU: its process's, from /proc/<pid>/stat."
	}
	if s.Peer == bench.PeerNATS {
		sync := "default sync_interval (2 min: acknowledged once in the page cache), the peer of ASYNC_FLUSH"
		if s.SyncAlways {
			sync = "sync_interval: always (every message flushed before its ack), the peer of SYNC_FLUSH"
		}
		return "NATS JetStream (nats-server v2.15.2, pinned in tools/go.mod), one server, file storage, one replica, " + sync +
			"; load by natscli v0.5.0's `nats bench js pub async --clients C --batch W` (each client one connection publishing W messages, then waiting for their W acks: at most W in flight) or `nats bench js pub sync --clients C` for W = 1. Latency: per message for sync publish; async publish reports only per-batch latency, kept in the run's config. Client CPU: the nats process of the measured run."
	}
	return fmt.Sprintf("ringmq %s %s --mappedFileSizeCommitLog=%d; load by mqbench produce (SEND_MESSAGE_V2, W requests pipelined per connection, %d queues).",
		filepath.Base(cfg.BrokerBin), strings.Join(s.Flags, " "), cfg.CommitLogBytes, cfg.Load.Queues)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// ringmqAndPeerRuns lists each run name once: the ringmq setups' runs in point order, and
// the given peer's.
func ringmqAndPeerRuns(res *bench.SuiteResult, peer string) (ringmq, peers []bench.PlannedRun) {
	seen := map[string]bool{}
	for _, r := range res.Runs {
		if seen[r.Name] {
			continue
		}
		seen[r.Name] = true
		switch r.Setup.Peer {
		case peer:
			peers = append(peers, r.PlannedRun)
		case "":
			ringmq = append(ringmq, r.PlannedRun)
		}
	}
	slices.SortStableFunc(ringmq, func(a, b bench.PlannedRun) int { return bench.ComparePoints(a.Point, b.Point) })
	return ringmq, peers
}

func mediansByName(medians []perf.Summary) map[string]perf.Summary {
	byName := make(map[string]perf.Summary, len(medians))
	for _, m := range medians {
		byName[m.Name] = m
	}
	return byName
}

// peerRatios is the table of ringmq / NATS throughput per point: each ringmq setup
// against the NATS setup of the same durability (ASYNC_FLUSH against the default sync
// interval, SYNC_FLUSH against sync_interval: always). nil without NATS runs.
func peerRatios(res *bench.SuiteResult, medians []perf.Summary) *perf.Table {
	byName := mediansByName(medians)
	type key struct {
		point   bench.Point
		durable bool
	}
	peer := map[key]string{}
	order, peers := ringmqAndPeerRuns(res, bench.PeerNATS)
	for _, r := range peers {
		peer[key{r.Point, r.Setup.Durable()}] = r.Name
	}
	if len(peer) == 0 {
		return nil
	}
	t := &perf.Table{ID: "peer-ratios", Caption: "ringmq / NATS JetStream throughput, per point (medians)",
		Header: []string{"point", "ringmq setup", "ringmq msgs/s", "NATS setup", "NATS msgs/s", "ringmq / NATS"}}
	for _, r := range order {
		p, ok := peer[key{r.Point, r.Setup.Durable()}]
		mine, ok1 := byName[r.Name]
		theirs, ok2 := byName[p]
		if !ok || !ok1 || !ok2 || theirs.MsgsPerSec <= 0 {
			continue
		}
		t.Rows = append(t.Rows, []string{r.Point.String(), r.Setup.Name, fmt.Sprintf("%.0f", mine.MsgsPerSec), p,
			fmt.Sprintf("%.0f", theirs.MsgsPerSec), fmt.Sprintf("%.2f×", mine.MsgsPerSec/theirs.MsgsPerSec)})
	}
	return t
}

// limitRatios is the table of ringmq against the null server (the limit) per point:
// throughput and p99 as ratios, and the CPU per message of both servers and clients.
// nil without null-server runs.
func limitRatios(res *bench.SuiteResult, medians []perf.Summary) *perf.Table {
	byName := mediansByName(medians)
	limit := map[bench.Point]string{}
	order, peers := ringmqAndPeerRuns(res, bench.PeerNull)
	for _, r := range peers {
		limit[r.Point] = r.Name
	}
	if len(limit) == 0 {
		return nil
	}
	t := &perf.Table{ID: "limit-ratios", Caption: "ringmq / the null server (the limit), per point (medians; CPU in µs per message)",
		Header: []string{"point", "ringmq setup", "ringmq msgs/s", "limit msgs/s", "msgs/s ÷ limit", "ringmq p99 µs", "limit p99 µs", "p99 ÷ limit",
			"ringmq server µs/msg", "limit server µs/msg", "ringmq client µs/msg", "limit client µs/msg"}}
	num := func(v float64, format string) string {
		if v <= 0 {
			return "–"
		}
		return fmt.Sprintf(format, v)
	}
	ratio := func(a, b float64) string {
		if a <= 0 || b <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	for _, r := range order {
		l, ok := limit[r.Point]
		mine, ok1 := byName[r.Name]
		theirs, ok2 := byName[l]
		if !ok || !ok1 || !ok2 {
			continue
		}
		t.Rows = append(t.Rows, []string{r.Point.String(), r.Setup.Name,
			num(mine.MsgsPerSec, "%.0f"), num(theirs.MsgsPerSec, "%.0f"), ratio(mine.MsgsPerSec, theirs.MsgsPerSec),
			num(mine.P99Us, "%.0f"), num(theirs.P99Us, "%.0f"), ratio(mine.P99Us, theirs.P99Us),
			num(mine.ServerCPUUsPerMsg, "%.2f"), num(theirs.ServerCPUUsPerMsg, "%.2f"),
			num(mine.ClientCPUUsPerMsg, "%.2f"), num(theirs.ClientCPUUsPerMsg, "%.2f")})
	}
	return t
}

// writeSuiteReport writes the suite's HTML report: medians over the rounds, the peer
// ratios, the charts of each configuration's median run.
func writeSuiteReport(runs []*perf.Run, title, htmlPath string, notes []string, tables []perf.Table) error {
	groups := perf.GroupByName(runs)
	drawn := make([]*perf.Run, len(groups))
	for i, g := range groups {
		drawn[i] = g.Representative()
	}
	opts := perf.HTMLOptions{Title: title, Notes: notes, Tables: tables, Rows: perf.Medians(groups),
		RowsCaption: "Medians over the runs of each configuration; the charts draw each configuration's median-throughput run."}
	return writeFile(htmlPath, func(w io.Writer) error { return perf.WriteHTML(w, drawn, opts) })
}

// benchmarksSection is the Markdown of the suite's tables (BENCHMARKS.md's marked section
// with --write-benchmarks, and <stamp>/BENCHMARKS.md always).
func benchmarksSection(runs []*perf.Run, notes []string, tables []perf.Table, htmlPath string) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n## Broker configurations (mqbench suite)\n\n", benchmarksBegin)
	for _, n := range notes {
		fmt.Fprintf(&b, "%s\n\n", n)
	}
	if err := perf.WriteMarkdown(&b, perf.Medians(perf.GroupByName(runs))); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "\nLatencies in µs (client send latency; \"broker put\" is the broker's own put latency from its /metrics; – where not measured). "+
		"Client CPU is mqbench's own (CPU seconds / wall / nproc, and per message): when it nears what the broker could use, the client is the limit. Ratios against the first row.\n")
	for _, t := range tables {
		if len(t.Rows) == 0 {
			continue
		}
		// Names left, figures right.
		sep := "|"
		for i := range t.Header {
			if r := t.Rows[0][i]; r != "" && r != "–" && (r[0] < '0' || r[0] > '9') {
				sep += " --- |"
			} else {
				sep += " ---: |"
			}
		}
		fmt.Fprintf(&b, "\n%s:\n\n| %s |\n%s\n", t.Caption, strings.Join(t.Header, " | "), sep)
		for _, row := range t.Rows {
			fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
		}
	}
	fmt.Fprintf(&b, "\nReport: %s; raw runs beside it.\n%s\n", htmlPath, benchmarksEnd)
	return b.String(), nil
}

// replaceSection replaces the marked section of path with section; it reports false and
// leaves the file alone when the file or its markers are missing.
func replaceSection(path, section string) (bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	text := string(data)
	begin := strings.Index(text, benchmarksBegin)
	end := strings.Index(text, benchmarksEnd)
	if begin < 0 || end < begin {
		return false, nil
	}
	text = text[:begin] + strings.TrimSuffix(section, "\n") + text[end+len(benchmarksEnd):]
	return true, os.WriteFile(path, []byte(text), 0o644)
}
