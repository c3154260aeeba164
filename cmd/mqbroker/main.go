// Command mqbroker runs a ringmq broker, by default with an embedded name server. It reads
// RocketMQ's broker.conf keys, so an Apache RocketMQ broker's config file works unchanged:
//
//	mqbroker [-c broker.conf] [-n "ns1:9876;ns2:9876"] [--<key>=<value> ...] [-p]
//
// Every broker.conf key is also a flag (--storePathRootDir=./data, --autoCreateTopicEnable=false,
// ...). Priority: flags > file > defaults. In the file, keys ringmq does not need are
// reported once at info with what it does instead, unknown keys as warnings naming key and
// line, and a value that does not parse stops the start with an error naming key and line.
// -p (--printConfigItem) prints the effective configuration and exits. SIGINT or SIGTERM
// shut the broker down cleanly (final flush, checkpoint, abort marker removed).
//
// http://<metricsAddr>/ (default 127.0.0.1:9106; empty or off: none) serves Prometheus /metrics,
// the Go profiler under /debug/pprof/ and the /healthz and /readyz probes (METRICS.md).
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
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/internal/conf"
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
// returns the exit status: 0 after a clean shutdown (or -p, --help), 1 when the broker
// cannot be configured, started or shut down cleanly, 2 for bad command-line usage.
func run(args []string, stdout, stderr io.Writer, signals <-chan os.Signal) int {
	cfg, logger, printOnly, err := configure(args, stdout, stderr)
	switch {
	case errors.Is(err, pflag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, err)
		return 2
	case err != nil:
		fmt.Fprintln(stderr, err)
		return 1
	}
	if printOnly {
		for _, key := range broker.PropertyNames() {
			v, _ := cfg.Get(key)
			fmt.Fprintf(stdout, "%s=%s\n", key, v)
		}
		return 0
	}
	return serve(cfg, stdout, stderr, logger, signals)
}

// configure builds the configuration from defaults, the -c file and the flags.
func configure(args []string, stdout, stderr io.Writer) (broker.Config, *slog.Logger, bool, error) {
	cfg := broker.DefaultConfig()
	fs := pflag.NewFlagSet("mqbroker", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	configFile := fs.StringP("configFile", "c", "", "broker config file (Java properties, broker.conf keys)")
	printConfig := fs.BoolP("printConfigItem", "p", false, "print the effective configuration and exit")
	logLevel := fs.String("logLevel", "info", "log level: debug, info, warn, error")
	// One flag per config key, applied after the file. Kept as text and parsed by
	// Config.Set, so that flags and file accept exactly the same values. The usage comes
	// from the key's tags (meaning, unit, allowed values); pflag adds the default.
	keyFlags := map[string]*string{}
	for _, key := range broker.PropertyNames() {
		def, _ := cfg.Get(key)
		short := ""
		if key == "namesrvAddr" {
			short = "n"
		}
		v := fs.StringP(key, short, def, broker.PropertyUsage(key))
		keyFlags[key] = v
		if def == "true" || def == "false" {
			fs.Lookup(key).NoOptDefVal = "true" // --key alone means true; --key=false works
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return cfg, nil, false, err
		}
		return cfg, nil, false, fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return cfg, nil, false, fmt.Errorf("%w: unexpected arguments: %v", errUsage, fs.Args())
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return cfg, nil, false, fmt.Errorf("%w: --logLevel %q: %w", errUsage, *logLevel, err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	if *configFile != "" {
		props, err := conf.ReadFile(*configFile)
		if err != nil {
			return cfg, nil, false, fmt.Errorf("mqbroker: config file: %w", err)
		}
		var errs []error
		reported := map[string]bool{}
		for _, p := range props {
			w, err := cfg.Set(p.Key, p.Value, p.Line)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s:%d: %w", *configFile, p.Line, err))
				continue
			}
			switch {
			case w == nil:
			case w.Unknown:
				logger.Warn("unknown config key ignored", "key", w.Key, "file", *configFile, "line", w.Line)
			case !reported[w.Key]:
				reported[w.Key] = true
				logger.Info("config key accepted but not needed", "key", w.Key, "file", *configFile, "line", w.Line,
					"instead", w.Message)
			}
		}
		if err := errors.Join(errs...); err != nil {
			return cfg, nil, false, err
		}
		logger.Info("config file loaded", "file", *configFile)
	}
	var errs []error
	for _, key := range broker.PropertyNames() {
		if !fs.Changed(key) {
			continue
		}
		if _, err := cfg.Set(key, *keyFlags[key], 0); err != nil {
			errs = append(errs, fmt.Errorf("flag --%s: %w", key, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, nil, false, err
	}
	if cfg.AclFile == "" {
		// DESIGN.md: plain_acl.yml beside the file given to -c, else conf/plain_acl.yml.
		if *configFile != "" {
			cfg.AclFile = filepath.Join(filepath.Dir(*configFile), "plain_acl.yml")
		} else {
			cfg.AclFile = filepath.FromSlash(broker.DefaultAclFile)
		}
	}
	if err := cfg.Validate(); err != nil {
		return cfg, nil, false, err
	}
	return cfg, logger, *printConfig, nil
}

// serve runs the broker (and the metrics endpoint) until a signal arrives.
func serve(cfg broker.Config, stdout, stderr io.Writer, logger *slog.Logger, signals <-chan os.Signal) int {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	// The operators' endpoint comes up first: metrics and profiles during a long recovery, and probes
	// that answer 503 "starting" until the broker is there.
	probes := &opsserver.Pending{}
	var metrics *opsserver.Server
	if addr := cfg.MetricsListenAddr(); addr != "" {
		var err error
		if metrics, err = opsserver.Start(addr, reg, probes); err != nil {
			fmt.Fprintf(stderr, "mqbroker: metricsAddr: %v\n", err)
			return 1
		}
		defer func() { _ = metrics.Close() }() // for the early returns; the Close at the end reports errors
		fmt.Fprintf(stdout, "metrics on http://%s/metrics, profiles on http://%s/debug/pprof/\n", metrics.Addr(), metrics.Addr())
	}
	b, err := launch.New(cfg, broker.Deps{Logger: logger, Registerer: reg})
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
		if namesrvs != "" {
			namesrvs += ";"
		}
		namesrvs += ns
		fmt.Fprintf(stdout, "embedded name server listening on %s\n", b.EmbeddedNamesrv().Addr())
	}
	fmt.Fprintf(stdout, "broker listening on %s, store at %s\n", b.Addr(), absPath(cfg.StorePathRootDir))
	fmt.Fprintf(stdout, "The broker[%s, %s] boot success. serializeType=JSON and name server is %s\n",
		cfg.BrokerName, b.BrokerAddr(), namesrvs)

	sig := <-signals
	logger.Info("shutting down", "signal", sig.String())
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	status := 0
	if err := b.Shutdown(ctx); err != nil {
		fmt.Fprintf(stderr, "mqbroker: shutdown: %v\n", err)
		status = 1
	}
	if metrics != nil {
		if err := metrics.Close(); err != nil {
			fmt.Fprintf(stderr, "mqbroker: metrics server: %v\n", err)
			status = 1
		}
	}
	fmt.Fprintln(stdout, "The broker shut down.")
	return status
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
