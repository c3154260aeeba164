//go:build !linux

package transientpool

import (
	"errors"
	"fmt"
)

// File-backed buffers need Linux (tmpfs, MAP_SHARED, flock as used here); elsewhere the pool falls back
// to its heap buffers, with the same warning as on a Linux host without a usable tmpfs.

var (
	errFallback = errors.New("transientpool: file-backed buffers unavailable")
	errDirInUse = errors.New("transientpool: pool directory in use by another process")
)

func ramFSStat(string) (bool, uint64, error) { return false, 0, errors.ErrUnsupported }

func openFiles(Config, string, func(string) (bool, uint64, error)) (*fileBacking, error) {
	return nil, fmt.Errorf("%w: not supported on this platform", errFallback)
}

func (fb *fileBacking) close() error { return nil }

func checkDirOwner(string) error { return nil }
