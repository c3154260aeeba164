package ha

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendfileSupported: sendFrameFile works here.
const sendfileSupported = true

// sendFrameFile writes a frame whose body is n bytes of file at pos: the header with MSG_MORE (so that
// it leaves in the body's first segment, not in a packet of its own), then the body with sendfile(2),
// which hands the page-cache pages to the socket without copying them through user memory. It waits
// for the socket as a Write would (the connection's write deadline applies).
func sendFrameFile(sock syscall.RawConn, hdr []byte, file syscall.RawConn, pos int64, n int) error {
	var opErr error
	ctlErr := file.Control(func(ffd uintptr) {
		sent, off, left := 0, pos, n
		werr := sock.Write(func(sfd uintptr) bool {
			for sent < len(hdr) {
				k, err := unix.SendmsgN(int(sfd), hdr[sent:], nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
				switch {
				case errors.Is(err, unix.EAGAIN):
					return false // wait until writable
				case errors.Is(err, unix.EINTR):
					continue
				case err != nil:
					opErr = fmt.Errorf("ha: frame header: %w", err)
					return true
				}
				sent += k
			}
			for left > 0 {
				k, err := unix.Sendfile(int(sfd), int(ffd), &off, left)
				if k > 0 {
					left -= k
				}
				switch {
				case errors.Is(err, unix.EAGAIN):
					if left > 0 {
						return false
					}
				case errors.Is(err, unix.EINTR):
				case err != nil:
					opErr = fmt.Errorf("ha: sendfile: %w", err)
					return true
				case k == 0:
					opErr = fmt.Errorf("ha: sendfile: %w at file position %d", io.ErrUnexpectedEOF, off)
					return true
				}
			}
			return true
		})
		if opErr == nil {
			opErr = werr
		}
	})
	if ctlErr != nil {
		return ctlErr
	}
	return opErr
}
