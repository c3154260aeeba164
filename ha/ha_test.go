package ha

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/testutil"
)

// fast intervals for tests; the logic, not the wall clock, is what is checked.
func testServerConfig() ServerConfig {
	c := DefaultServerConfig("127.0.0.1:0")
	c.TransferBatchSize = 1000 // frames smaller than a file: several per file
	c.HeartbeatInterval = 50 * time.Millisecond
	c.HousekeepingInterval = 10 * time.Second
	return c
}

func testClientConfig(addr string) ClientConfig {
	c := DefaultClientConfig(addr)
	c.HeartbeatInterval = 50 * time.Millisecond
	c.HousekeepingInterval = 10 * time.Second
	c.ReconnectInterval = 10 * time.Millisecond
	return c
}

func startServer(t *testing.T, log MasterLog) *Server {
	t.Helper()
	s, err := NewServer(testServerConfig(), log, nil)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func startClient(t *testing.T, addr string, log SlaveLog) *Client {
	t.Helper()
	c, err := NewClient(testClientConfig(addr), log, nil)
	require.NoError(t, err)
	c.Start()
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// record is a recognisable record of n bytes for offset-independent content.
func record(i, n int) []byte {
	b := bytes.Repeat([]byte{byte('a' + i%26)}, n)
	binary.BigEndian.PutUint32(b, uint32(i))
	return b
}

const testFileSize = 4096

// A new slave (reporting 0) gets the master's last file and everything after, never older history; the
// bytes land at the master's physical offsets, and the acknowledged offset follows.
func TestNewSlaveStartsAtTheMastersLastFile(t *testing.T) {
	master := newMemLog(testFileSize)
	for i := range 30 { // 30 × 300 B: the last file starts at 8192
		master.Append(record(i, 300))
	}
	srv := startServer(t, master)
	slave := newMemLog(testFileSize)
	startClient(t, srv.Addr().String(), slave)
	end := master.MaxPhyOffset()
	testutil.Eventually(t, "the slave catches up", func() bool { return slave.MaxPhyOffset() == end })
	lastFile := end - end%testFileSize
	require.Equal(t, master.Bytes(lastFile, end), slave.Bytes(lastFile, end))
	require.False(t, slave.hasFile(0), "no history older than the master's last file")
	testutil.Eventually(t, "the acknowledgement", func() bool { return srv.AckedOffset() == end })

	// Live: appends are streamed as they are published (Notify wakes the idle writer).
	for i := 30; i < 90; i++ {
		master.Append(record(i, 500))
		srv.Notify()
	}
	end = master.MaxPhyOffset()
	testutil.Eventually(t, "the slave follows", func() bool { return slave.MaxPhyOffset() == end })
	require.Equal(t, master.Bytes(lastFile, end), slave.Bytes(lastFile, end))
	testutil.Eventually(t, "the acknowledgement", func() bool { return srv.AckedOffset() == end })
}

// A slave with part of the master's CommitLog resumes from its own end, across files, byte for byte.
func TestSlaveResumesFromItsEnd(t *testing.T) {
	master := newMemLog(testFileSize)
	var mid int64
	for i := range 40 {
		off := master.Append(record(i, 700))
		if i == 7 {
			mid = off // in the second file, where a record starts
		}
	}
	require.Equal(t, int64(testFileSize+2*700), mid)
	slave := newMemLog(testFileSize)
	require.NoError(t, slave.AppendReplica(0, testFileSize, bytes.NewReader(master.Bytes(0, testFileSize))))
	require.NoError(t, slave.AppendReplica(testFileSize, int(mid-testFileSize), bytes.NewReader(master.Bytes(testFileSize, mid))))
	srv := startServer(t, master)
	startClient(t, srv.Addr().String(), slave)
	end := master.MaxPhyOffset()
	testutil.Eventually(t, "the slave catches up", func() bool { return slave.MaxPhyOffset() == end })
	require.Equal(t, master.Bytes(0, end), slave.Bytes(0, end))
}

// A frame at another offset than the slave's end closes the connection; the slave reconnects and
// reports its end again. A slave ahead of the master is closed by the master.
func TestMismatchedOffsetsCloseTheConnection(t *testing.T) {
	t.Run("slave ahead of the master", func(t *testing.T) {
		master := newMemLog(testFileSize)
		master.Append(record(0, 100))
		srv := startServer(t, master)
		slave := newMemLog(testFileSize)
		require.NoError(t, slave.AppendReplica(0, 200, bytes.NewReader(make([]byte, 200))))
		c := startClient(t, srv.Addr().String(), slave)
		testutil.Eventually(t, "reconnects", func() bool { return c.Connects() >= 3 })
		require.Equal(t, int64(200), slave.MaxPhyOffset(), "nothing appended")
		require.Zero(t, srv.AckedOffset(), "a report past the master's end is refused")
	})
	t.Run("frame at another offset", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		slave := newMemLog(testFileSize)
		require.NoError(t, slave.AppendReplica(0, 10, bytes.NewReader(make([]byte, 10))))
		c := startClient(t, ln.Addr().String(), slave)
		for round := range 2 {
			nc, err := ln.Accept()
			require.NoError(t, err)
			var rep [ReportBytes]byte
			off, err := readReport(nc, &rep)
			require.NoError(t, err)
			require.Equal(t, int64(10), off, "round %d: the slave reports its end", round)
			var frame [FrameHeaderBytes + 4]byte
			putFrameHeader(frame[:], 11, 4) // one byte past the slave's end
			_, err = nc.Write(frame[:])
			require.NoError(t, err)
			// The slave closes: a read ends (reports until then are fine).
			require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
			for {
				if _, err := readReport(nc, &rep); err != nil {
					require.False(t, isTimeout(err), "closed by the slave, not timed out")
					break
				}
			}
			_ = nc.Close()
		}
		require.Equal(t, int64(10), slave.MaxPhyOffset())
		require.GreaterOrEqual(t, c.Connects(), int64(2))
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// An idle master sends heartbeat frames (size 0, the next offset); the slave's reports keep coming.
func TestHeartbeatsBothWays(t *testing.T) {
	master := newMemLog(testFileSize)
	master.Append(record(0, 100))
	srv := startServer(t, master)
	slave := newMemLog(testFileSize)
	c := startClient(t, srv.Addr().String(), slave)
	testutil.Eventually(t, "caught up", func() bool { return slave.MaxPhyOffset() == 100 })
	frames := c.Frames()
	testutil.Eventually(t, "heartbeat frames", func() bool { return c.Frames() >= frames+3 })
	require.Equal(t, int64(100), slave.MaxPhyOffset())
	require.Equal(t, int64(1), c.Connects(), "heartbeats keep the one connection")
}

// waitResult is a flush.Waiter recording its outcome.
type waitResult struct {
	done atomic.Bool
	err  atomic.Pointer[error]
}

func (w *waitResult) FlushDone(err error) {
	w.err.Store(&err)
	w.done.Store(true)
}

func (w *waitResult) result(t *testing.T) error {
	t.Helper()
	testutil.Eventually(t, "the waiter", w.done.Load)
	return *w.err.Load()
}

// SYNC_MASTER: no slave → SLAVE_NOT_AVAILABLE at once; a slave acknowledging the end → done; a stuck
// slave → timeout; too far behind → not available; Close fails the rest.
func TestReplicasWait(t *testing.T) {
	master := newMemLog(testFileSize)
	srv := startServer(t, master)
	cfg := DefaultReplicasConfig()
	cfg.SlaveTimeout = 300 * time.Millisecond
	cfg.FallBehindMax = 3000
	r, err := NewReplicas(cfg, srv, nil, nil)
	require.NoError(t, err)
	defer r.Close()

	end := master.Append(record(0, 100)) + 100
	w := &waitResult{}
	require.NoError(t, r.Wait(end, w))
	require.True(t, w.done.Load(), "answered at once")
	require.ErrorIs(t, *w.err.Load(), ErrSlaveNotAvailable)

	slave := newMemLog(testFileSize)
	slave.block = make(chan struct{})
	startClient(t, srv.Addr().String(), slave)
	testutil.Eventually(t, "the slave connected", func() bool { return srv.SlaveCount() == 1 })

	// The slave is stuck appending: the wait times out.
	w = &waitResult{}
	require.NoError(t, r.Wait(end, w))
	require.ErrorIs(t, w.result(t), ErrSlaveTimeout)
	require.ErrorIs(t, w.result(t), flush.ErrFlushTimeout)

	// Too far behind: not available at once.
	far := master.Append(record(1, 3000)) + 3000
	w = &waitResult{}
	require.NoError(t, r.Wait(far, w))
	require.ErrorIs(t, *w.err.Load(), ErrSlaveNotAvailable)

	// The slave gets going: waits complete once it acknowledges.
	close(slave.block)
	testutil.Eventually(t, "the acknowledgement", func() bool { return srv.AckedOffset() >= far })
	ws := make([]*waitResult, 10)
	for i := range ws {
		e := master.Append(record(i, 200)) + 200
		srv.Notify()
		ws[i] = &waitResult{}
		require.NoError(t, r.Wait(e, ws[i]))
	}
	for i, w := range ws {
		require.NoError(t, w.result(t), "waiter %d", i)
	}
	require.Equal(t, master.MaxPhyOffset(), slave.MaxPhyOffset())
}

// The frame reader takes what the master sends and nothing else: a body lands at the slave's end, any
// bad header or offset ends the connection with an error, never a panic.
func FuzzClientFrames(f *testing.F) {
	frame := func(off int64, body []byte) []byte {
		var h [FrameHeaderBytes]byte
		putFrameHeader(h[:], off, int32(len(body)))
		return append(h[:], body...)
	}
	f.Add(frame(0, []byte("hello")))
	f.Add(append(frame(0, []byte("abc")), frame(3, []byte("defg"))...))
	f.Add(frame(4096, nil))
	f.Add(frame(-1, nil))
	f.Add(frame(5, []byte("x")))
	f.Add(append(frame(4090, make([]byte, 6)), frame(4096, make([]byte, 3))...))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, stream []byte) {
		slave := newMemLog(testFileSize)
		c, err := NewClient(testClientConfig(""), slave, nil)
		require.NoError(t, err)
		local, remote := net.Pipe()
		go func() {
			_, _ = remote.Write(stream)
			_ = remote.Close()
		}()
		r := &reporter{nc: discardConn{local}, timeout: time.Second}
		err = c.readFrames(local, r)
		_ = local.Close()
		require.Error(t, err, "the stream ends: an error, EOF at least")
		// Replay the stream by hand: every frame accepted in order is appended, at its offset.
		want := newMemLog(testFileSize)
		for rest := stream; len(rest) >= FrameHeaderBytes; {
			h, herr := ParseFrameHeader(rest)
			if herr != nil {
				break
			}
			if e := want.MaxPhyOffset(); e != 0 && e != h.PhyOffset {
				break
			}
			body := rest[FrameHeaderBytes:]
			if len(body) < int(h.BodySize) {
				break
			}
			if h.BodySize > 0 && want.AppendReplica(h.PhyOffset, int(h.BodySize), bytes.NewReader(body)) != nil {
				break
			}
			rest = body[h.BodySize:]
		}
		require.Equal(t, want.MaxPhyOffset(), slave.MaxPhyOffset())
		if e := want.MaxPhyOffset(); e > 0 {
			from := e - 1 - (e-1)%testFileSize
			require.Equal(t, want.Bytes(from, e), slave.Bytes(from, e), fmt.Sprintf("bytes below %d", e))
		}
	})
}

// discardConn swallows the reports the frame reader writes.
type discardConn struct{ net.Conn }

func (discardConn) Write(b []byte) (int, error)      { return len(b), nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }

// readFrame reads one transfer frame from a fake slave's connection.
func readFrame(t *testing.T, nc net.Conn) (FrameHeader, []byte) {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	var hdr [FrameHeaderBytes]byte
	_, err := io.ReadFull(nc, hdr[:])
	require.NoError(t, err)
	h, err := ParseFrameHeader(hdr[:])
	require.NoError(t, err)
	body := make([]byte, h.BodySize)
	_, err = io.ReadFull(nc, body)
	require.NoError(t, err)
	return h, body
}

// A slave that is behind gets frames that double from TransferBatchSize up to CatchUpBatchSize while each
// fills its cap, cut at a file's end as always; once caught up, frames start at TransferBatchSize again.
// The frames are ordinary ones: contiguous offsets, the master's bytes.
func TestCatchUpFramesGrow(t *testing.T) {
	const fileSize = 64 << 10
	master := newMemLog(fileSize)
	master.Append([]byte{1}) // the record a slave holding the first byte has
	for i := range 100 {     // 1 + 100 × 1000 B: file 0 full (1 + 65 records + padding), 35,000 B in file 1
		master.Append(record(i, 1000))
	}
	cfg := testServerConfig()
	cfg.TransferBatchSize, cfg.CatchUpBatchSize = 1000, 8000
	cfg.HeartbeatInterval = time.Hour // no heartbeat frames in between
	cfg.HousekeepingInterval = 2 * time.Hour
	srv, err := NewServer(cfg, master, nil)
	require.NoError(t, err)
	srv.Start()
	t.Cleanup(func() { _ = srv.Close() })

	nc, err := net.Dial("tcp", srv.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	var rep [ReportBytes]byte
	binary.BigEndian.PutUint64(rep[:], 1) // a slave holding the first byte: the transfer starts at 1
	_, err = nc.Write(rep[:])
	require.NoError(t, err)

	frames := func(until int64) (sizes []int32) {
		for next := int64(1); next < until; {
			h, body := readFrame(t, nc)
			require.Equal(t, next, h.PhyOffset, "contiguous frames")
			require.Equal(t, master.Bytes(next, next+int64(h.BodySize)), body)
			sizes = append(sizes, h.BodySize)
			next += int64(h.BodySize)
		}
		return sizes
	}
	end := master.MaxPhyOffset()
	require.Equal(t, int64(fileSize+35000), end)
	// File 0 from 1: 1000, 2000, 4000 (to 7001), 8000 × 7 (to 63,001), then the file's last 2535 (cut at
	// its end: the cap stays); file 1 (35,000): 8000 × 4, then 3000 (less than asked).
	require.Equal(t, []int32{1000, 2000, 4000, 8000, 8000, 8000, 8000, 8000, 8000, 8000, 2535, 8000, 8000, 8000, 8000, 3000},
		frames(end))

	// Caught up: the next records go out from TransferBatchSize again.
	master.Append(record(100, 3000))
	srv.Notify()
	h, _ := readFrame(t, nc)
	require.Equal(t, FrameHeader{PhyOffset: end, BodySize: 1000}, h)
	h, _ = readFrame(t, nc)
	require.Equal(t, FrameHeader{PhyOffset: end + 1000, BodySize: 2000}, h)
}

// Connected follows the session: true while connected to the master, false once it is gone and
// after Close.
func TestConnectedFollowsTheSession(t *testing.T) {
	master := newMemLog(testFileSize)
	master.Append(record(0, 100))
	srv, err := NewServer(testServerConfig(), master, nil)
	require.NoError(t, err)
	srv.Start()
	slave := newMemLog(testFileSize)
	c := startClient(t, srv.Addr().String(), slave)
	testutil.Eventually(t, "connected", c.Connected)
	testutil.Eventually(t, "caught up", func() bool { return slave.MaxPhyOffset() == 100 })
	require.NoError(t, srv.Close())
	testutil.Eventually(t, "not connected once the master is gone", func() bool { return !c.Connected() })
	require.NoError(t, c.Close())
	require.False(t, c.Connected())
}
