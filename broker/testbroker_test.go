package broker

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/namesrv"
	"github.com/ringmq/ringmq/store"
)

// The shared end-to-end harness: a real broker (file store on t.TempDir(), gnet server,
// embedded name server) on 127.0.0.1 with ports the kernel picked.
//
//	tb := startTestBroker(t, func(c *Config) { c.FlushDiskType = store.SyncFlush })
//	// clients use tb.NamesrvAddr (name server) or tb.BrokerAddr (direct)
//	tb.restart(t) // same store directory, same ports
//
// Shutdown runs in t.Cleanup. Set RINGMQ_TEST_LOG=debug|info to see the broker's log in the
// test output (default: warnings and errors only).
//
// restart caveat: netio's gnet listener does not set SO_REUSEADDR (yet), so a port whose
// server side closed connections sits in TIME_WAIT and cannot be bound again for a minute.
// Shut client connections down (clients close first) before restart.

// testBroker is one broker started by startTestBroker.
type testBroker struct {
	b           *Broker
	cfg         Config // as started: ports resolved, store directory fixed
	NamesrvAddr string // "127.0.0.1:port" of the embedded name server
	BrokerAddr  string // "127.0.0.1:port" the broker listens on and registers
	configFile  string // Deps.ConfigFile (UPDATE_BROKER_CONFIG writes it); set before start
}

// testBrokerConfig is the harness's base configuration: small files, short periods,
// loopback only, ports picked at start.
func testBrokerConfig(t testing.TB) Config {
	cfg := DefaultConfig()
	cfg.BrokerClusterName = "TestCluster"
	cfg.BrokerName = "broker-test"
	cfg.BrokerIP1 = "127.0.0.1"
	// Ports of a block of four reserved for this broker below the kernel's ephemeral range
	// (testPortBlock): listenPort base+2, so that listenPort − 2 (a test that turns the fast port
	// on) and listenPort + 1 (haListenPort 0, derived) are this broker's too; the embedded name
	// server base+1. No fast port unless a test sets it.
	base := testPortBlock(t)
	cfg.ListenPort = base + 2
	cfg.FastListenPort = 0
	cfg.NamesrvEmbedded = true
	cfg.NamesrvListenPort = base + 1
	cfg.NamesrvAddr = ""
	cfg.MetricsAddr = "off" // nothing in package broker serves it; a test that wants the endpoint uses port 0
	cfg.StorePathRootDir = t.TempDir()
	cfg.MappedFileSizeCommitLog = 4 << 20
	cfg.MappedFileSizeConsumeQueue = 1024 * 20 // 20 KiB: 1024 entries per file
	cfg.MaxMessageSize = 1 << 20
	cfg.MaxHashSlotNum = 1024
	cfg.MaxIndexNum = 4096
	cfg.RegisterNameServerPeriod = 2 * time.Second
	cfg.NetEventLoops = 2
	cfg.MaxConnections = 1000 // below the usual open-file limit (netio warns otherwise)
	return cfg
}

// flushDiskTypeOf is the FlushDiskType spelled s, for test tables that name modes as
// broker.conf does.
func flushDiskTypeOf(s string) store.FlushDiskType {
	var t store.FlushDiskType
	if err := t.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return t
}

// brokerRoleOf is the BrokerRole spelled s (ASYNC_MASTER, SYNC_MASTER, SLAVE).
func brokerRoleOf(s string) BrokerRole {
	var r BrokerRole
	if err := r.UnmarshalText([]byte(s)); err != nil {
		panic(err)
	}
	return r
}

// storeModes are the store modes a feature must work in (issue 14): appends into the mapped file or
// into the transient pool's buffers, each under ASYNC_FLUSH and SYNC_FLUSH. Run a feature's end-to-end
// test under each: a bug that hides in one mode is a lost message in production.
var storeModes = []struct {
	name  string
	apply func(*Config)
}{
	{"mmap-async", func(c *Config) { c.FlushDiskType = store.AsyncFlush }},
	{"mmap-sync", func(c *Config) { c.FlushDiskType = store.SyncFlush }},
	{"pool-async", func(c *Config) { c.FlushDiskType = store.AsyncFlush; withTransientPool(c) }},
	{"pool-sync", func(c *Config) { c.FlushDiskType = store.SyncFlush; withTransientPool(c) }},
}

// withTransientPool turns the transient pool on with a few unpinned buffers (RLIMIT_MEMLOCK is small
// for unprivileged runs). Small records are committed to the file once a second only (RocketMQ: every
// 200 ms), so that a feature that reads only committed bytes where it should see every acknowledged
// one fails here every time instead of now and then.
func withTransientPool(c *Config) {
	c.TransientStorePoolEnable = true
	c.TransientStorePoolSize = 3
	c.TransientStorePoolPinned = false
	c.CommitCommitLogThoroughInterval = time.Second
}

// testLogger writes to the test's output at the level RINGMQ_TEST_LOG names.
func testLogger(t testing.TB) *slog.Logger { return logtest.ForTest(t) }

// startTestBroker starts a broker with testBrokerConfig, changed by mutate (may be nil).
// It fails the test if the broker does not start.
func startTestBroker(t testing.TB, mutate func(*Config)) *testBroker {
	t.Helper()
	cfg := testBrokerConfig(t)
	if mutate != nil {
		mutate(&cfg)
	}
	tb := &testBroker{cfg: cfg}
	tb.start(t)
	t.Cleanup(func() { tb.shutdown(t) })
	return tb
}

func (tb *testBroker) start(t testing.TB) {
	t.Helper()
	b, err := New(tb.cfg, Deps{Logger: testLogger(t), Namesrv: testNamesrv, ConfigFile: tb.configFile})
	require.NoError(t, err, "broker.New")
	require.NoError(t, b.Start(), "broker.Start")
	tb.b = b
	// Pin the ports the kernel picked, so that restart comes back on the same ones.
	tb.cfg.ListenPort = b.Config().ListenPort
	tb.cfg.FastListenPort = b.Config().FastListenPort // off stays off: listenPort − 2 is not ours
	tb.cfg.HAListenPort = b.Config().HAListenPort     // a picked HA port, not listenPort + 1
	tb.BrokerAddr = b.BrokerAddr()
	tb.NamesrvAddr = b.EmbeddedNamesrvAddr()
	if tb.NamesrvAddr != "" {
		_, port, err := splitHostPortNumber(tb.NamesrvAddr)
		require.NoError(t, err)
		tb.cfg.NamesrvListenPort = port
	}
}

func (tb *testBroker) shutdown(t testing.TB) {
	t.Helper()
	if tb.b == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := tb.b.Shutdown(ctx)
	tb.b = nil
	require.NoError(t, err, "broker.Shutdown")
}

// restart shuts the broker down cleanly and starts a new one on the same store directory
// and the same ports (broker and embedded name server).
func (tb *testBroker) restart(t testing.TB) {
	t.Helper()
	tb.shutdown(t)
	tb.start(t)
}

// testPorts hands out blocks of four loopback ports below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range starts at 32768 by default). A test broker restarts on the ports it
// first bound (restart, the crash tests); a port from the ephemeral range can be taken meanwhile by
// any other test's outgoing connection or port-0 listener (a CI run failed that way: "bind: address
// already in use"), one below it only by another block handed out here, which never repeats
// within a test binary. Each block is checked free when handed out.
var testPorts struct {
	sync.Mutex
	next int
}

const (
	testPortLow  = 20000
	testPortHigh = 32760
)

// testPortBlock returns base, with base .. base+3 free loopback ports handed out to no one else
// in this process, or fails the test.
func testPortBlock(t testing.TB) int {
	t.Helper()
	testPorts.Lock()
	defer testPorts.Unlock()
	if testPorts.next == 0 {
		// Another test binary of this module (the race and plain passes run one after the other)
		// may hold blocks too: start somewhere else each time.
		testPorts.next = testPortLow + 4*rand.IntN((testPortHigh-testPortLow)/8)
	}
	for range (testPortHigh - testPortLow) / 4 {
		base := testPorts.next
		if testPorts.next += 4; testPorts.next+4 > testPortHigh {
			testPorts.next = testPortLow
		}
		if blockFree(base) {
			return base
		}
	}
	t.Fatalf("no free block of four loopback ports in %d..%d", testPortLow, testPortHigh)
	return 0
}

func blockFree(base int) bool {
	var held []net.Listener
	defer func() {
		for _, ln := range held {
			_ = ln.Close()
		}
	}()
	for p := base; p < base+4; p++ {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return false
		}
		held = append(held, ln)
	}
	return true
}

// pickPort is a free loopback port other than avoid (a port just picked and released may come back),
// or the test fails. Helpers that pick listenPort pick haListenPort with it: listenPort + 1, the
// default, is often the next port the kernel hands another test.
func pickPort(t testing.TB, avoid ...int) int {
	t.Helper()
	for {
		port, err := pickListenPort("127.0.0.1")
		require.NoError(t, err)
		if !slices.Contains(avoid, port) {
			return port
		}
	}
}

// pickPortBeforeFree is a free loopback port whose next port is free too: for a broker that derives
// haListenPort (listenPort + 1) and binds it. Up to 100 tries, or the test fails.
func pickPortBeforeFree(t testing.TB) int {
	t.Helper()
	for range 100 {
		port := pickPort(t)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+1)))
		if err == nil {
			require.NoError(t, ln.Close())
			return port
		}
	}
	t.Fatal("no free loopback port with a free next port")
	return 0
}

// splitHostPortNumber splits "host:port" and parses the port.
func splitHostPortNumber(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.Atoi(port)
	return host, n, err
}

// testNamesrv builds the embedded name server as launch.Namesrv does (package broker's tests cannot
// import package launch, which imports broker).
func testNamesrv(spec EmbeddedNamesrvSpec) (EmbeddedNamesrv, error) {
	ns, err := namesrv.NewEmbedded(spec.ListenAddr, spec.NetEngine, spec.KVConfigPath, spec.Logger, spec.Registerer)
	if err != nil {
		return nil, err
	}
	return ns, nil
}

// embeddedNamesrv is b's embedded name server as testNamesrv built it.
func embeddedNamesrv(b *Broker) *namesrv.Namesrv { return b.EmbeddedNamesrv().(*namesrv.Namesrv) }
