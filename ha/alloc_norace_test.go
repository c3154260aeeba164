//go:build !race

package ha

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A SYNC_MASTER wait allocates nothing: queued, completed by an acknowledgement, or answered at once.
func TestReplicasWaitAllocatesNothing(t *testing.T) {
	master := newMemLog(1 << 20)
	master.Append(make([]byte, 100))
	srv := startServer(t, master)
	r, err := NewReplicas(DefaultReplicasConfig(), srv, nil, nil)
	require.NoError(t, err)
	defer r.Close()
	slave := dialFakeSlave(t, srv)
	slave.report(srv, 1)
	w := &countWaiter{}
	target := int64(1)
	allocs := testing.AllocsPerRun(1000, func() {
		target++
		require.NoError(t, r.Wait(target, w)) // queued
		srv.raiseAck(target)                  // what a report does: completes it
		require.NoError(t, r.Wait(target, w)) // covered already
	})
	require.Zero(t, allocs)
	require.Equal(t, w.n, w.ok, "every wait succeeded")
	require.Positive(t, w.n)
}

// countWaiter counts its completions without allocating.
type countWaiter struct{ n, ok int }

func (w *countWaiter) FlushDone(err error) {
	w.n++
	if err == nil {
		w.ok++
	}
}
