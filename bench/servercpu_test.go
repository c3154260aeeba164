package bench

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseProcPidStatCPU(t *testing.T) {
	// A command name with spaces and parentheses; utime 250 and stime 50 ticks.
	line := "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 12345 1000 10\n"
	d, ok := parseProcPidStatCPU(line)
	require.True(t, ok)
	require.Equal(t, 3*time.Second, d)
	for _, bad := range []string{"", "4242 (cmd S 1", "4242 (cmd) S 1 2 3", "4242 (cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 x 50 0"} {
		_, ok := parseProcPidStatCPU(bad)
		require.False(t, ok, bad)
	}
}

func TestServerCPUOfThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/<pid>/stat is Linux's")
	}
	start := markServerCPU(os.Getpid())
	require.True(t, start.ok)
	// Burn CPU until the coarse (10 ms) tick count moves.
	deadline := time.Now().Add(10 * time.Second)
	for x := uint64(1); ; x = x*6364136223846793005 + 1 {
		if d, _ := pidCPU(os.Getpid()); d > start.cpu || time.Now().After(deadline) {
			break
		}
	}
	c := serverCPUSince(os.Getpid(), start, 100)
	require.NotNil(t, c)
	require.Positive(t, c.Secs)
	require.InDelta(t, c.Secs*1e6/100, c.UsPerMsg, 1)
	require.Nil(t, serverCPUBetween(serverCPUMark{}, start, 1), "an unread mark gives no figure")
}
