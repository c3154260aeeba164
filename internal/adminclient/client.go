// Package adminclient is the remoting client of cmd/mqadmin: it sends one request at a time
// to a name server or broker of any RocketMQ-compatible cluster and returns its response.
// It knows frames (package codec) and nothing of the broker's internals.
//
// A Client keeps one connection per address and reuses it for the next request there. Each
// call writes the request with a fresh opaque and reads frames until the response with that
// opaque arrives, skipping anything else the peer sends (a broker may push requests to a
// client it knows). Every read and write has a deadline, so a peer that never answers costs
// at most the client's timeout. A transport failure closes the connection; the next call
// dials again.
package adminclient

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// DefaultTimeout bounds one call (dial, write and response) unless Client.Timeout is set;
// RocketMQ's admin tools wait 3 s for most calls, longer for a few, so 5 s leaves headroom.
const DefaultTimeout = 5 * time.Second

// ErrClosed is returned by calls on a closed Client.
var ErrClosed = errors.New("adminclient: client closed")

// Client sends requests and waits for their responses. Safe for concurrent use: calls to
// different addresses proceed in parallel, calls to one address one after the other.
type Client struct {
	// Timeout bounds each call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Credentials, when set, sign every request (brokers with aclEnable=true); set them
	// before the first call.
	Credentials Credentials

	mu struct {
		sync.Mutex
		conns  map[string]*conn
		closed bool
	}
}

// conn is one connection; mu serializes the calls that use it.
type conn struct {
	mu     sync.Mutex
	nc     net.Conn
	frames *codec.FrameReader
	opaque int32
	buf    []byte
}

// New returns a Client with the given per-call timeout (0: DefaultTimeout).
func New(timeout time.Duration) *Client {
	return &Client{Timeout: timeout}
}

// Call sends req to addr (host:port) and returns the response, whatever its code: checking
// it is the caller's part (see Check). req.Opaque is overwritten. The response's Body is the
// caller's own copy. A transport error (dial, write, read, timeout, a frame that does not
// decode) is returned as a *TransportError.
func (c *Client) Call(addr string, req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	cn, err := c.connFor(addr)
	if err != nil {
		return nil, &TransportError{Addr: addr, Code: codec.RequestCode(req.Code), Err: err}
	}
	cn.mu.Lock()
	defer cn.mu.Unlock()
	resp, err := cn.call(req, c.Credentials, c.timeout())
	if err != nil {
		c.drop(addr, cn)
		return nil, &TransportError{Addr: addr, Code: codec.RequestCode(req.Code), Err: err}
	}
	return resp, nil
}

// Close closes every connection; later calls fail with ErrClosed.
func (c *Client) Close() error {
	c.mu.Lock()
	conns := c.mu.conns
	c.mu.conns, c.mu.closed = nil, true
	c.mu.Unlock()
	var errs []error
	for _, cn := range conns {
		cn.mu.Lock()
		if cn.nc != nil {
			errs = append(errs, cn.nc.Close())
			cn.nc = nil
		}
		cn.mu.Unlock()
	}
	return errors.Join(errs...)
}

func (c *Client) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// connFor returns addr's connection, dialling it when there is none.
func (c *Client) connFor(addr string) (*conn, error) {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if cn, ok := c.mu.conns[addr]; ok {
		c.mu.Unlock()
		return cn, nil
	}
	c.mu.Unlock()
	// Dial outside the lock: a slow peer must not hold up calls to the others.
	nc, err := net.DialTimeout("tcp", addr, c.timeout())
	if err != nil {
		return nil, err
	}
	cn := &conn{nc: nc, frames: codec.NewFrameReader(nc, codec.DefaultMaxFrameBytes)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, errors.Join(ErrClosed, nc.Close())
	}
	if other, ok := c.mu.conns[addr]; ok { // another call dialled meanwhile: use one
		return other, nc.Close()
	}
	if c.mu.conns == nil {
		c.mu.conns = make(map[string]*conn)
	}
	c.mu.conns[addr] = cn
	return cn, nil
}

// drop closes cn and forgets it, unless another connection has replaced it. Caller holds
// cn.mu.
func (c *Client) drop(addr string, cn *conn) {
	c.mu.Lock()
	if c.mu.conns[addr] == cn {
		delete(c.mu.conns, addr)
	}
	c.mu.Unlock()
	if cn.nc != nil {
		_ = cn.nc.Close() // the call's own error is the one worth reporting
		cn.nc = nil
	}
}

// call writes req and reads until its response. Caller holds cn.mu.
func (cn *conn) call(req *codec.RemotingCommand, creds Credentials, timeout time.Duration) (*codec.RemotingCommand, error) {
	if cn.nc == nil {
		return nil, net.ErrClosed
	}
	cn.opaque++
	req.Opaque = cn.opaque
	req.Flag &^= codec.FlagResponse
	creds.Sign(req)
	var err error
	cn.buf, err = req.AppendFrame(cn.buf[:0])
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	if err := cn.nc.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := cn.nc.Write(cn.buf); err != nil {
		return nil, err
	}
	for {
		payload, err := cn.frames.Next()
		if err != nil {
			return nil, err
		}
		resp, err := codec.DecodeCommand(payload)
		if err != nil {
			return nil, fmt.Errorf("decode response: %w", err)
		}
		if !resp.IsResponse() || resp.Opaque != req.Opaque {
			continue // a request from the peer, or a late answer to an earlier call
		}
		resp.Body = append([]byte(nil), resp.Body...) // the payload is reused by the next read
		return resp, nil
	}
}

// TransportError is a call that got no response: the peer could not be reached, the
// connection failed, or the deadline passed.
type TransportError struct {
	Addr string
	Code codec.RequestCode
	Err  error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("%s to %s: %v", e.Code, e.Addr, e.Err)
}

func (e *TransportError) Unwrap() error { return e.Err }

// ResponseError is a response whose code is not the one the caller accepts.
type ResponseError struct {
	Addr   string // the peer, as the caller named it ("name server 10.0.0.1:9876")
	What   string // what was asked, when the caller says ("topic \"T\""); may be empty
	Code   codec.ResponseCode
	Remark string
}

func (e *ResponseError) Error() string {
	what := ""
	if e.What != "" {
		what = " for " + e.What
	}
	remark := strings.TrimSpace(e.Remark)
	if remark == "" {
		remark = "(no remark)"
	}
	return fmt.Sprintf("%s answered %s (%d)%s: %s", e.Addr, e.Code, int32(e.Code), what, remark)
}

// Check returns a *ResponseError unless resp's code is one of ok (SUCCESS when none given).
func Check(addr string, resp *codec.RemotingCommand, ok ...codec.ResponseCode) error {
	code := codec.ResponseCode(resp.Code)
	if len(ok) == 0 && code == codec.ResponseSuccess {
		return nil
	}
	for _, c := range ok {
		if code == c {
			return nil
		}
	}
	return &ResponseError{Addr: addr, Code: code, Remark: resp.Remark}
}
