package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/testutil"
)

// startTestNATSServer runs bin/tools/nats-server (make tools; the test skips without it)
// with JetStream on a free port until the test ends, and returns its URL.
func startTestNATSServer(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs("../bin/tools/nats-server")
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		t.Skip("no bin/tools/nats-server: run `make tools`")
	}
	ports, err := freePorts(2)
	require.NoError(t, err)
	dir := t.TempDir()
	conf := filepath.Join(dir, "nats.conf")
	require.NoError(t, os.WriteFile(conf, []byte(natsServerConfig(ports[0], ports[1], filepath.Join(dir, "store"), false)), 0o644))
	cmd := exec.Command(bin, "-c", conf)
	log, err := os.Create(filepath.Join(dir, "nats.log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		_ = log.Close()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	testutil.EventuallyWithin(t, 20*time.Second, "nats-server listening", func() bool { return acceptsTCP(addr) })
	return "nats://" + addr
}

// TestRunNATSE2E: against a real nats-server, every message published is received once
// through the pull consumer, with a send and an end-to-end sample per message.
func TestRunNATSE2E(t *testing.T) {
	testutil.SkipInSecondPass(t)
	url := startTestNATSServer(t)
	cfg := NATSE2EConfig{URL: url, Stream: "E2E", Subject: "e2e.bench", Conns: 2, Inflight: 8, Rate: 4000, MessageBytes: 64,
		Count: 600, ConsumeConns: 2, DrainTimeout: 10 * time.Second, DialTimeout: 5 * time.Second}
	res, err := RunNATSE2E(context.Background(), cfg, nil)
	require.NoError(t, err)
	require.EqualValues(t, 600, res.Written)
	require.Equal(t, [4]int64{600, 0, 0, 0}, [4]int64{res.Matched, res.Missing, res.Duplicates, res.Foreign})
	require.EqualValues(t, 600, res.Produce.Acked)
	require.Zero(t, res.Produce.Errors)
	require.EqualValues(t, 600, res.Produce.Latency.Count)
	require.EqualValues(t, 600, res.Consume.Received)
	require.EqualValues(t, 600, res.Consume.Latency.Count)
	require.Positive(t, res.Consume.Latency.P50Us)
}

func TestNATSE2EConfigValidate(t *testing.T) {
	ok := NATSE2EConfig{URL: "nats://x", Stream: "S", Subject: "s", Conns: 1, Inflight: 1, Rate: 1, MessageBytes: BodySeqBytes,
		Count: 1, ConsumeConns: 1, DrainTimeout: time.Second, DialTimeout: time.Second}
	require.NoError(t, ok.Validate())
	for name, mutate := range map[string]func(*NATSE2EConfig){
		"URL":          func(c *NATSE2EConfig) { c.URL = "" },
		"Rate":         func(c *NATSE2EConfig) { c.Rate = 0 },
		"MessageBytes": func(c *NATSE2EConfig) { c.MessageBytes = 16 },
		"ConsumeConns": func(c *NATSE2EConfig) { c.ConsumeConns = 0 },
		"Duration":     func(c *NATSE2EConfig) { c.Count = 0 },
		"DrainTimeout": func(c *NATSE2EConfig) { c.DrainTimeout = 0 },
	} {
		c := ok
		mutate(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrConfig, name)
		require.ErrorContains(t, err, name)
	}
}
