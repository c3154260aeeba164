// Command mqbroker runs a ringmq broker, by default with an embedded name server. It reads
// RocketMQ's broker.conf keys, so an Apache RocketMQ broker's config file works unchanged:
//
//	mqbroker [-c broker.conf] [-n "ns1:9876;ns2:9876"] [--<key>=<value> ...] [-p]
//
// Every broker.conf key is also a flag (--storePathRootDir=./data, --autoCreateTopicEnable=false,
// ...). Priority: flags > file > defaults. Apache RocketMQ 4.x keys ringmq does not need are
// reported once at info with what it does instead, those it ignores as warnings naming the key
// (a flag the same as a line of the file); a key neither ringmq nor RocketMQ knows (a typo) and
// a value that does not parse stop the start with an error naming file and line, the key and,
// for a typo, the nearest known key.
// -p (--printConfigItem) validates the configuration exactly as a start does and prints it
// (exit status 1 on an error); --version prints the version. After the start, five INFO log
// lines say what the broker runs with (broker.LogStartupSummary). SIGINT or SIGTERM
// shut the broker down cleanly (final flush, checkpoint, abort marker removed).
//
// http://<metricsAddr>/ (default 127.0.0.1:9106; empty or off: none) serves Prometheus /metrics,
// the Go profiler under /debug/pprof/ and the probes /livez (also served as /healthz) and /readyz
// (METRICS.md).
// aclEnable=true checks every request against the plain ACL file aclFile (default: plain_acl.yml beside the -c file, else conf/plain_acl.yml), re-read
// when it changes; tlsEnable=true (or tlsServerMode=permissive|enforcing) with tlsCertFile
// and tlsKeyFile serves TLS on listenPort.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/broker/controlled"
	"github.com/ringmq/ringmq/internal/hiccup"
	"github.com/ringmq/ringmq/internal/launch"
	"github.com/ringmq/ringmq/internal/opsserver"
)

// shutdownTimeout bounds a clean shutdown (draining responses, final flush).
const shutdownTimeout = 30 * time.Second

func main() {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, signals))
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("mqbroker: usage")

// run is the whole command: flags, config file, start, wait for a signal, shut down. It
// returns the exit status: 0 after a clean shutdown (or -p, --help, --version), 1 when the
// broker cannot be configured, started or shut down cleanly, 2 for bad command-line usage.
func run(args []string, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	l, err := configure(args, stdout, stderr)
	switch {
	case errors.Is(err, pflag.ErrHelp), errors.Is(err, errVersion):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, err)
		return 1
	}
	status := 0
	if l.printOnly {
		for _, key := range broker.PropertyNames() {
			v, _ := l.cfg.Get(key)
			fmt.Fprintf(stdout, "%s=%s\n", key, v)
		}
	} else {
		status = serve(l.cfg, l.file, stdout, stderr, l.logger, signals)
	}
	if err := l.logCloser.Close(); err != nil {
		fmt.Fprintf(stderr, "mqbroker: log file: %v\n", err)
		status = max(status, 1)
	}
	return status
}

// serve runs the broker (and the metrics endpoint) until a signal arrives. configFile is the -c
// file ("" none), where UPDATE_BROKER_CONFIG writes the keys it changes.
func serve(cfg broker.Config, configFile string, stdout, stderr io.Writer, logger *slog.Logger, signals <-chan os.Signal) int {
	reg := prometheus.NewRegistry()
	reg.MustRegister(opsserver.RuntimeCollectors()...)
	// The operators' endpoint comes up first: metrics and profiles during a long recovery, and probes
	// that answer 503 "starting" until the broker is there.
	probes := &opsserver.Pending{}
	// Controller mode: a supervisor runs the broker in the role the controller gives it, replacing it
	// when the role changes; probes and metrics follow the broker running now.
	var sup *controlled.Supervisor
	var gatherer prometheus.Gatherer = reg
	if cfg.EnableControllerMode {
		var err error
		if sup, err = controlled.New(cfg, broker.Deps{Logger: logger, ConfigFile: configFile}, launch.New); err != nil {
			fmt.Fprintf(stderr, "mqbroker: %v\n", err)
			return 1
		}
		if err := sup.RegisterMetrics(reg); err != nil {
			fmt.Fprintf(stderr, "mqbroker: %v\n", err)
			return 1
		}
		gatherer = prometheus.Gatherers{reg, sup.Gatherer()}
	}
	var metrics *opsserver.Server
	if addr := cfg.MetricsListenAddr(); addr != "" {
		var err error
		if metrics, err = opsserver.Start(addr, gatherer, probes); err != nil {
			fmt.Fprintf(stderr, "mqbroker: metricsAddr: %v\n", err)
			return 1
		}
		defer func() { _ = metrics.Close() }() // for the early returns; the Close at the end reports errors
		fmt.Fprintf(stdout, "metrics on http://%s/metrics, profiles on http://%s/debug/pprof/\n", metrics.Addr(), metrics.Addr())
	}
	if every := cfg.HiccupMeterInterval; every > 0 && metrics != nil {
		meter, err := hiccup.New(hiccup.Config{Interval: every})
		if err != nil {
			fmt.Fprintf(stderr, "mqbroker: hiccupMeterInterval: %v\n", err)
			return 1
		}
		reg.MustRegister(meter.Collector())
		metrics.Handle("/debug/hiccups", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			_ = meter.WriteStalls(w)
		}))
		meter.Start()
		defer meter.Stop()
	}
	if sup != nil {
		probes.Set(sup)
		return runControlled(sup, cfg, stdout, stderr, logger, signals, metrics)
	}
	b, err := launch.New(cfg, broker.Deps{Logger: logger, Registerer: reg, ConfigFile: configFile})
	if err != nil {
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		return 1
	}
	probes.Set(b)
	if err := b.Start(); err != nil {
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		// Start stopped what it had started; Shutdown releases the rest (worker pools).
		// Its error is expected (the store is closed already) and says nothing new.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		return 1
	}
	// Java's boot line (start scripts wait for it), then where everything is.
	namesrvs := b.Config().NamesrvAddr
	if ns := b.EmbeddedNamesrvAddr(); ns != "" {
		if running := b.Config(); !slices.Contains(running.NamesrvAddrs(), ns) { // namesrvAddr may name it already
			if namesrvs != "" {
				namesrvs += ";"
			}
			namesrvs += ns
		}
		fmt.Fprintf(stdout, "embedded name server listening on %s\n", b.EmbeddedNamesrv().Addr())
	}
	fmt.Fprintf(stdout, "broker listening on %s, store at %s\n", b.Addr(), absPath(cfg.StorePathRootDir))
	fmt.Fprintf(stdout, "The broker[%s, %s] boot success. serializeType=JSON and name server is %s\n",
		cfg.BrokerName, b.BrokerAddr(), namesrvs)
	metricsAddr := ""
	if metrics != nil {
		metricsAddr = metrics.Addr()
	}
	b.LogStartupSummary(logger, metricsAddr)

	sig := <-signals
	logger.Info("shutting down", "signal", sig.String())
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	status := 0
	if err := b.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "mqbroker: shutdown: %v\n", err)
		status = 1
	}
	return finish(stdout, stderr, metrics, status)
}

// finish closes the operators' endpoint after the broker stopped and prints Java's last line; it
// returns status, or 1 when the endpoint fails to close.
func finish(stdout, stderr io.Writer, metrics *opsserver.Server, status int) int {
	if metrics != nil {
		if err := metrics.Close(); err != nil {
			fmt.Fprintf(stderr, "mqbroker: metrics server: %v\n", err)
			status = 1
		}
	}
	fmt.Fprintln(stdout, "The broker shut down.")
	return status
}

// runControlled runs the controller-mode supervisor until a signal, then stops it (its broker shuts
// down in order).
func runControlled(sup *controlled.Supervisor, cfg broker.Config, stdout, stderr io.Writer, logger *slog.Logger,
	signals <-chan os.Signal, metrics *opsserver.Server) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	select {
	case <-sup.Started():
		role := "SLAVE"
		if sup.IsMaster() {
			role = "MASTER"
		}
		if b := sup.Current(); b != nil {
			fmt.Fprintf(stdout, "broker listening on %s, store at %s\n", b.Addr(), absPath(cfg.StorePathRootDir))
			fmt.Fprintf(stdout, "The broker[%s, %s] boot success. serializeType=JSON and name server is %s\n",
				cfg.BrokerName, b.BrokerAddr(), cfg.NamesrvAddr)
		}
		fmt.Fprintf(stdout, "controller mode: brokerId %d, %s (controllers %s)\n", sup.BrokerID(), role, cfg.ControllerAddr)
	case err := <-done:
		fmt.Fprintf(stderr, "mqbroker: %v\n", err)
		return 1
	case sig := <-signals:
		logger.Info("shutting down before the first broker started", "signal", sig.String())
		cancel()
		<-done
		return 0
	}
	status := 0
	select {
	case sig := <-signals:
		logger.Info("shutting down", "signal", sig.String())
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintf(stderr, "mqbroker: %v\n", err)
			status = 1
		}
	case err := <-done:
		fmt.Fprintf(stderr, "mqbroker: controller mode stopped: %v\n", err)
		status = 1
	}
	return finish(stdout, stderr, metrics, status)
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
