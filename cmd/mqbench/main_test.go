package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/internal/launch"
)

// testBrokerEnv makes the test binary act as mqbroker (brokerMain), so `mqbench suite`
// runs end to end against the real broker without building bin/mqbroker.
const testBrokerEnv = "MQBENCH_TEST_BROKER"

func TestMain(m *testing.M) {
	if os.Getenv(testBrokerEnv) == "1" {
		if len(os.Args) > 1 && os.Args[1] == "null-server" {
			// The suite starts this binary (os.Executable) as `mqbench null-server`.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
			stop()
			os.Exit(code)
		}
		os.Exit(brokerMain(os.Args[1:]))
	}
	goleak.VerifyTestMain(m,
		// gnet starts its ants worker pool (and the pool's janitor goroutines) in package
		// init; they live for the whole process (as in the broker's own tests).
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

// testBrokerConfig is a small loopback broker with an embedded name server on kernel-
// picked ports and a store in dir.
func testBrokerConfig(dir string) broker.Config {
	cfg := broker.DefaultConfig()
	cfg.BrokerClusterName = "BenchCluster"
	cfg.BrokerName = "broker-bench"
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.ListenPort = 0
	cfg.NamesrvEmbedded = true
	cfg.NamesrvListenPort = 0
	cfg.NamesrvAddr = ""
	cfg.MetricsAddr = "" // the default is 127.0.0.1:9106; startInProcessBroker picks a port unless a test sets one
	cfg.StorePathRootDir = dir
	cfg.MappedFileSizeCommitLog = 8 << 20
	cfg.MappedFileSizeConsumeQueue = 4096 * 20
	cfg.MaxMessageSize = 1 << 20
	cfg.MaxHashSlotNum = 1024
	cfg.MaxIndexNum = 4096
	cfg.NetEventLoops = 2
	cfg.MaxConnections = 1000
	return cfg
}

// inProcessBroker is a real broker started in the test process.
type inProcessBroker struct {
	b           *broker.Broker
	namesrv     string
	metricsAddr string
	stopMetrics func()
}

func startInProcessBroker(cfg broker.Config) (*inProcessBroker, error) {
	reg := prometheus.NewRegistry()
	b, err := launch.New(cfg, broker.Deps{Registerer: reg})
	if err != nil {
		return nil, err
	}
	if err := b.Start(); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		return nil, err
	}
	addr := cfg.MetricsAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return &inProcessBroker{
		b: b, namesrv: b.EmbeddedNamesrvAddr(), metricsAddr: ln.Addr().String(),
		stopMetrics: func() { _ = srv.Close(); <-done },
	}, nil
}

func (ib *inProcessBroker) shutdown() error {
	ib.stopMetrics()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return ib.b.Shutdown(ctx)
}

// brokerMain is a minimal mqbroker: every --key=value is a broker.conf key, as in
// cmd/mqbroker; it serves until SIGTERM.
func brokerMain(args []string) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
	cfg := testBrokerConfig("")
	for _, a := range args {
		k, v, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok {
			fmt.Fprintf(os.Stderr, "test broker: bad flag %q\n", a)
			return 2
		}
		if _, err := cfg.Set(k, v, 0); err != nil {
			fmt.Fprintln(os.Stderr, "test broker:", err)
			return 2
		}
	}
	ib, err := startInProcessBroker(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "test broker:", err)
		return 1
	}
	fmt.Println("test broker up on", ib.b.Addr(), "name server", ib.namesrv, "metrics", ib.metricsAddr,
		"listenPort", strconv.Itoa(cfg.ListenPort))
	<-sigs
	if err := ib.shutdown(); err != nil {
		fmt.Fprintln(os.Stderr, "test broker: shutdown:", err)
		return 1
	}
	return 0
}
