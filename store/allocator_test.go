package store

import (
	"log/slog"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
	"github.com/ringmq/ringmq/transientpool"
)

// gatedFS holds the opening of one file until released, telling when it gets there.
type gatedFS struct {
	FS
	name    string
	arrived chan struct{}
	release chan struct{}
	once    sync.Once
}

func (g *gatedFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if strings.HasSuffix(name, g.name) {
		g.once.Do(func() { close(g.arrived) })
		<-g.release
	}
	return g.FS.OpenFile(name, flag, perm)
}

// TestAllocatorKeepsTwoStandbyFiles: after the first put the allocator has the next two CommitLog files
// ready, as RocketMQ's AllocateMappedFileService does, and rolls take them without creating files.
func TestAllocatorKeepsTwoStandbyFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStarted(t, cfg, Deps{})
	mustPut(t, s, testMessage("A", 0, body(100, "a")))
	testutil.Eventually(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	require.Equal(t, []string{offsetFileName(0), offsetFileName(testFileSize), offsetFileName(2 * testFileSize)},
		commitLogFiles(t, dir))
	for i := 0; i < 3*64; i++ { // three files' worth: two rolls
		mustPut(t, s, testMessage("A", 0, body(1000, "b")))
		testutil.Eventually(t, "standbys refilled", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	}
	require.Equal(t, int64(0), s.SyncRolls())
	require.NoError(t, s.Shutdown())
	require.Len(t, commitLogFiles(t, dir), 4, "standbys deleted at shutdown, written files kept")
}

// TestRollWaitsForTheAllocatorsFile: when a roll needs the very file the allocator is creating (the
// allocator two files late), it waits for that creation instead of creating the file a second time,
// and the allocator's file becomes current.
func TestRollWaitsForTheAllocatorsFile(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	gate := &gatedFS{FS: NewOSFS(nil), name: offsetFileName(2 * testFileSize),
		arrived: make(chan struct{}), release: make(chan struct{})}
	s := openStarted(t, cfg, Deps{FS: gate})
	releaseGate := sync.OnceFunc(func() { close(gate.release) })
	t.Cleanup(releaseGate) // before the store's shutdown, which waits for the allocator
	cl := s.commitLog
	mustPut(t, s, testMessage("A", 0, body(100, "a"))) // file 0 current; the allocator makes 1, then 2
	<-gate.arrived
	for 2*testFileSize-cl.maxOffset.Load() > 12<<10 { // fill file 0, then file 1 up to its last 12 KiB
		mustPut(t, s, testMessage("A", 0, body(1000, "b")))
	}
	require.Equal(t, 0, cl.standbyCount())
	require.Greater(t, cl.maxOffset.Load(), int64(testFileSize), "appending in file 1")
	big := body(12<<10, "c") // under maxMessageSize (16 KiB), over what is left in file 1: needs file 2
	rolled := putAsync(s, big)
	requireWaitingUnderPutLock(t, cl, rolled, "the roll, for the file being created")
	releaseGate()
	o := <-rolled
	require.NoError(t, o.err)
	require.Equal(t, int64(2*testFileSize), o.res.WroteOffset)
	require.Equal(t, int64(0), s.SyncRolls(), "the roll used the allocator's file")
	waitDispatched(t, s)
	recs := getAll(t, s, "P", 0)
	require.Len(t, recs, 1)
	require.Equal(t, big, recs[0].Body)
}

// TestNoSpaceWithAStandbyLeft: ENOSPC while preparing a file refuses puts only once no prepared file is
// left (the next roll would have none); while one is, puts go on into it.
func TestNoSpaceWithAStandbyLeft(t *testing.T) {
	ffs := faultfs.New(NewOSFS(nil))
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{FS: ffs})
	mustPut(t, s, testMessage("T", 0, body(100, "a")))
	testutil.Eventually(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpAllocate, PathContains: "commitlog", Err: syscall.ENOSPC})
	defer remove()
	for s.MaxPhyOffset() < testFileSize { // into file 1: the allocator fails to make file 3
		mustPut(t, s, testMessage("T", 0, body(1000, "b")))
	}
	testutil.Eventually(t, "the allocation failed", s.commitLog.allocFailed.Load)
	require.Equal(t, 1, s.commitLog.standbyCount())
	require.Zero(t, s.RunningFlags(), "file 2 is ready: puts go on")
	var refused error
	for i := 0; refused == nil; i++ {
		require.Less(t, i, 1000, "puts must be refused once file 2 is current")
		_, refused = s.PutMessage(testMessage("T", 0, body(1000, "c")))
	}
	require.ErrorIs(t, refused, ErrDiskFull)
	require.GreaterOrEqual(t, s.MaxPhyOffset(), int64(2*testFileSize), "refused only after rolling into file 2")
	remove()
	_, err := s.cleanOnce(time.Now())
	require.NoError(t, err)
	testutil.Eventually(t, "an allocation succeeding clears the flag", func() bool { return s.RunningFlags() == 0 })
	mustPut(t, s, testMessage("T", 0, body(1000, "d")))
}

// TestRollCreatesTheFileWhenTheAllocatorFailed: with the allocator's last two attempts failed (EIO
// creating the file) no file is ready, so the roll creates it under the put lock: counted in
// ringmq_store_sync_rolls_total.
func TestRollCreatesTheFileWhenTheAllocatorFailed(t *testing.T) {
	ffs := faultfs.New(NewOSFS(nil))
	logger, logs := logtest.Logger()
	reg := prometheus.NewRegistry()
	s := openStarted(t, testConfig(t.TempDir()), Deps{FS: ffs, Logger: logger, Registerer: reg})
	mustPut(t, s, testMessage("T", 0, body(100, "a")))
	testutil.Eventually(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpCreate, PathContains: "commitlog", Err: syscall.EIO})
	defer remove()
	for s.MaxPhyOffset() < 2*testFileSize { // two rolls, each waking the allocator, which fails to make file 3
		mustPut(t, s, testMessage("T", 0, body(1000, "b")))
	}
	testutil.Eventually(t, "two failed allocations", func() bool {
		n := 0
		for _, r := range logs.AtLevel(slog.LevelError) {
			if strings.Contains(r.Message, "preallocating a CommitLog file failed") {
				n++
			}
		}
		return n == 2
	})
	require.Zero(t, s.commitLog.standbyCount())
	require.Zero(t, gathered(t, reg, "ringmq_store_sync_rolls_total", ""))
	remove() // the allocator sleeps until the next roll wakes it: that roll finds no file ready
	for s.MaxPhyOffset() < 3*testFileSize {
		mustPut(t, s, testMessage("T", 0, body(1000, "c")))
	}
	require.Equal(t, 1.0, gathered(t, reg, "ringmq_store_sync_rolls_total", ""))
	waitDispatched(t, s)
	require.Len(t, getAll(t, s, "T", 0), int(s.GetMaxOffsetInQueue("T", 0)), "every message readable across the rolls")
}

// TestRollWithoutAPoolBufferAppendsIntoTheMapping: a roll that finds the transient pool empty gives the
// new file no buffer (it appends into the mapping, as RocketMQ falls back), counted in
// ringmq_store_transient_pool_fallbacks_total.
func TestRollWithoutAPoolBufferAppendsIntoTheMapping(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.TransientStorePoolEnable = true
	reg := prometheus.NewRegistry()
	s := openStarted(t, cfg, Deps{Registerer: reg})
	mustPut(t, s, testMessage("T", 0, body(100, "a"))) // file 0 holds a buffer
	var taken []*transientpool.Buffer
	for {
		buf, ok := s.commitLog.pool.Borrow()
		if !ok {
			break
		}
		taken = append(taken, buf)
	}
	require.Len(t, taken, cfg.TransientStorePoolSize-1)
	defer func() {
		for _, buf := range taken {
			s.commitLog.pool.Return(buf)
		}
	}()
	require.Zero(t, gathered(t, reg, "ringmq_store_transient_pool_fallbacks_total", ""))
	for s.MaxPhyOffset() < testFileSize { // the roll borrows before file 0 is padded, so file 0's buffer is still out
		mustPut(t, s, testMessage("T", 0, body(1000, "b")))
	}
	require.Equal(t, 1.0, gathered(t, reg, "ringmq_store_transient_pool_fallbacks_total", ""))
	last := mustPut(t, s, testMessage("T", 0, body(1000, "c")))
	waitDispatched(t, s)
	recs := getAll(t, s, "T", 0)
	require.Equal(t, body(1000, "c"), recs[len(recs)-1].Body)
	require.Equal(t, last.QueueOffset, recs[len(recs)-1].QueueOffset)
}
