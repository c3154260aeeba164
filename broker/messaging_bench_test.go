package broker

import (
	"bytes"
	"fmt"
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
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

// Benchmarks of delayed delivery and transactions (issue 6).
//
//	go test -run '^$' -bench 'Schedule|Transaction' -benchmem ./broker/
//	go test -run '^$' -bench 'ScheduleServiceThroughput' -benchtime 200000x ./broker/
//
// BenchmarkScheduleDeliver: one due message moved by the schedule service (decode,
// re-encode, put into the file store), per op. BenchmarkScheduleServiceThroughput: b.N
// messages, all due, moved by the running service; msgs/s is the figure. BenchmarkSchedule
// Lateness10kPerSecond: messages scheduled at 10,000/s for 3 s at a 1 s level; lateness =
// when the delivered copy reached its ConsumeQueue (consumers can see it) minus its due
// millisecond. BenchmarkTransactionCommit16Producers: 16 connections each prepare a half
// (answer awaited) then commit it (END_TRANSACTION, 8 in flight), over loopback.

// benchScheduleStore opens a file store on a temporary directory for the schedule benchmarks.
func benchScheduleStore(b *testing.B, delays []time.Duration) *store.Store {
	b.Helper()
	cfg := testBrokerConfig(b)
	cfg.MappedFileSizeCommitLog = 256 << 20
	cfg.MappedFileSizeConsumeQueue = 300_000 * 20
	sc, err := storeConfig(&cfg, netipLoopback())
	require.NoError(b, err)
	st, err := store.Open(sc, store.Deps{})
	require.NoError(b, err)
	st.SetDelayLevelTable(delays)
	require.NoError(b, st.Start())
	b.Cleanup(func() { _ = st.Shutdown() })
	return st
}

// scheduleMessage is a level-1 message for BenchTopicReal with UNIQ_KEY = id.
func scheduleMessage(id int, body []byte) codec.Message {
	p, q := sendplane.AppendScheduleProperties([]byte(props("UNIQ_KEY", strconv.Itoa(id), "TAGS", "t")), 1, "BenchTopicReal", 0)
	return codec.Message{Topic: metadata.ScheduleTopic, QueueID: q, BornHost: scheduleBornHost, StoreHost: netipLoopback(),
		BornTimestamp: time.Now().UnixMilli(), Body: body, Properties: p}
}

func BenchmarkScheduleDeliver(b *testing.B) {
	st := benchScheduleStore(b, []time.Duration{time.Second})
	s, err := newScheduleMessageService(scheduleDeps{store: st, delays: []time.Duration{time.Second},
		storeHost: netipLoopback(), path: filepath.Join(b.TempDir(), "d.json")})
	require.NoError(b, err)
	m := scheduleMessage(1, bytes.Repeat([]byte("d"), 256))
	rec, err := m.AppendRecord(nil)
	require.NoError(b, err)
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.deliver(rec); err != nil {
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
	s, err := newScheduleMessageService(scheduleDeps{store: st, delays: []time.Duration{time.Second},
		storeHost: netipLoopback(), path: filepath.Join(b.TempDir(), "d.json"),
		clock: func() time.Time { return time.Now().Add(2 * time.Second) }})
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
	s, err := newScheduleMessageService(scheduleDeps{store: st, delays: delays, storeHost: netipLoopback(),
		path: filepath.Join(b.TempDir(), "d.json")})
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

func BenchmarkTransactionCommit16Producers(b *testing.B) {
	db := benchBroker(b, func(c *Config) { c.CheckTransactionMessage = false })
	createTopic(b, db.b, "BenchTx", 8)
	const producers, endsInFlight = 16, 8
	body := string(bytes.Repeat([]byte("t"), 1024))
	clients := make([]*remotingtest.Conn, producers)
	for i := range clients {
		clients[i] = remotingtest.Dial(b, db.addr)
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	await := func(c *remotingtest.Conn, opaque int32) *codec.RemotingCommand {
		resp, err := c.TryAwait(opaque, 10*time.Second)
		if err != nil {
			return nil
		}
		return resp
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for p, c := range clients {
		n := b.N / producers
		if p < b.N%producers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var window []int32
			for i := range n {
				uniq := fmt.Sprintf("TX-%d-%d", p, i)
				half, err := c.TryRequest(sendHalfCmd("BenchTx", int32(p%8), body, "PG", uniq))
				if err != nil {
					fail(err)
					return
				}
				resp := await(c, half)
				if resp == nil || resp.Code != int32(codec.ResponseSuccess) {
					fail(fmt.Errorf("half: %v", resp))
					return
				}
				var h codec.SendMessageResponseHeader
				if err := h.Decode(resp.ExtFields); err != nil {
					fail(err)
					return
				}
				_, off, err := codec.DecodeOffsetMsgID(h.MsgID)
				if err != nil {
					fail(err)
					return
				}
				end, err := c.TryRequest(endTxCmd("PG", h.QueueOffset, off, uniq, codec.SysFlagTransactionCommit, false))
				if err != nil {
					fail(err)
					return
				}
				window = append(window, end)
				if len(window) == endsInFlight {
					if r := await(c, window[0]); r == nil || r.Code != int32(codec.ResponseSuccess) {
						fail(fmt.Errorf("end: %v", r))
						return
					}
					window = window[1:]
				}
			}
			for _, end := range window {
				if r := await(c, end); r == nil || r.Code != int32(codec.ResponseSuccess) {
					fail(fmt.Errorf("end: %v", r))
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	require.Zero(b, failed.Load(), "%v", firstErr.Load())
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tx/s")
	testutil.EventuallyWithin(b, time.Minute, "every transaction committed once",
		func() bool { return queueTotal(db.b, "BenchTx", 8) == int64(b.N) })
}
