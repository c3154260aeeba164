package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	results := fset.String("results", "bench/results", "results directory: runs go to <results>/<stamp>/<setup>/round-<n>/")
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
	benchmarksMD := fset.String("benchmarks-md", "BENCHMARKS.md", "file whose "+benchmarksBegin+" … "+benchmarksEnd+" section is replaced with the tables (skipped if it has no markers)")
	logLevel := fset.String("log-level", "info", "log level")
	fset.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mqbench suite [flags]\n\nStarts the broker once per setup with a fresh store on loopback, runs the same load against\n"+
			"each (interleaved rounds), and writes <results>/<stamp>/report.html and BENCHMARKS.md (medians).\n\n%s", fset.FlagUsages())
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
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	cfg := bench.DefaultSuiteConfig(*quick)
	cfg.BrokerBin, cfg.ResultsDir, cfg.StoreDir, cfg.Rounds = *brokerBin, *results, *storeDir, *rounds
	if cfg.Setups, err = bench.SelectSetups(cfg.Setups, *setups); err != nil {
		return fmt.Errorf("%w: --setups: %w", errUsage, err)
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
			failed = append(failed, fmt.Sprintf("%s round %d: %v", r.Setup.Name, r.Round, r.Err))
		}
	}
	if len(dirs) == 0 {
		return fmt.Errorf("no run completed: %s", strings.Join(failed, "; "))
	}
	runs, err := perf.LoadAll(dirs)
	if err != nil {
		return err
	}
	notes := suiteNotes(&cfg, res, failed, *quick)
	htmlPath := filepath.Join(res.Dir, "report.html")
	mdPath := filepath.Join(res.Dir, "BENCHMARKS.md")
	if err := writeReports(runs, "ringmq broker configurations", htmlPath, "", notes, stdout); err != nil {
		return err
	}
	section, err := benchmarksSection(runs, notes, htmlPath)
	if err != nil {
		return err
	}
	if err := os.WriteFile(mdPath, []byte(section), 0o644); err != nil {
		return err
	}
	updated, err := replaceSection(*benchmarksMD, section)
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, section)
	fmt.Fprintf(stdout, "\nmqbench: report %s, tables %s\n", htmlPath, mdPath)
	if updated {
		fmt.Fprintf(stdout, "mqbench: updated the suite section of %s\n", *benchmarksMD)
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed: %s", len(failed), len(res.Runs), strings.Join(failed, "; "))
	}
	return nil
}

func setupNames() string {
	var names []string
	for _, s := range bench.DefaultMatrix() {
		names = append(names, s.Name)
	}
	return strings.Join(names, ", ")
}

func suiteNotes(cfg *bench.SuiteConfig, res *bench.SuiteResult, failed []string, quick bool) []string {
	cmd := "make bench-report"
	if quick {
		cmd = "make bench-report QUICK=1"
	}
	l := cfg.Load
	notes := []string{
		fmt.Sprintf("Command: %s (mqbench suite). Load: %d connections × %d in flight, %d-byte messages, %v measured after %v warm-up, against each broker setup on loopback; %d rounds, interleaved; figures are medians.",
			cmd, l.Conns, l.Inflight, l.MessageBytes, l.Duration, l.Warmup, cfg.Rounds),
	}
	if cfg.ConsumeDuration > 0 {
		notes = append(notes, fmt.Sprintf("After each run the messages are read back (pull, %d connections, at most %v): pull msgs/s.", cfg.ConsumeConns, cfg.ConsumeDuration))
	}
	if len(res.Skipped) > 0 {
		notes = append(notes, fmt.Sprintf("%d planned runs were skipped to stay within the %v budget.", len(res.Skipped), cfg.Budget))
	}
	for _, f := range failed {
		notes = append(notes, "Failed: "+f)
	}
	return notes
}

// benchmarksSection is the Markdown written to BENCHMARKS.md.
func benchmarksSection(runs []*perf.Run, notes []string, htmlPath string) (string, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\n## Broker configurations (mqbench suite)\n\n", benchmarksBegin)
	for _, n := range notes {
		fmt.Fprintf(&b, "%s\n\n", n)
	}
	if err := perf.WriteMachineMarkdown(&b, runs); err != nil {
		return "", err
	}
	b.WriteString("\n")
	if err := perf.WriteMarkdown(&b, perf.Medians(perf.GroupByName(runs))); err != nil {
		return "", err
	}
	fmt.Fprintf(&b, "\nLatencies in µs (send latency, client side; broker columns from its /metrics). Ratios against the first row. Report: %s.\n%s\n", htmlPath, benchmarksEnd)
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
