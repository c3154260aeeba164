package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// CutFrame inspects buf (the bytes received so far on a connection) and returns the total
// length of the first complete frame including its 4-byte length word, or 0 if more bytes
// are needed. maxFrameBytes caps that total (<= 0 means DefaultMaxFrameBytes), like the Java
// decoder's frameMaxLength.
//
// It rejects, as soon as the bytes that show it are present: a total above maxFrameBytes
// (ErrFrameTooLarge, from the first 4 bytes), a length word below 4 so there is no header
// word (ErrFrameTooShort), and, from the first 8 bytes, a header length beyond the frame
// (ErrHeaderLength) or an unknown serialize type (ErrSerializeType). A framing error means
// the stream cannot be resynchronised: close the connection.
//
// The frame's DecodeCommand payload is buf[4:frameLen]. No allocation on success or on
// "need more"; safe for concurrent use.
func CutFrame(buf []byte, maxFrameBytes int) (frameLen int, err error) {
	if len(buf) < 4 {
		return 0, nil
	}
	if maxFrameBytes <= 0 {
		maxFrameBytes = DefaultMaxFrameBytes
	}
	word := uint64(binary.BigEndian.Uint32(buf)) // unsigned: a negative int32 length is just huge
	if word < 4 {
		return 0, frameTooShort(word)
	}
	total := word + 4
	if total > uint64(maxFrameBytes) {
		return 0, frameTooLarge(total, maxFrameBytes)
	}
	if len(buf) < 8 {
		return 0, nil
	}
	hw := binary.BigEndian.Uint32(buf[4:])
	if st := SerializeType(hw >> 24); st != SerializeJSON && st != SerializeRocketMQ {
		return 0, serializeTypeError(st)
	}
	if headerLen := uint64(hw & maxHeaderLen); headerLen > word-4 {
		return 0, headerLengthError(headerLen, word-4)
	}
	if uint64(len(buf)) < total {
		return 0, nil
	}
	return int(total), nil
}

// The error constructors live out of line so that CutFrame's fast path stays small and
// allocation-free; they run only when the connection is about to be closed.

func frameTooShort(word uint64) error {
	return fmt.Errorf("%w: length word %d < 4", ErrFrameTooShort, word)
}

func frameTooLarge(total uint64, maxFrameBytes int) error {
	return fmt.Errorf("%w: %d bytes > max %d", ErrFrameTooLarge, total, maxFrameBytes)
}

func serializeTypeError(st SerializeType) error {
	return fmt.Errorf("%w: %d", ErrSerializeType, byte(st))
}

func headerLengthError(headerLen, room uint64) error {
	return fmt.Errorf("%w: header length %d > %d bytes after the header word", ErrHeaderLength, headerLen, room)
}

// frameReaderMinBytes is the FrameReader's first buffer size: it holds a typical request
// (header ~0.5 KiB + a small body) so most connections never grow it.
const frameReaderMinBytes = 4 << 10

// frameReaderShrinkBytes: a buffer grown beyond this for one big frame is dropped once it is
// empty again, so an idle connection does not keep megabytes pinned.
const frameReaderShrinkBytes = 1 << 20

// FrameReader cuts frames out of a byte stream that arrives in arbitrary pieces (down to one
// byte per Read), for the std net engine and for clients. Its buffer starts small and grows
// by doubling only as bytes actually arrive, never straight to a peer-announced length, and
// never beyond the frame cap: a peer that announces 16 MiB and sends nothing costs nothing.
// Not safe for concurrent use.
//
// With SetLargeFrameGate, a frame above a size is read differently: Next first asks the
// gate (which may wait, e.g. for a memory budget) and then reads the frame into a buffer of
// exactly its size, straight from the reader, which the next call drops.
type FrameReader struct {
	r             io.Reader
	maxFrameBytes int
	buf           []byte // buf[start:end] holds received, unconsumed bytes
	start, end    int
	err           error // sticky error returned by Next
	readErr       error // error the reader returned together with data, for the next fill

	largeFrameBytes int                                               // 0: no gate
	admitLarge      func(frameBytes, headerBytes int) ([]byte, error) // the gate
}

// NewFrameReader returns a FrameReader over r that rejects frames whose total length
// (length word included) exceeds maxFrameBytes (<= 0 means DefaultMaxFrameBytes).
func NewFrameReader(r io.Reader, maxFrameBytes int) *FrameReader {
	if maxFrameBytes <= 0 {
		maxFrameBytes = DefaultMaxFrameBytes
	}
	return &FrameReader{r: r, maxFrameBytes: maxFrameBytes}
}

// SetLargeFrameGate makes Next call admit before it reads the rest of a frame whose total
// length (length word included) exceeds largeFrameBytes: admit gets that length and the
// header length (from the frame's first 8 bytes), may block, and returns the buffer to read
// the frame into (its length exactly frameBytes), which stays the caller's: the payload Next
// returns is a slice of it, and the caller may free it once done with the payload. If admit
// fails, Next returns its error (sticky, the frame unread). The frame never passes through
// the reader's own buffer, so that stays small.
func (fr *FrameReader) SetLargeFrameGate(largeFrameBytes int, admit func(frameBytes, headerBytes int) ([]byte, error)) {
	fr.largeFrameBytes, fr.admitLarge = largeFrameBytes, admit
}

// Next returns the next frame's payload (header word + header + body, ready for
// DecodeCommand). The payload is valid until the next call. At a clean end of stream
// between frames it returns io.EOF; a stream that ends inside a frame gives
// io.ErrUnexpectedEOF; framing errors are CutFrame's. Errors are sticky.
func (fr *FrameReader) Next() (payload []byte, err error) {
	if fr.err != nil {
		return nil, fr.err
	}
	for {
		n, err := CutFrame(fr.buf[fr.start:fr.end], fr.maxFrameBytes)
		if err != nil {
			fr.err = err
			return nil, err
		}
		if n > 0 {
			payload = fr.buf[fr.start+4 : fr.start+n : fr.start+n]
			fr.start += n
			if fr.start == fr.end {
				fr.start, fr.end = 0, 0
			}
			return payload, nil
		}
		if fr.admitLarge != nil && fr.end-fr.start >= 8 {
			// CutFrame has checked the length and header words.
			total := int(binary.BigEndian.Uint32(fr.buf[fr.start:])) + 4
			if total > fr.largeFrameBytes {
				return fr.nextLarge(total, int(binary.BigEndian.Uint32(fr.buf[fr.start+4:])&maxHeaderLen))
			}
		}
		if err := fr.fill(); err != nil {
			if errors.Is(err, io.EOF) && fr.end > fr.start {
				err = io.ErrUnexpectedEOF
			}
			fr.err = err
			return nil, err
		}
	}
}

// nextLarge reads the frame of total bytes that starts the buffer, past the gate, into a
// buffer of its own.
func (fr *FrameReader) nextLarge(total, headerLen int) ([]byte, error) {
	frame, err := fr.admitLarge(total, headerLen)
	if err != nil {
		fr.err = err
		return nil, err
	}
	if len(frame) != total {
		panic("codec: FrameReader gate returned a buffer of the wrong size")
	}
	n := copy(frame, fr.buf[fr.start:fr.end]) // a prefix of this frame: CutFrame found it incomplete
	fr.start, fr.end = 0, 0
	if fr.readErr != nil {
		fr.err = fr.readErr
	} else if _, err := io.ReadFull(fr.r, frame[n:]); err != nil {
		fr.err = err
	}
	if fr.err != nil {
		if errors.Is(fr.err, io.EOF) {
			fr.err = io.ErrUnexpectedEOF
		}
		return nil, fr.err
	}
	return frame[4:total:total], nil
}

// fill reads at least one more byte into the buffer, first making room: it moves the
// unconsumed bytes to the front, and doubles the buffer (up to the frame cap plus the
// 4-byte look-ahead it never needs beyond) when they already fill it.
func (fr *FrameReader) fill() error {
	if fr.start == fr.end && len(fr.buf) > frameReaderShrinkBytes {
		fr.buf, fr.start, fr.end = nil, 0, 0 // the previous payload is no longer valid anyway
	}
	if fr.start > 0 {
		fr.end = copy(fr.buf, fr.buf[fr.start:fr.end])
		fr.start = 0
	}
	if fr.end == len(fr.buf) {
		size := 2 * len(fr.buf)
		if size < frameReaderMinBytes {
			size = frameReaderMinBytes
		}
		// The pending bytes are a prefix of one frame no larger than the cap (CutFrame
		// checked the announced length), so the cap always leaves room to grow here. Every
		// frame has at least 8 bytes, hence the floor for silly caps.
		if limit := max(fr.maxFrameBytes, 8); size > limit {
			size = limit
		}
		grown := make([]byte, size)
		copy(grown, fr.buf[:fr.end])
		fr.buf = grown
	}
	if fr.readErr != nil {
		return fr.readErr
	}
	for {
		n, err := fr.r.Read(fr.buf[fr.end:])
		fr.end += n
		if n > 0 {
			fr.readErr = err // e.g. data together with io.EOF: deliver the data first
			return nil
		}
		if err != nil {
			return err
		}
		// (0, nil) is allowed by io.Reader but discouraged; try again.
	}
}
