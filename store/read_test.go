package store

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

type tagFilter struct{ code int64 }

func (f tagFilter) IsMatchedByConsumeQueue(tagsCode int64) bool { return tagsCode == f.code }

func TestGetMessageFileStatuses(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	clock := testutil.NewManualClockAt(time.Now())
	s := openStarted(t, cfg, Deps{Clock: clock.Now})
	// NO_MESSAGE_IN_QUEUE: a queue that exists with no entry.
	s.queues.findOrCreate("E", 0)
	r, err := s.GetMessage("g", "E", 0, 3, 32, 0, nil)
	require.NoError(t, err)
	require.Equal(t, NoMessageInQueue, r.Status)
	require.Equal(t, int64(0), r.NextBeginOffset)
	r.Release()

	for i := 0; i < 400; i++ {
		mustPut(t, s, testMessage("T", 0, body(400, "r")))
	}
	waitDispatched(t, s)
	_, err = s.flushCommitLog(0)
	require.NoError(t, err)
	n := len(s.commitLog.mfq.snapshot())
	require.Greater(t, n, 2)

	// MESSAGE_WAS_REMOVING: the CommitLog files went, the queue's minimum was not corrected yet (retention
	// moves the minimum first; a pull that read it before can still meet the files gone).
	require.NoError(t, s.commitLog.mfq.removeFirst(n-1))
	r, err = s.GetMessage("g", "T", 0, 0, 32, 0, nil)
	require.NoError(t, err)
	require.Equal(t, MessageWasRemoving, r.Status)
	require.Greater(t, r.NextBeginOffset, int64(0))
	r.Release()

	// OFFSET_TOO_SMALL once the ConsumeQueues are cleaned.
	require.NoError(t, s.cleanLogics())
	minOff := s.GetMinOffsetInQueue("T", 0)
	require.Greater(t, minOff, int64(0))
	phys := s.GetCommitLogOffsetInQueue("T", 0, minOff)
	require.Equal(t, s.MinPhyOffset(), phys, "the first live entry is the first record of the first file")
	r, err = s.GetMessage("g", "T", 0, 0, 32, 0, nil)
	require.NoError(t, err)
	require.Equal(t, OffsetTooSmall, r.Status)
	require.Equal(t, minOff, r.NextBeginOffset)
	r.Release()
	r, err = s.GetMessage("g", "T", 0, 400, 32, 0, nil)
	require.NoError(t, err)
	require.Equal(t, OffsetOverflowOne, r.Status)
	r.Release()
	r, err = s.GetMessage("g", "T", 0, 401, 32, 0, nil)
	require.NoError(t, err)
	require.Equal(t, OffsetOverflowBadly, r.Status)
	require.Equal(t, int64(400), r.NextBeginOffset, "min > 0: corrected to max")
	r.Release()

	// OFFSET_FOUND_NULL: the ConsumeQueue file holding the offset is gone.
	for i := 0; i < 130; i++ {
		mustPut(t, s, testMessage("F", 0, []byte("f")))
	}
	waitDispatched(t, s)
	cq := s.queues.find("F", 0)
	perFile := cfg.MappedFileSizeConsumeQueue / ConsumeQueueEntryBytes
	require.NoError(t, cq.mfq.removeFirst(1))
	r, err = s.GetMessage("g", "F", 0, 3, 32, 0, nil)
	require.NoError(t, err)
	require.Equal(t, OffsetFoundNull, r.Status)
	require.Equal(t, perFile, r.NextBeginOffset, "start of the next ConsumeQueue file")
	r.Release()
}

func TestPullBatchLimits(t *testing.T) {
	s := openStarted(t, testConfig(t.TempDir()), Deps{})
	for i := 0; i < 100; i++ {
		mustPut(t, s, testMessage("T", 0, body(10_000, "L")))
	}
	waitDispatched(t, s)
	r, err := s.GetMessage("g", "T", 0, 0, 64, 0, nil)
	require.NoError(t, err)
	// 256 KiB in memory: 26 records of 10,098 bytes fit.
	require.Equal(t, 256<<10/10_098, r.MessageCount)
	require.LessOrEqual(t, r.BufferTotalSize, 256<<10)
	require.Equal(t, int64(r.MessageCount), r.NextBeginOffset)
	r.Release()
	for i := 0; i < 40; i++ {
		mustPut(t, s, testMessage("S", 0, []byte("s")))
	}
	waitDispatched(t, s)
	r, err = s.GetMessage("g", "S", 0, 0, 64, 0, nil)
	require.NoError(t, err)
	require.Equal(t, 32, r.MessageCount, "maxTransferCountOnMessageInMemory")
	r.Release()
}

func TestLookupsByOffsetTimeAndKey(t *testing.T) {
	dir := t.TempDir()
	clock := testutil.NewManualClockAt(time.UnixMilli(1_000_000))
	s := openStarted(t, testConfig(dir), Deps{Clock: clock.Now})
	var offs []int64
	for i := 0; i < 30; i++ {
		clock.Advance(time.Second)
		res := mustPut(t, s, testMessage("T", 0, bodyf("v%d", i), codec.PropertyKeys, fmt.Sprintf("key%d shared", i)))
		offs = append(offs, res.WroteOffset)
	}
	waitDispatched(t, s)
	rec, release, err := s.LookMessageByOffset(offs[7])
	require.NoError(t, err)
	d, err := codec.DecodeRecord(rec, true)
	require.NoError(t, err)
	require.Equal(t, "v7", string(d.Body))
	release()
	_, _, err = s.LookMessageByOffset(offs[7] + 1)
	require.ErrorIs(t, err, ErrNotFound)
	_, _, err = s.LookMessageByOffset(s.MaxPhyOffset())
	require.ErrorIs(t, err, ErrNotFound)

	// Store times are 1,001,000 + i×1000.
	require.Equal(t, int64(5), s.GetOffsetInQueueByTime("T", 0, 1_006_000, false))
	require.Equal(t, int64(5), s.GetOffsetInQueueByTime("T", 0, 1_006_000, true))
	require.Equal(t, int64(6), s.GetOffsetInQueueByTime("T", 0, 1_006_500, false))
	require.Equal(t, int64(5), s.GetOffsetInQueueByTime("T", 0, 1_006_500, true))
	require.Equal(t, int64(0), s.GetOffsetInQueueByTime("T", 0, 0, false))
	require.Equal(t, int64(30), s.GetOffsetInQueueByTime("T", 0, 9_999_999, false))
	require.Equal(t, int64(29), s.GetOffsetInQueueByTime("T", 0, 9_999_999, true))
	ts, err := s.GetEarliestMessageTime("T", 0)
	require.NoError(t, err)
	require.Equal(t, int64(1_001_000), ts)
	require.Equal(t, offs[3], s.GetCommitLogOffsetInQueue("T", 0, 3))

	q, err := s.QueryMessage("T", "key12", 10, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, q.Buffers, 1)
	q.Release()
	q, err = s.QueryMessage("T", "shared", 5, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, q.Buffers, 5, "maxNum")
	d, err = codec.DecodeRecord(q.Buffers[0], false)
	require.NoError(t, err)
	require.Equal(t, "v29", string(d.Body), "newest first")
	q.Release()
	// Time range: keys of records stored in [1,010,000, 1,012,000] only (index time has second precision).
	q, err = s.QueryMessage("T", "shared", 64, 1_010_000, 1_012_000)
	require.NoError(t, err)
	require.Len(t, q.Buffers, 3)
	q.Release()
	q, err = s.QueryMessage("Other", "shared", 64, 0, 1<<62)
	require.NoError(t, err)
	require.Empty(t, q.Buffers)
	q.Release()
}

// TestIndexHashCollisions: one slot for every key, and keys whose Java hash codes are equal.
func TestIndexHashCollisions(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	cfg.MaxHashSlotNum = 1
	cfg.MaxIndexNum = 40 // rolls to new files
	s := openStarted(t, cfg, Deps{})
	require.Equal(t, javaHash("T#Aa"), javaHash("T#BB"), "a real hashCode collision")
	for i := 0; i < 60; i++ {
		key := "Aa"
		if i%2 == 1 {
			key = "BB"
		}
		mustPut(t, s, testMessage("T", 0, bodyf("%s-%d", key, i), codec.PropertyKeys, key))
	}
	waitDispatched(t, s)
	ents, err := os.ReadDir(cfg.indexDir())
	require.NoError(t, err)
	require.Greater(t, len(ents), 1, "the index rolled")
	for _, key := range []string{"Aa", "BB"} {
		q, err := s.QueryMessage("T", key, 64, 0, 1<<62)
		require.NoError(t, err)
		require.Len(t, q.Buffers, 30, key)
		for _, b := range q.Buffers {
			d, err := codec.DecodeRecord(b, false)
			require.NoError(t, err)
			require.Equal(t, key, string(d.Body[:2]))
		}
		q.Release()
	}
	require.NoError(t, s.Shutdown())
	// Index files survive a restart intact.
	r := reopen(t, cfg, Deps{})
	q, err := r.QueryMessage("T", "BB", 64, 0, 1<<62)
	require.NoError(t, err)
	require.Len(t, q.Buffers, 30)
	q.Release()
}

// TestLookMessageByOffsetSeesUncommittedRecords: a record acknowledged but still in its file's transient
// pool buffer (the committer has not moved it yet) is found by physical offset, in both flush modes and in
// the mapped mode, with its exact body; a reader that holds such a record keeps the buffer out of the pool
// until it releases, even when the file is committed whole in between. Issue 14: END_TRANSACTION of a half
// just written was answered "Find prepared transaction message failed" with the pool on.
func TestLookMessageByOffsetSeesUncommittedRecords(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			// The committer moves nothing on its own: only a whole file (or the test) makes it commit.
			s := openStarted(t, lazyCommitConfig(t.TempDir(), mode.transient, mode.flush), Deps{})

			body := bodyf("half %s", mode.name)
			res := mustPut(t, s, testMessage("RMQ_SYS_TRANS_HALF_TOPIC", 0, body)) // not waited for: the put is acknowledged
			if mode.transient && mode.flush == AsyncFlush {
				require.Less(t, s.commitLog.mfq.committedWhere.Load(), res.WroteOffset+int64(res.WroteBytes),
					"the record is still in the pool buffer (the test's premise)")
			}
			rec, release, err := s.LookMessageByOffset(res.WroteOffset)
			require.NoError(t, err)
			d, err := codec.DecodeRecord(rec, true)
			require.NoError(t, err)
			require.Equal(t, string(body), string(d.Body))
			require.Equal(t, res.WroteOffset, d.PhysicalOffset)
			_, _, err = s.LookMessageByOffset(res.WroteOffset + 1)
			require.ErrorIs(t, err, ErrNotFound, "an offset inside the record is no record")

			if !mode.transient {
				release()
				return
			}
			// Fill the file and commit it whole while the reader still holds the record: the buffer
			// must not go back to the pool (where the next file would overwrite it) under the reader.
			pool := s.commitLog.pool
			first := s.commitLog.mfq.first()
			for s.commitLog.mfq.last() == first {
				mustPut(t, s, testMessage("Fill", 0, make([]byte, 4096)))
			}
			_, err = s.commitCommitLog(0)
			require.NoError(t, err)
			require.Equal(t, first.size, first.committed.Load(), "the first file is committed whole")
			require.Positive(t, first.bufferRefs.Load(), "the reader keeps the buffer out of the pool")
			d, err = codec.DecodeRecord(rec, true)
			require.NoError(t, err, "the held record is intact after the commit")
			require.Equal(t, string(body), string(d.Body))
			release()
			// The dispatcher may hold the buffer a moment longer (it reads uncommitted records from it).
			testutil.Eventually(t, "the last reader returns the buffer", func() bool {
				return first.bufferRefs.Load() == 0 && pool.Available() > 0
			})

			rec, release, err = s.LookMessageByOffset(res.WroteOffset)
			require.NoError(t, err, "read from the file now")
			d, err = codec.DecodeRecord(rec, true)
			require.NoError(t, err)
			require.Equal(t, string(body), string(d.Body))
			release()
		})
	}
}
