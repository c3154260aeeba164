package bench

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// clientVersion is the MQVersion ordinal mqbench sends (V4_9_4): recent enough that a
// Java name server answers with standard JSON route data (PROTOCOL §4.2), old enough not
// to ask a 5.x broker for anything 5.x-only.
const clientVersion int32 = 401

// newRequest builds a request as mqbench sends it: JSON header, language JAVA, version
// clientVersion (the Java client's defaults for the send path it imitates).
func newRequest(code codec.RequestCode, ext map[string]string, body []byte) *codec.RemotingCommand {
	return &codec.RemotingCommand{
		Code:          int32(code),
		Language:      codec.LanguageJava,
		Version:       clientVersion,
		ExtFields:     ext,
		Body:          body,
		SerializeType: codec.SerializeJSON,
	}
}

// controlConn is a connection for control requests (route lookups, topic creation,
// offsets): one request at a time, no pipelining. Not safe for concurrent use.
type controlConn struct {
	addr    string
	nc      net.Conn
	fr      *codec.FrameReader
	opaque  int32
	timeout time.Duration
	buf     []byte
}

// dialControl connects to addr; timeout bounds the dial and each call.
func dialControl(ctx context.Context, addr string, timeout time.Duration) (*controlConn, error) {
	d := net.Dialer{Timeout: timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench: dial %s: %w", addr, err)
	}
	return &controlConn{addr: addr, nc: nc, fr: codec.NewFrameReader(nc, 0), timeout: timeout}, nil
}

// call sends req and returns its response. The response's Body is copied, so it stays
// valid after the next call. Responses to other opaques (none are expected) are skipped.
func (c *controlConn) call(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	c.opaque++
	req.Opaque = c.opaque
	var err error
	c.buf, err = req.AppendFrame(c.buf[:0])
	if err != nil {
		return nil, fmt.Errorf("bench: encode %v: %w", codec.RequestCode(req.Code), err)
	}
	if err := c.nc.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", c.addr, err)
	}
	if _, err := c.nc.Write(c.buf); err != nil {
		return nil, fmt.Errorf("bench: write to %s: %w", c.addr, err)
	}
	for {
		payload, err := c.fr.Next()
		if err != nil {
			return nil, fmt.Errorf("bench: read from %s: %w", c.addr, err)
		}
		resp, err := codec.DecodeCommand(payload)
		if err != nil {
			return nil, fmt.Errorf("bench: response from %s: %w", c.addr, err)
		}
		if !resp.IsResponse() || resp.Opaque != req.Opaque {
			continue
		}
		resp.Body = append([]byte(nil), resp.Body...)
		return resp, nil
	}
}

// callOK is call that turns a non-SUCCESS response into an ErrResponse error.
func (c *controlConn) callOK(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	resp, err := c.call(req)
	if err != nil {
		return nil, err
	}
	if resp.Code != int32(codec.ResponseSuccess) {
		return resp, responseError(c.addr, req, resp)
	}
	return resp, nil
}

func responseError(addr string, req, resp *codec.RemotingCommand) error {
	return fmt.Errorf("%w: %v to %s: %v (%d) %q", ErrResponse, codec.RequestCode(req.Code), addr,
		codec.ResponseCode(resp.Code), resp.Code, resp.Remark)
}

func (c *controlConn) close() error { return c.nc.Close() }
