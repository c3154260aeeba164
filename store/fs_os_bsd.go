//go:build unix && !linux

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// datasync falls back to fsync where fdatasync does not exist (Darwin, the BSDs).
func datasync(fd int) error { return unix.Fsync(fd) }

// allocate makes the file size; without fallocate the file stays sparse.
func allocate(f *os.File, _ int, size int64) error { return f.Truncate(size) }

// populate is not available here.
func populate([]byte) error { return errors.ErrUnsupported }

// unpopulate is not used here: MADV_DONTNEED's effect on dirty shared pages is not specified on
// every BSD.
func unpopulate([]byte) error { return errors.ErrUnsupported }

// adviseHuge is not used here.
func adviseHuge(int, []byte, bool) (int, error) { return 0, errors.ErrUnsupported }

// dataExtents returns the whole range: no hole is skipped on this platform (fs_os_linux.go).
func dataExtents(_ int, from, to int64) [][2]int64 { return [][2]int64{{from, to}} }
