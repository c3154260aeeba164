//go:build !linux

package transientpool

// systemMemOps on platforms other than Linux keeps buffers on the Go heap and cannot pin them: ringmq runs
// on Linux, and this fallback only keeps `go build ./...` (and unpinned development runs) working elsewhere.
func systemMemOps() memOps {
	return memOps{
		alloc:  func(size int) ([]byte, error) { return make([]byte, size), nil },
		free:   func([]byte) error { return nil },
		lock:   func([]byte) error { return ErrPinUnsupported },
		unlock: func([]byte) error { return nil },
		memlockLimit: func() (soft, hard uint64, ok bool) {
			return 0, 0, false
		},
	}
}
