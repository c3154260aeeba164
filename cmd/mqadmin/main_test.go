package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/internal/launch"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the outputs")

// fixture is the one broker (with its embedded name server) every test of the package talks
// to, started once by TestMain: starting one costs more than all the commands together.
var fixture struct {
	namesrv    string // 127.0.0.1:port
	broker     string
	brokerName string
	cluster    string
}

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := runWithBroker(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "mqadmin tests:", err)
		os.Exit(1)
	}
	if code == 0 {
		if err := goleak.Find(
			// gnet's ants pool goroutines are started in package init and live for the process.
			goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
			goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
		); err != nil {
			fmt.Fprintln(os.Stderr, "mqadmin tests: goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runWithBroker starts the fixture broker, runs the tests and shuts the broker down.
func runWithBroker(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "mqadmin-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	cfg := smallBrokerConfig(dir)
	b, err := startBroker(cfg)
	if err != nil {
		return 0, err
	}
	fixture.namesrv, fixture.broker = b.EmbeddedNamesrvAddr(), b.BrokerAddr()
	fixture.brokerName, fixture.cluster = cfg.BrokerName, cfg.BrokerClusterName
	code := m.Run()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return code, b.Shutdown(ctx)
}

// startBroker starts a broker (with its embedded name server).
func startBroker(cfg broker.Config) (*broker.Broker, error) {
	b, err := launch.New(cfg, broker.Deps{})
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		return nil, err
	}
	return b, nil
}

// smallBrokerConfig is a broker on 127.0.0.1 ports 0 (its embedded name server too) with
// small files under dir.
func smallBrokerConfig(dir string) broker.Config {
	cfg := broker.DefaultConfig()
	cfg.StorePathRootDir = dir
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.BrokerName = "broker-a"
	cfg.ListenPort, cfg.FastListenPort, cfg.NamesrvListenPort = 0, 0, 0
	cfg.MappedFileSizeCommitLog = 4 << 20
	cfg.MappedFileSizeConsumeQueue = 20 << 10
	cfg.MaxMessageSize = 1 << 20
	cfg.MaxHashSlotNum, cfg.MaxIndexNum = 1024, 4096
	cfg.MaxConnections = 1000
	cfg.NetEventLoops = 1
	return cfg
}

// runResult is one mqadmin run.
type runResult struct {
	stdout, stderr string
	code           int
}

// mqadmin runs the command line against the fixture (NAMESRV_ADDR points at its name
// server unless env says otherwise), times printed in UTC.
func mqadmin(t *testing.T, env map[string]string, args ...string) runResult {
	t.Helper()
	var stdout, stderr bytes.Buffer
	a := &app{out: &stdout, now: time.Now, loc: time.UTC, getenv: func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		if k == "NAMESRV_ADDR" {
			return fixture.namesrv
		}
		return ""
	}}
	code := a.run(args, &stderr)
	return runResult{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// ok runs a command that must succeed and returns its output.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := mqadmin(t, nil, args...)
	if r.code != 0 {
		t.Fatalf("mqadmin %s: exit %d\nstderr: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r.stdout
}

// normalisers replace what differs run to run (ports, times, ids) with fixed words.
func normalise(s string) string {
	s = strings.ReplaceAll(s, fixture.broker, "BROKER_ADDR")
	s = strings.ReplaceAll(s, fixture.namesrv, "NAMESRV_ADDR")
	for _, n := range []struct {
		re   *regexp.Regexp
		with string
	}{
		{regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(,\d{3})?`), "TIME"},
		{regexp.MustCompile(`\b[0-9A-F]{32}\b`), "MSGID"},
		{regexp.MustCompile(`\b1\d{12}\b`), "MILLIS"},
		{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:PORT"},
	} {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}

// golden compares got (normalised) with testdata/<name>.golden, or rewrites it under -update.
// The tabwriter pads columns to the widest cell, so the normalised words keep the layout
// stable only up to column widths: compare with runs of spaces collapsed.
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenWith(t, name, got, nil)
}

// goldenWith is golden with one more normaliser, applied to both the golden file and got.
func goldenWith(t *testing.T, name, got string, also func(string) string) {
	t.Helper()
	got = normalise(got)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if also == nil {
		also = func(s string) string { return s }
	}
	if squeeze(also(string(want))) != squeeze(also(got)) {
		t.Fatalf("output differs from %s (go test -update rewrites it)\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

var spaces = regexp.MustCompile(` {2,}`)

func squeeze(s string) string { return spaces.ReplaceAllString(s, "  ") }
