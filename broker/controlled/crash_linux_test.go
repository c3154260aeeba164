//go:build linux

package controlled

// Crash testing of controller mode: a controller in this test process and two brokers of one group as
// child processes (this test binary re-executed), killed with SIGKILL under SYNC load.
//
// TestCrashControllerFailover: each round waits until the group has a master and both replicas are in
// its SyncStateSet, runs producers that send with WAIT=true on several connections, kills the master
// with SIGKILL after a random number of acknowledgements, and then
//   - measures the failover: from the kill to the first SEND_OK from the other replica (the new master
//     the controller elects), sending there as a client that asked the name servers afresh would;
//   - requires every message acknowledged so far, in every round, readable from the new master at the
//     CommitLog offset its msgId names, with its exact body (nothing acknowledged is lost; an
//     acknowledgement waited for every replica of the SyncStateSet);
//   - restarts the killed replica on its store: it comes back as a slave, truncates a tail nobody
//     acknowledged when it has one, and catches up, so that the next round can kill the other.
//
// Rounds alternate ASYNC_FLUSH and SYNC_FLUSH, with the transient pool every other pair. At the end both
// stop cleanly and their CommitLogs must be byte-identical. 2 rounds in `make test`; RINGMQ_CRASH_ROUNDS=N
// and RINGMQ_CRASH_SEED=S as for the other crash tests (`make crash-test`).

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/childproc"
	"github.com/ringmq/ringmq/internal/launch"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

const (
	childEnv  = "RINGMQ_CONTROLLED_CHILD_CONF"
	roundsEnv = "RINGMQ_CRASH_ROUNDS"
	seedEnv   = "RINGMQ_CRASH_SEED"
)

// The test binary re-executed with childEnv set runs a controller-mode broker the way mqbroker does and
// never reaches the tests: "READY" once its first broker serves, "STOPPED" after a clean stop.
func init() {
	if conf, ok := os.LookupEnv(childEnv); ok {
		os.Exit(childMain(conf))
	}
}

func childMain(conf string) int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM)
	cfg := broker.DefaultConfig()
	for i, line := range strings.Split(conf, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			if _, err := cfg.Set(k, v, i+1); err != nil {
				fmt.Fprintln(os.Stderr, "child: config:", err)
				return 2
			}
		}
	}
	logger := newChildLogger()
	sup, err := New(cfg, broker.Deps{Logger: logger}, launch.New)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	select {
	case <-sup.Started():
		fmt.Println("READY", cfg.ListenPort)
	case err := <-done:
		fmt.Fprintln(os.Stderr, "child: Run:", err)
		cancel()
		return 1
	}
	<-signals
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "child: Run:", err)
		return 1
	}
	fmt.Println("STOPPED")
	return 0
}

// child is one broker process (internal/childproc).
type child = childproc.Child

func startChild(t *testing.T, conf []string) *child {
	t.Helper()
	return childproc.Start(t, childEnv, conf)
}

// childConf is a replica's broker.conf: controller mode, fixed ports, a small CommitLog.
func childConf(cfg broker.Config, flushDiskType string, transient bool) []string {
	return []string{
		"brokerClusterName=" + cfg.BrokerClusterName,
		"brokerName=" + cfg.BrokerName,
		"brokerIP1=127.0.0.1",
		"listenPort=" + strconv.Itoa(cfg.ListenPort),
		"haListenPort=" + strconv.Itoa(cfg.HAListenPort),
		"fastListenPort=0",
		"namesrvEmbedded=false",
		"metricsAddr=off",
		"storePathRootDir=" + cfg.StorePathRootDir,
		"mappedFileSizeCommitLog=" + strconv.Itoa(1<<20),
		"mappedFileSizeConsumeQueue=20480",
		"maxMessageSize=65536",
		"maxHashSlotNum=1024",
		"maxIndexNum=4096",
		"flushDiskType=" + flushDiskType,
		"transientStorePoolEnable=" + strconv.FormatBool(transient),
		"transientStorePoolSize=3",
		"transientStorePoolPinned=false",
		"syncFlushTimeout=60000",
		"slaveTimeout=60000", // a timeout is not what this test is about
		"netEventLoops=1",
		"maxConnections=1000",
		"enableControllerMode=true",
		"controllerAddr=" + cfg.ControllerAddr,
		// brokerHeartbeatInterval and controllerHeartBeatTimeoutMills keep their defaults (1 s, 10 s):
		// the failover figures are those of a default setup. The SIGSTOP phase needs a slave to
		// leave the SyncStateSet sooner than the default 15 s.
		"haMaxTimeSlaveNotCatchup=3000",
	}
}

// groupState is the controller's view: the master's id and address, and the SyncStateSet's size.
func groupState(t *testing.T, ctrl, brokerName string) (masterID int64, masterAddr string, syncSet []int64) {
	t.Helper()
	c, err := remotingtest.Open(ctrl)
	if err != nil {
		return -1, "", nil
	}
	defer c.Close()
	resp, err := c.TryCall(codec.NewRequest(codec.RequestControllerGetReplicaInfo, map[string]string{"brokerName": brokerName}, nil), 5*time.Second)
	if err != nil || resp.Code != int32(codec.ResponseSuccess) {
		return -1, "", nil
	}
	var h codec.GetReplicaInfoResponseHeader
	if h.Decode(resp.ExtFields) != nil {
		return -1, "", nil
	}
	if set, err := codec.DecodeSyncStateSet(resp.Body); err == nil {
		syncSet = set.SyncStateSet
	}
	return h.MasterBrokerID.Or(-1), h.MasterAddress, syncSet
}

// load sends WAIT=true messages on several connections until stopped, recording every acknowledgement.
type load struct {
	mu    sync.Mutex
	acks  []acked
	n     atomic.Int64
	stop  chan struct{}
	wg    sync.WaitGroup
	codes sync.Map // unexpected answer codes
}

func startLoad(addr, prefix string, conns int) *load {
	l := &load{stop: make(chan struct{})}
	for k := range conns {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			c, err := remotingtest.Open(addr)
			if err != nil {
				return
			}
			defer c.Close()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				pad := (i * 37) % 900
				if i%50 == 49 {
					// Larger than a transfer frame (haTransferBatchSize, 32 KiB): a kill can leave the
					// slave with the first bytes of it, which it must cut when it becomes master.
					pad = 48 << 10
				}
				body := fmt.Sprintf("%s-c%d-%05d-%s", prefix, k, i, strings.Repeat("x", pad))
				h := codec.SendMessageRequestHeader{ProducerGroup: "PG", Topic: "FailoverTopic", DefaultTopic: "TBW102",
					DefaultTopicQueueNums: 2, QueueID: int32(i % 2), BornTimestamp: time.Now().UnixMilli(),
					Properties: string(codec.AppendProperty(nil, codec.PropertyWaitStoreMsgOK, "true"))}
				ext := map[string]string{}
				h.EncodeV2(ext)
				resp, err := c.TryCall(codec.NewRequest(codec.RequestSendMessageV2, ext, []byte(body)), 60*time.Second)
				if err != nil {
					return // the broker is gone
				}
				if resp.Code != int32(codec.ResponseSuccess) {
					l.codes.Store(resp.Code, resp.Remark)
					continue
				}
				var rh codec.SendMessageResponseHeader
				if rh.Decode(resp.ExtFields) != nil {
					continue
				}
				_, phys, err := codec.DecodeOffsetMsgID(rh.MsgID)
				if err != nil {
					continue
				}
				l.mu.Lock()
				l.acks = append(l.acks, acked{body: body, phys: phys})
				l.mu.Unlock()
				l.n.Add(1)
			}
		}()
	}
	return l
}

func (l *load) halt() []acked {
	close(l.stop)
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acks)
}

// probe sends one WAIT=true message to addr and reports whether it was answered SUCCESS.
func probe(addr string) bool {
	c, err := remotingtest.Open(addr)
	if err != nil {
		return false
	}
	defer c.Close()
	h := codec.SendMessageRequestHeader{ProducerGroup: "PG", Topic: "FailoverTopic", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 2, BornTimestamp: time.Now().UnixMilli(),
		Properties: string(codec.AppendProperty(nil, codec.PropertyWaitStoreMsgOK, "true"))}
	ext := map[string]string{}
	h.EncodeV2(ext)
	resp, err := c.TryCall(codec.NewRequest(codec.RequestSendMessageV2, ext, []byte("probe")), 10*time.Second)
	return err == nil && resp.Code == int32(codec.ResponseSuccess)
}

func TestCrashControllerFailover(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	rounds := 2
	if s := os.Getenv(roundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err)
		rounds = n
	}
	seed := rand.Uint64()
	if s := os.Getenv(seedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		seed = v
	}
	t.Logf("seed %d (replay with %s=%d)", seed, seedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 23))

	ctrl := startController(t)
	cfgs := [2]broker.Config{replicaConfig(t, ctrl), replicaConfig(t, ctrl)}
	var kids [2]*child
	kids[0] = startChild(t, childConf(cfgs[0], "ASYNC_FLUSH", false))
	kids[1] = startChild(t, childConf(cfgs[1], "ASYNC_FLUSH", false))
	addrOf := func(i int) string { return "127.0.0.1:" + strconv.Itoa(cfgs[i].ListenPort) }
	indexOf := func(addr string) int {
		for i := range cfgs {
			if addrOf(i) == addr {
				return i
			}
		}
		return -1
	}
	// The group is ready when it has a master, both replicas are in sync, and the master takes a send.
	ready := func(what string) int {
		var m int
		testutil.EventuallyWithin(t, 2*time.Minute, what, func() bool {
			id, addr, set := groupState(t, ctrl, cfgs[0].BrokerName)
			m = indexOf(addr)
			return id >= 0 && m >= 0 && len(set) == 2 && probe(addr)
		})
		return m
	}
	var all []acked
	var failovers []time.Duration
	for round := range rounds {
		m := ready(fmt.Sprintf("round %d: a master with both replicas in sync", round))
		other := 1 - m
		target := int64(50 + rng.IntN(400))
		l := startLoad(addrOf(m), fmt.Sprintf("r%03d", round), 4)
		testutil.EventuallyWithin(t, 2*time.Minute, "acknowledgements", func() bool { return l.n.Load() >= target })
		kids[m].Kill(t)
		killed := time.Now()
		acks := l.halt()
		l.codes.Range(func(k, v any) bool {
			t.Errorf("round %d: unexpected answer %v (%v)", round, k, v)
			return true
		})
		// The first SEND_OK from the other replica: the controller saw the master's connection close,
		// elected the replica in sync, and its supervisor started it as master.
		testutil.EventuallyWithin(t, 2*time.Minute, "the new master takes a send", func() bool { return probe(addrOf(other)) })
		failovers = append(failovers, time.Since(killed))
		all = append(all, acks...)
		requireHolds(t, addrOf(other), all)
		t.Logf("round %d: killed the master (%s) after %d acknowledgements; the other replica took a send %v later; "+
			"%d acknowledged in all, every one on the new master", round, addrOf(m), len(acks), failovers[round], len(all))

		// The killed replica comes back on its store, in the next round's flush and append mode.
		flushDiskType := []string{"ASYNC_FLUSH", "SYNC_FLUSH"}[(round+1)%2]
		kids[m] = startChild(t, childConf(cfgs[m], flushDiskType, (round+1)%4 >= 2))
	}
	m := ready("the last round's killed replica in sync")

	// A slave that stops answering (SIGSTOP: a partitioned or frozen replica) leaves the SyncStateSet
	// after haMaxTimeSlaveNotCatchup, and sends go on without it; resumed, it catches up and rejoins.
	slave := 1 - m
	kids[slave].Signal(t, syscall.SIGSTOP)
	stopped := time.Now()
	testutil.EventuallyWithin(t, 2*time.Minute, "the SyncStateSet shrinks to the master", func() bool {
		_, _, set := groupState(t, ctrl, cfgs[0].BrokerName)
		return len(set) == 1
	})
	shrunk := time.Since(stopped)
	testutil.EventuallyWithin(t, 2*time.Minute, "sends go on without the stopped slave", func() bool { return probe(addrOf(m)) })
	during := sendSync(t, addrOf(m), "while-stopped", 20)
	kids[slave].Signal(t, syscall.SIGCONT)
	testutil.EventuallyWithin(t, 2*time.Minute, "the resumed slave rejoins", func() bool {
		_, _, set := groupState(t, ctrl, cfgs[0].BrokerName)
		return len(set) == 2
	})
	all = append(all, during...)
	requireHolds(t, addrOf(slave), all)
	t.Logf("SIGSTOP of the slave: out of the SyncStateSet after %v (haMaxTimeSlaveNotCatchup 3 s), sends went on; "+
		"after SIGCONT it caught up and rejoined", shrunk)

	for i := range kids {
		kids[i].Terminate(t)
	}
	a, b := commitLog(t, cfgs[0].StorePathRootDir), commitLog(t, cfgs[1].StorePathRootDir)
	require.Equal(t, len(a), len(b), "the replicas' CommitLogs end at the same offset")
	require.True(t, bytes.Equal(a, b), "the replicas' CommitLogs are byte-identical")

	sorted := slices.Clone(failovers)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	t.Logf("%d rounds, %d acknowledged messages, none lost; failover (kill -> first SEND_OK from the new master): "+
		"median %v, max %v", rounds, len(all), sorted[len(sorted)/2], sorted[len(sorted)-1])
}

// commitLog reads a stopped replica's CommitLog files in order, up to the end of their last record.
func commitLog(t *testing.T, root string) []byte {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, "commitlog", "*"))
	require.NoError(t, err)
	sort.Strings(names)
	var out []byte
	for _, n := range names {
		data, err := os.ReadFile(n)
		require.NoError(t, err)
		pos := 0
		for pos+8 <= len(data) {
			size, magic, _ := codec.PeekRecordHeader(data[pos:])
			if size <= 0 || magic != codec.MagicCodeV1 && magic != codec.MagicCodeV2 {
				break
			}
			pos += int(size)
		}
		out = append(out, data[:pos]...)
	}
	return out
}

// newChildLogger logs warnings and errors of a broker child to its stderr (the test prints it on failure).
func newChildLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}
