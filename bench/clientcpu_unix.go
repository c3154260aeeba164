//go:build unix

package bench

import (
	"os"
	"strings"
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

// machineCPUTicks is /proc/stat's aggregate CPU line: stolen and all ticks (false off Linux or
// when unreadable).
func machineCPUTicks() (steal, total uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return parseProcStatCPU(line)
}
