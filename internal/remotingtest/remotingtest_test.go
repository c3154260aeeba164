package remotingtest

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// peer is the server end of one connection, driven by the test.
type peer struct {
	t  *testing.T
	nc net.Conn
	fr *codec.FrameReader
}

// listen accepts one connection, dials it with Dial and returns both ends.
func listen(t *testing.T) (*Conn, *peer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			accepted <- nc
		}
		close(accepted)
	}()
	c := Dial(t, ln.Addr().String())
	nc := <-accepted
	require.NotNil(t, nc)
	t.Cleanup(func() { _ = nc.Close() })
	return c, &peer{t: t, nc: nc, fr: codec.NewFrameReader(nc, 0)}
}

// recv reads one request.
func (p *peer) recv() *codec.RemotingCommand {
	p.t.Helper()
	require.NoError(p.t, p.nc.SetReadDeadline(time.Now().Add(Timeout)))
	payload, err := p.fr.Next()
	require.NoError(p.t, err)
	cmd, err := codec.DecodeCommand(payload)
	require.NoError(p.t, err)
	return cmd
}

// frame encodes cmd.
func (p *peer) frame(cmd *codec.RemotingCommand) []byte {
	p.t.Helper()
	b, err := cmd.AppendFrame(nil)
	require.NoError(p.t, err)
	return b
}

func (p *peer) write(b []byte) {
	p.t.Helper()
	_, err := p.nc.Write(b)
	require.NoError(p.t, err)
}

// answer writes the response to req with body.
func (p *peer) answer(req *codec.RemotingCommand, body string) {
	p.t.Helper()
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.Body = []byte(body)
	p.write(p.frame(resp))
}

func TestCallGivesFreshOpaques(t *testing.T) {
	c, p := listen(t)
	for want := int32(1); want <= 3; want++ {
		done := make(chan *codec.RemotingCommand, 1)
		go func() { done <- c.Call(codec.NewRequest(codec.RequestGetMaxOffset, nil, nil)) }()
		req := p.recv()
		require.Equal(t, want, req.Opaque)
		p.answer(req, "answer")
		resp := <-done
		require.Equal(t, want, resp.Opaque)
		require.Equal(t, "answer", string(resp.Body))
	}
}

// Responses arrive out of order and interleaved with a request from the peer: each waiter
// gets its own, Next the peer's request.
func TestAwaitMatchesOpaquesNextTakesTheRest(t *testing.T) {
	c, p := listen(t)
	first := c.Request(codec.NewRequest(codec.RequestPullMessage, nil, nil))
	second := c.Request(codec.NewRequest(codec.RequestSendMessage, nil, nil))
	reqs := []*codec.RemotingCommand{p.recv(), p.recv()}
	var wg sync.WaitGroup
	got := make([]*codec.RemotingCommand, 2)
	errs := make([]error, 2)
	for i, opaque := range []int32{first, second} {
		wg.Go(func() { got[i], errs[i] = c.TryAwait(opaque, Timeout) })
	}
	push := codec.NewRequest(codec.RequestNotifyConsumerIdsChanged, nil, nil)
	push.Opaque = first // the peer's own opaque space: not a response
	p.write(p.frame(push))
	p.answer(reqs[1], "second")
	p.answer(reqs[0], "first")
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	require.Equal(t, "first", string(got[0].Body))
	require.Equal(t, "second", string(got[1].Body))
	next := c.Next()
	require.False(t, next.IsResponse())
	require.Equal(t, int32(codec.RequestNotifyConsumerIdsChanged), next.Code)
}

// A wait that times out in the middle of a frame leaves its bytes for the next one.
func TestTimeoutKeepsAPartialFrame(t *testing.T) {
	c, p := listen(t)
	opaque := c.Request(codec.NewRequest(codec.RequestGetMaxOffset, nil, nil))
	req := p.recv()
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.Body = []byte("split in two")
	frame := p.frame(resp)
	p.write(frame[:len(frame)/2])
	_, err := c.TryAwait(opaque, 20*time.Millisecond)
	require.ErrorIs(t, err, ErrTimeout)
	p.write(frame[len(frame)/2:])
	require.Equal(t, "split in two", string(c.Await(opaque).Body))
}

func TestWaitersLearnTheConnectionEnded(t *testing.T) {
	c, p := listen(t)
	opaque := c.Request(codec.NewRequest(codec.RequestGetMaxOffset, nil, nil))
	p.recv()
	p.write([]byte{0, 0, 0, 40, 0}) // a frame cut short
	require.NoError(t, p.nc.Close())
	_, err := c.TryAwait(opaque, Timeout)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	_, err = c.TryNext(Timeout)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "sticky")
	require.NoError(t, c.Close())
	_, err = c.TryNext(Timeout)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF, "the first reason stays")
}

func TestExpectClosed(t *testing.T) {
	c, p := listen(t)
	c.Write([]byte("garbage"))
	require.NoError(t, p.nc.Close())
	c.ExpectClosed()

	c, p = listen(t)
	p.write([]byte{1})
	err := c.TryExpectClosed(Timeout)
	require.ErrorContains(t, err, "1 bytes arrived instead of a close")

	c, _ = listen(t)
	require.ErrorIs(t, c.TryExpectClosed(time.Millisecond), ErrTimeout)
}

func TestOpenHasOnlyTheTryMethods(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		nc, err := ln.Accept()
		if err == nil {
			_ = nc.Close()
		}
	}()
	c, err := Open(ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	require.PanicsWithValue(t, "remotingtest: a Conn from Open has no test to fail (use the Try methods): remotingtest: no frame: "+
		"remotingtest: connection ended: EOF", func() { c.Next() })
	_, err = c.TryNext(Timeout)
	require.True(t, errors.Is(err, io.EOF))
}

// Once the peer has gone, a request is not written: no answer could be read.
func TestRequestAfterTheEnd(t *testing.T) {
	c, p := listen(t)
	require.NoError(t, p.nc.Close())
	c.ExpectClosed()
	_, err := c.TryRequest(codec.NewRequest(codec.RequestGetMaxOffset, nil, nil))
	require.ErrorIs(t, err, io.EOF)
	require.ErrorIs(t, c.Err(), io.EOF)
}
