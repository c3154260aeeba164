// Command mqnamesrv runs ringmq's NameServer on its own (a broker runs one embedded by
// default). It reads RocketMQ's namesrv.conf keys, so an Apache RocketMQ name server's
// config file works unchanged:
//
//	mqnamesrv [-c namesrv.conf] [-p listenPort] [--logLevel info] [--logFormat text|json] [--logFile path]
//
// Priority: flags > file > defaults. Apache RocketMQ 4.x keys that ringmq does not need are
// logged once at info with what it does instead; a key neither ringmq nor RocketMQ knows (a
// typo) and a value that does not parse stop the start (and --printConfigItem) with an error
// naming file, line and key, and for a typo the nearest known key. metricsAddr (host:port, empty
// or off, read as mqbroker reads it) serves /metrics and /debug/pprof/. SIGINT or SIGTERM shuts
// down gracefully.
//
// Note: Java's mqnamesrv uses -p for "print config items and exit"; here -p sets the
// listen port (--printConfigItem prints the effective settings instead).
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
	"github.com/ringmq/ringmq/namesrv"
)

// shutdownTimeout bounds the wait for responses to drain on shutdown.
const shutdownTimeout = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run is the whole command: parse flags and the config file, start the name server, wait
// for ctx to end, shut down. started, if not nil, receives the bound address once serving
// (for tests). It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, started chan<- net.Addr) int {
	fs := pflag.NewFlagSet("mqnamesrv", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.StringP("configFile", "c", "", "name server config file (Java properties, namesrv.conf keys)")
	listenPort := fs.IntP("listenPort", "p", 0, "listen port (overrides listenPort in the file; default 9876)")
	logFlags := map[string]*string{
		"logLevel":  fs.String("logLevel", "", "least severe level logged: debug, info, warn, error (default info; also a namesrv.conf key)"),
		"logFormat": fs.String("logFormat", "", "log line format: text or json (default text; also a namesrv.conf key)"),
		"logFile":   fs.String("logFile", "", "file to log to, rotated by size (logFileMaxSizeMB, logFileMaxBackups, logFileMaxAgeDays in namesrv.conf); default stderr"),
	}
	printConfig := fs.Bool("printConfigItem", false, "print the effective settings and exit")
	showVersion := fs.Bool("version", false, "print the version, git commit and Go version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		// pflag has printed the error and the usage; a misspelt flag also gets the nearest one.
		if flag, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
			var names []string
			fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
			if near := conf.Suggest(flag, names); near != "" {
				fmt.Fprintf(stderr, "mqnamesrv: unknown flag --%s: did you mean --%s?\n", flag, near)
			}
		}
		return 2
	}
	if *showVersion {
		version.Print(stdout, "mqnamesrv")
		return 0
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mqnamesrv: unexpected arguments: %v\n", fs.Args())
		return 2
	}
	// The logging keys come first, from the file and then the flags: the logger they describe
	// reports everything after them, the rest of the file included.
	var props []conf.Property
	if *configFile != "" {
		var err error
		if props, err = conf.ReadFile(*configFile); err != nil {
			fmt.Fprintf(stderr, "mqnamesrv: cannot read config file: %v\n", err)
			return 1
		}
	}
	logSettings, err := loggingSettings(props, *configFile)
	if err != nil {
		fmt.Fprintln(stderr, err) // errConfig names the command
		return 1
	}
	for name, v := range logFlags {
		if !fs.Changed(name) {
			continue
		}
		if _, err := conf.Set(&logSettings, name, *v); err != nil {
			fmt.Fprintf(stderr, "mqnamesrv: flag --%s: %v\n", name, err)
			return 2
		}
	}
	logger, logCloser, err := logging.New(logSettings, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "mqnamesrv: %v\n", err)
		return 1
	}
	defer func() { _ = logCloser.Close() }()

	s := defaultSettings()
	if *configFile != "" {
		if err := applyProperties(&s, props, *configFile, logger); err != nil {
			fmt.Fprintln(stderr, err) // errConfig names the command; each error its file and line
			return 1
		}
		logger.Info("config file loaded", "file", *configFile)
	}
	if fs.Changed("listenPort") {
		s.listenPort = *listenPort
	}
	s.ns.ListenAddr = s.listenAddr()
	if err := s.ns.Validate(); err != nil {
		logger.Error("bad config", "err", err)
		return 1
	}
	if s.controllerEnabled {
		if s.controller.StorePath == "" {
			s.controller.StorePath = controller.DefaultStorePath(s.controller.SelfID)
		}
		if err := s.controller.Validate(); err != nil {
			logger.Error("bad config", "err", err)
			return 1
		}
	}
	if *printConfig {
		fmt.Fprintf(stdout, "%+v\nmetricsAddr=%s\n", s.ns, s.metricsAddr)
		if s.controllerEnabled {
			for _, k := range conf.Keys(&s.controller) {
				if k.Name == "netEngine" || k.Name == "netEventLoops" {
					continue // the name server's, printed above
				}
				v, _ := conf.Get(&s.controller, k.Name)
				fmt.Fprintf(stdout, "%s=%s\n", k.Name, v)
			}
		}
		return 0
	}
	return serve(ctx, &s, stdout, logger, started)
}

// serve runs the name server (and the metrics endpoint, if configured) until ctx ends.
func serve(ctx context.Context, s *settings, stdout io.Writer, logger *slog.Logger, started chan<- net.Addr) int {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	ns, err := namesrv.New(s.ns, logger, reg)
	if err != nil {
		logger.Error("cannot create the name server", "err", err)
		return 1
	}
	var ctrl *controller.Controller
	if s.controllerEnabled {
		if ctrl, err = controller.New(s.controller, true, logger, reg); err != nil {
			logger.Error("cannot create the controller", "err", err)
			return 1
		}
		ns.SetExtension(ctrl)
	}

	// The operators' endpoint, as mqbroker serves it (metrics, pprof; no probe checks).
	var metricsServer *opsserver.Server
	if s.metricsAddr != "" {
		if metricsServer, err = opsserver.Start(s.metricsAddr, reg, nil); err != nil {
			logger.Error("cannot listen for metrics", "metricsAddr", s.metricsAddr, "err", err)
			return 1
		}
		logger.Info("metrics served", "addr", metricsServer.Addr())
	}

	if err := ns.Start(); err != nil {
		logger.Error("cannot start the name server", "err", err)
		if ctrl != nil {
			_ = ctrl.Shutdown(context.Background())
		}
		if metricsServer != nil {
			_ = metricsServer.Close()
		}
		return 1
	}
	if ctrl != nil {
		if s.controller.AdvertiseAddr == "" {
			// Callers are sent to this name server's port, on the raft address's host.
			ctrl.SetAdvertiseAddr(controller.AdvertiseOn(s.controller, ns.Addr()))
		}
		if err := ctrl.Start(); err != nil {
			logger.Error("cannot start the controller", "err", err)
			shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			_ = ns.Shutdown(shutdownCtx)
			cancel()
			if metricsServer != nil {
				_ = metricsServer.Close()
			}
			return 1
		}
	}
	// The line Java's mqnamesrv prints; start scripts wait for it.
	fmt.Fprintf(stdout, "The Name Server boot success. serializeType=JSON, address %s\n", ns.Addr())
	if started != nil {
		started <- ns.Addr()
	}

	<-ctx.Done()
	logger.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	status := 0
	if ctrl != nil {
		// Before the name server: its closing connections must not look like dead brokers.
		if err := ctrl.Shutdown(shutdownCtx); err != nil {
			logger.Error("controller shutdown", "err", err)
			status = 1
		}
	}
	if err := ns.Shutdown(shutdownCtx); err != nil {
		logger.Error("name server shutdown", "err", err)
		status = 1
	}
	if metricsServer != nil {
		if err := metricsServer.Close(); err != nil {
			logger.Error("metrics server", "err", err)
			status = 1
		}
	}
	return status
}
