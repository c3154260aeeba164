package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"
)

// testFrames returns a stream of several frames of both serializations, and the commands
// in it.
func testFrames(t testing.TB) ([]byte, []*RemotingCommand) {
	t.Helper()
	cmds := []*RemotingCommand{
		{Code: 105, Language: LanguageGo, Version: 317, Opaque: 1, ExtFields: map[string]string{"topic": "TopicTest"}},
		{Code: 10, Language: LanguageGo, Version: 317, Opaque: 2, ExtFields: map[string]string{
			"topic": "T", "properties": "KEYS\x01k1\x02UNIQ_KEY\x01ABC\x02"}, Body: bytes.Repeat([]byte("b"), 300)},
		{Code: 0, Language: LanguageJava, Version: 479, Opaque: 2, Flag: FlagResponse, Remark: "ok",
			SerializeType: SerializeRocketMQ, ExtFields: map[string]string{"queueId": "3"}, Body: []byte{0, 1, 2}},
		{Code: 34, Language: LanguageJava, Version: 479, Opaque: 3, Body: []byte(`{"clientID":"x"}`)},
		{Code: 40, SerializeType: SerializeRocketMQ, Flag: FlagOneway},
	}
	var stream []byte
	for _, c := range cmds {
		var err error
		stream, err = c.AppendFrame(stream)
		require.NoError(t, err)
	}
	return stream, cmds
}

func requireSameCommand(t testing.TB, want, got *RemotingCommand) {
	t.Helper()
	require.Equal(t, want.Code, got.Code, "code")
	require.Equal(t, want.Language, got.Language, "language")
	require.Equal(t, want.Version, got.Version, "version")
	require.Equal(t, want.Opaque, got.Opaque, "opaque")
	require.Equal(t, want.Flag, got.Flag, "flag")
	require.Equal(t, want.Remark, got.Remark, "remark")
	require.Equal(t, want.SerializeType, got.SerializeType, "serialize type")
	require.Equal(t, len(want.ExtFields), len(got.ExtFields), "ext count")
	for k, v := range want.ExtFields {
		require.Contains(t, got.ExtFields, k)
		require.Equal(t, v, got.ExtFields[k], "ext %q", k)
	}
	require.True(t, bytes.Equal(want.Body, got.Body), "body")
}

func TestCutFrameWhole(t *testing.T) {
	stream, cmds := testFrames(t)
	for i, want := range cmds {
		n, err := CutFrame(stream, 0)
		require.NoError(t, err)
		require.Greater(t, n, 0, "frame %d", i)
		require.Equal(t, int(binary.BigEndian.Uint32(stream))+4, n)
		got, err := DecodeCommand(stream[4:n])
		require.NoError(t, err)
		requireSameCommand(t, want, got)
		stream = stream[n:]
	}
	require.Empty(t, stream)
}

// TestCutFrameByteByByte feeds the stream one byte at a time: CutFrame must report "need
// more" for every proper prefix and the exact length once the frame is complete.
func TestCutFrameByteByByte(t *testing.T) {
	stream, cmds := testFrames(t)
	var pending []byte
	var got []*RemotingCommand
	for _, b := range stream {
		pending = append(pending, b)
		n, err := CutFrame(pending, DefaultMaxFrameBytes)
		require.NoError(t, err)
		if n == 0 {
			continue
		}
		require.Equal(t, len(pending), n, "a frame completes exactly at the byte that ends it")
		c, err := DecodeCommand(bytes.Clone(pending[4:n]))
		require.NoError(t, err)
		got = append(got, c)
		pending = pending[:0]
	}
	require.Empty(t, pending)
	require.Len(t, got, len(cmds))
	for i := range cmds {
		requireSameCommand(t, cmds[i], got[i])
	}
}

func TestCutFrameRandomChunks(t *testing.T) {
	stream, cmds := testFrames(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 200; round++ {
		var pending []byte
		decoded := 0
		for off := 0; off < len(stream); {
			chunk := 1 + rng.IntN(400)
			end := min(off+chunk, len(stream))
			pending = append(pending, stream[off:end]...)
			off = end
			for {
				n, err := CutFrame(pending, 0)
				require.NoError(t, err)
				if n == 0 {
					break
				}
				c, err := DecodeCommand(pending[4:n])
				require.NoError(t, err)
				requireSameCommand(t, cmds[decoded], c)
				decoded++
				pending = pending[n:]
			}
		}
		require.Equal(t, len(cmds), decoded)
		require.Empty(t, pending)
	}
}

func frameBytes(frameLen uint32, headerWord uint32, rest ...byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, frameLen)
	b = binary.BigEndian.AppendUint32(b, headerWord)
	return append(b, rest...)
}

func TestCutFrameErrors(t *testing.T) {
	tests := []struct {
		name string
		buf  []byte
		max  int
		want error
	}{
		{"length word 0", []byte{0, 0, 0, 0}, 0, ErrFrameTooShort},
		{"length word 3", []byte{0, 0, 0, 3}, 0, ErrFrameTooShort},
		{"over default max", []byte{0x01, 0x00, 0x00, 0x00}, 0, ErrFrameTooLarge},     // 16 MiB + 4
		{"negative length", []byte{0xFF, 0xFF, 0xFF, 0xFF}, 0, ErrFrameTooLarge},      // huge as unsigned
		{"over custom max", frameBytes(100, 10), 100, ErrFrameTooLarge},               // 104 > 100
		{"unknown serialize type", frameBytes(20, 2<<24|4), 0, ErrSerializeType},      // only 8 bytes present
		{"serialize type 0xFF", frameBytes(20, 0xFF<<24), 0, ErrSerializeType},        //
		{"header beyond frame", frameBytes(20, 17), 0, ErrHeaderLength},               // 17 > 16
		{"header beyond frame, rocketmq", frameBytes(4, 1<<24|1), 0, ErrHeaderLength}, //
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := CutFrame(tt.buf, tt.max)
			require.ErrorIs(t, err, tt.want)
			require.Zero(t, n)
		})
	}
	// At the limit exactly: accepted.
	exact := frameBytes(96, 0, make([]byte, 92)...)
	n, err := CutFrame(exact, 100)
	require.NoError(t, err)
	require.Equal(t, 100, n)
	// Errors appear as soon as the bytes that show them are present, before the frame is.
	n, err = CutFrame(frameBytes(1000, 3<<24), 0)
	require.ErrorIs(t, err, ErrSerializeType)
	require.Zero(t, n)
	// Fewer than 4 bytes: need more, never an error.
	for i := 0; i < 4; i++ {
		n, err := CutFrame([]byte{0xFF, 0xFF, 0xFF}[:i], 0)
		require.NoError(t, err)
		require.Zero(t, n)
	}
	// 4..7 bytes of a valid length: need more.
	n, err = CutFrame([]byte{0, 0, 0, 10, 0, 0}, 0)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestCutFrameZeroAllocs(t *testing.T) {
	stream, _ := testFrames(t)
	allocs := testing.AllocsPerRun(100, func() {
		for buf := stream; len(buf) > 0; {
			n, err := CutFrame(buf, 0)
			if err != nil || n == 0 {
				panic("bad stream")
			}
			buf = buf[n:]
		}
		if n, _ := CutFrame(stream[:7], 0); n != 0 {
			panic("short")
		}
	})
	require.Zero(t, allocs)
}

func TestFrameReaderOneByte(t *testing.T) {
	stream, cmds := testFrames(t)
	fr := NewFrameReader(iotest.OneByteReader(bytes.NewReader(stream)), 0)
	for i, want := range cmds {
		payload, err := fr.Next()
		require.NoError(t, err, "frame %d", i)
		got, err := DecodeCommand(payload)
		require.NoError(t, err)
		requireSameCommand(t, want, got)
	}
	_, err := fr.Next()
	require.ErrorIs(t, err, io.EOF)
	_, err = fr.Next()
	require.ErrorIs(t, err, io.EOF, "sticky")
}

func TestFrameReaderDataWithEOF(t *testing.T) {
	stream, cmds := testFrames(t)
	// DataErrReader returns the last bytes together with io.EOF.
	fr := NewFrameReader(iotest.DataErrReader(bytes.NewReader(stream)), 0)
	for range cmds {
		_, err := fr.Next()
		require.NoError(t, err)
	}
	_, err := fr.Next()
	require.ErrorIs(t, err, io.EOF)
}

func TestFrameReaderLargeFrameGrows(t *testing.T) {
	big := &RemotingCommand{Code: 11, Opaque: 9, Body: bytes.Repeat([]byte{7}, 100_000)}
	stream, err := big.AppendFrame(nil)
	require.NoError(t, err)
	small := &RemotingCommand{Code: 12, Opaque: 10}
	stream, err = small.AppendFrame(stream)
	require.NoError(t, err)
	fr := NewFrameReader(iotest.HalfReader(bytes.NewReader(stream)), 0)
	p, err := fr.Next()
	require.NoError(t, err)
	c, err := DecodeCommand(p)
	require.NoError(t, err)
	requireSameCommand(t, big, c)
	p, err = fr.Next()
	require.NoError(t, err)
	c, err = DecodeCommand(p)
	require.NoError(t, err)
	requireSameCommand(t, small, c)
}

func TestFrameReaderShrinksAfterBigFrame(t *testing.T) {
	big := &RemotingCommand{Code: 11, Body: bytes.Repeat([]byte{7}, 3<<20)}
	bigFrame, err := big.AppendFrame(nil)
	require.NoError(t, err)
	small := &RemotingCommand{Code: 12}
	stream, err := small.AppendFrame(bytes.Clone(bigFrame))
	require.NoError(t, err)
	fr := NewFrameReader(bytes.NewReader(stream), 0)
	p, err := fr.Next()
	require.NoError(t, err)
	require.Len(t, p, len(bigFrame)-4)
	require.Greater(t, cap(fr.buf), frameReaderShrinkBytes)
	p, err = fr.Next()
	require.NoError(t, err)
	c, err := DecodeCommand(p)
	require.NoError(t, err)
	require.Equal(t, int32(12), c.Code)
	_, err = fr.Next()
	require.ErrorIs(t, err, io.EOF)
	require.LessOrEqual(t, cap(fr.buf), frameReaderMinBytes, "dropped once empty")
}

func TestFrameReaderErrors(t *testing.T) {
	stream, _ := testFrames(t)
	// Truncated inside a frame.
	fr := NewFrameReader(bytes.NewReader(stream[:len(stream)-1]), 0)
	var err error
	for err == nil {
		_, err = fr.Next()
	}
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)

	// Empty stream: clean EOF.
	_, err = NewFrameReader(bytes.NewReader(nil), 0).Next()
	require.ErrorIs(t, err, io.EOF)

	// Oversized announcement: rejected from the first 4 bytes, without buffering it.
	huge := frameBytes(DefaultMaxFrameBytes, 0)
	fr = NewFrameReader(bytes.NewReader(huge), 0)
	_, err = fr.Next()
	require.ErrorIs(t, err, ErrFrameTooLarge)
	require.LessOrEqual(t, cap(fr.buf), frameReaderMinBytes)

	// A 1 MiB announcement followed by a few bytes buffers only what arrived.
	fr = NewFrameReader(bytes.NewReader(frameBytes(1<<20, 0, 'x')), 0)
	_, err = fr.Next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.LessOrEqual(t, cap(fr.buf), frameReaderMinBytes)

	// Garbage serialize type.
	_, err = NewFrameReader(bytes.NewReader(frameBytes(8, 9<<24)), 0).Next()
	require.ErrorIs(t, err, ErrSerializeType)

	// Reader errors pass through.
	boom := errors.New("boom")
	_, err = NewFrameReader(iotest.ErrReader(boom), 0).Next()
	require.ErrorIs(t, err, boom)

	// A tiny cap still terminates (every frame is at least 8 bytes).
	_, err = NewFrameReader(bytes.NewReader(stream), 3).Next()
	require.ErrorIs(t, err, ErrFrameTooLarge)
}

func TestFrameReaderCapExact(t *testing.T) {
	c := &RemotingCommand{Code: 1, Body: bytes.Repeat([]byte{1}, 5000)}
	frame, err := c.AppendFrame(nil)
	require.NoError(t, err)
	fr := NewFrameReader(iotest.OneByteReader(bytes.NewReader(frame)), len(frame))
	p, err := fr.Next()
	require.NoError(t, err)
	require.Equal(t, frame[4:], p)
	require.Equal(t, len(frame), cap(fr.buf), "grown to the cap, not past it")

	_, err = NewFrameReader(bytes.NewReader(frame), len(frame)-1).Next()
	require.ErrorIs(t, err, ErrFrameTooLarge)
}

// TestFrameReaderLargeFrameGate: a frame above the gate's size is admitted (with its length
// and header length) before its body is read, is read into a buffer of its own exact size,
// and leaves the reader's buffer small; frames at or below the size pass without the gate.
func TestFrameReaderLargeFrameGate(t *testing.T) {
	const gate = 64 << 10
	big := &RemotingCommand{Code: 11, Opaque: 1, ExtFields: map[string]string{"k": "v"}, Body: bytes.Repeat([]byte{7}, 3<<20)}
	atGate := &RemotingCommand{Code: 12, Opaque: 2}
	atGate.Body = bytes.Repeat([]byte{8}, gate-len(mustFrame(t, atGate))) // a frame of exactly gate bytes
	small := &RemotingCommand{Code: 13, Opaque: 3}
	var stream []byte
	for _, c := range []*RemotingCommand{small, big, atGate, big, small} {
		stream = append(stream, mustFrame(t, c)...)
	}
	require.Len(t, mustFrame(t, atGate), gate)
	bigFrame := mustFrame(t, big)
	headerLen := int(binary.BigEndian.Uint32(bigFrame[4:]) & maxHeaderLen)

	src := &countingReader{r: iotest.HalfReader(bytes.NewReader(stream))}
	fr := NewFrameReader(src, 0)
	var admitted [][2]int
	fr.SetLargeFrameGate(gate, func(frameBytes, headerBytes int) ([]byte, error) {
		// Of the big frame, no more than the reader's first buffer has been read yet.
		require.LessOrEqual(t, src.n, int64(len(mustFrame(t, small))+frameReaderMinBytes), "big frame read before admission")
		admitted = append(admitted, [2]int{frameBytes, headerBytes})
		src.n = -1 << 40 // only the first admission is checked for what was read before it
		return make([]byte, frameBytes), nil
	})
	for i, want := range []*RemotingCommand{small, big, atGate, big, small} {
		p, err := fr.Next()
		require.NoError(t, err, "frame %d", i)
		if want == big {
			require.Equal(t, len(bigFrame)-4, cap(p), "the gate's buffer")
		}
		c, err := DecodeCommand(p)
		require.NoError(t, err)
		requireSameCommand(t, want, c)
		require.LessOrEqual(t, cap(fr.buf), 2*gate, "reader buffer after frame %d", i)
	}
	_, err := fr.Next()
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, [][2]int{{len(bigFrame), headerLen}, {len(bigFrame), headerLen}}, admitted)

	// A gate error stops the reader (sticky) before the frame is read.
	boom := errors.New("closed while waiting")
	fr = NewFrameReader(bytes.NewReader(bigFrame), 0)
	fr.SetLargeFrameGate(gate, func(int, int) ([]byte, error) { return nil, boom })
	_, err = fr.Next()
	require.ErrorIs(t, err, boom)
	_, err = fr.Next()
	require.ErrorIs(t, err, boom)

	// A large frame cut short: unexpected EOF.
	fr = NewFrameReader(bytes.NewReader(bigFrame[:len(bigFrame)/2]), 0)
	fr.SetLargeFrameGate(gate, func(n, _ int) ([]byte, error) { return make([]byte, n), nil })
	_, err = fr.Next()
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
}

func mustFrame(t testing.TB, c *RemotingCommand) []byte {
	t.Helper()
	b, err := c.AppendFrame(nil)
	require.NoError(t, err)
	return b
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
