package netio

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/round"
)

// connCore is the engine-independent half of a connection and the Conn handed to handlers:
// identity, the caller's context value, the outbound queue and the table of pending calls.
// The engine half (gnetConn, stdConn) reads frames and plays the flusher: the one party that
// takes queued batches and writes them to the socket.
//
// Flushing protocol. A writer appends under mu. If the flusher is already committed to
// flushing this connection soon — it is inside a read pass (flushing) or has been kicked and
// not yet run (kicked) — the writer is done. Otherwise the writer kicks the engine once
// (engine.kick: gnet wakes the loop, std signals the writer goroutine) and sets kicked. The
// flusher swaps the queue out under mu (clearing both flags), writes it without the lock,
// then releases the batch. So a write never waits for the socket and never takes a lock that
// the socket holds, and a burst of writes costs one wake-up and one system call.
//
// Rounds (gnet only). A writer that completes a batch of waiters (the group commit's syncer answering
// the sends its sync made durable) writes through a round (WriteFrameIn): a frame that would kick the
// loop is queued and the connection deferred to the round's end instead, once per round. At the end
// (EndRound) the connection's queue goes to the socket from the writer's goroutine, under mu, when the
// loop has nothing of it in hand — no pass running, no kick outstanding, no write of its own under way
// (loopWriting), nothing left in gnet's outbound buffer by its last flush (directOK). Else, or for
// what the socket does not take, the loop is kicked as usual. So a sync round's answers cost each
// connection one system call and no wake-up of its loop, where every loop they touched was woken (a
// task, an eventfd write, a sleeping thread woken). The loop clears directOK whenever it leaves bytes in
// gnet's buffer and takes mu to begin and end its writes, so the two never write at once; gnet calls
// OnClose (markClosed) before it closes the socket, so a direct write never meets a reused descriptor.
type connCore struct {
	id     uint64
	remote netip.AddrPort
	local  netip.AddrPort
	engine connEngine
	direct directWriter // the engine's direct write, nil where there is none (std)
	limits *connLimits
	log    *slog.Logger
	met    *metrics

	lastActiveNanos atomic.Int64 // unix nanos of the last frame in or batch out (coarse)
	largeSinceNanos atomic.Int64 // unix nanos (coarse) a large frame being read was admitted; 0: none
	// handlerSinceNanos is when (coarse unix nanos) the handler call running for this connection
	// began, 0 when none runs: the sweep finds the oldest (Server.Stalled).
	handlerSinceNanos atomic.Int64
	// passStart is when the read pass being handled began (gnet: the read that brought its frames), zero
	// where the engine does not say (std); written and read only on the connection's event loop.
	passStart      time.Time
	closeRequested atomic.Bool  // Close was called: stop dispatching further frames
	directWrites   atomic.Int64 // direct writes that took bytes (tests read it)
	userCtx        atomic.Pointer[ctxBox]
	nextOpaque     atomic.Int32

	mu struct {
		sync.Mutex
		out         *outbound // the batch writers append to
		flushing    bool      // the flusher is inside a pass and will flush before leaving it
		kicked      bool      // a kick is outstanding: the flusher will run
		closing     bool      // Close requested: the flusher closes after writing out
		closed      bool      // closed: no more writes or calls
		closeReason error     // why we closed it ourselves, reported to OnClose
		calls       map[int32]*call
		// loopWriting: the loop has taken a batch and is writing it (takeBatch to endLoopWrite);
		// directOK: its last flush left nothing in gnet's buffer. See "Rounds" above.
		loopWriting bool
		directOK    bool
		inRound     bool      // deferred to a round's end, which has not run yet
		roundSpare  *outbound // swapped in for a queue written whole by a direct write
	}
	// spare is the batch being written (or the empty one waiting to swap in). It belongs to
	// the flusher: the gnet loop, or whoever holds stdConn.flushMu.
	spare *outbound
}

// connEngine is what connCore needs from its engine.
type connEngine interface {
	// reserveKick is asked, under the connection's mutex, before a kick is promised; false
	// refuses the write (the gnet server is stopping and may no longer wake its loops).
	reserveKick() bool
	// unreserveKick gives back a reservation no kick will use (a round's end that wrote the
	// queue itself, or found the loop on it).
	unreserveKick()
	// kick makes the flusher run soon. Called without the mutex, after a successful
	// reserveKick, at most once per outstanding kick.
	kick() error
	// abort closes the socket now, dropping what is queued, for a connection that cannot be
	// closed gracefully: its peer does not read, so a flusher may be stuck writing to it.
	abort()
}

// directWriter is an engine that can write on the writer's goroutine (gnetConn): it writes the
// vectors to the socket without blocking and returns how many bytes it took.
type directWriter interface {
	writeDirect(iov [][]byte) (int, error)
}

// connLimits are the per-connection limits shared by every connection of a server or client.
type connLimits struct {
	maxOutboundBytes int
	maxPendingCalls  int
}

type ctxBox struct{ v any }

// call is one request awaiting its response. Whoever removes it from the pending table
// (response, timeout, cancellation, connection close) completes it, so it completes once.
type call struct {
	opaque int32
	ch     chan callResult // Invoke: buffered 1
	cb     func(*codec.RemotingCommand, error)
	timer  *time.Timer // InvokeAsync timeout
}

type callResult struct {
	cmd *codec.RemotingCommand
	err error
}

func (c *call) complete(cmd *codec.RemotingCommand, err error) {
	if c.timer != nil {
		c.timer.Stop()
	}
	if c.cb != nil {
		c.cb(cmd, err)
		return
	}
	c.ch <- callResult{cmd, err}
}

func (c *connCore) init(id uint64, remote, local netip.AddrPort, engine connEngine, limits *connLimits, log *slog.Logger, met *metrics, now time.Time) {
	c.id, c.remote, c.local, c.engine, c.limits, c.log, c.met = id, remote, local, engine, limits, log, met
	c.direct, _ = engine.(directWriter)
	c.mu.out = &outbound{}
	c.spare = &outbound{}
	c.lastActiveNanos.Store(now.UnixNano())
}

// ID implements Conn.
func (c *connCore) ID() uint64 { return c.id }

// RemoteAddr implements Conn.
func (c *connCore) RemoteAddr() netip.AddrPort { return c.remote }

// PassStarted implements PassClock.
func (c *connCore) PassStarted() time.Time { return c.passStart }

// LocalAddr implements Conn.
func (c *connCore) LocalAddr() netip.AddrPort { return c.local }

// SetContext implements Conn.
func (c *connCore) SetContext(v any) { c.userCtx.Store(&ctxBox{v}) }

// Context implements Conn.
func (c *connCore) Context() any {
	if b := c.userCtx.Load(); b != nil {
		return b.v
	}
	return nil
}

// lockForWrite takes mu for appending to the queue. On success mu is held and kick says
// whether the caller must call c.engine.kick after unlocking; on error mu is released.
func (c *connCore) lockForWrite() (kick bool, err error) { return c.lockForWriteIn(nil) }

// lockForWriteIn is lockForWrite for a write made in round rd (nil: none): where a kick would be
// needed, the connection is deferred to the round's end instead (see "Rounds").
func (c *connCore) lockForWriteIn(rd *round.Round) (kick bool, err error) {
	c.mu.Lock()
	if c.mu.closed || c.mu.closing {
		c.mu.Unlock()
		return false, ErrConnClosed
	}
	if c.mu.flushing || c.mu.kicked {
		return false, nil
	}
	if rd != nil && c.direct != nil {
		if !c.mu.inRound {
			// The round's end kicks the loop or writes itself: either way it holds the wake-up's
			// place in the gate, so that Stop waits for it as for a kick.
			if !c.engine.reserveKick() {
				c.mu.Unlock()
				return false, ErrServerStopped
			}
			c.mu.inRound = true
			rd.Defer(c)
		}
		return false, nil
	}
	if !c.engine.reserveKick() {
		c.mu.Unlock()
		return false, ErrServerStopped
	}
	c.mu.kicked = true
	return true, nil
}

// unlockAfterWrite releases mu and kicks the flusher if lockForWrite said so.
func (c *connCore) unlockAfterWrite(kick bool) error {
	c.mu.Unlock()
	if kick {
		return c.engine.kick()
	}
	return nil
}

// WriteCommand implements Conn.
func (c *connCore) WriteCommand(cmd *codec.RemotingCommand) error {
	kick, err := c.lockForWrite()
	if err != nil {
		return err
	}
	out := c.mu.out
	bufLen, segs, bytes, frames := out.mark()
	overflow := false
	if err = out.appendCommand(cmd); err == nil && out.bytes > c.limits.maxOutboundBytes {
		out.truncate(bufLen, segs, bytes, frames)
		err, overflow = c.overflowLocked(), true
	}
	// Even a failed append keeps the promised kick: the flusher must run to clear kicked.
	if kerr := c.unlockAfterWrite(kick); err == nil {
		err = kerr
	}
	if overflow {
		c.engine.abort()
	}
	return err
}

// WriteFrame implements Conn.
func (c *connCore) WriteFrame(header []byte, bodies [][]byte, release func()) error {
	return c.WriteFrameIn(nil, header, bodies, release)
}

// WriteFrameIn implements RoundWriter.
func (c *connCore) WriteFrameIn(rd *round.Round, header []byte, bodies [][]byte, release func()) error {
	kick, err := c.lockForWriteIn(rd)
	if err != nil {
		if release != nil {
			release()
		}
		return err
	}
	out := c.mu.out
	size := len(header)
	for _, b := range bodies {
		size += len(b)
	}
	if out.bytes+size > c.limits.maxOutboundBytes {
		// Closing: the promised kick (or the round's end, which kicks a closing connection) runs
		// the pass that closes it.
		err = c.overflowLocked()
		_ = c.unlockAfterWrite(kick)
		if release != nil {
			release()
		}
		c.engine.abort()
		return err
	}
	out.appendFrame(header, bodies, release)
	return c.unlockAfterWrite(kick)
}

// EndRound implements round.Ender: the end of the round the connection was deferred to. What is
// queued goes to the socket from here when the loop has nothing of the connection in hand, else (or
// the rest the socket did not take) through the loop, kicked now with the place in the gate the
// deferral reserved.
func (c *connCore) EndRound() {
	c.mu.Lock()
	c.mu.inRound = false
	if c.mu.closed || c.mu.flushing || c.mu.kicked || c.mu.out.empty() {
		c.mu.Unlock() // gone, or the loop will write it (its pass, its kick)
		c.engine.unreserveKick()
		return
	}
	if out := c.mu.out; !c.mu.closing && c.mu.directOK && !c.mu.loopWriting {
		if iov := out.vectors(); len(iov) <= iovMax {
			n, _ := c.direct.writeDirect(iov) // a failed write is the loop's to meet: it closes the connection
			if n > 0 {
				c.directWrites.Add(1)
				c.met.roundWrites.Inc()
			}
			if n == out.bytes {
				// Written whole: the queue's releases run outside mu (user code), the spare takes
				// its place meanwhile.
				spare := c.mu.roundSpare
				if spare == nil {
					spare = &outbound{}
				}
				c.mu.out, c.mu.roundSpare = spare, nil
				c.mu.Unlock()
				c.engine.unreserveKick()
				if out.frames > 0 {
					c.met.framesOut.Add(float64(out.frames))
				}
				out.done()
				c.mu.Lock()
				if c.mu.roundSpare == nil {
					c.mu.roundSpare = out
				}
				c.mu.Unlock()
				return
			}
			// The rest goes through the loop, which may leave it in gnet's buffer: until a flush
			// finds that empty, no direct write.
			out.consume(n)
			c.mu.directOK = false
		}
	}
	c.mu.kicked = true
	_ = c.unlockAfterWrite(true)
}

// endLoopWrite ends the loop's write of a batch (gnet's flush): buffered says whether gnet kept
// bytes of it for later, which forbids direct writes until a flush finds its buffer empty.
func (c *connCore) endLoopWrite(buffered bool) {
	c.mu.Lock()
	c.mu.loopWriting = false
	c.mu.directOK = !buffered
	c.mu.Unlock()
}

// overflowLocked marks the connection for closing because the peer does not read; the
// caller then aborts it (engine.abort) after unlocking. Caller holds mu.
func (c *connCore) overflowLocked() error {
	err := fmt.Errorf("%w: more than %d bytes queued for %v", ErrOutboundFull, c.limits.maxOutboundBytes, c.remote)
	if !c.mu.closing {
		c.mu.closing = true
		c.mu.closeReason = err
		c.closeRequested.Store(true)
	}
	return err
}

// Close implements Conn: mark closing and make the flusher run, which writes what is queued
// and then closes the socket.
func (c *connCore) Close() error {
	return c.closeWithReason(nil)
}

func (c *connCore) closeWithReason(reason error) error {
	c.mu.Lock()
	if c.mu.closed || c.mu.closing {
		c.mu.Unlock()
		return nil
	}
	c.mu.closing = true
	c.mu.closeReason = reason
	c.closeRequested.Store(true)
	kick := false
	if !c.mu.flushing && !c.mu.kicked && c.engine.reserveKick() {
		c.mu.kicked = true
		kick = true
	}
	// Without a kick (server stopping) the engine's stop closes the connection anyway.
	return c.unlockAfterWrite(kick)
}

// beginPass marks the start of a read pass by the flusher: writes during it are taken by
// the takeBatch that ends the pass and need no kick.
func (c *connCore) beginPass() {
	c.mu.Lock()
	c.mu.flushing = true
	c.mu.Unlock()
}

// takeBatch swaps the queued batch out for the flusher, clears the flushing and kicked
// flags, and reports whether the connection should be closed once the batch is written.
// The flusher writes the returned batch, then passes it to returnBatch.
func (c *connCore) takeBatch() (batch *outbound, closing bool) {
	c.mu.Lock()
	batch = c.mu.out
	c.mu.out = c.spare
	c.mu.flushing = false
	c.mu.kicked = false
	c.mu.loopWriting = c.direct != nil // until endLoopWrite
	closing = c.mu.closing
	c.mu.Unlock()
	c.spare = nil
	return batch, closing
}

// returnBatch releases a written (or failed) batch and keeps it as the next spare.
func (c *connCore) returnBatch(batch *outbound) {
	if batch.frames > 0 {
		c.met.framesOut.Add(float64(batch.frames))
	}
	batch.done()
	c.spare = batch
}

// markClosed is called once by the engine when the connection is gone: later writes and
// calls fail, queued writes are released, pending calls fail with ErrConnClosed. It returns
// the error to report to OnClose: our own reason if we recorded one, nil after a plain
// Close, else ioErr (the peer or the socket ended it).
func (c *connCore) markClosed(ioErr error) error {
	c.mu.Lock()
	c.mu.closed = true
	c.closeRequested.Store(true)
	reason, closing := c.mu.closeReason, c.mu.closing
	out := c.mu.out
	c.mu.out = &outbound{} // released below, outside the lock (release callbacks are user code)
	calls := c.mu.calls
	c.mu.calls = nil
	c.mu.Unlock()
	out.done()
	for _, cl := range calls {
		cl.complete(nil, fmt.Errorf("%w: %v: call opaque %d", ErrConnClosed, c.remote, cl.opaque))
	}
	switch {
	case reason != nil:
		return reason
	case closing:
		return nil // a plain local Close; the socket error it caused says nothing
	default:
		return ioErr
	}
}

// setCloseReason records why the engine is about to close the connection, unless a reason
// is already recorded.
func (c *connCore) setCloseReason(reason error) {
	c.mu.Lock()
	if c.mu.closeReason == nil {
		c.mu.closeReason = reason
	}
	c.mu.Unlock()
}

// malformed handles a frame that cannot be cut or decoded: the stream cannot be
// resynchronised, so the connection closes. Counted, logged once per connection with the
// peer and the reason, and reported to OnClose. Returns the wrapped error.
func (c *connCore) malformed(err error) error {
	err = fmt.Errorf("%w: %w", ErrMalformedFrame, err)
	c.met.frameErrors.Inc()
	c.log.Info("netio: closing connection: malformed frame", "remote", c.remote.String(), "err", err)
	c.setCloseReason(err)
	return err
}

// touch records activity for the idle sweep.
func (c *connCore) touch(nowNanos int64) { c.lastActiveNanos.Store(nowNanos) }

// addCall registers cl under a fresh opaque, which it writes into cmd. With a timeout, the
// call's timer is armed inside the same critical section, so the timer (which takes mu to
// remove the call) always finds it registered, and whoever completes the call sees cl.timer.
func (c *connCore) addCall(cmd *codec.RemotingCommand, cl *call, timeout time.Duration) error {
	cmd.Opaque = c.nextOpaque.Add(1)
	cmd.Flag &^= codec.FlagResponse | codec.FlagOneway
	cl.opaque = cmd.Opaque
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed || c.mu.closing {
		return fmt.Errorf("%w: %v", ErrConnClosed, c.remote)
	}
	if len(c.mu.calls) >= c.limits.maxPendingCalls {
		return fmt.Errorf("%w: %d calls to %v await responses", ErrTooManyPending, len(c.mu.calls), c.remote)
	}
	if c.mu.calls == nil {
		c.mu.calls = make(map[int32]*call)
	}
	c.mu.calls[cmd.Opaque] = cl
	if timeout > 0 {
		opaque, code := cl.opaque, cmd.Code
		cl.timer = time.AfterFunc(timeout, func() {
			if cl := c.removeCall(opaque); cl != nil {
				cl.complete(nil, fmt.Errorf("%w: request code %d opaque %d to %v after %v", ErrTimeout, code, opaque, c.remote, timeout))
			}
		})
	}
	return nil
}

// removeCall takes the call with this opaque out of the table; nil if it is gone (someone
// else completes it).
func (c *connCore) removeCall(opaque int32) *call {
	c.mu.Lock()
	cl := c.mu.calls[opaque]
	if cl != nil {
		delete(c.mu.calls, opaque)
	}
	c.mu.Unlock()
	return cl
}

// Invoke implements Conn.
func (c *connCore) Invoke(ctx context.Context, cmd *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	cl := &call{ch: make(chan callResult, 1)}
	if err := c.addCall(cmd, cl, 0); err != nil {
		return nil, err
	}
	if err := c.WriteCommand(cmd); err != nil {
		if c.removeCall(cl.opaque) == nil {
			r := <-cl.ch // completed concurrently (connection closed)
			return r.cmd, r.err
		}
		return nil, err
	}
	select {
	case r := <-cl.ch:
		return r.cmd, r.err
	case <-ctx.Done():
		if c.removeCall(cl.opaque) == nil {
			r := <-cl.ch // completed concurrently: its result is on the way
			return r.cmd, r.err
		}
		return nil, fmt.Errorf("%w: request code %d opaque %d to %v: %w", ErrTimeout, cmd.Code, cl.opaque, c.remote, ctx.Err())
	}
}

// InvokeAsync implements Conn.
func (c *connCore) InvokeAsync(cmd *codec.RemotingCommand, timeout time.Duration, cb func(*codec.RemotingCommand, error)) error {
	if cb == nil || timeout <= 0 {
		return fmt.Errorf("%w: InvokeAsync needs a callback and a timeout > 0 (got %v)", ErrConfig, timeout)
	}
	cl := &call{cb: cb}
	if err := c.addCall(cmd, cl, timeout); err != nil {
		return err
	}
	if err := c.WriteCommand(cmd); err != nil {
		if c.removeCall(cl.opaque) != nil {
			cl.timer.Stop()
			return err
		}
		// Completed concurrently (closed or timed out): cb has its error.
	}
	return nil
}

// InvokeOneway implements Conn.
func (c *connCore) InvokeOneway(cmd *codec.RemotingCommand) error {
	cmd.Opaque = c.nextOpaque.Add(1)
	cmd.Flag = cmd.Flag&^codec.FlagResponse | codec.FlagOneway
	return c.WriteCommand(cmd)
}

// deliverResponse completes the pending call matching resp's opaque with a copy of resp
// (resp itself is a view into the read buffer). Unmatched responses are dropped and counted.
func (c *connCore) deliverResponse(resp *codec.RemotingCommand) {
	cl := c.removeCall(resp.Opaque)
	if cl == nil {
		c.met.unmatched.Inc()
		return
	}
	cl.complete(resp.Clone(), nil)
}

// overLimit handles a frame whose header has a field over its cap (codec.ErrHeaderLimit):
// the frame is sound, so the connection stays open. A request is answered SYSTEM_ERROR with
// the reason, as RocketMQ answers a request whose header it cannot decode (unless it is
// oneway); a response fails the call it answers. cmd holds the decoded fixed fields.
func (c *connCore) overLimit(cmd *codec.RemotingCommand, err error) {
	c.met.overLimit.Inc()
	c.log.Debug("netio: frame over a header limit", "remote", c.remote.String(), "code", cmd.Code, "err", err)
	if cmd.IsResponse() {
		if cl := c.removeCall(cmd.Opaque); cl != nil {
			cl.complete(nil, fmt.Errorf("netio: response from %v: %w", c.remote, err))
		}
		return
	}
	if cmd.IsOneway() {
		return
	}
	_ = c.WriteCommand(codec.NewResponse(cmd, codec.ResponseSystemError, err.Error()))
}

// addrPortOf converts a net.Addr to a netip.AddrPort with IPv4-mapped addresses unmapped.
func addrPortOf(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	default:
		if a != nil {
			ap, _ = netip.ParseAddrPort(a.String())
		}
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// open reports whether the connection still accepts writes and calls.
func (c *connCore) open() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.mu.closed && !c.mu.closing
}

// queuedBytes is what writers have queued and no flusher has taken yet.
func (c *connCore) queuedBytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.out.bytes
}
