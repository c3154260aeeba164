//go:build linux

package store

// Crash consistency under SYNC_FLUSH (issue 4), two ways:
//
//   - TestCrashSIGKILL: a child process (this test binary re-executed as TestCrashChild) puts messages
//     from several goroutines and prints one line per acknowledged message; the parent SIGKILLs it at a
//     random point, reopens the store and checks that every message ever acknowledged is intact. The next
//     round writes into the same store. kill -9 keeps the page cache, so this covers the process crash:
//     abnormal recovery, torn tails of half-done puts, a kill inside recovery, recovery of recovered
//     stores, and the acknowledgement protocol as far as the page cache can show it.
//   - TestCrashPowerLoss: the same load in process on faultfs.FS; at random points CrashClone keeps only
//     what was synced (on odd rounds plus a random half of the unsynced pages), a store opened on the
//     clone must hold every message acknowledged before the clone, and then takes the load itself.
//
// Rounds alternate mmap and transient-pool appends, warming off and on (two rounds each), and rotate the
// flush backends (fdatasync, msync, io_uring where the kernel allows it): 12 rounds cover every
// combination. 4 rounds by default (what `go test ./store/` runs);
// RINGMQ_CRASH_ROUNDS=N for the long form; RINGMQ_CRASH_SEED=S replays a logged seed (the same kill
// points and message contents; thread timing still differs); RINGMQ_CRASH_KEEP=dir keeps the store of a
// failed run (and, for the power-loss test, each clone as the crash left it) for a post-mortem:
//
//	RINGMQ_CRASH_ROUNDS=20 GOFLAGS=-ldflags=-checklinkname=0 go test -count=1 -v -run 'TestCrash(SIGKILL|PowerLoss)$' ./store/
//
// The tests at the end pin down the recovery bugs the power-loss test found, one deterministic crash
// image each.

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// Environment of the child process; its presence makes TestCrashChild run.
const (
	crashEnvDir       = "RINGMQ_CRASH_CHILD_DIR"
	crashEnvTransient = "RINGMQ_CRASH_CHILD_TRANSIENT"
	crashEnvWarm      = "RINGMQ_CRASH_CHILD_WARM"
	crashEnvBackend   = "RINGMQ_CRASH_CHILD_BACKEND"
	crashEnvRound     = "RINGMQ_CRASH_CHILD_ROUND"
	crashEnvSeed      = "RINGMQ_CRASH_CHILD_SEED"
	crashEnvAsyncPool = "RINGMQ_CRASH_CHILD_ASYNC_POOL" // ASYNC_FLUSH with the pool, committing only full files
	crashEnvRounds    = "RINGMQ_CRASH_ROUNDS"
	crashEnvSeedParam = "RINGMQ_CRASH_SEED"
	crashEnvKeep      = "RINGMQ_CRASH_KEEP" // a directory: a failed test copies its store there
)

const (
	crashWriters = 8 // goroutines putting
	crashWindow  = 8 // puts each writer has waiting for durability
	crashQueues  = 4 // queues per topic
	crashMaxPad  = 2048
)

var crashTopics = [...]string{"CrashA", "CrashB"}

// crashConfig: SYNC_FLUSH, 1 MiB CommitLog files (a round rolls several), small ConsumeQueue and
// IndexFile files (they roll too), and a ConsumeQueue flush + checkpoint every 20 ms, so a crash finds
// the checkpoint anywhere behind the CommitLog.
func crashConfig(dir string, transient bool, kind flush.Kind) Config {
	c := DefaultConfig(dir)
	c.MappedFileSizeCommitLog = 1 << 20
	c.MappedFileSizeConsumeQueue = 2048 * ConsumeQueueEntryBytes
	c.MaxMessageSize = 16 << 10
	c.MaxHashSlotNum = 4096
	c.MaxIndexNum = 8192
	c.FlushDiskType = SyncFlush
	c.FlushBackend = kind
	c.TransientStorePoolEnable = transient
	c.TransientStorePoolPinned = false // RLIMIT_MEMLOCK is small for unprivileged test runs
	c.TransientStorePoolDir = testPoolDir
	c.TransientStorePoolSize = 4
	c.FlushIntervalConsumeQueue = 20 * time.Millisecond
	c.FlushConsumeQueueThoroughInterval = 100 * time.Millisecond
	// A put waits in the group commit; on a loaded machine under -race 5 s could pass, and a timeout is
	// not what this test is about (a timed-out put is simply not acknowledged).
	c.SyncFlushTimeout = 60 * time.Second
	c.OSPageCacheBusyTimeout = time.Minute
	c.CleanResourceInterval = time.Hour
	return c
}

// crashAck is one acknowledged put.
type crashAck struct {
	topic       string
	queueID     int32
	queueOffset int64
	phys        int64
	sum         [sha256.Size]byte
	round       int
}

func (a crashAck) line() string {
	return fmt.Sprintf("ACK %s %d %d %d %s", a.topic, a.queueID, a.queueOffset, a.phys, hex.EncodeToString(a.sum[:]))
}

func parseCrashAck(line string, round int) (crashAck, error) {
	f := strings.Fields(line)
	if len(f) != 6 || f[0] != "ACK" {
		return crashAck{}, fmt.Errorf("bad ACK line %q", line)
	}
	qid, err1 := strconv.ParseInt(f[2], 10, 32)
	qoff, err2 := strconv.ParseInt(f[3], 10, 64)
	phys, err3 := strconv.ParseInt(f[4], 10, 64)
	sum, err4 := hex.DecodeString(f[5])
	if err := errors.Join(err1, err2, err3, err4); err != nil || len(sum) != sha256.Size {
		return crashAck{}, fmt.Errorf("bad ACK line %q: %v", line, err)
	}
	a := crashAck{topic: f[1], queueID: int32(qid), queueOffset: qoff, phys: phys, round: round}
	copy(a.sum[:], sum)
	return a, nil
}

// crashLoad runs crashWriters goroutines putting into s. Each put's body is its key
// ("r<round>w<writer>s<seq>"), a '|' and random padding; its KEYS property is the key, its UNIQ_KEY "U"
// and the key (two IndexFile entries per message, as real clients make). onAck runs on the group commit
// goroutine for every put acknowledged durable; onErr for the first failure.
type crashLoad struct {
	s     *Store
	round int
	seed  uint64
	onAck func(crashAck)
	onErr func(error)

	stop chan struct{}
	wg   sync.WaitGroup
}

func startCrashLoad(s *Store, round int, seed uint64, onAck func(crashAck), onErr func(error)) *crashLoad {
	l := &crashLoad{s: s, round: round, seed: seed, onAck: onAck, onErr: onErr, stop: make(chan struct{})}
	l.wg.Add(crashWriters)
	for w := 0; w < crashWriters; w++ {
		go l.writer(w)
	}
	return l
}

// close stops the writers and waits until every put they made has its durability answer.
func (l *crashLoad) close() {
	close(l.stop)
	l.wg.Wait()
}

func (l *crashLoad) writer(w int) {
	defer l.wg.Done()
	rng := rand.New(rand.NewPCG(l.seed, uint64(w)))
	slots := make(chan struct{}, crashWindow)
	defer func() { // the answers of the puts still waiting
		for i := 0; i < crashWindow; i++ {
			slots <- struct{}{}
		}
	}()
	pad := make([]byte, crashMaxPad)
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		case slots <- struct{}{}:
		}
		key := fmt.Sprintf("r%03dw%02ds%07d", l.round, w, seq)
		n := rng.IntN(crashMaxPad)
		for i := range pad[:n] {
			pad[i] = byte(rng.Uint32())
		}
		body := append(append([]byte(key), '|'), pad[:n]...)
		topic := crashTopics[rng.IntN(len(crashTopics))]
		m := testMessage(topic, int32(rng.IntN(crashQueues)), body, codec.PropertyKeys, key,
			codec.PropertyUniqClientMessageIDKey, "U"+key, codec.PropertyTags, "t"+strconv.Itoa(w))
		res, err := l.s.PutMessage(m)
		if err != nil {
			<-slots
			l.onErr(fmt.Errorf("writer %d put %s: %w", w, key, err))
			return
		}
		ack := crashAck{topic: topic, queueID: m.QueueID, queueOffset: res.QueueOffset, phys: res.WroteOffset,
			sum: sha256.Sum256(body), round: l.round}
		l.s.WaitDurable(res.EndOffset(), func(err error) {
			if err != nil {
				l.onErr(fmt.Errorf("writer %d WaitDurable %s: %w", w, key, err))
			} else {
				l.onAck(ack)
			}
			<-slots
		})
	}
}

// startCrashChildProcess re-executes the test binary as TestCrashChild with env added; kill sends it
// SIGKILL, once.
func startCrashChildProcess(t *testing.T, env ...string) (cmd *exec.Cmd, stdout io.Reader, stderr *syncBuffer, kill func()) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	stderr = &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var once sync.Once
	return cmd, stdout, stderr, func() { once.Do(func() { _ = cmd.Process.Signal(syscall.SIGKILL) }) }
}

// crashChildOutput is what TestCrashChild printed before it died.
type crashChildOutput struct {
	acks                []crashAck
	started, lastExitOK bool
	err                 error // a line that is not the protocol's
}

// readCrashChild reads TestCrashChild's output until it ends, calling kill after the killAt-th
// acknowledgement (never when killAt < 0), at a line that breaks the protocol, and at the end (a child
// that died by itself: the caller's wait reports it). Whole lines only: a line cut by the kill has no
// newline and does not count.
func readCrashChild(stdout io.Reader, round, killAt int, kill func()) crashChildOutput {
	var out crashChildOutput
	r := bufio.NewReader(stdout)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			break
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case strings.HasPrefix(line, "ACK "):
			a, perr := parseCrashAck(line, round)
			if perr != nil {
				out.err = perr
				kill()
				continue
			}
			out.acks = append(out.acks, a)
			if len(out.acks) == killAt {
				kill()
			}
		case strings.HasPrefix(line, "STARTED "):
			out.started = true
			out.lastExitOK = strings.Fields(line)[1] == "true"
		default:
			out.err = fmt.Errorf("child: %s", line)
			kill()
		}
	}
	kill()
	return out
}

// keepOnFailure copies *dir into $RINGMQ_CRASH_KEEP when the test fails, for a post-mortem.
func keepOnFailure(t *testing.T, dir *string) {
	keep := os.Getenv(crashEnvKeep)
	if keep == "" {
		return
	}
	t.Cleanup(func() {
		if t.Failed() {
			dst := filepath.Join(keep, fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()))
			copyDir(t, *dir, dst)
			t.Logf("store kept in %s", dst)
		}
	})
}

// TestCrashChild is the child process of TestCrashSIGKILL; it runs only with the child environment set.
// It opens (recovering) the store, prints "STARTED <lastExitOK> <maxPhyOffset>", then puts until killed,
// printing one ACK line per acknowledged message, flushed line by line.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnvDir)
	if dir == "" {
		t.Skip("helper process of TestCrashSIGKILL")
	}
	kind, err := flush.ParseKind(os.Getenv(crashEnvBackend))
	require.NoError(t, err)
	round, err := strconv.Atoi(os.Getenv(crashEnvRound))
	require.NoError(t, err)
	seed, err := strconv.ParseUint(os.Getenv(crashEnvSeed), 10, 64)
	require.NoError(t, err)
	cfg := crashConfig(dir, os.Getenv(crashEnvTransient) == "1", kind)
	if os.Getenv(crashEnvAsyncPool) == "1" {
		cfg = asyncPoolCrashConfig(dir, kind)
	}
	cfg.WarmMappedFileEnable = os.Getenv(crashEnvWarm) == "1"
	cfg.FlushLeastPagesWhenWarmMappedFile = 64 // a few syncs per 1 MiB file

	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(line string) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = out.WriteString(line)
		_ = out.WriteByte('\n')
		_ = out.Flush() // the parent counts only whole lines; each one leaves at once
	}
	fail := func(err error) {
		emit("ERR " + strings.ReplaceAll(err.Error(), "\n", " "))
		os.Exit(3)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := Open(cfg, Deps{Logger: logger})
	if err != nil {
		fail(fmt.Errorf("open: %w", err))
	}
	if err := s.Start(); err != nil {
		fail(fmt.Errorf("start: %w", err))
	}
	emit(fmt.Sprintf("STARTED %t %d", s.LastExitOK(), s.MaxPhyOffset()))
	var once sync.Once
	startCrashLoad(s, round, seed, func(a crashAck) { emit(a.line()) },
		func(err error) { once.Do(func() { fail(err) }) })
	select {} // until SIGKILL
}

func crashRounds(t *testing.T) int {
	v := os.Getenv(crashEnvRounds)
	if v == "" {
		return 4
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, crashEnvRounds)
	require.Positive(t, n, crashEnvRounds)
	return n
}

func crashSeed(t *testing.T) uint64 {
	if v := os.Getenv(crashEnvSeedParam); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, crashEnvSeedParam)
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// crashBackends lists the flush backends to rotate through: io_uring only where the kernel allows it.
func crashBackends(t *testing.T) []flush.Kind {
	kinds := []flush.Kind{flush.KindFdatasync, flush.KindMsync}
	b, err := flush.Open(flush.KindIOUring, nil, nil)
	require.NoError(t, err)
	if b.Kind() == flush.KindIOUring {
		kinds = append(kinds, flush.KindIOUring)
	} else {
		t.Log("io_uring unavailable here: rounds use fdatasync and msync only")
	}
	require.NoError(t, b.Close())
	return kinds
}

// syncBuffer is an io.Writer for a child's stderr, read after the child is gone.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestCrashSIGKILL(t *testing.T) {
	rounds, seed := crashRounds(t), crashSeed(t)
	kinds := crashBackends(t)
	t.Logf("rounds %d, seed %d (replay: %s=%d)", rounds, seed, crashEnvSeedParam, seed)
	dir := t.TempDir()
	keepOnFailure(t, &dir)
	var acks []crashAck
	killedEarly := 0
	// What the next child should find: a store shut down cleanly (or none), or a crashed one. Unknown
	// after a kill that may have come before or after Open created the abort file.
	clean, cleanKnown := true, true
	for round := 0; round < rounds; round++ {
		rng := rand.New(rand.NewPCG(seed, uint64(round)))
		transient := round%2 == 1
		kind := kinds[round%len(kinds)]
		warm := (round/2)%2 == 1 // with the pool and without, over every backend in 12 rounds
		// One round in six dies at a random moment shortly after exec, often inside Open's recovery;
		// the others after a random number of acknowledgements.
		early := rng.IntN(6) == 0
		delay := time.Duration(rng.IntN(80)) * time.Millisecond
		target := 1 + rng.IntN(2500)
		childSeed := rng.Uint64()
		what := fmt.Sprintf("round %d (transientPool=%t flushBackend=%s warm=%t)", round, transient, kind, warm)
		if early {
			t.Logf("%s: SIGKILL %v after exec", what, delay)
		} else {
			t.Logf("%s: SIGKILL after %d acks", what, target)
		}

		cmd, stdout, stderr, kill := startCrashChildProcess(t,
			crashEnvDir+"="+dir,
			crashEnvTransient+"="+map[bool]string{false: "0", true: "1"}[transient],
			crashEnvWarm+"="+map[bool]string{false: "0", true: "1"}[warm],
			crashEnvBackend+"="+kind.String(),
			crashEnvRound+"="+strconv.Itoa(round),
			crashEnvSeed+"="+strconv.FormatUint(childSeed, 10))
		var timedOut atomic.Bool
		watchdog := time.AfterFunc(2*time.Minute, func() { timedOut.Store(true); kill() })
		var earlyTimer *time.Timer
		if early {
			earlyTimer = time.AfterFunc(delay, kill)
		}

		killAt := target
		if early {
			killAt = -1
		}
		out := readCrashChild(stdout, round, killAt, kill)
		acks = append(acks, out.acks...)
		started, lastExitOK, n, protoErr := out.started, out.lastExitOK, len(out.acks), out.err
		werr := cmd.Wait()
		watchdog.Stop()
		if earlyTimer != nil {
			earlyTimer.Stop()
		}
		childErr := stderr.String()
		require.NoError(t, protoErr, "%s\nchild stderr:\n%s", what, childErr)
		require.False(t, timedOut.Load(), "%s: no progress in 2 minutes\nchild stderr:\n%s", what, childErr)
		var exitErr *exec.ExitError
		require.ErrorAs(t, werr, &exitErr, what)
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL,
			"%s: the child ended by itself (%v)\nchild stderr:\n%s", what, werr, childErr)
		require.NotContains(t, childErr, "DATA RACE", what)
		require.NotContains(t, childErr, "panic:", what)
		require.NotContains(t, childErr, "fatal error:", what)
		if !early {
			require.True(t, started, "%s\nchild stderr:\n%s", what, childErr)
			require.GreaterOrEqual(t, n, target, what)
		}
		if !started {
			killedEarly++
		}
		t.Logf("%s: child started=%t lastExitOK=%t, %d acks read, %d acknowledged in all",
			what, started, lastExitOK, n, len(acks))
		if started && cleanKnown {
			require.Equal(t, clean, lastExitOK, "%s: LastExitOK in the child", what)
		}

		// Verify, on even rounds in place (the next child then finds a cleanly shut down store), on odd
		// rounds on a copy (the next child must recover the crashed store itself).
		vdir := dir
		if round%2 == 1 {
			vdir = filepath.Join(t.TempDir(), "copy")
			copyDir(t, dir, vdir)
		}
		s, err := Open(crashConfig(vdir, transient, kind), Deps{Logger: testLogger(t)})
		require.NoError(t, err, what)
		if started {
			require.False(t, s.LastExitOK(), "%s: a killed store recovers abnormally", what)
		}
		verifyCrashStore(t, s, acks, what)
		require.NoError(t, s.Shutdown(), what)
		if vdir != dir {
			require.NoError(t, os.RemoveAll(vdir))
			clean, cleanKnown = false, started
		} else {
			clean, cleanKnown = true, true
		}
	}
	t.Logf("%d rounds (%d killed before the store was open), %d acknowledged messages verified intact after the last one",
		rounds, killedEarly, len(acks))
	require.NotEmpty(t, acks)
}

// asyncPoolCrashConfig: ASYNC_FLUSH with the transient pool's buffers as files on tmpfs, committing only
// whole files, so at any kill the current file's acknowledged records (and at times the previous file's
// tail) are in the buffer alone.
func asyncPoolCrashConfig(dir string, kind flush.Kind) Config {
	c := crashConfig(dir, true, kind)
	c.FlushDiskType = AsyncFlush
	c.FlushIntervalCommitLog = 50 * time.Millisecond
	c.CommitIntervalCommitLog = time.Hour
	c.CommitCommitLogThoroughInterval = time.Hour
	c.CommitCommitLogLeastPages = 1 << 20
	return c
}

// TestCrashSIGKILLAsyncPool: under ASYNC_FLUSH with the transient pool a message is acknowledged while
// it is only in a pool buffer. A child process puts (every put acknowledged at once) and is killed
// (SIGKILL) after a random number of acknowledgements; recovery must find every acknowledged message, its
// body, its ConsumeQueue entry and its keys, as plain ASYNC_FLUSH does with the page cache. Rounds
// rotate the flush backends on one store; each recovers the previous round's crash.
func TestCrashSIGKILLAsyncPool(t *testing.T) {
	if testPoolDir == "off" {
		t.Skip("no /dev/shm: the pool's buffers cannot be files on tmpfs here")
	}
	rounds, seed := min(crashRounds(t), 3), crashSeed(t)
	if v := os.Getenv(crashEnvRounds); v != "" {
		rounds = crashRounds(t)
	}
	kinds := crashBackends(t)
	t.Logf("rounds %d, seed %d (replay: %s=%d)", rounds, seed, crashEnvSeedParam, seed)
	dir := t.TempDir()
	keepOnFailure(t, &dir)
	var acks []crashAck
	restored := int64(0)
	for round := 0; round < rounds; round++ {
		rng := rand.New(rand.NewPCG(seed, 2<<32|uint64(round)))
		kind := kinds[round%len(kinds)]
		target := 200 + rng.IntN(2000)
		what := fmt.Sprintf("round %d (ASYNC_FLUSH, transient pool files, flushBackend=%s): SIGKILL after %d acks",
			round, kind, target)
		t.Log(what)
		child, stdout, stderr, kill := startCrashChildProcess(t, crashEnvDir+"="+dir, crashEnvAsyncPool+"=1",
			crashEnvTransient+"=1", crashEnvBackend+"="+kind.String(), crashEnvRound+"="+strconv.Itoa(round),
			crashEnvSeed+"="+strconv.FormatUint(rng.Uint64(), 10))
		watchdog := time.AfterFunc(2*time.Minute, kill)
		out := readCrashChild(stdout, round, target, kill)
		acks = append(acks, out.acks...)
		n, protoErr := len(out.acks), out.err
		werr := child.Wait()
		watchdog.Stop()
		require.NoError(t, protoErr, "%s\nchild stderr:\n%s", what, stderr.String())
		require.Error(t, werr, what)
		require.GreaterOrEqual(t, n, target, "%s\nchild stderr:\n%s", what, stderr.String())
		require.NotContains(t, stderr.String(), "DATA RACE", what)

		s, err := Open(asyncPoolCrashConfig(dir, kind), Deps{Logger: testLogger(t)})
		require.NoError(t, err, what)
		require.False(t, s.LastExitOK(), what)
		restored += s.poolRestore.messages
		t.Logf("%s: %d acknowledged this round; %d messages restored from the pool's files", what, n, s.poolRestore.messages)
		verifyCrashStore(t, s, acks, what)
		// Started and stopped: the next round's child finds a cleanly shut down store and writes on.
		require.NoError(t, s.Start(), what)
		require.NoError(t, s.Shutdown(), what)
	}
	require.Positive(t, restored, "the kills found acknowledged messages in the pool's buffers (the test's premise)")
	t.Logf("%d rounds, %d acknowledged messages verified, %d of them restored from the pool's files", rounds, len(acks), restored)
}

// verifyCrashStore checks a recovered store against every acknowledgement: the record at the acked
// CommitLog offset is the acked message (topic, queue, offsets, body hash), its ConsumeQueue entry points
// at it, the IndexFile finds it by its key; and every queue is contiguous from 0 to its max offset, each
// entry pointing at a record that says it is that queue's message at that offset.
func verifyCrashStore(t *testing.T, s *Store, acks []crashAck, what string) {
	t.Helper()
	seen := make(map[int64]bool, len(acks))
	for _, a := range acks {
		require.False(t, seen[a.phys], "%s: two acknowledgements for CommitLog offset %d", what, a.phys)
		seen[a.phys] = true
		b, release, err := s.LookMessageByOffset(a.phys)
		require.NoError(t, err, "%s: message %s acknowledged in round %d lost", what, a.line(), a.round)
		rec, err := codec.DecodeRecord(b, true)
		require.NoError(t, err, "%s: %s", what, a.line())
		sum := sha256.Sum256(rec.Body)
		key, _, ok := bytes.Cut(rec.Body, []byte{'|'})
		require.True(t, ok, "%s: %s: body without key", what, a.line())
		keyStr := string(key)
		got := crashAck{topic: string(rec.Topic), queueID: rec.QueueID, queueOffset: rec.QueueOffset,
			phys: rec.PhysicalOffset, sum: sum}
		release()
		require.Equal(t, a.line(), got.line(), "%s: message acknowledged in round %d changed", what, a.round)
		require.Equal(t, a.phys, s.GetCommitLogOffsetInQueue(a.topic, a.queueID, a.queueOffset),
			"%s: ConsumeQueue entry of %s", what, a.line())
		for _, k := range []string{keyStr, "U" + keyStr} { // its KEYS word and its UNIQ_KEY
			q, err := s.QueryMessage(a.topic, k, 4, 0, math.MaxInt64)
			require.NoError(t, err)
			found := false
			for _, qb := range q.Buffers {
				qr, err := codec.DecodeRecord(qb, false)
				require.NoError(t, err)
				found = found || qr.PhysicalOffset == a.phys
			}
			q.Release()
			require.True(t, found, "%s: IndexFile does not find key %s of %s", what, k, a.line())
		}
	}
	total := int64(0)
	for _, topic := range crashTopics {
		for qid := int32(0); qid < crashQueues; qid++ {
			require.Zero(t, s.GetMinOffsetInQueue(topic, qid), "%s: %s/%d min offset", what, topic, qid)
			maxOff := s.GetMaxOffsetInQueue(topic, qid)
			cq := s.queues.find(topic, qid)
			if maxOff == 0 {
				continue
			}
			require.NotNil(t, cq)
			lastPhys := int64(-1)
			for off := int64(0); off < maxOff; off++ {
				phys, size, _, ok := cq.entryAt(off)
				require.True(t, ok, "%s: %s/%d has no entry at %d (max %d)", what, topic, qid, off, maxOff)
				require.NotEqual(t, int32(paddingEntrySize), size, "%s: %s/%d: hole at %d", what, topic, qid, off)
				require.Greater(t, phys, lastPhys, "%s: %s/%d: entries out of CommitLog order at %d", what, topic, qid, off)
				lastPhys = phys
				b, release, err := s.LookMessageByOffset(phys)
				require.NoError(t, err, "%s: %s/%d@%d -> %d", what, topic, qid, off, phys)
				rec, err := codec.DecodeRecord(b, true)
				require.NoError(t, err)
				require.Equal(t, size, rec.TotalSize)
				require.Equal(t, topic, string(rec.Topic))
				require.Equal(t, qid, rec.QueueID)
				require.Equal(t, off, rec.QueueOffset, "%s: %s/%d entry %d points at another offset's record",
					what, topic, qid, off)
				release()
			}
			_, _, _, ok := cq.entryAt(maxOff)
			require.False(t, ok, "%s: %s/%d has an entry past its max offset %d", what, topic, qid, maxOff)
			total += maxOff
		}
	}
	require.GreaterOrEqual(t, total, int64(len(acks)), what)
}

// TestCrashPowerLoss models a power cut: the load runs in process over faultfs.FS, and at random points a
// CrashClone keeps only synced data (on odd rounds also a random half of the unsynced pages that
// differ, as if the kernel had written them back first). A store opened on the clone recovers, must hold
// every message acknowledged before the clone, and then carries the load until the next clone: each
// round recovers the previous round's recovered store. Rounds rotate through {mmap, transient pool},
// warming off and on, and the flush backends.
func TestCrashPowerLoss(t *testing.T) {
	rounds, seed := crashRounds(t), crashSeed(t)
	kinds := crashBackends(t)
	t.Logf("rounds %d, seed %d (replay: %s=%d)", rounds, seed, crashEnvSeedParam, seed)
	parent := t.TempDir()
	dir := filepath.Join(parent, "r0")
	keepOnFailure(t, &parent)
	var (
		mu   sync.Mutex
		acks []crashAck
	)
	var firstErr atomic.Pointer[error]
	onErr := func(err error) { firstErr.CompareAndSwap(nil, &err) }
	for round := 0; round < rounds; round++ {
		rng := rand.New(rand.NewPCG(seed, 1<<32|uint64(round)))
		transient := round%2 == 1
		kind := kinds[round%len(kinds)]
		warm := (round/2)%2 == 1 // with the pool and without, over every backend in 12 rounds
		keepSome := round%2 == 1
		target := 1 + rng.IntN(1500)
		what := fmt.Sprintf("round %d (transientPool=%t flushBackend=%s warm=%t keepUnsynced=%t)", round, transient,
			kind, warm, keepSome)

		backend, err := flush.Open(kind, nil, testLogger(t))
		require.NoError(t, err)
		ffs := faultfs.New(NewOSFS(backend))
		cfg := crashConfig(dir, transient, kind)
		cfg.WarmMappedFileEnable, cfg.FlushLeastPagesWhenWarmMappedFile = warm, 64
		s, err := Open(cfg, Deps{FS: ffs, Logger: testLogger(t)})
		require.NoError(t, err, what)
		if round > 0 {
			require.False(t, s.LastExitOK(), "%s: a crash clone recovers abnormally", what)
			mu.Lock()
			verifyCrashStore(t, s, acks, what)
			mu.Unlock()
		}
		require.NoError(t, s.Start())
		base := len(acks)
		load := startCrashLoad(s, round, rng.Uint64(), func(a crashAck) {
			mu.Lock()
			acks = append(acks, a)
			mu.Unlock()
		}, onErr)
		// Up to 2 minutes, not testutil.WaitTimeout: FaultFS copies every synced range, slow under
		// -race on a busy machine.
		got := 0
		reached := testutil.Poll(2*time.Minute, func() bool {
			mu.Lock()
			got = len(acks) - base
			mu.Unlock()
			return got >= target || firstErr.Load() != nil
		})
		require.True(t, reached, "%s: %d of %d acknowledgements in 2 minutes", what, got, target)
		if p := firstErr.Load(); p != nil {
			load.close()
			require.NoError(t, *p, what)
		}
		// Everything acknowledged so far was synced into the shadow images before its callback ran.
		mu.Lock()
		n := len(acks)
		mu.Unlock()
		next := filepath.Join(parent, fmt.Sprintf("r%d", round+1))
		var opts faultfs.CrashOptions
		if keepSome {
			opts.KeepUnsyncedPage = func(string, int64) bool { return rng.IntN(2) == 0 }
		}
		require.NoError(t, ffs.CrashClone(dir, next, opts), what)
		if os.Getenv(crashEnvKeep) != "" {
			copyDir(t, next, next+".pristine") // recovery changes the clone; keep it as the crash left it
		}
		load.close()
		if p := firstErr.Load(); p != nil {
			require.NoError(t, *p, what)
		}
		require.NoError(t, s.Shutdown(), what)
		require.NoError(t, backend.Close())
		require.NoError(t, os.RemoveAll(dir))
		mu.Lock()
		acks = acks[:n] // acknowledged after the clone: not promised by it
		mu.Unlock()
		t.Logf("%s: cloned after %d acks this round, %d acknowledged in all", what, n-base, n)
		dir = next
	}
	// The last clone.
	s, err := Open(crashConfig(dir, false, flush.KindMsync), Deps{Logger: testLogger(t)})
	require.NoError(t, err)
	require.False(t, s.LastExitOK())
	verifyCrashStore(t, s, acks, "final clone")
	require.NoError(t, s.Shutdown())
	t.Logf("%d power cuts, %d acknowledged messages verified intact after the last one", rounds, len(acks))
}

// TestCheckpointDoesNotClaimUnflushedQueues: a ConsumeQueue flush with leastPages > 0 leaves entries
// under leastPages pages in the page cache; the checkpoint written after it must not count their records
// as dispatched, or after a power cut the replay starts past them and they are gone for good.
func TestCheckpointDoesNotClaimUnflushedQueues(t *testing.T) {
	root := t.TempDir()
	ffs := faultfs.New(NewOSFS(nil))
	cfg := testConfig(root)
	cfg.MappedFileSizeConsumeQueue = 1024 * ConsumeQueueEntryBytes
	s := openStarted(t, cfg, Deps{FS: ffs})
	for i := 0; i < 30; i++ { // 30 entries: far below 2 pages per queue
		mustPut(t, s, testMessage("T", int32(i%3), bodyf("m%04d", i), codec.PropertyKeys, fmt.Sprintf("k%d", i)))
	}
	waitDispatched(t, s)
	require.NoError(t, s.Flush(0))
	_, err := s.flushLogicsAndCheckpoint(2) // the periodic, not thorough, ConsumeQueue flush
	require.NoError(t, err)
	require.Less(t, s.lastCheckpoint.LogicsOffset, s.MaxPhyOffset(),
		"the checkpoint promises no queue entry that is not durable")

	crash := t.TempDir()
	require.NoError(t, ffs.CrashClone(root, crash, faultfs.CrashOptions{}))
	require.NoError(t, s.Shutdown())
	cfg.StorePathRootDir = crash
	r := reopen(t, cfg, Deps{})
	require.False(t, r.LastExitOK())
	for q := int32(0); q < 3; q++ {
		recs := getAll(t, r, "T", q)
		require.Len(t, recs, 10, "queue %d", q)
		for i, rec := range recs {
			require.Equal(t, int64(i), rec.QueueOffset)
			require.Equal(t, fmt.Sprintf("m%04d", i*3+int(q)), string(rec.Body))
		}
	}
}

// TestTornConsumeQueueEntryRecovery: 20-byte entries straddle 4 KiB pages, so a power cut that leaves one
// page of an entry on the disk and not the other tears it. Each case: a ConsumeQueue flush (and the
// checkpoint) with `torn` entries made the page durable without entry `torn`; that entry and 100 more
// were then written, and before the cut the kernel wrote back only `keepPage` of the queue file.
//
//   - entry 614, bytes [12280, 12300), page 3 kept: the CommitLog offset reads back 0, size and tag code
//     are real. It looks valid; only its place (offset below the previous entry's) gives it away.
//   - entry 204, bytes [4080, 4100), page 0 kept: offset and size are right, the low half of the tag
//     code is zero. Only the CommitLog can tell: entries past the replay start must be rebuilt from it.
//
// Either way the pull must return every message at its offset with its tag.
func TestTornConsumeQueueEntryRecovery(t *testing.T) {
	if pageSize != 4096 {
		t.Skipf("page size %d: the layouts this test builds need 4 KiB pages", pageSize)
	}
	for _, tc := range []struct {
		torn     int
		keepPage int64
	}{{614, 3 * 4096}, {204, 0}} {
		t.Run(fmt.Sprint("entry", tc.torn), func(t *testing.T) { testTornConsumeQueueEntry(t, tc.torn, tc.keepPage) })
	}
}

func testTornConsumeQueueEntry(t *testing.T, torn int, keepPage int64) {
	root := t.TempDir()
	ffs := faultfs.New(NewOSFS(nil))
	cfg := testConfig(root)
	cfg.MappedFileSizeConsumeQueue = 2048 * ConsumeQueueEntryBytes
	s := openStarted(t, cfg, Deps{FS: ffs})
	put := func(i int) { mustPut(t, s, testMessage("T", 0, bodyf("m%04d", i), codec.PropertyTags, "TagA")) }
	for i := 0; i < torn; i++ {
		put(i)
	}
	waitDispatched(t, s)
	require.NoError(t, s.Flush(0))
	_, err := s.flushLogicsAndCheckpoint(0) // entries [0, torn) durable; the checkpoint says so
	require.NoError(t, err)
	for i := torn; i < torn+100; i++ {
		put(i)
	}
	waitDispatched(t, s)
	require.NoError(t, s.Flush(0)) // every record durable; entries from `torn` on only in the page cache

	crash := t.TempDir()
	cqFile := filepath.Join(root, "consumequeue", "T", "0", offsetFileName(0))
	require.NoError(t, ffs.CrashClone(root, crash, faultfs.CrashOptions{
		KeepUnsyncedPage: func(path string, off int64) bool { return path == cqFile && off == keepPage },
	}))
	require.NoError(t, s.Shutdown())
	tag := codec.TagsHashCode([]byte("TagA"))
	img, err := os.ReadFile(filepath.Join(crash, "consumequeue", "T", "0", offsetFileName(0)))
	require.NoError(t, err)
	phys, size, tags := readEntry(img[torn*ConsumeQueueEntryBytes:])
	require.True(t, entryValid(phys, size), "the torn entry passes the validity check")
	require.True(t, phys == 0 || tags != tag, "the crash image holds a torn entry: %d %d %d", phys, size, tags)

	cfg.StorePathRootDir = crash
	r := reopen(t, cfg, Deps{})
	require.False(t, r.LastExitOK())
	var recs []codec.Record
	for off := int64(0); ; {
		res, err := r.GetMessage("g", "T", 0, off, 32, 0, tagFilter{tag})
		require.NoError(t, err)
		if res.Status != Found {
			require.Equal(t, int64(torn+100), off, "%v at %d", res.Status, off)
			res.Release()
			break
		}
		for _, b := range res.Buffers {
			rec, err := codec.DecodeRecord(bytes.Clone(b), true)
			require.NoError(t, err)
			recs = append(recs, rec)
		}
		off = res.NextBeginOffset
		res.Release()
	}
	for i, rec := range recs {
		require.Equal(t, int64(i), rec.QueueOffset, "the tag filter lost a message")
		require.Equal(t, fmt.Sprintf("m%04d", i), string(rec.Body))
	}
	require.Equal(t, torn+100, len(recs))
}

// TestIndexCheckpointBetweenKeysOfARecord: a record's keys (UNIQ_KEY, then each KEYS word) are indexed
// one by one, and the checkpoint reads the IndexFile's count while the dispatcher works, so it may count
// the first key of a record and not the second. Abnormal recovery cuts the IndexFile back to that count;
// the record must still be found by every key.
func TestIndexCheckpointBetweenKeysOfARecord(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	s := openStarted(t, cfg, Deps{})
	const n = 20
	var last PutResult
	for i := 0; i < n; i++ {
		last = mustPut(t, s, testMessage("T", 0, bodyf("m%04d", i),
			codec.PropertyUniqClientMessageIDKey, fmt.Sprintf("u%d", i), codec.PropertyKeys, fmt.Sprintf("k%d", i)))
	}
	waitDispatched(t, s)
	require.NoError(t, s.Flush(0))
	_, err := s.flushLogicsAndCheckpoint(0)
	require.NoError(t, err)
	ck := s.lastCheckpoint
	require.Equal(t, int32(1+2*n), ck.IndexCount, "two entries per record")
	// What a checkpoint taken while the last record was being indexed says: its UNIQ_KEY counted, its
	// KEYS word not yet, the dispatcher at the record.
	ck.IndexCount--
	ck.LogicsOffset = last.WroteOffset
	crash := t.TempDir()
	copyDir(t, root, crash) // the page cache as a killed process leaves it
	require.NoError(t, writeCheckpoint(NewOSFS(nil), filepath.Join(crash, "checkpoint"), ck))
	require.NoError(t, s.Shutdown())

	cfg.StorePathRootDir = crash
	r := reopen(t, cfg, Deps{})
	require.False(t, r.LastExitOK())
	requireKeyedRecords(t, r, "T", n)
}

// TestIndexCutPastEmptyNewestFile: the IndexFile rolled (the old file full, the new one created) just
// before the checkpoint read the count, so the checkpoint names the new, still empty file. The old
// file's last entries belong to records the CommitLog had not made durable; after the crash new records
// land at their offsets. Those entries must go although the newest file has none, or the replay and the
// next puts take the new records for indexed ones and never index them.
func TestIndexCutPastEmptyNewestFile(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	cfg.MaxIndexNum = 64 // 63 entries a file
	s := openStarted(t, cfg, Deps{})
	var res []PutResult
	for i := 0; i < 64; i++ { // 63 fill the first file, the 64th opens the second
		res = append(res, mustPut(t, s, testMessage("T", 0, bodyf("m%04d", i), codec.PropertyKeys, fmt.Sprintf("k%d", i))))
	}
	waitDispatched(t, s)
	require.NoError(t, s.Flush(0))
	_, err := s.flushLogicsAndCheckpoint(0)
	require.NoError(t, err)
	ck := s.lastCheckpoint
	require.Len(t, s.index.files, 2)
	require.Equal(t, int32(2), ck.IndexCount)
	// The crash: the CommitLog durable up to message 60; the checkpoint read while the second file held
	// no entry yet, the dispatcher at message 60.
	lost := res[60].WroteOffset
	ck.IndexCount, ck.PhysicFlushedOffset, ck.MasterFlushedOffset, ck.LogicsOffset = 1, lost, lost, lost
	crash := t.TempDir()
	copyDir(t, root, crash)
	require.NoError(t, s.Shutdown())
	require.NoError(t, writeCheckpoint(NewOSFS(nil), filepath.Join(crash, "checkpoint"), ck))
	require.NoError(t, os.WriteFile(filepath.Join(crash, "abort"), nil, 0o644))
	clPath := filepath.Join(crash, "commitlog", offsetFileName(0))
	data, err := os.ReadFile(clPath)
	require.NoError(t, err)
	require.Less(t, lost, int64(len(data)), "the test needs the cut in the first CommitLog file")
	clear(data[lost:])
	require.NoError(t, os.WriteFile(clPath, data, 0o644))

	cfg.StorePathRootDir = crash
	r := reopen(t, cfg, Deps{})
	require.False(t, r.LastExitOK())
	require.Equal(t, lost, r.MaxPhyOffset())
	for i := 60; i < 64; i++ {
		q, err := r.QueryMessage("T", fmt.Sprintf("k%d", i), 8, 0, math.MaxInt64)
		require.NoError(t, err)
		require.Empty(t, q.Buffers, "k%d was lost with its record", i)
		q.Release()
	}
	for i := 0; i < 4; i++ { // new records at the lost records' offsets
		mustPut(t, r, testMessage("T", 0, bodyf("n%04d", i), codec.PropertyKeys, fmt.Sprintf("new%d", i)))
	}
	waitDispatched(t, r)
	for _, key := range []string{"k0", "k59", "new0", "new3"} {
		q, err := r.QueryMessage("T", key, 8, 0, math.MaxInt64)
		require.NoError(t, err)
		require.Len(t, q.Buffers, 1, "key %s", key)
		q.Release()
	}
}

// TestIndexFileLeftEmptyByACrash: a crash between creating the next IndexFile and sizing it leaves an
// empty file; the restart removes it (nothing can have been indexed in it) instead of refusing to start
// as for a file of the wrong size, and indexing goes on.
func TestIndexFileLeftEmptyByACrash(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(root)
	s := openStarted(t, cfg, Deps{})
	for i := 0; i < 10; i++ {
		mustPut(t, s, testMessage("T", 0, bodyf("m%d", i), codec.PropertyKeys, fmt.Sprintf("k%d", i)))
	}
	waitDispatched(t, s)
	require.NoError(t, s.Shutdown())
	empty := filepath.Join(root, "index", "29991231235959999")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "abort"), nil, 0o644))

	r := reopen(t, cfg, Deps{})
	require.False(t, r.LastExitOK())
	_, err := os.Stat(empty)
	require.ErrorIs(t, err, os.ErrNotExist)
	mustPut(t, r, testMessage("T", 0, []byte("after"), codec.PropertyKeys, "k10"))
	waitDispatched(t, r)
	for i := 0; i <= 10; i++ {
		q, err := r.QueryMessage("T", fmt.Sprintf("k%d", i), 8, 0, math.MaxInt64)
		require.NoError(t, err)
		require.Len(t, q.Buffers, 1, "k%d", i)
		q.Release()
	}
}
