package broker

import (
	"encoding/binary"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/acl"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// startPair starts a master (role SYNC_MASTER or ASYNC_MASTER, with mutate applied) with its embedded
// name server, and a slave of the same brokerName registered there, following the master's HA port.
// The slave syncs metadata from its master 10 ms after start, then every 100 ms.
func startPair(t *testing.T, role string, mutate func(*Config)) (master, slave *testBroker) {
	t.Helper()
	return startPairWith(t, role, mutate, mutate)
}

// startPairWith is startPair with separate changes for the master and the slave.
func startPairWith(t *testing.T, role string, mutateMaster, mutateSlave func(*Config)) (master, slave *testBroker) {
	t.Helper()
	master = startTestBroker(t, func(c *Config) {
		c.BrokerRole = brokerRoleOf(role)
		c.HAListenPort = 0
		c.SlaveTimeout = 3 * time.Second
		if mutateMaster != nil {
			mutateMaster(c)
		}
	})
	slave = startTestBroker(t, func(c *Config) {
		c.BrokerRole = RoleSlave
		c.BrokerID = 1
		c.NamesrvEmbedded = false
		c.NamesrvAddr = master.NamesrvAddr
		c.HAListenPort = 0
		c.HAMasterAddress = master.b.haServer.Addr().String()
		c.slaveSyncInitialDelay = 10 * time.Millisecond
		c.slaveSyncInterval = 100 * time.Millisecond
		if mutateSlave != nil {
			mutateSlave(c)
		}
	})
	return master, slave
}

// TestSyncMasterAnswersAfterTheSlaveHasTheMessage: in every store mode, a SYNC_MASTER answers a send
// only when a slave holds the message's bytes at the same offset; with the slave gone it answers
// SLAVE_NOT_AVAILABLE at once, and with a slave that does not acknowledge FLUSH_SLAVE_TIMEOUT, both with
// the full send header and the message stored. A slave refuses sends and serves the replicated records.
func TestSyncMasterAnswersAfterTheSlaveHasTheMessage(t *testing.T) {
	for _, mode := range storeModes {
		t.Run(mode.name, func(t *testing.T) {
			master, slave := startPair(t, "SYNC_MASTER", func(c *Config) {
				mode.apply(c)
				c.SlaveTimeout = 500 * time.Millisecond
			})
			c := remotingtest.Dial(t, master.BrokerAddr)
			// The slave connects in the background: until then sends are SLAVE_NOT_AVAILABLE.
			testutil.Eventually(t, "a slave connected to the master",
				func() bool { return master.b.haServer.SlaveCount() == 1 })
			require.Equal(t, 1.0, gaugeSum(t, master.b, "ringmq_replica_slaves_connected"))
			require.Zero(t, gaugeSum(t, master.b, "ringmq_replica_slaves_behind_deleted"))
			for i := range 20 {
				resp := c.Call(sendV1("TopicHA", 0, []byte("replicated-"+string(rune('a'+i))), ""))
				require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "send %d: %s", i, resp.Remark)
				// Nothing else writes: the master's end is this message's end.
				require.GreaterOrEqual(t, slave.b.store.MaxPhyOffset(), master.b.store.MaxPhyOffset(),
					"answered only once the slave has it")
			}
			end := master.b.store.MaxPhyOffset()
			testutil.Eventually(t, "the slave dispatches its own ConsumeQueue",
				func() bool { return slave.b.store.GetMaxOffsetInQueue("TopicHA", 0) == 20 })
			// The topic was auto-created on the master; the slave has it from the metadata sync (§13.4).
			testutil.Eventually(t, "the slave synced TopicHA's config",
				func() bool { return slave.b.topics.Contains("TopicHA") })
			sc := remotingtest.Dial(t, slave.BrokerAddr)
			resp := sc.Call(remotingtest.PullRequest("G", "TopicHA", 0, 0, 32, codec.PullSysFlagSubscription, 0, "*"))
			require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
			recs := remotingtest.Records(t, resp.Body)
			require.Len(t, recs, 20)
			require.Equal(t, "replicated-a", string(recs[0].Body))
			require.Equal(t, end, slave.b.store.MaxPhyOffset())

			resp = sc.Call(sendV1("TopicHA", 0, []byte("to the slave"), ""))
			require.Equal(t, int32(codec.ResponseServiceNotAvailable), resp.Code, resp.Remark)

			// A "slave" that reports once and never again: FLUSH_SLAVE_TIMEOUT after slaveTimeout.
			slave.shutdown(t)
			testutil.Eventually(t, "the master to drop its slave",
				func() bool { return master.b.haServer.SlaveCount() == 0 })
			resp = c.Call(sendV1("TopicHA", 0, []byte("no slave"), ""))
			require.Equal(t, int32(codec.ResponseSlaveNotAvailable), resp.Code, resp.Remark)
			var h codec.SendMessageResponseHeader
			require.NoError(t, h.Decode(resp.ExtFields))
			require.NotEmpty(t, h.MsgID, "stored: the full send header")
			require.Equal(t, int64(20), h.QueueOffset)

			mute, err := net.Dial("tcp", master.b.haServer.Addr().String())
			require.NoError(t, err)
			defer mute.Close()
			var rep [8]byte
			binary.BigEndian.PutUint64(rep[:], uint64(master.b.store.MaxPhyOffset()))
			_, err = mute.Write(rep[:])
			require.NoError(t, err)
			testutil.Eventually(t, "a slave connected to the master",
				func() bool { return master.b.haServer.SlaveCount() == 1 })
			resp = c.Call(sendV1("TopicHA", 0, []byte("not acknowledged"), ""))
			require.Equal(t, int32(codec.ResponseFlushSlaveTimeout), resp.Code, resp.Remark)
			require.NoError(t, h.Decode(resp.ExtFields))
			require.Equal(t, int64(21), h.QueueOffset, "stored")
		})
	}
}

// TestSlavePullRules (PROTOCOL.md §13.5): a slave serves replicated messages; an offset past what it has
// is not corrected (PULL_RETRY_IMMEDIATELY, the request offset kept, the client sent to the group's
// broker) unless offsetCheckInSlave; a pull's commit offset is not stored on a slave.
func TestSlavePullRules(t *testing.T) {
	master, slave := startPair(t, "ASYNC_MASTER", nil)
	c := remotingtest.Dial(t, master.BrokerAddr)
	for i := range 3 {
		sendOK(t, c, sendV1("TopicSP", 0, []byte{'m', byte('0' + i)}, ""))
	}
	createTopic(t, slave.b, "TopicSP", 4)
	testutil.Eventually(t, "the slave dispatched TopicSP/0",
		func() bool { return slave.b.store.GetMaxOffsetInQueue("TopicSP", 0) == 3 })
	sc := remotingtest.Dial(t, slave.BrokerAddr)
	resp := sc.Call(remotingtest.PullRequest("G", "TopicSP", 0, 1, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 3, 0, 3)
	require.Len(t, remotingtest.Records(t, resp.Body), 2)

	resp = sc.Call(remotingtest.PullRequest("G", "TopicSP", 0, 100, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponsePullRetryImmediately, "OFFSET_OVERFLOW_BADLY", 100, 0, 3)

	cmd := remotingtest.PullRequest("G", "TopicSP", 0, 2, 32, subFlag|codec.PullSysFlagCommitOffset, 0, "*")
	cmd.ExtFields["commitOffset"] = "2"
	resp = sc.Call(cmd)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, int64(-1), slave.b.offsets.Query("G", "TopicSP", 0), "not stored on a slave")
}

// TestNewThatFailsReleasesReplication: a New that fails after making the HA listener and the SYNC_MASTER
// wait releases both: the same haListenPort can be bound again at once (the package's goleak check
// catches the wait's goroutines).
func TestNewThatFailsReleasesReplication(t *testing.T) {
	cfg := testBrokerConfig(t)
	cfg.BrokerRole = RoleSyncMaster
	cfg.HAListenPort = pickPort(t)
	cfg.AclEnable = true
	cfg.AclFile = t.TempDir() + "/absent.yml"
	for range 2 {
		_, err := New(cfg, Deps{Logger: testLogger(t), Namesrv: testNamesrv})
		require.ErrorIs(t, err, acl.ErrFile, "not: address already in use on haListenPort")
		cfg.StorePathRootDir = t.TempDir()
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(cfg.HAListenPort)))
	require.NoError(t, err, "haListenPort released")
	require.NoError(t, ln.Close())
}
