package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/ringmq/ringmq/bench"
)

// runNullServer is `mqbench null-server`: the do-nothing RocketMQ-protocol server (the
// suite's limit row) until SIGINT or SIGTERM.
func runNullServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := bench.DefaultNullServerConfig()
	fs := pflag.NewFlagSet("mqbench null-server", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:10911", "TCP address to listen on; it is the broker and the name server")
	fs.StringVar(&cfg.Advertise, "advertise", "", "address routes name (default: the listen address, 127.0.0.1 for 0.0.0.0)")
	fs.IntVar(&cfg.Queues, "queues", cfg.Queues, "queues of a topic UPDATE_AND_CREATE_TOPIC did not size")
	fs.StringVar(&cfg.BrokerName, "broker-name", cfg.BrokerName, "broker name in routes")
	fs.StringVar(&cfg.Cluster, "cluster", cfg.Cluster, "cluster name in routes")
	fs.StringVar(&cfg.Engine, "engine", cfg.Engine, "goroutine (one per connection) or gnet (event loops)")
	logLevel := fs.String("log-level", "info", "log level")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mqbench null-server --listen ADDR\n\nA RocketMQ-protocol server that answers every send SEND_OK at once and stores nothing:\n"+
			"what a broker costs beyond it is the cost of being a broker. Point a producer at it as the name\n"+
			"server or the broker (mqbench produce --namesrv ADDR). Stops on SIGINT or SIGTERM.\n\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return errHelp
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %v", errUsage, fs.Args())
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	logger, err := newLogger(stderr, *logLevel)
	if err != nil {
		return err
	}
	s, err := bench.StartNullServer(cfg, logger)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "mqbench: null-server listening on %s\n", s.Addr())
	<-ctx.Done()
	return s.Close()
}
