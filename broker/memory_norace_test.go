//go:build linux && !race

package broker

// Memory under big frames (issue 14 item 3). The broker runs as a child process (this test
// binary re-executed, crash_linux_test.go) so that /proc/<pid>/status measures the broker
// alone. Throughout the run it holds 2,000 idle connections, 200 connections that drip valid
// frames a byte at a time, and a well-behaved client that sends and pulls back its messages.
// On top of that, part by part and then all at once, 16 connections per part send
//
//   - SEND_MESSAGE_V2 frames with 5 MiB bodies (over maxMessageSize: MESSAGE_ILLEGAL),
//   - requests with 4 MiB remarks,
//   - SEND_MESSAGE_V2 frames with a 3 MiB extFields value (the topic),
//   - SEND_MESSAGE_V2 frames with 100,000 extFields entries,
//
// each connection `memoryRounds` frames one after the other, waiting for every answer.
// During each part a second well-behaved client sends a valid message of maxMessageSize
// (4 MiB), which has to wait its turn in the request budget with the attack's frames.
// Asserted: the peak RSS (VmHWM, reset before each part through clear_refs) stays under
// 200 MiB in every part, every big frame is answered (backpressure delays them, nothing
// drops them), every send of the well-behaved clients succeeds (the 4 MiB ones later, not
// refused), and every drip connection is answered. The figures go to the log and to
// BENCHMARKS.md ("Memory").
//
// Not under -race: the race detector's shadow memory multiplies RSS, so VmHWM would say
// nothing about the broker.

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// memoryBigTopic takes the 4 MiB messages of the second well-behaved client (apart from
// goodTopic, whose client pulls each of its messages back at the offset it was given).
const memoryBigTopic = "MemoryBigT"

const (
	memoryIdleConns   = 2000
	memoryDripConns   = 200
	memoryAttackConns = 16 // per part
	memoryRounds      = 3  // frames per attack connection
	memoryDripEvery   = 25 * time.Millisecond
	memoryPeakMaxMiB  = 200
)

// procMemory is a process's resident set from /proc/<pid>/status. RssFile is the part that
// is file pages (the binary, the mapped CommitLog, ConsumeQueue and IndexFile pages).
type procMemory struct{ rssKiB, hwmKiB, fileKiB int64 }

func (m procMemory) String() string {
	return fmt.Sprintf("VmRSS %d MiB, VmHWM %d MiB, RssFile %d MiB", m.rssKiB>>10, m.hwmKiB>>10, m.fileKiB>>10)
}

// readProcMemory reads VmRSS and VmHWM of pid.
func readProcMemory(pid int) (procMemory, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return procMemory{}, err
	}
	defer f.Close()
	var m procMemory
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM" && key != "RssFile") {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return procMemory{}, fmt.Errorf("%s: %q: %w", key, rest, err)
		}
		switch key {
		case "VmRSS":
			m.rssKiB = kib
		case "VmHWM":
			m.hwmKiB = kib
		default:
			m.fileKiB = kib
		}
	}
	if err := sc.Err(); err != nil {
		return procMemory{}, err
	}
	if m.rssKiB == 0 || m.hwmKiB == 0 {
		return procMemory{}, errors.New("no VmRSS/VmHWM in /proc/<pid>/status")
	}
	return m, nil
}

// resetPeak sets pid's VmHWM back to its current RSS (proc(5): clear_refs value 5).
func resetPeak(pid int) error {
	return os.WriteFile("/proc/"+strconv.Itoa(pid)+"/clear_refs", []byte("5"), 0)
}

func memoryChildConf(dir, engine string) []string {
	return []string{
		"brokerClusterName=MemoryCluster",
		"brokerName=memory-broker",
		"brokerIP1=127.0.0.1",
		"listenPort=0",
		"namesrvEmbedded=false",
		"storePathRootDir=" + dir,
		"mappedFileSizeCommitLog=" + strconv.Itoa(64<<20),
		"maxMessageSize=" + strconv.Itoa(4<<20), // RocketMQ's default: 5 MiB bodies are illegal
		"maxConnections=" + strconv.Itoa(memoryIdleConns+memoryDripConns+8*memoryAttackConns+100),
		"transientStorePoolPinned=false",
		"netEngine=" + engine,
	}
}

// memoryPart is one kind of big frame.
type memoryPart struct {
	name  string
	frame func(opaque int32) []byte
}

func memoryParts() []memoryPart {
	encode := func(cmd *codec.RemotingCommand, opaque int32) []byte {
		cmd.Opaque = opaque
		b, err := cmd.AppendFrame(nil)
		if err != nil {
			panic(err)
		}
		return b
	}
	body5MiB := make([]byte, 5<<20)
	remark4MiB := strings.Repeat("r", 4<<20)
	topic3MiB := strings.Repeat("T", 3<<20)
	return []memoryPart{
		{"16 x 5 MiB SEND bodies", func(o int32) []byte { return encode(sendV2(hostileTopic, 0, body5MiB, ""), o) }},
		{"16 x 4 MiB remarks", func(o int32) []byte {
			cmd := codec.NewRequest(codec.RequestGetMaxOffset, map[string]string{"topic": hostileTopic, "queueId": "0"}, nil)
			cmd.Remark = remark4MiB
			return encode(cmd, o)
		}},
		{"16 x 3 MiB extField values", func(o int32) []byte { return encode(sendV2(topic3MiB, 0, []byte("x"), ""), o) }},
		{"16 x 100,000 extFields", func(o int32) []byte { return hugeExtFieldsFrame(100_000, o) }},
	}
}

// attack runs part on n connections, rounds frames each, and reports the first failure.
func (p memoryPart) attack(addr string, n, rounds int, answered *atomic.Int64) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := remotingtest.Open(addr)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close()
			for r := range rounds {
				opaque := int32(1000 + r)
				if err := conn.TryWrite(p.frame(opaque)); err != nil {
					errs <- fmt.Errorf("%s conn %d round %d: write: %w", p.name, i, r, err)
					return
				}
				resp, err := conn.TryNext(120 * time.Second)
				if err != nil {
					errs <- fmt.Errorf("%s conn %d round %d: no answer: %w", p.name, i, r, err)
					return
				}
				if resp.Opaque != opaque {
					errs <- fmt.Errorf("%s conn %d round %d: answer to opaque %d", p.name, i, r, resp.Opaque)
					return
				}
				answered.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// dripper writes valid frames a byte at a time to many connections, one byte to each every
// tick, and reads their answers.
type dripper struct {
	conns    []*remotingtest.Conn
	answered atomic.Int64
	mu       sync.Mutex
	failures []string
	readers  sync.WaitGroup
}

func (d *dripper) fail(format string, args ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.failures) < 20 {
		d.failures = append(d.failures, fmt.Sprintf(format, args...))
	}
}

func (d *dripper) run(stop <-chan struct{}, done *sync.WaitGroup) {
	defer done.Done()
	frames := make([][]byte, len(d.conns))
	pos := make([]int, len(d.conns))
	next := func(i int) {
		cmd := sendV2(hostileTopic, int32(i%4), []byte("dripped "+strconv.Itoa(i)), "")
		cmd.Opaque = int32(i)
		frames[i], _ = cmd.AppendFrame(nil)
		pos[i] = 0
	}
	for i := range d.conns {
		next(i)
	}
	tick := time.NewTicker(memoryDripEvery) // the attack itself: a byte per connection per tick
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		for i, c := range d.conns {
			if err := c.TryWrite(frames[i][pos[i] : pos[i]+1]); err != nil {
				d.fail("drip %d: write: %v", i, err)
				return
			}
			if pos[i]++; pos[i] == len(frames[i]) {
				next(i)
			}
		}
	}
}

func (d *dripper) read(i int) {
	defer d.readers.Done()
	for {
		resp, err := d.conns[i].TryNext(remotingtest.Timeout)
		if errors.Is(err, remotingtest.ErrTimeout) {
			continue // a frame takes its time at a byte per tick
		}
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				d.fail("drip %d: read: %v", i, err)
			}
			return
		}
		if resp.Code != int32(codec.ResponseSuccess) || resp.Opaque != int32(i) {
			d.fail("drip %d: answer %+v", i, resp)
			return
		}
		d.answered.Add(1)
	}
}

func TestMemoryUnderBigFrames(t *testing.T) {
	if testing.Short() {
		t.Skip("thousands of connections and hundreds of MiB over loopback")
	}
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if need := uint64(memoryIdleConns + memoryDripConns + 8*memoryAttackConns + 500); lim.Cur < need {
		t.Skipf("open-file limit %d < %d", lim.Cur, need)
	}
	for _, engine := range []string{"gnet", "std"} {
		t.Run(engine, func(t *testing.T) { testMemoryUnderBigFrames(t, engine) })
	}
}

func testMemoryUnderBigFrames(t *testing.T, engine string) {
	child := startCrashChild(t, memoryChildConf(t.TempDir(), engine))
	pid := child.Pid()
	if err := resetPeak(pid); err != nil {
		t.Skipf("cannot reset the peak RSS of the broker (clear_refs): %v", err)
	}
	admin := remotingtest.Dial(t, child.Addr)
	relCreateTopic(t, admin, hostileTopic, 4)
	relCreateTopic(t, admin, goodTopic, 4)
	relCreateTopic(t, admin, memoryBigTopic, 1)
	bigClient := remotingtest.Dial(t, child.Addr)
	bigBody := make([]byte, 4<<20) // maxMessageSize: the largest legal body
	started, err := readProcMemory(pid)
	require.NoError(t, err)

	// The background: idle connections, drip connections, a well-behaved client.
	idle := make([]net.Conn, 0, memoryIdleConns)
	closeIdle := func() {
		for _, c := range idle {
			_ = c.Close()
		}
		idle = nil
	}
	defer closeIdle()
	for range memoryIdleConns {
		c, err := net.Dial("tcp", child.Addr)
		require.NoError(t, err)
		idle = append(idle, c)
	}
	drip := &dripper{}
	for i := range memoryDripConns {
		c, err := remotingtest.Open(child.Addr)
		require.NoError(t, err)
		drip.conns = append(drip.conns, c)
		drip.readers.Add(1)
		go drip.read(i)
	}
	stop := make(chan struct{})
	var background sync.WaitGroup
	background.Add(2)
	go drip.run(stop, &background)
	var good goodClient
	go good.run(child.Addr, 0, stop, &background)
	stopped := false
	stopBackground := func() {
		if !stopped {
			stopped = true
			close(stop)
			background.Wait()
			for _, c := range drip.conns {
				_ = c.Close()
			}
			drip.readers.Wait()
		}
	}
	defer stopBackground()
	testutil.EventuallyWithin(t, 60*time.Second, "well-behaved client started",
		func() bool { return good.ops.Load() >= 20 })
	background0, err := readProcMemory(pid)
	require.NoError(t, err)
	t.Logf("%s: %-30s %v", engine, "background (idle, drip, good)", background0)

	type row struct {
		name string
		peak procMemory
	}
	var rows []row
	var answered atomic.Int64
	var bigSends []time.Duration
	measure := func(name string, run func() error) {
		t.Helper()
		require.NoError(t, resetPeak(pid))
		opsBefore := good.ops.Load()
		start := time.Now()
		bigDone := make(chan error, 1)
		go func() { // a 4 MiB message among the attack's frames
			resp, err := bigClient.TryCall(sendV2(memoryBigTopic, 0, bigBody, ""), 120*time.Second)
			if err == nil && resp.Code != int32(codec.ResponseSuccess) {
				err = fmt.Errorf("code %d: %s", resp.Code, resp.Remark)
			}
			bigSends = append(bigSends, time.Since(start))
			bigDone <- err
		}()
		require.NoError(t, run(), name)
		require.NoError(t, <-bigDone, "%s: 4 MiB send of the well-behaved client", name)
		// The well-behaved client kept going meanwhile (or at least right after).
		testutil.EventuallyWithin(t, 60*time.Second, fmt.Sprintf("%s: well-behaved client progresses", name),
			func() bool { return good.ops.Load() > opsBefore })
		m, err := readProcMemory(pid)
		require.NoError(t, err)
		rows = append(rows, row{name, m})
		t.Logf("%s: %-30s peak %4d MiB (%v), took %v", engine, name, m.hwmKiB>>10, m, time.Since(start).Round(time.Millisecond))
	}
	parts := memoryParts()
	for _, p := range parts {
		measure(p.name, func() error { return p.attack(child.Addr, memoryAttackConns, memoryRounds, &answered) })
	}
	measure("all four at once", func() error {
		errs := make(chan error, len(parts))
		for _, p := range parts {
			go func() { errs <- p.attack(child.Addr, memoryAttackConns, memoryRounds, &answered) }()
		}
		var first error
		for range parts {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		return first
	})
	// Every drip connection finishes a frame (a few seconds at a byte per tick).
	testutil.EventuallyWithin(t, 60*time.Second, fmt.Sprintf("drip connections answered (%d)", drip.answered.Load()),
		func() bool { return drip.answered.Load() >= memoryDripConns })
	stopBackground()
	closeIdle()
	after, err := readProcMemory(pid)
	require.NoError(t, err)
	child.Terminate(t)

	good.mu.Lock()
	goodErrs, goodOps := good.errs, len(good.latencies)
	good.mu.Unlock()
	require.Empty(t, goodErrs, "well-behaved client")
	require.Empty(t, drip.failures, "drip connections")
	require.Equal(t, int64(2*len(parts)*memoryAttackConns*memoryRounds), answered.Load(), "big frames answered")
	t.Logf("%s: started %v; after the run, connections closed: %v; well-behaved client: %d send+pull round trips; "+
		"4 MiB sends answered after %v; drip connections: %d frames answered", engine, started, after, goodOps,
		bigSends, drip.answered.Load())
	for _, r := range rows {
		require.Less(t, r.peak.hwmKiB>>10, int64(memoryPeakMaxMiB), "%s: peak RSS during %q", engine, r.name)
	}
}
