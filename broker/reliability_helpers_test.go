package broker

// Helpers of the reliability tests (issue 8): crash_linux_test.go, fault_test.go,
// hostile_test.go, overload_test.go.
//
//   - relLoad: producers that send SEND_MESSAGE_V2 frames with self-checking bodies and log
//     every acknowledged send (key, queue, queue offset, CommitLog offset, body length).
//   - relVerify*: read everything back through pulls and QUERY_MESSAGE, and check the store's
//     files offline (every ConsumeQueue entry decodes to the record it names).
//
// A body is "<key>|<pad>" where pad is a pseudo-random function of the key and its length,
// so any record read back can be checked byte for byte without keeping the bodies.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

// relPad fills dst with the pad of key: a PCG stream seeded by the key's hash.
func relPad(dst []byte, key string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	rng := rand.New(rand.NewPCG(h.Sum64(), uint64(len(dst))))
	for i := 0; i < len(dst); i += 8 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		copy(dst[i:], w[:])
	}
}

// relBody is the body of key with padLen pad bytes.
func relBody(key string, padLen int) []byte {
	b := make([]byte, len(key)+1+padLen)
	copy(b, key)
	b[len(key)] = '|'
	relPad(b[len(key)+1:], key)
	return b
}

// relCheckBody checks that body is relBody of its own key; it returns the key.
func relCheckBody(body []byte) (string, error) {
	i := bytes.IndexByte(body, '|')
	if i <= 0 {
		return "", fmt.Errorf("body %q... has no key", body[:min(len(body), 40)])
	}
	key := string(body[:i])
	want := relBody(key, len(body)-i-1)
	if !bytes.Equal(body, want) {
		return key, fmt.Errorf("body of %s differs from what was sent (%d bytes)", key, len(body))
	}
	return key, nil
}

// relAck is one acknowledged send.
type relAck struct {
	key         string
	topic       string
	queueID     int32
	queueOffset int64
	phys        int64 // CommitLog offset, from the offsetMsgId
	bodyLen     int
	round       int
}

// relLoadConfig describes a producer load.
type relLoadConfig struct {
	addr      string
	topics    []string
	queues    int32
	producers int
	window    int // sends in flight per producer
	maxPad    int // pad length is uniform in [0, maxPad]
	round     int
	seed      uint64
	// bigEvery: every bigEvery-th send of a producer has a bigPad-byte pad (0: never).
	bigEvery, bigPad int
	// timeout bounds the wait for each answer (a killed broker ends it sooner).
	timeout time.Duration
	// waitStoreMsgOK: each send carries WAIT=true explicitly (absent means the same to a broker).
	waitStoreMsgOK bool
}

// relLoad runs producers until stopped or their connections fail.
type relLoad struct {
	cfg  relLoadConfig
	stop chan struct{}
	wg   sync.WaitGroup

	acked atomic.Int64
	sent  atomic.Int64

	mu       sync.Mutex
	acks     []relAck
	codes    map[int32]int // non-SUCCESS answers by code
	remarks  map[int32]string
	failures int // sends without an answer (connection ended, timeout)
}

func startRelLoad(cfg relLoadConfig) *relLoad {
	if cfg.timeout == 0 {
		cfg.timeout = 60 * time.Second
	}
	l := &relLoad{cfg: cfg, stop: make(chan struct{}), codes: map[int32]int{}, remarks: map[int32]string{}}
	l.wg.Add(cfg.producers)
	for p := range cfg.producers {
		go l.producer(p)
	}
	return l
}

// halt stops the producers and waits for every send's answer (or failure).
func (l *relLoad) halt() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
}

func (l *relLoad) producer(p int) {
	defer l.wg.Done()
	c, err := remotingtest.Open(l.cfg.addr)
	if err != nil {
		l.mu.Lock()
		l.failures++
		l.mu.Unlock()
		return
	}
	defer c.Close()
	rng := rand.New(rand.NewPCG(l.cfg.seed, uint64(p)))
	slots := make(chan struct{}, l.cfg.window)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		case slots <- struct{}{}:
		}
		key := fmt.Sprintf("r%03dp%02ds%06d", l.cfg.round, p, seq)
		pad := rng.IntN(l.cfg.maxPad + 1)
		if l.cfg.bigEvery > 0 && seq%l.cfg.bigEvery == l.cfg.bigEvery-1 {
			pad = l.cfg.bigPad
		}
		topic := l.cfg.topics[rng.IntN(len(l.cfg.topics))]
		queueID := rng.Int32N(l.cfg.queues)
		body := relBody(key, pad)
		kv := []string{codec.PropertyKeys, key, codec.PropertyTags, "tag" + strconv.Itoa(p%3)}
		if l.cfg.waitStoreMsgOK {
			kv = append(kv, codec.PropertyWaitStoreMsgOK, "true")
		}
		cmd := sendV2(topic, queueID, body, props(kv...))
		opaque, err := c.TryRequest(cmd)
		if err != nil {
			<-slots
			l.mu.Lock()
			l.failures++
			l.mu.Unlock()
			return
		}
		l.sent.Add(1)
		inflight.Add(1)
		go func() {
			defer inflight.Done()
			defer func() { <-slots }()
			resp, err := c.TryAwait(opaque, l.cfg.timeout)
			l.record(resp, err, relAck{key: key, topic: topic, queueID: queueID, bodyLen: len(body), round: l.cfg.round})
		}()
	}
}

func (l *relLoad) record(resp *codec.RemotingCommand, err error, a relAck) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.failures++
		return
	case resp.Code != int32(codec.ResponseSuccess):
		l.codes[resp.Code]++
		l.remarks[resp.Code] = resp.Remark
		return
	}
	var h codec.SendMessageResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		l.codes[-1]++
		l.remarks[-1] = "bad send response header: " + err.Error()
		return
	}
	_, phys, err := codec.DecodeOffsetMsgID(h.MsgID)
	if err != nil || h.QueueID != a.queueID {
		l.codes[-1]++
		l.remarks[-1] = fmt.Sprintf("bad send response: msgId %q queueId %d (sent to %d)", h.MsgID, h.QueueID, a.queueID)
		return
	}
	a.queueOffset, a.phys = h.QueueOffset, phys
	l.acks = append(l.acks, a)
	l.acked.Add(1)
}

// result returns the acknowledged sends and the other outcomes, after halt.
func (l *relLoad) result() (acks []relAck, codes map[int32]int, remarks map[int32]string, failures int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks), l.codes, l.remarks, l.failures
}

// snapshotAcks returns the sends acknowledged so far (the load keeps running).
func (l *relLoad) snapshotAcks() []relAck {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks)
}

// waitAcked waits until n sends are acknowledged or the load ends by itself (its
// connections failed); false then.
func (l *relLoad) waitAcked(n int64, timeout time.Duration) bool {
	return testutil.Poll(timeout, func() bool { return l.acked.Load() >= n })
}

// relRecord is one record read back through a pull.
type relRecord struct {
	rec codec.Record
	key string
}

// relPullQueue reads a queue from offset 0 to its end with PULL_MESSAGE (subscription "*").
// Each record must decode with a correct body CRC, belong to the queue, carry the next queue
// offset (offsets are contiguous) and hold a self-consistent body.
func relPullQueue(t testing.TB, c *remotingtest.Conn, topic string, queueID int32) []relRecord {
	t.Helper()
	var out []relRecord
	offset := int64(0)
	for {
		cmd := remotingtest.PullRequest("RelVerifyGroup", topic, queueID, offset, 32, codec.PullSysFlagSubscription, 0, "*")
		resp := c.Call(cmd)
		var h codec.PullMessageResponseHeader
		require.NoError(t, h.Decode(resp.ExtFields), "pull %s/%d@%d: code %d %s", topic, queueID, offset, resp.Code, resp.Remark)
		require.Zero(t, h.MinOffset, "pull %s/%d: min offset (nothing is deleted in these tests)", topic, queueID)
		switch resp.Code {
		case int32(codec.ResponseSuccess):
		case int32(codec.ResponsePullNotFound):
			require.Equal(t, offset, h.MaxOffset, "pull %s/%d@%d found nothing before the queue's end", topic, queueID, offset)
			return out
		default:
			require.Failf(t, "pull failed", "%s/%d@%d: code %d remark %q", topic, queueID, offset, resp.Code, resp.Remark)
		}
		body := resp.Body
		require.NotEmpty(t, body)
		for len(body) > 0 {
			rec, err := codec.DecodeRecord(body, true)
			require.NoError(t, err, "record %s/%d@%d", topic, queueID, offset)
			require.Equal(t, topic, string(rec.Topic))
			require.Equal(t, queueID, rec.QueueID)
			require.Equal(t, offset, rec.QueueOffset, "%s/%d: queue offsets are not contiguous", topic, queueID)
			key, err := relCheckBody(rec.Body)
			require.NoError(t, err, "record %s/%d@%d", topic, queueID, offset)
			keys, _ := codec.LookupProperty(rec.Properties, codec.PropertyKeys)
			require.Equal(t, key, string(keys), "record %s/%d@%d: KEYS", topic, queueID, offset)
			out = append(out, relRecord{rec: rec, key: key})
			body = body[rec.TotalSize:]
			offset++
		}
		require.Equal(t, offset, h.NextBeginOffset, "pull %s/%d: nextBeginOffset", topic, queueID)
	}
}

// relVerifyAcks reads back every queue that acks name and checks that each acknowledged
// send is stored at its queue offset and CommitLog offset with its exact body. It returns
// the number of records read (acknowledged or not).
func relVerifyAcks(t testing.TB, c *remotingtest.Conn, topics []string, queues int32, acks []relAck) (records int) {
	t.Helper()
	byQueue := map[string][]relRecord{}
	for _, topic := range topics {
		for q := range queues {
			recs := relPullQueue(t, c, topic, q)
			byQueue[topic+"/"+strconv.Itoa(int(q))] = recs
			records += len(recs)
		}
	}
	seen := map[string]bool{}
	for _, a := range acks {
		recs := byQueue[a.topic+"/"+strconv.Itoa(int(a.queueID))]
		require.Less(t, a.queueOffset, int64(len(recs)), "acknowledged %s (%s/%d@%d) is lost", a.key, a.topic, a.queueID, a.queueOffset)
		r := recs[a.queueOffset]
		require.Equal(t, a.key, r.key, "%s/%d@%d holds another message than the acknowledged one", a.topic, a.queueID, a.queueOffset)
		require.Len(t, r.rec.Body, a.bodyLen, "body of %s", a.key)
		require.Equal(t, a.phys, r.rec.PhysicalOffset, "CommitLog offset of %s", a.key)
		require.False(t, seen[a.key], "%s acknowledged twice", a.key)
		seen[a.key] = true
	}
	// No message is stored twice (a producer never resends).
	stored := map[string]bool{}
	for _, recs := range byQueue {
		for _, r := range recs {
			require.False(t, stored[r.key], "%s is stored twice", r.key)
			stored[r.key] = true
		}
	}
	return records
}

// relStoredKeys reads the queues back (with relPullQueue's checks) and returns the keys stored.
func relStoredKeys(t testing.TB, c *remotingtest.Conn, topics []string, queues int32) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, topic := range topics {
		for q := range queues {
			for _, r := range relPullQueue(t, c, topic, q) {
				out[r.key] = true
			}
		}
	}
	return out
}

// relVerifyIndex finds each acknowledged send through QUERY_MESSAGE by its key (the
// IndexFile), with up to 64 queries in flight.
func relVerifyIndex(t testing.TB, c *remotingtest.Conn, acks []relAck) {
	t.Helper()
	type q struct {
		a      relAck
		opaque int32
	}
	var inflight []q
	check := func(x q) {
		resp, err := c.TryAwait(x.opaque, 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "query %s: %s", x.a.key, resp.Remark)
		body := resp.Body
		found := 0
		for len(body) > 0 {
			rec, err := codec.DecodeRecord(body, true)
			require.NoError(t, err)
			require.Equal(t, x.a.phys, rec.PhysicalOffset, "query %s found another record", x.a.key)
			found++
			body = body[rec.TotalSize:]
		}
		require.Equal(t, 1, found, "query %s", x.a.key)
	}
	for _, a := range acks {
		opaque, err := c.TryRequest(queryCmd(a.topic, a.key, 32, false))
		require.NoError(t, err)
		inflight = append(inflight, q{a, opaque})
		if len(inflight) == 64 {
			for _, x := range inflight {
				check(x)
			}
			inflight = inflight[:0]
		}
	}
	for _, x := range inflight {
		check(x)
	}
}

// relCheckStoreFiles reads a stopped store's files and checks every ConsumeQueue entry of
// the topics' queues against the CommitLog: the entry's offset and size frame a record that
// decodes (body CRC included) and belongs to that topic, queue and queue offset, and the tag
// code is the hash of its TAGS. want gives each queue's expected entry count ("topic/q").
// It returns the number of entries checked.
func relCheckStoreFiles(t testing.TB, root string, commitLogFileBytes int64, want map[string]int) int {
	t.Helper()
	clDir := filepath.Join(root, "commitlog")
	names, err := os.ReadDir(clDir)
	require.NoError(t, err)
	files := map[int64][]byte{}
	for _, e := range names {
		start, err := strconv.ParseInt(e.Name(), 10, 64)
		require.NoError(t, err, "CommitLog file name %s", e.Name())
		data, err := os.ReadFile(filepath.Join(clDir, e.Name()))
		require.NoError(t, err)
		require.Len(t, data, int(commitLogFileBytes), e.Name())
		files[start] = data
	}
	checked := 0
	for queue, n := range want {
		i := bytes.LastIndexByte([]byte(queue), '/')
		topic, qid := queue[:i], queue[i+1:]
		dir := filepath.Join(root, "consumequeue", topic, qid)
		cqNames, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) && n == 0 {
			// Every record of this queue was lost with the power (ASYNC_FLUSH, nothing
			// flushed yet): its directory never reached the disk either.
			continue
		}
		require.NoError(t, err, queue)
		var entries []byte
		sort.Slice(cqNames, func(a, b int) bool { return cqNames[a].Name() < cqNames[b].Name() })
		for _, e := range cqNames {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			require.NoError(t, err)
			entries = append(entries, data...)
		}
		q64, err := strconv.ParseInt(qid, 10, 32)
		require.NoError(t, err)
		count := 0
		for off := 0; off+20 <= len(entries); off += 20 {
			phys := int64(binary.BigEndian.Uint64(entries[off:]))
			size := int32(binary.BigEndian.Uint32(entries[off+8:]))
			tags := int64(binary.BigEndian.Uint64(entries[off+12:]))
			if size == 0 {
				break
			}
			file := files[phys-phys%commitLogFileBytes]
			require.NotNil(t, file, "%s entry %d: no CommitLog file holds offset %d", queue, count, phys)
			pos := phys % commitLogFileBytes
			require.LessOrEqual(t, pos+int64(size), commitLogFileBytes, "%s entry %d", queue, count)
			rec, err := codec.DecodeRecord(file[pos:pos+int64(size)], true)
			require.NoError(t, err, "%s entry %d at CommitLog offset %d", queue, count, phys)
			require.Equal(t, size, rec.TotalSize, "%s entry %d: size", queue, count)
			require.Equal(t, phys, rec.PhysicalOffset, "%s entry %d", queue, count)
			require.Equal(t, topic, string(rec.Topic), "%s entry %d", queue, count)
			require.Equal(t, int32(q64), rec.QueueID, "%s entry %d", queue, count)
			require.Equal(t, int64(count), rec.QueueOffset, "%s entry %d: queue offset", queue, count)
			tag, _ := codec.LookupProperty(rec.Properties, codec.PropertyTags)
			require.Equal(t, codec.TagsHashCode(tag), tags, "%s entry %d: tag code", queue, count)
			count++
		}
		require.Equal(t, n, count, "%s: ConsumeQueue entries", queue)
		checked += count
	}
	return checked
}

// relQueueCounts asks GET_MAX_OFFSET for each queue: "topic/q" → entries, for relCheckStoreFiles.
func relQueueCounts(t testing.TB, c *remotingtest.Conn, topics []string, queues int32) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, topic := range topics {
		for q := range queues {
			ext := map[string]string{"topic": topic, "queueId": strconv.Itoa(int(q))}
			resp := c.Call(codec.NewRequest(codec.RequestGetMaxOffset, ext, nil))
			require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
			n, err := strconv.Atoi(resp.ExtFields["offset"])
			require.NoError(t, err)
			out[topic+"/"+strconv.Itoa(int(q))] = n
		}
	}
	return out
}

// relCreateTopic creates a topic with UPDATE_AND_CREATE_TOPIC (written to topics.json
// before the answer).
func relCreateTopic(t testing.TB, c *remotingtest.Conn, topic string, queues int) {
	t.Helper()
	resp := c.Call(codec.NewRequest(codec.RequestUpdateAndCreateTopic, createTopicExt(topic, queues), nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
}

// relBroker is an in-process broker whose file store the test opened itself (so it can
// pass a file system seam and reach the *store.Store).
type relBroker struct {
	b     *Broker
	st    *store.Store
	cfg   Config
	addr  string
	close func() error // shuts the broker down once; later calls return the first result
}

// startRelBroker starts a broker without a name server on a file store over fsys (nil:
// the OS). mutate adjusts the configuration (testBrokerConfig, a free port).
func startRelBroker(t testing.TB, mutate func(*Config), fsys store.FS) *relBroker {
	t.Helper()
	return startRelBrokerDeps(t, mutate, fsys, Deps{})
}

// startRelBrokerDeps is startRelBroker with the broker's Deps (Logger nil: testLogger; Store is
// the file store).
func startRelBrokerDeps(t testing.TB, mutate func(*Config), fsys store.FS, deps Deps) *relBroker {
	t.Helper()
	cfg := testBrokerConfig(t)
	cfg.NamesrvEmbedded = false
	cfg.NamesrvAddr = ""
	port, err := pickListenPort("127.0.0.1")
	require.NoError(t, err)
	cfg.ListenPort = port
	cfg.HAListenPort = pickPort(t, port) // listenPort + 1 may be another test's picked port
	cfg.FastListenPort = 0               // and so may listenPort − 2
	if mutate != nil {
		mutate(&cfg)
	}
	rb, err := openRelBrokerDeps(t, cfg, fsys, deps)
	require.NoError(t, err)
	return rb
}

// openRelBroker is startRelBroker for a complete configuration; it returns New's or
// Start's error instead of failing.
func openRelBroker(t testing.TB, cfg Config, fsys store.FS) (*relBroker, error) {
	t.Helper()
	return openRelBrokerDeps(t, cfg, fsys, Deps{})
}

func openRelBrokerDeps(t testing.TB, cfg Config, fsys store.FS, deps Deps) (*relBroker, error) {
	t.Helper()
	sc, err := storeConfig(&cfg, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.ListenPort)))
	if err != nil {
		return nil, err
	}
	st, err := store.Open(sc, store.Deps{Logger: testLogger(t), FS: fsys})
	if err != nil {
		return nil, err
	}
	if deps.Logger == nil {
		deps.Logger = testLogger(t)
	}
	deps.Store = st
	b, err := New(cfg, deps)
	if err != nil {
		_ = st.Shutdown()
		return nil, err
	}
	if err := b.Start(); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = b.Shutdown(ctx)
		return nil, err
	}
	rb := &relBroker{b: b, st: st, cfg: cfg, addr: b.Addr()}
	rb.close = func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return b.Shutdown(ctx)
	}
	t.Cleanup(func() { _ = rb.close() })
	return rb, nil
}

// relLiveHeap is the live heap after a full collection.
func relLiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// relPercentile is the p-th percentile (0..100) of ds (sorted in place).
func relPercentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(float64(len(ds)-1) * p / 100)
	return ds[i]
}
