package ha

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/testutil"
)

// startEpochServer is a controller-mode master over log with the given epoch entries.
func startEpochServer(t *testing.T, log MasterLog, entries ...EpochEntry) *Server {
	t.Helper()
	epochs, err := OpenEpochFile("")
	require.NoError(t, err)
	require.NoError(t, epochs.Reset(entries))
	cfg := testServerConfig()
	cfg.Epochs = epochs
	s, err := NewServer(cfg, log, nil)
	require.NoError(t, err)
	s.Start()
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// epochClient is a controller-mode slave; truncations are sent to the returned channel.
func epochClient(t *testing.T, addr string, log SlaveLog, brokerID int64, entries ...EpochEntry) (*Client, *EpochFile, chan int64) {
	t.Helper()
	epochs, err := OpenEpochFile("")
	require.NoError(t, err)
	require.NoError(t, epochs.Reset(entries))
	truncated := make(chan int64, 1)
	cfg := testClientConfig(addr)
	cfg.Handshake = &ClientHandshake{BrokerID: brokerID, Epochs: epochs, OnTruncate: func(off int64) { truncated <- off }}
	c, err := NewClient(cfg, log, nil)
	require.NoError(t, err)
	c.Start()
	t.Cleanup(func() { _ = c.Close() })
	return c, epochs, truncated
}

// A new replica follows from the master's last file, takes the master's epoch entries, and its
// acknowledgements count once it is in the SyncStateSet.
func TestHandshakeNewReplicaFollows(t *testing.T) {
	master := newMemLog(testFileSize)
	for i := range 20 {
		master.Append(record(i, 500))
	}
	srv := startEpochServer(t, master, EpochEntry{1, 0}, EpochEntry{3, 2000})
	srv.SetSyncStateSet([]int64{2})
	slave := newMemLog(testFileSize)
	_, epochs, _ := epochClient(t, srv.Addr().String(), slave, 2)
	end := master.MaxPhyOffset()
	testutil.Eventually(t, "the replica catches up", func() bool { return slave.MaxPhyOffset() == end })
	lastFile := end - end%testFileSize
	require.Equal(t, master.Bytes(lastFile, end), slave.Bytes(lastFile, end))
	require.Equal(t, []EpochEntry{{1, 0}, {3, 2000}}, epochs.Entries())
	testutil.Eventually(t, "the acknowledgement", func() bool { return srv.AckedOffset() == end })
}

// An old master comes back as a replica of the new one: its tail past the point where the new master's
// epoch began was never acknowledged, and the handshake has it truncated there; after the truncation it
// follows and ends byte-identical to the new master, with its epochs.
func TestHandshakeOldMasterTruncatesItsTail(t *testing.T) {
	oldMaster, newMaster := newMemLog(testFileSize), newMemLog(testFileSize)
	for i := range 10 { // both hold epoch 1's first 10 records
		r := record(i, 300)
		oldMaster.Append(r)
		newMaster.Append(r)
	}
	common := newMaster.MaxPhyOffset()
	for i := 10; i < 14; i++ { // the old master's tail: never acknowledged, lost in the failover
		oldMaster.Append(record(i, 300))
	}
	for i := 100; i < 120; i++ { // the new master's own records, in epoch 2
		newMaster.Append(record(i, 400))
	}
	srv := startEpochServer(t, newMaster, EpochEntry{1, 0}, EpochEntry{2, common})
	srv.SetSyncStateSet([]int64{0})
	c, _, truncated := epochClient(t, srv.Addr().String(), oldMaster, 0, EpochEntry{1, 0})
	var to int64
	select {
	case to = <-truncated:
	case <-time.After(30 * time.Second):
		t.Fatal("no truncation asked for")
	}
	require.Equal(t, common, to)
	require.NoError(t, c.Close())
	require.Zero(t, srv.AckedOffset(), "a replica told to truncate acknowledges nothing")

	oldMaster.truncate(to)
	_, epochs, _ := epochClient(t, srv.Addr().String(), oldMaster, 0, EpochEntry{1, 0})
	end := newMaster.MaxPhyOffset()
	testutil.Eventually(t, "the old master catches up", func() bool { return oldMaster.MaxPhyOffset() == end })
	require.Equal(t, newMaster.Bytes(0, end), oldMaster.Bytes(0, end), "byte-identical after the truncation")
	require.Equal(t, []EpochEntry{{1, 0}, {2, common}}, epochs.Entries())
	testutil.Eventually(t, "the acknowledgement", func() bool { return srv.AckedOffset() == end })
}

// A replica that shares no epoch with the master is refused and gets nothing; so is a 4.x slave (no
// handshake) of a controller-mode master; and a 4.x master closes a controller-mode replica's handshake
// as a bad report, so that it never streams into it.
func TestHandshakeRefusals(t *testing.T) {
	master := newMemLog(testFileSize)
	master.Append(record(0, 300))
	srv := startEpochServer(t, master, EpochEntry{5, 0})

	foreign := newMemLog(testFileSize)
	require.NoError(t, foreign.AppendReplica(0, 300, bytes.NewReader(record(9, 300))))
	c, epochs, _ := epochClient(t, srv.Addr().String(), foreign, 1, EpochEntry{4, 0})
	testutil.Eventually(t, "refused twice", func() bool { return srv.SlavesRefused() >= 2 && c.Connects() >= 2 })
	require.Equal(t, record(9, 300), foreign.Bytes(0, 300), "nothing streamed into it")
	require.Equal(t, []EpochEntry{{4, 0}}, epochs.Entries(), "its epochs kept")
	require.NoError(t, c.Close())

	before := srv.SlavesRefused()
	nc, err := net.Dial("tcp", srv.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	var rep [ReportBytes]byte
	binary.BigEndian.PutUint64(rep[:], 0)
	_, err = nc.Write(rep[:])
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = nc.Read(rep[:])
	require.Error(t, err, "closed without a frame")
	require.False(t, isTimeout(err))
	require.Equal(t, before+1, srv.SlavesRefused())
	require.Zero(t, srv.AckedOffset())

	classic := startServer(t, master)
	replica := newMemLog(testFileSize)
	rc, _, _ := epochClient(t, classic.Addr().String(), replica, 1, EpochEntry{5, 0})
	testutil.Eventually(t, "closed by the 4.x master, again and again", func() bool { return rc.Connects() >= 2 })
	require.Zero(t, replica.MaxPhyOffset())
	require.Zero(t, classic.AckedOffset())
}

// Handshakes survive any bytes: a decoder that fails cleanly, and an encode/decode round trip.
func FuzzHandshake(f *testing.F) {
	f.Add(handshake{BrokerID: 2, MaxOffset: 4096, Entries: []EpochEntry{{1, 0}, {2, 100}}}.encode()[8:])
	f.Add(handshakeReply{Status: HandshakeTruncate, Offset: 77, Entries: []EpochEntry{{3, 0}}}.encode())
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		if h, err := readHandshakeBody(bytes.NewReader(data)); err == nil {
			again, err := readHandshakeBody(bytes.NewReader(h.encode()[8:]))
			require.NoError(t, err)
			require.Equal(t, h.BrokerID, again.BrokerID)
			require.Equal(t, h.MaxOffset, again.MaxOffset)
			require.Equal(t, len(h.Entries), len(again.Entries))
		}
		if r, err := readHandshakeReply(bytes.NewReader(data)); err == nil {
			again, err := readHandshakeReply(bytes.NewReader(r.encode()))
			require.NoError(t, err)
			require.Equal(t, r.Status, again.Status)
			require.Equal(t, r.Offset, again.Offset)
			require.Equal(t, len(r.Entries), len(again.Entries))
		}
	})
}

// In controller mode a SYNC wait completes only once every replica of the SyncStateSet holds the message:
// a replica outside the set does not count, one inside that lags holds the wait back until the set
// shrinks (what the controller accepted), and with the master alone in the set minInSyncReplicas decides.
func TestSyncStateSetAcknowledgements(t *testing.T) {
	master := newMemLog(1 << 20)
	master.Append(record(0, 1000))
	srv := startEpochServer(t, master, EpochEntry{1, 0})
	cfg := DefaultReplicasConfig()
	cfg.MinInSyncReplicas = 1
	cfg.SlaveTimeout = time.Minute // a timeout is not what this test is about
	r, err := NewReplicas(cfg, srv, nil, nil)
	require.NoError(t, err)
	defer r.Close()
	srv.SetSyncStateSet([]int64{1, 2})

	fast := newMemLog(1 << 20)
	epochClient(t, srv.Addr().String(), fast, 1, EpochEntry{1, 0})
	testutil.Eventually(t, "replica 1 caught up", func() bool { return fast.MaxPhyOffset() == 1000 })
	first := &waitResult{}
	require.NoError(t, r.Wait(1000, first))
	require.False(t, first.done.Load(), "replica 2 of the set holds nothing yet")
	require.Zero(t, srv.AckedOffset())

	slow := newMemLog(1 << 20)
	slow.block = make(chan struct{}) // its appends wait
	epochClient(t, srv.Addr().String(), slow, 2, EpochEntry{1, 0})
	testutil.Eventually(t, "both replicas connected", func() bool { return len(srv.ReplicaStates()) == 2 })
	require.False(t, first.done.Load())

	// The controller accepted the set without replica 2: replica 1's acknowledgement is enough.
	srv.SetSyncStateSet([]int64{1})
	require.NoError(t, first.result(t))
	require.Equal(t, int64(1000), srv.AckedOffset())
	states := srv.ReplicaStates()
	require.Equal(t, int64(1), states[0].BrokerID)
	require.Equal(t, int64(1000), states[0].AckOffset)
	require.False(t, states[0].CaughtUpAt.IsZero())
	require.Equal(t, int64(2), states[1].BrokerID)
	require.Zero(t, states[1].AckOffset)
	require.True(t, states[1].CaughtUpAt.IsZero(), "replica 2 has not caught up")

	// Replica 2 catches up and rejoins: a new message waits for both again.
	close(slow.block)
	testutil.Eventually(t, "replica 2 caught up", func() bool {
		s := srv.ReplicaStates()
		return s[1].AckOffset == 1000
	})
	srv.SetSyncStateSet([]int64{1, 2})
	master.Append(record(1, 500))
	srv.Notify()
	second := &waitResult{}
	require.NoError(t, r.Wait(1500, second))
	require.NoError(t, second.result(t))
	require.Equal(t, int64(1500), srv.AckedOffset())

	// The master alone: minInSyncReplicas 1 lets it acknowledge at once; 2 refuses.
	srv.SetSyncStateSet(nil)
	alone := &waitResult{}
	require.NoError(t, r.Wait(1<<40, alone))
	require.NoError(t, alone.result(t))
	strict, err := NewReplicas(ReplicasConfig{SlaveTimeout: time.Second, FallBehindMax: 1 << 30, WaiterQueueMax: 16,
		MinInSyncReplicas: 2}, srv, nil, nil)
	require.NoError(t, err)
	defer strict.Close()
	refused := &waitResult{}
	require.NoError(t, strict.Wait(1<<40, refused))
	require.ErrorIs(t, refused.result(t), ErrSlaveNotAvailable)
}

// With the master alone in the SyncStateSet every byte counts as acknowledged; once a replica joins, a
// wait holds again until that replica has the message (the acknowledged offset moves back to its).
func TestSyncStateSetRejoinHoldsAcknowledgementsAgain(t *testing.T) {
	master := newMemLog(1 << 20)
	master.Append(record(0, 1000))
	srv := startEpochServer(t, master, EpochEntry{1, 0})
	cfg := DefaultReplicasConfig()
	cfg.MinInSyncReplicas = 1
	cfg.SlaveTimeout = time.Minute
	r, err := NewReplicas(cfg, srv, nil, nil)
	require.NoError(t, err)
	defer r.Close()
	srv.SetSyncStateSet(nil) // a new master: the set is itself
	alone := &waitResult{}
	require.NoError(t, r.Wait(1000, alone))
	require.NoError(t, alone.result(t))

	slow := newMemLog(1 << 20)
	slow.block = make(chan struct{})
	epochClient(t, srv.Addr().String(), slow, 2, EpochEntry{1, 0})
	testutil.Eventually(t, "the replica connected", func() bool { return len(srv.ReplicaStates()) == 1 })
	srv.SetSyncStateSet([]int64{2})
	require.Zero(t, srv.AckedOffset(), "back to what the replica has")
	held := &waitResult{}
	require.NoError(t, r.Wait(1000, held))
	require.False(t, held.done.Load(), "the joined replica has nothing yet")
	close(slow.block)
	require.NoError(t, held.result(t))
	require.Equal(t, int64(1000), srv.AckedOffset())
}
