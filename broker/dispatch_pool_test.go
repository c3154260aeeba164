package broker

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// A pool reports its depth and how long its oldest queued request has waited
// (pullThreadPoolQueueHeadWaitTimeMills and the like), never a negative depth.
func TestWorkerPoolDepthAndHeadWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := newWorkerPool("test", 1, 8, 0, func() time.Time { return t0 }, nil, logtest.Discard())
	t.Cleanup(p.close)
	release := make(chan struct{})
	submit := func(ago time.Duration) {
		require.NoError(t, p.submit(&remoting.Request{Received: t0.Add(-ago)}, func(*remoting.Request) { <-release }))
	}
	require.Zero(t, p.HeadWait())
	submit(3 * time.Second) // taken at once by the only worker, which then waits
	testutil.Eventually(t, "the worker takes the first task", func() bool { return p.taken.Load() == 1 })
	require.Zero(t, p.Depth())
	require.Zero(t, p.HeadWait(), "a running request is not waiting")

	submit(2 * time.Second)
	submit(time.Second)
	require.EqualValues(t, 2, p.Depth())
	require.Equal(t, 2*time.Second, p.HeadWait())

	release <- struct{}{}
	testutil.Eventually(t, "the worker takes the second task", func() bool { return p.taken.Load() == 2 })
	require.EqualValues(t, 1, p.Depth())
	require.Equal(t, time.Second, p.HeadWait())

	release <- struct{}{}
	release <- struct{}{}
	testutil.Eventually(t, "the queue drains", func() bool { return p.Depth() == 0 && p.taken.Load() == 3 })
	require.Zero(t, p.HeadWait())
}
