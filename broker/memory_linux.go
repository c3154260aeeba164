package broker

import "golang.org/x/sys/unix"

// totalMemoryBytes is the machine's physical RAM (sysinfo(2)), 0 when unknown.
func totalMemoryBytes() int64 {
	var si unix.Sysinfo_t
	if err := unix.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
