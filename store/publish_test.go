package store

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/testutil"
)

// heldCopy makes the put with reservation sequence seq stop between its reservation and its copy until
// release is called; reserved is closed when it gets there. A failing test releases it before the
// store's shutdown (which waits for puts in flight).
func heldCopy(t *testing.T, cl *commitLog, seq int64) (reserved chan struct{}, release func()) {
	reserved, released := make(chan struct{}), make(chan struct{})
	cl.beforeCopy = func(s int64) {
		if s == seq {
			close(reserved)
			<-released
		}
	}
	release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	return reserved, release
}

// requireWaitingUnderPutLock waits until some put holds the put lock, then checks that the put behind
// pending has not been answered: it is the one waiting there.
func requireWaitingUnderPutLock(t *testing.T, cl *commitLog, pending chan putOutcome, who string) {
	t.Helper()
	lock := cl.putLock.(*sync.Mutex)
	testutil.Eventually(t, who+" holding the put lock", func() bool {
		if lock.TryLock() {
			lock.Unlock()
			return false
		}
		return true
	})
	select {
	case o := <-pending:
		t.Fatalf("%s answered while it should wait: %+v", who, o)
	default:
	}
}

type putOutcome struct {
	res PutResult
	err error
}

func putAsync(s *Store, body []byte) chan putOutcome {
	ch := make(chan putOutcome, 1)
	go func() {
		res, err := s.PutMessage(testMessage("P", 0, body))
		ch <- putOutcome{res, err}
	}()
	return ch
}

// TestPublicationInReservationOrder: a put that copies before an earlier one is neither visible nor
// answered until the earlier one is published; meanwhile the store reports the stall (RocketMQ's
// [PC_SYNCHRONIZED] busy signal), and the put lock is free for both.
func TestPublicationInReservationOrder(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.OSPageCacheBusyTimeout = time.Millisecond
	s := openStarted(t, cfg, Deps{})
	cl := s.commitLog
	reserved, release := heldCopy(t, cl, 0)

	first := putAsync(s, body(100, "first"))
	<-reserved
	second := putAsync(s, body(200, "second"))
	testutil.Eventually(t, "the second put copied", func() bool { return cl.pubRing[1].done.Load() == 2 })
	testutil.Eventually(t, "the second put parked, not spinning", func() bool { return cl.pubParked.Load() == 1 })
	require.Equal(t, int64(0), cl.maxOffset.Load(), "nothing published past the held put")
	require.Equal(t, int64(0), cl.mfq.last().wrote.Load())
	require.Greater(t, cl.reservedEnd.Load(), int64(0))
	testutil.Eventually(t, "the stall reported as page-cache busy", s.IsOSPageCacheBusy)
	require.Greater(t, s.BeginTimeInLock(), time.Millisecond)
	select {
	case o := <-second:
		t.Fatalf("second put answered before the first was published: %+v", o)
	default:
	}

	release()
	a, b := <-first, <-second
	require.Equal(t, int32(0), cl.pubParked.Load())
	require.NoError(t, a.err)
	require.NoError(t, b.err)
	require.Equal(t, int64(0), a.res.WroteOffset)
	require.Equal(t, int64(0), a.res.QueueOffset)
	require.Equal(t, int64(a.res.WroteBytes), b.res.WroteOffset)
	require.Equal(t, int64(1), b.res.QueueOffset)
	require.Equal(t, b.res.WroteOffset+int64(b.res.WroteBytes), cl.maxOffset.Load())
	require.Equal(t, cl.reservedEnd.Load(), cl.maxOffset.Load())
	require.False(t, s.IsOSPageCacheBusy())
	require.Equal(t, time.Duration(0), s.BeginTimeInLock())

	waitDispatched(t, s)
	recs := getAll(t, s, "P", 0)
	require.Len(t, recs, 2)
	require.Equal(t, body(100, "first"), recs[0].Body)
	require.Equal(t, body(200, "second"), recs[1].Body)
}

// TestRollWaitsForPutsInFlight: a put that must roll while an earlier put is still copying into the
// current file waits for that copy before ending the file with its blank record, so the blank never
// overwrites a record and the file's records end exactly where the blank starts.
func TestRollWaitsForPutsInFlight(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(dir)
	s := openStarted(t, cfg, Deps{})
	cl := s.commitLog
	const recSize = 1024 // 91 + body + topic "P" (1 byte)
	for i := 0; i < 60; i++ {
		mustPut(t, s, testMessage("P", 0, body(recSize-92, "x")))
	}
	reserved, release := heldCopy(t, cl, 60)
	held := putAsync(s, body(recSize-92, "held"))
	<-reserved
	rolled := putAsync(s, body(4*recSize-92, "rolls")) // 3 KiB left in the file: does not fit
	requireWaitingUnderPutLock(t, cl, rolled, "the rolling put, for the copy in flight")
	require.Equal(t, int64(60*recSize), cl.maxOffset.Load())
	release()
	h, r := <-held, <-rolled
	require.NoError(t, h.err)
	require.NoError(t, r.err)
	require.Equal(t, int64(60*recSize), h.res.WroteOffset)
	require.Equal(t, int64(testFileSize), r.res.WroteOffset)
	require.Equal(t, int64(61), r.res.QueueOffset)
	require.NoError(t, s.Shutdown())

	f0, err := os.ReadFile(filepath.Join(dir, "commitlog", offsetFileName(0)))
	require.NoError(t, err)
	be := binary.BigEndian
	require.Equal(t, uint32(recSize), be.Uint32(f0[60*recSize:]), "the held record is intact")
	blankAt := 61 * recSize
	require.Equal(t, uint32(testFileSize-blankAt), be.Uint32(f0[blankAt:]))
	require.Equal(t, uint32(0xCBD43194), be.Uint32(f0[blankAt+4:]))

	reopened := reopen(t, cfg, Deps{})
	recs := getAll(t, reopened, "P", 0)
	require.Len(t, recs, 62)
	require.Equal(t, body(recSize-92, "held"), recs[60].Body)
	require.Equal(t, body(4*recSize-92, "rolls"), recs[61].Body)
}
