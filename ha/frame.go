package ha

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

const (
	// ReportBytes is the size of a slave's report: its CommitLog max offset.
	ReportBytes = 8
	// FrameHeaderBytes is the size of a transfer frame's header: phyOffset (8) and bodySize (4).
	FrameHeaderBytes = 12
	// MaxFrameBodyBytes caps a frame body the slave accepts: Apache RocketMQ's slave reads into a 4 MiB
	// buffer, so no master that works with it sends more (its default haTransferBatchSize is 32 KiB).
	MaxFrameBodyBytes = 4 << 20
)

// Sentinel errors. Each closes the HA connection; the slave reconnects and reports again.
var (
	// ErrOffsetMismatch: a frame does not start where the slave's CommitLog ends.
	ErrOffsetMismatch = errors.New("ha: frame offset does not match the slave's CommitLog end")
	// ErrBadFrame: a frame header that no master sends (negative offset or size, oversized body, a body
	// crossing a CommitLog file).
	ErrBadFrame = errors.New("ha: malformed transfer frame")
	// ErrReportAhead: a slave reported an offset past the master's CommitLog end (a forked or newer slave
	// store, which 4.x replication does not repair).
	ErrReportAhead = errors.New("ha: slave reported an offset past the master's CommitLog end")
	// ErrSlaveDiverged: a slave's CommitLog cannot be continued from this master's: the offset it reported
	// is not where one of the master's records starts, it was ahead of the master at that same offset (so
	// its bytes before it may differ), or it reported bytes it was never sent. 4.x replication cannot
	// repair it: the slave's store must be wiped (or truncated by a controller).
	ErrSlaveDiverged = errors.New("ha: slave's CommitLog has diverged from the master's")
	// ErrClosed: the server, client or replica waiter was closed.
	ErrClosed = errors.New("ha: closed")
)

// putFrameHeader writes a transfer frame header into b[:FrameHeaderBytes].
func putFrameHeader(b []byte, phyOffset int64, bodySize int32) {
	binary.BigEndian.PutUint64(b, uint64(phyOffset))
	binary.BigEndian.PutUint32(b[8:], uint32(bodySize))
}

// FrameHeader is a decoded transfer frame header.
type FrameHeader struct {
	PhyOffset int64 // CommitLog offset of the body's first byte
	BodySize  int32 // 0 for a heartbeat
}

// ParseFrameHeader decodes and checks a frame header: offset and size non-negative, the body at most
// MaxFrameBodyBytes.
func ParseFrameHeader(b []byte) (FrameHeader, error) {
	if len(b) < FrameHeaderBytes {
		return FrameHeader{}, fmt.Errorf("%w: %d header bytes, want %d", ErrBadFrame, len(b), FrameHeaderBytes)
	}
	h := FrameHeader{PhyOffset: int64(binary.BigEndian.Uint64(b)), BodySize: int32(binary.BigEndian.Uint32(b[8:]))}
	switch {
	case h.PhyOffset < 0:
		return h, fmt.Errorf("%w: phyOffset %d", ErrBadFrame, h.PhyOffset)
	case h.BodySize < 0 || h.BodySize > MaxFrameBodyBytes:
		return h, fmt.Errorf("%w: bodySize %d, want 0..%d", ErrBadFrame, h.BodySize, MaxFrameBodyBytes)
	}
	return h, nil
}

// readReport reads one slave report.
func readReport(r io.Reader, buf *[ReportBytes]byte) (int64, error) {
	if _, err := io.ReadFull(r, buf[:]); err != nil {
		return 0, err
	}
	off := int64(binary.BigEndian.Uint64(buf[:]))
	if off < 0 {
		return 0, fmt.Errorf("ha: slave reported a negative offset %d", off)
	}
	return off, nil
}
