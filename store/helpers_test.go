package store

import (
	"fmt"
	"hash/crc32"
	"io/fs"
	"log/slog"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// testFileSize is the CommitLog file size in tests: 64 KiB, so a few hundred messages roll files.
const testFileSize = 64 << 10

func testConfig(dir string) Config {
	c := DefaultConfig(dir)
	c.MappedFileSizeCommitLog = testFileSize
	c.MappedFileSizeConsumeQueue = 64 * ConsumeQueueEntryBytes
	c.MaxMessageSize = 16 << 10
	c.MaxHashSlotNum = 128
	c.MaxIndexNum = 512
	c.TransientStorePoolSize = 4
	c.TransientStorePoolPinned = false
	c.TransientStorePoolDir = testPoolDir
	// Background services must not make progress a test did not ask for; tests flush explicitly.
	c.FlushIntervalCommitLog = time.Hour
	c.SyncFlushIdleInterval = time.Hour
	c.FlushCommitLogThoroughInterval = time.Hour
	c.FlushIntervalConsumeQueue = time.Hour
	c.FlushConsumeQueueThoroughInterval = time.Hour
	c.CommitIntervalCommitLog = time.Millisecond
	c.CommitCommitLogLeastPages = 0
	c.CleanResourceInterval = time.Hour
	return c
}

// appendModes are the four append and flush modes a feature must work in: the mapped file or the
// transient pool, each under ASYNC_FLUSH and SYNC_FLUSH.
var appendModes = []struct {
	name      string
	transient bool
	flush     FlushDiskType
}{
	{"mmap/async", false, AsyncFlush},
	{"mmap/sync", false, SyncFlush},
	{"pool/async", true, AsyncFlush},
	{"pool/sync", true, SyncFlush},
}

// lazyCommitConfig is testConfig in an append mode whose committer moves small records only when a file
// is full (or the test asks): acknowledged records stay in the transient pool buffer.
func lazyCommitConfig(dir string, transient bool, flush FlushDiskType) Config {
	c := testConfig(dir)
	c.TransientStorePoolEnable = transient
	c.FlushDiskType = flush
	c.CommitIntervalCommitLog = time.Hour
	c.CommitCommitLogThoroughInterval = time.Hour
	c.CommitCommitLogLeastPages = 1 << 20
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// openStarted opens and starts a store and shuts it down at the end of the test (if still running).
func openStarted(t testing.TB, cfg Config, deps Deps) *Store {
	t.Helper()
	if deps.Logger == nil {
		deps.Logger = testLogger(t)
	}
	s, err := Open(cfg, deps)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		if s.state.Load() != stateShutdown {
			_ = s.Shutdown()
		}
	})
	return s
}

// reopen opens a store over an existing directory (not started).
func reopen(t testing.TB, cfg Config, deps Deps) *Store {
	t.Helper()
	if deps.Logger == nil {
		deps.Logger = testLogger(t)
	}
	s, err := Open(cfg, deps)
	require.NoError(t, err)
	require.NoError(t, s.Start())
	t.Cleanup(func() {
		if s.state.Load() != stateShutdown {
			_ = s.Shutdown()
		}
	})
	return s
}

var testBornHost = netip.MustParseAddrPort("10.0.0.1:5000")

func testMessage(topic string, qid int32, body []byte, props ...string) *codec.Message {
	var p []byte
	for i := 0; i+1 < len(props); i += 2 {
		p = codec.AppendProperty(p, props[i], props[i+1])
	}
	return &codec.Message{Topic: topic, QueueID: qid, Body: body, Properties: p,
		BornTimestamp: 1_700_000_000_000, BornHost: testBornHost}
}

func mustPut(t testing.TB, s MessageStore, m *codec.Message) PutResult {
	t.Helper()
	res, err := s.PutMessage(m)
	require.NoError(t, err)
	require.Equal(t, PutOK, res.Status)
	return res
}

func waitDispatched(t testing.TB, s *Store) {
	t.Helper()
	testutil.Eventually(t, "dispatch", func() bool {
		end := s.MaxPhyOffset()
		return s.commitLog.readableEnd() == end && s.dispatcher.reputFrom.Load() >= end
	})
}

// getAll pulls every message of a queue from offset 0 and returns decoded records.
func getAll(t testing.TB, s MessageStore, topic string, qid int32) []codec.Record {
	t.Helper()
	var out []codec.Record
	off := s.GetMinOffsetInQueue(topic, qid)
	for {
		r, err := s.GetMessage("g", topic, qid, off, 32, 0, nil)
		require.NoError(t, err)
		if r.Status != Found {
			r.Release()
			return out
		}
		for _, b := range r.Buffers {
			rec, err := codec.DecodeRecord(append([]byte(nil), b...), true)
			require.NoError(t, err)
			out = append(out, rec)
		}
		off = r.NextBeginOffset
		r.Release()
	}
}

// copyDir copies a store directory (for crash-variant tests on a stopped store).
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	}))
}

func commitLogFiles(t testing.TB, root string) []string {
	t.Helper()
	es, err := os.ReadDir(filepath.Join(root, "commitlog"))
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func body(n int, tag string) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = tag[i%len(tag)]
	}
	return b
}

func bodyf(format string, a ...any) []byte { return []byte(fmt.Sprintf(format, a...)) }

func crc32IEEE(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

// requireKeyedRecords checks that each of the first n records put to topic with body m%04d, UNIQ_KEY u<i>
// and KEYS k<i> is found by each key, once, whole.
func requireKeyedRecords(t testing.TB, s MessageStore, topic string, n int) {
	t.Helper()
	for i := range n {
		for _, key := range []string{fmt.Sprintf("u%d", i), fmt.Sprintf("k%d", i)} {
			q, err := s.QueryMessage(topic, key, 8, 0, math.MaxInt64)
			require.NoError(t, err)
			require.Len(t, q.Buffers, 1, "key %s", key)
			rec, err := codec.DecodeRecord(q.Buffers[0], false)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("m%04d", i), string(rec.Body))
			q.Release()
		}
	}
}
