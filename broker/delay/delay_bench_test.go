package delay

import (
	"bytes"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/sendplane"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

// Benchmarks of delayed delivery.
//
//	go test -run '^$' -bench 'Schedule' -benchmem ./broker/delay/
//	go test -run '^$' -bench 'ScheduleServiceThroughput' -benchtime 200000x ./broker/delay/
//
// BenchmarkScheduleDeliver: one due message moved by the schedule service (decode,
// re-encode, put into the file store), per op. BenchmarkScheduleServiceThroughput: b.N
// messages, all due, moved by the running service; msgs/s is the figure. BenchmarkSchedule
// Lateness10kPerSecond: messages scheduled at 10,000/s for 3 s at a 1 s level; lateness =
// when the delivered copy reached its ConsumeQueue (consumers can see it) minus its due
// millisecond.

// benchScheduleStore opens a file store on a temporary directory for the schedule benchmarks.
func benchScheduleStore(b *testing.B, delays []time.Duration) *store.Store {
	b.Helper()
	return openFileStore(b, delays, 256<<20)
}

// scheduleMessage is a level-1 message for BenchTopicReal with UNIQ_KEY = id.
func scheduleMessage(id int, body []byte) codec.Message {
	p, q := sendplane.AppendScheduleProperties([]byte(props("UNIQ_KEY", strconv.Itoa(id), "TAGS", "t")), 1, "BenchTopicReal", 0)
	return codec.Message{Topic: metadata.ScheduleTopic, QueueID: q, BornHost: scheduleBornHost, StoreHost: netipLoopback(),
		BornTimestamp: time.Now().UnixMilli(), Body: body, Properties: p}
}

func BenchmarkScheduleDeliver(b *testing.B) {
	st := benchScheduleStore(b, []time.Duration{time.Second})
	s, err := New(Deps{Store: st, Delays: []time.Duration{time.Second},
		StoreHost: netipLoopback(), Path: filepath.Join(b.TempDir(), "d.json")})
	require.NoError(b, err)
	m := scheduleMessage(1, bytes.Repeat([]byte("d"), 256))
	rec, err := m.AppendRecord(nil)
	require.NoError(b, err)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.deliver(&s.levels[0], rec); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkScheduleServiceThroughput(b *testing.B) {
	st := benchScheduleStore(b, []time.Duration{time.Second})
	body := bytes.Repeat([]byte("d"), 256)
	for i := range b.N {
		m := scheduleMessage(i, body)
		_, err := st.PutMessage(&m)
		require.NoError(b, err)
	}
	var delivered atomic.Int64
	done := make(chan struct{})
	n := int64(b.N)
	// Every message is due: the service's clock runs 2 s ahead of the store's.
	s, err := New(Deps{Store: st, Delays: []time.Duration{time.Second},
		StoreHost: netipLoopback(), Path: filepath.Join(b.TempDir(), "d.json"),
		Clock: func() time.Time { return time.Now().Add(2 * time.Second) }})
	require.NoError(b, err)
	st.SetArrivingListener(func(topic string, queueID int32, _, tagsCode, _ int64, _ []byte) {
		if topic == metadata.ScheduleTopic {
			s.NotifyMessageArriving(queueID, tagsCode)
		} else if delivered.Add(1) == n {
			close(done)
		}
	})
	testutil.EventuallyWithin(b, time.Minute, `st.GetMaxOffsetInQueue(ScheduleTopic, 0) == n`,
		func() bool { return st.GetMaxOffsetInQueue(metadata.ScheduleTopic, 0) == n })
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	require.NoError(b, s.Start())
	select {
	case <-done:
	case <-time.After(5 * time.Minute):
		b.Fatalf("delivered %d of %d", delivered.Load(), n)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	require.NoError(b, s.Stop(b.Context()))
	b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
}

func BenchmarkScheduleLateness10kPerSecond(b *testing.B) {
	const rate, duration = 10_000, 3 * time.Second
	for b.Loop() {
		h := scheduleLateness(b, rate, duration)
		b.ReportMetric(float64(h.ValueAtQuantile(50))/1000, "p50-ms")
		b.ReportMetric(float64(h.ValueAtQuantile(99))/1000, "p99-ms")
		b.ReportMetric(float64(h.Max())/1000, "max-ms")
	}
}

// scheduleLateness schedules rate messages per second for duration at a 1 s level and
// returns the lateness of their delivery, in µs.
func scheduleLateness(b *testing.B, rate int, duration time.Duration) *hdrhistogram.Histogram {
	delays := []time.Duration{time.Second}
	st := benchScheduleStore(b, delays)
	total := int(duration.Seconds() * float64(rate))
	due := make([]atomic.Int64, total) // ms, from the schedule entry's tag
	hist := hdrhistogram.New(1, 60_000_000, 3)
	var mu sync.Mutex
	var delivered atomic.Int64
	done := make(chan struct{})
	s, err := New(Deps{Store: st, Delays: delays, StoreHost: netipLoopback(),
		Path: filepath.Join(b.TempDir(), "d.json")})
	require.NoError(b, err)
	idOf := func(p []byte) int {
		v, _ := codec.LookupProperty(p, codec.PropertyUniqClientMessageIDKey)
		id, _ := codec.ParseDecimal(v)
		return id
	}
	st.SetArrivingListener(func(topic string, queueID int32, _, tagsCode, _ int64, p []byte) {
		if topic == metadata.ScheduleTopic {
			due[idOf(p)].Store(tagsCode)
			s.NotifyMessageArriving(queueID, tagsCode)
			return
		}
		late := time.Now().UnixMicro() - due[idOf(p)].Load()*1000
		mu.Lock()
		_ = hist.RecordValue(max(late, 1))
		mu.Unlock()
		if delivered.Add(1) == int64(total) {
			close(done)
		}
	})
	require.NoError(b, s.Start())
	body := bytes.Repeat([]byte("l"), 256)
	start := time.Now()
	for sent := 0; sent < total; {
		// Paced: as many as the elapsed time allows, checked every 100 µs.
		target := min(total, int(time.Since(start).Seconds()*float64(rate))+1)
		for ; sent < target; sent++ {
			m := scheduleMessage(sent, body)
			if _, err := st.PutMessage(&m); err != nil {
				b.Fatal(err)
			}
		}
		time.Sleep(100 * time.Microsecond) // pacing the load generator, not synchronizing
	}
	select {
	case <-done:
	case <-time.After(duration + 30*time.Second):
		b.Fatalf("delivered %d of %d", delivered.Load(), total)
	}
	require.NoError(b, s.Stop(b.Context()))
	mu.Lock()
	defer mu.Unlock()
	return hist
}
