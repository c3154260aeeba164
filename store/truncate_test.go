package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// TestTruncateCommitLogOnOpen: a replica that must drop a divergent tail reopens its store with
// TruncateCommitLog: the CommitLog ends at the cut, ConsumeQueues and the index hold nothing past it,
// new records continue from it with the queue offsets that follow the kept ones, and the cut survives
// a crash right after (the checkpoint names no offset past it). In every append mode, after a clean
// shutdown and after a crash.
func TestTruncateCommitLogOnOpen(t *testing.T) {
	for _, mode := range appendModes {
		for _, crashed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/crashed=%v", mode.name, crashed), func(t *testing.T) {
				dir := t.TempDir()
				cfg := testConfig(dir)
				cfg.TransientStorePoolEnable, cfg.FlushDiskType = mode.transient, mode.flush
				s := openStarted(t, cfg, Deps{})
				var puts []PutResult
				for i := range 120 { // ~2 files of 64 KiB
					key := fmt.Sprintf("key-%03d", i)
					puts = append(puts, mustPut(t, s, testMessage("TopicT", int32(i%3), body(900, key), codec.PropertyKeys, key)))
				}
				waitDispatched(t, s)
				const keep = 70
				cut := puts[keep].WroteOffset
				require.Greater(t, cut, int64(testFileSize), "the cut lies in the second file")
				if crashed {
					require.NoError(t, s.Flush(0))
					crashCopy := t.TempDir()
					copyDir(t, dir, crashCopy) // the files as a kill -9 leaves them (abort file present)
					require.NoError(t, s.Shutdown())
					cfg.StorePathRootDir = crashCopy
				} else {
					require.NoError(t, s.Shutdown())
				}

				cfg.TruncateCommitLog, cfg.TruncateCommitLogTo = true, cut
				s = reopen(t, cfg, Deps{})
				require.Equal(t, cut, s.MaxPhyOffset())
				for q := range int32(3) {
					got := getAll(t, s, "TopicT", q)
					var want []string
					for i := q; i < keep; i += 3 {
						want = append(want, fmt.Sprintf("key-%03d", i))
					}
					require.Len(t, got, len(want), "queue %d", q)
					for i, r := range got {
						require.Equal(t, body(900, want[i]), r.Body, "queue %d offset %d", q, i)
						require.Equal(t, int64(i), r.QueueOffset)
					}
					require.Equal(t, int64(len(want)), s.GetMaxOffsetInQueue("TopicT", q))
				}
				gone, err := s.QueryMessage("TopicT", fmt.Sprintf("key-%03d", keep+5), 10, 0, 1<<62)
				require.NoError(t, err)
				require.Empty(t, gone.Buffers, "no index entry past the cut")
				gone.Release()
				kept, err := s.QueryMessage("TopicT", fmt.Sprintf("key-%03d", keep-1), 10, 0, 1<<62)
				require.NoError(t, err)
				require.Len(t, kept.Buffers, 1)
				kept.Release()

				// New records follow the cut, with the queue offsets after the kept ones.
				r := mustPut(t, s, testMessage("TopicT", int32(keep%3), []byte("after the cut")))
				require.Equal(t, cut, r.WroteOffset)
				require.Equal(t, int64((keep-keep%3+2)/3), r.QueueOffset, "the kept records of its queue: i < keep with i%3 == keep%3")
				waitDispatched(t, s)
				end := s.MaxPhyOffset()

				// A crash now: recovery keeps exactly that (the checkpoint written at the cut).
				require.NoError(t, s.Flush(0))
				again := t.TempDir()
				copyDir(t, cfg.StorePathRootDir, again)
				require.NoError(t, s.Shutdown())
				cfg.StorePathRootDir, cfg.TruncateCommitLog = again, false
				s = reopen(t, cfg, Deps{})
				require.Equal(t, end, s.MaxPhyOffset())
				last := getAll(t, s, "TopicT", int32(keep%3))
				require.Equal(t, "after the cut", string(last[len(last)-1].Body))
			})
		}
	}
}

// A cut that is not where a record starts, or below the first file kept, fails Open and changes nothing.
func TestTruncateCommitLogRefusesAMidRecordCut(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStarted(t, cfg, Deps{})
	r1 := mustPut(t, s, testMessage("TopicT", 0, body(500, "a")))
	mustPut(t, s, testMessage("TopicT", 0, body(500, "b")))
	end := s.MaxPhyOffset()
	require.NoError(t, s.Shutdown())

	cfg.TruncateCommitLog, cfg.TruncateCommitLogTo = true, r1.WroteOffset+int64(r1.WroteBytes)+3
	_, err := Open(cfg, Deps{Logger: testLogger(t)})
	require.ErrorContains(t, err, "not where a record starts")

	cfg.TruncateCommitLog = false
	s = reopen(t, cfg, Deps{})
	require.Equal(t, end, s.MaxPhyOffset(), "nothing was cut")
}

// A slave that stopped with the first bytes of a record (its master died mid-frame) opened as the new
// master with TrimPartialRecord: the cut-short record goes, and the first put starts where the last
// whole record ends, its queue offset following the whole records'.
func TestTrimPartialRecordWhenAReplicaBecomesMaster(t *testing.T) {
	master, end := masterWithALastRecord(t, "whole", bodyf("cut-%d", 3))
	scfg := testConfig(t.TempDir())
	scfg.Slave = true
	slave := openStarted(t, scfg, Deps{})
	torn := readLog(t, master, 0, end+10)
	require.NoError(t, slave.AppendReplica(0, len(torn), bytes.NewReader(torn)))
	testutil.Eventually(t, "whole records dispatched", func() bool { return slave.GetMaxOffsetInQueue("TopicP", 0) == 3 })
	require.NoError(t, slave.Shutdown())

	scfg.Slave, scfg.TrimPartialRecord = false, true
	promoted := reopen(t, scfg, Deps{})
	require.Equal(t, end, promoted.MaxPhyOffset(), "the partial record is gone")
	r := mustPut(t, promoted, testMessage("TopicP", 0, []byte("first of the new master")))
	require.Equal(t, end, r.WroteOffset)
	require.Equal(t, int64(3), r.QueueOffset)
	waitDispatched(t, promoted)
	got := getAll(t, promoted, "TopicP", 0)
	require.Len(t, got, 4)
	require.Equal(t, "whole-2", string(got[2].Body))
	require.Equal(t, "first of the new master", string(got[3].Body))
}
