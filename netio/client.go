package netio

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// ClientConfig configures a Client (outbound connections: broker → name servers, broker →
// anything it dials).
type ClientConfig struct {
	// DialTimeout bounds connecting (RocketMQ connectTimeoutMillis, 3 s); a call's own
	// context or timeout bounds it further.
	DialTimeout time.Duration
	// ConnsPerAddr is how many connections are kept to each address; calls spread over them
	// round-robin. 1 is what RocketMQ does.
	ConnsPerAddr int
	// MaxFrameBytes caps an incoming frame, length word included.
	MaxFrameBytes int
	// MaxOutboundBytes caps bytes queued on one connection that the peer has not read.
	MaxOutboundBytes int
	// MaxPendingCalls caps calls awaiting a response per connection.
	MaxPendingCalls int
	// Handler, if not nil, receives requests the peer sends on a client connection (and its
	// OnOpen/OnClose). Without one, requests are answered REQUEST_CODE_NOT_SUPPORTED.
	Handler Handler
	// TLS, if not nil, makes every connection TLS (crypto/tls), with the handshake done
	// while dialling. Its ServerName defaults to the dialled host.
	TLS *tls.Config
}

// DefaultClientConfig returns 3 s dial timeout, one connection per address, 16 MiB frames,
// DefaultMaxOutboundBytes and DefaultMaxPendingCalls.
func DefaultClientConfig() ClientConfig {
	return ClientConfig{
		DialTimeout:      3 * time.Second,
		ConnsPerAddr:     1,
		MaxFrameBytes:    codec.DefaultMaxFrameBytes,
		MaxOutboundBytes: DefaultMaxOutboundBytes,
		MaxPendingCalls:  DefaultMaxPendingCalls,
	}
}

// Validate reports the first field out of range, naming it (errors wrap ErrConfig).
func (c *ClientConfig) Validate() error {
	switch {
	case c.DialTimeout <= 0:
		return fmt.Errorf("%w: DialTimeout %v <= 0", ErrConfig, c.DialTimeout)
	case c.ConnsPerAddr <= 0:
		return fmt.Errorf("%w: ConnsPerAddr %d <= 0", ErrConfig, c.ConnsPerAddr)
	case c.MaxFrameBytes < 8:
		return fmt.Errorf("%w: MaxFrameBytes %d < 8 (the smallest frame)", ErrConfig, c.MaxFrameBytes)
	case c.MaxOutboundBytes <= 0:
		return fmt.Errorf("%w: MaxOutboundBytes %d <= 0", ErrConfig, c.MaxOutboundBytes)
	case c.MaxPendingCalls <= 0:
		return fmt.Errorf("%w: MaxPendingCalls %d <= 0", ErrConfig, c.MaxPendingCalls)
	}
	return nil
}

// Client makes remoting calls to addresses it dials itself, keeping ConnsPerAddr
// connections per address. Each connection has a reader goroutine that matches responses to
// calls by opaque, and a writer goroutine. A call pending on a connection that drops fails at
// once with ErrConnClosed; the next call to that address dials again. Safe for concurrent
// use.
type Client struct {
	cfg    ClientConfig
	log    *slog.Logger
	met    *metrics
	limits connLimits
	nextID atomic.Uint64

	mu     sync.Mutex
	closed bool
	addrs  map[string]*addrConns
	live   map[*stdConn]struct{}
	wg     sync.WaitGroup // connection goroutines
}

// addrConns are the connection slots for one address.
type addrConns struct {
	next  atomic.Uint32
	slots []connSlot
}

// connSlot holds one connection; its mutex is held while dialling so that concurrent
// callers wait for one dial instead of each dialling.
type connSlot struct {
	mu   sync.Mutex
	conn *stdConn
}

// NewClient returns a Client; logger may not be nil.
func NewClient(cfg ClientConfig, logger *slog.Logger) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		return nil, fmt.Errorf("%w: nil logger", ErrConfig)
	}
	m, err := newMetrics(nil, "client", EngineStd)
	if err != nil {
		return nil, err
	}
	return &Client{
		cfg:    cfg,
		log:    logger.With("component", "netio-client"),
		met:    m,
		limits: connLimits{maxOutboundBytes: cfg.MaxOutboundBytes, maxPendingCalls: cfg.MaxPendingCalls},
		addrs:  make(map[string]*addrConns),
		live:   make(map[*stdConn]struct{}),
	}, nil
}

// Invoke sends the request cmd to addr and waits for its response until ctx ends
// (ErrTimeout) or the connection drops (ErrConnClosed). It sets cmd.Opaque. The response is
// owned by the caller.
func (cl *Client) Invoke(ctx context.Context, addr string, cmd *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	c, err := cl.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	return c.core.Invoke(ctx, cmd)
}

// InvokeOneway sends the request cmd to addr with the oneway flag; ctx bounds only the dial.
func (cl *Client) InvokeOneway(ctx context.Context, addr string, cmd *codec.RemotingCommand) error {
	c, err := cl.conn(ctx, addr)
	if err != nil {
		return err
	}
	return c.core.InvokeOneway(cmd)
}

// InvokeAsync sends the request cmd to addr and returns; cb is called exactly once with the
// response (owned by cb) or an error (ErrTimeout after timeout, ErrConnClosed), on the
// connection's reader goroutine or a timer goroutine, so it must not block. When no
// connection to addr is open, InvokeAsync dials first and may block for up to
// min(timeout, DialTimeout). If it returns an error, cb is not called.
func (cl *Client) InvokeAsync(addr string, cmd *codec.RemotingCommand, timeout time.Duration, cb func(*codec.RemotingCommand, error)) error {
	if cb == nil || timeout <= 0 {
		return fmt.Errorf("%w: InvokeAsync needs a callback and a timeout > 0 (got %v)", ErrConfig, timeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c, err := cl.conn(ctx, addr)
	if err != nil {
		return err
	}
	return c.core.InvokeAsync(cmd, timeout, cb)
}

// Close closes every connection (their pending calls fail with ErrConnClosed), waits for
// their goroutines to exit, and makes later calls fail with ErrClientClosed. Idempotent.
func (cl *Client) Close() error {
	cl.mu.Lock()
	cl.closed = true
	conns := make([]*stdConn, 0, len(cl.live))
	for c := range cl.live {
		conns = append(conns, c)
	}
	cl.mu.Unlock()
	for _, c := range conns {
		c.core.setCloseReason(ErrClientClosed)
		c.abort()
	}
	cl.wg.Wait()
	return nil
}

// conn returns an open connection to addr, dialling one if its slot is empty or closed.
func (cl *Client) conn(ctx context.Context, addr string) (*stdConn, error) {
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		return nil, ErrClientClosed
	}
	ac := cl.addrs[addr]
	if ac == nil {
		ac = &addrConns{slots: make([]connSlot, cl.cfg.ConnsPerAddr)}
		cl.addrs[addr] = ac
	}
	cl.mu.Unlock()

	slot := &ac.slots[int(ac.next.Add(1)-1)%len(ac.slots)]
	slot.mu.Lock()
	defer slot.mu.Unlock()
	if c := slot.conn; c != nil && c.core.open() {
		return c, nil
	}
	dialCtx, cancel := context.WithTimeout(ctx, cl.cfg.DialTimeout)
	defer cancel()
	var nc net.Conn
	var err error
	if cl.cfg.TLS != nil {
		td := tls.Dialer{Config: cl.cfg.TLS}
		nc, err = td.DialContext(dialCtx, "tcp", addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(dialCtx, "tcp", addr)
	}
	if err != nil {
		return nil, fmt.Errorf("netio: dial %s: %w", addr, err)
	}
	c := newStdConn(nc, cl.cfg.Handler, cl.nextID.Add(1), &cl.limits, cl.cfg.MaxFrameBytes, cl.log, cl.met, nil)
	c.onClosed = func(c *stdConn) {
		cl.mu.Lock()
		delete(cl.live, c)
		cl.mu.Unlock()
	}
	cl.mu.Lock()
	if cl.closed {
		cl.mu.Unlock()
		_ = nc.Close()
		return nil, ErrClientClosed
	}
	cl.live[c] = struct{}{}
	cl.wg.Add(1)
	cl.mu.Unlock()
	go func() {
		defer cl.wg.Done()
		c.serve()
	}()
	slot.conn = c
	return c, nil
}
