//go:build linux

package broker

// Crash testing of the whole broker (issue 8 item 1).
//
//   - TestCrashBrokerSIGKILL: the broker runs as a child process (this test binary
//     re-executed: see init below) under a producer load from the test over TCP. Producers
//     log every acknowledged send. At a random moment (after a random number of
//     acknowledgements) the child is killed with SIGKILL, restarted on the same store, and
//     everything is read back: every acknowledged message at its queue offset and CommitLog
//     offset with its exact body, queue offsets contiguous, every record's body CRC right,
//     each acknowledged message found through the IndexFile (QUERY_MESSAGE by key). The
//     next round loads the recovered broker again. The last round stops the broker with
//     SIGTERM under load (nothing acknowledged may be lost) and then checks the store's
//     files offline: every ConsumeQueue entry names a record of its topic, queue and queue
//     offset. The rounds alternate mmap and transient-pool appends. kill -9 keeps the page
//     cache, and the pool's buffer files on tmpfs (transientStorePoolDir), so ASYNC_FLUSH must
//     not lose anything acknowledged here either, with or without the pool; a round after a
//     pool round runs without it, so its recovery restores the pool's files with the pool off.
//   - TestCrashBrokerPowerLoss: the same load on an in-process broker whose store runs on
//     faultfs.FS. At a random moment CrashClone keeps only what was synced (on odd rounds
//     also a random half of the unsynced pages, as a kernel may have written them back), and
//     a broker started on the clone must hold every message acknowledged before the clone
//     under SYNC_FLUSH — under ASYNC_FLUSH every one that ended below the CommitLog's flushed
//     offset read just before the clone — with the same checks as above. The broker on the
//     clone then takes the next round's load.
//
// Rounds: 3 SIGKILL rounds under SYNC_FLUSH and 2 under ASYNC_FLUSH (plus the SIGTERM round
// each), and 2 power-loss rounds per flush type, by default. RINGMQ_CRASH_ROUNDS=N sets the
// number of SIGKILL and power-loss rounds (`make crash-test` runs 20); RINGMQ_CRASH_SEED=S
// replays a seed the log printed.

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/childproc"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
	"github.com/ringmq/ringmq/transientpool"
)

const (
	// crashChildEnv holds the child broker's configuration as broker.conf lines; its
	// presence turns this test binary into the broker (init below).
	crashChildEnv     = "RINGMQ_BROKER_CRASH_CHILD_CONF"
	crashRoundsEnv    = "RINGMQ_CRASH_ROUNDS"
	crashSeedEnv      = "RINGMQ_CRASH_SEED"
	crashCommitLogMiB = 1
)

var crashTopics = []string{"CrashA", "CrashB"}

// The test binary re-executed with crashChildEnv set runs a broker the way cmd/mqbroker
// does (New, Start, wait for SIGTERM, Shutdown) and never reaches the tests.
func init() {
	if conf, ok := os.LookupEnv(crashChildEnv); ok {
		os.Exit(crashChildMain(conf))
	}
}

// crashChildMain prints "READY <addr>" once the broker serves and "STOPPED" after a clean
// shutdown; it returns the exit status.
func crashChildMain(conf string) int {
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM)
	cfg := DefaultConfig()
	for i, line := range strings.Split(conf, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if _, err := cfg.Set(k, v, i+1); err != nil {
			fmt.Fprintln(os.Stderr, "crash child: config:", err)
			return 2
		}
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := New(cfg, Deps{Logger: logger, Namesrv: testNamesrv})
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: New:", err)
		return 1
	}
	if err := b.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "crash child: Start:", err)
		return 1
	}
	fmt.Printf("READY %s\n", b.Addr())
	<-signals
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "crash child: Shutdown:", err)
		return 1
	}
	fmt.Println("STOPPED")
	return 0
}

// crashRounds is RINGMQ_CRASH_ROUNDS, or def.
func crashRounds(t testing.TB, def int) int {
	if s := os.Getenv(crashRoundsEnv); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, crashRoundsEnv)
		require.Positive(t, n, crashRoundsEnv)
		return n
	}
	return def
}

// crashSeed is RINGMQ_CRASH_SEED, or a fresh one; it is logged for replay.
func crashSeed(t testing.TB) uint64 {
	seed := rand.Uint64()
	if s := os.Getenv(crashSeedEnv); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, crashSeedEnv)
		seed = v
	}
	t.Logf("seed %d (replay with %s=%d)", seed, crashSeedEnv, seed)
	return seed
}

// crashChild is one running child broker (internal/childproc).
type crashChild = childproc.Child

// startCrashChild starts the broker child with conf and waits for READY. A child killed with the
// transient pool leaves its buffer files on /dev/shm for the next start, as it should; the test
// removes them once its last child is gone (its cleanups run before this one).
func startCrashChild(t *testing.T, conf []string) *crashChild {
	t.Helper()
	for _, line := range conf {
		if root, ok := strings.CutPrefix(line, "storePathRootDir="); ok {
			dir := transientpool.DirFor("/dev/shm", filepath.Join(root, "commitlog"))
			t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
		}
	}
	return childproc.Start(t, crashChildEnv, conf)
}

// crashChildConf is the child's broker.conf.
func crashChildConf(dir string, port int, flushDiskType string, transientPool bool) []string {
	return []string{
		"brokerClusterName=CrashCluster",
		"brokerName=crash-broker",
		"brokerIP1=127.0.0.1",
		"listenPort=" + strconv.Itoa(port),
		"fastListenPort=0", // listenPort − 2 may be another test's picked port
		"namesrvEmbedded=false",
		"storePathRootDir=" + dir,
		"mappedFileSizeCommitLog=" + strconv.Itoa(crashCommitLogMiB<<20), // rounds roll files
		"mappedFileSizeConsumeQueue=20480",                               // 1024 entries per file
		"maxMessageSize=65536",
		"maxHashSlotNum=1024",
		"maxIndexNum=4096", // IndexFiles roll every ~2000 messages (KEYS + UNIQ_KEY)
		"flushDiskType=" + flushDiskType,
		"flushIntervalCommitLog=50",
		"flushIntervalConsumeQueue=20", // the checkpoint moves often, so a kill finds it anywhere
		// Under -race on a loaded machine 5 s could pass; a timeout is not what this test is about.
		"syncFlushTimeout=60000",
		"osPageCacheBusyTimeOutMills=60000",
		"transientStorePoolEnable=" + strconv.FormatBool(transientPool),
		"transientStorePoolSize=3",
		"transientStorePoolPinned=false", // RLIMIT_MEMLOCK is small for unprivileged runs
		"netEventLoops=2",
		"maxConnections=1000",
	}
}

// crashLoadConfig is one round's producer load.
func crashLoadConfig(addr string, round int, seed uint64) relLoadConfig {
	return relLoadConfig{addr: addr, topics: crashTopics, queues: 4, producers: 6, window: 8, maxPad: 2048,
		round: round, seed: seed + uint64(round)*7919, bigEvery: 97, bigPad: 60 << 10}
}

// crashVerify reads the whole store back through the broker at addr and checks every
// acknowledged send; indexAcks are also looked up by key. It returns the records read.
func crashVerify(t *testing.T, addr string, acks, indexAcks []relAck) int {
	t.Helper()
	c := remotingtest.Dial(t, addr)
	defer c.Close()
	n := relVerifyAcks(t, c, crashTopics, 4, acks)
	relVerifyIndex(t, c, indexAcks)
	return n
}

func TestCrashBrokerSIGKILL(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	for _, ft := range []struct {
		flushDiskType string
		rounds        int
	}{{"SYNC_FLUSH", 3}, {"ASYNC_FLUSH", 2}} {
		t.Run(ft.flushDiskType, func(t *testing.T) {
			testCrashSIGKILL(t, ft.flushDiskType, crashRounds(t, ft.rounds))
		})
	}
}

func testCrashSIGKILL(t *testing.T, flushDiskType string, rounds int) {
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	port, err := pickListenPort("127.0.0.1")
	require.NoError(t, err)

	var acked []relAck // every acknowledged send of every round
	var lastRound []relAck
	var stats struct{ stored, unanswered, busy int }
	runRound := func(round int, stop func(*crashChild)) {
		transient := round%2 == 1
		child := startCrashChild(t, append(crashChildConf(dir, port, flushDiskType, transient),
			"haListenPort="+strconv.Itoa(pickPort(t, port)))) // listenPort + 1 may be taken
		if round == 0 {
			c := remotingtest.Dial(t, child.Addr)
			for _, topic := range crashTopics {
				relCreateTopic(t, c, topic, 4)
			}
			c.Close()
		}
		// Recovery kept every message acknowledged so far.
		stats.stored = crashVerify(t, child.Addr, acked, lastRound)

		load := startRelLoad(crashLoadConfig(child.Addr, round, seed))
		target := int64(100 + rng.IntN(700))
		if !load.waitAcked(target, 2*time.Minute) {
			load.halt()
			_, codes, remarks, failures := load.result()
			t.Fatalf("round %d: %d of %d acknowledgements; codes %v %v, %d failures\nstderr:\n%s",
				round, load.acked.Load(), target, codes, remarks, failures, child.Stderr())
		}
		stop(child)
		load.halt()
		acks, codes, remarks, failures := load.result()
		for code := range codes {
			require.Failf(t, "unexpected answer", "round %d: code %d (%q) x%d", round, code, remarks[code], codes[code])
		}
		stats.unanswered += failures
		t.Logf("round %d (%s, transient pool %v): %d stored before, %d acknowledged, %d unanswered at the stop",
			round, flushDiskType, transient, stats.stored, len(acks), failures)
		acked = append(acked, acks...)
		lastRound = acks
	}
	for round := range rounds {
		runRound(round, func(c *crashChild) { c.Kill(t) })
	}
	// SIGTERM under load: a clean shutdown loses nothing acknowledged.
	runRound(rounds, func(c *crashChild) { c.Terminate(t) })
	child := startCrashChild(t, append(crashChildConf(dir, port, flushDiskType, false),
		"haListenPort="+strconv.Itoa(pickPort(t, port)))) // listenPort + 1 may be taken
	stored := crashVerify(t, child.Addr, acked, acked)
	c := remotingtest.Dial(t, child.Addr)
	want := relQueueCounts(t, c, crashTopics, 4)
	c.Close()
	child.Terminate(t)
	entries := relCheckStoreFiles(t, dir, crashCommitLogMiB<<20, want)
	require.Equal(t, stored, entries)
	t.Logf("%s: %d SIGKILL rounds + 1 SIGTERM round; %d acknowledged messages verified (body, offsets, index), "+
		"%d records stored, %d ConsumeQueue entries checked against the CommitLog, %d sends unanswered at the kills",
		flushDiskType, rounds, len(acked), stored, entries, stats.unanswered)
}

func TestCrashBrokerPowerLoss(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("long")
	}
	for _, ft := range []string{"SYNC_FLUSH", "ASYNC_FLUSH"} {
		t.Run(ft, func(t *testing.T) { testCrashPowerLoss(t, ft, crashRounds(t, 2)) })
	}
}

func testCrashPowerLoss(t *testing.T, flushDiskType string, rounds int) {
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 2))
	syncFlush := flushDiskType == "SYNC_FLUSH"
	port, err := pickListenPort("127.0.0.1")
	require.NoError(t, err)
	haPort := pickPort(t, port)
	mutate := func(dir string) func(*Config) {
		return func(c *Config) {
			c.ListenPort, c.HAListenPort = port, haPort
			c.StorePathRootDir = dir
			c.FlushDiskType = flushDiskTypeOf(flushDiskType)
			c.MappedFileSizeCommitLog = crashCommitLogMiB << 20
			c.MaxMessageSize = 64 << 10
			c.FlushIntervalCommitLog = 50 * time.Millisecond
			c.FlushIntervalConsumeQueue = 20 * time.Millisecond
			c.SyncFlushTimeout = time.Minute
			c.OSPageCacheBusyTimeout = time.Minute
		}
	}
	dir := t.TempDir()
	var survivors []relAck // acknowledged and required to be present
	var mayBeLost []relAck // acknowledged after the last flush before the latest power loss
	pastFlush, lost, records := 0, 0, 0
	for round := 0; round <= rounds; round++ {
		ffs := faultfs.New(store.NewOSFS(nil))
		rb := startRelBroker(t, mutate(dir), ffs)
		c := remotingtest.Dial(t, rb.addr)
		if round == 0 {
			for _, topic := range crashTopics {
				relCreateTopic(t, c, topic, 4)
			}
		}
		records = relVerifyAcks(t, c, crashTopics, 4, survivors)
		relVerifyIndex(t, c, survivors)
		if len(mayBeLost) > 0 {
			stored := relStoredKeys(t, c, crashTopics, 4)
			for _, a := range mayBeLost {
				if !stored[a.key] {
					lost++
				}
			}
			mayBeLost = nil
		}
		if round == rounds {
			want := relQueueCounts(t, c, crashTopics, 4)
			c.Close()
			require.NoError(t, rb.close())
			require.Equal(t, records, relCheckStoreFiles(t, dir, crashCommitLogMiB<<20, want))
			break
		}

		load := startRelLoad(crashLoadConfig(rb.addr, round, seed))
		require.True(t, load.waitAcked(int64(100+rng.IntN(700)), 2*time.Minute), "round %d: acknowledgements", round)
		// What a power loss now must keep: SYNC_FLUSH everything acknowledged so far;
		// ASYNC_FLUSH what lies below the flushed offset read before the clone.
		acks := load.snapshotAcks()
		flushed := rb.st.FlushedPhyOffset()
		next := t.TempDir()
		opts := faultfs.CrashOptions{}
		if round%2 == 1 {
			keep := rand.New(rand.NewPCG(seed, uint64(round)))
			var mu sync.Mutex
			opts.KeepUnsyncedPage = func(string, int64) bool {
				mu.Lock()
				defer mu.Unlock()
				return keep.IntN(2) == 0
			}
		}
		require.NoError(t, ffs.CrashClone(dir, next, opts))
		roundLost := 0
		for _, a := range acks {
			if !syncFlush {
				rec, release, err := rb.st.LookMessageByOffset(a.phys)
				require.NoError(t, err, "acknowledged %s", a.key)
				end := a.phys + int64(len(rec))
				release()
				if end > flushed {
					mayBeLost = append(mayBeLost, a) // written after the last flush
					roundLost++
					continue
				}
			}
			survivors = append(survivors, a)
		}
		load.halt()
		_, codes, remarks, _ := load.result()
		require.Empty(t, codes, "answers other than SUCCESS: %v", remarks)
		c.Close()
		require.NoError(t, rb.close())
		pastFlush += roundLost
		t.Logf("round %d (%s, keep unsynced pages %v): %d acknowledged before the power loss, %d of them after the last flush",
			round, flushDiskType, opts.KeepUnsyncedPage != nil, len(acks), roundLost)
		dir = next
	}
	t.Logf("%s: %d power-loss rounds; %d acknowledged messages verified after the crash clones, %d records stored; "+
		"%d acknowledged messages lay past the flushed offset at a power loss, %d of them were lost",
		flushDiskType, rounds, len(survivors), records, pastFlush, lost)
}
