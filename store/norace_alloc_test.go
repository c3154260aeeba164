//go:build !race

// The race detector makes sync.Pool drop items on purpose, so allocation counts are only meaningful
// without it (STYLE.md §6: slow or meaningless under -race gets !race).

package store

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

func allocTestConfig(dir string) Config {
	c := testConfig(dir)
	c.MappedFileSizeCommitLog = 64 << 20 // no roll during the measured runs
	c.MappedFileSizeConsumeQueue = 300_000 * ConsumeQueueEntryBytes
	return c
}

// allocTestModes: appends into the mapping, and into the transient pool's buffers (files on tmpfs where
// there is one) with nothing committed, so pulls read from the buffer.
var allocTestModes = []struct {
	name   string
	config func(dir string) Config
}{
	{"mmap", allocTestConfig},
	{"pool", func(dir string) Config {
		c := allocTestConfig(dir)
		c.TransientStorePoolEnable, c.TransientStorePoolSize = true, 2
		c.CommitIntervalCommitLog, c.CommitCommitLogThoroughInterval = time.Hour, time.Hour
		c.CommitCommitLogLeastPages = 1 << 20
		return c
	}},
}

// TestPutPathDoesNotAllocate counts every allocation of the process while putting 1 KiB messages:
// the put itself and the dispatcher's ConsumeQueue and IndexFile work for them.
func TestPutPathDoesNotAllocate(t *testing.T) {
	for _, mode := range allocTestModes {
		t.Run(mode.name, func(t *testing.T) { testPutPathDoesNotAllocate(t, mode.config(t.TempDir())) })
	}
}

func testPutPathDoesNotAllocate(t *testing.T, cfg Config) {
	s := openStarted(t, cfg, Deps{})
	m := testMessage("T", 0, body(1024, "a"), codec.PropertyTags, "TagA", codec.PropertyKeys, "k")
	for i := 0; i < 2000; i++ {
		mustPut(t, s, m)
	}
	waitDispatched(t, s)
	allocs := testing.AllocsPerRun(2000, func() {
		if _, err := s.PutMessage(m); err != nil {
			t.Fatal(err)
		}
	})
	waitDispatched(t, s)
	require.Zero(t, allocs)

	b := &BatchPut{PhysicalOffsets: make([]int64, 0, 4)}
	for i := 0; i < 4; i++ {
		b.Messages = append(b.Messages, *m)
	}
	allocs = testing.AllocsPerRun(500, func() {
		if _, err := s.PutMessages(b); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

// TestPullPathDoesNotAllocate: ConsumeQueue lookup and the gather of 32 record slices.
func TestPullPathDoesNotAllocate(t *testing.T) {
	for _, mode := range allocTestModes {
		t.Run(mode.name, func(t *testing.T) { testPullPathDoesNotAllocate(t, mode.config(t.TempDir())) })
	}
}

func testPullPathDoesNotAllocate(t *testing.T, cfg Config) {
	s := openStarted(t, cfg, Deps{})
	m := testMessage("T", 0, body(1024, "a"), codec.PropertyTags, "TagA")
	for i := 0; i < 4096; i++ {
		mustPut(t, s, m)
	}
	waitDispatched(t, s)
	if cfg.TransientStorePoolEnable {
		require.Zero(t, s.commitLog.mfq.committedWhere.Load(), "the pulls read the pool buffer")
	}
	var filter MessageFilter = tagFilter{codec.TagsHashCode([]byte("TagA"))}
	off := int64(0)
	allocs := testing.AllocsPerRun(1000, func() {
		r, err := s.GetMessage("g", "T", 0, off, 32, 0, filter)
		if err != nil || r.MessageCount != 32 {
			t.Fatalf("%v %v", err, r.Status)
		}
		off = (off + 32) % 4064
		r.Release()
	})
	require.Zero(t, allocs)
}
