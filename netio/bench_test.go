package netio

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// benchEcho answers every request from OnRequest with its body, reusing one response
// command per connection so that the handler itself allocates nothing.
type benchEcho struct{}

func (benchEcho) OnOpen(c Conn)       { c.SetContext(&codec.RemotingCommand{}) }
func (benchEcho) OnClose(Conn, error) {}
func (benchEcho) OnRequest(c Conn, cmd *codec.RemotingCommand) {
	resp := c.Context().(*codec.RemotingCommand)
	resp.InitResponse(cmd, codec.ResponseSuccess, "")
	resp.Body = cmd.Body
	_ = c.WriteCommand(resp)
}

// BenchmarkRoundTrip measures request/response round trips with a 1 KiB body through each
// engine, with 1, 100 and 1000 connections each keeping one request in flight (closed loop:
// a connection sends its next request when its response arrived).
//
// The load generator runs in a child process (this test binary, TestLoadGeneratorProcess)
// with a goroutine per connection over plain net.Conn, identical for both engines. In the
// same process its thousand goroutines would compete with the gnet loops for the runtime's
// Ps, which no real deployment does. Both processes share the machine's CPUs, so compare
// the engines side by side, not with absolute figures. Reported: req/s and p50/p99 latency
// (µs) as the generator saw them; ns/op is wall time per request over all connections;
// B/op and allocs/op are the server's alone.
func BenchmarkRoundTrip(b *testing.B) {
	for _, conns := range []int{1, 100, 1000} {
		for _, engine := range engines {
			b.Run(fmt.Sprintf("conns=%d/engine=%s", conns, engine), func(b *testing.B) {
				benchRoundTrip(b, engine, conns)
			})
		}
	}
}

func benchRoundTrip(b *testing.B, engine string, conns int) {
	cfg := DefaultConfig()
	cfg.Name, cfg.Engine, cfg.Addr = "bench", engine, "127.0.0.1:0"
	s, err := NewServer(cfg, benchEcho{}, testLogger())
	require.NoError(b, err)
	require.NoError(b, s.Start())
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		require.NoError(b, s.Stop(ctx))
	}()

	gen := exec.Command(os.Args[0], "-test.run=^TestLoadGeneratorProcess$", "-test.count=1")
	gen.Env = append(os.Environ(),
		"NETIO_LOADGEN_ADDR="+s.Addr().String(),
		"NETIO_LOADGEN_CONNS="+strconv.Itoa(conns),
		"NETIO_LOADGEN_REQUESTS="+strconv.Itoa(b.N))
	gen.Stderr = os.Stderr
	stdin, err := gen.StdinPipe()
	require.NoError(b, err)
	stdout, err := gen.StdoutPipe()
	require.NoError(b, err)
	require.NoError(b, gen.Start())
	defer func() { _ = gen.Wait() }()
	lines := bufio.NewScanner(stdout)
	require.True(b, lines.Scan(), "load generator did not start")
	require.Equal(b, "READY", lines.Text(), "load generator: dial %d connections (ulimit -n?)", conns)

	b.SetBytes(2 * benchFrameBytes)
	b.ReportAllocs()
	b.ResetTimer()
	_, err = io.WriteString(stdin, "GO\n")
	require.NoError(b, err)
	require.True(b, lines.Scan(), "load generator died")
	b.StopTimer()
	var elapsedNs, p50Ns, p99Ns int64
	_, err = fmt.Sscanf(lines.Text(), "RESULT %d %d %d", &elapsedNs, &p50Ns, &p99Ns)
	require.NoError(b, err, "load generator said %q", lines.Text())
	require.NoError(b, stdin.Close())
	_, _ = io.Copy(io.Discard, stdout) // let it finish writing before Wait closes the pipe
	b.ReportMetric(float64(b.N)/time.Duration(elapsedNs).Seconds(), "req/s")
	b.ReportMetric(float64(p50Ns)/1e3, "p50-µs")
	b.ReportMetric(float64(p99Ns)/1e3, "p99-µs")
}

// benchRequest is the request every load-generator connection sends: a SEND_MESSAGE-like
// header and a 1 KiB body.
func benchRequest() []byte {
	req := codec.NewRequest(codec.RequestSendMessage, map[string]string{"topic": "BenchTopic", "queueId": "0"}, make([]byte, 1024))
	req.Opaque = 1
	frame, err := req.AppendFrame(nil)
	if err != nil {
		panic(err)
	}
	return frame
}

var benchFrameBytes = int64(len(benchRequest()))

// TestLoadGeneratorProcess is BenchmarkRoundTrip's load generator, run in a child process;
// it skips when not started that way. It dials NETIO_LOADGEN_CONNS connections, does one
// warm-up round trip on each, prints READY, waits for GO on stdin, runs
// NETIO_LOADGEN_REQUESTS round trips spread over the connections (each keeps one in
// flight), and prints "RESULT <elapsed ns> <p50 ns> <p99 ns>".
func TestLoadGeneratorProcess(t *testing.T) {
	addr := os.Getenv("NETIO_LOADGEN_ADDR")
	if addr == "" {
		t.Skip("load generator for BenchmarkRoundTrip; runs only as its child process")
	}
	conns, err := strconv.Atoi(os.Getenv("NETIO_LOADGEN_CONNS"))
	require.NoError(t, err)
	requests, err := strconv.Atoi(os.Getenv("NETIO_LOADGEN_REQUESTS"))
	require.NoError(t, err)
	frame := benchRequest()

	clients := make([]*benchConn, conns)
	for i := range clients {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			fmt.Printf("DIAL %d: %v\n", i, err)
			return
		}
		defer nc.Close()
		clients[i] = &benchConn{nc: nc, fr: codec.NewFrameReader(nc, 0)}
		require.NoError(t, clients[i].roundTrip(frame))
	}
	fmt.Println("READY")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "GO" {
		return
	}

	var remaining atomic.Int64
	remaining.Store(int64(requests))
	latencies := make([][]int64, conns)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for i, c := range clients {
		wg.Go(func() {
			lat := make([]int64, 0, requests/conns+1)
			for remaining.Add(-1) >= 0 {
				t0 := time.Now()
				if err := c.roundTrip(frame); err != nil {
					errs <- err
					return
				}
				lat = append(lat, int64(time.Since(t0)))
			}
			latencies[i] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	h := hdrhistogram.New(1, int64(10*time.Second), 3)
	for _, lat := range latencies {
		for _, ns := range lat {
			require.NoError(t, h.RecordValue(ns))
		}
	}
	require.Equal(t, int64(requests), h.TotalCount())
	fmt.Printf("RESULT %d %d %d\n", elapsed.Nanoseconds(), h.ValueAtQuantile(50), h.ValueAtQuantile(99))
}

type benchConn struct {
	nc net.Conn
	fr *codec.FrameReader
}

func (c *benchConn) roundTrip(frame []byte) error {
	if _, err := c.nc.Write(frame); err != nil {
		return err
	}
	payload, err := c.fr.Next()
	if err != nil {
		return err
	}
	if len(payload) < 1024 {
		return fmt.Errorf("short response: %d bytes", len(payload))
	}
	return nil
}

// BenchmarkOutboundQueue measures the write path a handler uses (WriteCommand into the
// connection's queue, then the flusher's swap, vectors and release) without sockets: it
// must not allocate per frame.
func BenchmarkOutboundQueue(b *testing.B) {
	c, resp := newQueueOnlyConn(), benchResponse()
	b.ReportAllocs()
	b.SetBytes(int64(len(resp.Body)))
	for b.Loop() {
		c.beginPass()
		_ = c.WriteCommand(resp)
		batch, _ := c.takeBatch()
		_ = batch.vectors()
		c.returnBatch(batch)
	}
}

// TestOutboundQueueAllocs: after warm-up, queueing and flushing a response allocates
// nothing on either path — inside a read pass and from another goroutine (with a kick).
func TestOutboundQueueAllocs(t *testing.T) {
	c, resp := newQueueOnlyConn(), benchResponse()
	header, err := resp.AppendFrameHeader(nil)
	require.NoError(t, err)
	bodies := [][]byte{resp.Body[:100], resp.Body[100:]}
	release := func() {}
	inPass := testing.AllocsPerRun(1000, func() {
		c.beginPass()
		_ = c.WriteCommand(resp)
		_ = c.WriteFrame(header, bodies, release)
		batch, _ := c.takeBatch()
		_ = batch.vectors()
		c.returnBatch(batch)
	})
	require.Zero(t, inPass)
	kicked := testing.AllocsPerRun(1000, func() {
		_ = c.WriteCommand(resp)
		batch, _ := c.takeBatch()
		_ = batch.vectors()
		c.returnBatch(batch)
	})
	require.Zero(t, kicked)
	require.Equal(t, 1000+1, c.engine.(*countingEngine).kicks)
}

// countingEngine is a connEngine that only counts kicks.
type countingEngine struct{ kicks int }

func (e *countingEngine) reserveKick() bool { return true }
func (e *countingEngine) unreserveKick()    {}
func (e *countingEngine) kick() error       { e.kicks++; return nil }
func (e *countingEngine) abort()            {}

func newQueueOnlyConn() *connCore {
	m, _ := newMetrics(nil, "bench", "none")
	c := &connCore{}
	limits := &connLimits{maxOutboundBytes: 1 << 30, maxPendingCalls: 1}
	c.init(1, netip.AddrPort{}, netip.AddrPort{}, &countingEngine{}, limits, slog.New(slog.DiscardHandler), m, time.Now())
	return c
}

func benchResponse() *codec.RemotingCommand {
	resp := codec.NewResponse(codec.NewRequest(codec.RequestSendMessage, nil, nil), codec.ResponseSuccess, "")
	resp.SetExt("msgId", "7F00000100002A9F0000000000000000")
	resp.SetExt("queueId", "0")
	resp.SetExt("queueOffset", "42")
	resp.Body = make([]byte, 1024)
	return resp
}
