// Command mqcontroller runs ringmq's failover controller on its own (RocketMQ 5's
// controller mode; a name server can embed one instead, enableControllerInNamesrv=true):
//
//	mqcontroller -c controller.conf [--logLevel info] [--logFormat text|json] [--logFile path]
//
// controller.conf holds controllerPeers, controllerSelfId and the other keys of
// controller.Config (README.md, "Controller"), plus listenPort (the remoting port brokers and
// mqadmin use, default 9879), bindAddress and metricsAddr. RocketMQ 5's ControllerConfig keys
// that ringmq does not need are logged once at info; its DLedger keys stop the start with
// what to write instead; an unknown key stops it with the nearest known key. SIGINT or
// SIGTERM shuts down gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/controller"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/logging"
	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/internal/version"
)

// shutdownTimeout bounds the wait for responses to drain on shutdown.
const shutdownTimeout = 10 * time.Second

// errConfig is wrapped by every configuration error of the command.
var errConfig = errors.New("mqcontroller: config")

// own are the command's keys beside controller.Config's.
type own struct {
	ListenPort  int    `prop:"listenPort" default:"9879" help:"remoting port brokers and mqadmin use"`
	BindAddress string `prop:"bindAddress" help:"address the remoting port listens on (default: all)"`
	MetricsAddr string `prop:"metricsAddr" help:"host:port of the metrics, pprof and probes endpoint (default: none)"`
}

// notApplied are RocketMQ 5 ControllerConfig keys accepted without effect, with what ringmq
// does instead.
var notApplied = map[string]string{
	"rocketmqHome":                             "ringmq needs no installation directory",
	"configStorePath":                          "UPDATE_CONTROLLER_CONFIG changes are not written to a file",
	"configBlackList":                          "the keys fixed at start are fixed",
	"controllerType":                           "the controller runs on hashicorp/raft",
	"controllerThreadPoolNums":                 "requests that wait for raft run on 4 goroutines",
	"controllerRequestThreadPoolQueueCapacity": "4096 requests may wait; more answer SYSTEM_BUSY",
	"mappedFileSize":                           "the raft log is a bolt file",
	"isProcessReadEvent":                       "reads are answered by the leader from its state machine",
	"scanInactiveMasterInterval":               "the scanNotActiveBrokerInterval scan also looks for dead masters",
	"metricsExporterType":                      "metrics are Prometheus, at metricsAddr",
	"metricsPromExporterPort":                  "metrics are served at metricsAddr",
	"metricsPromExporterHost":                  "metrics are served at metricsAddr",
}

// dledgerKeys are RocketMQ 5's DLedger keys, with what to write instead.
var dledgerKeys = map[string]string{
	"controllerDLegerPeers":  "controllerPeers (id-host:port of the raft transport, ';'-separated)",
	"controllerDLegerSelfId": "controllerSelfId",
	"controllerDLegerGroup":  "nothing: the raft group has no name",
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run is the whole command; started, if not nil, receives the controller once it serves.
// It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, started chan<- *controller.Controller) int {
	fs := pflag.NewFlagSet("mqcontroller", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.StringP("configFile", "c", "", "controller config file (Java properties)")
	logFlags := map[string]*string{
		"logLevel":  fs.String("logLevel", "", "least severe level logged: debug, info, warn, error (default info)"),
		"logFormat": fs.String("logFormat", "", "log line format: text or json (default text)"),
		"logFile":   fs.String("logFile", "", "file to log to, rotated by size; default stderr"),
	}
	showVersion := fs.Bool("version", false, "print the version, git commit and Go version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		version.Print(stdout, "mqcontroller")
		return 0
	}
	if fs.NArg() > 0 || *configFile == "" {
		fmt.Fprintln(stderr, "mqcontroller: usage: mqcontroller -c controller.conf (controllerPeers and controllerSelfId are required)")
		return 2
	}
	props, err := conf.ReadFile(*configFile)
	if err != nil {
		fmt.Fprintf(stderr, "mqcontroller: cannot read config file: %v\n", err)
		return 1
	}
	logSettings, err := logging.FromProperties(props, *configFile)
	if err != nil {
		fmt.Fprintf(stderr, "%v: %v\n", errConfig, err)
		return 1
	}
	for name, v := range logFlags {
		if fs.Changed(name) {
			if _, err := conf.Set(&logSettings, name, *v); err != nil {
				fmt.Fprintf(stderr, "mqcontroller: flag --%s: %v\n", name, err)
				return 2
			}
		}
	}
	logger, logCloser, err := logging.New(logSettings, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mqcontroller: %v\n", err)
		return 1
	}
	defer func() { _ = logCloser.Close() }()

	cfg, o, err := load(props, *configFile, logger)
	if err != nil {
		logger.Error("bad config", "err", err)
		return 1
	}
	return serve(ctx, cfg, o, logger, started)
}

// load applies the file's keys over the defaults: every problem is reported (joined), each
// naming file, line and key.
func load(props []conf.Property, file string, logger *slog.Logger) (controller.Config, own, error) {
	cfg := controller.DefaultConfig()
	var o own
	conf.SetDefaults(&o)
	var known []string
	for _, k := range append(conf.Keys(&cfg), conf.Keys(&o)...) {
		known = append(known, k.Name)
	}
	var errs []error
	for _, p := range props {
		if _, ok := conf.Lookup(&logging.Settings{}, p.Key); ok {
			continue
		}
		found, err := conf.Set(&cfg, p.Key, strings.TrimSpace(p.Value))
		if !found {
			found, err = conf.Set(&o, p.Key, strings.TrimSpace(p.Value))
		}
		switch {
		case found && err != nil:
			errs = append(errs, fmt.Errorf("%w: %s:%d: %w", errConfig, file, p.Line, err))
		case found:
		case notApplied[p.Key] != "":
			logger.Info("config key accepted but not applied", "key", p.Key, "file", file, "line", p.Line,
				"instead", notApplied[p.Key])
		case dledgerKeys[p.Key] != "":
			errs = append(errs, fmt.Errorf("%w: %s:%d: %s: ringmq's controller runs on raft: write %s",
				errConfig, file, p.Line, p.Key, dledgerKeys[p.Key]))
		default:
			errs = append(errs, fmt.Errorf("%w: %s:%d: unknown key %s%s", errConfig, file, p.Line, p.Key,
				suggestion(p.Key, known)))
		}
	}
	if cfg.StorePath == "" {
		cfg.StorePath = controller.DefaultStorePath(cfg.SelfID)
	}
	cfg.ListenAddr = net.JoinHostPort(o.BindAddress, strconv.Itoa(o.ListenPort))
	if len(errs) == 0 {
		errs = append(errs, cfg.Validate())
	}
	return cfg, o, errors.Join(errs...)
}

func suggestion(key string, known []string) string {
	if s := conf.Suggest(key, known); s != "" {
		return " (did you mean " + s + "?)"
	}
	return ""
}

// serve runs the controller (and the metrics endpoint, if configured) until ctx ends.
func serve(ctx context.Context, cfg controller.Config, o own, logger *slog.Logger, started chan<- *controller.Controller) int {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	c, err := controller.New(cfg, false, logger, reg)
	if err != nil {
		logger.Error("cannot create the controller", "err", err)
		return 1
	}
	var ops *opsserver.Server
	if o.MetricsAddr != "" {
		if ops, err = opsserver.Start(o.MetricsAddr, reg, nil); err != nil {
			logger.Error("cannot listen for metrics", "metricsAddr", o.MetricsAddr, "err", err)
			_ = c.Shutdown(context.Background())
			return 1
		}
		logger.Info("metrics served", "addr", ops.Addr())
	}
	if err := c.Start(); err != nil {
		logger.Error("cannot start the controller", "err", err)
		if ops != nil {
			_ = ops.Close()
		}
		return 1
	}
	if started != nil {
		started <- c
	}
	<-ctx.Done()
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	status := 0
	if err := c.Shutdown(shutdownCtx); err != nil {
		logger.Error("controller shutdown", "err", err)
		status = 1
	}
	if ops != nil {
		if err := ops.Close(); err != nil {
			logger.Error("metrics server", "err", err)
			status = 1
		}
	}
	return status
}
