package netio

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// TLS on the remoting port (config key tlsServerMode, RocketMQ's tls.server.mode).
//
// gnet v2.9.7 has no TLS support, so a server with TLS on runs on the std engine, where
// crypto/tls wraps each accepted net.Conn; NewServer logs one line when it swaps a gnet
// config for std. Modes:
//
//   - disabled: plain TCP only (the default).
//   - permissive: plain and TLS clients on the same port. The first byte a client sends
//     decides, as RocketMQ's permissive mode does: 0x16 (the TLS record type "handshake",
//     which starts every ClientHello) begins a TLS handshake; anything else is a plain
//     remoting frame. A plain frame cannot start with 0x16: its first byte is the high byte of
//     the frame length, 0 for every frame under 16 MiB and never 0x16 under MaxFrameBytes.
//   - enforcing: TLS only; a plain client fails the handshake and is closed.
//
// The handshake (in permissive mode also the wait for the first byte) runs on the
// connection's own goroutine before OnOpen, bounded by TLSHandshakeTimeout and cut short by
// Stop. A connection that fails it is closed without the Handler ever seeing it; the reason
// is logged at info (debug when the server is stopping).
//
// Outbound connections (Client) use TLS when ClientConfig.TLS is set.

// TLS modes (Config.TLSMode).
const (
	TLSDisabled   = "disabled"
	TLSPermissive = "permissive"
	TLSEnforcing  = "enforcing"
)

// DefaultTLSHandshakeTimeout bounds a TLS handshake when Config.TLSHandshakeTimeout is 0.
const DefaultTLSHandshakeTimeout = 10 * time.Second

// tlsRecordTypeHandshake is the first byte of a TLS ClientHello record.
const tlsRecordTypeHandshake = 0x16

// LoadServerTLS reads a PEM certificate chain and its private key (the files named by the
// config keys tlsCertFile and tlsKeyFile) into a server *tls.Config (TLS 1.2 at least).
func LoadServerTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("netio: load TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// tlsEnabled reports whether the server speaks TLS (permissive or enforcing).
func (c *Config) tlsEnabled() bool {
	return c.TLSMode == TLSPermissive || c.TLSMode == TLSEnforcing
}

func (c *Config) tlsHandshakeTimeout() time.Duration {
	if c.TLSHandshakeTimeout > 0 {
		return c.TLSHandshakeTimeout
	}
	return DefaultTLSHandshakeTimeout
}

func (c *Config) validateTLS() error {
	switch c.TLSMode {
	case "", TLSDisabled:
		return nil
	case TLSPermissive, TLSEnforcing:
	default:
		return fmt.Errorf("%w: tlsServerMode %q: want %q, %q or %q", ErrConfig, c.TLSMode,
			TLSDisabled, TLSPermissive, TLSEnforcing)
	}
	if c.TLS == nil || (len(c.TLS.Certificates) == 0 && c.TLS.GetCertificate == nil && c.TLS.GetConfigForClient == nil) {
		return fmt.Errorf("%w: tlsServerMode %s needs a server certificate (TLS)", ErrConfig, c.TLSMode)
	}
	if c.TLSHandshakeTimeout < 0 {
		return fmt.Errorf("%w: TLSHandshakeTimeout %v < 0", ErrConfig, c.TLSHandshakeTimeout)
	}
	return nil
}

// startTLS turns an accepted connection into the server side of a TLS connection (or, in
// permissive mode, a plain one when the first byte says so). It runs on the connection's
// goroutine before the writer goroutine starts and before the handler sees the connection,
// so it may set sc.nc and sc.rd; only sc.raw is shared (abort closes it). ctx ends with the
// server's Stop.
func (sc *stdConn) startTLS(ctx context.Context, mode string, cfg *tls.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// Reading the first byte is not context-aware: closing the socket when ctx ends unblocks
	// it (and the handshake, which also watches ctx itself).
	unwatch := context.AfterFunc(ctx, func() { _ = sc.raw.Close() })
	fail := func(err error) error {
		unwatch()
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr // the socket error says only "use of closed network connection"
		}
		return fmt.Errorf("%w: %v: %w", ErrTLSHandshake, sc.core.remote, err)
	}
	conn := sc.raw
	if mode == TLSPermissive {
		var first [1]byte
		if _, err := io.ReadFull(sc.raw, first[:]); err != nil {
			return fail(fmt.Errorf("waiting for the first byte: %w", err))
		}
		if first[0] != tlsRecordTypeHandshake {
			if !unwatch() {
				return fail(errors.New("stopped"))
			}
			// A plain client: replay the byte to the frame reader; writes stay on the raw
			// socket (vectored writes need the *net.TCPConn itself).
			sc.rd = io.MultiReader(bytes.NewReader(first[:]), sc.raw)
			return nil
		}
		conn = &prefixConn{Conn: sc.raw, prefix: first[:]}
	}
	tc := tls.Server(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		return fail(err)
	}
	if !unwatch() { // ctx ended just as the handshake finished: the socket is closed
		return fail(errors.New("stopped"))
	}
	sc.nc, sc.rd = tc, tc
	return nil
}

// prefixConn is a net.Conn whose first reads return prefix (bytes already read off the
// socket to sniff the protocol) before reading the socket.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
