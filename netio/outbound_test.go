package netio

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

func TestOutboundBatch(t *testing.T) {
	var o outbound
	a := request(codeEcho, 1, []byte("alpha"))
	b := request(codeEcho, 2, []byte("beta"))
	frame := codec.NewResponse(a, codec.ResponseSuccess, "")
	frame.Body = []byte("gammadelta")
	header, err := frame.AppendFrameHeader(nil)
	require.NoError(t, err)
	released := 0

	require.NoError(t, o.appendCommand(a))
	require.NoError(t, o.appendCommand(b)) // merges with a: one vector
	require.Len(t, o.segs, 1)
	o.appendFrame(header, [][]byte{[]byte("gamma"), nil, []byte("delta")}, func() { released++ })
	require.Len(t, o.segs, 3) // header joined the buf range; the empty body is skipped
	require.NoError(t, o.appendCommand(a))
	require.Len(t, o.segs, 4)

	var want []byte
	for _, f := range [][]byte{frameOf(t, a), frameOf(t, b), frameOf(t, frame), frameOf(t, a)} {
		want = append(want, f...)
	}
	require.Equal(t, want, bytes.Join(o.vectors(), nil))
	require.Equal(t, len(want), o.bytes)
	require.Equal(t, 4, o.frames)

	// Taking back the last command restores the batch exactly, merged segment included.
	bufLen, segs, n, frames := o.mark()
	require.NoError(t, o.appendCommand(b))
	o.truncate(bufLen, segs, n, frames)
	require.Equal(t, want, bytes.Join(o.vectors(), nil))
	require.Equal(t, 4, o.frames)

	// A failed encode queues nothing.
	bad := request(codeEcho, 3, nil)
	bad.SerializeType = 7
	require.Error(t, o.appendCommand(bad))
	require.Equal(t, want, bytes.Join(o.vectors(), nil))

	require.False(t, o.empty())
	o.done()
	require.Equal(t, 1, released)
	require.True(t, o.empty())
	require.Zero(t, o.bytes)
	o.done()
	require.Equal(t, 1, released)
}

// consume drops exactly the bytes a direct write took, wherever it cut: inside a buf range, at a
// segment's end, inside an external body, or all of it; frames and releases stay.
func TestOutboundConsume(t *testing.T) {
	build := func() (*outbound, []byte, *int) {
		o := &outbound{}
		released := 0
		o.appendFrame([]byte("head1"), [][]byte{[]byte("body-one"), []byte("two")}, func() { released++ })
		o.appendFrame([]byte("head2"), nil, nil) // a buf range of its own (the bodies came between)
		o.appendFrame([]byte("head3"), [][]byte{[]byte("three")}, nil)
		return o, []byte("head1body-onetwohead2head3three"), &released
	}
	o, all, _ := build()
	require.Equal(t, all, bytes.Join(o.vectors(), nil))
	for n := 0; n <= len(all); n++ {
		o, all, released := build()
		o.consume(n)
		require.Equal(t, all[n:], bytes.Join(o.vectors(), nil), "after consuming %d", n)
		require.Equal(t, len(all)-n, o.bytes)
		require.Equal(t, 3, o.frames)
		require.False(t, o.empty(), "the release stays until the rest is written")
		o.done()
		require.Equal(t, 1, *released)
	}
}
