//go:build linux

package transientpool

import (
	"golang.org/x/sys/unix"
)

// systemMemOps maps buffers with mmap(MAP_ANONYMOUS|MAP_PRIVATE) so they live outside the Go heap (the GC
// never scans or moves them, and io_uring can hold their pages), and pins them with mlock.
func systemMemOps() memOps {
	return memOps{
		alloc: func(size int) ([]byte, error) {
			b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANONYMOUS|unix.MAP_PRIVATE)
			if err != nil {
				return nil, err
			}
			// Best effort: huge pages cut TLB misses while records are copied in, and let io_uring pin the
			// buffer as fewer, larger folios. Kernels with THP off answer EINVAL; nothing depends on it.
			_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
			return b, nil
		},
		free:   unix.Munmap,
		lock:   unix.Mlock, // also faults every page in, so the first append never page-faults
		unlock: unix.Munlock,
		memlockLimit: func() (soft, hard uint64, ok bool) {
			var r unix.Rlimit
			if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &r); err != nil {
				return 0, 0, false
			}
			return r.Cur, r.Max, true
		},
	}
}
