package store_test

// The tests every MessageStore must pass, run against the file store and storetest.MemStore, and the
// MemStore's own. They import package store with a dot: storetest imports store, so they cannot be in
// package store, and the dot keeps them as they read there.

import (
	"bytes"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	. "github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
)

type tagFilter struct{ code int64 }

func (f tagFilter) IsMatchedByConsumeQueue(tagsCode int64) bool { return tagsCode == f.code }

func TestMemStoreBasics(t *testing.T) {
	m := storetest.NewMemStore(ConfigForTest("mem"), nil)
	require.NoError(t, m.Start())
	b := &BatchPut{}
	for i := 0; i < 3; i++ {
		b.Messages = append(b.Messages, *MessageForTest("T", 1, Bodyf("b%d", i), codec.PropertyKeys, "k"))
	}
	res, err := m.PutMessages(b)
	require.NoError(t, err)
	require.Equal(t, int32(3), res.MsgNum)
	require.Len(t, b.PhysicalOffsets, 3)
	rec, release, err := m.LookMessageByOffset(b.PhysicalOffsets[2])
	require.NoError(t, err)
	d, err := codec.DecodeRecord(rec, true)
	require.NoError(t, err)
	require.Equal(t, "b2", string(d.Body))
	require.Equal(t, int64(2), d.QueueOffset)
	release()
	q, err := m.QueryMessage("T", "k", 2, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, q.Buffers, 2)
	q.Release()
	require.Equal(t, int64(3), m.GetMaxOffsetInQueue("T", 1))
	require.NoError(t, m.Shutdown())
	_, err = m.PutMessage(MessageForTest("T", 1, []byte("x")))
	require.ErrorIs(t, err, ErrServiceNotAvailable)
}

// A MemStore replicates as the file store does: the master's log read with ReadReplica and appended
// to a slave's MemStore in pieces that cut records gives the slave the same queues.
func TestMemStoreReplication(t *testing.T) {
	master := storetest.NewMemStore(ConfigForTest("mem"), nil)
	slaveCfg := ConfigForTest("mem")
	slaveCfg.Slave = true
	slave := storetest.NewMemStore(slaveCfg, nil)
	var published int
	master.SetPublishListener(func() { published++ })
	for i := 0; i < 5; i++ {
		MustPut(t, master, MessageForTest("T", 1, Bodyf("m%d", i), codec.PropertyTags, "a"))
	}
	require.Equal(t, 5, published)
	prep := MessageForTest("T", 1, []byte("half"))
	prep.SysFlag = codec.SysFlagTransactionPrepare
	MustPut(t, master, prep)

	require.ErrorIs(t, master.AppendReplica(0, 1, bytes.NewReader([]byte{0})), ErrServiceNotAvailable)
	res, err := slave.PutMessage(MessageForTest("T", 1, []byte("x")))
	require.ErrorIs(t, err, ErrSlave)
	require.Equal(t, ServiceNotAvailable, res.Status)

	var arrived []int64
	slave.SetArrivingListener(func(_ string, _ int32, off, _, _ int64, _ []byte) { arrived = append(arrived, off) })
	end := master.MaxPhyOffset()
	for off := int64(0); off < end; {
		data, release := master.ReadReplica(off, 37) // 37 bytes: records arrive cut
		require.NotEmpty(t, data)
		require.NoError(t, slave.AppendReplica(off, len(data), bytes.NewReader(data)))
		release()
		off += int64(len(data))
	}
	data, release := master.ReadReplica(end, 37)
	require.Nil(t, data)
	require.Nil(t, release)
	require.Equal(t, end, slave.MaxPhyOffset())
	require.Equal(t, []int64{0, 1, 2, 3, 4}, arrived, "the prepared half takes no queue offset")
	require.Equal(t, GetAll(t, master, "T", 1), GetAll(t, slave, "T", 1))
	require.Error(t, slave.AppendReplica(end+1, 0, bytes.NewReader(nil)), "not at the end")
	require.Equal(t, int64(1)<<62, slave.FileSize())
	require.True(t, slave.ReserveWait())
}

// A slave's MemStore cuts a record cut short by a lost connection back to its last whole record, as the
// file store does, and the rest of the record then arrives from there; a master's refuses.
func TestMemStoreTrimPartialRecord(t *testing.T) {
	master := storetest.NewMemStore(ConfigForTest("mem"), nil)
	for i := 0; i < 3; i++ {
		MustPut(t, master, MessageForTest("T", 1, Bodyf("m%d", i)))
	}
	_, _, err := master.TrimPartialRecord()
	require.ErrorIs(t, err, ErrServiceNotAvailable)

	slaveCfg := ConfigForTest("mem")
	slaveCfg.Slave = true
	slave := storetest.NewMemStore(slaveCfg, nil)
	from, to, err := slave.TrimPartialRecord()
	require.NoError(t, err)
	require.Equal(t, [2]int64{0, 0}, [2]int64{from, to}, "an empty log: nothing to cut")

	end := master.MaxPhyOffset()
	whole, release := master.ReadReplica(0, int(end))
	require.Len(t, whole, int(end))
	all := bytes.Clone(whole)
	release()
	size, _, ok := codec.PeekRecordHeader(all)
	require.True(t, ok)
	first := int64(size)
	cut := first + 10 // the second record's first 10 bytes
	require.NoError(t, slave.AppendReplica(0, int(cut), bytes.NewReader(all[:cut])))
	require.Equal(t, cut, slave.MaxPhyOffset())

	from, to, err = slave.TrimPartialRecord()
	require.NoError(t, err)
	require.Equal(t, [2]int64{cut, first}, [2]int64{from, to})
	require.Equal(t, first, slave.MaxPhyOffset())
	from, to, err = slave.TrimPartialRecord()
	require.NoError(t, err)
	require.Equal(t, [2]int64{first, first}, [2]int64{from, to}, "a whole log stays as it is")

	require.NoError(t, slave.AppendReplica(first, int(end-first), bytes.NewReader(all[first:])))
	require.Equal(t, end, slave.MaxPhyOffset())
	require.Equal(t, GetAll(t, master, "T", 1), GetAll(t, slave, "T", 1))
}

// A record whose properties do not parse is never written, whoever calls the store (the
// broker refuses them first; this is the chokepoint behind it).
func TestPutMalformedPropertiesRefused(t *testing.T) {
	for _, kind := range []string{"file", "mem"} {
		t.Run(kind, func(t *testing.T) {
			s := storeOfKind(t, kind)
			MustPut(t, s, MessageForTest("T", 0, []byte("good"), codec.PropertyTags, "a"))
			end := s.MaxPhyOffset()
			for _, props := range []string{"\x02\x02\x02", "\x01\x02\x01\x01\x02\x02TAGS", "TAGS\x01a\x02KEYS\x01\x02"} {
				m := MessageForTest("T", 0, []byte("bad"))
				m.Properties = []byte(props)
				res, err := s.PutMessage(m)
				require.ErrorIs(t, err, ErrMessageIllegal, "%q", props)
				require.ErrorIs(t, err, codec.ErrMalformedProperties)
				var pe *codec.PropertiesError
				require.ErrorAs(t, err, &pe)
				require.Equal(t, MessageIllegal, res.Status)

				// In a batch: the whole batch is refused, the good item too.
				batch := BatchPut{Messages: []codec.Message{*MessageForTest("T", 0, []byte("ok"), codec.PropertyTags, "b"), *m}}
				res, err = s.PutMessages(&batch)
				require.ErrorIs(t, err, ErrMessageIllegal)
				require.ErrorIs(t, err, codec.ErrMalformedProperties)
				require.Equal(t, MessageIllegal, res.Status)
			}
			require.Equal(t, end, s.MaxPhyOffset(), "nothing written")
			// Both forms of well-formed properties are taken, and the next put follows the first.
			res := MustPut(t, s, &codec.Message{Topic: "T", Body: []byte("x"), BornHost: BornHostForTest,
				Properties: []byte("TAGS\x01a\x02KEYS\x01k")})
			require.Equal(t, end, res.WroteOffset)
			require.Equal(t, int64(1), res.QueueOffset)
		})
	}
}

func TestTransactionsScheduleAndListener(t *testing.T) {
	for _, kind := range []string{"file", "mem"} {
		t.Run(kind, func(t *testing.T) {
			clock := testutil.NewManualClockAt(time.UnixMilli(5_000_000))
			var s MessageStore
			if kind == "file" {
				s = OpenStarted(t, ConfigForTest(t.TempDir()), Deps{Clock: clock.Now})
			} else {
				s = storetest.NewMemStore(ConfigForTest("mem"), clock.Now)
			}
			type arrival struct {
				topic    string
				q        int32
				off, tag int64
				ts       int64
				props    string
			}
			var mu sync.Mutex
			var arrivals []arrival
			s.SetArrivingListener(func(topic string, q int32, off, tag, ts int64, props []byte) {
				mu.Lock()
				arrivals = append(arrivals, arrival{topic, q, off, tag, ts, string(props)})
				mu.Unlock()
			})
			tx := func(flag int32, key string) PutResult {
				m := MessageForTest("TX", 0, []byte(key), codec.PropertyKeys, key)
				m.SysFlag = flag
				return MustPut(t, s, m)
			}
			require.Equal(t, int64(0), tx(codec.SysFlagTransactionPrepare, "prep").QueueOffset)
			require.Equal(t, int64(0), tx(codec.SysFlagTransactionRollback, "roll").QueueOffset)
			require.Equal(t, int64(0), tx(codec.SysFlagTransactionCommit, "commit").QueueOffset)
			require.Equal(t, int64(1), tx(codec.SysFlagTransactionNot, "plain").QueueOffset)

			s.SetDelayLevelTable([]time.Duration{time.Second, 5 * time.Second, 10 * time.Second})
			MustPut(t, s, MessageForTest(ScheduleTopic, 1, []byte("d2"), codec.PropertyDelayTimeLevel, "2", codec.PropertyTags, "x"))
			MustPut(t, s, MessageForTest(ScheduleTopic, 1, []byte("d9"), codec.PropertyDelayTimeLevel, "9"))
			if fs, ok := s.(*Store); ok {
				WaitDispatched(t, fs)
			}
			recs := GetAll(t, s, "TX", 0)
			require.Len(t, recs, 2, "prepared and rollback records are not in the queue")
			require.Equal(t, "commit", string(recs[0].Body))
			require.Equal(t, "plain", string(recs[1].Body))
			for key, want := range map[string]int{"prep": 1, "roll": 0, "commit": 1, "plain": 1} {
				q, err := s.QueryMessage("TX", key, 4, 0, 1<<62)
				require.NoError(t, err)
				require.Len(t, q.Buffers, want, key)
				q.Release()
			}
			r, err := s.GetMessage("g", ScheduleTopic, 1, 0, 32, 0, tagFilter{5_000_000 + 5_000})
			require.NoError(t, err)
			require.Equal(t, 1, r.MessageCount, "the tag field is the delivery time")
			r.Release()
			r, err = s.GetMessage("g", ScheduleTopic, 1, 0, 32, 0, tagFilter{5_000_000 + 10_000})
			require.NoError(t, err)
			require.Equal(t, 1, r.MessageCount, "levels above the table clamp to the last")
			r.Release()

			mu.Lock()
			defer mu.Unlock()
			require.Len(t, arrivals, 4)
			require.Equal(t, arrival{"TX", 0, 0, 0, 5_000_000, "KEYS\x01commit\x02"}, arrivals[0])
			require.Equal(t, "plain", arrivals[1].props[5:10])
			require.Equal(t, int64(5_005_000), arrivals[2].tag)
		})
	}
}

// TestGetMessageStatuses walks PROTOCOL.md §9's table.
func TestGetMessageStatuses(t *testing.T) {
	for _, kind := range []string{"file", "mem"} {
		t.Run(kind, func(t *testing.T) {
			s := storeOfKind(t, kind)
			get := func(topic string, q int32, off int64, n int, f MessageFilter) (GetMessageStatus, int64, int) {
				r, err := s.GetMessage("g", topic, q, off, n, 0, f)
				require.NoError(t, err)
				defer r.Release()
				return r.Status, r.NextBeginOffset, r.MessageCount
			}
			st, next, _ := get("nope", 0, 5, 32, nil)
			require.Equal(t, NoMatchedLogicQueue, st)
			require.Equal(t, int64(0), next)

			for i := 0; i < 10; i++ {
				tag := "A"
				if i >= 5 {
					tag = "B"
				}
				MustPut(t, s, MessageForTest("T", 0, Bodyf("%d", i), codec.PropertyTags, tag))
			}
			if fs, ok := s.(*Store); ok {
				WaitDispatched(t, fs)
			}
			st, next, n := get("T", 0, 0, 4, nil)
			require.Equal(t, Found, st)
			require.Equal(t, int64(4), next)
			require.Equal(t, 4, n)

			st, next, n = get("T", 0, 0, 0, nil) // 0 = the default batch
			require.Equal(t, Found, st)
			require.Equal(t, int64(10), next)
			require.Equal(t, 10, n)

			st, next, _ = get("T", 0, 10, 32, nil)
			require.Equal(t, OffsetOverflowOne, st)
			require.Equal(t, int64(10), next)

			st, next, _ = get("T", 0, 11, 32, nil)
			require.Equal(t, OffsetOverflowBadly, st)
			require.Equal(t, int64(0), next, "min offset is 0, so the correction is 0")

			b := tagFilter{codec.TagsHashCode([]byte("B"))}
			st, next, n = get("T", 0, 0, 32, b)
			require.Equal(t, Found, st)
			require.Equal(t, int64(10), next)
			require.Equal(t, 5, n)

			st, next, n = get("T", 0, 0, 3, tagFilter{codec.TagsHashCode([]byte("B"))})
			require.Equal(t, Found, st)
			require.Equal(t, 3, n)
			require.Equal(t, int64(8), next, "last scanned entry + 1")

			st, next, _ = get("T", 0, 0, 32, tagFilter{codec.TagsHashCode([]byte("C"))})
			require.Equal(t, NoMatchedMessage, st)
			require.Equal(t, int64(10), next, "past the filtered entries")

			r, err := s.GetMessage("g", "T", 0, 0, 32, 2*(91+1+1+len("TAGS\x01A\x02")), nil)
			require.NoError(t, err)
			require.Equal(t, 2, r.MessageCount, "maxBytes caps the batch")
			require.Equal(t, r.MessageCount, len(r.Buffers))
			r.Release()
		})
	}
}

// oddFilter is a CommitLogFilter that passes every ConsumeQueue entry and keeps the records
// whose "n" property is odd.
type oddFilter struct{}

func (oddFilter) IsMatchedByConsumeQueue(int64) bool { return true }

func (oddFilter) IsMatchedByCommitLog(record []byte) bool {
	rec, err := codec.DecodeRecord(record, false)
	if err != nil {
		return false
	}
	v, _ := codec.LookupProperty(rec.Properties, "n")
	return len(v) > 0 && (v[len(v)-1]-'0')%2 == 1
}

// TestGetMessageCommitLogFilter: a filter on the stored record skips records like a tag
// mismatch — the batch holds only matching records, nextBeginOffset still passes the
// skipped ones, and a scan that matches nothing is NO_MATCHED_MESSAGE.
func TestGetMessageCommitLogFilter(t *testing.T) {
	for _, kind := range []string{"file", "mem"} {
		t.Run(kind, func(t *testing.T) {
			s := storeOfKind(t, kind)
			for i := 0; i < 6; i++ {
				MustPut(t, s, MessageForTest("T", 0, Bodyf("%d", i), "n", strconv.Itoa(i)))
			}
			MustPut(t, s, MessageForTest("T", 0, Bodyf("%d", 6), "n", "6"))
			if fs, ok := s.(*Store); ok {
				WaitDispatched(t, fs)
			}
			r, err := s.GetMessage("g", "T", 0, 0, 32, 0, oddFilter{})
			require.NoError(t, err)
			require.Equal(t, Found, r.Status)
			require.Equal(t, int64(7), r.NextBeginOffset)
			var bodies []string
			for _, b := range r.Buffers {
				rec, err := codec.DecodeRecord(b, true)
				require.NoError(t, err)
				bodies = append(bodies, string(rec.Body))
			}
			require.Equal(t, []string{"1", "3", "5"}, bodies)
			r.Release()

			r, err = s.GetMessage("g", "T", 0, 6, 32, 0, oddFilter{})
			require.NoError(t, err)
			require.Equal(t, NoMatchedMessage, r.Status)
			require.Equal(t, int64(7), r.NextBeginOffset, "past the filtered record")
			require.Zero(t, r.MessageCount)
			r.Release()
		})
	}
}

// storeOfKind is a started file store on t.TempDir() ("file") or a MemStore ("mem"), for tests
// that hold both to the same contract.
func storeOfKind(t *testing.T, kind string) MessageStore {
	if kind == "file" {
		return OpenStarted(t, ConfigForTest(t.TempDir()), Deps{})
	}
	return storetest.NewMemStore(ConfigForTest("mem"), nil)
}
