package flush

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// maxRetries bounds consecutive EINTR/EAGAIN answers (and writes that make no progress) before giving up
// with ErrUnexpected: every loop here has a limit (STYLE.md §4, "Bound everything").
const maxRetries = 1000

// retryable reports errnos after which the same call is simply made again. EINTR: a signal (the Go runtime
// preempts with SIGURG) interrupted the call. EAGAIN: the kernel had no resources for it right now.
func retryable(errno syscall.Errno) bool {
	return errno == syscall.EINTR || errno == syscall.EAGAIN
}

// stage says whether a failed operation wrote bytes or synced them.
type stage bool

const (
	writeStage stage = false
	syncStage  stage = true
)

// ioError maps a failed operation's errno to this package's errors, with the file's name and offset.
// ENOSPC and EDQUOT → ErrNoSpace; EIO → ErrIO; the rest → ErrUnexpected. The errno stays wrapped too.
// A failed sync (fdatasync, msync, io_uring fsync) also wraps ErrDurability: writeback failed, and the
// kernel may since have marked the pages clean. Only called on failure paths, so the formatting
// allocations never touch the hot path.
func ioError(op string, fd int, off int64, err error, st stage) error {
	class := ErrUnexpected
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.ENOSPC, syscall.EDQUOT:
			class = ErrNoSpace
		case syscall.EIO:
			class = ErrIO
		}
	}
	if st == syncStage {
		return fmt.Errorf("%w: %w: %s %s at offset %d: %w", class, ErrDurability, op, fdName(fd), off, err)
	}
	return fmt.Errorf("%w: %s %s at offset %d: %w", class, op, fdName(fd), off, err)
}

// noProgressError reports a loop that hit maxRetries.
func noProgressError(op string, fd int, off int64, last error) error {
	return fmt.Errorf("%w: %s %s at offset %d: no progress after %d attempts (last: %v)",
		ErrUnexpected, op, fdName(fd), off, maxRetries, last)
}

// errZeroWrite records a write that returned 0 bytes for a non-empty buffer (no progress, no errno).
var errZeroWrite = errors.New("write returned 0 bytes")

// checkRange validates SyncMapped arguments against the mapping (when there is one).
func checkRange(mapped []byte, off, length int64) error {
	if off < 0 || length < 0 {
		return fmt.Errorf("%w: SyncMapped range off=%d length=%d must not be negative", ErrInvalidArgument, off, length)
	}
	if mapped != nil && off+length > int64(len(mapped)) {
		return fmt.Errorf("%w: SyncMapped range [%d, %d) exceeds the %d-byte mapping", ErrInvalidArgument,
			off, off+length, len(mapped))
	}
	return nil
}

// pageSize is the OS page size (msync needs page-aligned addresses). Constant for the process's life.
var pageSize = os.Getpagesize()
