//go:build unix

package flush

import (
	"fmt"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// fdatasyncBackend makes bytes durable with fdatasync(2); buffer writes go through pwrite(2).
// Safe for concurrent use: it holds no state but the closed flag, and the kernel orders the calls.
type fdatasyncBackend struct {
	closed atomic.Bool
}

func newFdatasyncBackend() *fdatasyncBackend { return &fdatasyncBackend{} }

func (b *fdatasyncBackend) Kind() Kind { return KindFdatasync }

// SyncMapped ignores the range: fdatasync covers the whole file, including pages dirtied through mapped.
func (b *fdatasyncBackend) SyncMapped(fd int, mapped []byte, off, length int64) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := checkRange(mapped, off, length); err != nil {
		return err
	}
	return syncFile(fd, off)
}

func (b *fdatasyncBackend) WriteSync(fd int, buf []byte, bufIndex int, off int64, sync bool) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if off < 0 {
		return fmt.Errorf("%w: WriteSync offset %d < 0", ErrInvalidArgument, off)
	}
	if err := pwriteAll(fd, buf, off); err != nil {
		return err
	}
	if sync {
		return syncFile(fd, off)
	}
	return nil
}

func (b *fdatasyncBackend) Close() error {
	if b.closed.Swap(true) {
		return ErrClosed
	}
	return nil
}

// pwriteAll writes all of buf at off, resuming short writes and retrying EINTR/EAGAIN.
func pwriteAll(fd int, buf []byte, off int64) error {
	stalls := 0
	var last error
	for len(buf) > 0 {
		n, err := unix.Pwrite(fd, buf, off)
		if err != nil {
			if errno, ok := err.(syscall.Errno); !ok || !retryable(errno) {
				return ioError("pwrite", fd, off, err, writeStage)
			}
			last = err
		}
		if n > 0 {
			buf = buf[n:]
			off += int64(n)
			stalls = 0
			continue
		}
		if err == nil {
			last = errZeroWrite
		}
		if stalls++; stalls >= maxRetries {
			return noProgressError("pwrite", fd, off, last)
		}
	}
	return nil
}

// syncFile is fdatasync with EINTR/EAGAIN retried. Any other failure is returned and never retried: after
// a writeback error the pages may already be marked clean, so a retry could report success for lost data.
func syncFile(fd int, off int64) error {
	for attempt := 1; ; attempt++ {
		err := datasync(fd)
		if err == nil {
			return nil
		}
		if errno, ok := err.(syscall.Errno); !ok || !retryable(errno) {
			return ioError("fdatasync", fd, off, err, syncStage)
		}
		if attempt >= maxRetries {
			return noProgressError("fdatasync", fd, off, err)
		}
	}
}
