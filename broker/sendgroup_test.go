package broker

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// countingStore counts how messages reach the store: one by one, as a batch, or grouped.
type countingStore struct {
	store.MessageStore
	mu                       sync.Mutex
	singles, batches, groups int
	grouped                  int // messages stored by PutGroup
}

func (c *countingStore) PutMessage(m *codec.Message) (store.PutResult, error) {
	c.mu.Lock()
	c.singles++
	c.mu.Unlock()
	return c.MessageStore.PutMessage(m)
}

func (c *countingStore) PutMessages(b *store.BatchPut) (store.PutResult, error) {
	c.mu.Lock()
	c.batches++
	c.mu.Unlock()
	return c.MessageStore.PutMessages(b)
}

func (c *countingStore) PutGroup(g *store.PutGroup) error {
	c.mu.Lock()
	c.groups++
	c.grouped += g.Len()
	c.mu.Unlock()
	return c.MessageStore.PutGroup(g)
}

// A connection's single sends of one read pass are stored together at the pass's end; a batch is stored
// on its own, after the sends grouped before it, so a connection's sends keep their order in every queue.
// Every grouped send is answered SUCCESS with its own offsets, and under SYNC_FLUSH once durable (a send
// with WAIT=false at once). In every store mode; with the std engine every frame is a pass: the same
// sends, each its own group.
func TestSendGroupsAPassOfSends(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine netio.NetEngine
		flush  store.FlushDiskType
		pool   bool
	}{
		{"gnet/sync/mmap", netio.NetEngineGnet, store.SyncFlush, false},
		{"std/sync/mmap", netio.NetEngineStd, store.SyncFlush, false},
		{"gnet/async/mmap", netio.NetEngineGnet, store.AsyncFlush, false},
		{"gnet/async/pool", netio.NetEngineGnet, store.AsyncFlush, true},
		{"gnet/sync/pool", netio.NetEngineGnet, store.SyncFlush, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testSendGroups(t, tc.engine, tc.flush, tc.pool) })
	}
}

func testSendGroups(t *testing.T, engine netio.NetEngine, flush store.FlushDiskType, pool bool) {
	var cs *countingStore
	db := startDataBroker(t, dataBrokerOptions{fileStore: true,
		mutate: func(c *Config) {
			c.FlushDiskType, c.NetEngine = flush, engine
			if pool {
				withTransientPool(c)
			}
		},
		wrap: func(s store.MessageStore) store.MessageStore {
			cs = &countingStore{MessageStore: s}
			return cs
		}})
	fs := cs.MessageStore.(*store.Store)
	require.True(t, fs.GroupsPuts())
	c := remotingtest.Dial(t, db.addr)
	first := sendOK(t, c, sendV1("TopicG", 0, []byte("first"), "")) // the connection's first pass: not grouped
	require.Equal(t, int64(0), first.QueueOffset)

	// One write of eight requests: a pass (or, should TCP cut it, several).
	type sent struct {
		cmd     *codec.RemotingCommand
		topic   string
		queue   int32
		offsets []int64 // the queue offsets its records must get, in order
	}
	wait := []sent{
		{sendV2("TopicG", 0, []byte("g1"), ""), "TopicG", 0, []int64{1}},
		{sendV1("TopicG", 0, []byte("g2"), ""), "TopicG", 0, []int64{2}},
		{sendV2("TopicH", 1, []byte("h1"), ""), "TopicH", 1, []int64{0}},
		{sendBatch("TopicG", 0, [2]string{"b1", ""}, [2]string{"b2", ""}), "TopicG", 0, []int64{3, 4}},
		{sendV2("TopicG", 0, []byte("g3"), ""), "TopicG", 0, []int64{5}},
		{sendV2("TopicG", 0, []byte("nowait"), props("WAIT", "false")), "TopicG", 0, []int64{6}},
		{sendV2("TopicG", 0, []byte("g4"), props("KEYS", "k4")), "TopicG", 0, []int64{7}},
		{sendV2("TopicH", 1, []byte("h2"), ""), "TopicH", 1, []int64{1}},
	}
	var burst []byte
	for i := range wait {
		wait[i].cmd.Opaque = int32(1000 + i)
		f, err := wait[i].cmd.AppendFrame(nil)
		require.NoError(t, err)
		burst = append(burst, f...)
	}
	c.Write(burst)
	maxEnd := int64(0)
	for i, s := range wait {
		resp := c.Await(int32(1000 + i))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "request %d: %s", i, resp.Remark)
		var h codec.SendMessageResponseHeader
		require.NoError(t, h.Decode(resp.ExtFields))
		require.Equal(t, s.offsets[0], h.QueueOffset, "request %d", i)
		if i == 5 {
			continue // WAIT=false: answered once stored, not once durable
		}
		ids := strings.Split(h.MsgID, ",")
		require.Len(t, ids, len(s.offsets))
		for j, id := range ids {
			rec := viewRecord(t, c, offsetOf(t, id))
			require.Equal(t, s.topic, string(rec.Topic))
			require.Equal(t, s.queue, rec.QueueID)
			require.Equal(t, s.offsets[j], rec.QueueOffset)
			maxEnd = max(maxEnd, rec.PhysicalOffset+int64(rec.TotalSize))
		}
	}
	if flush == store.SyncFlush {
		require.GreaterOrEqual(t, fs.FlushedPhyOffset(), maxEnd, "every waited send durable when answered")
	}

	// The queues hold the records in the order sent.
	for _, q := range []struct {
		topic  string
		queue  int32
		bodies []string
	}{
		{"TopicG", 0, []string{"first", "g1", "g2", "b1", "b2", "g3", "nowait", "g4"}},
		{"TopicH", 1, []string{"h1", "h2"}},
	} {
		testutil.Eventually(t, "dispatched", func() bool { return fs.GetMaxOffsetInQueue(q.topic, q.queue) == int64(len(q.bodies)) })
		res, err := fs.GetMessage("", q.topic, q.queue, 0, 32, 0, nil)
		require.NoError(t, err)
		var got []string
		for _, b := range res.Buffers {
			r, err := codec.DecodeRecord(b, true)
			require.NoError(t, err)
			got = append(got, string(r.Body))
		}
		res.Release()
		require.Equal(t, q.bodies, got, "%s/%d", q.topic, q.queue)
	}

	cs.mu.Lock()
	defer cs.mu.Unlock()
	require.Equal(t, 7, cs.grouped, "every single send after the first pass is grouped")
	require.Equal(t, 1, cs.singles, "the first pass's send")
	require.Equal(t, 1, cs.batches)
	if engine == netio.NetEngineStd {
		require.Equal(t, 7, cs.groups, "one frame, one pass, one group")
	} else {
		require.LessOrEqual(t, cs.groups, 4, "groups end only at a pass end or a batch")
	}
}

// roundWrites is the broker's ringmq_netio_round_writes_total, over its servers.
func roundWrites(t *testing.T, db *dataBroker) float64 {
	total := 0.0
	for k, v := range scrapeOf(t, db.b.Registry()) {
		if strings.HasPrefix(k, "ringmq_netio_round_writes_total") {
			total += v
		}
	}
	return total
}

// Under SYNC_FLUSH the answers of a sync's sends are written by the group commit's goroutine at the end
// of the batch it completed, one write per connection, when the connection's event loop is idle (gnet);
// every answer is SUCCESS with its own offset, in every store mode. Each send waits for its answer, so
// the loop is idle when most syncs end; one answer written that way is enough here (the loop may still
// be in its pass for some). The std engine writes from its own goroutine.
func TestSyncAnswersWrittenAtRoundEnd(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine netio.NetEngine
		pool   bool
	}{
		{"gnet/mmap", netio.NetEngineGnet, false},
		{"gnet/pool", netio.NetEngineGnet, true},
		{"std/mmap", netio.NetEngineStd, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var fs *store.Store
			db := startDataBroker(t, dataBrokerOptions{fileStore: true,
				mutate: func(c *Config) {
					c.FlushDiskType, c.NetEngine = store.SyncFlush, tc.engine
					if tc.pool {
						withTransientPool(c)
					}
				},
				wrap: func(s store.MessageStore) store.MessageStore {
					fs = s.(*store.Store)
					return s
				}})
			c := remotingtest.Dial(t, db.addr)
			const most = 200
			n := 0
			for n < most && (n < 20 || tc.engine == netio.NetEngineGnet && roundWrites(t, db) == 0) {
				h := sendOK(t, c, sendV2("TopicR", 0, []byte("r"+strings.Repeat("x", n)), ""))
				require.Equal(t, int64(n), h.QueueOffset)
				rec := viewRecord(t, c, offsetOf(t, h.MsgID))
				require.GreaterOrEqual(t, fs.FlushedPhyOffset(), rec.PhysicalOffset+int64(rec.TotalSize), "durable when answered")
				n++
			}
			if tc.engine == netio.NetEngineGnet {
				require.Positive(t, roundWrites(t, db), "no answer of %d written at a round's end", n)
			} else {
				require.Zero(t, roundWrites(t, db))
			}
		})
	}
}
