package namesrv

import (
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

// fakeExtension answers code 1005 (CONTROLLER_GET_METADATA_INFO) and BROKER_HEARTBEAT, as an
// embedded controller would, and counts closed connections.
type fakeExtension struct {
	heartbeats atomic.Int32
	closed     atomic.Int32
}

func (e *fakeExtension) OnRequest(c netio.Conn, req *codec.RemotingCommand) bool {
	switch codec.RequestCode(req.Code) {
	case codec.RequestBrokerHeartbeat:
		e.heartbeats.Add(1)
	case codec.RequestControllerGetMetadataInfo:
	default:
		return false
	}
	_ = c.WriteCommand(codec.NewResponse(req, codec.ResponseSuccess, "from the extension"))
	return true
}

func (e *fakeExtension) OnClose(netio.Conn) { e.closed.Add(1) }

func TestExtensionAnswersItsCodes(t *testing.T) {
	n, err := New(testConfig(t, netio.EngineStd), testLogger(), prometheus.NewRegistry())
	require.NoError(t, err)
	ext := &fakeExtension{}
	n.SetExtension(ext)
	require.NoError(t, n.Start())
	t.Cleanup(func() { stopNamesrv(t, n) })
	c := dial(t, n)

	requireCode(t, c.call(request(codec.RequestControllerGetMetadataInfo, nil, nil)), codec.ResponseSuccess, "from the extension")
	// A heartbeat with a brokerId (controller mode) goes to the extension; one without stays here.
	hb := map[string]string{"clusterName": "c1", "brokerAddr": "127.0.0.1:10911", "brokerName": "broker-a"}
	requireCode(t, c.call(request(codec.RequestBrokerHeartbeat, hb, nil)), codec.ResponseSuccess, "")
	require.Zero(t, ext.heartbeats.Load())
	hb["brokerId"] = "1"
	requireCode(t, c.call(request(codec.RequestBrokerHeartbeat, hb, nil)), codec.ResponseSuccess, "from the extension")
	require.Equal(t, int32(1), ext.heartbeats.Load())
	// The name server's own codes are still its own.
	requireCode(t, c.call(request(codec.RequestGetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)),
		codec.ResponseTopicNotExist, "No topic route info in name server for the topic: T")

	require.NoError(t, c.Close())
	testutil.Eventually(t, "the extension hears of the closed connection", func() bool { return ext.closed.Load() == 1 })
}
