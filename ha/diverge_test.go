package ha

import (
	"bytes"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// startLoggedServer is startServer with a recorded log.
func startLoggedServer(t *testing.T, log MasterLog) (*Server, *logtest.Recorder) {
	t.Helper()
	logger, rec := logtest.Logger()
	s, err := NewServer(testServerConfig(), log, logger)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s, rec
}

// reportOnce connects as a slave, reports off, and returns what the master does: the frames' bytes it
// sent before closing the connection (nil: none), and whether it closed it.
func reportOnce(t *testing.T, srv *Server, off int64) (frames []byte, closed bool) {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	var rep [ReportBytes]byte
	binary.BigEndian.PutUint64(rep[:], uint64(off))
	_, err = nc.Write(rep[:])
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(2*time.Second)))
	var hdr [FrameHeaderBytes]byte
	for {
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			return frames, !isTimeout(err)
		}
		h, err := ParseFrameHeader(hdr[:])
		require.NoError(t, err)
		body := make([]byte, h.BodySize)
		_, err = io.ReadFull(nc, body)
		require.NoError(t, err)
		frames = append(frames, body...)
		if h.BodySize == 0 {
			return frames, false // a heartbeat: served, nothing more to send
		}
	}
}

// refusalLines are the ERROR lines of refused slaves, with the offsets they name.
func refusalLines(rec *logtest.Recorder) (lines []string) {
	for _, r := range rec.AtLevel(slog.LevelError) {
		lines = append(lines, logtest.Attr(r, "slaveOffset")+"/"+logtest.Attr(r, "masterOffset"))
	}
	return lines
}

// A slave whose offset falls inside one of the master's records, past anything this master sent, holds
// other bytes than the master there: it is refused before anything is sent, its report is no
// acknowledgement, and one ERROR line names both offsets. At a record start, at the end, and at 0 (a new
// slave) it is served; and inside a record once this master has sent that far (a frame cut the record).
func TestSlaveMidRecordIsRefused(t *testing.T) {
	master := newMemLog(testFileSize)
	a := master.Append(record(0, 300))
	b := master.Append(record(1, 300))
	end := master.Append(record(2, 300)) + 300
	srv, rec := startLoggedServer(t, master)

	frames, closed := reportOnce(t, srv, b+17)
	require.True(t, closed, "a slave inside a record is disconnected")
	require.Empty(t, frames, "and sent nothing")
	require.Zero(t, srv.AckedOffset(), "its report is no acknowledgement")
	require.Equal(t, int64(1), srv.SlavesRefused())
	require.Equal(t, []string{strconv.FormatInt(b+17, 10) + "/" + strconv.FormatInt(end, 10)}, refusalLines(rec))

	// The same slave again within the minute: refused again, counted, but no second ERROR line.
	_, closed = reportOnce(t, srv, b+17)
	require.True(t, closed)
	require.Equal(t, int64(2), srv.SlavesRefused())
	require.Len(t, refusalLines(rec), 1, "a slave coming back with the same refusal is logged once")

	for _, ok := range []int64{a, b, end} {
		frames, closed := reportOnce(t, srv, ok)
		require.False(t, closed, "offset %d is a record start: served", ok)
		require.Equal(t, string(master.Bytes(ok, end)), string(frames), "from %d", ok)
	}
	require.Equal(t, int64(2), srv.SlavesRefused())
	// This server has now sent everything up to end: a slave inside a record got its bytes from here.
	frames, closed = reportOnce(t, srv, b+17)
	require.False(t, closed, "a record cut by a frame of this master's: served")
	require.Equal(t, string(master.Bytes(b+17, end)), string(frames))
	require.Equal(t, int64(2), srv.SlavesRefused())
}

// A slave ahead of its master (a master that lost a tail its slave kept) is refused; once the master
// has written past that offset, the same slave is still refused, even where a record of the master's
// starts at its offset: the bytes before it are the lost ones, not the master's new ones. A slave with a
// forged tail of the right length never resumes.
func TestSlaveAheadStaysRefusedOnceTheMasterPassesIt(t *testing.T) {
	master := newMemLog(testFileSize)
	master.Append(record(0, 100))
	srv, rec := startLoggedServer(t, master)
	slave := newMemLog(testFileSize)
	forged := append(record(0, 100), bytes.Repeat([]byte{'x'}, 200)...) // the master's record, then a tail it lost
	require.NoError(t, slave.AppendReplica(0, len(forged), bytes.NewReader(forged)))
	c := startClient(t, srv.Addr().String(), slave)
	testutil.Eventually(t, "refused while ahead", func() bool { return srv.SlavesRefused() >= 1 })

	master.Append(record(1, 200)) // the master's own record now ends where the slave's CommitLog does
	srv.Notify()
	require.True(t, master.IsRecordStart(300))
	connects := c.Connects()
	testutil.Eventually(t, "refused again after the master passed it", func() bool {
		return c.Connects() >= connects+2 && srv.SlavesRefused() >= 3
	})
	require.Equal(t, forged, slave.Bytes(0, 300), "the slave got nothing of the master's")
	require.Equal(t, int64(300), slave.MaxPhyOffset())
	require.Zero(t, srv.AckedOffset(), "none of its reports counted")
	lines := refusalLines(rec)
	require.Equal(t, "300/100", lines[0], "ahead: both offsets named")
	require.Equal(t, "300/300", lines[1], "diverged: both offsets named")
	require.Len(t, lines, 2, "one line per refusal, not per reconnect")
}

// A slave that reports bytes it was never sent (a slave with a forged or foreign tail) is disconnected
// and its report is not counted.
func TestSlaveReportingUnsentBytesIsRefused(t *testing.T) {
	master := newMemLog(1 << 20)
	master.Append(make([]byte, 100))
	srv := startServer(t, master)
	slave := dialFakeSlave(t, srv)
	slave.report(srv, 100)
	var rep [ReportBytes]byte
	binary.BigEndian.PutUint64(rep[:], 5000)
	_, err := slave.nc.Write(rep[:])
	require.NoError(t, err)
	testutil.Eventually(t, "disconnected", func() bool { return srv.SlaveCount() == 0 })
	require.Equal(t, int64(100), srv.AckedOffset(), "the unsent bytes' report is no acknowledgement")
	require.Equal(t, int64(1), srv.SlavesRefused())
}

// trimmingLog is a slave's memLog that, like the file store, cuts a partial record at its end when asked
// (TailTrimmer); whole is where its last whole record ends.
type trimmingLog struct {
	*memLog
	whole int64
	trims atomic.Int32
}

func (l *trimmingLog) TrimPartialRecord() (from, to int64, err error) {
	l.trims.Add(1)
	from = l.MaxPhyOffset()
	if from > l.whole {
		l.truncate(l.whole)
	}
	return from, l.MaxPhyOffset(), nil
}

// A running slave holds the first bytes of a record: its master died mid-frame. The master restarts
// without that record (it never reached its disk) and writes another there. The slave, still running,
// cuts its partial record before it reports (TailTrimmer), so the restarted master, which cannot know it
// sent those bytes, finds it at a record's start and serves it rather than refusing it as diverged.
func TestRunningSlaveResumesAfterItsMasterRestarted(t *testing.T) {
	first := newMemLog(testFileSize)
	first.Append(record(0, 300))
	first.Append(record(1, 300))
	slave := &trimmingLog{memLog: newMemLog(testFileSize), whole: 300}
	torn := first.Bytes(0, 400)
	require.NoError(t, slave.AppendReplica(0, len(torn), bytes.NewReader(torn)))

	restarted := newMemLog(testFileSize)
	restarted.Append(record(0, 300))
	end := restarted.Append(record(2, 200)) + 200
	srv := startServer(t, restarted)
	startClient(t, srv.Addr().String(), slave)
	testutil.Eventually(t, "the slave caught up", func() bool { return srv.AckedOffset() == end })
	require.Equal(t, restarted.Bytes(0, end), slave.Bytes(0, end))
	require.Equal(t, make([]byte, 100), slave.Bytes(end, 600), "nothing of the lost record behind the new one")
	require.Zero(t, srv.SlavesRefused())
	require.GreaterOrEqual(t, slave.trims.Load(), int32(1))
}
