package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The precise sleeper sleeps: 20 ms to a deadline take a call or a few (a signal may cut
// one short), not the thousands a sleeper that returned at once would need. Both the raw
// and the ordinary system call.
func TestPreciseSleeperSleepsUntilDeadline(t *testing.T) {
	clk := newClock()
	for _, raw := range []bool{true, false} {
		s := newPreciseSleeper(clk)
		s.raw = s.raw && raw
		until := clk.now() + int64(20*time.Millisecond)
		calls := 0
		for clk.now() < until {
			s.sleep(clk, until)
			calls++
			require.Less(t, calls, 100, "raw %v: the sleeper does not sleep", raw)
		}
		s.sleep(clk, clk.now()-1) // a deadline already passed returns at once
	}
}
