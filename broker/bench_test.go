package broker

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

// Benchmarks of the data plane.
//
//	go test -run '^$' -bench 'Send|Pull' -benchmem ./broker/
//
// BenchmarkSendPath / BenchmarkPullPath drive the processors directly (no network): their
// allocs/op are the broker's own per request (processor + store), which the design wants
// at 0. BenchmarkSendLoopback / BenchmarkPullLoopback go through gnet over loopback with raw
// frames, 4 connections; their allocs/op count the whole process (frame decoding in netio
// included; the benchmark's client allocates nothing per request).

// nullConn is a netio.Conn that discards responses (releasing their buffers at once).
type nullConn struct {
	netio.Conn
	written atomic.Int64
	failed  atomic.Int64
}

func (c *nullConn) RemoteAddr() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:40000") }

// Context is nil: no read pass ends here, so the send plane stores each send on its own.
func (c *nullConn) Context() any { return nil }

func (c *nullConn) WriteFrame(header []byte, bodies [][]byte, release func()) error {
	// Responses with a code other than SUCCESS count as failures: byte 8 starts the JSON
	// header `{"code":0,`.
	if !bytes.HasPrefix(header[8:], []byte(`{"code":0,`)) {
		c.failed.Add(1)
	}
	c.written.Add(1)
	if release != nil {
		release()
	}
	return nil
}

func (c *nullConn) WriteCommand(cmd *codec.RemotingCommand) error {
	c.failed.Add(1)
	return nil
}

func benchBroker(b *testing.B, mutate func(*Config)) *dataBroker {
	return startDataBroker(b, dataBrokerOptions{fileStore: true, mutate: func(c *Config) {
		c.MappedFileSizeCommitLog = 256 << 20
		c.MappedFileSizeConsumeQueue = 300_000 * 20
		if mutate != nil {
			mutate(c)
		}
	}})
}

func BenchmarkSendPath(b *testing.B) {
	db := benchBroker(b, nil)
	createTopic(b, db.b, "BenchSend", 4)
	conn := &nullConn{}
	body := bytes.Repeat([]byte("x"), 1024)
	cmd := sendV1("BenchSend", 1, body, props("TAGS", "TagA", "KEYS", "key-1", "UNIQ_KEY", "C0A8000100002A9F0000000000000001"))
	cmd.Opaque = 7
	rc := db.b.newRequestContext(conn, cmd)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		db.b.send.ProcessSendMessage(rc)
	}
	require.Zero(b, conn.failed.Load())
	require.Equal(b, int64(b.N), conn.written.Load())
}

func TestSendPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	db := startDataBroker(t, dataBrokerOptions{fileStore: true})
	createTopic(t, db.b, "AllocSend", 4)
	conn := &nullConn{}
	cmd := sendV1("AllocSend", 1, bytes.Repeat([]byte("x"), 1024), props("TAGS", "TagA", "UNIQ_KEY", "C0A8000100002A9F0000000000000001"))
	rc := db.b.newRequestContext(conn, cmd)
	allocs := testing.AllocsPerRun(200, func() { db.b.send.ProcessSendMessage(rc) })
	require.Zero(t, conn.failed.Load())
	require.Zero(t, allocs, "the send path (processor + store put + response) allocates nothing per message")
	// Without a client UNIQ_KEY the broker makes one: still nothing allocated.
	cmd2 := sendV1("AllocSend", 1, bytes.Repeat([]byte("x"), 1024), props("TAGS", "TagA"))
	rc2 := db.b.newRequestContext(conn, cmd2)
	require.Zero(t, testing.AllocsPerRun(200, func() { db.b.send.ProcessSendMessage(rc2) }))
}

func BenchmarkPullPath(b *testing.B) {
	db := benchBroker(b, nil)
	createTopic(b, db.b, "BenchPull", 1)
	c := remotingtest.Dial(b, db.addr)
	const msgs = 4096
	body := bytes.Repeat([]byte("p"), 1024)
	for range msgs {
		sendOK(b, c, sendV1("BenchPull", 0, body, props("TAGS", "TagA")))
	}
	testutil.Eventually(b, "BenchPull/0 dispatched",
		func() bool { return db.b.store.GetMaxOffsetInQueue("BenchPull", 0) == msgs })
	conn := &nullConn{}
	cmds := make([]*codec.RemotingCommand, msgs/32)
	for i := range cmds {
		cmds[i] = remotingtest.PullRequest("BG", "BenchPull", 0, int64(i*32), 32, subFlag, 0, "TagA")
		cmds[i].Opaque = int32(i)
	}
	rc := db.b.newRequestContext(conn, cmds[0])
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rc.Cmd = cmds[i%len(cmds)]
		rc.Reply = db.b.replies.To(conn, rc.Cmd)
		db.b.read.ProcessPullMessage(rc)
		i++
	}
	b.ReportMetric(float64(b.N*32)/b.Elapsed().Seconds(), "msgs/s")
	require.Zero(b, conn.failed.Load())
}

func TestPullPathAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	db := startDataBroker(t, dataBrokerOptions{fileStore: true})
	createTopic(t, db.b, "AllocPull", 1)
	c := remotingtest.Dial(t, db.addr)
	for range 64 {
		sendOK(t, c, sendV1("AllocPull", 0, []byte("m"), props("TAGS", "TagA")))
	}
	testutil.Eventually(t, "AllocPull/0 dispatched",
		func() bool { return db.b.store.GetMaxOffsetInQueue("AllocPull", 0) == 64 })
	conn := &nullConn{}
	rc := db.b.newRequestContext(conn, remotingtest.PullRequest("AG", "AllocPull", 0, 0, 32, subFlag, 0, "TagA || TagB"))
	allocs := testing.AllocsPerRun(200, func() { db.b.read.ProcessPullMessage(rc) })
	require.Zero(t, conn.failed.Load())
	require.Zero(t, allocs, "a pull of 32 messages allocates nothing (tag filter, store read, vectored response)")
}

// loopbackLoad drives a started broker with raw frames: conns connections, each keeping
// inFlight requests outstanding, until total responses arrived. frame builds request i of
// a connection; all responses must be SUCCESS.
func loopbackLoad(b *testing.B, addr string, conns, inFlight, total int, frame func(conn, i int) []byte) {
	b.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	per := total / conns
	errs := make(chan error, conns)
	for ci := range conns {
		nc, err := net.Dial("tcp", addr)
		require.NoError(b, err)
		defer nc.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem := make(chan struct{}, inFlight)
			readDone := make(chan error, 1)
			go func() {
				fr := codec.NewFrameReader(nc, 0)
				for n := 0; n < per; n++ {
					payload, err := fr.Next()
					if err != nil {
						readDone <- err
						return
					}
					headerLen := int(binary.BigEndian.Uint32(payload) & 0xFFFFFF)
					if !bytes.HasPrefix(payload[4:4+headerLen], []byte(`{"code":0,`)) {
						failed.Add(1)
					}
					<-sem
				}
				readDone <- nil
			}()
			for i := range per {
				sem <- struct{}{}
				if _, err := nc.Write(frame(ci, i)); err != nil {
					errs <- err
					return
				}
			}
			if err := <-readDone; err != nil && err != io.EOF {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
	require.Zero(b, failed.Load(), "responses other than SUCCESS")
}

// BenchmarkSendLoopback: 1 KiB messages, ASYNC_FLUSH, 4 connections × 16 in flight.
func BenchmarkSendLoopback(b *testing.B) {
	db := benchBroker(b, nil)
	createTopic(b, db.b, "BenchLoop", 8)
	body := bytes.Repeat([]byte("x"), 1024)
	const conns, inFlight = 4, 16
	// One pre-encoded frame per connection (its own queue); the opaque stays the same, the
	// client counts responses rather than matching them.
	frames := make([][]byte, conns)
	for i := range frames {
		cmd := sendV1("BenchLoop", int32(i), body, props("TAGS", "TagA"))
		cmd.Opaque = 1
		f, err := cmd.AppendFrame(nil)
		require.NoError(b, err)
		frames[i] = f
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	loopbackLoad(b, db.addr, conns, inFlight, max(b.N, conns), func(conn, _ int) []byte { return frames[conn] })
	b.ReportMetric(float64(max(b.N, conns))/time.Since(start).Seconds(), "msgs/s")
}

// BenchmarkPullLoopback: 4 connections pull 32 × 1 KiB messages per request from a
// pre-filled queue each (hot data, event loop path).
func BenchmarkPullLoopback(b *testing.B) {
	db := benchBroker(b, nil)
	const conns, msgs = 4, 8192
	createTopic(b, db.b, "BenchPullLoop", conns)
	c := remotingtest.Dial(b, db.addr)
	body := bytes.Repeat([]byte("p"), 1024)
	for q := range int32(conns) {
		for range msgs {
			c.Call(sendV1("BenchPullLoop", q, body, "")) // answers are checked through the queue size below
		}
	}
	testutil.Eventually(b, "every BenchPullLoop send stored",
		func() bool { return queueTotal(db.b, "BenchPullLoop", conns) == conns*msgs })
	frames := make([][][]byte, conns)
	for q := range frames {
		for off := 0; off < msgs; off += 32 {
			cmd := remotingtest.PullRequest("BPL", "BenchPullLoop", int32(q), int64(off), 32, subFlag, 0, "*")
			cmd.Opaque = 1
			f, err := cmd.AppendFrame(nil)
			require.NoError(b, err)
			frames[q] = append(frames[q], f)
		}
	}
	b.SetBytes(32 * 1024)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	n := max(b.N, conns)
	loopbackLoad(b, db.addr, conns, 4, n, func(conn, i int) []byte { return frames[conn][i%len(frames[conn])] })
	b.ReportMetric(float64(n*32)/time.Since(start).Seconds(), "msgs/s")
}
