// Package remotingtest is the remoting client of the tests: one connection that writes
// commands encoded by codec (RemotingCommand.AppendFrame), or any raw bytes a test wants to
// send, and cuts what comes back into frames with codec.CutFrame and codec.DecodeCommand.
// Tests that assert exact codes, remarks, opaques and bytes use it instead of the production
// client (netio.Client), which answers the peer's requests and retries and hides the
// connection.
//
// It reads only while a caller waits for a frame (Next, Await, Call, ExpectClosed): a test
// that stops asking stops reading, so the peer's writes back up as they would behind a
// client that does not read. Frames read while waiting for another one are kept in arrival
// order: Await takes the response to its opaque, Next the oldest frame of any kind. Several
// goroutines may wait at once (pipelined requests, a long-polling pull next to sends);
// whichever reads a frame hands it to the one it belongs to.
//
// Methods come in pairs. The plain ones (Write, Send, Request, Await, Call, Next,
// ExpectClosed) fail the test given to Dial with t.Fatalf, so call them on the test's
// goroutine; they wait up to Timeout. The Try ones return errors and take their own timeout,
// for other goroutines (load generators, attackers) and for a peer that may go away.
//
// Import graph: this package imports codec and internal/testutil only, never netio, so
// netio's own internal tests (package netio) can use it; codec's tests do not need it.
package remotingtest

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// Timeout bounds dialling, and each write and wait of the methods that fail the test.
const Timeout = testutil.WaitTimeout

// ErrTimeout: no frame (or close) arrived within the wait's timeout. The connection stays
// usable: a frame that arrives later is still read whole.
var ErrTimeout = errors.New("remotingtest: timed out waiting for the peer")

// readBufferBytes is the read buffer's first size; it doubles as frames need.
const readBufferBytes = 4 << 10

// Conn is one remoting connection. Safe for concurrent use.
type Conn struct {
	t      testing.TB // fails the plain methods; noTest for a Conn from Open
	nc     net.Conn
	opaque atomic.Int32 // the last opaque Request gave out

	wmu sync.Mutex // one write at a time

	rtoken chan struct{} // holds a token while a goroutine reads nc
	// Guarded by rtoken: buf[start:end] holds bytes read and not yet cut into a frame, and
	// pendingErr an error nc returned together with data, for the next read.
	buf        []byte
	start, end int
	pendingErr error

	mu      sync.Mutex
	frames  []*codec.RemotingCommand // read, not yet taken, oldest first
	readErr error                    // why reading ended for good (sticky; timeouts are not)
	arrived chan struct{}            // closed and replaced when frames or readErr change
}

// Dial connects to addr over TCP within Timeout, failing t if it cannot. The connection is
// closed when the test ends.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		t.Fatalf("remotingtest: dial %s: %v", addr, err)
	}
	return newConn(t, nc)
}

// DialTLS is Dial over TLS; the handshake is done when it returns.
func DialTLS(t testing.TB, addr string, cfg *tls.Config) *Conn {
	t.Helper()
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: Timeout}, Config: cfg}
	nc, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatalf("remotingtest: dial %s over TLS: %v", addr, err)
	}
	return newConn(t, nc)
}

// Open connects to addr over TCP within Timeout without a test to fail: only the Try methods
// work on the Conn it returns, and the caller closes it.
func Open(addr string) (*Conn, error) {
	nc, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		return nil, err
	}
	return newConn(noTest{}, nc), nil
}

func newConn(t testing.TB, nc net.Conn) *Conn {
	c := &Conn{t: t, nc: nc, rtoken: make(chan struct{}, 1), arrived: make(chan struct{})}
	if _, ok := t.(noTest); !ok {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c
}

// noTest stands in for the test of a Conn from Open: the plain methods panic there.
type noTest struct{ testing.TB }

func (noTest) Helper() {}

func (noTest) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("remotingtest: a Conn from Open has no test to fail (use the Try methods): "+format, args...))
}

// NetConn is the underlying connection, for what a test does to the socket itself (its
// addresses, SO_LINGER, a half-close).
func (c *Conn) NetConn() net.Conn { return c.nc }

// Close closes the connection; waiters return an error wrapping net.ErrClosed. Idempotent.
func (c *Conn) Close() error {
	err := c.nc.Close()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// TryWrite writes b as it is, with no deadline.
func (c *Conn) TryWrite(b []byte) error { return c.write(b, time.Time{}) }

// Write writes b as it is (anything: a partial frame, garbage) within Timeout.
func (c *Conn) Write(b []byte) {
	c.t.Helper()
	if err := c.write(b, time.Now().Add(Timeout)); err != nil {
		c.t.Fatalf("remotingtest: write %d bytes: %v", len(b), err)
	}
}

func (c *Conn) write(b []byte, deadline time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.nc.SetWriteDeadline(deadline); err != nil {
		return err
	}
	_, err := c.nc.Write(b)
	return err
}

// TrySend writes cmd's frame, with the opaque cmd has.
func (c *Conn) TrySend(cmd *codec.RemotingCommand) error {
	frame, err := cmd.AppendFrame(nil)
	if err != nil {
		return err
	}
	return c.TryWrite(frame)
}

// Send writes cmd's frame, with the opaque cmd has (Request gives it a fresh one).
func (c *Conn) Send(cmd *codec.RemotingCommand) {
	c.t.Helper()
	frame, err := cmd.AppendFrame(nil)
	if err != nil {
		c.t.Fatalf("remotingtest: encode request code %d: %v", cmd.Code, err)
	}
	c.Write(frame)
}

// TryRequest sets cmd.Opaque to a fresh opaque (1, 2, ... on this Conn), writes cmd and
// returns the opaque, for TryAwait. Once reading has ended (the peer closed the connection)
// it writes nothing and returns that error: no response could be read.
func (c *Conn) TryRequest(cmd *codec.RemotingCommand) (int32, error) {
	if err := c.Err(); err != nil {
		return 0, err
	}
	cmd.Opaque = c.opaque.Add(1)
	return cmd.Opaque, c.TrySend(cmd)
}

// Request is TryRequest failing the test, and writing within Timeout; the response is for
// Await.
func (c *Conn) Request(cmd *codec.RemotingCommand) int32 {
	c.t.Helper()
	if err := c.Err(); err != nil {
		c.t.Fatalf("remotingtest: request code %d: %v", cmd.Code, err)
	}
	cmd.Opaque = c.opaque.Add(1)
	c.Send(cmd)
	return cmd.Opaque
}

// Err is why reading ended for good (EOF, a reset, a framing error, Close), wrapped; nil
// while the connection is readable. Frames read before the end can still be taken.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr != nil {
		return fmt.Errorf("remotingtest: connection ended: %w", c.readErr)
	}
	return nil
}

// TryAwait returns the response to opaque once it arrives. It fails with ErrTimeout after
// timeout, and with the read error (EOF, a reset, a framing error) when the connection ends
// first. The command owns its bytes.
func (c *Conn) TryAwait(opaque int32, timeout time.Duration) (*codec.RemotingCommand, error) {
	return c.take(func(cmd *codec.RemotingCommand) bool { return cmd.IsResponse() && cmd.Opaque == opaque }, timeout)
}

// Await returns the response to opaque, waiting up to Timeout.
func (c *Conn) Await(opaque int32) *codec.RemotingCommand {
	c.t.Helper()
	resp, err := c.TryAwait(opaque, Timeout)
	if err != nil {
		c.t.Fatalf("remotingtest: no response to opaque %d: %v", opaque, err)
	}
	return resp
}

// TryCall is TryRequest then TryAwait.
func (c *Conn) TryCall(cmd *codec.RemotingCommand, timeout time.Duration) (*codec.RemotingCommand, error) {
	opaque, err := c.TryRequest(cmd)
	if err != nil {
		return nil, err
	}
	return c.TryAwait(opaque, timeout)
}

// Call sends cmd with a fresh opaque and returns its response, waiting up to Timeout.
func (c *Conn) Call(cmd *codec.RemotingCommand) *codec.RemotingCommand {
	c.t.Helper()
	opaque := c.Request(cmd)
	resp, err := c.TryAwait(opaque, Timeout)
	if err != nil {
		c.t.Fatalf("remotingtest: no response to request code %d (opaque %d): %v", cmd.Code, opaque, err)
	}
	return resp
}

// TryNext returns the oldest frame not taken yet, request or response, reading one if there
// is none; errors as TryAwait.
func (c *Conn) TryNext(timeout time.Duration) (*codec.RemotingCommand, error) {
	return c.take(func(*codec.RemotingCommand) bool { return true }, timeout)
}

// Next is TryNext waiting up to Timeout.
func (c *Conn) Next() *codec.RemotingCommand {
	c.t.Helper()
	cmd, err := c.TryNext(Timeout)
	if err != nil {
		c.t.Fatalf("remotingtest: no frame: %v", err)
	}
	return cmd
}

// TryExpectClosed waits up to timeout for the peer to close the connection (EOF, or a reset)
// and fails if anything arrives instead: a frame, or a single byte.
func (c *Conn) TryExpectClosed(timeout time.Duration) error {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case c.rtoken <- struct{}{}:
	case <-timer.C:
		return fmt.Errorf("%w (another goroutine is reading)", ErrTimeout)
	}
	defer func() { <-c.rtoken }()
	c.mu.Lock()
	queued, readErr := len(c.frames), c.readErr
	c.mu.Unlock()
	switch {
	case queued > 0:
		return fmt.Errorf("remotingtest: %d frames arrived instead of a close", queued)
	case c.end > c.start:
		return fmt.Errorf("remotingtest: %d bytes arrived instead of a close", c.end-c.start)
	case readErr != nil:
		return closedByPeer(readErr)
	}
	err := c.fill(time.Now().Add(timeout))
	switch {
	case c.end > c.start:
		return fmt.Errorf("remotingtest: %d bytes arrived instead of a close", c.end-c.start)
	case err == nil:
		return errors.New("remotingtest: empty read instead of a close")
	}
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		c.ended(err)
	}
	return closedByPeer(err)
}

// closedByPeer is nil for an end of stream or a reset, else err.
func closedByPeer(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		return nil
	}
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return fmt.Errorf("%w: not closed by the peer: %v", ErrTimeout, err)
	}
	return fmt.Errorf("remotingtest: not closed by the peer: %w", err)
}

// ExpectClosed is TryExpectClosed waiting up to Timeout.
func (c *Conn) ExpectClosed() {
	c.t.Helper()
	if err := c.TryExpectClosed(Timeout); err != nil {
		c.t.Fatalf("remotingtest: expected the peer to close: %v", err)
	}
}

// take removes and returns the oldest frame that match accepts, reading frames until one
// arrives, the connection ends or timeout passes.
func (c *Conn) take(match func(*codec.RemotingCommand) bool, timeout time.Duration) (*codec.RemotingCommand, error) {
	deadline := time.Now().Add(timeout)
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		cmd, arrived, err := c.taken(match)
		if cmd != nil || err != nil {
			return cmd, err
		}
		if !time.Now().Before(deadline) {
			return nil, ErrTimeout
		}
		select {
		case c.rtoken <- struct{}{}:
			// Another reader may have queued the frame while this one waited for the token.
			if cmd, _, err := c.taken(match); cmd != nil || err != nil {
				<-c.rtoken
				return cmd, err
			}
			c.readFrame(deadline)
			<-c.rtoken
		case <-arrived:
		case <-timer.C:
		}
	}
}

// taken removes the oldest matching frame; else it returns the channel closed when the
// frames change, or the error that ended reading.
func (c *Conn) taken(match func(*codec.RemotingCommand) bool) (*codec.RemotingCommand, <-chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, cmd := range c.frames {
		if match(cmd) {
			c.frames = append(c.frames[:i], c.frames[i+1:]...)
			return cmd, nil, nil
		}
	}
	if c.readErr != nil {
		return nil, nil, fmt.Errorf("remotingtest: connection ended: %w", c.readErr)
	}
	return nil, c.arrived, nil
}

// readFrame reads until one more frame is queued, reading ends for good, or deadline passes
// (then the bytes of a partial frame stay buffered for the next reader). The caller holds
// the read token.
func (c *Conn) readFrame(deadline time.Time) {
	for {
		n, err := codec.CutFrame(c.buf[c.start:c.end], 0)
		if err != nil {
			c.ended(err)
			return
		}
		if n > 0 {
			cmd, err := codec.DecodeCommand(c.buf[c.start+4 : c.start+n])
			if err != nil {
				c.ended(err)
				return
			}
			cmd.Body = bytes.Clone(cmd.Body) // the buffer is reused
			if c.start += n; c.start == c.end {
				c.start, c.end = 0, 0
			}
			c.mu.Lock()
			c.frames = append(c.frames, cmd)
			c.notifyLocked()
			c.mu.Unlock()
			return
		}
		if err := c.fill(deadline); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return
			}
			if errors.Is(err, io.EOF) && c.end > c.start {
				err = io.ErrUnexpectedEOF
			}
			c.ended(err)
			return
		}
	}
}

// fill reads at least one byte into the buffer, first making room.
func (c *Conn) fill(deadline time.Time) error {
	if err := c.pendingErr; err != nil {
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			return err
		}
		c.pendingErr = nil
	}
	if c.start > 0 {
		c.end = copy(c.buf, c.buf[c.start:c.end])
		c.start = 0
	}
	if c.end == len(c.buf) {
		grown := make([]byte, max(2*len(c.buf), readBufferBytes))
		copy(grown, c.buf[:c.end])
		c.buf = grown
	}
	if err := c.nc.SetReadDeadline(deadline); err != nil {
		return err
	}
	n, err := c.nc.Read(c.buf[c.end:])
	c.end += n
	if n > 0 {
		c.pendingErr = err // data first
		return nil
	}
	if err == nil {
		return nil // (0, nil): allowed, discouraged; read again
	}
	return err
}

// ended records why reading stopped for good and wakes every waiter.
func (c *Conn) ended(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readErr == nil {
		c.readErr = err
	}
	c.notifyLocked()
}

func (c *Conn) notifyLocked() {
	close(c.arrived)
	c.arrived = make(chan struct{})
}
