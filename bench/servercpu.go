package bench

import (
	"runtime"
	"strconv"
	"strings"
	"time"
)

// A server's CPU over a run is read from outside, as scripts/cpu-per-msg.sh does: the
// user + system time of its process (every thread) in /proc/<pid>/stat, at the start and
// the end of the measured window. It goes into the run record beside the client's, as
// µs per message, so that every row of the suite (ringmq, NATS, the null server) shows
// what each side of the load cost.

// serverCPUMark is one reading of a server process's CPU time and the machine's ticks.
type serverCPUMark struct {
	cpu  time.Duration
	ok   bool
	mark cpuMark // the wall clock and the machine's steal
}

func markServerCPU(pid int) serverCPUMark {
	cpu, ok := pidCPU(pid)
	return serverCPUMark{cpu: cpu, ok: ok, mark: markCPU()}
}

// serverCPUSince is the server's CPU from start to now over msgs messages; nil when its
// CPU time cannot be read (off Linux, or the process is gone).
func serverCPUSince(pid int, start serverCPUMark, msgs int64) *ClientCPU {
	return serverCPUBetween(start, markServerCPU(pid), msgs)
}

// serverCPUBetween is the server's CPU between two marks over msgs messages (nil unless
// both were read).
func serverCPUBetween(start, end serverCPUMark, msgs int64) *ClientCPU {
	if !start.ok || !end.ok {
		return nil
	}
	c := newClientCPU(end.cpu-start.cpu, end.mark.wall.Sub(start.mark.wall), msgs, runtime.NumCPU())
	c.StealShare = stealShare(start.mark, end.mark)
	return &c
}

// procStatUserHZ is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on every Linux
// architecture Go supports; sysconf(_SC_CLK_TCK) reports the same constant).
const procStatUserHZ = 100

// parseProcPidStatCPU reads utime + stime (fields 14 and 15) of a /proc/<pid>/stat line.
// The command name (field 2) may hold spaces and parentheses, so fields count from the
// last ')'.
func parseProcPidStatCPU(line string) (time.Duration, bool) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(line[i+1:]) // f[0] is field 3 (state)
	if len(f) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * time.Second / procStatUserHZ, true
}
