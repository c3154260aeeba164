package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/bench"
	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

// TestE2EEveryStoreMode runs `mqbench e2e` against the real broker in every store mode
// (mapped file and transient pool, ASYNC and SYNC flush): every message written is
// received exactly once, and the run record carries both latencies. The pool commits to
// the file once a second here, so a consumer that saw only committed bytes would still
// get everything within the drain timeout, just late.
func TestE2EEveryStoreMode(t *testing.T) {
	testutil.SkipInSecondPass(t)
	for _, mode := range []struct {
		name string
		set  func(*broker.Config)
	}{
		{"mmap-async", func(c *broker.Config) { c.FlushDiskType = store.AsyncFlush }},
		{"mmap-sync", func(c *broker.Config) { c.FlushDiskType = store.SyncFlush }},
		{"pool-async", func(c *broker.Config) { c.FlushDiskType = store.AsyncFlush; withTransientPool(c) }},
		{"pool-sync", func(c *broker.Config) { c.FlushDiskType = store.SyncFlush; withTransientPool(c) }},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cfg := testBrokerConfig(t.TempDir())
			mode.set(&cfg)
			ib, err := startInProcessBroker(cfg)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, ib.shutdown()) })
			out := filepath.Join(t.TempDir(), "e2e")
			code, stdout, errOut := mqbench(t, "e2e", "--namesrv", ib.namesrv, "--topic", "E2E", "--queues", "4", "--create-topic",
				"--conns", "2", "--inflight", "8", "--size", "128", "--rate", "3000", "--count", "400", "--duration", "0",
				"--warmup", "0", "--consume-conns", "2", "--drain-timeout", "15s", "--out", out, "--progress", "never")
			require.Equal(t, 0, code, errOut)
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			sum := map[string]string{}
			for _, f := range strings.Fields(strings.TrimPrefix(lines[len(lines)-1], "mqbench: ")) {
				k, v, _ := strings.Cut(f, "=")
				sum[k] = v
			}
			require.Equal(t, "e2e", sum["mode"], stdout)
			require.Equal(t, []string{"400", "400", "0", "0", "0"}, []string{sum["written"], sum["matched"], sum["missing"], sum["duplicates"], sum["foreign"]})
			for _, k := range []string{"send_p50_us", "send_p90_us", "send_p99_us", "send_p999_us", "send_max_us", "e2e_p50_us", "e2e_p90_us", "e2e_p99_us", "e2e_p999_us", "e2e_max_us"} {
				require.NotEqual(t, "0.0", sum[k], k)
			}
			rec, err := bench.ReadRunRecord(out)
			require.NoError(t, err)
			require.Equal(t, "e2e", rec.Mode)
			require.Equal(t, &bench.E2ESummary{Written: 400, Matched: 400}, rec.Results.E2E)
			require.EqualValues(t, 400, rec.Results.Produce.Acked)
			require.EqualValues(t, 400, rec.Results.Consume.Received)
			require.EqualValues(t, 400, rec.Results.Consume.Latency.Count)
			require.FileExists(t, filepath.Join(out, bench.ConsumeHgrm))
			require.FileExists(t, filepath.Join(out, bench.ProduceHgrm))
		})
	}
	code, _, errOut := mqbench(t, "e2e", "--namesrv", "127.0.0.1:1", "--topic", "T")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "--rate")
	code, _, errOut = mqbench(t, "e2e", "--namesrv", "127.0.0.1:1", "--rate", "10", "--size", "16")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, "MessageBytes")
}

// withTransientPool: the transient pool with a few unpinned buffers (RLIMIT_MEMLOCK is
// small for unprivileged runs), committed to the file once a second.
func withTransientPool(c *broker.Config) {
	c.TransientStorePoolEnable = true
	c.TransientStorePoolSize = 3
	c.TransientStorePoolPinned = false
	c.CommitCommitLogThoroughInterval = time.Second
}
