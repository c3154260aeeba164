package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
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

var summaryRE = regexp.MustCompile(`^mqbench: mode=(\w+) msgs=(\d+) secs=([\d.]+) rate=([\d.]+) p50_us=([\d.]+) p99_us=([\d.]+) p999_us=([\d.]+) max_us=([\d.]+) errors=(\d+)$`)

// lastLine returns the summary fields of the last line of out.
func lastLine(t *testing.T, out string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	m := summaryRE.FindStringSubmatch(lines[len(lines)-1])
	require.NotNil(t, m, "last line %q", lines[len(lines)-1])
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
	for _, cmd := range []string{"produce", "consume", "mixed", "report", "suite"} {
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
// one setup, one short round; the report, the tables and the BENCHMARKS.md section are
// written.
func TestSuiteCommandAgainstRealBroker(t *testing.T) {
	bin, err := os.Executable()
	require.NoError(t, err)
	t.Setenv(testBrokerEnv, "1")
	results := t.TempDir()
	benchmarksMD := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	require.NoError(t, os.WriteFile(benchmarksMD, []byte("# Benchmarks\n\nprose\n\n"+benchmarksBegin+"\nold\n"+benchmarksEnd+"\n\nmore prose\n"), 0o644))
	code, out, errOut := mqbench(t, "suite", "--quick", "--broker-bin", bin, "--results", results,
		"--setups", "async-mmap-gnet,sync-fdatasync-gnet", "--rounds", "1", "--duration", "1s", "--warmup", "0",
		"--consume-duration", "5s", "--commitlog-bytes", strconv.Itoa(8<<20), "--benchmarks-md", benchmarksMD,
		"--log-level", "warn")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "| async-mmap-gnet |")
	require.Contains(t, out, "| sync-fdatasync-gnet |")
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
		require.NotNil(t, r.Results.Consume, "read back")
		require.Contains(t, r.Config["broker_flags"], "--flushDiskType=")
	}
	requireWellFormed(t, filepath.Join(results, stamp, "report.html"))
	require.FileExists(t, filepath.Join(results, stamp, "BENCHMARKS.md"))
	md, err := os.ReadFile(benchmarksMD)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(md), "# Benchmarks\n\nprose\n\n"+benchmarksBegin))
	require.True(t, strings.HasSuffix(string(md), benchmarksEnd+"\n\nmore prose\n"))
	require.NotContains(t, string(md), "\nold\n")
	require.Contains(t, string(md), "| sync-fdatasync-gnet |")
}

// TestVersion: --version prints one line, "mqbench <version> (commit <sha>, <go version>)".
func TestVersion(t *testing.T) {
	code, stdout, stderr := mqbench(t, "--version")
	require.Equal(t, 0, code)
	require.Regexp(t, `^mqbench \S+ \(commit \S+, go\S+\)\n$`, stdout)
	require.Empty(t, stderr)
}
