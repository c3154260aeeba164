//go:build unix && !linux

package flush

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// datasync falls back to fsync where fdatasync does not exist (Darwin, the BSDs). ringmq runs on Linux;
// this keeps other systems building and testable.
func datasync(fd int) error { return unix.Fsync(fd) }

// fdName names an open file for error messages.
func fdName(fd int) string { return fmt.Sprintf("fd %d", fd) }
