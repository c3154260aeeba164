//go:build !linux

package flush

import "errors"

// newSystemRing: io_uring exists only on Linux; Open falls back with its one log line.
func newSystemRing(uint32) (ring, error) {
	return nil, errors.New("io_uring exists only on Linux")
}
