//go:build linux

package store

import "golang.org/x/sys/unix"

// totalPhysicalMemory is the machine's RAM, for the "in memory" share of pulls (0 when unknown).
func totalPhysicalMemory() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// pinMemory locks b's pages in RAM (mlock, which also faults them in); unpinMemory undoes it.
func pinMemory(b []byte) error   { return unix.Mlock(b) }
func unpinMemory(b []byte) error { return unix.Munlock(b) }
