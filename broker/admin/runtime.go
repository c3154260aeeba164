package admin

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

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

// runtimeInfo builds GET_BROKER_RUNTIME_INFO's table (RocketMQ BrokerController
// prepareRuntimeInfo plus the store's runtime info).
func (p *Plane) runtimeInfo() map[string]string {
	st := p.d.Store.Stats()
	rs := p.d.Runtime
	now := p.d.Clock()
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	t := map[string]string{
		"brokerVersionDesc":                codec.MQVersionName(codec.ServerVersion()),
		"brokerVersion":                    strconv.Itoa(int(codec.ServerVersion())),
		"bootTimestamp":                    i64(p.d.BootTime.UnixMilli()),
		"runtime":                          runtimeText(now.Sub(p.d.BootTime)),
		"brokerActive":                     "true",
		"msgPutTotalTodayNow":              i64(st.PutMessageTimesTotal),
		"msgGetTotalTodayNow":              i64(st.GetMessageTransferredMsg),
		"putMessageTimesTotal":             i64(st.PutMessageTimesTotal),
		"putMessageSizeTotal":              i64(st.PutMessageSizeTotal),
		"putMessageFailedTimes":            i64(st.PutMessageFailedTimes),
		"getMessageTimesTotal":             i64(st.GetMessageTimesTotal),
		"getMessageTransferedMsgCount":     i64(st.GetMessageTransferredMsg),
		"commitLogMaxOffset":               i64(st.CommitLogMaxOffset),
		"commitLogMinOffset":               i64(st.CommitLogMinOffset),
		"commitLogFlushedOffset":           i64(st.CommitLogFlushedOffset),
		"dispatchBehindBytes":              i64(st.DispatchBehindBytes),
		"runningFlags":                     st.RunningFlags.String(),
		"putMessageEntireTimeMax":          i64(st.PutLockMax.Milliseconds()),
		"pageCacheLockTimeMills":           i64(p.d.Store.BeginTimeInLock().Milliseconds()),
		"startAcceptSendRequestTimeStamp":  "0",
		"earliestMessageTimeStamp":         i64(p.earliestMessageTime()),
		"pullThreadPoolQueueSize":          i64(p.d.Pools.Pull.Depth()),
		"pullThreadPoolQueueCapacity":      strconv.Itoa(p.d.Pools.Pull.Capacity),
		"queryThreadPoolQueueSize":         i64(p.d.Pools.Query.Depth()),
		"queryThreadPoolQueueCapacity":     strconv.Itoa(p.d.Pools.Query.Capacity),
		"adminBrokerThreadPoolQueueSize":   i64(p.d.Pools.Admin.Depth()),
		"adminBrokerThreadPoolQueueCapity": strconv.Itoa(p.d.Pools.Admin.Capacity),
		"sendThreadPoolQueueSize":          "0", // sends run on the event loops
		"sendThreadPoolQueueCapacity":      "0",
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
	t["getTotalTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.get })
	t["getTransferedTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.transferred })
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
	at                    time.Time
	put, get, transferred int64
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
	s := runtimeSample{at: now, put: st.PutMessageTimesTotal, get: st.GetMessageTimesTotal, transferred: st.GetMessageTransferredMsg}
	r.mu.Lock()
	defer r.mu.Unlock()
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
