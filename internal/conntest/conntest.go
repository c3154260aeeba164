// Package conntest is a netio.Conn for tests that drive a request processor directly, without a
// network: it keeps every frame written to it and decodes them on demand.
//
// It is apart from internal/remotingtest (a client over a real socket) because it imports netio,
// which remotingtest must not: netio's own tests use remotingtest.
package conntest

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"sync"
	"testing"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// Conn keeps what is written to it. Only ID, RemoteAddr, LocalAddr, WriteCommand, WriteFrame,
// Context and SetContext are implemented; the other netio.Conn methods panic (nil embedded interface).
// Safe for concurrent use.
type Conn struct {
	netio.Conn
	// Remote and Local are the addresses it reports; zero: 127.0.0.1:40000 and 127.0.0.1:10911.
	Remote, Local netip.AddrPort

	mu     sync.Mutex
	frames [][]byte // complete frames (header + bodies), copied
	ctx    any
}

// Context is what SetContext stored, nil before. (No read pass ends here, so the broker's send plane,
// which keeps its per-connection group there from a connection's first pass end on, never groups.)
func (c *Conn) Context() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctx
}

// SetContext stores v for Context.
func (c *Conn) SetContext(v any) {
	c.mu.Lock()
	c.ctx = v
	c.mu.Unlock()
}

// ID is 1.
func (c *Conn) ID() uint64 { return 1 }

// RemoteAddr is Remote, or 127.0.0.1:40000.
func (c *Conn) RemoteAddr() netip.AddrPort {
	if c.Remote.IsValid() {
		return c.Remote
	}
	return netip.MustParseAddrPort("127.0.0.1:40000")
}

// LocalAddr is Local, or 127.0.0.1:10911.
func (c *Conn) LocalAddr() netip.AddrPort {
	if c.Local.IsValid() {
		return c.Local
	}
	return netip.MustParseAddrPort("127.0.0.1:10911")
}

// WriteCommand keeps cmd's frame.
func (c *Conn) WriteCommand(cmd *codec.RemotingCommand) error {
	frame, err := cmd.AppendFrame(nil)
	if err != nil {
		return err
	}
	c.keep(frame)
	return nil
}

// WriteFrame keeps header and bodies as one frame and calls release at once.
func (c *Conn) WriteFrame(header []byte, bodies [][]byte, release func()) error {
	frame := append([]byte(nil), header...)
	for _, b := range bodies {
		frame = append(frame, b...)
	}
	c.keep(frame)
	if release != nil {
		release()
	}
	return nil
}

func (c *Conn) keep(frame []byte) {
	c.mu.Lock()
	c.frames = append(c.frames, frame)
	c.mu.Unlock()
}

// Responses decodes every frame written so far, in order; an error names the first frame whose
// length word does not count its bytes or that does not decode.
func (c *Conn) Responses() ([]*codec.RemotingCommand, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*codec.RemotingCommand, 0, len(c.frames))
	for i, f := range c.frames {
		if len(f) < 4 || int(binary.BigEndian.Uint32(f)) != len(f)-4 {
			return nil, fmt.Errorf("conntest: frame %d: the length word does not count its %d bytes", i, len(f))
		}
		cmd, err := codec.DecodeCommand(f[4:])
		if err != nil {
			return nil, fmt.Errorf("conntest: frame %d: %w", i, err)
		}
		out = append(out, cmd)
	}
	return out, nil
}

// MustResponses is Responses, failing t on an error.
func (c *Conn) MustResponses(t testing.TB) []*codec.RemotingCommand {
	t.Helper()
	out, err := c.Responses()
	if err != nil {
		t.Fatal(err)
	}
	return out
}
