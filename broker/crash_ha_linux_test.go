//go:build linux

package broker

// Crash testing of master-slave replication (issue 16 item 6), with the harness of
// crash_linux_test.go (child brokers, relLoad, remotingtest.Conn).
//
// TestCrashSyncMasterSlave runs a SYNC_MASTER and its slave as two child processes on
// 127.0.0.1. Each round starts both on fresh or continuing stores (seeded choice), waits
// until a probe send is answered SUCCESS (the slave is connected and has caught up),
// runs producers that send with WAIT=true over several connections with several sends in
// flight, kills the master with SIGKILL after a random number of acknowledgements, stops
// the slave with SIGTERM or SIGKILL (seeded), and then reads both CommitLogs from their
// files:
//   - every send answered SUCCESS (this round's and the earlier ones the slave's store
//     kept) is a whole record in the slave's CommitLog at the offset its offsetMsgId
//     names, with its topic, queue, queue offset and exact body (CRC checked);
//   - the master's files equal the slave's byte for byte from the slave's first file up
//     to the end of the slave's last whole record, in every mode: a master hands its slave
//     only bytes in its CommitLog files (with the transient pool it commits them for the
//     transfer), which SIGKILL does not lose, so the restarted master is never behind or
//     diverged from its slave (and its log never says it refused one).
//
// Rounds alternate ASYNC_FLUSH and SYNC_FLUSH, and mmap and transient-pool appends (all
// four combinations every four rounds); TestCrashSyncMasterSlaveTransientPool has the pool
// in every round. Stores carry over from round to round unless the seed picks a fresh one.
//
// A last phase restarts the slave mid-stream: with the slave stopped the master answers
// SLAVE_NOT_AVAILABLE, once the restarted slave has caught up sends succeed again, and
// after a clean stop of both the slave's CommitLog ends where the master's does, byte for
// byte the same.
//
// 2 rounds by default (in `make test`); RINGMQ_CRASH_ROUNDS=N and RINGMQ_CRASH_SEED=S as
// for the other crash tests.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

const haCrashFileBytes = int64(crashCommitLogMiB << 20)

// haCrashPorts are the pair's ports, picked once and kept across restarts.
type haCrashPorts struct{ master, masterHA, slave, slaveHA int }

func pickHACrashPorts(t *testing.T) haCrashPorts {
	t.Helper()
	seen := map[int]bool{}
	var ports [4]int
	for i := range ports {
		for {
			p, err := pickListenPort("127.0.0.1")
			require.NoError(t, err)
			if !seen[p] {
				seen[p] = true
				ports[i] = p
				break
			}
		}
	}
	return haCrashPorts{master: ports[0], masterHA: ports[1], slave: ports[2], slaveHA: ports[3]}
}

func haCrashMasterConf(dir string, p haCrashPorts, flushDiskType string, transient bool) []string {
	return append(crashChildConf(dir, p.master, flushDiskType, transient),
		"brokerRole=SYNC_MASTER",
		"haListenPort="+strconv.Itoa(p.masterHA),
		"slaveTimeout=60000", // as syncFlushTimeout: a timeout is not what this test is about
	)
}

func haCrashSlaveConf(dir string, p haCrashPorts, flushDiskType string, transient bool) []string {
	return append(crashChildConf(dir, p.slave, flushDiskType, transient),
		"brokerRole=SLAVE",
		"brokerId=1",
		"haListenPort="+strconv.Itoa(p.slaveHA),
		"haMasterAddress=127.0.0.1:"+strconv.Itoa(p.masterHA),
	)
}

// haProber sends probe messages (WAIT=true) to a master on one connection.
type haProber struct {
	c      *remotingtest.Conn
	prefix string
	n      int
	// logs, when set, gives what a failure prints besides its message: the brokers' stderr.
	logs func() string
}

// probeUntil sends a probe every few milliseconds until one is answered want, and returns
// that probe as an acknowledgement (SLAVE_NOT_AVAILABLE answers carry the full send header
// too: the message is stored). allowed are the other answers that may come meanwhile; a
// probe without an answer within a second stays pending (a SYNC_MASTER that has not yet
// seen its slave go waits for it).
func (p *haProber) probeUntil(t *testing.T, want codec.ResponseCode, allowed ...codec.ResponseCode) relAck {
	t.Helper()
	var ack relAck
	answered := testutil.Poll(90*time.Second, func() bool {
		key := fmt.Sprintf("%s-%04d", p.prefix, p.n)
		p.n++
		body := relBody(key, 16)
		cmd := sendV2(crashTopics[0], 0, body, props(codec.PropertyKeys, key, codec.PropertyWaitStoreMsgOK, "true"))
		resp, err := p.c.TryCall(cmd, time.Second)
		if err != nil {
			require.ErrorIs(t, err, remotingtest.ErrTimeout, "probe %s", key)
			return false
		}
		code := codec.ResponseCode(resp.Code)
		if code == want {
			var h codec.SendMessageResponseHeader
			require.NoError(t, h.Decode(resp.ExtFields), "probe %s", key)
			_, phys, err := codec.DecodeOffsetMsgID(h.MsgID)
			require.NoError(t, err, "probe %s: msgId %q", key, h.MsgID)
			ack = relAck{key: key, topic: crashTopics[0], queueID: 0, queueOffset: h.QueueOffset, phys: phys,
				bodyLen: len(body)}
			return true
		}
		require.Contains(t, allowed, code, "probe %s answered %d (%s), waiting for %d", key, code, resp.Remark, want)
		return false
	})
	if !answered && p.logs != nil {
		t.Log(p.logs())
	}
	require.True(t, answered, "no probe answered %d within 90 s", want)
	return ack
}

// haCommitLog is a CommitLog read from a stopped or killed broker's files.
type haCommitLog struct {
	files map[int64][]byte // file start → its bytes
	first int64            // the lowest file start (0 without files)
}

func readHACommitLog(t *testing.T, root string) haCommitLog {
	t.Helper()
	dir := filepath.Join(root, "commitlog")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	l := haCommitLog{files: map[int64][]byte{}, first: -1}
	for _, e := range entries {
		start, err := strconv.ParseInt(e.Name(), 10, 64)
		require.NoError(t, err, "CommitLog file name %s", e.Name())
		require.Zero(t, start%haCrashFileBytes, "CommitLog file %s", e.Name())
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		require.NoError(t, err)
		if len(data) == 0 {
			// Created but not yet allocated when the broker was killed (the allocator makes the next
			// files ahead): nothing was ever in it, and the next start allocates it.
			continue
		}
		require.Len(t, data, int(haCrashFileBytes), e.Name())
		l.files[start] = data
		if l.first < 0 || start < l.first {
			l.first = start
		}
	}
	l.first = max(l.first, 0)
	return l
}

// end walks whole records (CRC checked) from the first file and returns the offset after
// the last one: what recovery keeps. A blank record leads to the next file.
func (l haCommitLog) end() int64 {
	off := l.first
	for {
		data := l.files[off-off%haCrashFileBytes]
		if data == nil {
			return off
		}
		pos := off % haCrashFileBytes
		rec, err := codec.DecodeRecord(data[pos:], true)
		switch {
		case errors.Is(err, codec.ErrBlankRecord):
			off += haCrashFileBytes - pos
		case err != nil:
			return off
		default:
			off += int64(rec.TotalSize)
		}
	}
}

// haVerifyReplica checks acks against the slave's CommitLog and compares the master's
// files with the slave's over [slave.first, slave end). It returns the slave's end, the
// offset up to which the master's files hold the same bytes (from there to the slave's end
// they hold zeros: never written to the file), and the greatest end of an acknowledged
// record.
func haVerifyReplica(t *testing.T, master, slave haCommitLog, acks []relAck) (end, same, ackedEnd int64) {
	t.Helper()
	end = slave.end()
	for _, a := range acks {
		require.GreaterOrEqual(t, a.phys, slave.first, "acknowledged %s lies before the slave's first CommitLog file", a.key)
		require.Less(t, a.phys, end, "acknowledged %s at %d is not in the slave's CommitLog (it ends at %d)", a.key, a.phys, end)
		data := slave.files[a.phys-a.phys%haCrashFileBytes]
		rec, err := codec.DecodeRecord(data[a.phys%haCrashFileBytes:], true)
		require.NoError(t, err, "slave record of acknowledged %s at %d", a.key, a.phys)
		require.Equal(t, a.phys, rec.PhysicalOffset, "%s", a.key)
		require.Equal(t, a.topic, string(rec.Topic), "%s", a.key)
		require.Equal(t, a.queueID, rec.QueueID, "%s", a.key)
		require.Equal(t, a.queueOffset, rec.QueueOffset, "%s", a.key)
		require.Len(t, rec.Body, a.bodyLen, "%s", a.key)
		key, err := relCheckBody(rec.Body)
		require.NoError(t, err)
		require.Equal(t, a.key, key, "the slave holds another message at %d", a.phys)
		ackedEnd = max(ackedEnd, a.phys+int64(rec.TotalSize))
	}
	same = end
	for off := slave.first; off < end; {
		base := off - off%haCrashFileBytes
		hi := min(base+haCrashFileBytes, end)
		m := master.files[base]
		if m == nil {
			same = off
			break
		}
		s := slave.files[base]
		lo := off - base
		if i := mismatch(s[lo:hi-base], m[lo:hi-base]); i >= 0 {
			same = off + int64(i)
			break
		}
		off = hi
	}
	for off := same; off < end; {
		base := off - off%haCrashFileBytes
		hi := min(base+haCrashFileBytes, end)
		if m := master.files[base]; m != nil {
			i := bytes.IndexFunc(m[off-base:hi-base], func(r rune) bool { return r != 0 })
			require.Negative(t, i, "the master's CommitLog differs from the slave's at %d and is not empty at %d",
				same, off+int64(i))
		}
		off = hi
	}
	return end, same, ackedEnd
}

// mismatch is the index of the first byte where a and b (of equal length) differ, or -1.
func mismatch(a, b []byte) int {
	const chunk = 4096
	for i := 0; i < len(a); i += chunk {
		j := min(i+chunk, len(a))
		if bytes.Equal(a[i:j], b[i:j]) {
			continue
		}
		for k := i; k < j; k++ {
			if a[k] != b[k] {
				return k
			}
		}
	}
	return -1
}

func TestCrashSyncMasterSlave(t *testing.T) {
	crashSyncMasterSlave(t, func(round int) bool { return round%4 == 1 || round%4 == 2 })
}

// TestCrashSyncMasterSlaveTransientPool is TestCrashSyncMasterSlave with the transient pool in every round
// (ASYNC_FLUSH and SYNC_FLUSH alternating): the mode in which a master used to hand its slave bytes it
// then lost in the crash, coming back shorter than its slave.
func TestCrashSyncMasterSlaveTransientPool(t *testing.T) {
	crashSyncMasterSlave(t, func(int) bool { return true })
}

// crashSyncMasterSlave runs the rounds, with the transient pool where transientIn says.
func crashSyncMasterSlave(t *testing.T, transientIn func(round int) bool) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	rounds := crashRounds(t, 2)
	seed := crashSeed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	ports := pickHACrashPorts(t)
	masterDir, slaveDir := t.TempDir(), t.TempDir()

	var history []relAck // acknowledged sends the slave's store must still hold
	for round := range rounds {
		flushDiskType := "ASYNC_FLUSH"
		if round%2 == 1 {
			flushDiskType = "SYNC_FLUSH"
		}
		transient := transientIn(round)
		// Every round draws the same values, so that a seed replays its choices.
		freshMaster := rng.IntN(6) == 0 && round > 0
		freshSlave := rng.IntN(4) == 0 && round > 0 || freshMaster
		killSlave := rng.IntN(2) == 0
		target := int64(100 + rng.IntN(500))
		if freshMaster {
			masterDir = t.TempDir()
		}
		if freshSlave {
			slaveDir = t.TempDir()
			history = nil
		}
		t.Logf("round %d: %s, transient pool %v, fresh master store %v, fresh slave store %v; "+
			"SIGKILL the master after %d acknowledgements, then the slave by %s",
			round, flushDiskType, transient, round == 0 || freshMaster, round == 0 || freshSlave, target,
			map[bool]string{true: "SIGKILL", false: "SIGTERM"}[killSlave])

		master := startCrashChild(t, haCrashMasterConf(masterDir, ports, flushDiskType, transient))
		mc := remotingtest.Dial(t, master.Addr)
		if round == 0 || freshMaster {
			for _, topic := range crashTopics {
				relCreateTopic(t, mc, topic, 4)
			}
		}
		slave := startCrashChild(t, haCrashSlaveConf(slaveDir, ports, flushDiskType, transient))
		probe := &haProber{c: mc, prefix: fmt.Sprintf("probe-r%03d", round), logs: func() string {
			return fmt.Sprintf("master stderr:\n%s\nslave stderr:\n%s", master.Stderr(), slave.Stderr())
		}}
		history = append(history, probe.probeUntil(t, codec.ResponseSuccess, codec.ResponseSlaveNotAvailable))

		cfg := crashLoadConfig(master.Addr, round, seed)
		cfg.waitStoreMsgOK = true
		load := startRelLoad(cfg)
		if !load.waitAcked(target, 2*time.Minute) {
			load.halt()
			_, codes, remarks, failures := load.result()
			t.Fatalf("round %d: %d of %d acknowledgements; codes %v %v, %d failures\nmaster stderr:\n%s\nslave stderr:\n%s",
				round, load.acked.Load(), target, codes, remarks, failures, master.Stderr(), slave.Stderr())
		}
		master.Kill(t)
		load.halt()
		mc.Close()
		acks, codes, remarks, failures := load.result()
		for code := range codes {
			require.Failf(t, "unexpected answer", "round %d: code %d (%q) x%d", round, code, remarks[code], codes[code])
		}
		if killSlave {
			slave.Kill(t)
		} else {
			slave.Terminate(t)
		}
		require.NotContains(t, master.Stderr(), "refusing a slave",
			"round %d: the master never found its slave ahead or diverged", round)

		history = append(history, acks...)
		verify := func() (first, end int64) {
			defer func() { // a failed require ends the test through its deferred calls
				if t.Failed() {
					t.Logf("round %d: master stderr:\n%s\nslave stderr:\n%s", round, master.Stderr(), slave.Stderr())
				}
			}()
			ml, sl := readHACommitLog(t, masterDir), readHACommitLog(t, slaveDir)
			end, same, ackedEnd := haVerifyReplica(t, ml, sl, history)
			// Whatever the slave got was in the master's files (the page cache survives SIGKILL), in
			// every mode: so is every acknowledged message, and the restarted master is never behind
			// its slave.
			require.Equal(t, end, same, "round %d: the killed master's files hold everything its slave has", round)
			require.GreaterOrEqual(t, same, ackedEnd, "round %d: the master's files hold every acknowledged message", round)
			return sl.first, end
		}
		first, end := verify()
		t.Logf("round %d: %d acknowledged (%d unanswered at the kill), on the slave and in the master's files; "+
			"slave CommitLog [%d, %d) byte-identical to the master's; %d acknowledged checked in all",
			round, len(acks), failures, first, end, len(history))
	}

	// The slave restarted mid-stream (the pair as the rounds left it: a slave never needs a fresh store).
	round := rounds
	killSlave := rng.IntN(2) == 0
	target := int64(100 + rng.IntN(300))
	t.Logf("restart phase: SYNC_FLUSH; stop the slave by %s after %d acknowledgements",
		map[bool]string{true: "SIGKILL", false: "SIGTERM"}[killSlave], target)
	master := startCrashChild(t, haCrashMasterConf(masterDir, ports, "SYNC_FLUSH", transientIn(round)))
	mc := remotingtest.Dial(t, master.Addr)
	slave := startCrashChild(t, haCrashSlaveConf(slaveDir, ports, "SYNC_FLUSH", false))
	probe := &haProber{c: mc, prefix: fmt.Sprintf("probe-r%03d", round)}
	history = append(history, probe.probeUntil(t, codec.ResponseSuccess, codec.ResponseSlaveNotAvailable))
	cfg := crashLoadConfig(master.Addr, round, seed)
	cfg.waitStoreMsgOK = true
	load := startRelLoad(cfg)
	require.True(t, load.waitAcked(target, 2*time.Minute), "acknowledgements before the slave stops")
	if killSlave {
		slave.Kill(t)
	} else {
		slave.Terminate(t)
	}
	// Without its slave the master answers SLAVE_NOT_AVAILABLE at once; the message is stored
	// and reaches the slave once it is back.
	gone := probe.probeUntil(t, codec.ResponseSlaveNotAvailable, codec.ResponseSuccess)
	slave = startCrashChild(t, haCrashSlaveConf(slaveDir, ports, "SYNC_FLUSH", false))
	back := probe.probeUntil(t, codec.ResponseSuccess, codec.ResponseSlaveNotAvailable)
	require.True(t, load.waitAcked(load.acked.Load()+target, 2*time.Minute), "acknowledgements after the slave is back")
	load.halt()
	acks, codes, remarks, _ := load.result()
	for code := range codes {
		require.Equal(t, int32(codec.ResponseSlaveNotAvailable), code, "code %d (%q) x%d", code, remarks[code], codes[code])
	}
	// Nothing else writes now: once this is answered SUCCESS the slave holds the master's end.
	last := probe.probeUntil(t, codec.ResponseSuccess)
	master.Terminate(t)
	slave.Terminate(t)
	history = append(history, acks...)
	history = append(history, gone, back, last)
	ml, sl := readHACommitLog(t, masterDir), readHACommitLog(t, slaveDir)
	end, same, _ := haVerifyReplica(t, ml, sl, history)
	require.Equal(t, end, same, "the slave's CommitLog equals the master's")
	masterEnd := haCommitLog{files: ml.files, first: sl.first}.end()
	require.Equal(t, masterEnd, end, "the restarted slave caught up with the master")
	t.Logf("restart phase: %d acknowledged, %d SLAVE_NOT_AVAILABLE answers to the load; slave CommitLog [%d, %d) "+
		"byte-identical to the master's and ending where it does",
		len(acks), codes[int32(codec.ResponseSlaveNotAvailable)], sl.first, end)
	require.NotContains(t, master.Stderr(), "refusing a slave", "the master never found its slave diverged")
	t.Logf("%d rounds: %d acknowledged messages checked on the slave at the end", rounds, len(history))
}
