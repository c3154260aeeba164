package netio

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

func newTestClient(t *testing.T, mutate func(*ClientConfig)) *Client {
	t.Helper()
	cfg := DefaultClientConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	cl, err := NewClient(cfg, testLogger())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cl.Close()) })
	return cl
}

func TestClientConfigValidate(t *testing.T) {
	for field, mutate := range map[string]func(*ClientConfig){
		"DialTimeout":      func(c *ClientConfig) { c.DialTimeout = 0 },
		"ConnsPerAddr":     func(c *ClientConfig) { c.ConnsPerAddr = 0 },
		"MaxFrameBytes":    func(c *ClientConfig) { c.MaxFrameBytes = 1 },
		"MaxOutboundBytes": func(c *ClientConfig) { c.MaxOutboundBytes = -1 },
		"MaxPendingCalls":  func(c *ClientConfig) { c.MaxPendingCalls = 0 },
	} {
		cfg := DefaultClientConfig()
		mutate(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, ErrConfig)
		require.Contains(t, err.Error(), field)
	}
}

// TestClientConcurrentInvokes: many goroutines share the client's connections; every
// response reaches the call that sent its request.
func TestClientConcurrentInvokes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		s := startServer(t, engine, newTestHandler(), nil)
		cl := newTestClient(t, func(c *ClientConfig) { c.ConnsPerAddr = 3 })
		addr := s.Addr().String()
		const goroutines, calls = 32, 50
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Go(func() {
				for i := range calls {
					code := codeEcho
					if i%3 == 0 {
						code = codeEchoAsync
					}
					body := []byte(fmt.Sprintf("g%d-i%d", g, i))
					cmd := codec.NewRequest(code, map[string]string{"n": strconv.Itoa(i)}, body)
					resp, err := cl.Invoke(context.Background(), addr, cmd)
					if err == nil && (string(resp.Body) != string(body) || resp.Opaque != cmd.Opaque) {
						err = fmt.Errorf("g%d i%d: got body %q opaque %d, want %q opaque %d", g, i, resp.Body, resp.Opaque, body, cmd.Opaque)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, 3, s.ConnectionCount())
	})
}

// TestClientPendingFailOnClose: calls waiting on a connection that the server drops fail at
// once with ErrConnClosed, long before their own deadline; the next call dials again.
func TestClientPendingFailOnClose(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		h := newTestHandler()
		s := startServer(t, engine, h, nil)
		cl := newTestClient(t, nil)
		addr := s.Addr().String()

		const n = 5
		errs := make(chan error, n+1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		for range n {
			go func() {
				_, err := cl.Invoke(ctx, addr, codec.NewRequest(codeNoReply, nil, nil))
				errs <- err
			}()
		}
		require.NoError(t, cl.InvokeAsync(addr, codec.NewRequest(codeNoReply, nil, nil), time.Hour,
			func(_ *codec.RemotingCommand, err error) { errs <- err }))
		testutil.Eventually(t, "every request handled", func() bool { return h.requests.Load() == n+1 })
		require.NoError(t, h.conn(0).Close())
		for range n + 1 {
			select {
			case err := <-errs:
				require.ErrorIs(t, err, ErrConnClosed)
			case <-time.After(waitTimeout):
				t.Fatal("pending call not failed after the connection closed")
			}
		}
		resp, err := cl.Invoke(context.Background(), addr, codec.NewRequest(codeEcho, nil, []byte("again")))
		require.NoError(t, err)
		require.Equal(t, []byte("again"), resp.Body)
		require.Equal(t, int32(2), h.opened.Load())
	})
}

func TestClientTimeouts(t *testing.T) {
	s := startServer(t, EngineGnet, newTestHandler(), nil)
	cl := newTestClient(t, func(c *ClientConfig) { c.MaxPendingCalls = 2 })
	addr := s.Addr().String()
	// Connect first, without a deadline to speak of: a 20 ms deadline must time the call out, not a dial
	// slowed down by a loaded machine (that is a dial error, as TestClientDialError checks).
	_, err := cl.Invoke(context.Background(), addr, codec.NewRequest(codeEcho, nil, nil))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = cl.Invoke(ctx, addr, codec.NewRequest(codeNoReply, nil, nil))
	require.ErrorIs(t, err, ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	done := make(chan error, 1)
	require.NoError(t, cl.InvokeAsync(addr, codec.NewRequest(codeNoReply, nil, nil), 20*time.Millisecond,
		func(resp *codec.RemotingCommand, err error) {
			require.Nil(t, resp)
			done <- err
		}))
	require.ErrorIs(t, <-done, ErrTimeout)

	// The pending table is bounded: two calls wait, the third is refused at once.
	for range 2 {
		require.NoError(t, cl.InvokeAsync(addr, codec.NewRequest(codeNoReply, nil, nil), time.Hour,
			func(*codec.RemotingCommand, error) {}))
	}
	err = cl.InvokeAsync(addr, codec.NewRequest(codeNoReply, nil, nil), time.Hour, func(*codec.RemotingCommand, error) {
		t.Error("callback of a refused call")
	})
	require.ErrorIs(t, err, ErrTooManyPending)
	require.NoError(t, cl.InvokeOneway(context.Background(), addr, codec.NewRequest(codeNoReply, nil, nil)))
}

func TestClientClose(t *testing.T) {
	s := startServer(t, EngineGnet, newTestHandler(), nil)
	cl, err := NewClient(DefaultClientConfig(), testLogger())
	require.NoError(t, err)
	addr := s.Addr().String()
	errs := make(chan error, 1)
	go func() {
		_, err := cl.Invoke(context.Background(), addr, codec.NewRequest(codeNoReply, nil, nil))
		errs <- err
	}()
	testutil.Eventually(t, "one open connection", func() bool { return s.ConnectionCount() == 1 })
	// The call may still be on its way to the pending table: Close fails it either way.
	require.NoError(t, cl.Close())
	require.Error(t, <-errs)
	_, err = cl.Invoke(context.Background(), addr, codec.NewRequest(codeEcho, nil, nil))
	require.ErrorIs(t, err, ErrClientClosed)
	require.NoError(t, cl.Close())
}

func TestClientDialError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	cl := newTestClient(t, nil)
	_, err = cl.Invoke(context.Background(), addr, codec.NewRequest(codeEcho, nil, nil))
	require.ErrorContains(t, err, "dial")
}

// TestClientHandlesPeerRequests: the server calls back over a connection the client
// dialled; the client's Handler answers. Without a Handler the client answers
// REQUEST_CODE_NOT_SUPPORTED.
func TestClientHandlesPeerRequests(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		h := newTestHandler()
		s := startServer(t, engine, h, nil)
		addr := s.Addr().String()

		peer := newTestHandler()
		cl := newTestClient(t, func(c *ClientConfig) { c.Handler = peer })
		_, err := cl.Invoke(context.Background(), addr, codec.NewRequest(codeEcho, nil, nil))
		require.NoError(t, err)
		resp, err := h.conn(0).Invoke(context.Background(), codec.NewRequest(codeEcho, nil, []byte("to the client")))
		require.NoError(t, err)
		require.Equal(t, []byte("to the client"), resp.Body)
		require.Equal(t, int32(1), peer.opened.Load())

		bare := newTestClient(t, nil)
		_, err = bare.Invoke(context.Background(), addr, codec.NewRequest(codeEcho, nil, nil))
		require.NoError(t, err)
		resp, err = h.conn(1).Invoke(context.Background(), codec.NewRequest(codec.RequestCheckTransactionState, nil, nil))
		require.NoError(t, err)
		require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), resp.Code)

		require.NoError(t, cl.Close())
		require.Equal(t, int32(1), peer.closed.Load())
		peer.async.Wait()
	})
}
