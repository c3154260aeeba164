package netio

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
)

// Request codes the test handler understands.
const (
	codeEcho       codec.RequestCode = 1001 // reply from OnRequest with the same body
	codeEchoAsync  codec.RequestCode = 1002 // reply from another goroutine
	codeFrame      codec.RequestCode = 1003 // reply with WriteFrame, body in three slices, from OnRequest
	codeFrameAsync codec.RequestCode = 1004 // the same from another goroutine
	codeNoReply    codec.RequestCode = 1005 // never reply
	codeClose      codec.RequestCode = 1006 // reply, then Close the connection
)

// waitTimeout bounds every wait on a condition in these tests.
const waitTimeout = 10 * time.Second

var engines = []string{EngineGnet, EngineStd}

// forEachEngine runs f once per engine, as a subtest.
func forEachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

func testLogger() *slog.Logger {
	if testing.Verbose() && os.Getenv("NETIO_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// testHandler answers the codes above and records the connection events.
type testHandler struct {
	async sync.WaitGroup // reply goroutines

	opened    atomic.Int32
	closed    atomic.Int32
	requests  atomic.Int64
	releases  atomic.Int64 // WriteFrame release calls
	closeErrs chan error   // every OnClose error, in order

	mu    sync.Mutex
	conns []Conn
}

func newTestHandler() *testHandler {
	return &testHandler{closeErrs: make(chan error, 4096)}
}

func (h *testHandler) OnOpen(c Conn) {
	h.opened.Add(1)
	h.mu.Lock()
	h.conns = append(h.conns, c)
	h.mu.Unlock()
}

func (h *testHandler) OnClose(_ Conn, err error) {
	h.closed.Add(1)
	h.closeErrs <- err
}

// conn returns the i-th opened connection.
func (h *testHandler) conn(i int) Conn {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conns[i]
}

// frameBodies splits body into three slices, copies (the request buffer dies when
// OnRequest returns).
func frameBodies(body []byte) [][]byte {
	b := bytes.Clone(body)
	a, c := len(b)/3, 2*len(b)/3
	return [][]byte{b[:a], b[a:c], b[c:]}
}

func (h *testHandler) OnRequest(c Conn, cmd *codec.RemotingCommand) {
	h.requests.Add(1)
	resp := codec.NewResponse(cmd, codec.ResponseSuccess, "")
	if n, ok := cmd.ExtFields["n"]; ok {
		resp.SetExt("n", n)
	}
	switch codec.RequestCode(cmd.Code) {
	case codeEcho:
		resp.Body = cmd.Body
		_ = c.WriteCommand(resp)
	case codeClose:
		resp.Body = cmd.Body
		_ = c.WriteCommand(resp)
		_ = c.Close()
	case codeEchoAsync:
		resp.Body = bytes.Clone(cmd.Body)
		h.async.Go(func() { _ = c.WriteCommand(resp) })
	case codeFrame:
		h.writeFrame(c, resp, frameBodies(cmd.Body))
	case codeFrameAsync:
		bodies := frameBodies(cmd.Body)
		h.async.Go(func() { h.writeFrame(c, resp, bodies) })
	case codeNoReply:
	default:
		_ = c.WriteCommand(codec.NewResponse(cmd, codec.ResponseRequestCodeNotSupported, "unknown"))
	}
}

func (h *testHandler) writeFrame(c Conn, resp *codec.RemotingCommand, bodies [][]byte) {
	resp.Body = bytes.Join(bodies, nil) // only for the length word
	header, err := resp.AppendFrameHeader(nil)
	if err != nil {
		panic(err)
	}
	_ = c.WriteFrame(header, bodies, func() { h.releases.Add(1) })
}

// startServer starts a server for engine with the test handler and stops it at cleanup.
func startServer(t *testing.T, engine string, h Handler, mutate func(*Config)) Server {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Name = t.Name()
	cfg.Engine = engine
	cfg.Addr = "127.0.0.1:0"
	cfg.EventLoops = 2
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := NewServer(cfg, h, testLogger())
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		require.NoError(t, s.Stop(ctx))
		if th, ok := h.(*testHandler); ok {
			th.async.Wait()
		}
	})
	return s
}

// rawClient is a remotingtest.Conn (raw writes, frames as they come) plus the echo round
// trips these tests check.
type rawClient struct {
	*remotingtest.Conn
	t *testing.T
}

// connected starts a server of engine with h (mutate as for startServer), dials it and makes one
// round trip, so that the server has opened the connection (OnOpen has run): the client's end and
// the server's.
func connected(t *testing.T, engine string, h *testHandler, mutate func(*Config)) (rawClient, Conn) {
	t.Helper()
	rc := dialRaw(t, startServer(t, engine, h, mutate).Addr())
	rc.roundTrip(codeEcho, 1, nil)
	return rc, h.conn(0)
}

func dialRaw(t *testing.T, addr net.Addr) rawClient {
	t.Helper()
	return rawClient{Conn: remotingtest.Dial(t, addr.String()), t: t}
}

func request(code codec.RequestCode, opaque int32, body []byte) *codec.RemotingCommand {
	cmd := codec.NewRequest(code, map[string]string{"n": strconv.Itoa(int(opaque))}, body)
	cmd.Opaque = opaque
	return cmd
}

func frameOf(t *testing.T, cmd *codec.RemotingCommand) []byte {
	t.Helper()
	b, err := cmd.AppendFrame(nil)
	require.NoError(t, err)
	return b
}

// roundTrip sends an echo request and checks the reply.
func (r rawClient) roundTrip(code codec.RequestCode, opaque int32, body []byte) {
	r.t.Helper()
	r.Send(request(code, opaque, body))
	resp := r.Next()
	require.True(r.t, resp.IsResponse())
	require.Equal(r.t, opaque, resp.Opaque)
	require.Equal(r.t, int32(codec.ResponseSuccess), resp.Code)
	requireBody(r.t, body, resp.Body)
}

// nextCloseErr waits for the next OnClose.
func (h *testHandler) nextCloseErr(t *testing.T) error {
	t.Helper()
	select {
	case err := <-h.closeErrs:
		return err
	case <-time.After(waitTimeout):
		t.Fatal("no OnClose")
		return nil
	}
}

func payload(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// dialRawErr dials once and reports whether the server still accepts.
func dialRawErr(addr net.Addr) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", addr.String(), time.Second)
	if err == nil {
		_ = nc.Close()
	}
	return nc, err
}

func prometheusRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

// metricValue sums the named metric over its series: counters' and gauges' values, histograms'
// sample counts.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// requireBody compares bodies byte for byte (nil and empty are the same on the wire) and
// reports the first difference instead of dumping megabytes.
func requireBody(t *testing.T, want, got []byte) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	t.Fatalf("body differs: want %d bytes, got %d, first difference at offset %d", len(want), len(got), i)
}
