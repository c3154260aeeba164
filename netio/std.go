package netio

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// stdServer is the goroutine-per-connection engine: an accept loop, and per connection a
// reader goroutine (stdConn.serve) plus a writer goroutine for writes from elsewhere. It is
// what most Go servers do, kept beside the gnet engine for side-by-side benchmarks and as a
// fallback.
type stdServer struct {
	cfg    Config
	h      Handler
	log    *slog.Logger
	met    *metrics
	table  *connTable
	limits connLimits

	budget *requestBudget

	ln         net.Listener
	stopping   atomic.Bool
	stopOnce   sync.Once
	stopErr    error
	stopCh     chan struct{} // closed by Stop: ends the accept loop's back-off and the sweeper
	acceptDone chan struct{}
	sweepDone  chan struct{}
	conns      sync.WaitGroup // one per connection goroutine
	// tlsCtx ends when Stop begins: it cuts short TLS handshakes in progress (tls.go).
	tlsCtx    context.Context
	tlsCancel context.CancelFunc
}

func newStdServer(cfg Config, h Handler, logger *slog.Logger, m *metrics) *stdServer {
	tlsCtx, tlsCancel := context.WithCancel(context.Background())
	return &stdServer{
		tlsCtx:     tlsCtx,
		tlsCancel:  tlsCancel,
		cfg:        cfg,
		h:          h,
		log:        logger,
		met:        m,
		table:      newConnTable(cfg.MaxConnections),
		limits:     connLimits{maxOutboundBytes: cfg.MaxOutboundBytes, maxPendingCalls: cfg.MaxPendingCalls},
		budget:     budgetFor(&cfg, m),
		stopCh:     make(chan struct{}),
		acceptDone: make(chan struct{}),
		sweepDone:  make(chan struct{}),
	}
}

// Start implements Server.
func (s *stdServer) Start() error {
	lc := net.ListenConfig{KeepAlive: -1} // off unless asked, like the gnet engine
	if s.cfg.TCPKeepAlive > 0 {
		lc.KeepAlive = s.cfg.TCPKeepAlive
	}
	ln, err := lc.Listen(context.Background(), "tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("netio: listen on %s: %w", s.cfg.Addr, err)
	}
	s.ln = ln
	s.table.serving.Store(true)
	go s.acceptLoop()
	go s.sweepLoop()
	s.log.Info("netio: listening", "addr", ln.Addr().String())
	return nil
}

// Addr implements Server.
func (s *stdServer) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

// ConnectionCount implements Server.
func (s *stdServer) ConnectionCount() int { return s.table.count() }

// Stalled implements Server. A stuck handler holds only its own connection here (one goroutine
// each), but it is stuck all the same.
func (s *stdServer) Stalled() time.Duration {
	return s.table.stalled(time.Now(), sweepInterval(s.cfg.IdleTimeout, s.cfg.LargeFrameTimeout))
}

func (s *stdServer) acceptLoop() {
	defer close(s.acceptDone)
	var backoff time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.stopping.Load() {
				return
			}
			// Out of file descriptors and the like: back off and retry instead of
			// giving up on accepting for good (net/http does the same).
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.log.Error("netio: accept failed", "err", err, "retryIn", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
				continue
			case <-s.stopCh:
				t.Stop()
				return
			}
		}
		backoff = 0
		sc := newStdConn(nc, s.h, s.table.newID(), &s.limits, s.cfg.MaxFrameBytes, s.log, s.met, &s.table.nowNanos)
		sc.budget = s.budget
		if s.stopping.Load() || !s.table.tryAdd(&sc.core) {
			s.met.refused.Inc()
			s.log.Debug("netio: connection refused", "remote", sc.core.remote.String(), "maxConnections", s.cfg.MaxConnections)
			_ = nc.Close()
			continue
		}
		s.met.connections.Inc()
		if s.cfg.tlsEnabled() {
			sc.prepare = func() error {
				return sc.startTLS(s.tlsCtx, s.cfg.TLSMode, s.cfg.TLS, s.cfg.tlsHandshakeTimeout())
			}
		}
		sc.onClosed = func(*stdConn) {
			s.table.remove(&sc.core)
			s.met.connections.Dec()
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			sc.serve()
		}()
	}
}

// sweepLoop advances the coarse clock and closes idle connections. An idle connection is
// aborted (socket closed at once): it has nothing queued, and a writer blocked on a peer that
// does not read would never get to a graceful close.
func (s *stdServer) sweepLoop() {
	defer close(s.sweepDone)
	t := time.NewTicker(sweepInterval(s.cfg.IdleTimeout, s.cfg.LargeFrameTimeout))
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			idle, slow := s.table.sweep(now, s.cfg.IdleTimeout, s.cfg.LargeFrameTimeout)
			for _, c := range idle {
				s.met.idleClosed.Inc()
				s.log.Debug("netio: closing idle connection", "remote", c.remote.String(), "idleTimeout", s.cfg.IdleTimeout)
				c.setCloseReason(fmt.Errorf("%w: no traffic for %v", ErrIdleTimeout, s.cfg.IdleTimeout))
				c.engine.abort()
			}
			for _, c := range slow {
				s.log.Info("netio: closing connection: large frame not received in time", "remote", c.remote.String(),
					"largeFrameTimeout", s.cfg.LargeFrameTimeout)
				c.setCloseReason(fmt.Errorf("%w: not received within %v of its admission", ErrLargeFrameTimeout, s.cfg.LargeFrameTimeout))
				c.engine.abort()
			}
		case <-s.stopCh:
			return
		}
	}
}

// Stop implements Server: close the listener, ask every connection to close after writing
// what it has queued, and wait; when ctx ends first, abort the sockets. Later calls wait for
// the first and return its result.
func (s *stdServer) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *stdServer) stop(ctx context.Context) error {
	if s.ln == nil {
		return nil
	}
	s.stopping.Store(true)
	s.table.serving.Store(false)
	s.tlsCancel()
	close(s.stopCh)
	closeErr := s.ln.Close()
	<-s.acceptDone
	<-s.sweepDone
	for _, c := range s.table.all() {
		_ = c.closeWithReason(ErrServerStopped)
	}
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.log.Warn("netio: stop: aborting connections that did not drain", "err", err)
		for _, c := range s.table.all() {
			c.setCloseReason(ErrServerStopped)
			c.engine.abort()
		}
		<-done
	}
	if closeErr != nil && err == nil {
		err = fmt.Errorf("netio: close listener: %w", closeErr)
	}
	s.log.Info("netio: stopped", "addr", s.ln.Addr().String())
	return err
}

// stdConn is one connection served by goroutines: serve reads frames and dispatches them,
// then flushes what the handler queued; writeLoop flushes what other goroutines queue. Used
// by the std server and by Client.
type stdConn struct {
	core connCore
	// raw is the socket; nc is what frames are written to and rd what they are read from.
	// Without TLS all three are the same conn. With TLS nc and rd are the *tls.Conn over raw
	// (in permissive mode a plain client keeps nc = raw, and rd replays the sniffed byte).
	// nc and rd are set before the connection's goroutines start (prepare); abort closes raw.
	raw           net.Conn
	nc            net.Conn
	rd            io.Reader
	prepare       func() error // nil: nothing to do before serving (no TLS)
	h             Handler      // nil: a Client without a handler answers requests "not supported"
	passEnd       PassEnder    // h, when it wants pass ends
	maxFrameBytes int
	clock         *atomic.Int64 // coarse clock for activity stamps; nil: not tracked
	onClosed      func(*stdConn)

	kickCh     chan struct{} // capacity 1: "there is something to flush"
	readerDone chan struct{} // closed when the reader has stopped: the writer exits
	// flushMu makes the reader and the writer goroutine take turns as the flusher; it owns
	// core.spare and keeps batches in order on the socket.
	flushMu sync.Mutex
	// peerGone (under flushMu): a write failed because the peer reset the connection. Answers are
	// dropped from then on, and the reader goes on handling what the peer sent before, until the
	// socket says it ended (see flush).
	peerGone bool
	cmd      codec.RemotingCommand // decode target, reused

	// The request budget (budget.go; nil for a Client's connections): the reader charges a
	// frame larger than LargeFrameBytes before reading it, waiting (and so not reading) until
	// it fits. Reader-owned except granted and stopWait.
	budget   *requestBudget
	held     int64         // charged for the frame being handled; 0: none
	large    frameBuf      // the large frame being handled
	waiter   budgetWaiter  // notify: a token on granted
	granted  chan struct{} // capacity 1
	stopWait chan struct{} // closed when the connection is closing: a waiting reader gives up
	stopOnce sync.Once
}

func newStdConn(nc net.Conn, h Handler, id uint64, limits *connLimits, maxFrameBytes int, log *slog.Logger, met *metrics, clock *atomic.Int64) *stdConn {
	sc := &stdConn{
		raw:           nc,
		nc:            nc,
		rd:            nc,
		h:             h,
		maxFrameBytes: maxFrameBytes,
		clock:         clock,
		kickCh:        make(chan struct{}, 1),
		readerDone:    make(chan struct{}),
		granted:       make(chan struct{}, 1),
		stopWait:      make(chan struct{}),
	}
	if tc, ok := nc.(*tls.Conn); ok { // a Client's TLS connection, handshake done
		sc.raw = tc.NetConn()
	}
	sc.passEnd, _ = h.(PassEnder)
	sc.waiter.notify = func() { sc.granted <- struct{}{} } // one token per queued wait
	sc.core.init(id, addrPortOf(nc.RemoteAddr()), addrPortOf(nc.LocalAddr()), sc, limits, log, met, time.Now())
	return sc
}

// reserveKick implements connEngine: the writer goroutine lives as long as the connection.
func (sc *stdConn) reserveKick() bool { return true }

// unreserveKick implements connEngine: std reserves nothing (and takes no part in rounds).
func (sc *stdConn) unreserveKick() {}

// kick implements connEngine.
func (sc *stdConn) kick() error {
	select {
	case sc.kickCh <- struct{}{}:
	default: // already signalled
	}
	return nil
}

// abort implements connEngine: closing the socket unblocks a writer stuck on a peer that
// does not read, and makes the reader tear the connection down.
func (sc *stdConn) abort() {
	sc.stopWaiting()
	_ = sc.raw.Close()
}

// stopWaiting ends a reader's wait for the request budget: the connection is closing.
func (sc *stdConn) stopWaiting() { sc.stopOnce.Do(func() { close(sc.stopWait) }) }

// serve runs the connection until it closes: OnOpen, the read loop, then teardown in an
// order that makes every queued write released and every pending call failed exactly once.
func (sc *stdConn) serve() {
	if sc.prepare != nil {
		if err := sc.prepare(); err != nil {
			// Never handed to the handler: no OnOpen, so no OnClose either.
			_ = sc.raw.Close()
			level := slog.LevelInfo
			if errors.Is(err, context.Canceled) {
				level = slog.LevelDebug // the server is stopping
			}
			sc.core.log.Log(context.Background(), level, "netio: closing connection: TLS handshake failed",
				"remote", sc.core.remote.String(), "err", err)
			sc.core.markClosed(err)
			if sc.onClosed != nil {
				sc.onClosed(sc)
			}
			return
		}
	}
	writerDone := make(chan struct{})
	go sc.writeLoop(writerDone)
	if sc.h != nil {
		sc.h.OnOpen(&sc.core)
	}
	err := sc.readLoop()
	if err == nil {
		// A local Close: write what is still queued before the socket goes (the writer
		// goroutine may not have run yet; flushMu orders us after it if it has).
		sc.flush()
	}
	_ = sc.nc.Close()
	close(sc.readerDone)
	<-writerDone
	reason := sc.core.markClosed(err)
	if sc.onClosed != nil {
		sc.onClosed(sc)
	}
	if sc.h != nil {
		sc.h.OnClose(&sc.core, reason)
	}
}

// readLoop reads and dispatches frames until the connection fails or is closed.
func (sc *stdConn) readLoop() error {
	fr := codec.NewFrameReader(sc.rd, sc.maxFrameBytes)
	if sc.budget != nil {
		fr.SetLargeFrameGate(LargeFrameBytes, sc.admitLarge)
		defer sc.releaseLarge() // a frame admitted, then cut short
	}
	c := &sc.core
	for !c.closeRequested.Load() {
		payload, err := fr.Next()
		if err != nil {
			if errors.Is(err, errStopWaiting) {
				return nil // closed while waiting for the budget; the reason is recorded
			}
			if isFramingError(err) {
				return c.malformed(err)
			}
			return err
		}
		if sc.clock != nil {
			c.touch(sc.clock.Load())
		}
		c.met.framesIn.Inc()
		closeNow, err := sc.handleFrame(payload)
		// The handler has returned: nothing refers to the frame any more.
		sc.cmd.Reset()
		sc.releaseLarge()
		if err != nil {
			return err
		}
		if closeNow {
			return nil
		}
	}
	return nil
}

// handleFrame decodes and dispatches one frame, then flushes what the handler queued.
// closeNow reports a local Close; an error means the connection must close.
func (sc *stdConn) handleFrame(payload []byte) (closeNow bool, err error) {
	c := &sc.core
	if err := codec.DecodeRequestInto(&sc.cmd, payload); err != nil {
		if !errors.Is(err, codec.ErrHeaderLimit) {
			return false, c.malformed(err)
		}
		c.beginPass()
		c.overLimit(&sc.cmd, err) // the frame is sound: answer it, keep the connection
		return sc.flush(), nil
	}
	if sc.cmd.IsResponse() {
		c.deliverResponse(&sc.cmd)
		return false, nil
	}
	c.beginPass()
	if sc.h != nil {
		if sc.clock != nil {
			c.handlerSinceNanos.Store(sc.clock.Load())
		}
		sc.h.OnRequest(c, &sc.cmd)
		if sc.passEnd != nil { // one frame is a pass here
			sc.passEnd.OnPassEnd(c)
		}
		c.handlerSinceNanos.Store(0)
	} else if !sc.cmd.IsOneway() {
		_ = c.WriteCommand(codec.NewResponse(&sc.cmd, codec.ResponseRequestCodeNotSupported,
			fmt.Sprintf(" request type %d not supported", sc.cmd.Code)))
	}
	return sc.flush(), nil
}

// errStopWaiting: the connection closed while its reader waited for the request budget.
var errStopWaiting = errors.New("netio: connection closed while its frame waited for the request budget")

// admitLarge is the FrameReader's gate: it charges the frame to the request budget, waiting
// (the connection reads nothing meanwhile, so TCP pushes back on the peer) until it fits or
// the connection closes.
func (sc *stdConn) admitLarge(frameBytes, headerBytes int) ([]byte, error) {
	sc.waiter.bytes = sc.budget.frameCost(frameBytes, headerBytes)
	if !sc.budget.acquire(&sc.waiter) {
		select {
		case <-sc.granted:
		case <-sc.stopWait:
			if sc.budget.cancel(&sc.waiter) {
				sc.budget.release(sc.waiter.bytes)
			}
			return nil, errStopWaiting
		}
	}
	sc.held = sc.waiter.bytes
	if sc.clock != nil {
		sc.core.largeSinceNanos.Store(sc.clock.Load())
	}
	sc.large = newFrameBuf(frameBytes)
	return sc.large.b, nil
}

// releaseLarge frees the large frame just handled (or cut short) and gives its budget back.
func (sc *stdConn) releaseLarge() {
	if sc.large.b != nil {
		sc.large.free()
	}
	if sc.held > 0 {
		sc.budget.release(sc.held)
		sc.held = 0
		sc.core.largeSinceNanos.Store(0)
	}
}

// isFramingError tells a broken stream (close, log) from an I/O error or end of stream.
func isFramingError(err error) bool {
	return errors.Is(err, codec.ErrFrameTooLarge) || errors.Is(err, codec.ErrFrameTooShort) ||
		errors.Is(err, codec.ErrHeaderLength) || errors.Is(err, codec.ErrSerializeType)
}

// writeLoop flushes on every kick until the reader stops.
func (sc *stdConn) writeLoop(done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-sc.kickCh:
			if sc.flush() {
				sc.stopWaiting()
				_ = sc.nc.Close() // the reader fails its next read (or wait) and tears down
			}
		case <-sc.readerDone:
			return
		}
	}
}

// flush writes the queued batch with one writev. It reports whether the connection is to
// be closed (Close requested, or the write failed).
func (sc *stdConn) flush() (closeNow bool) {
	sc.flushMu.Lock()
	defer sc.flushMu.Unlock()
	batch, closing := sc.core.takeBatch()
	var err error
	if iov := batch.vectors(); len(iov) > 0 && !sc.peerGone {
		bufs := net.Buffers(iov)
		_, err = bufs.WriteTo(sc.nc)
		if sc.clock != nil {
			sc.core.touch(sc.clock.Load())
		}
	}
	sc.core.returnBatch(batch)
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		// The peer reset the connection, and may have sent requests before it did without waiting
		// for their answers (the Go client's Shutdown sends its consumer offsets so, then closes):
		// the reader handles what it can still read, and the connection ends when reading does.
		sc.peerGone = true
		err = nil
	}
	return closing || err != nil
}
