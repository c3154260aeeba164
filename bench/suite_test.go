package bench

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/testutil"
)

// fakeBrokerEnv makes the test binary act as mqbroker (fakeBrokerMain) so the suite's
// process handling runs for real without the real broker.
const fakeBrokerEnv = "MQBENCH_FAKE_BROKER"

// fakeBrokerMain takes the flags the suite passes to mqbroker, serves a fakeBroker on
// listenPort and namesrvListenPort and its metrics on metricsAddr until SIGTERM, and
// writes the flags it got to <storePathRootDir>/args. --failStart makes it exit at once.
func fakeBrokerMain(args []string) int {
	flags := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[k] = v
	}
	if flags["failStart"] == "true" {
		fmt.Fprintln(os.Stderr, "fake broker: failing on purpose")
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	if err := os.WriteFile(filepath.Join(flags["storePathRootDir"], "args"), []byte(strings.Join(args, "\n")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := startFakeBroker("127.0.0.1:" + flags["listenPort"])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.close()
	if _, err := b.addListener("127.0.0.1:" + flags["namesrvListenPort"]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, stop, err := serveMetrics(context.Background(), flags["metricsAddr"], b.metricsHandler())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("fake broker up")
	<-sigs
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func TestPlanInterleavesAndRotates(t *testing.T) {
	setups := []BrokerSetup{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	plan := Plan(setups, 3)
	var order []string
	for i, p := range plan {
		require.Equal(t, i, p.Index)
		require.Equal(t, i/3+1, p.Round)
		order = append(order, p.Setup.Name)
	}
	require.Equal(t, []string{"a", "b", "c", "b", "c", "a", "c", "a", "b"}, order)
}

func TestDefaultMatrixCoversEveryConfiguration(t *testing.T) {
	m := DefaultMatrix()
	has := func(name string, flags ...string) {
		t.Helper()
		for _, s := range m {
			if s.Name == name {
				for _, f := range flags {
					require.Contains(t, s.Flags, f, name)
				}
				return
			}
		}
		t.Fatalf("no setup %s", name)
	}
	require.Equal(t, "async-mmap-gnet", m[0].Name, "the baseline comes first")
	has("async-mmap-gnet", "--flushDiskType=ASYNC_FLUSH", "--transientStorePoolEnable=false", "--netEngine=gnet")
	has("async-pool-gnet", "--flushDiskType=ASYNC_FLUSH", "--transientStorePoolEnable=true", "--netEngine=gnet")
	for _, backend := range []string{"iouring", "msync", "fdatasync"} {
		has("sync-"+backend+"-gnet", "--flushDiskType=SYNC_FLUSH", "--flushBackend="+backend, "--netEngine=gnet")
	}
	has("async-mmap-std", "--flushDiskType=ASYNC_FLUSH", "--netEngine=std")
	has("sync-iouring-std", "--flushDiskType=SYNC_FLUSH", "--netEngine=std")

	sel, err := SelectSetups(m, "sync-msync-gnet, async-mmap-gnet")
	require.NoError(t, err)
	require.Equal(t, "async-mmap-gnet", sel[0].Name, "matrix order kept")
	require.Equal(t, "sync-msync-gnet", sel[1].Name)
	_, err = SelectSetups(m, "nope")
	require.ErrorIs(t, err, ErrConfig)
}

// The default suite fits its budgets: 7 setups and the 2 NATS ones × 3 rounds within 10
// minutes, and QUICK within 2.5, with the per-run allowance RunSuite assumes before it
// has timed a run.
func TestDefaultSuiteFitsBudget(t *testing.T) {
	for _, quick := range []bool{false, true} {
		cfg := DefaultSuiteConfig(quick)
		require.NoError(t, cfg.Validate())
		require.GreaterOrEqual(t, cfg.Rounds, 3)
		var total time.Duration
		for _, pr := range Plan(cfg.Setups, cfg.Rounds) {
			total += cfg.RunEstimate(pr.Setup)
		}
		require.LessOrEqual(t, total, cfg.Budget, "quick=%v", quick)
	}
	require.Equal(t, 10*time.Minute, DefaultSuiteConfig(false).Budget)
	require.Equal(t, 150*time.Second, DefaultSuiteConfig(true).Budget)
	require.Len(t, DefaultSuiteConfig(false).Setups, len(DefaultMatrix())+len(NATSSetups())+len(NullSetups()), "the peers run in the same rounds")
}

func testSuiteConfig(t *testing.T) SuiteConfig {
	bin, err := os.Executable()
	require.NoError(t, err)
	cfg := DefaultSuiteConfig(true)
	cfg.BrokerBin = bin
	cfg.BrokerEnv = []string{fakeBrokerEnv + "=1"}
	cfg.ResultsDir = t.TempDir()
	cfg.Setups = []BrokerSetup{
		{Name: "one", Flags: []string{"--flushDiskType=ASYNC_FLUSH"}},
		{Name: "two", Flags: []string{"--flushDiskType=SYNC_FLUSH"}},
	}
	cfg.Rounds = 2
	cfg.Load.Conns, cfg.Load.Inflight, cfg.Load.MessageBytes = 2, 4, 64
	cfg.Load.Duration, cfg.Load.Count, cfg.Load.Warmup = 0, 200, 0
	cfg.ConsumeDuration = 5 * time.Second
	cfg.ConsumeConns = 2
	cfg.Stamp = "stamp"
	return cfg
}

// The suite against the test binary acting as broker: every run gets its own store and
// ports, the flags of its setup, writes a complete run directory, and the store is gone
// afterwards.
func TestRunSuiteEndToEndWithFakeBrokerProcess(t *testing.T) {
	cfg := testSuiteConfig(t)
	res, err := RunSuite(context.Background(), cfg, nil)
	require.NoError(t, err)
	require.Empty(t, res.Skipped)
	require.Len(t, res.Runs, 4)
	wantOrder := []string{"one", "two", "two", "one"}
	for i, run := range res.Runs {
		require.NoError(t, run.Err, run.Setup.Name)
		require.Equal(t, wantOrder[i], run.Setup.Name)
		require.Equal(t, filepath.Join(cfg.ResultsDir, "stamp", run.Setup.Name, fmt.Sprintf("round-%d", run.Round)), run.Dir)
		rec, err := ReadRunRecord(run.Dir)
		require.NoError(t, err)
		require.Equal(t, run.Setup.Name, rec.Name)
		p := rec.Results.Produce
		require.NotNil(t, p)
		require.EqualValues(t, 200, p.Sent)
		require.EqualValues(t, 200, p.Acked)
		require.EqualValues(t, 0, p.Errors)
		c := rec.Results.Consume
		require.NotNil(t, c)
		require.EqualValues(t, 200, c.Received, "read back what was produced")
		require.EqualValues(t, 0, c.Lag)
		require.Contains(t, rec.Config["broker_flags"], run.Setup.Flags[0])
		require.Contains(t, rec.Config["broker_flags"], "--mappedFileSizeCommitLog=")
		require.NotNil(t, rec.Broker)
		require.Empty(t, rec.Broker.Error)
		lat, ok := rec.Broker.Histograms[DefaultPutLatencyMetric]
		require.True(t, ok, "put latency scraped")
		require.EqualValues(t, 200, lat.Count, "one put per send of the measured window")
		for _, f := range []string{RunFile, ProduceHgrm, SeriesFile, ConsumeHgrm, "broker.log"} {
			require.FileExists(t, filepath.Join(run.Dir, f))
		}
	}
	left, err := os.ReadDir(filepath.Join(cfg.ResultsDir, "tmp"))
	require.NoError(t, err)
	require.Empty(t, left, "stores are removed after each run")
	require.Len(t, res.RunDirs(), 4)
}

// A broker that cannot start fails its run with the reason; the suite goes on.
func TestRunSuiteReportsBrokerThatFailsToStart(t *testing.T) {
	cfg := testSuiteConfig(t)
	cfg.Setups = []BrokerSetup{{Name: "broken", Flags: []string{"--failStart=true"}}, {Name: "fine"}}
	cfg.Rounds = 1
	res, err := RunSuite(context.Background(), cfg, nil)
	require.NoError(t, err)
	require.Len(t, res.Runs, 2)
	require.ErrorIs(t, res.Runs[0].Err, ErrBroker)
	require.NoError(t, res.Runs[1].Err)
	require.Equal(t, []string{res.Runs[1].Dir}, res.RunDirs())
	log, err := os.ReadFile(filepath.Join(res.Runs[0].Dir, "broker.log"))
	require.NoError(t, err)
	require.Contains(t, string(log), "failing on purpose")
}

// The budget stops the plan before a run that cannot finish in time.
func TestRunSuiteBudgetSkips(t *testing.T) {
	cfg := testSuiteConfig(t)
	cfg.Budget = time.Second // less than the a-priori estimate of one run
	res, err := RunSuite(context.Background(), cfg, nil)
	require.NoError(t, err)
	require.Empty(t, res.Runs)
	require.Len(t, res.Skipped, 4)
}

// nullServerEnv makes the test binary act as `mqbench null-server` (nullServerMain).
const nullServerEnv = "MQBENCH_TEST_NULL_SERVER"

// nullServerMain serves a null server on --listen until SIGTERM.
func nullServerMain(args []string) int {
	if len(args) == 0 || args[0] != "null-server" {
		fmt.Fprintln(os.Stderr, "test null server: want null-server as the first argument")
		return 2
	}
	cfg := DefaultNullServerConfig()
	for _, a := range args[1:] {
		if v, ok := strings.CutPrefix(a, "--listen="); ok {
			cfg.Listen = v
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	s, err := StartNullServer(cfg, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	<-sigs
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// An e2e point beside a closed-loop one: the broker's e2e run matches every message it
// wrote; the null server runs the same rate open loop, and both servers' CPU is read.
func TestRunSuiteWithNullServerAndE2EPoint(t *testing.T) {
	testutil.SkipInSecondPass(t)
	t.Setenv(nullServerEnv, "1")
	cfg := testSuiteConfig(t)
	bin, err := os.Executable()
	require.NoError(t, err)
	cfg.NullServerBin = bin
	cfg.Setups = append([]BrokerSetup{{Name: "one", Flags: []string{"--flushDiskType=ASYNC_FLUSH"}}}, NullSetups()...)
	cfg.Rounds = 1
	cfg.Points = []Point{{Conns: 2, Inflight: 4}, {E2ERate: 4000}}
	res, err := RunSuite(context.Background(), cfg, nil)
	require.NoError(t, err)
	var names []string
	for _, run := range res.Runs {
		require.NoError(t, run.Err, run.Name)
		names = append(names, run.Name)
		rec, err := ReadRunRecord(run.Dir)
		require.NoError(t, err)
		p := rec.Results.Produce
		require.EqualValues(t, 200, p.Acked, run.Name)
		require.NotNil(t, p.ServerCPU, run.Name)
		switch run.Name {
		case "one@e2e@4000":
			require.Equal(t, "e2e", rec.Mode)
			require.Equal(t, &E2ESummary{Written: 200, Matched: 200}, rec.Results.E2E)
			require.EqualValues(t, 200, rec.Results.Consume.Latency.Count)
			require.Equal(t, "4000", rec.Config["rate"])
		case "null-server@e2e@4000":
			require.Equal(t, "produce", rec.Mode)
			require.Equal(t, "4000", rec.Config["rate"])
			require.Nil(t, rec.Results.Consume)
		case "null-server@2x4":
			require.Nil(t, rec.Results.Consume, "nothing to read back")
			require.Equal(t, PeerNull, rec.Config["peer"])
		case "one@2x4":
			require.EqualValues(t, 200, rec.Results.Consume.Received)
		}
	}
	require.Equal(t, []string{"one@2x4", "null-server@2x4", "one@e2e@4000", "null-server@e2e@4000"}, names)
}
