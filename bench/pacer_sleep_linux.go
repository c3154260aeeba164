//go:build linux

package bench

import "golang.org/x/sys/unix"

// preciseSleeper sleeps to an absolute deadline of the run clock with clock_nanosleep:
// late by the kernel's timer slack and scheduling, not by the millisecond Go's timers
// round up to (see pacer.go). It blocks the calling thread; its P stays with the sleeping
// thread while the other P is idle, so the readers keep running meanwhile.
type preciseSleeper struct {
	monoOffsetNs int64 // CLOCK_MONOTONIC minus the run clock
	ok           bool  // false: CLOCK_MONOTONIC unreadable, fall back to time.Sleep
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
	return &preciseSleeper{monoOffsetNs: ts.Nano() - runNs, ok: true}
}

// sleep returns once the run clock has reached untilNs (at once if it has).
func (s *preciseSleeper) sleep(clk clock, untilNs int64) {
	if !s.ok {
		sleepPortable(clk, untilNs)
		return
	}
	ts := unix.NsecToTimespec(untilNs + s.monoOffsetNs)
	// EINTR: a signal (the Go runtime preempts with SIGURG) ended the sleep early; the
	// deadline is absolute, so sleeping again to it is exact.
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
}
