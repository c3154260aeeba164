//go:build unix

package bench

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPU is the process's user + system CPU time (getrusage RUSAGE_SELF: every
// thread, the Go runtime's and the GC's included).
func processCPU() (time.Duration, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
