package broker

// Storage faults under the whole broker (issue 8 item 2), through the store's file-system
// seam (faultfs.FS); fault_linux_test.go fills a real (tmpfs) file system.
//
//   - Disk full, by the usage ratio and by ENOSPC from file allocation: sends are refused
//     with SERVICE_NOT_AVAILABLE and a remark that says the disk is full; everything stored
//     stays readable; sends succeed again by themselves once space returns (no restart).
//   - ENOSPC while creating a ConsumeQueue file: sends go on; the messages become readable
//     once the file can be created.
//   - A failing fsync (EIO) is never reported as success: the SYNC_FLUSH send waiting on it
//     gets FLUSH_DISK_TIMEOUT with the reason; the store turns read-only (later sends
//     SERVICE_NOT_AVAILABLE naming the failed flush), stored data stays readable, and a
//     restart brings everything acknowledged back.
//   - A record damaged in the middle of the CommitLog, below what the checkpoint knew
//     durable, stops the broker's start with store.ErrCorruption naming file and offset.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// faultSender sends numbered messages to one topic and remembers the acknowledged ones.
type faultSender struct {
	t     testing.TB
	c     *remotingtest.Conn
	st    *store.Store // waited on before reading back: dispatch is asynchronous
	topic string
	n     int
	acks  []relAck
}

// send sends one message with a padLen-byte pad and returns the answer.
func (s *faultSender) send(padLen int) *codec.RemotingCommand {
	s.t.Helper()
	key := s.topic + "-" + strconv.Itoa(s.n)
	s.n++
	queueID := int32(s.n % 2)
	body := relBody(key, padLen)
	resp := s.c.Call(sendV2(s.topic, queueID, body, props(codec.PropertyKeys, key)))
	if resp.Code == int32(codec.ResponseSuccess) {
		var h codec.SendMessageResponseHeader
		require.NoError(s.t, h.Decode(resp.ExtFields))
		_, phys, err := codec.DecodeOffsetMsgID(h.MsgID)
		require.NoError(s.t, err)
		s.acks = append(s.acks, relAck{key: key, topic: s.topic, queueID: queueID, queueOffset: h.QueueOffset,
			phys: phys, bodyLen: len(body)})
	}
	return resp
}

// sendUntil sends until an answer has code want (the broker's state changes asynchronously:
// the disk check runs every cleanResourceInterval) and returns that answer.
func (s *faultSender) sendUntil(want codec.ResponseCode, padLen int) *codec.RemotingCommand {
	s.t.Helper()
	var resp *codec.RemotingCommand
	answered := testutil.Poll(30*time.Second, func() bool {
		resp = s.send(padLen)
		return resp.Code == int32(want)
	})
	require.True(s.t, answered, "no answer %d within 30 s; last: code %d %q", want, resp.Code, resp.Remark)
	return resp
}

// verify reads every queue back and checks the acknowledged messages.
func (s *faultSender) verify() int {
	s.t.Helper()
	if s.st != nil {
		testutil.Eventually(s.t, fmt.Sprintf("dispatch catches up (%d bytes behind)", s.st.DispatchBehindBytes()),
			func() bool { return s.st.DispatchBehindBytes() == 0 })
	}
	return relVerifyAcks(s.t, s.c, []string{s.topic}, 2, s.acks)
}

// requireDiskFullAnswer checks a refusal for a full disk.
func requireDiskFullAnswer(t testing.TB, resp *codec.RemotingCommand) {
	t.Helper()
	require.Equal(t, int32(codec.ResponseServiceNotAvailable), resp.Code)
	require.Contains(t, resp.Remark, "disk full", "the remark says why")
}

func faultBrokerConfig(dir, flushDiskType string) func(*Config) {
	return func(c *Config) {
		c.StorePathRootDir = dir
		c.FlushDiskType = flushDiskTypeOf(flushDiskType)
		c.MappedFileSizeCommitLog = 1 << 20
		c.MaxMessageSize = 64 << 10
		c.CleanResourceInterval = 20 * time.Millisecond
	}
}

func TestFaultDiskFullThroughSeam(t *testing.T) {
	dir := t.TempDir()
	ffs := faultfs.New(store.NewOSFS(nil))
	rb := startRelBroker(t, faultBrokerConfig(dir, "SYNC_FLUSH"), ffs)
	c := remotingtest.Dial(t, rb.addr)
	relCreateTopic(t, c, "FullT", 2)
	s := &faultSender{t: t, c: c, st: rb.st, topic: "FullT"}
	for range 20 {
		require.Equal(t, int32(codec.ResponseSuccess), s.send(100).Code)
	}

	// 1. The disk is 95 % used: above diskSpaceWarningLevelRatio (90 %).
	ffs.SetDiskUsage(func(string) (store.DiskUsage, error) {
		return store.DiskUsage{TotalBytes: 100 << 30, FreeBytes: 5 << 30}, nil
	})
	requireDiskFullAnswer(t, s.sendUntil(codec.ResponseServiceNotAvailable, 100))
	require.NotZero(t, rb.st.RunningFlags()&store.FlagDiskFull)
	requireDiskFullAnswer(t, s.send(100)) // and it stays refused
	s.verify()                            // what is stored stays readable
	ffs.SetDiskUsage(nil)
	s.sendUntil(codec.ResponseSuccess, 100) // space is back: no restart needed

	// 2. ENOSPC creating the next CommitLog file. The standby file is ready, so the put that
	// rolls into it succeeds; preparing the one after it fails, and puts stop until it works.
	remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpCreate | faultfs.OpAllocate, PathContains: "commitlog", Err: syscall.ENOSPC})
	requireDiskFullAnswer(t, s.sendUntil(codec.ResponseServiceNotAvailable, 60<<10))
	requireDiskFullAnswer(t, s.send(100))
	s.verify()
	remove()
	s.sendUntil(codec.ResponseSuccess, 100)

	// 3. ENOSPC creating a ConsumeQueue file (a queue's first): sends go on; the dispatcher
	// retries and the messages become readable once the file can be made.
	remove = ffs.Inject(faultfs.Rule{Ops: faultfs.OpCreate | faultfs.OpAllocate, PathContains: "consumequeue", Err: syscall.ENOSPC})
	relCreateTopic(t, c, "FullNewT", 2)
	s2 := &faultSender{t: t, c: c, st: rb.st, topic: "FullNewT"}
	for range 5 {
		s2.send(100)
	}
	acked := len(s2.acks)
	remove()
	s2.sendUntil(codec.ResponseSuccess, 100)
	testutil.Eventually(t, "FullNewT/1 dispatched once the space is back", func() bool {
		resp := c.Call(codec.NewRequest(codec.RequestGetMaxOffset, map[string]string{"topic": "FullNewT", "queueId": "1"}, nil))
		n, _ := strconv.Atoi(resp.ExtFields["offset"])
		return n > 0 && rb.st.DispatchBehindBytes() == 0
	})
	s2.verify()
	s.verify()
	t.Logf("disk full through the seam: %d + %d messages acknowledged and read back; %d sent while ConsumeQueue files could not be created",
		len(s.acks), len(s2.acks), acked)
}

func TestFaultFsyncFailureIsNeverSuccess(t *testing.T) {
	for _, tc := range []struct {
		name          string
		flushDiskType string
		transientPool bool
	}{
		{"sync-mmap", "SYNC_FLUSH", false},
		{"sync-transient", "SYNC_FLUSH", true},
		{"async-mmap", "ASYNC_FLUSH", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ffs := faultfs.New(store.NewOSFS(nil))
			mutate := func(c *Config) {
				faultBrokerConfig(dir, tc.flushDiskType)(c)
				c.TransientStorePoolEnable = tc.transientPool
				c.TransientStorePoolSize = 2
				c.TransientStorePoolPinned = false
				c.FlushIntervalCommitLog = 10 * time.Millisecond
			}
			rb := startRelBroker(t, mutate, ffs)
			c := remotingtest.Dial(t, rb.addr)
			relCreateTopic(t, c, "EIOT", 2)
			s := &faultSender{t: t, c: c, st: rb.st, topic: "EIOT"}
			for range 10 {
				require.Equal(t, int32(codec.ResponseSuccess), s.send(100).Code)
			}
			remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpSync, PathContains: "commitlog", Err: syscall.EIO})
			if tc.flushDiskType == "SYNC_FLUSH" {
				// The send whose durability depends on the failing fsync.
				resp := s.send(100)
				require.Equal(t, int32(codec.ResponseFlushDiskTimeout), resp.Code, "a failed fsync answered %d %q", resp.Code, resp.Remark)
				require.Contains(t, resp.Remark, "input/output error")
			} else {
				// ASYNC_FLUSH answers before the flush; the flush loop meets the error once
				// flushCommitLogLeastPages (4) pages wait, which can happen between two of
				// these sends: from then on the store is read-only and answers
				// SERVICE_NOT_AVAILABLE, never SUCCESS.
				for range 6 {
					code := s.send(4 << 10).Code
					if code == int32(codec.ResponseServiceNotAvailable) {
						break
					}
					require.Equal(t, int32(codec.ResponseSuccess), code)
				}
				testutil.Eventually(t, "the async flush meets the failing fsync",
					func() bool { return rb.st.RunningFlags()&store.FlagNotWriteable != 0 })
			}
			// The store is read-only now (the kernel may have dropped the pages it could not
			// write): refused, with the reason.
			resp := s.sendUntil(codec.ResponseServiceNotAvailable, 100)
			require.Contains(t, resp.Remark, "flush failed")
			s.verify() // stored data stays readable
			remove()
			resp = s.send(100)
			require.Equal(t, int32(codec.ResponseServiceNotAvailable), resp.Code, "read-only until a restart")

			// Restart without the fault: everything acknowledged is there, and sends work.
			c.Close()
			_ = rb.close() // may report the flush that failed; the restart is what matters
			rb2, err := openRelBroker(t, rb.cfg, nil)
			require.NoError(t, err)
			c2 := remotingtest.Dial(t, rb2.addr)
			s.c, s.st = c2, rb2.st
			s.verify()
			require.Equal(t, int32(codec.ResponseSuccess), s.send(100).Code)
			s.verify()
		})
	}
}

// patchCheckpointLogicsOffset rewrites the ringmq section of a checkpoint (PROTOCOL.md §7.5,
// store/checkpoint.go) with another logicsOffset and a matching CRC.
func patchCheckpointLogicsOffset(t testing.TB, path string, logics int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, b, 4096)
	require.Equal(t, uint32(0x52474D51), binary.BigEndian.Uint32(b[64:]), "ringmq checkpoint magic")
	binary.BigEndian.PutUint64(b[80:], uint64(logics))
	binary.BigEndian.PutUint32(b[108:], crc32.ChecksumIEEE(b[64:108]))
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func TestFaultCorruptRecordMidFileStopsStart(t *testing.T) {
	dir := t.TempDir()
	rb := startRelBroker(t, faultBrokerConfig(dir, "SYNC_FLUSH"), nil)
	c := remotingtest.Dial(t, rb.addr)
	relCreateTopic(t, c, "CorruptT", 2)
	s := &faultSender{t: t, c: c, st: rb.st, topic: "CorruptT"}
	for range 30 {
		require.Equal(t, int32(codec.ResponseSuccess), s.send(200).Code)
	}
	c.Close()
	require.NoError(t, rb.close())

	// Damage the body of the 11th message, in the middle of the first CommitLog file.
	victim := s.acks[10]
	file := filepath.Join(dir, "commitlog", "00000000000000000000")
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	rec, err := codec.DecodeRecord(data[victim.phys:], true)
	require.NoError(t, err)
	bodyAt := victim.phys + int64(rec.TotalSize) - int64(len(rec.Body)+1+len(rec.Topic)+2+len(rec.Properties))
	data[bodyAt+5] ^= 0xFF
	require.NoError(t, os.WriteFile(file, data, 0o644))
	// The state a crash leaves when the CommitLog was durable and the ConsumeQueues were not:
	// the abort marker, and a checkpoint whose logics offset is behind.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644))
	patchCheckpointLogicsOffset(t, filepath.Join(dir, "checkpoint"), 0)

	_, err = openRelBroker(t, rb.cfg, nil)
	require.Error(t, err, "a broker started on a damaged CommitLog")
	require.True(t, errors.Is(err, store.ErrCorruption), "%v", err)
	require.ErrorIs(t, err, codec.ErrBodyCRC)
	require.Contains(t, err.Error(), file)
	require.Contains(t, err.Error(), "at offset "+strconv.FormatInt(victim.phys, 10))
	require.True(t, strings.Contains(err.Error(), "below the checkpoint's durable offset"), err.Error())
}

// TestSyncFlushTransientPoolAckIsVisible: under SYNC_FLUSH with the transient pool, the durable
// write also commits the bytes, and the dispatcher must learn of it; before the fix a message
// answered SUCCESS stayed out of its ConsumeQueue until another put's commit happened to wake
// the dispatcher (found by TestFaultFsyncFailureIsNeverSuccess/sync-transient).
func TestSyncFlushTransientPoolAckIsVisible(t *testing.T) {
	rb := startRelBroker(t, func(c *Config) {
		faultBrokerConfig(t.TempDir(), "SYNC_FLUSH")(c)
		c.TransientStorePoolEnable = true
		c.TransientStorePoolSize = 2
		c.TransientStorePoolPinned = false
	}, nil)
	c := remotingtest.Dial(t, rb.addr)
	relCreateTopic(t, c, "VisibleT", 1)
	maxOffset := func() string {
		resp := c.Call(codec.NewRequest(codec.RequestGetMaxOffset, map[string]string{"topic": "VisibleT", "queueId": "0"}, nil))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code)
		return resp.ExtFields["offset"]
	}
	for i := range 20 {
		resp := c.Call(sendV2("VisibleT", 0, []byte("visible "+strconv.Itoa(i)), ""))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		testutil.Eventually(t, fmt.Sprintf("acknowledged message %d reaches its ConsumeQueue without another send", i),
			func() bool { return maxOffset() == strconv.Itoa(i+1) })
	}
}

// TestAsyncTransientPoolAckIsVisibleBeforeCommit: under ASYNC_FLUSH with the transient pool a consumer
// gets a message as soon as the send is answered, not after the pool's commit: a long-polling pull
// parked on the empty queue is answered with it although no commit happens (commitIntervalCommitLog
// an hour, commitCommitLogLeastPages more than a file holds). Request-reply round trips took one
// commit interval (~200 ms) when consumers saw committed bytes only.
func TestAsyncTransientPoolAckIsVisibleBeforeCommit(t *testing.T) {
	rb := startRelBroker(t, func(c *Config) {
		faultBrokerConfig(t.TempDir(), "ASYNC_FLUSH")(c)
		withTransientPool(c)
		c.CommitIntervalCommitLog = time.Hour
		c.CommitCommitLogThoroughInterval = time.Hour
		c.CommitCommitLogLeastPages = 1 << 20
	}, nil)
	consumer := remotingtest.Dial(t, rb.addr)
	producer := remotingtest.Dial(t, rb.addr)
	relCreateTopic(t, producer, "SeenT", 1)

	pulled := make(chan *codec.RemotingCommand, 1)
	go func() {
		pulled <- consumer.Call(remotingtest.PullRequest("G", "SeenT", 0, 0, 32,
			codec.PullSysFlagSubscription|codec.PullSysFlagSuspend, 30*time.Second, "*"))
	}()
	testutil.Eventually(t, "the pull is parked", func() bool { return rb.b.read.HeldCount() == 1 })
	resp := producer.Call(sendV2("SeenT", 0, []byte("seen before any commit"), ""))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)

	var got *codec.RemotingCommand
	select {
	case got = <-pulled:
	case <-time.After(20 * time.Second):
		t.Fatal("the parked pull was not answered: the message is not visible before the commit")
	}
	requirePull(t, got, codec.ResponseSuccess, "FOUND", 1, 0, 1)
	recs := remotingtest.Records(t, got.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "seen before any commit", string(recs[0].Body))
	require.Zero(t, rb.st.FlushedPhyOffset(), "nothing was committed (so nothing flushed): the test's premise")
}
