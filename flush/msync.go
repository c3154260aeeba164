//go:build unix

package flush

import (
	"fmt"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// msyncBackend makes mapped ranges durable with msync(MS_SYNC), which on Linux writes back and waits for
// exactly the dirty pages of the range (vfs_fsync_range with datasync). Buffer writes, which have no
// mapping to msync, are the fdatasync backend's (pwrite + fdatasync): it is embedded for WriteSync and
// Close. Safe for concurrent use.
type msyncBackend struct {
	fdatasyncBackend
}

func newMsyncBackend() *msyncBackend { return &msyncBackend{} }

func (b *msyncBackend) Kind() Kind { return KindMsync }

func (b *msyncBackend) SyncMapped(fd int, mapped []byte, off, length int64) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := checkRange(mapped, off, length); err != nil {
		return err
	}
	if mapped == nil {
		return syncFile(fd, off)
	}
	if uintptr(unsafe.Pointer(unsafe.SliceData(mapped)))%uintptr(pageSize) != 0 {
		return fmt.Errorf("%w: SyncMapped mapped must start at the mapping's first (page-aligned) byte", ErrInvalidArgument)
	}
	end := off + length
	if length == 0 {
		end = int64(len(mapped))
	}
	start := off &^ int64(pageSize-1) // msync wants a page-aligned start
	region := mapped[start:end]
	if len(region) == 0 {
		return nil
	}
	for attempt := 1; ; attempt++ {
		err := unix.Msync(region, unix.MS_SYNC)
		if err == nil {
			return nil
		}
		if errno, ok := err.(syscall.Errno); !ok || !retryable(errno) {
			return ioError("msync", fd, off, err, syncStage)
		}
		if attempt >= maxRetries {
			return noProgressError("msync", fd, off, err)
		}
	}
}
