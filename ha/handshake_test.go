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
// acknowledgements count as a 4.x slave's do.
func TestHandshakeNewReplicaFollows(t *testing.T) {
	master := newMemLog(testFileSize)
	for i := range 20 {
		master.Append(record(i, 500))
	}
	srv := startEpochServer(t, master, EpochEntry{1, 0}, EpochEntry{3, 2000})
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
