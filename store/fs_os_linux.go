//go:build linux

package store

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

func datasync(fd int) error { return unix.Fdatasync(fd) }

// allocate reserves blocks with fallocate(2) so that writes through a shared mapping never meet a full disk
// (which would be a SIGBUS, not an error). File systems without fallocate get a sparse ftruncate.
func allocate(f *os.File, fd int, size int64) error {
	err := unix.Fallocate(fd, 0, 0, size)
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(size)
	}
	return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
}

// populate pre-faults a mapping for writing (MADV_POPULATE_WRITE, Linux 5.14+). Older kernels answer
// EINVAL: reported as errors.ErrUnsupported, so callers can choose a fallback.
func populate(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	err := unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	if errors.Is(err, unix.EINVAL) {
		return errors.ErrUnsupported
	}
	return err
}

// unpopulate unmaps b's pages from the process. On a shared file mapping MADV_DONTNEED keeps the
// pages and moves their dirty bits to the page cache (zap_pte_range), so nothing written is lost and
// writeback still writes them; the whole range costs one TLB flush.
func unpopulate(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return unix.Madvise(b, unix.MADV_DONTNEED)
}

// adviseHuge marks b, the whole mapping of fd from offset 0, for huge pages (MADV_HUGEPAGE). A file mapping
// gets them where the file system keeps large folios in the page cache and the mapping is aligned to the
// huge page size (ext4 and xfs align their mappings: thp_get_unmapped_area); a kernel without transparent
// huge pages answers EINVAL.
//
// Without on it maps the file again at the same address with a plain mapping (MAP_FIXED replaces the old
// one in one step, so a reader never finds the range unmapped; the page cache and its dirty pages stay).
// A MAP_FIXED that fails can leave the range unmapped, though (commitLog.unadviseCold).
// MADV_NOHUGEPAGE is no way back to the default: it forbids mapping the large folios already cached
// whole, and readers of a recent file then took a fault per 16 small pages (pull: 10 % more CPU).
func adviseHuge(fd int, b []byte, on bool) (int, error) {
	size := hugePageSize()
	if size <= pageSize || len(b) == 0 {
		return 0, errors.ErrUnsupported
	}
	if !on {
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		got, _, errno := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(len(b)), unix.PROT_READ|unix.PROT_WRITE,
			unix.MAP_SHARED|unix.MAP_FIXED, uintptr(fd), 0)
		switch {
		case errno != 0:
			return 0, errno
		case got != addr: // MAP_FIXED maps at addr or fails
			return 0, fmt.Errorf("store: mmap MAP_FIXED at %#x returned %#x", addr, got)
		}
		return size, nil
	}
	if err := unix.Madvise(b, unix.MADV_HUGEPAGE); err != nil {
		if errors.Is(err, unix.EINVAL) {
			return 0, errors.ErrUnsupported
		}
		return 0, err
	}
	return size, nil
}

// hugePageSize is the PMD size transparent huge pages use (2 MiB on x86-64 and on arm64 with 4 KiB pages),
// 0 when the kernel does not say.
var hugePageSize = sync.OnceValue(func() int {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size")
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 || n&(n-1) != 0 {
		return 0
	}
	return n
})

// dataExtents returns the stretches of [from, to) of fd that may hold data, skipping holes and
// unwritten (fallocated, never written) extents, which read as zeros: lseek(SEEK_DATA/SEEK_HOLE).
// On any error it returns the whole range.
func dataExtents(fd int, from, to int64) [][2]int64 {
	var out [][2]int64
	for off := from; off < to; {
		data, err := unix.Seek(fd, off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) || err == nil && data >= to {
			return out // nothing but holes up to the end
		}
		if err != nil {
			return [][2]int64{{from, to}}
		}
		hole, err := unix.Seek(fd, data, unix.SEEK_HOLE)
		if err != nil {
			return [][2]int64{{from, to}}
		}
		out = append(out, [2]int64{data, min(hole, to)})
		off = hole
	}
	return out
}
