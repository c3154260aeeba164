//go:build linux

package bench

import (
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// preciseSleeper sleeps to an absolute deadline of the run clock with clock_nanosleep:
// late by the kernel's timer slack and scheduling, not by the millisecond Go's timers
// round up to (see pacer.go).
//
// With two or more Ps the sleep is a raw system call: the runtime is not told, so the
// pacer keeps its P while it sleeps and the readers run on the others. Told (an ordinary
// system call), the runtime counts a P in a system call, sysmon polls every 20 µs to
// retake it and hands it back and forth on every tick: about 3k more sysmon wake-ups a
// second and 17–21 % more client CPU per message at 20k msgs/s (docs/benchmarks/history.md, "A
// cheap open loop"). A raw sleep is interrupted by the runtime's preemption signal
// (EINTR), and sleep then returns to Go code, where the goroutine can be preempted (a GC
// stopping the world waits for no more than that). With one P the pacer would hold the
// readers' only P for a tick, so there the sleep is an ordinary system call.
type preciseSleeper struct {
	monoOffsetNs int64 // CLOCK_MONOTONIC minus the run clock
	ok           bool  // false: CLOCK_MONOTONIC unreadable, fall back to time.Sleep
	raw          bool
	deadline     unix.Timespec // the raw call's argument; a field so that it never moves
}

// newPreciseSleeper maps clk onto CLOCK_MONOTONIC, the clock Go's monotonic readings
// (and so clk.now) come from on Linux. The run clock is read first, so the offset comes
// out a few nanoseconds large, never small, and a deadline is never met early.
func newPreciseSleeper(clk clock) *preciseSleeper {
	runNs := clk.now()
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return &preciseSleeper{}
	}
	return &preciseSleeper{monoOffsetNs: ts.Nano() - runNs, ok: true, raw: runtime.GOMAXPROCS(0) >= 2}
}

// sleep returns once the run clock has reached untilNs, or earlier when a signal
// interrupted the sleep: the caller checks the clock and sleeps again.
func (s *preciseSleeper) sleep(clk clock, untilNs int64) {
	if !s.ok {
		sleepPortable(clk, untilNs)
		return
	}
	s.deadline = unix.NsecToTimespec(untilNs + s.monoOffsetNs)
	if s.raw {
		_, _, _ = unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME,
			uintptr(unsafe.Pointer(&s.deadline)), 0, 0, 0)
		return
	}
	_ = unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &s.deadline, nil)
}
