package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// ProcessGetBrokerRuntimeInfo answers a KVTable with the keys mqadmin brokerStatus shows.
func (p *Plane) ProcessGetBrokerRuntimeInfo(rc *remoting.Request) {
	table := p.runtimeInfo()
	body, err := (&codec.KVTable{Table: table}).Encode()
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// runtimeInfo builds GET_BROKER_RUNTIME_INFO's table: every key RocketMQ 4.9.8's
// AdminBrokerProcessor.prepareRuntimeInfo reports (with DefaultMessageStore.getRuntimeInfo's and
// StoreStatsService.getRuntimeInfo's), plus brokerActive and getTransferredTps (5.x's mqadmin
// clusterList reads them) and ringmq's own runningFlags, commitLogFlushedOffset and admin pool.
func (p *Plane) runtimeInfo() map[string]string {
	st := p.d.Store.Stats()
	rs := p.d.Runtime
	now := p.d.Clock()
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	ms := func(d time.Duration) string { return i64(d.Milliseconds()) }
	// Sends run on the event loops and END_TRANSACTION continues on the query pool: ringmq has no
	// send or end-transaction pool, so the send figures are 0 and END_TRANSACTION's are the query
	// pool's, where it waits.
	t := map[string]string{
		"brokerVersionDesc":                     codec.MQVersionName(codec.ServerVersion()),
		"brokerVersion":                         strconv.Itoa(int(codec.ServerVersion())),
		"bootTimestamp":                         i64(p.d.BootTime.UnixMilli()),
		"runtime":                               runtimeText(now.Sub(p.d.BootTime)),
		"brokerActive":                          "true",
		"msgPutTotalTodayNow":                   i64(st.PutMessageTimesTotal),
		"msgGetTotalTodayNow":                   i64(st.GetMessageTransferredMsg),
		"putMessageTimesTotal":                  i64(st.PutMessageTimesTotal),
		"putMessageSizeTotal":                   i64(st.PutMessageSizeTotal),
		"putMessageFailedTimes":                 i64(st.PutMessageFailedTimes),
		"getMessageTimesTotal":                  i64(st.GetMessageTimesTotal),
		"getMessageTransferedMsgCount":          i64(st.GetMessageTransferredMsg),
		"getMessageEntireTimeMax":               ms(st.GetMessageTimeMax),
		"dispatchMaxBuffer":                     "0", // RocketMQ never sets it either
		"commitLogMaxOffset":                    i64(st.CommitLogMaxOffset),
		"commitLogMinOffset":                    i64(st.CommitLogMinOffset),
		"commitLogFlushedOffset":                i64(st.CommitLogFlushedOffset),
		"dispatchBehindBytes":                   i64(st.DispatchBehindBytes),
		"runningFlags":                          st.RunningFlags.String(),
		"putMessageEntireTimeMax":               ms(st.PutLockMax),
		"pageCacheLockTimeMills":                ms(p.d.Store.BeginTimeInLock()),
		"startAcceptSendRequestTimeStamp":       "0",
		"earliestMessageTimeStamp":              i64(p.earliestMessageTime()),
		"sendThreadPoolQueueSize":               "0",
		"sendThreadPoolQueueCapacity":           "0",
		"sendThreadPoolQueueHeadWaitTimeMills":  "0",
		"pullThreadPoolQueueSize":               i64(p.d.Pools.Pull.depth()),
		"pullThreadPoolQueueCapacity":           strconv.Itoa(p.d.Pools.Pull.Capacity),
		"pullThreadPoolQueueHeadWaitTimeMills":  ms(p.d.Pools.Pull.headWait()),
		"queryThreadPoolQueueSize":              i64(p.d.Pools.Query.depth()),
		"queryThreadPoolQueueCapacity":          strconv.Itoa(p.d.Pools.Query.Capacity),
		"queryThreadPoolQueueHeadWaitTimeMills": ms(p.d.Pools.Query.headWait()),
		"EndTransactionQueueSize":               i64(p.d.Pools.Query.depth()),
		"EndTransactionThreadPoolQueueCapacity": strconv.Itoa(p.d.Pools.Query.Capacity),
		"adminBrokerThreadPoolQueueSize":        i64(p.d.Pools.Admin.depth()),
		"adminBrokerThreadPoolQueueCapity":      strconv.Itoa(p.d.Pools.Admin.Capacity),
		"remainHowManyDataToFlush":              humanReadableBytes(max(st.CommitLogCommittedOffset-st.CommitLogFlushedOffset, 0)),
	}
	if st.TransientPoolAvailable >= 0 {
		t["remainTransientStoreBufferNumbs"] = strconv.Itoa(st.TransientPoolAvailable)
		t["remainHowManyDataToCommit"] = humanReadableBytes(max(st.CommitLogMaxOffset-st.CommitLogCommittedOffset, 0))
	} else {
		t["remainTransientStoreBufferNumbs"] = strconv.Itoa(math.MaxInt32) // RocketMQ's answer without the pool
	}
	if st.PutMessageTimesTotal > 0 {
		t["putMessageAverageSize"] = strconv.FormatFloat(float64(st.PutMessageSizeTotal)/float64(st.PutMessageTimesTotal), 'f', 2, 64)
	} else {
		t["putMessageAverageSize"] = "0.00"
	}
	morning := rs.mornings()
	t["msgPutTotalTodayMorning"] = i64(morning.todayPut)
	t["msgGetTotalTodayMorning"] = i64(morning.todayGet)
	t["msgPutTotalYesterdayMorning"] = i64(morning.yesterdayPut)
	t["msgGetTotalYesterdayMorning"] = i64(morning.yesterdayGet)
	t["putTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.put })
	t["getFoundTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.found })
	t["getMissTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.get - s.found })
	t["getTotalTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.get })
	t["getTransferedTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.transferred })
	t["getTransferredTps"] = t["getTransferedTps"]
	latency := rs.lastMinuteLatency()
	t["putLatency99"] = fmt.Sprintf("%.2f", latencyPercentileMillis(&latency, 0.99))
	t["putLatency999"] = fmt.Sprintf("%.2f", latencyPercentileMillis(&latency, 0.999))
	t["putMessageDistributeTime"] = distributeTimeText(&latency)
	p.addDiskInfo(t)
	p.addScheduleOffsets(t)
	return t
}

// earliestMessageTime is the store time of the oldest record in the CommitLog, 0 when empty.
func (p *Plane) earliestMessageTime() int64 {
	if p.d.Store.MaxPhyOffset() <= p.d.Store.MinPhyOffset() {
		return 0
	}
	return store.RecordStoreTime(p.d.Store, p.d.Store.MinPhyOffset())
}

// runtimeText formats an uptime as RocketMQ does: "[ 0 days, 1 hours, 2 minutes, 3 seconds ]".
func runtimeText(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}

// runtimeSample is one second's store counters.
type runtimeSample struct {
	at                           time.Time
	put, get, found, transferred int64
}

// runtimeSamplesKept covers RocketMQ's longest TPS window (600 s) plus one.
const runtimeSamplesKept = 601

// RuntimeStats samples store counters every second for the TPS figures of
// GET_BROKER_RUNTIME_INFO (10 s, 60 s and 600 s windows, as RocketMQ's StoreStatsService)
// and keeps the counters at the start of today and yesterday. Safe for concurrent use.
type RuntimeStats struct {
	stats func() store.Stats
	clock func() time.Time

	mu      sync.Mutex
	ring    [runtimeSamplesKept]runtimeSample
	n, next int
	day     int // day of the last sample (YearDay + 1000*Year)
	morning morningCounters

	// The put latency of the last whole minute (RocketMQ's StoreStatsService keeps its buckets a
	// minute, then reports the previous minute's): latency reads the store's cumulative counts,
	// minuteStart is when the minute being counted began, minuteBase the counts then.
	latency     func() store.PutLatencyCounts
	minuteStart time.Time
	minuteBase  store.PutLatencyCounts
	lastMinute  store.PutLatencyCounts
}

// WithPutLatency makes r report the put latency of the last minute from latency's cumulative
// counts (the store's PutLatency). Call before the first Sample.
func (r *RuntimeStats) WithPutLatency(latency func() store.PutLatencyCounts) *RuntimeStats {
	r.latency = latency
	r.minuteBase = latency()
	r.minuteStart = r.clock()
	return r
}

// lastMinuteLatency is the put latency counted in the last whole minute.
func (r *RuntimeStats) lastMinuteLatency() store.PutLatencyCounts {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastMinute
}

type morningCounters struct{ todayPut, todayGet, yesterdayPut, yesterdayGet int64 }

// NewRuntimeStats samples stats (the store's counters) at clock's time; call Sample every
// second.
func NewRuntimeStats(stats func() store.Stats, clock func() time.Time) *RuntimeStats {
	now := clock()
	return &RuntimeStats{stats: stats, clock: clock, day: now.Year()*1000 + now.YearDay()}
}

// Sample records the current counters.
func (r *RuntimeStats) Sample() {
	st := r.stats()
	now := r.clock()
	s := runtimeSample{at: now, put: st.PutMessageTimesTotal, get: st.GetMessageTimesTotal, found: st.GetMessageFoundTotal,
		transferred: st.GetMessageTransferredMsg}
	var latency store.PutLatencyCounts
	minuteOver := r.latency != nil && now.Sub(r.minuteStart) >= time.Minute
	if minuteOver {
		latency = r.latency()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if minuteOver {
		for i := range latency {
			r.lastMinute[i] = latency[i] - r.minuteBase[i]
		}
		r.minuteBase, r.minuteStart = latency, now
	}
	if day := now.Year()*1000 + now.YearDay(); day != r.day {
		r.day = day
		r.morning = morningCounters{todayPut: s.put, todayGet: s.transferred,
			yesterdayPut: r.morning.todayPut, yesterdayGet: r.morning.todayGet}
	}
	r.ring[r.next] = s
	r.next = (r.next + 1) % runtimeSamplesKept
	r.n = min(r.n+1, runtimeSamplesKept)
}

func (r *RuntimeStats) mornings() morningCounters {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.morning
}

// tpsText formats the rate of a counter over the last 10, 60 and 600 seconds
// ("12.50 10.00 3.20"), each over the samples available when fewer were taken.
func (r *RuntimeStats) tpsText(counter func(runtimeSample) int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	parts := make([]string, 0, 3)
	for _, window := range []int{10, 60, 600} {
		parts = append(parts, strconv.FormatFloat(r.rateLocked(window, counter), 'f', 2, 64))
	}
	return strings.Join(parts, " ")
}

// rateLocked is the counter's per-second rate between the newest sample and the one
// window samples before it. Caller holds r.mu.
func (r *RuntimeStats) rateLocked(window int, counter func(runtimeSample) int64) float64 {
	if r.n < 2 {
		return 0
	}
	back := min(window, r.n-1)
	newest := r.ring[(r.next-1+runtimeSamplesKept)%runtimeSamplesKept]
	oldest := r.ring[(r.next-1-back+2*runtimeSamplesKept)%runtimeSamplesKept]
	secs := newest.at.Sub(oldest.at).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(counter(newest)-counter(oldest)) / secs
}

// latencyPercentileMillis is the put time (ms) below which a share px of the counted puts took,
// interpolated within its bucket as RocketMQ's StoreStatsService.findPutMessageEntireTimePX does;
// 0 when nothing was counted. Puts slower than the last bound count as taking that long.
func latencyPercentileMillis(c *store.PutLatencyCounts, px float64) float64 {
	var total uint64
	for _, n := range c {
		total += n
	}
	target := uint64(float64(total) * px)
	var passed uint64
	bound := func(i int) float64 {
		i = min(i, store.PutLatencyBuckets-1)
		return float64(store.PutLatencyBounds[i]) / float64(time.Millisecond)
	}
	for i, n := range c {
		if target > passed+n {
			passed += n
			continue
		}
		if n == 0 {
			return 0
		}
		lower := 0.0
		if i > 0 {
			lower = bound(i - 1)
		}
		return lower + (bound(i)-lower)*float64(target-passed)/float64(n)
	}
	return 0
}

// distributeRanges are RocketMQ's putMessageDistributeTime ranges, by their upper bound.
var distributeRanges = []struct {
	name  string
	below time.Duration
}{
	{"[<=0ms]", time.Millisecond}, {"[0~10ms]", 10 * time.Millisecond}, {"[10~50ms]", 50 * time.Millisecond},
	{"[50~100ms]", 100 * time.Millisecond}, {"[100~200ms]", 200 * time.Millisecond},
	{"[200~500ms]", 500 * time.Millisecond}, {"[500ms~1s]", time.Second}, {"[1~2s]", 2 * time.Second},
	{"[2~3s]", 3 * time.Second}, {"[3~4s]", 4 * time.Second}, {"[4~5s]", 5 * time.Second},
	{"[5~10s]", 10 * time.Second}, {"[10s~]", math.MaxInt64},
}

// distributeTimeText counts the last minute's puts in RocketMQ's putMessageDistributeTime ranges
// ("[<=0ms]:12 [0~10ms]:3 ... [10s~]:0 "): each histogram bucket goes to the range holding its
// upper bound (the buckets double from 100 ns, so a bucket straddling a range's edge counts
// whole in the upper one), the puts slower than the last bound (~1.7 s) under [1~2s].
func distributeTimeText(c *store.PutLatencyCounts) string {
	counts := make([]uint64, len(distributeRanges))
	for i, n := range c {
		upper := store.PutLatencyBounds[min(i, store.PutLatencyBuckets-1)]
		for r := range distributeRanges {
			if upper < distributeRanges[r].below {
				counts[r] += n
				break
			}
		}
	}
	var b strings.Builder
	for r, n := range counts {
		fmt.Fprintf(&b, "%s:%d ", distributeRanges[r].name, n)
	}
	return b.String()
}

// humanReadableBytes writes a byte count as RocketMQ's MixAll.humanReadableByteCount(n, false):
// "512 B", "1.5 KiB", "3.0 GiB".
func humanReadableBytes(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	exp := int(math.Log(float64(n)) / math.Log(1024))
	return fmt.Sprintf("%.1f %ciB", float64(n)/math.Pow(1024, float64(exp)), "KMGTPE"[exp-1])
}

// addDiskInfo adds the store's file systems as RocketMQ's DefaultMessageStore.getRuntimeInfo and
// prepareRuntimeInfo report them: the used share of the CommitLog's (per path and the least of
// them; one path here) and of the ConsumeQueues' file system, -1 when it cannot be read, and the
// root directory's total and usable space.
func (p *Plane) addDiskInfo(t map[string]string) {
	ratio := func(path string) float64 {
		u, err := p.diskUsage(path)
		if err != nil || u.TotalBytes == 0 {
			return -1
		}
		return diskUsedShare(u)
	}
	paths := p.d.StorePaths
	commitLog := ratio(paths.CommitLog)
	t["commitLogDiskRatio_"+paths.CommitLog] = javaDouble(commitLog)
	t["commitLogDiskRatio"] = javaDouble(commitLog)
	t["consumeQueueDiskRatio"] = javaDouble(ratio(paths.ConsumeQueue))
	if u, err := p.diskUsage(paths.Root); err == nil && u.TotalBytes > 0 {
		t["commitLogDirCapacity"] = fmt.Sprintf("Total : %s, Free : %s.",
			humanReadableBytes(int64(u.TotalBytes)), humanReadableBytes(int64(u.AvailableBytes)))
	}
}

// diskUsage reads the file system of path or, while path does not exist yet (the ConsumeQueues'
// directory before the first topic), of its nearest existing parent, where it will be made
// (RocketMQ answers -1 until it exists).
func (p *Plane) diskUsage(path string) (store.DiskUsage, error) {
	for {
		u, err := p.d.DiskUsage(path)
		parent := filepath.Dir(path)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || parent == path {
			return u, err
		}
		path = parent
	}
}

// addScheduleOffsets adds scheduleMessageOffset_<level>: "<delivered up to>,<queue max offset>" of
// each delay level's SCHEDULE_TOPIC_XXXX queue (RocketMQ's ScheduleMessageService.buildRunningStats).
func (p *Plane) addScheduleOffsets(t map[string]string) {
	if p.d.DelayOffsets == nil {
		return
	}
	w, err := codec.DecodeDelayOffsetSerializeWrapper(p.d.DelayOffsets.Encode(false))
	if err != nil {
		return
	}
	for level, offset := range w.OffsetTable {
		maxOffset := p.d.Store.GetMaxOffsetInQueue(metadata.ScheduleTopic, level-1)
		t["scheduleMessageOffset_"+strconv.Itoa(int(level))] = strconv.FormatInt(offset, 10) + "," + strconv.FormatInt(maxOffset, 10)
	}
}

// javaDouble writes v as Java's String.valueOf(double).
func javaDouble(v float64) string { return string(codec.AppendJavaDouble(nil, v)) }

// diskUsedShare is RocketMQ 4.9.8's UtilAll.getDiskPartitionSpaceUsedPercent: the used share of
// what a writer could have (used + usable, root's reserve left out), rounded up to hundredths.
func diskUsedShare(u store.DiskUsage) float64 {
	used := u.TotalBytes - min(u.FreeBytes, u.TotalBytes)
	entire := used + u.AvailableBytes
	if entire == 0 {
		return 0
	}
	percent := used * 100 / entire
	if used*100%entire != 0 {
		percent++
	}
	return float64(percent) / 100
}
