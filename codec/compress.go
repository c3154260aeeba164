package codec

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// CompressionType is the body compression named by sysFlag bits 8-10
// (PROTOCOL.md §5.3, §5.7). A compressed body with bits 8-10 zero is ZLIB: 4.x
// clients and the Go client set only bit 0.
type CompressionType int32

// Compression types as stored in sysFlag bits 8-10.
const (
	CompressionLZ4  CompressionType = 1
	CompressionZSTD CompressionType = 2
	CompressionZLIB CompressionType = 3
)

func (t CompressionType) String() string {
	switch t {
	case CompressionLZ4:
		return "LZ4"
	case CompressionZSTD:
		return "ZSTD"
	case CompressionZLIB:
		return "ZLIB"
	}
	return fmt.Sprintf("CompressionType(%d)", int32(t))
}

// CompressionOf reports whether sysFlag marks the body compressed, and with what.
func CompressionOf(sysFlag int32) (t CompressionType, compressed bool) {
	if sysFlag&SysFlagCompressed == 0 {
		return 0, false
	}
	t = CompressionType((sysFlag & SysFlagCompressionMask) >> 8)
	if t == 0 {
		t = CompressionZLIB
	}
	return t, true
}

// WithCompression returns sysFlag marked as compressed with t (bit 0 plus type bits,
// as a 5.x Java client writes it).
func WithCompression(sysFlag int32, t CompressionType) int32 {
	return sysFlag&^SysFlagCompressionMask | SysFlagCompressed | int32(t)<<8&SysFlagCompressionMask
}

// Compress compresses body with t. level applies to ZLIB (RocketMQ uses 5) and ZSTD;
// LZ4 writes the LZ4 frame format, as RocketMQ's Java client does.
func Compress(t CompressionType, level int, body []byte) ([]byte, error) {
	var buf bytes.Buffer
	var w io.WriteCloser
	switch t {
	case CompressionZLIB:
		zw, err := zlib.NewWriterLevel(&buf, level)
		if err != nil {
			return nil, fmt.Errorf("%w: zlib level %d: %v", ErrCompression, level, err)
		}
		w = zw
	case CompressionZSTD:
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(level)))
		if err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCompression, err)
		}
		w = zw
	case CompressionLZ4:
		w = lz4.NewWriter(&buf)
	default:
		return nil, fmt.Errorf("%w: unknown type %d", ErrCompression, int32(t))
	}
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("%w: %v: %v", ErrCompression, t, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("%w: %v: %v", ErrCompression, t, err)
	}
	return buf.Bytes(), nil
}

// zstdDecoders: a zstd.Decoder streams one body at a time and is costly to build,
// so concurrent calls each take one from this pool.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return err
	}
	return d
}}

// Decompress returns the body of a record whose sysFlag marks it compressed,
// decompressed; an uncompressed body is returned as is. Output beyond maxBytes is an
// error (ErrDecompressedTooLarge), so a small hostile body cannot expand without bound.
func Decompress(sysFlag int32, body []byte, maxBytes int) ([]byte, error) {
	t, compressed := CompressionOf(sysFlag)
	if !compressed {
		return body, nil
	}
	var r io.Reader
	switch t {
	case CompressionZLIB:
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("%w: zlib: %v", ErrCompression, err)
		}
		defer zr.Close()
		r = zr
	case CompressionZSTD:
		v := zstdDecoders.Get()
		d, ok := v.(*zstd.Decoder)
		if !ok {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCompression, v)
		}
		defer zstdDecoders.Put(d)
		if err := d.Reset(bytes.NewReader(body)); err != nil {
			return nil, fmt.Errorf("%w: zstd: %v", ErrCompression, err)
		}
		r = d
	case CompressionLZ4:
		r = lz4.NewReader(bytes.NewReader(body))
	default:
		return nil, fmt.Errorf("%w: unknown type %d", ErrCompression, int32(t))
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v: %v", ErrCompression, t, err)
	}
	if len(out) > maxBytes {
		return nil, fmt.Errorf("%w: %v body over %d bytes", ErrDecompressedTooLarge, t, maxBytes)
	}
	return out, nil
}
