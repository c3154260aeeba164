package controller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

func testLogger() *slog.Logger {
	if testing.Verbose() && os.Getenv("CONTROLLER_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// testConfig is a controller on 127.0.0.1 with a free remoting port, short raft timeouts and
// a fast scan, its store in a temporary directory.
func testConfig(t *testing.T, self string, peers []Peer) Config {
	cfg := DefaultConfig()
	cfg.SelfID = self
	cfg.Peers = peers
	cfg.StorePath = t.TempDir()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.NetEngine = netio.EngineStd
	// Short enough for fast elections, long enough that a -race run on a loaded CI machine
	// does not lose its leader to a scheduling stall.
	cfg.RaftHeartbeatTimeout = 250 * time.Millisecond
	cfg.RaftElectionTimeout = 250 * time.Millisecond
	cfg.ScanNotActiveBrokerInterval = 10 * time.Millisecond
	return cfg
}

// stop shuts c down unless it is already stopped.
func stop(t *testing.T, c *Controller) {
	t.Helper()
	if c.state.Load() != stateStarted {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
	defer cancel()
	require.NoError(t, c.Shutdown(ctx))
}

// startInmemCluster starts n controllers on raft's in-memory transport and stores; now is
// their clock.
func startInmemCluster(t *testing.T, n int, now func() time.Time) []*Controller {
	t.Helper()
	peers := make([]Peer, n)
	trans := make([]*raft.InmemTransport, n)
	for i := range n {
		// Addresses in host:port form, which the in-memory transport only uses as names.
		peers[i] = Peer{ID: "n" + strconv.Itoa(i), Addr: fmt.Sprintf("127.0.0.1:%d", 1+i)}
		_, trans[i] = raft.NewInmemTransport(raft.ServerAddress(peers[i].Addr))
	}
	for i := range n {
		for j := range n {
			if i != j {
				trans[i].Connect(raft.ServerAddress(peers[j].Addr), trans[j])
			}
		}
	}
	cs := make([]*Controller, n)
	for i := range n {
		store := raft.NewInmemStore()
		deps := raftDeps{logs: store, stable: store, snaps: raft.NewInmemSnapshotStore(), transport: trans[i],
			closers: []io.Closer{trans[i]}}
		c, err := newController(testConfig(t, peers[i].ID, peers), false, testLogger(), prometheus.NewRegistry(), deps, now)
		require.NoError(t, err)
		require.NoError(t, c.Start())
		t.Cleanup(func() { stop(t, c) })
		cs[i] = c
	}
	return cs
}

// waitLeader waits until one of the running controllers leads and has recorded its address,
// and returns it.
func waitLeader(t *testing.T, cs []*Controller) *Controller {
	t.Helper()
	var leader *Controller
	testutil.Eventually(t, "a controller leads", func() bool {
		for _, c := range cs {
			if c.state.Load() == stateStarted && c.IsLeader() {
				if addr, ok := c.fsm.ControllerAddress(c.cfg.SelfID); ok && addr == c.advertise {
					leader = c
					return true
				}
			}
		}
		return false
	})
	return leader
}

// client is a remoting connection to a controller.
type client struct {
	*remotingtest.Conn
	t *testing.T
}

func dial(t *testing.T, c *Controller) client {
	t.Helper()
	return client{Conn: remotingtest.Dial(t, c.Addr().String()), t: t}
}

// call sends a request with the given header fields and body and returns the response.
func (c client) call(code codec.RequestCode, h codec.CustomHeader, body []byte) *codec.RemotingCommand {
	c.t.Helper()
	ext := map[string]string{}
	if h != nil {
		h.Encode(ext)
	}
	resp := c.Call(codec.NewRequest(code, ext, body))
	require.True(c.t, resp.IsResponse())
	return resp
}

func (c client) requireOK(code codec.RequestCode, h codec.CustomHeader, body []byte) *codec.RemotingCommand {
	c.t.Helper()
	resp := c.call(code, h, body)
	require.Equal(c.t, codec.ResponseSuccess, codec.ResponseCode(resp.Code), "%s: %s", code, resp.Remark)
	return resp
}

// registerReplica applies for id in broker-a as a broker at addr would.
func (c client) registerReplica(id int64, addr string) {
	c.t.Helper()
	c.requireOK(codec.RequestControllerApplyBrokerID, &codec.ApplyBrokerIDRequestHeader{ClusterName: "c1",
		BrokerName: "broker-a", AppliedBrokerID: id, RegisterCheckCode: addr + ";1700000000000"}, nil)
}

// heartbeat sends BROKER_HEARTBEAT for broker-a's replica id.
func (c client) heartbeat(id int64, addr string, epoch int32, maxOffset int64) {
	c.t.Helper()
	c.requireOK(codec.RequestBrokerHeartbeat, &codec.BrokerHeartbeatRequestHeader{ClusterName: "c1", BrokerAddr: addr,
		BrokerName: "broker-a", BrokerID: codec.Some(id), Epoch: codec.Some(epoch), MaxOffset: codec.Some(maxOffset)}, nil)
}

// brokerStub is a listener that records the requests a controller sends to a broker.
type brokerStub struct {
	server   netio.Server
	requests chan *codec.RemotingCommand
}

type stubHandler struct{ b *brokerStub }

func (h stubHandler) OnOpen(netio.Conn) {}
func (h stubHandler) OnRequest(_ netio.Conn, cmd *codec.RemotingCommand) {
	c := copyRequest(cmd)
	select {
	case h.b.requests <- c:
	default:
	}
}
func (h stubHandler) OnClose(netio.Conn, error) {}

func startBrokerStub(t *testing.T) *brokerStub {
	t.Helper()
	b := &brokerStub{requests: make(chan *codec.RemotingCommand, 16)}
	cfg := netio.DefaultConfig()
	cfg.Name = "broker-stub"
	cfg.Engine = netio.EngineStd
	cfg.Addr = "127.0.0.1:0"
	var err error
	b.server, err = netio.NewServer(cfg, stubHandler{b}, testLogger())
	require.NoError(t, err)
	require.NoError(t, b.server.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testutil.WaitTimeout)
		defer cancel()
		require.NoError(t, b.server.Stop(ctx))
	})
	return b
}

func (b *brokerStub) addr() string { return b.server.Addr().String() }

// next waits for the next request the stub received.
func (b *brokerStub) next(t *testing.T) *codec.RemotingCommand {
	t.Helper()
	select {
	case c := <-b.requests:
		return c
	case <-time.After(testutil.WaitTimeout):
		t.Fatal("the broker stub received no request")
		return nil
	}
}
