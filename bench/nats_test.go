package bench

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNATSBenchArgsMatchTheShape(t *testing.T) {
	require.Equal(t, []string{"--server", "nats://127.0.0.1:4222", "bench", "js", "pub", "async", "ringmq.bench", "--batch", "16",
		"--clients", "4", "--msgs", "120000", "--size", "1024",
		"--create", "--storage", "file", "--replicas", "1", "--maxbytes", "1073741824", "--no-progress", "--csv", "/r/nats-bench.csv"},
		natsBenchArgs("nats://127.0.0.1:4222", Point{Conns: 4, Inflight: 16}, 1024, 120000, 1<<30, "/r/nats-bench.csv"))
	// One in flight is a synchronous publish (no --batch); the measured run publishes
	// into the stream the warm-up created.
	require.Equal(t, []string{"--server", "u", "bench", "js", "pub", "sync", "ringmq.bench",
		"--clients", "1", "--msgs", "10", "--size", "1024", "--no-progress", "--csv", "c"},
		natsBenchArgs("u", Point{Conns: 1, Inflight: 1}, 1024, 10, 0, "c"))
}

func TestNATSServerConfig(t *testing.T) {
	require.Equal(t, "listen: 127.0.0.1:4222\nhttp: 127.0.0.1:8222\njetstream {\n  store_dir: \"/s/x\"\n  sync_interval: always\n}\n",
		natsServerConfig(4222, 8222, "/s/x", true))
	require.Equal(t, "listen: 127.0.0.1:1\nhttp: 127.0.0.1:2\njetstream {\n  store_dir: \"/s\"\n}\n",
		natsServerConfig(1, 2, "/s", false))
}

// natscli v0.5.0's --csv for two async clients (MsgCount counts in and out messages;
// MsgBytes is messages × size).
const natsCSVSample = `#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs,MinLatencyMicroSecs,AvgLatencyMicroSecs,MaxLatencyMicroSecs,P50LatencyMicroSecs,P90LatencyMicroSecs,P99LatencyMicroSecs,P99.9LatencyMicroSecs,StdDevLatencyMicroSecs
82kIqYRoBaYMsj8gcZl5EF,P0,4000,2048000,1293,1324604.990180,1.546121,3407.814000,12363.678576,89896.633000,7495.286000,23470.990000,83281.442000,89896.633000,19009.657680
82kIqYRoBaYMsj8gcZl5EF,P1,4000,2048000,1280,1311666.953025,1.561372,3931.081000,12487.626640,92031.008000,7404.468000,29873.381000,77381.239000,92031.008000,19176.677389
`

func TestParseNATSCSV(t *testing.T) {
	samples, err := parseNATSCSV(strings.NewReader(natsCSVSample), 1024)
	require.NoError(t, err)
	require.Equal(t, []natsSample{
		{Msgs: 2000, Secs: 1.546121, P50: 7495.286, P90: 23470.99, P99: 83281.442, P999: 89896.633, MaxL: 89896.633},
		{Msgs: 2000, Secs: 1.561372, P50: 7404.468, P90: 29873.381, P99: 77381.239, P999: 92031.008, MaxL: 92031.008},
	}, samples)
	msgs, secs, rate, lat := natsTotals(samples)
	require.EqualValues(t, 4000, msgs)
	require.Equal(t, 1.561372, secs, "the longest client")
	require.InDelta(t, 4000/1.561372, rate, 1e-9)
	require.EqualValues(t, 2, lat.Count)
	require.InDelta(t, (7495.286+7404.468)/2, lat.P50Us, 1e-9, "median over the clients")

	noLatency := "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\nx,P0,10,1024,5,5120,2.0\n"
	samples, err = parseNATSCSV(strings.NewReader(noLatency), 1024)
	require.NoError(t, err)
	_, _, rate, lat = natsTotals(samples)
	require.Equal(t, 0.5, rate)
	require.Zero(t, lat.Count)

	for _, bad := range []string{"", "#RunID,ClientID\n", "#RunID,MsgBytes,DurationSecs\nx,1,nan\n", "#RunID,MsgBytes,DurationSecs\nx,-1,1\n", "#RunID,MsgBytes,DurationSecs\nx,1\n"} {
		_, err := parseNATSCSV(strings.NewReader(bad), 1024)
		require.Error(t, err, bad)
	}
}

func TestDurablePairsSetupsWithTheirPeer(t *testing.T) {
	for _, s := range DefaultMatrix() {
		require.Equal(t, strings.HasPrefix(s.Name, "sync-"), s.Durable(), s.Name)
	}
	n := NATSSetups()
	require.False(t, n[0].Durable())
	require.True(t, n[1].Durable())
}

func TestParsePointsAndPlanNames(t *testing.T) {
	pts, err := ParsePoints("1x1, 4x16,16x32,e2e@20000")
	require.NoError(t, err)
	require.Equal(t, []Point{{Conns: 1, Inflight: 1}, {Conns: 4, Inflight: 16}, {Conns: 16, Inflight: 32}, {E2ERate: 20000}}, pts)
	require.Equal(t, "e2e@20000", pts[3].String())
	for _, bad := range []string{"", "4", "4x", "0x1", "1x0", "ax2", "1x1,", "e2e@", "e2e@0", "e2e@-5", "e2e@x", "e2e@+Inf"} {
		_, err := ParsePoints(bad)
		require.ErrorIs(t, err, ErrConfig, bad)
	}
	plan := PlanPoints([]BrokerSetup{{Name: "a"}, {Name: "b"}}, []Point{{Conns: 1, Inflight: 1}, {Conns: 4, Inflight: 16}}, 2)
	var names []string
	for _, p := range plan {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"a@1x1", "b@1x1", "a@4x16", "b@4x16", "b@1x1", "a@1x1", "b@4x16", "a@4x16"}, names)
	one := PlanPoints([]BrokerSetup{{Name: "a"}}, []Point{{Conns: 4, Inflight: 16}}, 1)
	require.Equal(t, "a", one[0].Name, "one point: the setup's name alone")
	// Every setup runs e2e points too.
	names = nil
	setups := append(append([]BrokerSetup{{Name: "a"}}, NATSSetups()[0]), NullSetups()...)
	for _, p := range PlanPoints(setups, []Point{{Conns: 4, Inflight: 16}, {E2ERate: 20000}}, 1) {
		names = append(names, p.Name)
	}
	require.Equal(t, []string{"a@4x16", "nats-js-async@4x16", "null-server@4x16", "a@e2e@20000", "nats-js-async@e2e@20000", "null-server@e2e@20000"}, names)
	sorted := []Point{{E2ERate: 20000}, {Conns: 16, Inflight: 32}, {E2ERate: 5000}, {Conns: 4, Inflight: 16}, {Conns: 4, Inflight: 8}}
	slices.SortFunc(sorted, ComparePoints)
	require.Equal(t, []Point{{Conns: 4, Inflight: 8}, {Conns: 4, Inflight: 16}, {Conns: 16, Inflight: 32}, {E2ERate: 5000}, {E2ERate: 20000}}, sorted)
}

// The NATS peer end to end with the real nats-server and nats (built by `make tools`;
// skipped without them): both setups write a complete run directory.
func TestRunSuiteWithNATSPeer(t *testing.T) {
	server, err := filepath.Abs("../bin/tools/nats-server")
	require.NoError(t, err)
	cli, _ := filepath.Abs("../bin/tools/nats")
	if _, err := os.Stat(server); err != nil {
		t.Skip("no bin/tools/nats-server: run `make tools`")
	}
	cfg := DefaultSuiteConfig(true)
	cfg.NATSServerBin, cfg.NATSBin = server, cli
	cfg.ResultsDir = t.TempDir()
	cfg.Setups = NATSSetups()
	cfg.Rounds = 1
	cfg.Points = []Point{{Conns: 2, Inflight: 4}, {Conns: 1, Inflight: 1}, {E2ERate: 4000}}
	cfg.Load.MessageBytes = 64
	cfg.Load.Duration, cfg.Load.Count, cfg.Load.Warmup = 0, 200, 0
	cfg.Stamp = "stamp"
	res, err := RunSuite(context.Background(), cfg, nil)
	require.NoError(t, err)
	require.Len(t, res.Runs, 6)
	for _, r := range res.Runs {
		require.NoError(t, r.Err, r.Name)
		rec, err := ReadRunRecord(r.Dir)
		require.NoError(t, err)
		require.Equal(t, r.Name, rec.Name)
		p := rec.Results.Produce
		require.NotNil(t, p.ServerCPU, "nats-server's CPU")
		if r.Point.E2ERate > 0 {
			require.Equal(t, "e2e", rec.Mode)
			require.Equal(t, &E2ESummary{Written: 200, Matched: 200}, rec.Results.E2E, r.Name)
			require.EqualValues(t, 200, rec.Results.Consume.Latency.Count)
			continue
		}
		require.EqualValues(t, 200, p.Acked, r.Name)
		require.Positive(t, p.MsgsPerSec)
		require.Equal(t, PeerNATS, rec.Config["peer"])
		require.Contains(t, rec.Config["nats_server_version"], "v2.15.2")
		require.Equal(t, r.Setup.SyncAlways, strings.Contains(rec.Config["nats_server_conf"], "sync_interval: always"), r.Name)
		if r.Point.Inflight == 1 {
			require.Positive(t, p.Latency.P50Us, "sync publish: per-message latency")
		} else {
			require.Zero(t, p.Latency.Count, "async publish: per-batch latency stays in Config")
			require.Contains(t, rec.Config["nats_batch_latency_us"], "per batch of 4")
		}
		require.NotNil(t, p.ClientCPU, "the nats process's CPU")
		require.Positive(t, p.ClientCPU.Secs)
		require.FileExists(t, filepath.Join(r.Dir, "nats-bench.csv"))
		require.FileExists(t, filepath.Join(r.Dir, "nats-server.conf"))
	}
	require.NotEmpty(t, res.LoadAvgBefore)
}
