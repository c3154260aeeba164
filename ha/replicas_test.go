package ha

import (
	"encoding/binary"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/round"
	"github.com/ringmq/ringmq/internal/testutil"
)

// fakeSlave is a slave connection driven by the test: it starts as a new slave (reports 0, so the master
// sends from its last file), reads the frames, and reports what it is told once it has received that far
// (a slave that reports bytes it was never sent is refused).
type fakeSlave struct {
	t        *testing.T
	nc       net.Conn
	received atomic.Int64 // the end of the frames read
}

func dialFakeSlave(t *testing.T, srv *Server) *fakeSlave {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	testutil.Eventually(t, "the slave connected", func() bool { return srv.SlaveCount() == 1 })
	f := &fakeSlave{t: t, nc: nc}
	var b [ReportBytes]byte
	_, err = nc.Write(b[:])
	require.NoError(t, err)
	go func() {
		var hdr [FrameHeaderBytes]byte
		for {
			if _, err := io.ReadFull(nc, hdr[:]); err != nil {
				return
			}
			h, err := ParseFrameHeader(hdr[:])
			if err != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, nc, int64(h.BodySize)); err != nil {
				return
			}
			f.received.Store(h.PhyOffset + int64(h.BodySize))
		}
	}()
	return f
}

// report waits until the slave has received off, sends it, and waits until the master has taken it.
func (f *fakeSlave) report(srv *Server, off int64) {
	f.t.Helper()
	testutil.Eventually(f.t, "the frames", func() bool { return f.received.Load() >= off })
	var b [ReportBytes]byte
	binary.BigEndian.PutUint64(b[:], uint64(off))
	_, err := f.nc.Write(b[:])
	require.NoError(f.t, err)
	testutil.Eventually(f.t, "the report", func() bool { return srv.AckedOffset() >= off })
}

// orderWaiter appends its id to a shared log when done.
type orderWaiter struct {
	id   int
	log  *[]int
	errs map[int]error
	done chan struct{}
}

func (w *orderWaiter) FlushDone(err error) {
	*w.log = append(*w.log, w.id)
	w.errs[w.id] = err
	w.done <- struct{}{}
}

// Waits complete in offset order on the goroutine that reads the slave's report, as soon as a report
// covers them; one already covered completes inside Wait; a full queue and a closed Replicas refuse.
func TestReplicasCompleteOnTheReport(t *testing.T) {
	master := newMemLog(1 << 20)
	master.Append(make([]byte, 10_000))
	srv := startServer(t, master)
	reg := prometheus.NewRegistry()
	cfg := DefaultReplicasConfig()
	cfg.WaiterQueueMax = 3
	r, err := NewReplicas(cfg, srv, reg, nil)
	require.NoError(t, err)
	slave := dialFakeSlave(t, srv)
	slave.report(srv, 100)

	var order []int
	errs := map[int]error{}
	done := make(chan struct{}, 10)
	w := func(id int) *orderWaiter { return &orderWaiter{id: id, log: &order, errs: errs, done: done} }
	// Covered already: done before Wait returns.
	require.NoError(t, r.Wait(100, w(0)))
	require.Equal(t, []int{0}, order)
	<-done // its signal: left in the channel, it would stand in for one of the waits below

	// Queued out of order (puts wait after the put lock): completed by offset.
	require.NoError(t, r.Wait(3000, w(3)))
	require.NoError(t, r.Wait(1000, w(1)))
	require.NoError(t, r.Wait(2000, w(2)))
	require.True(t, r.Full())
	require.ErrorIs(t, r.Wait(4000, w(4)), flush.ErrQueueFull)
	require.Equal(t, float64(3), gathered(t, reg)["ringmq_replica_waiters"])

	slave.report(srv, 2500)
	<-done
	<-done
	require.Equal(t, []int{0, 1, 2}, order)
	slave.report(srv, 5000)
	<-done
	require.Equal(t, []int{0, 1, 2, 3}, order)
	for id, err := range errs {
		require.NoError(t, err, "waiter %d", id)
	}
	require.False(t, r.Full())

	// Close fails what is left; later waits are refused.
	require.NoError(t, r.Wait(9000, w(5)))
	require.NoError(t, r.Close())
	<-done
	require.ErrorIs(t, errs[5], flush.ErrClosed)
	require.ErrorIs(t, r.Wait(9000, w(6)), flush.ErrClosed)
	require.ErrorIs(t, r.Close(), ErrClosed)

	require.Equal(t, map[string]float64{"ringmq_replica_waiters": 0, "ringmq_replica_acks_total": 4,
		"ringmq_replica_timeouts_total": 0, "ringmq_replica_not_available_total": 0,
		"ringmq_replica_rejected_total": 1}, gathered(t, reg))
}

// gathered is every metric of reg by name (each has one series).
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		got[mf.GetName()] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return got
}

// A wait no report covers times out after SlaveTimeout; the others keep waiting, and the timer is armed
// again for them.
func TestReplicasTimeOutOnlyTheExpired(t *testing.T) {
	master := newMemLog(1 << 20)
	master.Append(make([]byte, 10_000))
	srv := startServer(t, master)
	cfg := DefaultReplicasConfig()
	cfg.SlaveTimeout = 200 * time.Millisecond
	r, err := NewReplicas(cfg, srv, nil, nil)
	require.NoError(t, err)
	defer r.Close()
	slave := dialFakeSlave(t, srv)
	slave.report(srv, 10)

	first := &waitResult{}
	require.NoError(t, r.Wait(1000, first))
	require.ErrorIs(t, first.result(t), ErrSlaveTimeout)
	second := &waitResult{}
	require.NoError(t, r.Wait(2000, second))
	require.ErrorIs(t, second.result(t), ErrSlaveTimeout, "the timer was armed again")
	third := &waitResult{}
	require.NoError(t, r.Wait(3000, third))
	slave.report(srv, 3000)
	require.NoError(t, third.result(t))
}

// roundEnds counts the ends of the rounds it was deferred to.
type roundEnds struct{ ends atomic.Int32 }

func (e *roundEnds) EndRound() { e.ends.Add(1) }

// The waiters one report releases complete in one round, ended after the last of them (a SYNC_MASTER
// send's answers are written once per connection); a plain Waiter among them completes as before.
func TestReplicasCompleteAReportsWaitersInOneRound(t *testing.T) {
	master := newMemLog(1 << 20)
	master.Append(make([]byte, 10_000))
	srv := startServer(t, master)
	r, err := NewReplicas(DefaultReplicasConfig(), srv, nil, nil)
	require.NoError(t, err)
	slave := dialFakeSlave(t, srv)
	slave.report(srv, 100)

	var ends roundEnds
	type done struct {
		target  int64
		ends    int32 // round ends seen when it completed
		inRound bool
	}
	got := make(chan done, 8)
	waiter := func(target int64) Waiter {
		return RoundWaiterFunc(func(err error, rd *round.Round) {
			if err != nil {
				t.Error(err) // not on the test's goroutine: no FailNow
			}
			if rd != nil && rd.Len() == 0 {
				rd.Defer(&ends)
			}
			got <- done{target, ends.ends.Load(), rd != nil}
		})
	}
	plain := make(chan error, 1)
	require.NoError(t, r.Wait(1000, waiter(1000)))
	require.NoError(t, r.Wait(2000, WaiterFunc(func(err error) { plain <- err })))
	require.NoError(t, r.Wait(3000, waiter(3000)))
	slave.report(srv, 5000)
	require.Equal(t, done{1000, 0, true}, <-got)
	require.NoError(t, <-plain)
	require.Equal(t, done{3000, 0, true}, <-got, "the round not ended before its last waiter")
	testutil.Eventually(t, "the round ended", func() bool { return ends.ends.Load() == 1 })

	require.NoError(t, r.Wait(4000, waiter(4000))) // covered already: completed alone, no round
	require.Equal(t, done{4000, 1, false}, <-got)
	require.NoError(t, r.Close())
}
