package netio

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/codec"
)

// gnetServer is the event-loop engine. gnet owns the sockets and calls us on each
// connection's loop (OnOpen, OnTraffic, OnClose) and on its ticker goroutine (OnTick).
//
// One read pass (OnTraffic) cuts every complete frame out of the connection's inbound
// buffer, dispatches each one while its bytes are still valid, discards it, and at the end
// writes every frame queued for that connection meanwhile in one write: responses to a
// pipelined burst leave in one system call. Writes from other goroutines wake the loop with
// gnet.Conn.Wake, which runs a pass with nothing to read.
//
// Stopping: gnet runs a task queued after its loops exited never, so a wake-up must not be
// queued once the engine begins to shut down (its callback would never run, and its
// eventfd may be closed). writeGate counts wake-ups in flight; Stop closes the gate, waits
// for the count to reach zero, and only then stops the engine.
type gnetServer struct {
	gnet.BuiltinEventEngine

	cfg      Config
	h        Handler
	passEnd  PassEnder // h, when it wants pass ends
	log      *slog.Logger
	met      *metrics
	table    *connTable
	limits   connLimits
	gate     writeGate
	budget   *requestBudget
	readStop *readStop
	// waitingInboundMax is the most bytes gnet held for a connection whose next frame waited
	// for the budget (tests: it shows whether read stop works).
	waitingInboundMax atomic.Int64

	stopping  atomic.Bool
	startOnce sync.Once
	stopOnce  sync.Once
	stopErr   error
	started   chan struct{} // closed by the first OnTick: the loops run
	runDone   chan struct{} // closed when gnet.Run has returned
	runErr    error         // gnet.Run's result, read after runDone
	bootErr   error         // set in OnBoot, read after runDone or started
	engine    gnet.Engine   // set in OnBoot, read after started
	addr      net.Addr      // set in OnBoot, read after started
	wakeDone  gnet.AsyncCallback
}

// gnetConn is the per-connection state kept in gnet's connection context. Every field but
// core is the loop's: touched only in gnet callbacks of this connection.
type gnetConn struct {
	core connCore
	gc   gnet.Conn
	fd   int // gc.Fd(), for direct writes from other goroutines
	srv  *gnetServer
	cmd  codec.RemotingCommand // decode target, reused for every frame (its ExtFields map too)

	// A frame larger than LargeFrameBytes is charged to the request budget before it is
	// read (budget.go) and read into a buffer of its own rather than left to pile up in
	// gnet's inbound ring: a ring grown for a big frame goes back to gnet's pool at its peak
	// size when emptied, and the next connection with a partial frame keeps it.
	large     frameBuf     // the large frame being read; large.b nil: none
	largeFill int          // bytes of large received so far
	held      int64        // budget bytes charged for large; 0: none
	waiter    budgetWaiter // the next large frame's claim while it waits
	waiting   bool         // waiter is queued: the frame is not read yet
	paused    bool         // read events are off (readStop) and must be turned back on
}

func newGnetServer(cfg Config, h Handler, logger *slog.Logger, m *metrics) *gnetServer {
	s := &gnetServer{
		cfg:     cfg,
		h:       h,
		log:     logger,
		met:     m,
		table:   newConnTable(cfg.MaxConnections),
		limits:  connLimits{maxOutboundBytes: cfg.MaxOutboundBytes, maxPendingCalls: cfg.MaxPendingCalls},
		started: make(chan struct{}),
		runDone: make(chan struct{}),
	}
	s.passEnd, _ = h.(PassEnder)
	s.budget = budgetFor(&cfg, m)
	s.readStop = newReadStop(logger)
	s.gate.init()
	s.wakeDone = func(gnet.Conn, error) error {
		s.gate.exit()
		return nil
	}
	return s
}

// Start implements Server.
func (s *gnetServer) Start() error {
	opts := []gnet.Option{
		gnet.WithMulticore(true),
		gnet.WithNumEventLoop(s.cfg.eventLoops()),
		gnet.WithReusePort(s.cfg.ReusePort),
		// SO_REUSEADDR: a restarted broker must be able to bind its port while the
		// connections the old one closed sit in TIME_WAIT (Go's net.Listen, used by the
		// std engine, sets it by default; gnet does not).
		gnet.WithReuseAddr(true),
		gnet.WithTicker(true),
		gnet.WithTCPNoDelay(gnet.TCPNoDelay),
		gnet.WithLogger(gnetLogger{s.log}),
	}
	if s.cfg.TCPKeepAlive > 0 {
		opts = append(opts, gnet.WithTCPKeepAlive(s.cfg.TCPKeepAlive))
	}
	s.checkFileLimit()
	go func() {
		s.runErr = gnet.Run(s, "tcp://"+s.cfg.Addr, opts...)
		select {
		case <-s.started:
			if !s.stopping.Load() {
				// gnet ends the whole engine when accept fails for a reason other than a
				// transient one (EMFILE included): say so loudly, nothing else will.
				s.log.Error("netio: gnet engine stopped on its own; no connections are served", "err", s.runErr)
			}
		default:
		}
		close(s.runDone)
	}()
	select {
	case <-s.started:
		s.table.serving.Store(true)
		s.log.Info("netio: listening", "addr", s.addr.String(), "eventLoops", s.cfg.eventLoops())
		return nil
	case <-s.runDone:
		err := s.runErr
		if err == nil {
			err = s.bootErr
		}
		if err == nil {
			err = errors.New("engine stopped during start")
		}
		return fmt.Errorf("netio: start gnet on %s: %w", s.cfg.Addr, err)
	}
}

// checkFileLimit warns when MaxConnections does not fit under the open-file limit: on the
// gnet engine an accept failing with EMFILE stops the acceptor, and with it the engine.
func (s *gnetServer) checkFileLimit() {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	const reserveFiles = 256 // store files, client connections, listeners
	if s.cfg.MaxConnections == 0 || uint64(s.cfg.MaxConnections)+reserveFiles > lim.Cur {
		s.log.Warn("netio: MaxConnections does not fit the open-file limit; running out of files stops the gnet acceptor",
			"maxConnections", s.cfg.MaxConnections, "fileLimit", lim.Cur, "reserve", reserveFiles)
	}
}

// Addr implements Server.
func (s *gnetServer) Addr() net.Addr {
	select {
	case <-s.started:
		return s.addr
	default:
		return nil
	}
}

// ConnectionCount implements Server.
func (s *gnetServer) ConnectionCount() int { return s.table.count() }

// Stalled implements Server. A request handler runs on its connection's event loop: while one
// is stuck, so are that loop's other connections.
func (s *gnetServer) Stalled() time.Duration {
	return s.table.stalled(time.Now(), sweepInterval(s.cfg.IdleTimeout, s.cfg.LargeFrameTimeout))
}

// Stop implements Server. Later calls wait for the first and return its result.
func (s *gnetServer) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *gnetServer) stop(ctx context.Context) error {
	select {
	case <-s.started:
	default:
		return nil // never started (or failed to)
	}
	s.stopping.Store(true)
	s.table.serving.Store(false)
	s.gate.close()
	var err error
	select {
	case <-s.gate.drained:
	case <-ctx.Done():
		err = ctx.Err()
		s.log.Warn("netio: stop: gave up waiting for queued writes", "inFlight", s.gate.inFlight(), "err", err)
	}
	// Engine.Stop polls for the end every 500 ms; gnet.Run returning is the earlier signal,
	// so run it aside and cancel it once Run is back.
	stopCtx, cancel := context.WithCancel(context.Background())
	stopDone := make(chan struct{})
	go func() {
		_ = s.engine.Stop(stopCtx)
		close(stopDone)
	}()
	<-s.runDone
	cancel()
	<-stopDone
	if n := closeStrays(s.addr); n > 0 {
		s.log.Info("netio: closed connections accepted while the event loops stopped", "connections", n)
	}
	s.log.Info("netio: stopped", "addr", s.addr.String())
	return err
}

// OnBoot records the engine and the bound address (the real port when Addr had port 0).
func (s *gnetServer) OnBoot(eng gnet.Engine) gnet.Action {
	s.engine = eng
	addr, err := boundAddr(eng)
	if err != nil {
		s.bootErr = err
		return gnet.Shutdown
	}
	s.addr = addr
	return gnet.None
}

// boundAddr asks the kernel for the listener's address through a duplicate of its fd.
func boundAddr(eng gnet.Engine) (net.Addr, error) {
	fd, err := eng.Dup()
	if err != nil {
		return nil, fmt.Errorf("dup listener: %w", err)
	}
	f := os.NewFile(uintptr(fd), "gnet-listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("listener address: %w", err)
	}
	addr := ln.Addr()
	if err := ln.Close(); err != nil {
		return nil, fmt.Errorf("close listener duplicate: %w", err)
	}
	return addr, nil
}

// OnTick marks the engine started, advances the coarse clock and closes idle connections.
// It runs on gnet's ticker goroutine, not on a loop.
func (s *gnetServer) OnTick() (time.Duration, gnet.Action) {
	s.startOnce.Do(func() { close(s.started) })
	idle, slow := s.table.sweep(time.Now(), s.cfg.IdleTimeout, s.cfg.LargeFrameTimeout)
	for _, c := range idle {
		s.met.idleClosed.Inc()
		s.log.Debug("netio: closing idle connection", "remote", c.remote.String(), "idleTimeout", s.cfg.IdleTimeout)
		_ = c.closeWithReason(fmt.Errorf("%w: no traffic for %v", ErrIdleTimeout, s.cfg.IdleTimeout))
	}
	for _, c := range slow {
		s.log.Info("netio: closing connection: large frame not received in time", "remote", c.remote.String(),
			"largeFrameTimeout", s.cfg.LargeFrameTimeout)
		_ = c.closeWithReason(fmt.Errorf("%w: not received within %v of its admission", ErrLargeFrameTimeout, s.cfg.LargeFrameTimeout))
	}
	return sweepInterval(s.cfg.IdleTimeout, s.cfg.LargeFrameTimeout), gnet.None
}

// OnOpen admits the connection (or refuses it: stopping, or MaxConnections reached).
func (s *gnetServer) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	remote := addrPortOf(gc.RemoteAddr())
	if s.stopping.Load() {
		s.met.refused.Inc()
		return nil, gnet.Close
	}
	g := &gnetConn{gc: gc, fd: gc.Fd(), srv: s}
	g.waiter.notify = g.budgetGranted
	g.core.init(s.table.newID(), remote, localAddrOf(gc), g, &s.limits, s.log, s.met, time.Unix(0, s.table.nowNanos.Load()))
	if !s.table.tryAdd(&g.core) {
		s.met.refused.Inc()
		s.log.Debug("netio: connection refused: MaxConnections open", "remote", remote.String(), "maxConnections", s.cfg.MaxConnections)
		return nil, gnet.Close
	}
	gc.SetContext(g)
	s.met.connections.Inc()
	g.core.handlerSinceNanos.Store(s.table.nowNanos.Load()) // a stuck OnOpen holds the loop too
	s.h.OnOpen(&g.core)
	g.core.handlerSinceNanos.Store(0)
	return nil, gnet.None
}

// localAddrOf returns the connection's own address. gnet reports the listener's address,
// which is useless for a wildcard listener, so ask the kernel.
func localAddrOf(gc gnet.Conn) netip.AddrPort {
	if sa, err := unix.Getsockname(gc.Fd()); err == nil {
		switch sa := sa.(type) {
		case *unix.SockaddrInet4:
			return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
		case *unix.SockaddrInet6:
			return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(sa.Port))
		}
	}
	return addrPortOf(gc.LocalAddr())
}

// OnClose fails the connection's calls, releases its queue and tells the handler.
func (s *gnetServer) OnClose(gc gnet.Conn, err error) gnet.Action {
	g, _ := gc.Context().(*gnetConn)
	if g == nil {
		return gnet.None // refused in OnOpen
	}
	if s.stopping.Load() {
		g.core.setCloseReason(ErrServerStopped)
	} else if errors.Is(err, unix.ECONNRESET) || errors.Is(err, unix.EPIPE) {
		s.drainAfterReset(g)
	}
	if g.waiting && s.budget.cancel(&g.waiter) {
		s.budget.release(g.waiter.bytes)
	}
	g.waiting = false
	s.releaseLarge(g)
	reason := g.core.markClosed(err)
	s.table.remove(&g.core)
	s.met.connections.Dec()
	s.h.OnClose(&g.core, reason)
	return gnet.None
}

// frameLength is the length of the frame that head, its first bytes (up to 8), begins, as codec.CutFrame
// checks them; 0 when head is too short to tell.
func frameLength(head []byte, maxFrameBytes int) (int, error) {
	n, err := codec.CutFrame(head, maxFrameBytes)
	if err != nil || n > 0 || len(head) < 8 {
		return n, err
	}
	// CutFrame saw only the first 8 bytes; with those valid, the length word tells the frame's size,
	// and whether it is all buffered.
	return int(binary.BigEndian.Uint32(head)) + 4, nil
}

// drainAfterResetMax bounds what drainAfterReset reads from a connection gnet is closing.
const drainAfterResetMax = 1 << 20

// drainAfterReset handles the complete requests a peer sent before it went away, when gnet
// closes the connection because writing to it failed (the peer reset it). A client that
// sends requests without waiting for their answers and then closes, as the Go client's
// Shutdown does with its consumer offsets (UPDATE_CONSUMER_OFFSET, without the oneway flag),
// resets the connection when answers to its earlier requests arrive unread; writing the next
// answers fails, and gnet closes at once, with requests the peer sent before its close still
// unread in the socket: they were lost. It runs in OnClose, before gnet closes the
// descriptor: the frames gnet has buffered and what the socket still holds (at most
// drainAfterResetMax bytes, frames up to LargeFrameBytes) are handled as in a read pass; their
// answers go nowhere.
func (s *gnetServer) drainAfterReset(g *gnetConn) {
	c := &g.core
	if c.closeRequested.Load() || g.large.b != nil {
		return
	}
	var pending []byte
	if n := g.gc.InboundBuffered(); n > 0 {
		b, _ := g.gc.Peek(n)
		pending = append(pending, b...)
		_, _ = g.gc.Discard(n)
	}
	buf := make([]byte, 64<<10)
	for len(pending) < drainAfterResetMax {
		n, err := unix.Read(g.gc.Fd(), buf)
		if n <= 0 || err != nil {
			break
		}
		pending = append(pending, buf[:n]...)
	}
	for len(pending) >= 8 && !c.closeRequested.Load() {
		frameLen, err := frameLength(pending[:8], s.cfg.MaxFrameBytes)
		if err != nil {
			return
		}
		if frameLen > LargeFrameBytes || frameLen > len(pending) {
			return
		}
		if s.handleFrame(g, pending[4:frameLen]) != nil {
			return
		}
		pending = pending[frameLen:]
	}
}

// OnTraffic runs one read pass: dispatch every complete frame, then write what was queued.
func (s *gnetServer) OnTraffic(gc gnet.Conn) gnet.Action {
	g, _ := gc.Context().(*gnetConn)
	if g == nil {
		return gnet.Close
	}
	c := &g.core
	c.touch(s.table.nowNanos.Load())
	start := time.Now()
	c.passStart = start
	c.beginPass()
	frames, err := s.readFrames(g)
	if frames > 0 {
		s.met.framesIn.Add(float64(frames))
		if s.passEnd != nil {
			s.passEnd.OnPassEnd(c)
		}
	}
	closing := s.flush(g) || err != nil
	s.met.readPass.Observe(time.Since(start).Seconds())
	if closing {
		return gnet.Close
	}
	return gnet.None
}

// readFrames dispatches the complete frames in gc's inbound buffer. A frame up to
// LargeFrameBytes is handed on as a Peek view (no copy unless it wraps around gnet's ring
// buffer) valid until its Discard, which follows the handler's return. A larger one is
// first charged to the request budget, then copied out of gnet's buffers into its own as
// its bytes arrive (readLarge). An error means the connection must close; its reason is
// already recorded.
func (s *gnetServer) readFrames(g *gnetConn) (frames int, err error) {
	gc, c := g.gc, &g.core
	for !c.closeRequested.Load() {
		if g.large.b != nil {
			done, err := s.readLarge(g)
			if done {
				frames++
			}
			if err != nil || !done {
				return frames, err
			}
			continue
		}
		buffered := gc.InboundBuffered()
		if buffered < 4 {
			return frames, nil
		}
		head, _ := gc.Peek(min(buffered, 8))
		frameLen, err := frameLength(head, s.cfg.MaxFrameBytes)
		if err != nil {
			return frames, c.malformed(err)
		}
		if frameLen == 0 {
			return frames, nil
		}
		if frameLen > LargeFrameBytes {
			headerLen := int(binary.BigEndian.Uint32(head[4:]) & (1<<24 - 1))
			if !s.admitLarge(g, frameLen, headerLen) {
				return frames, nil // waiting for the budget; reading is paused
			}
			g.large, g.largeFill = newFrameBuf(frameLen), 0
			continue
		}
		if buffered < frameLen {
			return frames, nil
		}
		frame, err := gc.Peek(frameLen)
		if err != nil { // cannot happen: the bytes are buffered
			err = fmt.Errorf("netio: peek %d of %d buffered bytes: %w", frameLen, buffered, err)
			c.setCloseReason(err)
			return frames, err
		}
		if err := s.handleFrame(g, frame[4:]); err != nil {
			return frames, err
		}
		frames++
		if _, err := gc.Discard(frameLen); err != nil { // cannot happen either
			err = fmt.Errorf("netio: discard %d bytes: %w", frameLen, err)
			c.setCloseReason(err)
			return frames, err
		}
	}
	return frames, nil
}

// readLarge moves what gnet has buffered of the large frame into its own buffer and, once
// it is complete, dispatches it, drops it and gives its budget back. done reports the
// frame handled.
func (s *gnetServer) readLarge(g *gnetConn) (done bool, err error) {
	// Read copies from gnet's ring and its current read buffer and consumes what it copied,
	// so nothing of this frame is left for gnet to append to the ring.
	n, _ := g.gc.Read(g.large.b[g.largeFill:])
	g.largeFill += n
	if g.largeFill < len(g.large.b) {
		return false, nil
	}
	err = s.handleFrame(g, g.large.b[4:])
	s.releaseLarge(g)
	return err == nil, err
}

// handleFrame decodes one frame's payload into g.cmd and hands it to the handler or to the
// pending call it answers; the command is recycled once they return. A frame over a header
// cap is answered (codec.ErrHeaderLimit: the frame is sound); an error means close.
func (s *gnetServer) handleFrame(g *gnetConn, payload []byte) error {
	c := &g.core
	defer g.cmd.Reset()
	if err := codec.DecodeRequestInto(&g.cmd, payload); err != nil {
		if errors.Is(err, codec.ErrHeaderLimit) {
			c.overLimit(&g.cmd, err)
			return nil
		}
		return c.malformed(err)
	}
	if g.cmd.IsResponse() {
		c.deliverResponse(&g.cmd)
	} else {
		c.handlerSinceNanos.Store(s.table.nowNanos.Load())
		s.h.OnRequest(c, &g.cmd)
		c.handlerSinceNanos.Store(0)
	}
	return nil
}

// admitLarge charges the large frame at the head of g's input to the request budget and
// reports whether it may be read. If it must wait, g's read events are turned off until
// the budget grants it (budgetGranted wakes the loop, and the next pass lands here again).
func (s *gnetServer) admitLarge(g *gnetConn, frameLen, headerLen int) bool {
	if g.waiting {
		if !g.waiter.granted.Load() {
			// Still waiting, yet gnet read (it turns read events back on when its outbound
			// buffer drains): turn them off again.
			g.paused = s.readStop.pause(g.gc) || g.paused
			s.noteWaitingInbound(g.gc.InboundBuffered())
			return false
		}
		g.waiting = false
	} else {
		g.waiter.bytes = s.budget.frameCost(frameLen, headerLen)
		if !s.budget.acquire(&g.waiter) {
			g.waiting = true
			g.paused = s.readStop.pause(g.gc)
			s.noteWaitingInbound(g.gc.InboundBuffered())
			return false
		}
	}
	if g.paused {
		s.readStop.resume(g.gc)
		g.paused = false
	}
	g.held = g.waiter.bytes
	g.core.largeSinceNanos.Store(s.table.nowNanos.Load())
	return true
}

func (s *gnetServer) noteWaitingInbound(n int) {
	for m := s.waitingInboundMax.Load(); int64(n) > m && !s.waitingInboundMax.CompareAndSwap(m, int64(n)); {
		m = s.waitingInboundMax.Load()
	}
}

// releaseLarge frees g's large frame, if any, and gives back the budget charged for it.
func (s *gnetServer) releaseLarge(g *gnetConn) {
	if g.large.b != nil {
		g.large.free()
		g.largeFill = 0
	}
	if g.held > 0 {
		s.budget.release(g.held)
		g.held = 0
		g.core.largeSinceNanos.Store(0)
	}
}

// budgetGranted is g.waiter's notify: the budget now holds g's next frame, so run a pass on
// g's loop to read it. Called from whichever goroutine freed the bytes.
func (g *gnetConn) budgetGranted() {
	if g.reserveKick() {
		if err := g.kick(); err != nil {
			g.srv.log.Warn("netio: cannot wake a connection whose frame the request budget admitted", "err", err)
		}
	}
	// With the gate closed the server is stopping: every connection is being closed, and
	// OnClose gives the grant back.
}

// iovMax is the kernel's limit on vectors per writev (UIO_MAXIOV).
const iovMax = 1024

// flush writes the connection's queued batch on its loop. gnet writes what the socket takes
// and copies the rest into its own outbound buffer, so once Write/Writev return the batch's
// memory is free (release callbacks run). It reports whether the loop should close the
// connection: Close was requested, a write failed (gnet has then closed it already), or the
// peer left more than MaxOutboundBytes unread.
func (s *gnetServer) flush(g *gnetConn) (closeNow bool) {
	batch, closing := g.core.takeBatch()
	var err error
	if iov := batch.vectors(); len(iov) == 1 {
		_, err = g.gc.Write(iov[0])
	} else {
		for len(iov) > 0 && err == nil {
			n := min(len(iov), iovMax)
			_, err = g.gc.Writev(iov[:n])
			iov = iov[n:]
		}
	}
	if batch.bytes > 0 {
		g.core.touch(s.table.nowNanos.Load())
	}
	g.core.returnBatch(batch)
	if err != nil {
		g.core.endLoopWrite(true)
		return true
	}
	n := g.gc.OutboundBuffered()
	g.core.endLoopWrite(n > 0)
	if n > s.cfg.MaxOutboundBytes {
		err := fmt.Errorf("%w: %d bytes unread by %v", ErrOutboundFull, n, g.core.remote)
		s.log.Info("netio: closing connection: peer does not read", "remote", g.core.remote.String(), "err", err)
		g.core.setCloseReason(err)
		return true
	}
	return closing
}

// writeDirect implements directWriter: one writev on the connection's non-blocking socket, from
// the goroutine that ends a round (connCore.EndRound, holding the connection's mutex; the loop
// writes only as "Rounds" at connCore describes).
func (g *gnetConn) writeDirect(iov [][]byte) (int, error) {
	n, err := unix.Writev(g.fd, iov)
	if n > 0 {
		g.core.touch(g.srv.table.nowNanos.Load())
	}
	return max(n, 0), err
}

// reserveKick implements connEngine: a wake-up may be queued only while the gate is open.
func (g *gnetConn) reserveKick() bool { return g.srv.gate.enter() }

// unreserveKick implements connEngine.
func (g *gnetConn) unreserveKick() { g.srv.gate.exit() }

// kick implements connEngine: run a pass on the connection's loop. The gate is left by the
// wake-up's callback, which gnet runs on the loop (also for a connection closed meanwhile).
func (g *gnetConn) kick() error {
	if err := g.gc.Wake(g.srv.wakeDone); err != nil {
		// The task is queued even when signalling the loop failed; its callback still
		// leaves the gate if the loop runs it.
		return fmt.Errorf("netio: wake event loop: %w", err)
	}
	return nil
}

// abort implements connEngine. A gnet loop never blocks on a socket, so the pass that the
// outstanding kick (or the current pass) runs writes what fits the limit and closes.
func (g *gnetConn) abort() {}

// writeGate counts wake-ups queued on event loops so that Stop can wait for them before
// stopping the engine. The count and a closed bit share one atomic word: enter fails once
// the bit is set, and drained is closed when the count falls to zero after that.
type writeGate struct {
	state   atomic.Int64
	once    sync.Once
	drained chan struct{}
}

const gateClosedBit = 1 << 62

func (g *writeGate) init() { g.drained = make(chan struct{}) }

func (g *writeGate) enter() bool {
	if g.state.Add(1)&gateClosedBit != 0 {
		g.exit()
		return false
	}
	return true
}

func (g *writeGate) exit() {
	if g.state.Add(-1) == gateClosedBit {
		g.once.Do(func() { close(g.drained) })
	}
}

func (g *writeGate) close() {
	if g.state.Or(gateClosedBit)|gateClosedBit == gateClosedBit {
		g.once.Do(func() { close(g.drained) })
	}
}

func (g *writeGate) inFlight() int64 { return g.state.Load() &^ gateClosedBit }

// gnetLogger routes gnet's own log lines to the server's slog logger. gnet's Info lines are
// start-up chatter, so they go to Debug; its Fatalf is only a loud error here (a library
// does not exit the process).
type gnetLogger struct{ l *slog.Logger }

func (g gnetLogger) logf(level slog.Level, format string, args []any) {
	if g.l.Enabled(context.Background(), level) {
		g.l.Log(context.Background(), level, "gnet: "+fmt.Sprintf(format, args...))
	}
}

func (g gnetLogger) Debugf(format string, args ...any) { g.logf(slog.LevelDebug, format, args) }
func (g gnetLogger) Infof(format string, args ...any)  { g.logf(slog.LevelDebug, format, args) }
func (g gnetLogger) Warnf(format string, args ...any)  { g.logf(slog.LevelWarn, format, args) }
func (g gnetLogger) Errorf(format string, args ...any) { g.logf(slog.LevelError, format, args) }
func (g gnetLogger) Fatalf(format string, args ...any) { g.logf(slog.LevelError, format, args) }
