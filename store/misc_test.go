package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
)

// TestStoreDirectoryLock: a second store on the same directory is refused, and with the transient pool
// before it touches the first's buffer files (the first goes on putting into them).
func TestStoreDirectoryLock(t *testing.T) {
	for _, pool := range []bool{false, true} {
		t.Run(fmt.Sprintf("transientPool=%t", pool), func(t *testing.T) {
			cfg := lazyCommitConfig(t.TempDir(), pool, AsyncFlush)
			s := openStarted(t, cfg, Deps{})
			res := mustPut(t, s, testMessage("T", 0, []byte("first")))
			_, err := Open(cfg, Deps{Logger: testLogger(t)})
			require.ErrorIs(t, err, ErrStoreLocked)
			mustPut(t, s, testMessage("T", 0, []byte("second")))
			rec, release, err := s.LookMessageByOffset(res.WroteOffset)
			require.NoError(t, err)
			require.Contains(t, string(rec), "first")
			release()
			require.NoError(t, s.Shutdown())
			r := reopen(t, cfg, Deps{})
			require.True(t, r.LastExitOK())
			waitDispatched(t, r)
			require.Len(t, getAll(t, r, "T", 0), 2)
		})
	}
}

func TestDeleteTopics(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{})
	for i := 0; i < 5; i++ {
		mustPut(t, s, testMessage("Gone", 0, []byte("x")))
		mustPut(t, s, testMessage("Kept", 0, []byte("y")))
	}
	waitDispatched(t, s)
	require.NoError(t, s.DeleteTopics("Gone"))
	_, err := os.Stat(filepath.Join(cfg.consumeQueueDir(), "Gone"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.Equal(t, int64(0), s.GetMaxOffsetInQueue("Gone", 0))
	r, err := s.GetMessage("g", "Gone", 0, 0, 32, 0, nil)
	require.NoError(t, err)
	require.Equal(t, NoMatchedLogicQueue, r.Status)
	r.Release()
	require.Equal(t, int64(5), s.GetMaxOffsetInQueue("Kept", 0))
	res := mustPut(t, s, testMessage("Gone", 0, []byte("again")))
	require.Equal(t, int64(0), res.QueueOffset, "a recreated topic starts over")
}

func TestMetricsAndStats(t *testing.T) {
	reg := prometheus.NewRegistry()
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{Registerer: reg})
	for i := 0; i < 10; i++ {
		mustPut(t, s, testMessage("T", 0, []byte("0123456789")))
	}
	waitDispatched(t, s)
	require.Equal(t, 10.0, gathered(t, reg, "ringmq_store_put_messages_total", ""))
	require.Equal(t, 0.0, gathered(t, reg, "ringmq_store_transient_pool_fallbacks_total", ""), "no pool here")
	st := s.Stats()
	require.Equal(t, int64(10), st.PutMessageTimesTotal)
	require.Equal(t, int64(10*(91+10+1)), st.PutMessageSizeTotal)
	require.Equal(t, s.MaxPhyOffset(), st.CommitLogMaxOffset)
	require.Zero(t, st.DispatchBehindBytes)
	h := s.LockTimeHistogram()
	require.Equal(t, int64(10), h.TotalCount(), "every put's lock time is recorded")
	// The Prometheus views mqbench scrapes: one observation per put, each far below 1 s.
	for _, name := range []string{"ringmq_store_put_lock_seconds", "ringmq_store_put_latency_seconds"} {
		hist := gatheredHistogram(t, reg, name)
		require.Equal(t, uint64(10), hist.GetSampleCount(), name)
		require.Greater(t, hist.GetSampleSum(), 0.0, name)
		require.Less(t, hist.GetSampleSum(), 10.0, name)
		bs := hist.GetBucket()
		require.Len(t, bs, len(putLatencyBuckets), name)
		require.Equal(t, uint64(10), bs[len(bs)-1].GetCumulativeCount(), "%s: every put under %v s", name, bs[len(bs)-1].GetUpperBound())
		for i := 1; i < len(bs); i++ {
			require.GreaterOrEqual(t, bs[i].GetCumulativeCount(), bs[i-1].GetCumulativeCount(), name)
		}
	}
	require.False(t, s.IsOSPageCacheBusy())
	require.Zero(t, s.BeginTimeInLock())
	require.NoError(t, s.Shutdown())
	// Reopening on the same registry is not an error.
	reopen(t, cfg, Deps{Registerer: reg})
}

// TestLagGaugesCountTheBytesBehind: ringmq_store_dispatch_behind_bytes is the bytes put that the
// dispatcher has not indexed (held here while it creates the topic's first ConsumeQueue file), and
// ringmq_store_flush_behind_bytes the bytes put since the last flush (ASYNC_FLUSH, an hour's interval);
// each drops to 0 once the dispatch, then a flush, ran.
func TestLagGaugesCountTheBytesBehind(t *testing.T) {
	cfg := testConfig(t.TempDir())
	gate := &gatedFS{FS: NewOSFS(nil), name: filepath.Join("LagTopic", "0", offsetFileName(0)),
		arrived: make(chan struct{}), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	s := openStarted(t, cfg, Deps{FS: gate, Registerer: reg})
	releaseGate := sync.OnceFunc(func() { close(gate.release) })
	t.Cleanup(releaseGate) // before the store's shutdown, which waits for the dispatcher
	mustPut(t, s, testMessage("Other", 0, []byte("first")))
	waitDispatched(t, s)
	_, err := s.flushCommitLog(0)
	require.NoError(t, err)
	require.Zero(t, gathered(t, reg, "ringmq_store_dispatch_behind_bytes", ""))
	require.Zero(t, gathered(t, reg, "ringmq_store_flush_behind_bytes", ""))

	a := mustPut(t, s, testMessage("LagTopic", 0, body(100, "l")))
	<-gate.arrived
	b := mustPut(t, s, testMessage("Other", 0, body(200, "m")))
	behind := float64(a.WroteBytes + b.WroteBytes)
	require.Equal(t, behind, gathered(t, reg, "ringmq_store_dispatch_behind_bytes", ""))
	require.Equal(t, behind, gathered(t, reg, "ringmq_store_flush_behind_bytes", ""))

	releaseGate()
	waitDispatched(t, s)
	require.Zero(t, gathered(t, reg, "ringmq_store_dispatch_behind_bytes", ""))
	require.Equal(t, behind, gathered(t, reg, "ringmq_store_flush_behind_bytes", ""), "dispatched, not flushed")
	_, err = s.flushCommitLog(0)
	require.NoError(t, err)
	require.Zero(t, gathered(t, reg, "ringmq_store_flush_behind_bytes", ""))
}

// gathered reads a counter, a gauge or a histogram's sample count from the store's registry: the one
// with label service=service, or with service "" the first of that name.
func gathered(tb testing.TB, reg *prometheus.Registry, name, service string) float64 {
	tb.Helper()
	mfs, err := reg.Gather()
	require.NoError(tb, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if service == "" {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
			for _, l := range m.GetLabel() {
				if l.GetName() == "service" && l.GetValue() == service {
					return m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
				}
			}
		}
	}
	tb.Fatalf("metric %s{service=%q} not registered", name, service)
	return 0
}

func gatheredHistogram(t *testing.T, reg *prometheus.Registry, name string) *dto.Histogram {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetHistogram()
		}
	}
	t.Fatalf("histogram %s not registered", name)
	return nil
}

// The figures GET_BROKER_RUNTIME_INFO adds: reads found and missed and the longest read, the
// put-latency counts (the histogram's), what the transient pool still holds and has free.
func TestRuntimeInfoStats(t *testing.T) {
	for _, transient := range []bool{false, true} {
		t.Run(map[bool]string{false: "mmap", true: "transientpool"}[transient], func(t *testing.T) {
			cfg := lazyCommitConfig(t.TempDir(), transient, AsyncFlush)
			s := openStarted(t, cfg, Deps{Registerer: prometheus.NewRegistry()})
			for range 3 {
				mustPut(t, s, testMessage("T", 0, []byte("0123456789")))
			}
			var latency uint64
			for _, n := range s.PutLatency() {
				latency += n
			}
			require.EqualValues(t, 3, latency, "one count per put")
			st := s.Stats()
			if transient {
				require.Less(t, st.CommitLogCommittedOffset, st.CommitLogMaxOffset, "acknowledged, still in the pool's buffer")
				require.Positive(t, st.TransientPoolAvailable)
			} else {
				require.Equal(t, st.CommitLogMaxOffset, st.CommitLogCommittedOffset)
				require.Equal(t, -1, st.TransientPoolAvailable)
			}
			if transient {
				return // the records are not dispatched before they are committed
			}
			waitDispatched(t, s)
			r, err := s.GetMessage("G", "T", 0, 0, 32, 0, nil)
			require.NoError(t, err)
			require.Equal(t, Found, r.Status)
			r.Release()
			r, err = s.GetMessage("G", "T", 0, 3, 32, 0, nil)
			require.NoError(t, err)
			require.NotEqual(t, Found, r.Status)
			r.Release()
			st = s.Stats()
			require.EqualValues(t, 2, st.GetMessageTimesTotal)
			require.EqualValues(t, 1, st.GetMessageFoundTotal)
			require.Positive(t, st.GetMessageTimeMax)
		})
	}
}
