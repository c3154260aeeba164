package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// NATS JetStream is the suite's peer (issue 17): nats-server and natscli's `nats bench`,
// pinned in tools/go.mod and built into bin/tools by `make tools`, run in the same
// interleaved rounds as the broker's setups with the matching shape:
//
//   - C connections × W in flight → `nats bench js pub async --clients C --batch W`: each
//     client is one connection and publishes W messages asynchronously, then waits for
//     their W acknowledgements before the next W (natscli's jsPublisher): at most W in
//     flight per connection, as mqbench keeps W. With W = 1 it is
//     `nats bench js pub sync --clients C`, one publish waiting for its ack at a time.
//   - file storage, one replica, a fresh server and store directory per run;
//   - SYNC points (the ringmq setups with SYNC_FLUSH) against `sync_interval: always` (every
//     stored message flushed before its ack), ASYNC points against the default interval.
//
// nats bench publishes a message count, not a duration: the warm-up run measures the
// rate, and the measured run publishes rate × duration. Its CSV gives per-client rates and
// latency percentiles: per message for sync publish, per batch of W (first publish to last
// ack) for async publish, which is not a per-message latency, so the run record keeps it
// in Config and leaves the latency summary empty. Throughput over time comes from the
// server's monitoring endpoint (/jsz, stored messages) every ThroughputInterval.

// PeerNATS names the NATS JetStream peer in BrokerSetup.Peer.
const PeerNATS = "nats"

// NATSSetups are the peer's configurations: default sync interval (ASYNC points) and
// sync_interval: always (SYNC points).
func NATSSetups() []BrokerSetup {
	return []BrokerSetup{
		{Name: "nats-js-async", Peer: PeerNATS},
		{Name: "nats-js-sync", Peer: PeerNATS, SyncAlways: true},
	}
}

// natsSubject is the subject the bench stream captures.
const natsSubject = "ringmq.bench"

// natsServerConfig is nats-server's configuration for one run.
func natsServerConfig(port, httpPort int, storeDir string, syncAlways bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "listen: 127.0.0.1:%d\nhttp: 127.0.0.1:%d\n", port, httpPort)
	fmt.Fprintf(&b, "jetstream {\n  store_dir: %q\n", storeDir)
	if syncAlways {
		b.WriteString("  sync_interval: always\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// natsBenchArgs are the `nats` arguments publishing msgs messages of size bytes at the
// point's shape, the results written to csvPath. maxBytes > 0 creates the stream (file
// storage, one replica, at most maxBytes); 0 publishes into the existing one (the server
// refuses to "update" a stream to the same size when the reservation would count twice).
func natsBenchArgs(serverURL string, p Point, size int, msgs, maxBytes int64, csvPath string) []string {
	args := []string{"--server", serverURL, "bench", "js", "pub"}
	if p.Inflight == 1 {
		args = append(args, "sync", natsSubject)
	} else {
		args = append(args, "async", natsSubject, "--batch", strconv.Itoa(p.Inflight))
	}
	args = append(args,
		"--clients", strconv.Itoa(p.Conns),
		"--msgs", strconv.FormatInt(msgs, 10),
		"--size", strconv.Itoa(size))
	if maxBytes > 0 {
		args = append(args, "--create", "--storage", "file", "--replicas", "1", "--maxbytes", strconv.FormatInt(maxBytes, 10))
	}
	return append(args, "--no-progress", "--csv", csvPath)
}

// natsSample is one client's line of `nats bench --csv`; latencies in µs (0 without).
type natsSample struct {
	Msgs                      int64
	Secs                      float64
	P50, P90, P99, P999, MaxL float64
}

// parseNATSCSV reads nats bench's CSV: per client its message bytes (messages × size),
// duration and, when it measured latency, the percentiles.
func parseNATSCSV(r io.Reader, size int) ([]natsSample, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("bench: nats bench csv: %w", err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("bench: nats bench csv: no client rows")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimPrefix(h, "#")] = i
	}
	for _, need := range []string{"MsgBytes", "DurationSecs"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("bench: nats bench csv: no column %q", need)
		}
	}
	num := func(row []string, name string) (float64, error) {
		i, ok := col[name]
		if !ok {
			return 0, nil
		}
		if i >= len(row) {
			return 0, fmt.Errorf("bench: nats bench csv: row too short for %s", name)
		}
		v, err := strconv.ParseFloat(row[i], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return 0, fmt.Errorf("bench: nats bench csv: %s %q", name, row[i])
		}
		return v, nil
	}
	out := make([]natsSample, 0, len(rows)-1)
	for _, row := range rows[1:] {
		var s natsSample
		var errs []error
		var e error
		var bytes float64
		bytes, e = num(row, "MsgBytes")
		errs = append(errs, e)
		s.Secs, e = num(row, "DurationSecs")
		errs = append(errs, e)
		s.P50, e = num(row, "P50LatencyMicroSecs")
		errs = append(errs, e)
		s.P90, e = num(row, "P90LatencyMicroSecs")
		errs = append(errs, e)
		s.P99, e = num(row, "P99LatencyMicroSecs")
		errs = append(errs, e)
		s.P999, e = num(row, "P99.9LatencyMicroSecs")
		errs = append(errs, e)
		s.MaxL, e = num(row, "MaxLatencyMicroSecs")
		errs = append(errs, e)
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		s.Msgs = int64(math.Round(bytes / float64(size)))
		out = append(out, s)
	}
	return out, nil
}

// natsTotals sums the clients: messages, the longest client's duration (they start
// together), the aggregate rate, and each latency percentile's median over the clients
// (per-client percentiles cannot be merged; the median client is what a reader expects).
func natsTotals(samples []natsSample) (msgs int64, secs, rate float64, lat LatencySummary) {
	var p50, p90, p99, p999, mx []float64
	for _, s := range samples {
		msgs += s.Msgs
		secs = max(secs, s.Secs)
		if s.P50 > 0 {
			p50, p90, p99, p999, mx = append(p50, s.P50), append(p90, s.P90), append(p99, s.P99), append(p999, s.P999), append(mx, s.MaxL)
		}
	}
	if secs > 0 {
		rate = float64(msgs) / secs
	}
	if len(p50) > 0 {
		lat = LatencySummary{Count: int64(len(p50)), P50Us: median(p50), P90Us: median(p90), P99Us: median(p99), P999Us: median(p999), MaxUs: median(mx)}
	}
	return msgs, secs, rate, lat
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// jszMessages reads the messages stored in every stream from the server's /jsz.
func jszMessages(ctx context.Context, client *http.Client, base string) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/jsz", nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("bench: %s/jsz: %s", base, resp.Status)
	}
	var v struct {
		Messages *int64 `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		return 0, fmt.Errorf("bench: %s/jsz: %w", base, err)
	}
	if v.Messages == nil {
		return 0, fmt.Errorf("bench: %s/jsz: no messages field", base)
	}
	return *v.Messages, nil
}

// natsGuessRate is the warm-up's assumed rate before anything is measured: low, so
// that a slow configuration (sync_interval: always on a slow disk) still finishes its
// warm-up quickly; the measured run uses the warm-up's real rate.
func natsGuessRate(p Point, syncAlways bool) float64 {
	perConn := 10_000.0
	if syncAlways {
		perConn = 500
	}
	return perConn * float64(p.Conns)
}

// natsWarmupFloor is the shortest calibration run: enough messages for a rate.
const natsWarmupFloor = 300 * time.Millisecond

// runNATS is one planned run of the NATS peer: server up with a fresh store, a warm-up
// that calibrates the message count, the measured `nats bench`, server down, run
// directory written.
func runNATS(ctx context.Context, cfg *SuiteConfig, pr PlannedRun, dir, storeDir string, logger *slog.Logger) (*RunRecord, error) {
	for _, bin := range []string{cfg.NATSServerBin, cfg.NATSBin} {
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("%w: %s: %w (build it with `make tools`)", ErrBroker, bin, err)
		}
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	absStore, err := filepath.Abs(storeDir)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	conf := natsServerConfig(ports[0], ports[1], absStore, pr.Setup.SyncAlways)
	confPath := filepath.Join(dir, "nats-server.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	logFile, err := os.Create(filepath.Join(dir, "broker.log"))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer logFile.Close()
	srv := exec.Command(cfg.NATSServerBin, "-c", confPath)
	srv.Stdout, srv.Stderr = logFile, logFile
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("%w: start %s: %w", ErrBroker, cfg.NATSServerBin, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = srv.Wait()
		close(exited)
	}()
	stop := func() error {
		select {
		case <-exited:
			return fmt.Errorf("%w: nats-server exited early: %v", ErrBroker, waitErr)
		default:
		}
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
			return nil
		case <-time.After(cfg.BrokerStopTimeout):
			_ = srv.Process.Kill()
			<-exited
			return fmt.Errorf("%w: nats-server did not exit within %v of SIGTERM; killed", ErrBroker, cfg.BrokerStopTimeout)
		}
	}
	httpBase := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(cfg.BrokerStartTimeout)
	for {
		// The monitor can answer before the client port accepts (JetStream still starting).
		if _, err := jszMessages(ctx, client, httpBase); err == nil && acceptsTCP(fmt.Sprintf("127.0.0.1:%d", ports[0])) {
			break
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("%w: %s exited during start (%v); see %s", ErrBroker, pr.Setup.Name, waitErr, logFile.Name())
		case <-ctx.Done():
			_ = stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = stop()
			return nil, fmt.Errorf("%w: %s did not serve /jsz within %v; see %s", ErrBroker, pr.Setup.Name, cfg.BrokerStartTimeout, logFile.Name())
		}
	}

	started := time.Now()
	url := fmt.Sprintf("nats://127.0.0.1:%d", ports[0])
	size := cfg.Load.MessageBytes
	maxBytes := natsStreamMaxBytes(absStore)
	rec := NewRunRecord(pr.Name, "produce", started)
	recordConfig := func() {
		rec.Config["setup"] = pr.Setup.Name
		rec.Config["round"] = strconv.Itoa(pr.Round)
		rec.Config["peer"] = PeerNATS
		rec.Config["size"] = strconv.Itoa(size)
		rec.Config["nats_server_conf"] = strings.TrimSpace(strings.ReplaceAll(conf, absStore, "<store>"))
		rec.Config["nats_server_version"] = toolVersion(ctx, cfg.NATSServerBin, "--version")
		rec.Machine = DescribeMachine(ctx, storeDir)
	}
	if pr.Point.E2ERate > 0 {
		// An e2e point: mqbench's own NATS client (RunNATSE2E), not nats bench.
		ecfg := NATSE2EConfig{URL: url, Stream: "MQBENCH_E2E", Subject: natsSubject, Conns: cfg.Load.Conns, Inflight: cfg.Load.Inflight,
			Rate: pr.Point.E2ERate, MessageBytes: size, Duration: cfg.Load.Duration, Warmup: cfg.Load.Warmup, Count: cfg.Load.Count,
			ConsumeConns: max(cfg.ConsumeConns, 1), Tick: cfg.Load.Tick, DrainTimeout: cfg.Load.DrainTimeout, DialTimeout: cfg.Load.DialTimeout}
		serverStart := markServerCPU(srv.Process.Pid)
		res, runErr := RunNATSE2E(ctx, ecfg, logger)
		var serverCPU *ClientCPU
		if res != nil {
			serverCPU = serverCPUSince(srv.Process.Pid, serverStart, res.Produce.Acked)
		}
		stopErr := stop()
		rec.Finished = time.Now()
		if runErr != nil || stopErr != nil {
			return nil, errors.Join(runErr, stopErr)
		}
		recordConfig()
		rec.Mode = "e2e"
		rec.Config["conns"] = strconv.Itoa(ecfg.Conns)
		rec.Config["inflight"] = strconv.Itoa(ecfg.Inflight)
		rec.Config["rate"] = strconv.FormatFloat(ecfg.Rate, 'g', -1, 64)
		rec.Config["nats_client"] = "mqbench e2e --nats-url (nats.go): async publish, durable pull consumer from the stream's end"
		load := cfg.Load
		load.Rate = ecfg.Rate
		rec.SetProduce(&load, res.Produce)
		rec.Results.Produce.ServerCPU = serverCPU
		rec.SetConsume(res.Consume)
		rec.SetE2E(res)
		if err := WriteRun(dir, rec, res.Produce, res.Consume); err != nil {
			return nil, err
		}
		return rec, nil
	}
	var samples []natsSample
	var pts []ThroughputPoint
	var measuredArgs []string
	var measured natsBenchRun
	var serverStart, serverEnd serverCPUMark
	runErr := func() error {
		// Warm-up and calibration.
		warm := max(cfg.Load.Warmup, natsWarmupFloor)
		guess := natsGuessRate(pr.Point, pr.Setup.SyncAlways)
		warmMsgs := max(int64(guess*warm.Seconds()), int64(pr.Point.Conns))
		warmCSV := filepath.Join(storeDir, "warmup.csv")
		if _, err := runNATSBench(ctx, cfg, natsBenchArgs(url, pr.Point, size, warmMsgs, maxBytes, warmCSV), io.Discard); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		ws, err := readNATSCSV(warmCSV, size)
		if err != nil {
			return err
		}
		_, _, rate, _ := natsTotals(ws)
		if rate <= 0 {
			return fmt.Errorf("%w: nats bench warm-up measured no rate", ErrBroker)
		}
		msgs := max(int64(rate*cfg.Load.Duration.Seconds()), int64(pr.Point.Conns))
		if cfg.Load.Count > 0 {
			msgs = cfg.Load.Count
		}
		csvPath := filepath.Join(dir, "nats-bench.csv")
		measuredArgs = natsBenchArgs(url, pr.Point, size, msgs, 0, csvPath)
		out, err := os.Create(filepath.Join(dir, "nats-bench.txt"))
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer out.Close()
		samplerStop := make(chan struct{})
		samplerDone := make(chan struct{})
		go func() {
			defer close(samplerDone)
			pts = sampleThroughput(samplerStop, time.Now(), ThroughputInterval, func() (int64, bool) {
				n, err := jszMessages(ctx, client, httpBase)
				return n, err == nil
			})
		}()
		var benchErr error
		serverStart = markServerCPU(srv.Process.Pid)
		measured, benchErr = runNATSBench(ctx, cfg, measuredArgs, out)
		serverEnd = markServerCPU(srv.Process.Pid)
		close(samplerStop)
		<-samplerDone
		if benchErr != nil {
			return benchErr
		}
		samples, err = readNATSCSV(csvPath, size)
		return err
	}()
	stopErr := stop()
	rec.Finished = time.Now()
	if runErr != nil || stopErr != nil {
		return nil, errors.Join(runErr, stopErr)
	}
	msgs, secs, rate, lat := natsTotals(samples)
	rec.Command = append([]string{filepath.Base(cfg.NATSBin)}, measuredArgs...)
	recordConfig()
	rec.Config["conns"] = strconv.Itoa(pr.Point.Conns)
	rec.Config["inflight"] = strconv.Itoa(pr.Point.Inflight)
	rec.Config["nats_bench"] = strings.Join(rec.Command, " ")
	rec.Config["natscli_version"] = toolVersion(ctx, cfg.NATSBin, "--version")
	ps := &ProduceSummary{Sent: msgs, Acked: msgs, Bytes: msgs * int64(size), Secs: secs, MsgsPerSec: rate}
	if secs > 0 {
		ps.MBPerSec = float64(ps.Bytes) / 1e6 / secs
	}
	// The client's CPU: the nats process of the measured run, start-up included (a few
	// milliseconds of a run of seconds).
	c := newClientCPU(measured.cpu, measured.wall, msgs, runtime.NumCPU())
	ps.ClientCPU = &c
	// The server's: nats-server's CPU over the same run.
	ps.ServerCPU = serverCPUBetween(serverStart, serverEnd, msgs)
	if pr.Point.Inflight == 1 {
		ps.Latency = lat // per message
	} else if lat.Count > 0 {
		rec.Config["nats_batch_latency_us"] = fmt.Sprintf("per batch of %d, median over clients: p50 %.0f p90 %.0f p99 %.0f p99.9 %.0f max %.0f",
			pr.Point.Inflight, lat.P50Us, lat.P90Us, lat.P99Us, lat.P999Us, lat.MaxUs)
	}
	rec.Results.Produce = ps
	if len(pts) > 0 {
		rec.Throughput = ThroughputFile
		if err := WriteThroughputCSV(filepath.Join(dir, ThroughputFile), pts); err != nil {
			return nil, err
		}
	}
	if err := WriteRun(dir, rec, nil, nil); err != nil {
		return nil, err
	}
	logger.Debug("nats run", "setup", pr.Setup.Name, "msgs", msgs, "secs", secs)
	return rec, nil
}

// acceptsTCP reports whether addr accepts a connection now.
func acceptsTCP(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// natsBenchRun is what one `nats bench` process cost: its CPU (user + system, from its
// rusage) over its wall time.
type natsBenchRun struct {
	cpu, wall time.Duration
}

// runNATSBench runs `nats` with args, its output to out (and kept for the error).
func runNATSBench(ctx context.Context, cfg *SuiteConfig, args []string, out io.Writer) (natsBenchRun, error) {
	// A calibrated run takes about Duration; allow for a rate that collapses mid-run.
	ctx, cancel := context.WithTimeout(ctx, 4*(cfg.Load.Duration+cfg.Load.Warmup)+30*time.Second)
	defer cancel()
	var buf bytes.Buffer
	cmd := exec.CommandContext(ctx, cfg.NATSBin, args...)
	cmd.Stdout = io.MultiWriter(out, &buf)
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return natsBenchRun{}, fmt.Errorf("%w: nats %s: %w: %s", ErrBroker, strings.Join(args[2:5], " "), err, lastLines(buf.Bytes(), 3))
	}
	return natsBenchRun{cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), wall: time.Since(start)}, nil
}

func readNATSCSV(path string, size int) ([]natsSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer f.Close()
	return parseNATSCSV(f, size)
}

// lastLines is the last n lines of out, for an error message.
func lastLines(out []byte, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines[max(len(lines)-n, 0):], " | ")
}

// toolVersion is the first line `bin flag` prints ("" if it fails).
func toolVersion(ctx context.Context, bin, flag string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, flag).CombinedOutput()
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}
