// Command mqbench is ringmq's load generator and report tool. It speaks RocketMQ's
// remoting protocol to any RocketMQ-compatible broker (ringmq, Apache RocketMQ) given a
// name server or a broker address, and writes HdrHistogram .hgrm files, a JSON run record
// and a per-second CSV per run; `report` compares runs; `suite` is `make bench-report`.
//
// The command shapes are stable (scripts and other suites call them); see usage below or
// run `mqbench --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/ringmq/ringmq/internal/version"
)

const usage = `mqbench: load generator and report tool for RocketMQ-compatible brokers

Usage:
  mqbench produce --namesrv ADDR|--broker ADDR --topic T --queues Q --conns C --inflight W --size S
                  --duration D [--rate R] --out DIR [flags]
  mqbench consume --namesrv ADDR --topic T --group G --conns C --duration D --out DIR [flags]
  mqbench mixed   --namesrv ADDR --topic T --group G --conns C --inflight W --size S --duration D
                  --out DIR [flags]        (produce and consume at once)
  mqbench e2e     --namesrv ADDR|--broker ADDR --topic T --rate R --conns C --inflight W --size S
                  --duration D --out DIR [flags]   (open-loop produce and pull consume: end-to-end latency)
  mqbench lean    --namesrv ADDR|--broker ADDR --topic T --queues Q --conns C --inflight W --size S
                  --duration D     (the lean yardstick generator: throughput and client CPU only)
  mqbench null-server --listen ADDR     (a server that answers every send SEND_OK and stores nothing)
  mqbench report  DIR... --html FILE --md FILE [--title T]
  mqbench suite   [--quick] [--broker-bin bin/mqbroker] [--results results] [--rounds 3]
                  [--points 1x1,4x16,16x32,e2e@20000] [--peers nats,null|none] [--write-benchmarks]
  mqbench --version

produce sends SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE with --batch > 1) over C connections
with W requests in flight each (pipelined by opaque), closed loop, or open loop at --rate
messages/s with latency measured from each message's intended send time (coordinated
omission corrected; one pacer wakes at most once per --tick and sends what is due, so a
message may wait up to a tick, counted in its latency). consume pulls with long polling (--no-long-polling to poll) and measures
end-to-end latency and lag. e2e produces open loop at --rate and pulls the same topic in one
process on one monotonic clock: send latency and produce-to-consume latency (p50/p90/p99/p99.9/
max of both), every message matched by its sequence number (written, matched, missing,
duplicates); it waits up to --drain-timeout after the last send for the last receipts and
fails if any message is missing. report compares run directories (ringmq vs another broker, or two
configurations): an HTML page (inline SVG) and a Markdown table with ratios against the
first run; runs sharing a --name are summarized by their medians. suite starts bin/mqbroker
once per configuration (ASYNC mmap, ASYNC transient pool, SYNC per flush backend; gnet and std
engines), NATS JetStream and the null server (the limit) as peers, runs the same load against each, interleaved over
rounds, and writes the report. lean is the yardstick for mqbench's own cost: the least a client
can do at the same load (frames encoded once, batched writes, responses counted).

Output of produce/consume/mixed with --out DIR: run.json (config, machine, results, broker
metrics), produce.hgrm / consume-e2e.hgrm (HdrHistogram percentile distributions, ms),
produce-service.hgrm (with --rate), series.csv (per second). With --metrics ADDR the broker's
/metrics is scraped at the start and end of the measurement (put-lock and put-latency
histograms) so the report shows broker-internal latency beside the client's.

The last line printed by produce and consume is one machine-readable summary:
  mqbench: mode=produce msgs=N secs=T rate=R p50_us=.. p99_us=.. p999_us=.. max_us=.. errors=E
           client_cpu_s=C client_cpu_share=S client_cpu_us_per_msg=U steal_share=T (the same line;
           T: the machine's CPU stolen by the hypervisor meanwhile, -1 unknown)
client_cpu_* is mqbench's own CPU over the measurement: seconds, share of the machine
(seconds / wall / nproc) and µs per message; a large share means the client, not the
broker, may be the limit. For consume: received messages, end-to-end latency, failed
pulls. mixed prints the produce line, then the consume line last. A progress line per second goes to stderr on a terminal.

Exit status: 0 done, 1 the run failed, 2 bad usage.
Run 'mqbench COMMAND --help' for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks command-line mistakes (exit status 2).
var errUsage = errors.New("mqbench: usage")

// run is the whole command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "--version", "version":
		version.Print(stdout, "mqbench")
		return 0
	case "produce", "consume", "mixed", "e2e":
		err = runLoad(ctx, args[0], args[1:], stdout, stderr)
	case "lean":
		err = runLean(ctx, args[1:], stdout, stderr)
	case "report":
		err = runReport(args[1:], stdout, stderr)
	case "null-server":
		err = runNullServer(ctx, args[1:], stdout, stderr)
	case "suite":
		err = runSuite(ctx, args[1:], stdout, stderr)
	default:
		err = fmt.Errorf("%w: unknown command %q (produce, consume, mixed, e2e, lean, null-server, report, suite)", errUsage, args[0])
	}
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, errUsage):
		fmt.Fprintln(stderr, err)
		return 2
	default:
		fmt.Fprintln(stderr, "mqbench:", err)
		return 1
	}
}

// newLogger logs to stderr at the named level.
func newLogger(stderr io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("%w: --log-level %q: %w", errUsage, level, err)
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: l})), nil
}
