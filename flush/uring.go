package flush

import (
	"fmt"
	"log/slog"
	"sync"
	"syscall"
	"unsafe"
)

// The io_uring backend's logic lives here, on every platform; the ring itself (giouring) is behind the
// small ring interface, in uring_linux.go. Tests drive this logic with a scripted ring to produce short
// writes and every errno without a kernel that misbehaves on cue.

// opKind is an io_uring operation the backend submits.
type opKind uint8

const (
	opNop        opKind = iota // IORING_OP_NOP (probe)
	opWrite                    // IORING_OP_WRITE
	opWriteFixed               // IORING_OP_WRITE_FIXED from a registered buffer
	opFsync                    // IORING_OP_FSYNC with IORING_FSYNC_DATASYNC
)

func (k opKind) String() string {
	switch k {
	case opNop:
		return "io_uring nop"
	case opWrite:
		return "io_uring write"
	case opWriteFixed:
		return "io_uring write_fixed"
	case opFsync:
		return "io_uring fdatasync"
	}
	return fmt.Sprintf("opKind(%d)", uint8(k))
}

// ringOp is one submission queue entry.
type ringOp struct {
	kind     opKind
	fd       int
	buf      []byte // write source; referenced here so it stays alive until run returns
	bufIndex uint16 // fixed-buffer slot for opWriteFixed
	off      uint64 // file offset (write), or start of the fdatasync range
	length   uint32 // fdatasync range length; 0 = to the end of the file
	link     bool   // IOSQE_IO_LINK: the next op starts only if this one completes in full
}

// ring is the part of io_uring the backend uses. Not safe for concurrent use; the backend serializes.
type ring interface {
	// registerBuffers registers bufs as fixed buffers, slot i = bufs[i] (IORING_REGISTER_BUFFERS).
	registerBuffers(bufs [][]byte) error
	// run submits ops as one batch, waits for all their completions, and stores each op's result in
	// res[i]: bytes written, 0, or -errno. An error means io_uring_enter itself failed; then res is not valid.
	run(ops []ringOp, res []int32) error
	// close tears the ring down (dropping buffer registrations).
	close() error
}

// ringEntries is the submission queue size. One WriteSync needs two entries (write + linked fdatasync).
const ringEntries = 8

// maxWriteChunk caps one write op: the SQE length field is 32 bits, and the kernel caps a single write at
// about 2 GiB (MAX_RW_COUNT). Longer buffers are written in chunks; only the last is linked to the fsync.
const maxWriteChunk = 1 << 30

// uringBackend submits write + fdatasync linked in one io_uring submission. Safe for concurrent use: mu
// makes one caller at a time the ring's only submitter.
type uringBackend struct {
	mu     sync.Mutex
	ring   ring     // guarded by mu
	fixed  [][]byte // registered buffers; nil when none are registered. Immutable after open.
	ops    [2]ringOp
	res    [2]int32
	closed bool // guarded by mu
}

func newURingBackend(fixed BufferRegistrar, logger *slog.Logger, newRing ringFactory) (*uringBackend, error) {
	r, err := newRing(ringEntries)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIOURingUnavailable, err)
	}
	b := &uringBackend{ring: r}
	if fixed == nil {
		return b, nil
	}
	bufs := fixed.FixedBuffers()
	if len(bufs) == 0 {
		return b, nil
	}
	if err := r.registerBuffers(bufs); err != nil {
		logger.Warn("flush: io_uring fixed buffers not registered, writing with IORING_OP_WRITE instead",
			"buffers", len(bufs), "reason", err.Error())
		return b, nil
	}
	b.fixed = bufs
	return b, nil
}

func (b *uringBackend) Kind() Kind { return KindIOUring }

// SyncMapped submits IORING_OP_FSYNC (datasync) over the range; io_uring ranges use vfs_fsync_range, the
// same call msync(MS_SYNC) makes.
func (b *uringBackend) SyncMapped(fd int, mapped []byte, off, length int64) error {
	if err := checkRange(mapped, off, length); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	rangeLength := uint32(0) // 0 syncs from off to the end of the file: a superset, for ranges over 4 GiB
	if length <= int64(^uint32(0)) {
		rangeLength = uint32(length)
	}
	b.ops[0] = ringOp{kind: opFsync, fd: fd, off: uint64(off), length: rangeLength}
	var last error
	for attempt := 1; ; attempt++ {
		if err := b.ring.run(b.ops[:1], b.res[:1]); err != nil {
			return ringError(opFsync, fd, off, err)
		}
		r := b.res[0]
		if r >= 0 {
			return nil
		}
		errno := syscall.Errno(-r)
		if !retryable(errno) {
			return ioError(opFsync.String(), fd, off, errno, syncStage)
		}
		last = errno
		if attempt >= maxRetries {
			return noProgressError(opFsync.String(), fd, off, last)
		}
	}
}

// WriteSync writes buf (WRITE_FIXED when it lies in a registered buffer) and, with sync, links an
// fdatasync of the whole file to the write, so one io_uring_enter does both.
//
// Results, per round:
//
//	write n == len       fsync 0         done
//	write 0 < n < len    fsync -ECANCELED   short write broke the link: resubmit the rest + a new fsync
//	write -EINTR/-EAGAIN fsync -ECANCELED   resubmit both
//	write -ENOSPC/-EIO/… fsync -ECANCELED   ErrNoSpace / ErrIO / ErrUnexpected
//	write n == len       fsync -EINTR/-EAGAIN  resubmit the fsync alone
//	write n == len       fsync -EIO/…      ErrIO / …, never retried (see package doc)
//
// The fsync covers the whole file, not just this write: bytes committed earlier without sync (the commit
// service's writes) must become durable too, exactly as with fdatasync(2).
func (b *uringBackend) WriteSync(fd int, buf []byte, bufIndex int, off int64, sync bool) error {
	if off < 0 {
		return fmt.Errorf("%w: WriteSync offset %d < 0", ErrInvalidArgument, off)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	writeKind, err := b.writeKind(buf, bufIndex)
	if err != nil {
		return err
	}
	synced := !sync
	stalls := 0
	var last error
	for len(buf) > 0 || !synced {
		n := 0
		writing := len(buf) > 0
		finalWrite := len(buf) <= maxWriteChunk
		if writing {
			chunk := buf
			if !finalWrite {
				chunk = buf[:maxWriteChunk]
			}
			b.ops[n] = ringOp{kind: writeKind, fd: fd, buf: chunk, bufIndex: uint16(max(bufIndex, 0)),
				off: uint64(off), link: sync && finalWrite}
			n++
		}
		syncing := !synced && finalWrite
		if syncing {
			b.ops[n] = ringOp{kind: opFsync, fd: fd}
			n++
		}
		err := b.ring.run(b.ops[:n], b.res[:n])
		clear(b.ops[:n]) // drop the reference to buf
		if err != nil {
			return ringError(writeKind, fd, off, err)
		}

		progress := false
		i := 0
		if writing {
			switch r := b.res[0]; {
			case r > 0:
				buf = buf[r:]
				off += int64(r)
				progress = true
			case r == 0:
				last = errZeroWrite
			default:
				errno := syscall.Errno(-r)
				if !retryable(errno) {
					return ioError(writeKind.String(), fd, off, errno, writeStage)
				}
				last = errno
			}
			i++
		}
		if syncing {
			switch r := b.res[i]; {
			case r >= 0:
				// A linked fsync runs only after its write completed in full; without a write in this
				// round there was nothing left to write. Either way everything is now durable.
				if len(buf) == 0 {
					synced = true
					progress = true
				}
			case syscall.Errno(-r) == syscall.ECANCELED && writing:
				// The write above was short or failed and broke the link; the write's result says
				// which, and the next round resubmits the remainder with a new fsync.
			default:
				errno := syscall.Errno(-r)
				if !retryable(errno) {
					return ioError(opFsync.String(), fd, off, errno, syncStage)
				}
				last = errno
			}
		}
		if progress {
			stalls = 0
			continue
		}
		if stalls++; stalls >= maxRetries {
			return noProgressError(writeKind.String(), fd, off, last)
		}
	}
	return nil
}

// writeKind picks WRITE_FIXED when buf lies inside registered buffer bufIndex. Caller holds mu.
func (b *uringBackend) writeKind(buf []byte, bufIndex int) (opKind, error) {
	if bufIndex < 0 || b.fixed == nil || len(buf) == 0 {
		return opWrite, nil
	}
	if bufIndex >= len(b.fixed) {
		return 0, fmt.Errorf("%w: WriteSync bufIndex %d, but only %d fixed buffers are registered",
			ErrInvalidArgument, bufIndex, len(b.fixed))
	}
	reg := b.fixed[bufIndex]
	start := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	regStart := uintptr(unsafe.Pointer(unsafe.SliceData(reg)))
	if start < regStart || start+uintptr(len(buf)) > regStart+uintptr(len(reg)) {
		return 0, fmt.Errorf("%w: WriteSync buf is not inside fixed buffer %d", ErrInvalidArgument, bufIndex)
	}
	return opWriteFixed, nil
}

func (b *uringBackend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	b.closed = true
	return b.ring.close()
}

// ringError wraps a failure of io_uring_enter itself (not of an operation).
func ringError(kind opKind, fd int, off int64, err error) error {
	return fmt.Errorf("%w: %s %s at offset %d: io_uring_enter: %w", ErrUnexpected, kind, fdName(fd), off, err)
}
