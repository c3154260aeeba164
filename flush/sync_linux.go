//go:build linux

package flush

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// datasync is fdatasync(2): file data plus the metadata needed to read it back (size), not mtime.
func datasync(fd int) error { return unix.Fdatasync(fd) }

// fdName names an open file for error messages (/proc/self/fd/N → its path). Error paths only.
func fdName(fd int) string {
	if path, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil {
		return fmt.Sprintf("%s (fd %d)", path, fd)
	}
	return fmt.Sprintf("fd %d", fd)
}
