package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// fuzzSeedFrames returns whole frames (length word included) of both serializations.
func fuzzSeedFrames(tb testing.TB) [][]byte {
	var out [][]byte
	_, cmds := testFrames(tb)
	for _, c := range cmds {
		for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
			c := *c
			c.SerializeType = st
			frame, err := c.AppendFrame(nil)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, frame)
		}
	}
	return out
}

// FuzzCutFrame: CutFrame never panics, its answers agree with the length word and the cap,
// do not change as more bytes arrive (an error or a length, once given, stays), and a
// FrameReader reading the same bytes one at a time cuts the same frames.
func FuzzCutFrame(f *testing.F) {
	for _, fr := range fuzzSeedFrames(f) {
		f.Add(fr, 0)
		f.Add(append(append([]byte(nil), fr...), fr...), len(fr))
	}
	f.Add([]byte{0, 0, 0, 3}, 0)
	f.Add([]byte{0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0}, 0)
	f.Add([]byte{0, 0, 0, 8, 2, 0, 0, 0, 1, 2, 3, 4}, 100)
	f.Fuzz(func(t *testing.T, buf []byte, maxFrameBytes int) {
		n, err := CutFrame(buf, maxFrameBytes)
		limit := maxFrameBytes
		if limit <= 0 {
			limit = DefaultMaxFrameBytes
		}
		if err != nil {
			if n != 0 {
				t.Fatalf("error with length %d", n)
			}
			if !errors.Is(err, ErrFrameTooLarge) && !errors.Is(err, ErrFrameTooShort) &&
				!errors.Is(err, ErrHeaderLength) && !errors.Is(err, ErrSerializeType) {
				t.Fatalf("untyped error %v", err)
			}
		}
		if n > 0 {
			word := int(binary.BigEndian.Uint32(buf))
			if n != word+4 || n > len(buf) || n > limit || n < 8 {
				t.Fatalf("length %d: word %d, buffer %d, limit %d", n, word, len(buf), limit)
			}
		}
		if err == nil && n == 0 && len(buf) >= 8 && int64(binary.BigEndian.Uint32(buf))+4 <= int64(len(buf)) {
			t.Fatalf("complete frame not cut")
		}
		// Prefixes: "need more" until the verdict, then the same verdict.
		for i := 0; i < len(buf); i++ {
			pn, perr := CutFrame(buf[:i], maxFrameBytes)
			switch {
			case perr != nil:
				if err == nil || perr.Error() != err.Error() {
					t.Fatalf("prefix %d: error %v, whole: %v", i, perr, err)
				}
			case pn > 0:
				if pn != n {
					t.Fatalf("prefix %d cut %d, whole cut %d", i, pn, n)
				}
			}
		}
		// FrameReader over one byte per Read yields the frames repeated CutFrame yields.
		fr := NewFrameReader(iotest.OneByteReader(bytes.NewReader(buf)), maxFrameBytes)
		rest := buf
		for {
			n, err := CutFrame(rest, maxFrameBytes)
			payload, rerr := fr.Next()
			if err != nil {
				if rerr == nil || rerr.Error() != err.Error() {
					t.Fatalf("reader error %v, cutter error %v", rerr, err)
				}
				return
			}
			if n == 0 {
				want := io.EOF
				if len(rest) > 0 {
					want = io.ErrUnexpectedEOF
				}
				if !errors.Is(rerr, want) {
					t.Fatalf("reader at end: %v, want %v", rerr, want)
				}
				return
			}
			if rerr != nil || !bytes.Equal(payload, rest[4:n]) {
				t.Fatalf("reader payload %q (%v), cutter %q", payload, rerr, rest[4:n])
			}
			rest = rest[n:]
		}
	})
}

// FuzzDecodeCommand: any payload decodes or fails with a typed error; a decoded command
// re-encodes to a frame that CutFrame accepts and that decodes to the same command.
func FuzzDecodeCommand(f *testing.F) {
	for _, fr := range fuzzSeedFrames(f) {
		f.Add(fr[4:])
	}
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := DecodeCommand(payload)
		if err != nil {
			for _, s := range []error{ErrFrameTooShort, ErrHeaderLength, ErrSerializeType, ErrHeaderJSON, ErrHeaderRocketMQ, ErrHeaderLimit} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("untyped error %v", err)
		}
		frame, err := c.AppendFrame(nil)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		n, err := CutFrame(frame, 1<<30)
		if err != nil || n != len(frame) {
			t.Fatalf("cut %d of %d: %v", n, len(frame), err)
		}
		again, err := DecodeCommand(frame[4:])
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", frame, err)
		}
		if !headerFieldsEqual(c, again) || c.SerializeType != again.SerializeType || !bytes.Equal(c.Body, again.Body) {
			t.Fatalf("round trip changed the command:\n%+v\n%+v", c, again)
		}
	})
}

// rocketMQEntriesSortedUnique reports whether the header's map area lists strictly
// ascending keys (then the encoder must reproduce the header byte for byte).
func rocketMQEntriesSortedUnique(header []byte) bool {
	remarkLen := int(binary.BigEndian.Uint32(header[13:]))
	area := header[17+remarkLen+4:]
	prev := ""
	for p, first := 0, true; p < len(area); first = false {
		kl := int(binary.BigEndian.Uint16(area[p:]))
		k := string(area[p+2 : p+2+kl])
		if !first && k <= prev {
			return false
		}
		prev = k
		p += 2 + kl
		p += 4 + int(binary.BigEndian.Uint32(area[p:]))
	}
	return true
}

// FuzzRocketMQHeader: the binary header decoder never panics; a decoded header re-encodes
// to one that decodes equal, and byte-identically when its keys were sorted and unique.
func FuzzRocketMQHeader(f *testing.F) {
	f.Add(goldenRocketMQRequest)
	f.Add(goldenRocketMQResponse)
	for _, fr := range fuzzSeedFrames(f) {
		if fr[4] == byte(SerializeRocketMQ) {
			f.Add(fr[8 : 8+int(binary.BigEndian.Uint32(fr[4:])&maxHeaderLen)])
		}
	}
	f.Fuzz(func(t *testing.T, header []byte) {
		c := &RemotingCommand{SerializeType: SerializeRocketMQ}
		if err := decodeRocketMQHeader(c, header); err != nil {
			if !errors.Is(err, ErrHeaderRocketMQ) && !errors.Is(err, ErrHeaderLimit) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		enc, err := appendRocketMQHeader(nil, c)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again := &RemotingCommand{SerializeType: SerializeRocketMQ}
		if err := decodeRocketMQHeader(again, enc); err != nil {
			t.Fatalf("decode of re-encoded: %v", err)
		}
		if c.Code != again.Code || c.Language != again.Language || c.Version != again.Version ||
			c.Opaque != again.Opaque || c.Flag != again.Flag || c.Remark != again.Remark ||
			len(c.ExtFields) != len(again.ExtFields) {
			t.Fatalf("round trip changed the header:\n%+v\n%+v", c, again)
		}
		for k, v := range c.ExtFields {
			if w, ok := again.ExtFields[k]; !ok || w != v {
				t.Fatalf("ext %q: %q -> %q", k, v, w)
			}
		}
		if rocketMQEntriesSortedUnique(header) && !bytes.Equal(enc, header) {
			t.Fatalf("sorted header re-encodes differently:\n% x\n% x", header, enc)
		}
	})
}
