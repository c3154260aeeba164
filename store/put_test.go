package store

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// storeVariant is one configuration every put test runs against (STYLE.md §6).
type storeVariant struct {
	name      string
	spin      bool
	sync      bool
	transient bool
}

func storeVariants() []storeVariant {
	var out []storeVariant
	for _, spin := range []bool{false, true} {
		for _, sync := range []bool{false, true} {
			for _, transient := range []bool{false, true} {
				name := fmt.Sprintf("lock=%s/flush=%s/pool=%v",
					map[bool]string{false: "mutex", true: "spin"}[spin],
					map[bool]string{false: "async", true: "sync"}[sync], transient)
				out = append(out, storeVariant{name, spin, sync, transient})
			}
		}
	}
	return out
}

func (v storeVariant) config(dir string) Config {
	c := testConfig(dir)
	c.UseReentrantLockWhenPutMessage = !v.spin
	if v.sync {
		c.FlushDiskType = SyncFlush
	}
	c.TransientStorePoolEnable = v.transient
	return c
}

// TestConcurrentPutsEveryOffsetAccounted: many goroutines put singles and batches into a few queues
// across file rolls; every message gets exactly one queue offset and one physical offset, every record
// reads back where its result says, and a restart restores every max offset.
func TestConcurrentPutsEveryOffsetAccounted(t *testing.T) {
	for _, v := range storeVariants() {
		t.Run(v.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := v.config(dir)
			s := openStarted(t, cfg, Deps{})
			const writers, perWriter, queues = 6, 120, 3
			type placed struct {
				phys, qoff int64
				queue      int32
			}
			var mu sync.Mutex
			got := map[string]placed{}
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < perWriter; {
						q := int32((w + i) % queues)
						var ids []string
						var phys []int64
						var first int64
						var end int64
						if i%10 == 9 && i+3 <= perWriter { // a batch of 3
							b := &BatchPut{}
							for j := 0; j < 3; j++ {
								id := fmt.Sprintf("w%d-%d", w, i+j)
								ids = append(ids, id)
								b.Messages = append(b.Messages, *testMessage("T", q, append([]byte(id+"|"), body(150, "p")...)))
							}
							res, err := s.PutMessages(b)
							if err != nil {
								t.Error(err)
								return
							}
							phys, first, end = b.PhysicalOffsets, res.QueueOffset, res.EndOffset()
							i += 3
						} else {
							id := fmt.Sprintf("w%d-%d", w, i)
							ids = append(ids, id)
							res, err := s.PutMessage(testMessage("T", q, append([]byte(id+"|"), body(150, "p")...)))
							if err != nil {
								t.Error(err)
								return
							}
							phys, first, end = []int64{res.WroteOffset}, res.QueueOffset, res.EndOffset()
							i++
						}
						done := make(chan error, 1)
						s.WaitDurable(end, func(err error) { done <- err })
						if err := <-done; err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						for j, id := range ids {
							got[id] = placed{phys[j], first + int64(j), q}
						}
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			require.Len(t, got, writers*perWriter)
			if v.sync {
				require.GreaterOrEqual(t, s.FlushedPhyOffset(), s.MaxPhyOffset()-0, "every acknowledged byte is durable")
			}
			waitDispatched(t, s)
			seenPhys := map[int64]bool{}
			perQueue := map[int32]map[int64]string{}
			for id, p := range got {
				require.False(t, seenPhys[p.phys], "physical offset %d given twice", p.phys)
				seenPhys[p.phys] = true
				if perQueue[p.queue] == nil {
					perQueue[p.queue] = map[int64]string{}
				}
				_, dup := perQueue[p.queue][p.qoff]
				require.False(t, dup, "queue offset %d/%d given twice", p.queue, p.qoff)
				perQueue[p.queue][p.qoff] = id
				rec, release, err := s.LookMessageByOffset(p.phys)
				require.NoError(t, err)
				d, err := codec.DecodeRecord(rec, true)
				require.NoError(t, err)
				require.Equal(t, id, string(d.Body[:len(id)]))
				require.Equal(t, p.qoff, d.QueueOffset)
				require.Equal(t, p.phys, d.PhysicalOffset)
				release()
			}
			for q := int32(0); q < queues; q++ {
				recs := getAll(t, s, "T", q)
				require.Len(t, recs, len(perQueue[q]))
				for i, r := range recs {
					id := perQueue[q][int64(i)]
					require.Equal(t, id, string(r.Body[:len(id)]), "queue %d offset %d", q, i)
				}
			}
			require.Greater(t, len(commitLogFiles(t, dir)), 2)
			maxPhy := s.MaxPhyOffset()
			require.NoError(t, s.Shutdown())
			r := reopen(t, cfg, Deps{})
			require.Equal(t, maxPhy, r.MaxPhyOffset())
			for q := int32(0); q < queues; q++ {
				require.Equal(t, int64(len(perQueue[q])), r.GetMaxOffsetInQueue("T", q))
			}
		})
	}
}

// TestFileRollAtExactBoundaries: a record that leaves exactly 8 bytes fits (the next one rolls with an
// 8-byte blank); a record one byte larger rolls at once with a blank filling the rest.
func TestFileRollAtExactBoundaries(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStarted(t, cfg, Deps{})
	const recSize = 1024 // 91 + body + topic "R" (1 byte)
	put := func(size int) PutResult {
		return mustPut(t, s, testMessage("R", 0, body(size-92, "e")))
	}
	for i := 0; i < 63; i++ {
		require.Equal(t, int64(i*recSize), put(recSize).WroteOffset)
	}
	res := put(recSize - 8) // 1016 + 8 == 1024 left: fits exactly
	require.Equal(t, int64(63*recSize), res.WroteOffset)
	res = put(100)
	require.Equal(t, int64(testFileSize), res.WroteOffset, "rolled")
	for i := 0; i < 62; i++ {
		put(recSize)
	}
	// 100 + 62×1024 used in file 1: 1948 bytes left; a 1941-byte record + 8 is one byte too many.
	res = put(1941)
	require.Equal(t, int64(2*testFileSize), res.WroteOffset)
	res = put(428)
	require.Equal(t, int64(2*testFileSize+1941), res.WroteOffset)
	waitDispatched(t, s)
	require.NoError(t, s.Shutdown())

	be := binary.BigEndian
	f0, err := os.ReadFile(filepath.Join(dir, "commitlog", offsetFileName(0)))
	require.NoError(t, err)
	require.Equal(t, uint32(8), be.Uint32(f0[testFileSize-8:]), "8-byte blank")
	require.Equal(t, uint32(0xCBD43194), be.Uint32(f0[testFileSize-4:]))
	f1, err := os.ReadFile(filepath.Join(dir, "commitlog", offsetFileName(testFileSize)))
	require.NoError(t, err)
	blankAt := 100 + 62*recSize
	require.Equal(t, uint32(testFileSize-blankAt), be.Uint32(f1[blankAt:]))
	require.Equal(t, uint32(0xCBD43194), be.Uint32(f1[blankAt+4:]))
	require.Equal(t, make([]byte, testFileSize-blankAt-8), f1[blankAt+8:], "the rest of the file stays zero")

	check := func(s *Store) {
		recs := getAll(t, s, "R", 0)
		require.Len(t, recs, 63+1+1+62+1+1)
		for i, r := range recs {
			require.Equal(t, int64(i), r.QueueOffset)
		}
	}
	// Normal recovery, then abnormal recovery without a checkpoint: the scan crosses both blanks.
	r := reopen(t, cfg, Deps{})
	check(r)
	require.NoError(t, r.Shutdown())
	require.NoError(t, os.Remove(filepath.Join(dir, "checkpoint")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
	r = reopen(t, cfg, Deps{})
	require.False(t, r.LastExitOK())
	check(r)
	require.Equal(t, int64(2*testFileSize+1941+428), r.MaxPhyOffset())
	// A clean shutdown without a checkpoint (a store Apache RocketMQ wrote): scan the last files.
	require.NoError(t, r.Shutdown())
	require.NoError(t, os.Remove(filepath.Join(dir, "checkpoint")))
	r = reopen(t, cfg, Deps{})
	require.True(t, r.LastExitOK())
	check(r)
	require.Equal(t, int64(2*testFileSize+1941+428), r.MaxPhyOffset())
}

func TestBatchStaysInOneFile(t *testing.T) {
	s := openStarted(t, testConfig(t.TempDir()), Deps{})
	for s.MaxPhyOffset() < testFileSize-3000 {
		mustPut(t, s, testMessage("B", 0, body(900, "x")))
	}
	before := s.GetMaxOffsetInQueue("B", 0)
	waitDispatched(t, s)
	before = s.GetMaxOffsetInQueue("B", 0)
	b := &BatchPut{PhysicalOffsets: make([]int64, 0, 8)}
	for i := 0; i < 5; i++ {
		b.Messages = append(b.Messages, *testMessage("B", 0, body(900, "y")))
	}
	res, err := s.PutMessages(b)
	require.NoError(t, err)
	require.Equal(t, int64(testFileSize), res.WroteOffset, "the whole batch moved to the next file")
	require.Equal(t, int32(5), res.MsgNum)
	require.Equal(t, before, res.QueueOffset)
	for i, off := range b.PhysicalOffsets {
		require.Equal(t, before+int64(i), b.Messages[i].QueueOffset)
		rec, release, err := s.LookMessageByOffset(off)
		require.NoError(t, err)
		d, err := codec.DecodeRecord(rec, true)
		require.NoError(t, err)
		require.Equal(t, before+int64(i), d.QueueOffset)
		require.Equal(t, res.StoreTimestamp, d.StoreTimestamp)
		release()
	}
	_, err = s.PutMessages(&BatchPut{Messages: []codec.Message{*testMessage("B", 0, nil)}})
	require.ErrorIs(t, err, ErrMessageIllegal)
	_, err = s.PutMessages(&BatchPut{Messages: []codec.Message{*testMessage("B", 0, []byte("a")), *testMessage("B", 1, []byte("b"))}})
	require.ErrorIs(t, err, ErrMessageIllegal)
}

func TestPutLimits(t *testing.T) {
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{})
	res, err := s.PutMessage(testMessage("T", 0, make([]byte, cfg.MaxMessageSize+1)))
	require.ErrorIs(t, err, ErrMessageIllegal)
	require.Equal(t, MessageIllegal, res.Status)
	m := testMessage("T", 0, []byte("x"))
	m.Properties = make([]byte, codec.MaxPropertiesBytes+1)
	res, err = s.PutMessage(m)
	require.ErrorIs(t, err, ErrPropertiesSizeExceeded)
	require.Equal(t, PropertiesSizeExceeded, res.Status)
	mustPut(t, s, testMessage("T", 0, make([]byte, cfg.MaxMessageSize)))
	require.Equal(t, int64(2), s.Stats().PutMessageFailedTimes)
	require.NoError(t, s.Shutdown())
	_, err = s.PutMessage(testMessage("T", 0, []byte("x")))
	require.ErrorIs(t, err, ErrServiceNotAvailable)
	require.ErrorIs(t, s.Shutdown(), ErrClosed)
}

// TestCommittedBytesWakeOnlyTheirFlusher: with the transient pool, committed bytes wake the interval
// flusher under ASYNC_FLUSH (it makes them durable), and not under SYNC_FLUSH, where the group commit does
// it for its waiters: a second fdatasync beside each group commit only held the flush lock. The interval
// itself is an hour here, so every async flush counted is a wake-up.
func TestCommittedBytesWakeOnlyTheirFlusher(t *testing.T) {
	for _, flushType := range []FlushDiskType{AsyncFlush, SyncFlush} {
		t.Run(flushType.String(), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.FlushDiskType = flushType
			cfg.TransientStorePoolEnable = true
			reg := prometheus.NewRegistry()
			s := openStarted(t, cfg, Deps{Registerer: reg})
			var last PutResult
			for range 8 { // batches of 64 KiB: the commits find far more than flushCommitLogLeastPages
				for i := range 64 {
					last = mustPut(t, s, testMessage("WakeTopic", int32(i%4), body(1000, "w")))
				}
				done := make(chan error, 1)
				s.WaitDurable(last.EndOffset(), func(err error) { done <- err })
				require.NoError(t, <-done)
			}
			testutil.Eventually(t, "all committed", func() bool { return s.commitLog.mfq.committedWhere.Load() == s.MaxPhyOffset() })
			asyncFlushes := func() float64 { return gathered(t, reg, "ringmq_flush_durable_writes_total", "commitlog_async") }
			if flushType == AsyncFlush {
				// Bytes are counted last of a durable write's series (flush.Metrics.durableWrite).
				testutil.Eventually(t, "the interval flusher woken by commits", func() bool {
					return gathered(t, reg, "ringmq_flush_bytes_total", "commitlog_async") > 0
				})
				require.Positive(t, asyncFlushes())
				require.Positive(t, gathered(t, reg, "ringmq_flush_latency_seconds", "commitlog_async"), "its sample count")
				return
			}
			require.Greater(t, gathered(t, reg, "ringmq_flush_durable_writes_total", "commitlog_sync"), 0.0)
			require.Zero(t, asyncFlushes(), "interval flushes under SYNC_FLUSH")
			require.GreaterOrEqual(t, s.commitLog.mfq.flushedWhere.Load(), last.EndOffset())
		})
	}
}

// TestSyncFlushIdleFlush: under SYNC_FLUSH, messages nobody waits for (waitStoreMsgOK=false) are made
// durable by the idle flush every SyncFlushIdleInterval, as RocketMQ's GroupCommitService flushes when it
// has no requests; no flushIntervalCommitLog (an hour here) is involved.
func TestSyncFlushIdleFlush(t *testing.T) {
	for _, transient := range []bool{false, true} {
		t.Run(fmt.Sprintf("transient=%t", transient), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.FlushDiskType = SyncFlush
			cfg.SyncFlushIdleInterval = 10 * time.Millisecond
			cfg.TransientStorePoolEnable = transient
			reg := prometheus.NewRegistry()
			s := openStarted(t, cfg, Deps{Registerer: reg})
			var last PutResult
			for i := range 20 {
				last = mustPut(t, s, testMessage("IdleTopic", int32(i%4), body(1000, "i")))
			}
			testutil.Eventually(t, "the unwaited messages durable", func() bool {
				return s.commitLog.mfq.flushedWhere.Load() >= last.EndOffset()
			})
			require.Zero(t, gathered(t, reg, "ringmq_flush_durable_writes_total", "commitlog_sync"),
				"no group commit: nobody waited")
			require.Positive(t, gathered(t, reg, "ringmq_flush_durable_writes_total", "commitlog_async"))
		})
	}
}
