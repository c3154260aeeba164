package admin

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// delayOffsets is a schedule service's cursors.
type delayOffsets map[int32]int64

func (d delayOffsets) Encode(pretty bool) []byte {
	return (&codec.DelayOffsetSerializeWrapper{OffsetTable: d}).Encode(pretty)
}

// queueStore is fakeStore with queue max offsets.
type queueStore struct {
	fakeStore
	maxOffsets map[int32]int64 // SCHEDULE_TOPIC_XXXX's queues
}

func (s queueStore) GetMaxOffsetInQueue(topic string, queueID int32) int64 {
	if topic != "SCHEDULE_TOPIC_XXXX" {
		panic(topic)
	}
	return s.maxOffsets[queueID]
}

// The figures RocketMQ reports beside the counters: disks, pools' head waits, what is left to
// commit and flush, reads found and missed, the schedule service's progress.
func TestRuntimeInfoStoreFigures(t *testing.T) {
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	st := queueStore{fakeStore: fakeStore{stats: store.Stats{
		CommitLogMaxOffset: 10 << 20, CommitLogCommittedOffset: 8 << 20, CommitLogFlushedOffset: 8<<20 - 512,
		TransientPoolAvailable: 3, GetMessageTimeMax: 1500 * time.Millisecond,
		GetMessageTimesTotal: 10, GetMessageFoundTotal: 6,
	}}, maxOffsets: map[int32]int64{0: 9, 2: 4}}
	disks := map[string]store.DiskUsage{
		"/data/commitlog":    {TotalBytes: 1000, FreeBytes: 600, AvailableBytes: 550}, // used 400 of 950
		"/data/consumequeue": {TotalBytes: 1000, FreeBytes: 1000, AvailableBytes: 1000},
		"/data":              {TotalBytes: 3 << 30, FreeBytes: 2 << 30, AvailableBytes: 1536 << 20},
	}
	wait := func(d time.Duration) func() time.Duration { return func() time.Duration { return d } }
	p := New(Deps{Store: st, Clock: clock, BootTime: now,
		Pools: Pools{Pull: Pool{Capacity: 10, HeadWait: wait(1200 * time.Millisecond)},
			Query: Pool{Capacity: 20, Depth: func() int64 { return 2 }, HeadWait: wait(30 * time.Millisecond)}},
		StorePaths:   StorePaths{Root: "/data", CommitLog: "/data/commitlog", ConsumeQueue: "/data/consumequeue"},
		DelayOffsets: delayOffsets{1: 7, 3: 2},
		DiskUsage: func(path string) (store.DiskUsage, error) {
			if u, ok := disks[path]; ok {
				return u, nil
			}
			return store.DiskUsage{}, errors.New("no such file system")
		}})
	p.d.Runtime.Sample()
	now = now.Add(10 * time.Second)
	st.stats.GetMessageTimesTotal += 50 // 30 found, 20 missed in 10 s
	st.stats.GetMessageFoundTotal += 30
	p.d.Store = st
	p.d.Runtime.stats = st.Stats
	p.d.Runtime.Sample()

	kv := p.runtimeInfo()
	for key, want := range map[string]string{
		"commitLogDiskRatio":                    "0.43", // 400/950 rounded up, as RocketMQ 4.9.8
		"commitLogDiskRatio_/data/commitlog":    "0.43",
		"consumeQueueDiskRatio":                 "0.0",
		"commitLogDirCapacity":                  "Total : 3.0 GiB, Free : 1.5 GiB.",
		"pullThreadPoolQueueHeadWaitTimeMills":  "1200",
		"queryThreadPoolQueueHeadWaitTimeMills": "30",
		"sendThreadPoolQueueHeadWaitTimeMills":  "0",
		"EndTransactionQueueSize":               "2",
		"EndTransactionThreadPoolQueueCapacity": "20",
		"remainTransientStoreBufferNumbs":       "3",
		"remainHowManyDataToCommit":             "2.0 MiB",
		"remainHowManyDataToFlush":              "512 B",
		"getMessageEntireTimeMax":               "1500",
		"getFoundTps":                           "3.00 3.00 3.00",
		"getMissTps":                            "2.00 2.00 2.00",
		"getTotalTps":                           "5.00 5.00 5.00",
		"scheduleMessageOffset_1":               "7,9",
		"scheduleMessageOffset_3":               "2,4",
		"dispatchMaxBuffer":                     "0",
	} {
		require.Equal(t, want, kv[key], key)
	}

	// Without the pool: RocketMQ's Integer.MAX_VALUE buffers and no data to commit; a store path
	// that cannot be read is -1.
	st.stats.TransientPoolAvailable = -1
	st.stats.CommitLogCommittedOffset = st.stats.CommitLogMaxOffset
	p.d.Store = st
	p.d.StorePaths.CommitLog = "/elsewhere"
	kv = p.runtimeInfo()
	require.Equal(t, "2147483647", kv["remainTransientStoreBufferNumbs"])
	require.NotContains(t, kv, "remainHowManyDataToCommit")
	require.Equal(t, "2.0 MiB", kv["remainHowManyDataToFlush"])
	require.Equal(t, "-1.0", kv["commitLogDiskRatio"])
	require.Equal(t, "-1.0", kv["commitLogDiskRatio_/elsewhere"])
}

// putLatency99/999 and putMessageDistributeTime are the last whole minute's, from the store's
// cumulative put-latency counts.
func TestPutLatencyOfLastMinute(t *testing.T) {
	now := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	bucketOf := func(d time.Duration) int {
		for i, b := range store.PutLatencyBounds {
			if d <= b {
				return i
			}
		}
		return store.PutLatencyBuckets
	}
	var counts store.PutLatencyCounts
	counts[bucketOf(time.Millisecond)] += 5000 // before the broker started counting: never reported
	r := NewRuntimeStats(func() store.Stats { return store.Stats{} }, func() time.Time { return now }).
		WithPutLatency(func() store.PutLatencyCounts { return counts })
	for s := 1; s <= 59; s++ {
		now = now.Add(time.Second)
		r.Sample()
	}
	require.Equal(t, store.PutLatencyCounts{}, r.lastMinuteLatency(), "no whole minute yet")

	// In the first minute: 990 puts under 100 µs, 9 at ~3 ms, 1 slower than the last bound.
	counts[bucketOf(50*time.Microsecond)] += 990
	counts[bucketOf(3*time.Millisecond)] += 9
	counts[store.PutLatencyBuckets]++
	now = now.Add(time.Second)
	r.Sample()
	last := r.lastMinuteLatency()
	// 990 is the 99th percentile's index: the end of the 51.2 µs bucket.
	require.InDelta(t, 0.0512, latencyPercentileMillis(&last, 0.99), 1e-9)
	// 999: the end of the ~3.3 ms bucket.
	require.InDelta(t, 3.2768, latencyPercentileMillis(&last, 0.999), 1e-9)
	require.InDelta(t, 1677.7216, latencyPercentileMillis(&last, 1), 1e-6, "the slowest count as the last bound")
	require.Equal(t, "[<=0ms]:990 [0~10ms]:9 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 [200~500ms]:0 [500ms~1s]:0 "+
		"[1~2s]:1 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ", distributeTimeText(&last))

	// The next minute had no puts.
	for range 60 {
		now = now.Add(time.Second)
		r.Sample()
	}
	last = r.lastMinuteLatency()
	require.Zero(t, latencyPercentileMillis(&last, 0.99))
}

func TestHumanReadableBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB",
		5 << 30: "5.0 GiB", 1<<40 + 1<<39: "1.5 TiB"} {
		require.Equal(t, want, humanReadableBytes(n), "%d", n)
	}
}
