package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/bench"
	"github.com/ringmq/ringmq/perf"
)

// mqbench runs the command and returns its exit status, stdout and stderr.
func mqbench(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// Every summary line ends with the client's CPU (client_cpu_*).
var summaryRE = regexp.MustCompile(`^mqbench: mode=(\w+) msgs=(\d+) secs=([\d.]+) rate=([\d.]+) p50_us=([\d.]+) p99_us=([\d.]+) p999_us=([\d.]+) max_us=([\d.]+) errors=(\d+)( client_cpu_s=[\d.]+ client_cpu_share=[\d.]+ client_cpu_us_per_msg=[\d.]+ steal_share=(?:-1|[\d.]+))?$`)

// lastLine returns the summary fields of the last line of out.
func lastLine(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	m := summaryRE.FindStringSubmatch(lines[len(lines)-1])
	require.NotNil(t, m, "last line %q", lines[len(lines)-1])
	require.NotEmpty(t, m[10], "the summary carries the client's CPU")
	return map[string]string{"mode": m[1], "msgs": m[2], "secs": m[3], "rate": m[4], "p50_us": m[5],
		"p99_us": m[6], "p999_us": m[7], "max_us": m[8], "errors": m[9]}
}

func TestHelpDocumentsCommandShapes(t *testing.T) {
	code, out, _ := mqbench(t, "--help")
	require.Equal(t, 0, code)
	for _, shape := range []string{
		"mqbench produce --namesrv ADDR|--broker ADDR --topic T --queues Q --conns C --inflight W --size S",
		"--duration D [--rate R] --out DIR",
		"mqbench consume --namesrv ADDR --topic T --group G --conns C --duration D --out DIR",
		"mqbench report  DIR... --html FILE --md FILE",
		"mqbench: mode=produce msgs=N secs=T rate=R p50_us=.. p99_us=.. p999_us=.. max_us=.. errors=E",
	} {
		require.Contains(t, out, shape)
	}
	for _, cmd := range []string{"produce", "consume", "mixed", "null-server", "report", "suite"} {
		code, _, errOut := mqbench(t, cmd, "--help")
		require.Equal(t, 0, code, cmd)
		require.Contains(t, errOut, "Usage", cmd)
	}
	code, _, errOut := mqbench(t, "produce", "--topic", "T")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--namesrv")
	code, _, _ = mqbench(t, "nonsense")
	require.Equal(t, 2, code)
	code, _, _ = mqbench(t)
	require.Equal(t, 2, code)
}

// mqbench against an in-process ringmq broker: a produce run for two seconds accounts for
// every message (sent = acknowledged + errors), a consume run reads back exactly what was
// stored, a mixed run sees what it sends, and report compares the runs.
func TestAgainstInProcessBroker(t *testing.T) {
	ib, err := startInProcessBroker(testBrokerConfig(t.TempDir()))
	require.NoError(t, err, "the broker must start: this test runs whenever the broker builds")
	t.Cleanup(func() { require.NoError(t, ib.shutdown()) })
	dir := t.TempDir()

	produceDir := filepath.Join(dir, "produce")
	code, out, errOut := mqbench(t, "produce", "--namesrv", ib.namesrv, "--topic", "BenchT", "--queues", "4",
		"--create-topic", "--conns", "2", "--inflight", "8", "--size", "128", "--duration", "2s",
		"--warmup", "200ms", "--tags", "TagA,TagB", "--keys", "--metrics", ib.metricsAddr,
		"--out", produceDir, "--name", "ringmq-produce")
	require.Equal(t, 0, code, errOut)
	sum := lastLine(t, out)
	require.Equal(t, "produce", sum["mode"])
	rec, err := bench.ReadRunRecord(produceDir)
	require.NoError(t, err)
	p := rec.Results.Produce
	require.Equal(t, p.Sent, p.Acked+p.Errors, "sent = acknowledged + errors")
	require.EqualValues(t, 0, p.Errors, "errors by code: %v", p.ErrorsByCode)
	require.Positive(t, p.Acked)
	require.Equal(t, strconv.FormatInt(p.Acked, 10), sum["msgs"])
	require.Equal(t, "0", sum["errors"])
	require.Len(t, p.Targets, 1)
	require.Len(t, p.Targets[0].Queues, 4)
	require.NotNil(t, rec.Broker)
	require.Empty(t, rec.Broker.Error, "the broker's /metrics was scraped")
	require.Equal(t, "4", rec.Config["queues"])
	require.NotEmpty(t, rec.Machine.GoVersion)
	stored := p.Acked + p.WarmupMsgs // warm-up messages were acknowledged too (no errors at all)

	// --slow-log with a 1 ns threshold keeps every measured send, by intended time; --hiccup-log writes
	// the generator's own stalls (maybe none).
	slowLog, hiccupLog := filepath.Join(dir, "slow.txt"), filepath.Join(dir, "hiccups.txt")
	code, _, errOut = mqbench(t, "produce", "--namesrv", ib.namesrv, "--topic", "BenchSlow", "--queues", "4",
		"--create-topic", "--conns", "2", "--inflight", "4", "--size", "64", "--count", "200", "--duration", "0", "--warmup", "0",
		"--slow-threshold", "1ns", "--slow-log", slowLog, "--hiccup-log", hiccupLog, "--progress", "never")
	require.Equal(t, 0, code, errOut)
	slow, err := os.ReadFile(slowLog)
	require.NoError(t, err)
	slowLines := strings.Split(strings.TrimSpace(string(slow)), "\n")
	require.Equal(t, "# intended_ns sent_ns done_ns (sends at least 1ns late; 200 kept, 0 dropped)", slowLines[0])
	require.Len(t, slowLines, 201)
	prevIntended := int64(0)
	for _, line := range slowLines[1:] {
		var intended, sent, done int64
		_, err := fmt.Sscanf(line, "%d %d %d", &intended, &sent, &done)
		require.NoError(t, err, line)
		require.True(t, prevIntended <= intended && intended <= sent && sent < done, line)
		prevIntended = intended
	}
	stalls, err := os.ReadFile(hiccupLog)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(stalls), "# start_unix_ns late_ns (interval 1ms, recorded from 1ms, samples "), string(stalls))

	// The lean generator against the real broker: every response a success.
	code, out, errOut = mqbench(t, "lean", "--namesrv", ib.namesrv, "--topic", "BenchLean", "--queues", "4",
		"--create-topic", "--conns", "2", "--inflight", "8", "--size", "128", "--duration", "300ms", "--warmup", "0")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^mqbench: mode=lean msgs=[1-9]\d* secs=[\d.]+ rate=[\d.]+ errors=0 client_cpu_s=[\d.]+ client_cpu_share=[\d.]+ client_cpu_us_per_msg=[\d.]+ steal_share=(?:-1|[\d.]+)\n$`, out)

	consumeDir := filepath.Join(dir, "consume")
	code, out, errOut = mqbench(t, "consume", "--namesrv", ib.namesrv, "--topic", "BenchT", "--group", "BenchG",
		"--conns", "2", "--from", "first", "--count", strconv.FormatInt(stored, 10), "--duration", "60s",
		"--warmup", "0", "--out", consumeDir, "--name", "ringmq-consume")
	require.Equal(t, 0, code, errOut)
	sum = lastLine(t, out)
	require.Equal(t, "consume", sum["mode"])
	require.Equal(t, strconv.FormatInt(stored, 10), sum["msgs"], "read back exactly what was stored")
	crec, err := bench.ReadRunRecord(consumeDir)
	require.NoError(t, err)
	c := crec.Results.Consume
	require.Equal(t, stored, c.Received)
	require.Equal(t, stored, c.Stamped, "every message carries the send stamp")
	require.Equal(t, stored*128, c.Bytes)
	require.EqualValues(t, 0, c.OffsetGaps)
	require.EqualValues(t, 0, c.Lag, "nothing left behind")
	require.EqualValues(t, 0, c.Errors)

	mixedDir := filepath.Join(dir, "mixed")
	code, out, errOut = mqbench(t, "mixed", "--namesrv", ib.namesrv, "--topic", "BenchT", "--group", "MixedG",
		"--conns", "1", "--consume-conns", "1", "--count", "300", "--duration", "0", "--warmup", "0",
		"--size", "64", "--out", mixedDir)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	require.Equal(t, "produce", lastLine(t, strings.Join(lines[:len(lines)-1], "\n"))["mode"])
	sum = lastLine(t, out)
	require.Equal(t, "consume", sum["mode"])
	require.Equal(t, "300", sum["msgs"], "the consumer (from the last offset) saw exactly the 300 sent")

	htmlPath, mdPath := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.md")
	code, _, errOut = mqbench(t, "report", produceDir, consumeDir, mixedDir, "--html", htmlPath, "--md", mdPath)
	require.Equal(t, 0, code, errOut)
	md, err := os.ReadFile(mdPath)
	require.NoError(t, err)
	mdLines := strings.Split(strings.TrimSpace(string(md)), "\n")
	require.Len(t, mdLines, 5)
	require.Contains(t, mdLines[2], "| ringmq-produce |")
	requireWellFormed(t, htmlPath)
}

func requireWellFormed(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = true
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err)
	}
}

// report over a directory of runs: found recursively; names repeated across directories
// are summarized by medians.
func TestReportCommand(t *testing.T) {
	fixtures := filepath.Join("..", "..", "perf", "testdata", "runs")
	code, out, errOut := mqbench(t, "report", fixtures)
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out)
	require.Contains(t, lines[2], "| ringmq-async |")

	code, out, errOut = mqbench(t, "report", fixtures, fixtures)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, strings.Split(out, "\n")[0], "| runs |", "repeated names: medians")
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 5)

	code, _, _ = mqbench(t, "report")
	require.Equal(t, 2, code)
	code, _, _ = mqbench(t, "report", t.TempDir())
	require.Equal(t, 1, code, "no runs found")
}

// mqbench suite end to end against the real broker (the test binary acts as mqbroker):
// two setups, one short round; the report and the tables are written, and BENCHMARKS.md
// is left alone without --write-benchmarks.
func TestSuiteCommandAgainstRealBroker(t *testing.T) {
	bin, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(testBrokerEnv, "1")
	results := t.TempDir()
	benchmarksMD := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	original := "# Benchmarks\n\nprose\n\n" + benchmarksBegin + "\ncurated\n" + benchmarksEnd + "\n\nmore prose\n"
	require.NoError(t, os.WriteFile(benchmarksMD, []byte(original), 0o644))
	code, out, errOut := mqbench(t, "suite", "--quick", "--broker-bin", bin, "--results", results,
		"--setups", "async-mmap-gnet,sync-fdatasync-gnet,null-server", "--rounds", "1", "--duration", "1s", "--warmup", "0",
		"--consume-duration", "5s", "--commitlog-bytes", strconv.Itoa(8<<20), "--benchmarks-md", benchmarksMD,
		"--log-level", "warn")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "| async-mmap-gnet |")
	require.Contains(t, out, "| sync-fdatasync-gnet |")
	require.Contains(t, out, "| null-server |")
	require.Contains(t, out, "ringmq / the null server (the limit)")
	require.Contains(t, out, "| 4x16 | async-mmap-gnet |")
	require.Contains(t, out, "left alone")
	entries, err := os.ReadDir(results)
	require.NoError(t, err)
	var stamp string
	for _, e := range entries {
		if e.Name() != "tmp" {
			stamp = e.Name()
		}
	}
	require.NotEmpty(t, stamp)
	runs, err := perf.LoadAll([]string{
		filepath.Join(results, stamp, "async-mmap-gnet", "round-1"),
		filepath.Join(results, stamp, "sync-fdatasync-gnet", "round-1"),
	})
	require.NoError(t, err)
	for _, r := range runs {
		p := r.Results.Produce
		require.Positive(t, p.Acked, r.Name)
		require.Equal(t, p.Sent, p.Acked+p.Errors, r.Name)
		require.Zero(t, p.Errors, "templated frames are valid sends")
		require.NotNil(t, r.Results.Consume, "read back")
		require.Contains(t, r.Config["broker_flags"], "--flushDiskType=")
		require.NotEmpty(t, r.Throughput, "250 ms throughput file")
		require.NotNil(t, p.ServerCPU, "the broker process's CPU")
		require.Positive(t, p.ServerCPU.UsPerMsg)
	}
	nullRuns, err := perf.LoadAll([]string{filepath.Join(results, stamp, "null-server", "round-1")})
	require.NoError(t, err)
	np := nullRuns[0].Results.Produce
	require.Positive(t, np.Acked)
	require.Zero(t, np.Errors)
	require.Nil(t, nullRuns[0].Results.Consume, "nothing to read back")
	require.NotNil(t, np.ServerCPU, "the null server process's CPU")
	require.Equal(t, bench.PeerNull, nullRuns[0].Config["peer"])
	requireWellFormed(t, filepath.Join(results, stamp, "report.html"))
	html, err := os.ReadFile(filepath.Join(results, stamp, "report.html"))
	require.NoError(t, err)
	for _, want := range []string{"Machine: nproc ", "Load average (1, 5, 15 min) before the suite: ", "Configuration async-mmap-gnet: ringmq ",
		"--flushDiskType=SYNC_FLUSH", "Load: 4 connections × 16 in flight", "— client send latency", "— broker put latency (dashed)"} {
		require.Contains(t, string(html), want)
	}
	require.FileExists(t, filepath.Join(results, stamp, "BENCHMARKS.md"))
	md, err := os.ReadFile(benchmarksMD)
	require.NoError(t, err)
	require.Equal(t, original, string(md), "a run without --write-benchmarks never rewrites BENCHMARKS.md")
}

// A quick run's figures never go into BENCHMARKS.md, even when asked.
func TestSuiteRefusesQuickWriteBenchmarks(t *testing.T) {
	code, _, errOut := mqbench(t, "suite", "--quick", "--write-benchmarks")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--write-benchmarks with --quick")
	code, _, errOut = mqbench(t, "suite", "--peers", "rocketmq")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--peers")
	code, _, errOut = mqbench(t, "suite", "--points", "4x")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--points")
	code, _, errOut = mqbench(t, "suite", "--setups", "nats-js-async", "--nats-bin-dir", t.TempDir())
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "make tools")
}

func TestReplaceSectionKeepsTheRest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "B.md")
	require.NoError(t, os.WriteFile(path, []byte("head\n"+benchmarksBegin+"\nold\n"+benchmarksEnd+"\ntail\n"), 0o644))
	ok, err := replaceSection(path, benchmarksBegin+"\nnew\n"+benchmarksEnd+"\n")
	require.NoError(t, err)
	require.True(t, ok)
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "head\n"+benchmarksBegin+"\nnew\n"+benchmarksEnd+"\ntail\n", string(data))
	require.NoError(t, os.WriteFile(path, []byte("no markers\n"), 0o644))
	ok, err = replaceSection(path, "x")
	require.NoError(t, err)
	require.False(t, ok)
}

func TestPeerRatiosPairByDurabilityAndPoint(t *testing.T) {
	run := func(s bench.BrokerSetup, p bench.Point) bench.SuiteRun {
		return bench.SuiteRun{PlannedRun: bench.PlannedRun{Setup: s, Point: p, Name: s.Name + "@" + p.String()}}
	}
	async := bench.BrokerSetup{Name: "async-mmap-gnet", Flags: []string{"--flushDiskType=ASYNC_FLUSH"}}
	sync := bench.BrokerSetup{Name: "sync-iouring-gnet", Flags: []string{"--flushDiskType=SYNC_FLUSH"}}
	nats := bench.NATSSetups()
	p1, p2 := bench.Point{Conns: 1, Inflight: 1}, bench.Point{Conns: 4, Inflight: 16}
	res := &bench.SuiteResult{Runs: []bench.SuiteRun{
		run(async, p2), run(nats[0], p2), run(sync, p2), run(nats[1], p2), run(async, p1), run(nats[0], p1), run(sync, p1),
	}}
	med := []perf.Summary{
		{Name: "async-mmap-gnet@4x16", MsgsPerSec: 120_000}, {Name: "nats-js-async@4x16", MsgsPerSec: 80_000},
		{Name: "sync-iouring-gnet@4x16", MsgsPerSec: 30_000}, {Name: "nats-js-sync@4x16", MsgsPerSec: 5_000},
		{Name: "async-mmap-gnet@1x1", MsgsPerSec: 12_000}, {Name: "nats-js-async@1x1", MsgsPerSec: 8_000},
		{Name: "sync-iouring-gnet@1x1", MsgsPerSec: 2_000}, // no nats-js-sync at 1x1: no row
	}
	tab := peerRatios(res, med)
	require.NotNil(t, tab)
	require.Equal(t, [][]string{
		{"1x1", "async-mmap-gnet", "12000", "nats-js-async@1x1", "8000", "1.50×"},
		{"4x16", "async-mmap-gnet", "120000", "nats-js-async@4x16", "80000", "1.50×"},
		{"4x16", "sync-iouring-gnet", "30000", "nats-js-sync@4x16", "5000", "6.00×"},
	}, tab.Rows)
	require.Nil(t, peerRatios(&bench.SuiteResult{Runs: []bench.SuiteRun{run(async, p2)}}, med), "no peer, no table")
}

func TestLimitRatiosPairEverySetupWithTheNullServerAtItsPoint(t *testing.T) {
	run := func(s bench.BrokerSetup, p bench.Point) bench.SuiteRun {
		return bench.SuiteRun{PlannedRun: bench.PlannedRun{Setup: s, Point: p, Name: s.Name + "@" + p.String()}}
	}
	async := bench.BrokerSetup{Name: "async-mmap-gnet", Flags: []string{"--flushDiskType=ASYNC_FLUSH"}}
	sync := bench.BrokerSetup{Name: "sync-iouring-gnet", Flags: []string{"--flushDiskType=SYNC_FLUSH"}}
	null := bench.NullSetups()[0]
	p1, p2 := bench.Point{Conns: 1, Inflight: 1}, bench.Point{Conns: 4, Inflight: 16}
	res := &bench.SuiteResult{Runs: []bench.SuiteRun{
		run(async, p2), run(null, p2), run(sync, p2), run(bench.NATSSetups()[0], p2), run(async, p1),
	}}
	med := []perf.Summary{
		{Name: "async-mmap-gnet@4x16", MsgsPerSec: 120_000, P99Us: 2000, ServerCPUUsPerMsg: 10, ClientCPUUsPerMsg: 2.5},
		{Name: "null-server@4x16", MsgsPerSec: 400_000, P99Us: 500, ServerCPUUsPerMsg: 1.5, ClientCPUUsPerMsg: 2},
		{Name: "sync-iouring-gnet@4x16", MsgsPerSec: 30_000, P99Us: 4000},
		{Name: "nats-js-async@4x16", MsgsPerSec: 80_000},
		{Name: "async-mmap-gnet@1x1", MsgsPerSec: 12_000}, // no null server at 1x1: no row
	}
	tab := limitRatios(res, med)
	require.NotNil(t, tab)
	require.Equal(t, [][]string{
		{"4x16", "async-mmap-gnet", "120000", "400000", "0.30×", "2000", "500", "4.00×", "10.00", "1.50", "2.50", "2.00"},
		{"4x16", "sync-iouring-gnet", "30000", "400000", "0.07×", "4000", "500", "8.00×", "–", "1.50", "–", "2.00"},
	}, tab.Rows)
	require.Len(t, tab.Header, len(tab.Rows[0]))
	require.Nil(t, limitRatios(&bench.SuiteResult{Runs: []bench.SuiteRun{run(async, p2)}}, med), "no null server, no table")
}

func TestWithPeers(t *testing.T) {
	names := func(peers string) []string {
		setups, err := withPeers(peers)
		require.NoError(t, err, peers)
		var out []string
		for _, s := range setups[len(bench.DefaultMatrix()):] {
			out = append(out, s.Name)
		}
		return out
	}
	require.Empty(t, names("none"))
	require.Equal(t, []string{"nats-js-async", "nats-js-sync"}, names("nats"))
	require.Equal(t, []string{"null-server"}, names("null"))
	require.Equal(t, []string{"nats-js-async", "nats-js-sync", "null-server"}, names("nats,null"))
	_, err := withPeers("nats,rocketmq")
	require.ErrorContains(t, err, `"rocketmq" is not nats or null`)
}

func TestBenchmarksSectionCarriesTheRatios(t *testing.T) {
	r := &perf.Run{Name: "async-mmap-gnet"}
	r.Results.Produce = &perf.Role{MsgsPerSec: 1000, Acked: 1000, Secs: 1}
	tab := perf.Table{Caption: "ringmq / NATS", Header: []string{"point", "ringmq setup", "ratio"},
		Rows: [][]string{{"4x16", "async-mmap-gnet", "1.50×"}}}
	sec, err := benchmarksSection([]*perf.Run{r}, []string{"Machine: m."}, []perf.Table{tab}, "r.html")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(sec, benchmarksBegin+"\n## Broker configurations (mqbench suite)\n\nMachine: m.\n\n| run |"))
	require.Contains(t, sec, "\nringmq / NATS:\n\n| point | ringmq setup | ratio |\n| ---: | --- | ---: |\n| 4x16 | async-mmap-gnet | 1.50× |\n")
	require.True(t, strings.HasSuffix(sec, "Report: r.html; raw runs beside it.\n"+benchmarksEnd+"\n"))
}

// TestVersion: --version prints one line, "mqbench <version> (commit <sha>, <go version>)".
func TestVersion(t *testing.T) {
	code, stdout, stderr := mqbench(t, "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^mqbench \S+ \(commit \S+, go\S+\)\n$`, stdout)
	require.Empty(t, stderr)
}
