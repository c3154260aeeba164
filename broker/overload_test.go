package broker

// Overload (issue 8 item 4): more SYNC_FLUSH sends than the disk absorbs. The store runs on a
// file system whose CommitLog syncs block while the test holds a gate (a disk that stopped
// answering), so the group commit's waiter queue fills up; 48 producers keep 20,000+ sends
// in flight. Asserted:
//
//   - exactly WaiterQueueMax sends are accepted and wait; every other one is refused with
//     SYSTEM_BUSY [PCBUSY_CLEAN_QUEUE] while the disk is still stuck (fast failure: no
//     refusal waits for the disk), and a refused send is not stored (the broker checks the
//     queue before the put; a put racing on another event loop could still find the queue
//     full after storing: at most one per loop, counted);
//   - the broker's live heap while the queue is full stays within 128 MiB of the start
//     (measured: ~46 MiB for 16,384 waiting sends, ~3 KiB each, the test's own clients included);
//   - once the disk answers, every accepted send is answered SUCCESS, within
//     syncFlushTimeout, and each is read back at its queue offset;
//   - a request that does not touch the disk (GET_MAX_OFFSET) is answered while the disk is
//     stuck.
//
// Queues between the network and the disk, each bounded (see the issue notes for the list).

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

// gateFS is a store.FS whose CommitLog syncs wait while the gate is closed.
type gateFS struct {
	store.FS
	mu      sync.RWMutex // held exclusively by the test while the disk is stuck
	blocked atomic.Int64 // syncs waiting at the gate now
}

func newGateFS() *gateFS { return &gateFS{FS: store.NewOSFS(nil)} }

func (g *gateFS) OpenFile(name string, flag int, perm os.FileMode) (store.File, error) {
	f, err := g.FS.OpenFile(name, flag, perm)
	if err != nil || !strings.Contains(name, "commitlog") {
		return f, err
	}
	return &gateFile{File: f, g: g}, nil
}

func (g *gateFS) wait() {
	g.blocked.Add(1)
	g.mu.RLock()
	g.mu.RUnlock() //nolint:staticcheck // the gate: wait until the test opens it
	g.blocked.Add(-1)
}

type gateFile struct {
	store.File
	g *gateFS
}

func (f *gateFile) SyncMapped(mapped []byte, off, length int64) error {
	f.g.wait()
	return f.File.SyncMapped(mapped, off, length)
}

func (f *gateFile) Sync() error {
	f.g.wait()
	return f.File.Sync()
}

func (f *gateFile) WriteSync(buf []byte, bufIndex int, off int64, sync bool) error {
	if sync {
		f.g.wait()
	}
	return f.File.WriteSync(buf, bufIndex, off, sync)
}

type overloadAnswer struct {
	code    int32
	remark  string
	latency time.Duration
	at      time.Time
	key     string
	queueID int32
	offset  int64
}

func TestOverloadSyncFlushFailsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("20,000 sends")
	}
	const syncFlushTimeout = 30 * time.Second
	gate := newGateFS()
	rb := startRelBroker(t, func(c *Config) {
		c.FlushDiskType = store.SyncFlush
		c.SyncFlushTimeout = syncFlushTimeout
		c.OSPageCacheBusyTimeout = time.Minute
		c.MappedFileSizeCommitLog = 64 << 20 // no file roll: the allocator's syncs would wait too
	}, gate)
	admin := remotingtest.Dial(t, rb.addr)
	relCreateTopic(t, admin, "OverloadT", 4)
	resp := admin.Call(sendV2("OverloadT", 0, relBody("warm-up", 10), props(codec.PropertyKeys, "warm-up")))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	baseline := relLiveHeap()

	queueMax := flush.DefaultGroupCommitConfig().WaiterQueueMax
	const producers = 48
	perProducer := (queueMax + 4000 + producers - 1) / producers
	total := perProducer * producers

	gate.mu.Lock() // the disk stops answering
	gateOpen := false
	defer func() {
		if !gateOpen {
			gate.mu.Unlock()
		}
	}()
	var released atomic.Int64 // unix nanos when the gate opened; 0 while stuck
	var mu sync.Mutex
	answers := make([]overloadAnswer, 0, total)
	var failures []string
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := remotingtest.Open(rb.addr)
			if err != nil {
				mu.Lock()
				failures = append(failures, err.Error())
				mu.Unlock()
				return
			}
			defer c.Close()
			type pending struct {
				opaque int32
				start  time.Time
				key    string
				q      int32
			}
			var ps []pending
			for i := range perProducer {
				key := "ov-" + strconv.Itoa(p) + "-" + strconv.Itoa(i)
				q := int32((p + i) % 4)
				opaque, err := c.TryRequest(sendV2("OverloadT", q, relBody(key, 512), props(codec.PropertyKeys, key)))
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					return
				}
				ps = append(ps, pending{opaque, time.Now(), key, q})
			}
			// Answers arrive out of order (refusals overtake waiting sends): one waiter each.
			var waiters sync.WaitGroup
			for _, x := range ps {
				waiters.Add(1)
				go func() {
					defer waiters.Done()
					resp, err := c.TryAwait(x.opaque, 2*syncFlushTimeout)
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						failures = append(failures, err.Error())
						return
					}
					a := overloadAnswer{code: resp.Code, remark: resp.Remark, latency: time.Since(x.start), at: time.Now(),
						key: x.key, queueID: x.q}
					if resp.Code == int32(codec.ResponseSuccess) {
						var h codec.SendMessageResponseHeader
						if err := h.Decode(resp.ExtFields); err != nil {
							failures = append(failures, err.Error())
						}
						a.offset = h.QueueOffset
					}
					answers = append(answers, a)
				}()
			}
			waiters.Wait()
		}()
	}
	count := func(code codec.ResponseCode) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, a := range answers {
			if a.code == int32(code) {
				n++
			}
		}
		return n
	}
	// Every send beyond the queue's capacity is refused while the disk is stuck.
	testutil.Eventually(t, fmt.Sprintf("SYSTEM_BUSY answers: %d of %d", count(codec.ResponseSystemBusy), total-queueMax),
		func() bool { return count(codec.ResponseSystemBusy) >= total-queueMax })
	// A request that needs no disk is still served.
	start := time.Now()
	resp = admin.Call(codec.NewRequest(codec.RequestGetMaxOffset, map[string]string{"topic": "OverloadT", "queueId": "0"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code)
	getMaxOffsetLatency := time.Since(start)
	stuckHeap := relLiveHeap()
	require.Equal(t, total-queueMax, count(codec.ResponseSystemBusy), "refused sends")
	require.Zero(t, count(codec.ResponseSuccess), "nothing is acknowledged while the disk is stuck")
	require.Positive(t, gate.blocked.Load(), "the group commit waits at the gate")

	released.Store(time.Now().UnixNano())
	gate.mu.Unlock()
	gateOpen = true
	wg.Wait()
	require.Empty(t, failures)
	require.Len(t, answers, total)

	var busyLat, okLat []time.Duration
	storedRefused := 0
	c := remotingtest.Dial(t, rb.addr)
	for _, a := range answers {
		switch a.code {
		case int32(codec.ResponseSystemBusy):
			require.True(t, strings.HasPrefix(a.remark, "[PCBUSY_CLEAN_QUEUE]"), a.remark)
			require.Less(t, a.at.UnixNano(), released.Load(), "SYSTEM_BUSY waited for the disk")
			busyLat = append(busyLat, a.latency)
		case int32(codec.ResponseSuccess):
			require.Less(t, a.latency, syncFlushTimeout)
			okLat = append(okLat, a.latency)
		default:
			require.Failf(t, "unexpected answer", "code %d %q", a.code, a.remark)
		}
	}
	require.Len(t, okLat, queueMax)
	// Read everything back: the accepted sends at their offsets, the refused ones absent.
	recs := map[string]relRecord{}
	for q := range int32(4) {
		for _, r := range relPullQueue(t, c, "OverloadT", q) {
			recs[r.key] = r
		}
	}
	for _, a := range answers {
		r, ok := recs[a.key]
		if a.code == int32(codec.ResponseSuccess) {
			require.True(t, ok, "accepted %s is not stored", a.key)
			require.Equal(t, a.offset, r.rec.QueueOffset)
			require.Equal(t, a.queueID, r.rec.QueueID)
		} else if ok {
			storedRefused++
		}
	}
	require.Zero(t, storedRefused, "refused sends that were stored anyway (each send's place is reserved before its put)")
	require.Less(t, int64(stuckHeap)-int64(baseline), int64(128<<20),
		"live heap with %d sends waiting: %d MiB (baseline %d MiB)", queueMax, stuckHeap>>20, baseline>>20)
	t.Logf("overload: %d SYNC_FLUSH sends from %d producers against a stuck disk: %d accepted (queue max %d), %d SYSTEM_BUSY "+
		"(p50 %v, p99 %v, max %v, all before the disk came back), %d refused but stored; accepted answered after the disk "+
		"returned: p50 %v p99 %v max %v; GET_MAX_OFFSET while stuck %v; live heap %d MiB → %d MiB with the queue full",
		total, producers, len(okLat), queueMax, len(busyLat), relPercentile(busyLat, 50), relPercentile(busyLat, 99),
		relPercentile(busyLat, 100), storedRefused, relPercentile(okLat, 50), relPercentile(okLat, 99), relPercentile(okLat, 100),
		getMaxOffsetLatency, baseline>>20, stuckHeap>>20)
}

// TestPooledCopiesCountAgainstTheRequestBudget: the copy dispatch makes for a pooled processor is held
// until the processor returns, and requestBudgetBytes bounds what all of them hold: past it a request is
// answered SYSTEM_BUSY at once instead of queued (a pool's queue bounds requests, not bytes).
func TestPooledCopiesCountAgainstTheRequestBudget(t *testing.T) {
	const code = codec.RequestCode(9998)
	release := make(chan struct{})
	var running atomic.Int32
	db := startDataBroker(t, dataBrokerOptions{
		mutate: func(c *Config) { c.RequestBudgetBytes = 1 << 20 },
		beforeRun: func(b *Broker) {
			b.routes[int32(code)] = &route{code: code, where: onPool, pool: poolAdmin, handle: func(_ *Broker, rc *remoting.Request) {
				running.Add(1)
				<-release
				rc.Reply.OK()
			}}
		},
	})
	c := remotingtest.Dial(t, db.addr)
	body := make([]byte, 600<<10)
	first := c.Request(codec.NewRequest(code, map[string]string{"k": "v"}, body))
	testutil.Eventually(t, "the first request running", func() bool { return running.Load() == 1 })
	require.Equal(t, int64(len(body)+2), db.b.pooledBytes.Load(), "the running request holds its copy")

	resp := c.Call(codec.NewRequest(code, nil, body))
	require.Equal(t, int32(codec.ResponseSystemBusy), resp.Code)
	require.Equal(t, "[OVERLOAD]system busy: queued requests hold 614402 bytes, requestBudgetBytes is 1048576", resp.Remark)
	require.Equal(t, 1.0, scrapeOf(t, db.b.Registry()).value(`ringmq_broker_system_busy_total{reason="pooled_bytes"}`))

	close(release)
	require.Equal(t, int32(codec.ResponseSuccess), c.Await(first).Code)
	testutil.Eventually(t, "the pooled request bytes given back", func() bool { return db.b.pooledBytes.Load() == 0 })
	resp = c.Call(codec.NewRequest(code, nil, body))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "admitted once the first one returned")
	testutil.Eventually(t, "the pooled request bytes given back", func() bool { return db.b.pooledBytes.Load() == 0 })
}

// TestFullAndSlowPoolsAnswerSystemBusy: a request finding its pool's queue full is answered SYSTEM_BUSY
// [OVERLOAD] at once, and one that waited in the pull pool's queue longer than waitTimeMillsInPullQueue
// SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE] when a worker gets to it; each counted by its reason.
func TestFullAndSlowPoolsAnswerSystemBusy(t *testing.T) {
	const adminCode, pullCode = codec.RequestCode(9998), codec.RequestCode(9997)
	release := make(chan struct{})
	var running atomic.Int32
	var skew atomic.Int64 // how far the pull pool's clock is ahead
	blocked := func(_ *Broker, rc *remoting.Request) {
		running.Add(1)
		<-release
		rc.Reply.OK()
	}
	db := startDataBroker(t, dataBrokerOptions{
		mutate: func(c *Config) { c.WaitTimeMillsInPullQueue = time.Second },
		beforeRun: func(b *Broker) {
			b.routes[int32(adminCode)] = &route{code: adminCode, where: onPool, pool: poolAdmin, handle: blocked}
			b.routes[int32(pullCode)] = &route{code: pullCode, where: onPool, pool: poolPull, handle: blocked}
			b.pullPool.clock = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
		},
	})
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release) // a failed test must not leave the workers blocked at shutdown
		}
	})
	busy := func(reason string) float64 {
		return scrapeOf(t, db.b.Registry()).value(`ringmq_broker_system_busy_total{reason="` + reason + `"}`)
	}
	c := remotingtest.Dial(t, db.addr)

	// The admin pool: its 2 workers busy, its 1,000 places taken, the next request refused.
	var waiting []int32
	for range 2 {
		waiting = append(waiting, c.Request(codec.NewRequest(adminCode, nil, nil)))
	}
	testutil.Eventually(t, "both admin workers busy", func() bool { return running.Load() == 2 })
	for range cap(db.b.adminPool.queue) {
		waiting = append(waiting, c.Request(codec.NewRequest(adminCode, nil, nil)))
	}
	resp := c.Call(codec.NewRequest(adminCode, nil, nil))
	require.Equal(t, int32(codec.ResponseSystemBusy), resp.Code)
	require.Equal(t, "[OVERLOAD]system busy, start flow control for a while (admin queue full: 1000 waiting)", resp.Remark)
	require.Equal(t, 1.0, busy("overload"))

	// The pull pool: every worker busy, one request queued; a worker takes it a minute later (by the
	// pool's clock).
	workers := max(4, 2*runtime.GOMAXPROCS(0)) // as New sizes it
	for range workers {
		waiting = append(waiting, c.Request(codec.NewRequest(pullCode, nil, nil)))
	}
	testutil.Eventually(t, "every pull worker busy", func() bool { return running.Load() == int32(2+workers) })
	late := c.Request(codec.NewRequest(pullCode, nil, nil))
	testutil.Eventually(t, "a pull request queued", func() bool { return db.b.pullPool.Depth() == 1 })
	skew.Store(int64(time.Minute))
	close(release)
	resp = c.Await(late)
	require.Equal(t, int32(codec.ResponseSystemBusy), resp.Code)
	require.Regexp(t, `^\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, period in queue: 6\d{4}ms, size of queue: 0$`, resp.Remark)
	require.Equal(t, 1.0, busy("timeout_clean_queue"))
	for _, opaque := range waiting {
		require.Equal(t, int32(codec.ResponseSuccess), c.Await(opaque).Code)
	}
	require.Equal(t, 1.0, busy("overload"), "the queued requests ran")
}
