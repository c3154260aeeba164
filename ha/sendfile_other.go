//go:build !linux

package ha

import (
	"errors"
	"syscall"
)

// sendfileSupported: not here; frames go out in one vectored write from the mapping.
const sendfileSupported = false

func sendFrameFile(syscall.RawConn, []byte, syscall.RawConn, int64, int) error {
	return errors.ErrUnsupported
}
