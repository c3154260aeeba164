//go:build !linux

package bench

// preciseSleeper falls back to time.Sleep where clock_nanosleep is not wired up: the
// open loop works, with the Go runtime's coarser wake-ups.
type preciseSleeper struct{}

func newPreciseSleeper(clock) *preciseSleeper { return &preciseSleeper{} }

func (*preciseSleeper) sleep(clk clock, untilNs int64) { sleepPortable(clk, untilNs) }
