// Package netio is ringmq's remoting transport: it accepts TCP connections, cuts RocketMQ
// remoting frames out of the byte stream with package codec, hands each decoded request to a
// Handler, and writes responses back — from the connection's own event loop or from any other
// goroutine (a flush completion, a worker pool) without ever blocking an event loop. It also
// carries the other direction: the broker calling a peer (Conn.Invoke on an accepted
// connection, Client for connections it dials itself, e.g. to name servers).
//
// # Engines
//
// Two engines implement Server behind the same Handler (config key netEngine):
//
//   - "gnet" (the default): github.com/panjf2000/gnet/v2 event loops, EventLoops of them
//     (netEventLoops, default GOMAXPROCS). Every callback of a connection runs on its loop.
//   - "std": one goroutine per connection reading with codec.FrameReader, plus one writer
//     goroutine for writes that come from other goroutines. It exists for side-by-side
//     benchmarks and as a fallback, and it is the engine that serves TLS (Config.TLSMode,
//     tls.go): gnet v2.9.7 has no TLS, so a TLS server always runs on it.
//
// # Frame (PROTOCOL.md §1.1)
//
//	+------------+------------------------------+----------------+------------+
//	| frameLen 4 | serializeType 1 | headerLen 3 | header (H)     | body (B)   |
//	+------------+------------------------------+----------------+------------+
//	frameLen = 4 + H + B (big-endian, not counting itself); frameLen + 4 <= MaxFrameBytes
//
// A frame that cannot be cut or decoded (length out of range, unknown serialize type, bad
// header) leaves the stream unsynchronisable: that connection alone is closed (OnClose gets an
// error wrapping ErrMalformedFrame) and other connections are not affected. A sound frame
// whose header has a field over its cap (codec.ErrHeaderLimit: a multi-MiB remark or value,
// thousands of extFields) is not handed to the handler: a request is answered SYSTEM_ERROR
// naming the field, as RocketMQ answers a header it cannot decode, and the connection goes on.
//
// # Memory
//
// Frames larger than LargeFrameBytes (64 KiB) are charged to a request budget shared by all
// connections of a server (RequestBudgetBytes, budget.go) from their first 8 bytes on, read
// into a buffer of their own that is unmapped once the handler returns (framebuf_linux.go),
// and a frame that does not fit waits with its connection not reading (readstop_linux.go),
// so a burst of big frames costs at most the budget, and nothing of it stays behind.
//
// # Buffer ownership
//
// A request's Body (and the command itself) is a view into the engine's read buffer, valid
// only until OnRequest returns (STYLE.md §4: gnet Peek slices are valid until Discard). A
// handler that answers later copies what it keeps. Writes never keep the caller's slices past
// the call except in WriteFrame, whose release callback says when they may be dropped.
//
// # Writes and ordering
//
// Every write is appended to the connection's outbound queue and written in batches: on the
// gnet engine by the connection's loop at the end of the current read pass (so all responses
// to one read go out in one write) or, when the write comes from another goroutine, by a pass
// the loop is woken for; on the std engine by the reading goroutine after the handler returns
// or by the writer goroutine. Frames from one goroutine leave in the order they were written;
// frames from different goroutines interleave at frame boundaries only.
//
// # Responses and calls
//
// Frames with the response flag are never passed to OnRequest: they complete the pending
// Invoke/InvokeAsync call with the same opaque on that connection (unmatched ones are
// dropped and counted, as the RocketMQ clients do). Pending calls of a connection that closes
// fail at once with ErrConnClosed — unlike the Go client, which lets them time out.
package netio

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/round"
)

// Sentinel errors. Check with errors.Is; the returned errors wrap them with detail.
var (
	// ErrConfig: a Config or ClientConfig field is out of range; the message names the field.
	ErrConfig = errors.New("netio: invalid config")
	// ErrConnClosed: the connection is closed (or closing); the write or call did not happen,
	// or the call's response can no longer arrive.
	ErrConnClosed = errors.New("netio: connection closed")
	// ErrServerStopped: the server is stopping; writes from outside the event loops are
	// refused so that the stop can drain what was already submitted.
	ErrServerStopped = errors.New("netio: server stopped")
	// ErrClientClosed: the Client was closed.
	ErrClientClosed = errors.New("netio: client closed")
	// ErrTimeout: a call's response did not arrive in time (its context ended or its timeout
	// passed).
	ErrTimeout = errors.New("netio: call timed out")
	// ErrTooManyPending: the connection already has MaxPendingCalls calls awaiting responses.
	ErrTooManyPending = errors.New("netio: too many pending calls")
	// ErrOutboundFull: the connection has more than MaxOutboundBytes queued that the peer has
	// not read; the connection is being closed (a peer that does not read must not make the
	// broker buffer without bound).
	ErrOutboundFull = errors.New("netio: outbound queue full")
	// ErrMalformedFrame: the peer sent a frame that cannot be cut or decoded; the connection
	// was closed. It wraps the codec error.
	ErrMalformedFrame = errors.New("netio: malformed frame")
	// ErrIdleTimeout: the connection saw no traffic for IdleTimeout and was closed.
	ErrIdleTimeout = errors.New("netio: idle timeout")
	// ErrLargeFrameTimeout: a large frame admitted to the request budget did not arrive whole
	// within LargeFrameTimeout; the connection was closed and its share of the budget freed.
	ErrLargeFrameTimeout = errors.New("netio: large frame timeout")
	// ErrTLSHandshake: a connection to a TLS server failed the handshake (or, in permissive
	// mode, sent nothing before the handshake timeout); it was closed before OnOpen.
	ErrTLSHandshake = errors.New("netio: TLS handshake failed")
)

// Engine names (config key netEngine).
const (
	EngineGnet = "gnet"
	EngineStd  = "std"
)

// Defaults.
const (
	// DefaultIdleTimeout is RocketMQ's channelMaxIdleTimeSeconds (120 s).
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxOutboundBytes bounds what one connection may have queued but unread by the
	// peer: a few dozen maximal pull responses.
	DefaultMaxOutboundBytes = 64 << 20
	// DefaultMaxPendingCalls bounds the calls awaiting a response on one connection.
	DefaultMaxPendingCalls = 65536
	// DefaultLargeFrameTimeout bounds how long an admitted large frame may take to arrive:
	// a 16 MiB frame at 5 Mbit/s. RocketMQ clients give up on a send after 3 s by default.
	DefaultLargeFrameTimeout = 30 * time.Second
	// DefaultListenAddr is the broker's listenPort (10911) on all interfaces.
	DefaultListenAddr = ":10911"
)

// Config configures a Server. Build it with DefaultConfig and override; NewServer validates.
type Config struct {
	// Name labels the server in logs and metrics ("broker", "namesrv").
	Name string
	// Engine is EngineGnet or EngineStd (netEngine).
	Engine string
	// Addr is the TCP listen address, host:port; port 0 picks a free port (see Server.Addr).
	Addr string
	// EventLoops is the number of gnet event loops (netEventLoops); 0 means GOMAXPROCS.
	// Ignored by the std engine.
	EventLoops int
	// ReusePort gives every gnet loop its own SO_REUSEPORT listener instead of one acceptor
	// handing connections out. It cannot be used with port 0 (each loop would bind a
	// different port). Ignored by the std engine.
	ReusePort bool
	// IdleTimeout closes a connection that neither received nor sent a frame for this long
	// (RocketMQ channelMaxIdleTimeSeconds, 120 s). 0 disables it.
	IdleTimeout time.Duration
	// MaxFrameBytes caps an incoming frame, its 4-byte length word included
	// (codec.DefaultMaxFrameBytes, like Java's frameMaxLength). A bigger frame closes the
	// connection.
	MaxFrameBytes int
	// MaxConnections caps open accepted connections; one more is closed right after accept.
	// 0 means no limit.
	MaxConnections int
	// MaxOutboundBytes caps the bytes queued on one connection that the peer has not yet
	// read; past it the write fails with ErrOutboundFull and the connection is closed.
	MaxOutboundBytes int
	// MaxPendingCalls caps Invoke/InvokeAsync calls awaiting a response per connection.
	MaxPendingCalls int
	// RequestBudgetBytes bounds, across all connections, the bytes of frames larger than
	// LargeFrameBytes being read or decoded (requestBudgetBytes; budget.go). A large frame
	// that does not fit waits, and its connection stops reading until it does.
	RequestBudgetBytes int64
	// Budget, when not nil, is the request budget the server draws from instead of one of its
	// own of RequestBudgetBytes: servers given the same Budget share its bytes (a broker's
	// listenPort and fast port). Not a config-file key.
	Budget *RequestBudget
	// LargeFrameTimeout closes a connection whose large frame, once admitted to the request
	// budget, has not arrived whole after this long: a peer that announces big frames and
	// sends them slowly must not hold the budget and stall everyone else's. 0 disables it.
	LargeFrameTimeout time.Duration
	// TCPKeepAlive, when positive, turns TCP keep-alive on with this idle period. 0 leaves it
	// off: IdleTimeout already reaps dead peers.
	TCPKeepAlive time.Duration
	// TLSMode is TLSDisabled (or empty), TLSPermissive (plain and TLS clients on the same
	// port) or TLSEnforcing (TLS only); see tls.go. With TLS on, the server runs on the std
	// engine whatever Engine says: gnet has no TLS.
	TLSMode string
	// TLS holds the server certificate(s); required unless TLSMode is disabled (see
	// LoadServerTLS). Not modified by the server.
	TLS *tls.Config
	// TLSHandshakeTimeout bounds a TLS handshake, and in permissive mode the wait for the
	// client's first byte; 0 means DefaultTLSHandshakeTimeout.
	TLSHandshakeTimeout time.Duration
	// Registerer, if not nil, receives the server's metrics (labelled server=Name,
	// engine=Engine). Not a config-file key.
	Registerer prometheus.Registerer
}

// DefaultConfig returns the defaults: DefaultServerSettings applied (gnet engine with
// GOMAXPROCS loops, their connection cap and request budget, no TLS) on DefaultListenAddr,
// 120 s idle timeout, 16 MiB frames, DefaultMaxOutboundBytes, DefaultMaxPendingCalls,
// DefaultLargeFrameTimeout.
func DefaultConfig() Config {
	c := Config{
		Name:             "remoting",
		Addr:             DefaultListenAddr,
		IdleTimeout:      DefaultIdleTimeout,
		MaxFrameBytes:    codec.DefaultMaxFrameBytes,
		MaxOutboundBytes: DefaultMaxOutboundBytes,
		MaxPendingCalls:  DefaultMaxPendingCalls,

		LargeFrameTimeout: DefaultLargeFrameTimeout,
	}
	s := DefaultServerSettings()
	_ = s.Apply(&c) // no TLS by default: nothing to load, nothing to fail
	return c
}

// Validate reports the first field out of range, naming it (errors wrap ErrConfig).
func (c *Config) Validate() error {
	switch c.Engine {
	case EngineGnet, EngineStd:
	default:
		return fmt.Errorf("%w: netEngine %q: want %q or %q", ErrConfig, c.Engine, EngineGnet, EngineStd)
	}
	_, port, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return fmt.Errorf("%w: Addr %q: %w", ErrConfig, c.Addr, err)
	}
	if c.EventLoops < 0 {
		return fmt.Errorf("%w: netEventLoops %d < 0", ErrConfig, c.EventLoops)
	}
	if c.ReusePort && c.Engine == EngineGnet && (port == "0" || port == "") {
		return fmt.Errorf("%w: ReusePort with port 0 in Addr %q: every loop would bind its own port", ErrConfig, c.Addr)
	}
	if c.IdleTimeout < 0 {
		return fmt.Errorf("%w: IdleTimeout %v < 0", ErrConfig, c.IdleTimeout)
	}
	if c.MaxFrameBytes < 8 {
		return fmt.Errorf("%w: MaxFrameBytes %d < 8 (the smallest frame)", ErrConfig, c.MaxFrameBytes)
	}
	if c.MaxConnections < 0 {
		return fmt.Errorf("%w: MaxConnections %d < 0", ErrConfig, c.MaxConnections)
	}
	if c.MaxOutboundBytes <= 0 {
		return fmt.Errorf("%w: MaxOutboundBytes %d <= 0", ErrConfig, c.MaxOutboundBytes)
	}
	if c.MaxPendingCalls <= 0 {
		return fmt.Errorf("%w: MaxPendingCalls %d <= 0", ErrConfig, c.MaxPendingCalls)
	}
	if c.LargeFrameTimeout < 0 {
		return fmt.Errorf("%w: LargeFrameTimeout %v < 0", ErrConfig, c.LargeFrameTimeout)
	}
	if c.RequestBudgetBytes <= 0 {
		return fmt.Errorf("%w: RequestBudgetBytes %d <= 0", ErrConfig, c.RequestBudgetBytes)
	}
	if c.TCPKeepAlive < 0 {
		return fmt.Errorf("%w: TCPKeepAlive %v < 0", ErrConfig, c.TCPKeepAlive)
	}
	return c.validateTLS()
}

// eventLoops is EventLoops with 0 resolved to GOMAXPROCS.
func (c *Config) eventLoops() int {
	if c.EventLoops > 0 {
		return c.EventLoops
	}
	return runtime.GOMAXPROCS(0)
}

// Handler receives a connection's events. Its methods for one connection are never called
// concurrently; for different connections they are (gnet: from each connection's loop; std:
// from each connection's goroutine). No method may block: on the gnet engine a blocked
// handler stalls every connection of its loop. Work that can block (disk reads, waiting for a
// flush) goes elsewhere and answers later through Conn.WriteCommand / WriteFrame.
type Handler interface {
	// OnOpen is called once when the connection is accepted (or dialled, for a Client),
	// before any OnRequest.
	OnOpen(c Conn)
	// OnRequest is called for every request frame (response frames complete calls instead).
	// cmd, its Body and its ExtFields are valid only until OnRequest returns: copy what you
	// keep.
	OnRequest(c Conn, cmd *codec.RemotingCommand)
	// OnClose is called once when the connection has closed; err says why (nil for a local
	// Close; ErrIdleTimeout, ErrLargeFrameTimeout, ErrServerStopped, ErrMalformedFrame, ErrOutboundFull or the
	// I/O error otherwise). Pending calls have already failed and queued writes were released.
	OnClose(c Conn, err error)
}

// PassEnder is a Handler that learns when a read pass ends: every complete request frame that one read
// of a connection brought has gone to OnRequest, and what the handler queued is about to be written.
// OnPassEnd is called on the same goroutine as those OnRequest calls, right after the last of them (the
// std engine reads and answers one frame at a time: there a pass is one frame), so work the handler
// gathered over a pass (the broker's grouped puts) can be done once for all of them before the answers
// go out. Like every Handler method it must not block.
type PassEnder interface {
	OnPassEnd(c Conn)
}

// PassClock is a Conn that knows when the read pass being handled began: a handler that stamps each
// request with its arrival reads the clock once per pass instead of once per frame (a pass carries a
// window of sends at load). PassStarted is valid only inside OnRequest and OnPassEnd; the zero time
// means the engine does not say (the std engine), and the handler reads its own clock.
type PassClock interface {
	PassStarted() time.Time
}

// Conn is one remoting connection. All methods are safe for concurrent use from any
// goroutine, including the connection's own event loop.
type Conn interface {
	// ID is unique among the connections of one Server or Client.
	ID() uint64
	// RemoteAddr is the peer's address (IPv4-mapped addresses unmapped).
	RemoteAddr() netip.AddrPort
	// LocalAddr is this end's address.
	LocalAddr() netip.AddrPort

	// WriteCommand encodes cmd into the connection's outbound queue; cmd is not retained
	// (its Body is copied), so it may be reused when WriteCommand returns. Errors:
	// ErrConnClosed, ErrServerStopped, ErrOutboundFull, or the codec's encoding error.
	WriteCommand(cmd *codec.RemotingCommand) error
	// WriteFrame writes a pre-encoded frame — header (codec AppendFrameHeader output, whose
	// length word counts the bodies) followed by bodies, e.g. slices of mapped CommitLog
	// memory — as one vectored write, without copying the bodies where the socket takes them
	// at once. header and bodies must stay valid and unchanged until release is called;
	// release (may be nil) is called exactly once, also when WriteFrame fails, as soon as the
	// bytes were written to the socket or copied, on an arbitrary goroutine; it must not block.
	WriteFrame(header []byte, bodies [][]byte, release func()) error

	// Invoke sends the request cmd to the peer and waits for the response with the same
	// opaque, until ctx ends (ErrTimeout) or the connection closes (ErrConnClosed). It sets
	// cmd.Opaque and clears the response flag. The returned command is owned by the caller.
	// Never call it on an event loop (from a Handler method): the response could not be read
	// while the loop waits. Use InvokeAsync there.
	Invoke(ctx context.Context, cmd *codec.RemotingCommand) (*codec.RemotingCommand, error)
	// InvokeAsync sends the request cmd and returns; cb is called exactly once, with the
	// response (owned by cb) or an error (ErrTimeout after timeout, ErrConnClosed), on the
	// connection's event loop / reader goroutine or a timer goroutine: it must not block. If
	// InvokeAsync returns an error, cb is not called.
	InvokeAsync(cmd *codec.RemotingCommand, timeout time.Duration, cb func(*codec.RemotingCommand, error)) error
	// InvokeOneway sends the request cmd with the oneway flag set and expects no response.
	InvokeOneway(cmd *codec.RemotingCommand) error

	// SetContext attaches a caller value (e.g. the broker's client-channel info).
	SetContext(v any)
	// Context returns the value given to SetContext, or nil.
	Context() any

	// Close writes what is already queued, then closes the connection; OnClose follows. It
	// does not wait and is idempotent.
	Close() error
}

// RoundWriter is a Conn that can take part in a round (internal/round): WriteFrameIn is WriteFrame,
// except that a write that would wake the connection's event loop defers the connection to rd's end
// instead, where what it has queued is written from the goroutine that ends the round (one system
// call for all of the round's frames, no wake-up), or the loop is woken then if it holds any of it.
// For a goroutine that answers many requests at once, such as the group commit's syncer. With rd nil,
// or on the std engine, it is WriteFrame. The caller must end rd (round.Round.End) after its writes.
type RoundWriter interface {
	WriteFrameIn(rd *round.Round, header []byte, bodies [][]byte, release func()) error
}

// Server accepts remoting connections and serves them with a Handler. Its methods are safe
// for concurrent use, except that Start must be called once, before Stop.
type Server interface {
	// Start binds the listen address and starts serving; it returns once connections are
	// accepted.
	Start() error
	// Addr is the bound listen address (the actual port when Config.Addr had port 0); nil
	// before Start.
	Addr() net.Addr
	// Stop stops accepting, waits (until ctx ends) for writes already submitted from other
	// goroutines to reach their sockets, closes every connection (OnClose with
	// ErrServerStopped) and returns once all the server's goroutines have exited. It returns
	// ctx's error if the drain was cut short. Further calls wait for the first and return
	// its result.
	Stop(ctx context.Context) error
	// ConnectionCount is the number of open accepted connections.
	ConnectionCount() int
	// Stalled is how long the server has been unable to make progress, for a liveness probe: the
	// longest a request handler call still running has taken (on the gnet engine it holds its
	// event loop and every connection of it), or how late the server's periodic sweep is,
	// whichever is longer; 0 when neither is stuck or the server does not run. It lags by up to
	// one sweep (at most 1 s): a stall is seen late and ends late, never invented. Safe for
	// concurrent use; reads atomics only.
	Stalled() time.Duration
}

// NewServer builds a Server for cfg and h; logger may not be nil.
func NewServer(cfg Config, h Handler, logger *slog.Logger) (Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if h == nil {
		return nil, fmt.Errorf("%w: nil Handler", ErrConfig)
	}
	if logger == nil {
		return nil, fmt.Errorf("%w: nil logger", ErrConfig)
	}
	if cfg.tlsEnabled() && cfg.Engine == EngineGnet {
		logger.Info("netio: TLS is on: serving with the std engine, gnet has no TLS",
			"server", cfg.Name, "tlsMode", cfg.TLSMode)
		cfg.Engine = EngineStd
	}
	logger = logger.With("server", cfg.Name, "engine", cfg.Engine)
	m, err := newMetrics(cfg.Registerer, cfg.Name, cfg.Engine)
	if err != nil {
		return nil, err
	}
	switch cfg.Engine {
	case EngineStd:
		return newStdServer(cfg, h, logger, m), nil
	default:
		return newGnetServer(cfg, h, logger, m), nil
	}
}
