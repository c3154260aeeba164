package ha

import (
	"bytes"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// fakeMaster accepts one slave and speaks the wire protocol by hand.
type fakeMaster struct {
	t  *testing.T
	nc net.Conn
}

func (m *fakeMaster) frame(off int64, body []byte) []byte {
	var h [FrameHeaderBytes]byte
	putFrameHeader(h[:], off, int32(len(body)))
	return append(h[:], body...)
}

func (m *fakeMaster) send(b []byte) {
	m.t.Helper()
	_, err := m.nc.Write(b)
	require.NoError(m.t, err)
}

func (m *fakeMaster) report() int64 {
	m.t.Helper()
	require.NoError(m.t, m.nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	var buf [ReportBytes]byte
	off, err := readReport(m.nc, &buf)
	require.NoError(m.t, err)
	return off
}

// The slave reports as RocketMQ's HAClient does: at once on connect (ringmq; Java waits one interval),
// after every frame that moved its end (three frames in one write: three reports), not for a heartbeat
// frame, and when no report went out for haSendHeartbeatInterval, once. Clock and ticks are the test's,
// so each step is decided, not timed: a report that should not exist would be read before the next one
// the test expects.
func TestSlaveReportCadence(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	slave := newMemLog(testFileSize)
	c, err := NewClient(testClientConfig(ln.Addr().String()), slave, nil)
	require.NoError(t, err)
	clock := testutil.NewManualClockAt(time.Unix(1000, 0))
	ticks := make(chan time.Time) // unbuffered: the second of two sends returns once the first was handled
	c.now, c.ticks = clock.Now, ticks
	c.Start()
	defer c.Close()
	nc, err := ln.Accept()
	require.NoError(t, err)
	defer nc.Close()
	m := &fakeMaster{t: t, nc: nc}
	interval := c.cfg.HeartbeatInterval

	require.Equal(t, int64(0), m.report(), "the first report, at once")
	var burst []byte
	burst = append(burst, m.frame(4096, record(0, 100))...)
	burst = append(burst, m.frame(4196, record(1, 50))...)
	burst = append(burst, m.frame(4246, record(2, 10))...)
	m.send(burst)
	require.Equal(t, []int64{4196, 4246, 4256}, []int64{m.report(), m.report(), m.report()}, "one report per frame")

	m.send(m.frame(4256, nil)) // a heartbeat frame moves nothing: no report
	clock.Advance(interval - time.Millisecond)
	ticks <- time.Time{}
	ticks <- time.Time{} // under the interval since the last report: nothing
	m.send(m.frame(4256, record(3, 44)))
	require.Equal(t, int64(4300), m.report(), "the frame's report, no heartbeat report before it")

	clock.Advance(interval)
	ticks <- time.Time{}
	ticks <- time.Time{} // the first tick reported; the second finds that report fresh
	require.Equal(t, int64(4300), m.report(), "the heartbeat report: the end again")
	m.send(m.frame(4300, record(4, 20)))
	require.Equal(t, int64(4320), m.report(), "exactly one heartbeat report")
	require.Equal(t, int64(4320), slave.MaxPhyOffset())
}

// A slave whose CommitLog ends in files the master deleted gets what a RocketMQ master sends it,
// heartbeats at its own offset and nothing else, and the operator is told: one error log naming both
// offsets, and the ringmq_replica_slaves_behind_deleted gauge while it is connected.
func TestSlaveBehindDeletedFiles(t *testing.T) {
	master := newMemLog(testFileSize)
	for i := range 40 { // 40 × 400 B: files 0, 4096, 8192, 12288
		master.Append(record(i, 400))
	}
	master.deleteBelow(2 * testFileSize)
	require.Equal(t, int64(2*testFileSize), master.MinPhyOffset())
	logger, logs := logtest.Logger()
	srv, err := NewServer(testServerConfig(), master, logger)
	require.NoError(t, err)
	reg := prometheus.NewRegistry()
	require.NoError(t, srv.RegisterMetrics(reg))
	srv.Start()
	defer srv.Close()

	slave := newMemLog(testFileSize)
	require.NoError(t, slave.AppendReplica(0, 3000, bytes.NewReader(master.Bytes(0, 3000))))
	c := startClient(t, srv.Addr().String(), slave)
	testutil.Eventually(t, "the master sees a slave it cannot serve", func() bool { return srv.SlavesBehindDeleted() == 1 })
	frames := c.Frames()
	testutil.Eventually(t, "heartbeat frames keep coming", func() bool { return c.Frames() >= frames+3 })
	require.Equal(t, int64(3000), slave.MaxPhyOffset(), "nothing appended, no hole made")
	require.Equal(t, int64(1), c.Connects(), "the connection stays, as with RocketMQ")
	require.Equal(t, 1.0, gaugeValue(t, reg, "ringmq_replica_slaves_behind_deleted"))
	require.Equal(t, 1, srv.SlaveCount())
	errs := logs.AtLevel(slog.LevelError)
	require.Len(t, errs, 1, "one error per connection")
	require.Equal(t, "3000", logtest.Attr(errs[0], "slaveOffset"))
	require.Equal(t, "8192", logtest.Attr(errs[0], "masterMinOffset"))
	require.Contains(t, errs[0].Message, "wipe its store")

	require.NoError(t, c.Close())
	testutil.Eventually(t, "the gauge drops with the connection", func() bool {
		return srv.SlavesBehindDeleted() == 0 && srv.SlaveCount() == 0
	})
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == name {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}
