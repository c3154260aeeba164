package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/controller"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// startController starts one controller (a raft group of one) on 127.0.0.1 and returns its
// remoting address.
func startController(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	raftAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := controller.DefaultConfig()
	cfg.SelfID = "n0"
	cfg.Peers = controller.Peers{{ID: "n0", Addr: raftAddr}}
	cfg.StorePath = t.TempDir()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.NetEngine = "std"
	cfg.RaftHeartbeatTimeout = 100 * time.Millisecond
	cfg.RaftElectionTimeout = 100 * time.Millisecond
	c, err := controller.New(cfg, false, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	require.NoError(t, c.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
		defer cancel()
		require.NoError(t, c.Shutdown(ctx))
	})
	testutil.Eventually(t, "the controller leads", c.IsLeader)
	return c.Addr().String()
}

// brokerGroup registers broker-a's replicas 1 (master) and 2 (in its SyncStateSet) with the
// controller at addr, as brokers in controller mode would; they heartbeat on the returned
// connection.
func brokerGroup(t *testing.T, addr string) *remotingtest.Conn {
	t.Helper()
	conn := remotingtest.Dial(t, addr)
	call := func(code codec.RequestCode, h header, body []byte) {
		t.Helper()
		resp := conn.Call(request(code, h, body))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "%s: %s", code, resp.Remark)
	}
	for _, r := range []struct {
		id         int64
		brokerAddr string
	}{{1, "127.0.0.1:10911"}, {2, "127.0.0.1:10921"}} { // 1 first: a new group takes only id 1
		id, brokerAddr := r.id, r.brokerAddr
		call(codec.RequestControllerApplyBrokerID, &codec.ApplyBrokerIDRequestHeader{ClusterName: "c1", BrokerName: "broker-a",
			AppliedBrokerID: id, RegisterCheckCode: brokerAddr + ";1"}, nil)
		call(codec.RequestBrokerHeartbeat, &codec.BrokerHeartbeatRequestHeader{ClusterName: "c1", BrokerAddr: brokerAddr,
			BrokerName: "broker-a", BrokerID: codec.Some(id), Epoch: codec.Some[int32](1), MaxOffset: codec.Some[int64](100)}, nil)
	}
	call(codec.RequestControllerElectMaster, &codec.ElectMasterRequestHeader{ClusterName: "c1", BrokerName: "broker-a", BrokerID: 1}, nil)
	set, err := (&codec.SyncStateSet{SyncStateSet: []int64{1, 2}, SyncStateSetEpoch: 1}).Encode()
	require.NoError(t, err)
	call(codec.RequestControllerAlterSyncStateSet, &codec.AlterSyncStateSetRequestHeader{BrokerName: "broker-a",
		MasterBrokerID: codec.Some[int64](1), MasterEpoch: codec.Some[int32](1)}, set)
	return conn
}

func TestControllerCommands(t *testing.T) {
	ctrl := startController(t)
	brokerGroup(t, ctrl)

	golden(t, "getControllerMetaData", ok(t, "getControllerMetaData", "-a", ctrl))
	golden(t, "getSyncStateSet", ok(t, "getSyncStateSet", "-a", ctrl, "-b", "broker-a"))
	golden(t, "getSyncStateSet_json", ok(t, "getSyncStateSet", "-a", "127.0.0.1:1;"+ctrl, "-b", "broker-a", "--output", "json"))

	// The designated slave becomes master; RocketMQ's -bn names the group.
	golden(t, "electMaster", ok(t, "electMaster", "-a", ctrl, "-c", "c1", "-bn", "broker-a", "-b", "2"))
	r := mqadmin(t, nil, "electMaster", "-a", ctrl, "-c", "c1", "-bn", "broker-a", "-b", "3")
	require.Equal(t, 1, r.code)
	golden(t, "error_electMaster_not_alive", r.stderr)

	r = mqadmin(t, nil, "cleanBrokerMetadata", "-a", ctrl, "-bn", "broker-a", "-b", "1")
	require.Equal(t, 2, r.code)
	golden(t, "error_cleanBrokerMetadata_no_cluster", r.stderr)
	r = mqadmin(t, nil, "cleanBrokerMetadata", "-a", ctrl, "-c", "c1", "-bn", "broker-a", "-b", "1")
	require.Equal(t, 1, r.code)
	golden(t, "error_cleanBrokerMetadata_alive", r.stderr)
	golden(t, "cleanBrokerMetadata", ok(t, "cleanBrokerMetadata", "-a", ctrl, "-c", "c1", "-bn", "broker-a", "-b", "1", "-l"))
	require.Contains(t, ok(t, "getSyncStateSet", "-a", ctrl, "-b", "broker-a"), "#SyncStateSetNums\t1\n")

	golden(t, "updateControllerConfig", ok(t, "updateControllerConfig", "-a", ctrl, "-k", "enableElectUncleanMaster", "-v", "true"))
	storePath := regexp.MustCompile(`(controllerStorePath +=  )\S+`)
	goldenWith(t, "getControllerConfig", ok(t, "getControllerConfig", "-a", ctrl),
		func(s string) string { return storePath.ReplaceAllString(s, "${1}DIR") })
	r = mqadmin(t, nil, "updateControllerConfig", "-a", ctrl, "-k", "controllerPeers", "-v", "x")
	require.Equal(t, 1, r.code)
	golden(t, "error_updateControllerConfig_fixed", r.stderr)
}

// TestGetBrokerEpoch: the fixture broker runs in classic mode and has no epoch file, so it
// does not answer GET_BROKER_EPOCH_CACHE; the text form is checked on a cache as a broker in
// controller mode answers it.
func TestGetBrokerEpoch(t *testing.T) {
	r := mqadmin(t, nil, "getBrokerEpoch", "-b", fixture.brokerName)
	require.Equal(t, 1, r.code)
	golden(t, "error_getBrokerEpoch_classic", r.stderr)

	var out bytes.Buffer
	res := &brokerEpochResult{Brokers: []brokerEpochs{{BrokerAddr: "127.0.0.1:10911", EpochEntryCache: codec.EpochEntryCache{
		ClusterName: "c1", BrokerName: "broker-a", BrokerID: 1, MaxOffset: 4096,
		EpochList: []codec.EpochEntry{{Epoch: 1, StartOffset: 0, EndOffset: 1024}, {Epoch: 2, StartOffset: 1024, EndOffset: 4096}}}}}}
	require.NoError(t, res.text(&out))
	require.Equal(t, "\n#clusterName\tc1\n#brokerName\tbroker-a\n#brokerAddr\t127.0.0.1:10911\n#brokerId\t1"+
		"\n#Epoch: EpochEntry{epoch=1, startOffset=0, endOffset=1024}\n#Epoch: EpochEntry{epoch=2, startOffset=1024, endOffset=4096}\n",
		out.String())
}

func TestTranslateTwoLetterFlags(t *testing.T) {
	require.Equal(t, []string{"electMaster", "--brokerName", "a", "--brokerName=b", "-b", "1", "-bnx"},
		translateTwoLetterFlags([]string{"electMaster", "-bn", "a", "-bn=b", "-b", "1", "-bnx"}))
}
