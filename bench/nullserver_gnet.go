package bench

import (
	"context"
	"errors"
	"fmt"
	"net/netip"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/codec"
)

// The null server on gnet's event loops (NullEngineGnet): epoll, one loop per CPU, each
// connection's inbound bytes in gnet's buffer. It answers exactly as the goroutine engine
// does (NullServer.answer), one pass over what a read brought and one write, so that the
// two engines' cost per message can be compared in process (BenchmarkNullServerLoopback).

// Null server engines (NullServerConfig.Engine). Which is cheaper is not settled on the
// shared 2-vCPU machine: in process over loopback (BenchmarkNullServerLoopback, client
// included) the goroutine engine took less time per message, while under mqbench produce
// at 4 × 16 gnet spent a little less server CPU per message. The goroutine engine is the
// default; `mqbench null-server --engine gnet` is there to compare them in real rounds.
const (
	NullEngineGoroutine = "goroutine" // a goroutine per connection, Go's netpoller
	NullEngineGnet      = "gnet"      // gnet event loops
)

// nullGnet is the gnet event handler of a null server.
type nullGnet struct {
	gnet.BuiltinEventEngine
	s       *NullServer
	engine  gnet.Engine
	addr    netip.AddrPort
	bootErr error
	started chan struct{}
	ready   chan struct{} // closed once s is set: connections wait for it in OnOpen
	runDone chan struct{}
	runErr  error
}

// nullGnetConn is one connection's answers buffer; owned by its event loop.
type nullGnetConn struct{ out []byte }

// startNullGnet runs the engine on cfg.Listen and waits for it to be bound.
func startNullGnet(cfg NullServerConfig) (*nullGnet, error) {
	h := &nullGnet{started: make(chan struct{}), ready: make(chan struct{}), runDone: make(chan struct{})}
	go func() {
		h.runErr = gnet.Run(h, "tcp://"+cfg.Listen, gnet.WithMulticore(true), gnet.WithReuseAddr(true),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay), gnet.WithLogger(gnetQuiet{}))
		close(h.runDone)
	}()
	select {
	case <-h.started:
		return h, nil
	case <-h.runDone:
		return nil, fmt.Errorf("bench: null server (gnet) on %s: %w", cfg.Listen, errors.Join(h.runErr, h.bootErr, errors.New("engine stopped during start")))
	}
}

// OnBoot records the engine and the bound address.
func (h *nullGnet) OnBoot(eng gnet.Engine) gnet.Action {
	h.engine = eng
	fd, err := eng.Dup()
	if err != nil {
		h.bootErr = err
		return gnet.Shutdown
	}
	defer unix.Close(fd)
	sa, err := unix.Getsockname(fd)
	if err != nil {
		h.bootErr = err
		return gnet.Shutdown
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		h.addr = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		h.addr = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
	default:
		h.bootErr = fmt.Errorf("listener address %T", sa)
		return gnet.Shutdown
	}
	close(h.started)
	return gnet.None
}

// OnOpen gives the connection its answers buffer (once the server is set up: a client
// quicker than StartNullServer waits here).
func (h *nullGnet) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	<-h.ready
	if h.s == nil {
		return nil, gnet.Close // stopping before it was set up
	}
	c.SetContext(&nullGnetConn{out: make([]byte, 0, nullReadBytes)})
	return nil, gnet.None
}

// OnTraffic answers every complete frame buffered, in one write; a malformed frame closes
// the connection after the answers before it.
func (h *nullGnet) OnTraffic(c gnet.Conn) gnet.Action {
	st, _ := c.Context().(*nullGnetConn)
	if st == nil {
		return gnet.Close
	}
	buf, _ := c.Peek(-1) // everything buffered: a view valid until Discard
	off := 0
	var ferr error
	for {
		size, err := codec.CutFrame(buf[off:], h.s.cfg.MaxFrameBytes)
		if err != nil {
			ferr = err
			break
		}
		if size == 0 {
			break
		}
		if st.out, err = h.s.answer(st.out, buf[off+4:off+size]); err != nil {
			ferr = err
			break
		}
		off += size
	}
	if off > 0 {
		_, _ = c.Discard(off) // Discard(0) would drop everything buffered
	}
	if len(st.out) > 0 {
		if _, err := c.Write(st.out); err != nil {
			ferr = err
		}
		st.out = st.out[:0]
	}
	if ferr != nil {
		h.s.log.Warn("null server: closing a connection after a malformed frame", "remote", c.RemoteAddr().String(), "err", ferr)
		return gnet.Close
	}
	return gnet.None
}

// stop stops the engine and waits for gnet.Run to return.
func (h *nullGnet) stop() error {
	select {
	case <-h.ready:
	default:
		close(h.ready) // never set up: let any connection in OnOpen go on to be closed
	}
	// Engine.Stop polls for the end every 500 ms; Run returning is the earlier signal.
	ctx, cancel := context.WithCancel(context.Background())
	stopDone := make(chan struct{})
	go func() {
		_ = h.engine.Stop(ctx)
		close(stopDone)
	}()
	<-h.runDone
	cancel()
	<-stopDone
	return h.runErr
}

// gnetQuiet drops gnet's own log lines (the null server logs what matters itself).
type gnetQuiet struct{}

func (gnetQuiet) Debugf(string, ...any) {}
func (gnetQuiet) Infof(string, ...any)  {}
func (gnetQuiet) Warnf(string, ...any)  {}
func (gnetQuiet) Errorf(string, ...any) {}
func (gnetQuiet) Fatalf(string, ...any) {}
