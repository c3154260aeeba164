package delay

import (
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/sendplane"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
)

// The schedule service on a MemStore inside a synctest bubble: the store's timestamps, the
// service's clock and its timer all run on the bubble's fake time, so "due after 5 s" is
// checked to the millisecond without waiting.

var scheduleBornHost = netip.MustParseAddrPort("10.0.0.7:5555")

func netipLoopback() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:10911") }

// props encodes key/value pairs as a client does (each pair ends with 0x02).
func props(kv ...string) string {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = codec.AppendProperty(b, kv[i], kv[i+1])
	}
	return string(b)
}

// openFileStore opens a started file store on a temporary directory, its CommitLog files
// commitLogBytes each, with the delay level table set.
func openFileStore(t testing.TB, delays []time.Duration, commitLogBytes int64) *store.Store {
	t.Helper()
	sc := store.DefaultConfig(t.TempDir())
	sc.StoreHost = netipLoopback()
	sc.MappedFileSizeCommitLog = commitLogBytes
	sc.MaxMessageSize = 1 << 20
	require.NoError(t, sc.Validate())
	st, err := store.Open(sc, store.Deps{})
	require.NoError(t, err)
	st.SetDelayLevelTable(delays)
	require.NoError(t, st.Start())
	t.Cleanup(func() { _ = st.Shutdown() })
	return st
}

// scheduleEnv is a MemStore with a schedule service reading it.
type scheduleEnv struct {
	st   store.MessageStore
	mem  *storetest.MemStore
	svc  *ScheduleMessageService
	path string
	deps Deps
}

func newScheduleEnv(t *testing.T, delays []time.Duration, wrap func(store.MessageStore) store.MessageStore) *scheduleEnv {
	t.Helper()
	sc := store.DefaultConfig(t.TempDir())
	sc.StoreHost = netipLoopback()
	mem := storetest.NewMemStore(sc, nil)
	mem.SetDelayLevelTable(delays)
	e := &scheduleEnv{mem: mem, st: mem, path: filepath.Join(t.TempDir(), "config", metadata.DelayOffsetFileName)}
	if wrap != nil {
		e.st = wrap(mem)
	}
	e.deps = Deps{Store: e.st, Delays: delays, StoreHost: netipLoopback(), Path: e.path,
		Logger: logtest.ForTest(t), PersistInterval: time.Second}
	e.svc = e.newService(t)
	// The MemStore calls the listener synchronously: for SCHEDULE_TOPIC_XXXX entries that is
	// the test's goroutine (the one that replaces e.svc), for delivered copies the service's.
	mem.SetArrivingListener(func(topic string, queueID int32, _, tagsCode, _ int64, _ []byte) {
		if topic == metadata.ScheduleTopic {
			e.svc.NotifyMessageArriving(queueID, tagsCode)
		}
	})
	return e
}

func (e *scheduleEnv) newService(t *testing.T) *ScheduleMessageService {
	t.Helper()
	s, err := New(e.deps)
	require.NoError(t, err)
	return s
}

// schedule stores a message as send.go does for DELAY=level: in SCHEDULE_TOPIC_XXXX queue
// level−1 with REAL_TOPIC/REAL_QID.
func (e *scheduleEnv) schedule(t *testing.T, level int, topic string, queueID int32, body string) store.PutResult {
	t.Helper()
	p := []byte(props("WAIT", "true", "KEYS", "k-"+body, "TAGS", "T", "UNIQ_KEY", "U-"+body, "CLUSTER", "C"))
	p, q := sendplane.AppendScheduleProperties(p, level, topic, queueID)
	m := codec.Message{Topic: metadata.ScheduleTopic, QueueID: q, Flag: 7, SysFlag: codec.SysFlagMultiTags,
		BornTimestamp: 1234, BornHost: scheduleBornHost, StoreHost: netipLoopback(), ReconsumeTimes: 2,
		Body: []byte(body), Properties: p}
	res, err := e.st.PutMessage(&m)
	require.NoError(t, err)
	return res
}

// delivered reads every record of topic/queueID.
func (e *scheduleEnv) delivered(t *testing.T, topic string, queueID int32) []codec.Record {
	t.Helper()
	res, err := e.mem.GetMessage("", topic, queueID, 0, 1000, 0, nil)
	require.NoError(t, err)
	defer res.Release()
	var out []codec.Record
	for _, b := range res.Buffers {
		r, err := codec.DecodeRecord(b, true)
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

func readDelayOffsets(t *testing.T, path string) map[int32]int64 {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	w, err := codec.DecodeDelayOffsetSerializeWrapper(data)
	require.NoError(t, err)
	return w.OffsetTable
}

func TestScheduleDeliversEachLevelWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newScheduleEnv(t, []time.Duration{time.Second, 5 * time.Second}, nil)
		t0 := time.Now().UnixMilli()
		e.schedule(t, 2, "TopicR", 1, "five")
		e.schedule(t, 1, "TopicR", 1, "one")
		require.NoError(t, e.svc.Start())
		synctest.Wait()
		require.Empty(t, e.delivered(t, "TopicR", 1), "nothing is due at once")

		time.Sleep(time.Second - time.Millisecond)
		synctest.Wait()
		require.Empty(t, e.delivered(t, "TopicR", 1), "1 ms before the first due time")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, []string{"one"}, remotingtest.Bodies(e.delivered(t, "TopicR", 1)))

		time.Sleep(4*time.Second - time.Millisecond)
		synctest.Wait()
		require.Len(t, e.delivered(t, "TopicR", 1), 1, "level 2 waits its 5 s")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		recs := e.delivered(t, "TopicR", 1)
		require.Equal(t, []string{"one", "five"}, remotingtest.Bodies(recs))
		require.Equal(t, int64(2), e.svc.Delivered())

		// The copy is the scheduled record in its real topic and queue, with the scheduled
		// properties as they were, DELAY and WAIT included (Java's messageTimeup), delivered on
		// its due millisecond.
		r := recs[1]
		require.Equal(t, t0+5000, r.StoreTimestamp)
		require.Equal(t, "TopicR", string(r.Topic))
		require.Equal(t, int32(1), r.QueueID)
		require.Equal(t, int32(7), r.Flag)
		require.Equal(t, codec.SysFlagMultiTags, r.SysFlag)
		require.Equal(t, int64(1234), r.BornTimestamp)
		require.Equal(t, scheduleBornHost, r.BornHost)
		require.Equal(t, int32(2), r.ReconsumeTimes)
		require.Equal(t, int64(1), r.QueueOffset)
		require.Equal(t, "WAIT\x01true\x02KEYS\x01k-five\x02TAGS\x01T\x02UNIQ_KEY\x01U-five\x02CLUSTER\x01C\x02"+
			"DELAY\x012\x02REAL_TOPIC\x01TopicR\x02REAL_QID\x011\x02", string(r.Properties))
		require.Equal(t, map[string]string{"WAIT": "true", "KEYS": "k-five", "TAGS": "T", "UNIQ_KEY": "U-five",
			"CLUSTER": "C", "DELAY": "2", "REAL_TOPIC": "TopicR", "REAL_QID": "1"}, codec.DecodeProperties(r.Properties))
		require.Equal(t, map[int32]int64{1: 1, 2: 1}, e.svc.Offsets())

		require.NoError(t, e.svc.Stop(t.Context()))
		require.Equal(t, map[int32]int64{1: 1, 2: 1}, readDelayOffsets(t, e.path))
	})
}

func TestScheduleArrivalWakesAnIdleService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newScheduleEnv(t, []time.Duration{3 * time.Second}, nil)
		require.NoError(t, e.svc.Start())
		synctest.Wait() // the service found nothing and sleeps (up to an hour)
		time.Sleep(10 * time.Second)
		e.schedule(t, 1, "TopicW", 0, "late")
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		require.Empty(t, e.delivered(t, "TopicW", 0))
		time.Sleep(time.Millisecond)
		synctest.Wait()
		require.Equal(t, []string{"late"}, remotingtest.Bodies(e.delivered(t, "TopicW", 0)))
		require.NoError(t, e.svc.Stop(t.Context()))
	})
}

func TestScheduleRestartNeitherLosesNorRepeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newScheduleEnv(t, []time.Duration{time.Second, 2 * time.Second}, nil)
		for i := range 3 {
			e.schedule(t, 1, "TopicS", 0, "a"+strconv.Itoa(i))
		}
		e.schedule(t, 2, "TopicS", 0, "b0")
		require.NoError(t, e.svc.Start())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []string{"a0", "a1", "a2"}, remotingtest.Bodies(e.delivered(t, "TopicS", 0)))
		require.NoError(t, e.svc.Stop(t.Context()))
		require.Equal(t, map[int32]int64{1: 3}, readDelayOffsets(t, e.path), "level 2 has not moved yet")

		// Down for a while; then a new service on the same store and file.
		time.Sleep(5 * time.Second)
		e.schedule(t, 1, "TopicS", 0, "a3")
		e.svc = e.newService(t)
		require.Equal(t, map[int32]int64{1: 3}, e.svc.Offsets())
		require.NoError(t, e.svc.Start())
		synctest.Wait()
		// b0 was due during the downtime: delivered at once. a3 waits its second.
		require.Equal(t, []string{"a0", "a1", "a2", "b0"}, remotingtest.Bodies(e.delivered(t, "TopicS", 0)))
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []string{"a0", "a1", "a2", "b0", "a3"}, remotingtest.Bodies(e.delivered(t, "TopicS", 0)))
		require.NoError(t, e.svc.Stop(t.Context()))
		require.Equal(t, map[int32]int64{1: 4, 2: 1}, readDelayOffsets(t, e.path))
	})
}

// flushGate reports a CommitLog flushed offset the test controls, and can refuse puts.
type flushGate struct {
	store.MessageStore
	flushed  atomic.Int64
	failPuts atomic.Bool
}

func (g *flushGate) Stats() store.Stats {
	s := g.MessageStore.Stats()
	s.CommitLogFlushedOffset = g.flushed.Load()
	return s
}

func (g *flushGate) PutMessage(m *codec.Message) (store.PutResult, error) {
	if g.failPuts.Load() && m.Topic != metadata.ScheduleTopic {
		return store.PutResult{Status: store.ServiceNotAvailable}, store.ErrDiskFull
	}
	return g.MessageStore.PutMessage(m)
}

func TestScheduleSavesOnlyCursorsWhoseCopiesAreDurable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gate *flushGate
		e := newScheduleEnv(t, []time.Duration{time.Second}, func(s store.MessageStore) store.MessageStore {
			gate = &flushGate{MessageStore: s}
			return gate
		})
		e.schedule(t, 1, "TopicP", 0, "x")
		e.schedule(t, 1, "TopicP", 0, "y")
		require.NoError(t, e.svc.Start())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Len(t, e.delivered(t, "TopicP", 0), 2)

		// The persist tick comes, but the copies are not durable: nothing is written (a
		// crash now redelivers x and y rather than losing them).
		time.Sleep(time.Second)
		synctest.Wait()
		_, err := os.Stat(e.path)
		require.ErrorIs(t, err, os.ErrNotExist)

		// Durable now: the next tick writes the snapshot.
		gate.flushed.Store(e.mem.MaxPhyOffset())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, map[int32]int64{1: 2}, readDelayOffsets(t, e.path))
		require.NoError(t, e.svc.Stop(t.Context()))
	})
}

func TestScheduleRetriesAFailedPut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var gate *flushGate
		e := newScheduleEnv(t, []time.Duration{time.Second}, func(s store.MessageStore) store.MessageStore {
			gate = &flushGate{MessageStore: s}
			return gate
		})
		e.schedule(t, 1, "TopicF", 0, "x")
		gate.failPuts.Store(true)
		require.NoError(t, e.svc.Start())
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.Empty(t, e.delivered(t, "TopicF", 0))
		require.Equal(t, map[int32]int64{}, e.svc.Offsets(), "the cursor stays on the undelivered message")
		gate.failPuts.Store(false)
		time.Sleep(delayRetryInterval)
		synctest.Wait()
		require.Equal(t, []string{"x"}, remotingtest.Bodies(e.delivered(t, "TopicF", 0)))
		require.NoError(t, e.svc.Stop(t.Context()))
	})
}

func TestScheduleCursorPastTheQueueEndIsSetBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newScheduleEnv(t, []time.Duration{time.Second}, nil)
		e.schedule(t, 1, "TopicE", 0, "old")
		// A stale file from a store that had more: the cursor lies past the queue's end.
		require.NoError(t, metadata.WriteConfigFile(e.path, []byte(`{"offsetTable":{1:100,7:5}}`)))
		e.svc = e.newService(t)
		require.Equal(t, map[int32]int64{1: 100, 7: 5}, e.svc.Offsets(), "unknown levels are kept")
		require.NoError(t, e.svc.Start())
		synctest.Wait()
		e.schedule(t, 1, "TopicE", 0, "new")
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []string{"new"}, remotingtest.Bodies(e.delivered(t, "TopicE", 0)),
			"set back to the end, not to 0: nothing is delivered twice")
		require.NoError(t, e.svc.Stop(t.Context()))
		require.Equal(t, map[int32]int64{1: 2, 7: 5}, readDelayOffsets(t, e.path))
	})
}

func TestScheduleSkipsRecordsWithoutRealTopic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newScheduleEnv(t, []time.Duration{time.Second}, nil)
		bad := codec.Message{Topic: metadata.ScheduleTopic, QueueID: 0, BornHost: scheduleBornHost, StoreHost: netipLoopback(),
			Body: []byte("lost"), Properties: []byte(props("DELAY", "1"))}
		_, err := e.st.PutMessage(&bad)
		require.NoError(t, err)
		e.schedule(t, 1, "TopicK", 0, "kept")
		require.NoError(t, e.svc.Start())
		time.Sleep(time.Second)
		synctest.Wait()
		require.Equal(t, []string{"kept"}, remotingtest.Bodies(e.delivered(t, "TopicK", 0)))
		require.Equal(t, map[int32]int64{1: 2}, e.svc.Offsets())
		require.NoError(t, e.svc.Stop(t.Context()))
	})
}

func TestScheduleNotifyIsCheapForABusyLevel(t *testing.T) {
	e := newScheduleEnv(t, []time.Duration{time.Second}, nil)
	l := &e.svc.levels[0]
	l.nextDue.Store(1000)
	e.svc.NotifyMessageArriving(0, 2000) // due after the planned head: no wake-up
	require.False(t, l.dirty.Load())
	require.Empty(t, e.svc.wake)
	e.svc.NotifyMessageArriving(0, 500) // earlier than the plan
	require.True(t, l.dirty.Load())
	require.Len(t, e.svc.wake, 1)
	l.dirty.Store(false)
	<-e.svc.wake
	l.nextDue.Store(scanningDue)
	e.svc.NotifyMessageArriving(0, 99999) // while the level is read: always noted
	require.True(t, l.dirty.Load())
	e.svc.NotifyMessageArriving(5, 1) // not a level: ignored
	e.svc.NotifyMessageArriving(-1, 1)
	if !testutil.RaceEnabled {
		l.nextDue.Store(1000)
		require.Zero(t, testing.AllocsPerRun(100, func() { e.svc.NotifyMessageArriving(0, 2000) }))
	}
}

func TestDueFilter(t *testing.T) {
	f := dueFilter{nowMs: 1000, delayMs: 500}
	require.True(t, f.IsMatchedByConsumeQueue(900))
	require.True(t, f.IsMatchedByConsumeQueue(1000))
	require.True(t, f.IsMatchedByConsumeQueue(1600), "further ahead than the level's delay: due now")
	require.False(t, f.IsMatchedByConsumeQueue(1200))
	require.False(t, f.IsMatchedByConsumeQueue(900), "nothing after the first entry not due")
	require.True(t, f.cut)
	require.Equal(t, int64(1200), f.cutTag)
	require.Equal(t, 3, f.dueSeen)
}

func TestScheduleDeliverDoesNotAllocate(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("the race detector allocates")
	}
	fs := openFileStore(t, []time.Duration{time.Second}, 4<<20)
	s, err := New(Deps{Store: fs, Delays: []time.Duration{time.Second},
		StoreHost: netipLoopback(), Path: filepath.Join(t.TempDir(), "d.json")})
	require.NoError(t, err)
	p, q := sendplane.AppendScheduleProperties([]byte(props("UNIQ_KEY", "U1", "TAGS", "t")), 1, "TopicA", 0)
	m := codec.Message{Topic: metadata.ScheduleTopic, QueueID: q, BornHost: scheduleBornHost, StoreHost: netipLoopback(),
		Body: make([]byte, 256), Properties: p}
	rec, err := m.AppendRecord(nil)
	require.NoError(t, err)
	_, err = s.deliver(&s.levels[0], rec) // warm the topic cache and buffers
	require.NoError(t, err)
	require.Zero(t, testing.AllocsPerRun(200, func() {
		if _, err := s.deliver(&s.levels[0], rec); err != nil {
			panic(err)
		}
	}))
}

func TestScheduleServiceRejectsAnEmptyTable(t *testing.T) {
	_, err := New(Deps{})
	require.ErrorIs(t, err, ErrNoLevels)
}

// legacyProperties has every defect, between two good pairs and a DELAY the re-encoding drops
// (as broker's properties_test.go serves it to the send-back path).
const legacyProperties = "\x02KEYS\x01k\x02\x01noname\x02EMPTY\x01\x02junk\x02\x02TAGS\x01t\x01u\x02DELAY\x013\x02UNIQ_KEY\x01U1"

// A record stored before properties were checked is delivered well formed.
func TestScheduleDeliveryOfALegacyRecordIsCanonical(t *testing.T) {
	e := newScheduleEnv(t, []time.Duration{time.Second}, nil)
	p, q := sendplane.AppendScheduleProperties([]byte(legacyProperties+"\x02"), 1, "TopicS", 0)
	m := codec.Message{Topic: metadata.ScheduleTopic, QueueID: q, BornHost: scheduleBornHost, StoreHost: netipLoopback(),
		Body: []byte("later"), Properties: p}
	rec, err := m.AppendRecord(nil)
	require.NoError(t, err)
	_, err = e.svc.deliver(&e.svc.levels[0], rec)
	require.NoError(t, err)
	got := e.delivered(t, "TopicS", 0)
	require.Len(t, got, 1)
	require.Equal(t, "later", string(got[0].Body))
	require.NoError(t, codec.ValidateProperties(got[0].Properties))
	require.Equal(t, map[string]string{"KEYS": "k", "UNIQ_KEY": "U1", "DELAY": "1", "REAL_TOPIC": "TopicS", "REAL_QID": "0"},
		codec.DecodeProperties(got[0].Properties))
}

// Each level counts the messages delivered from it and the bytes their copies took (RocketMQ's
// QUEUE_GET_NUMS and QUEUE_GET_SIZE); a record that cannot be delivered counts nothing.
func TestScheduleLevelDeliveries(t *testing.T) {
	e := newScheduleEnv(t, []time.Duration{time.Second, 5 * time.Second}, nil)
	for _, body := range []string{"a", "a longer body"} {
		p, q := sendplane.AppendScheduleProperties([]byte(props("KEYS", "k")), 2, "TopicL", 1)
		m := codec.Message{Topic: metadata.ScheduleTopic, QueueID: q, BornHost: scheduleBornHost, StoreHost: netipLoopback(),
			Body: []byte(body), Properties: p}
		rec, err := m.AppendRecord(nil)
		require.NoError(t, err)
		_, err = e.svc.deliver(&e.svc.levels[1], rec)
		require.NoError(t, err)
	}
	bad := codec.Message{Topic: metadata.ScheduleTopic, QueueID: 1, BornHost: scheduleBornHost, StoreHost: netipLoopback(),
		Body: []byte("x"), Properties: []byte(props("DELAY", "2"))}
	rec, err := bad.AppendRecord(nil)
	require.NoError(t, err)
	_, err = e.svc.deliver(&e.svc.levels[1], rec)
	require.ErrorIs(t, err, errSkipRecord)

	res, err := e.mem.GetMessage("", "TopicL", 1, 0, 10, 1<<20, nil)
	require.NoError(t, err)
	var copies int64
	for _, b := range res.Buffers {
		copies += int64(len(b))
	}
	n := len(res.Buffers)
	res.Release()
	require.Equal(t, 2, n)

	msgs, bytes := e.svc.LevelDeliveries(1)
	require.Equal(t, int64(2), msgs.Load())
	require.Equal(t, copies, bytes.Load())
	msgs, bytes = e.svc.LevelDeliveries(0)
	require.Zero(t, msgs.Load())
	require.Zero(t, bytes.Load())
	msgs, bytes = e.svc.LevelDeliveries(2)
	require.Nil(t, msgs)
	require.Nil(t, bytes)
}
