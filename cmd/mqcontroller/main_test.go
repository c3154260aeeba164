package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/controller"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

// syncBuffer is a bytes.Buffer safe for the logger and the test to share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLoad(t *testing.T) {
	props, err := conf.Parse([]byte("controllerPeers=n0-127.0.0.1:9878;n1-127.0.0.1:9868;n2-127.0.0.1:9858\n" +
		"controllerSelfId=n2\nlistenPort=9881\nenableElectUncleanMaster=true\nscanNotActiveBrokerInterval=1000\n" +
		"controllerThreadPoolNums=32\nlogLevel=debug\n"))
	require.NoError(t, err)
	var logs bytes.Buffer
	cfg, o, err := load(props, "controller.conf", slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	require.Equal(t, "n2", cfg.SelfID)
	require.Len(t, cfg.Peers, 3)
	require.Equal(t, controller.Peer{ID: "n1", Addr: "127.0.0.1:9868"}, cfg.Peers[1])
	require.Equal(t, ":9881", cfg.ListenAddr)
	require.Equal(t, 9881, o.ListenPort)
	require.True(t, cfg.ElectUncleanMaster)
	require.True(t, cfg.NotifyBrokerRoleChanged)
	require.Equal(t, time.Second, cfg.ScanNotActiveBrokerInterval)
	require.Equal(t, 10*time.Second, cfg.BrokerHeartbeatTimeout)
	require.Equal(t, controller.DefaultStorePath("n2"), cfg.StorePath)
	require.Contains(t, logs.String(), `msg="config key accepted but not applied" key=controllerThreadPoolNums`)

	props, err = conf.Parse([]byte("controllerPeers=n0-127.0.0.1:9878\ncontrollerSelfId=n1\n"))
	require.NoError(t, err)
	_, _, err = load(props, "c.conf", slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, `controllerSelfId "n1" is not in controllerPeers "n0-127.0.0.1:9878"`)

	props, err = conf.Parse([]byte("controllerDLegerPeers=n0-127.0.0.1:9878\nenableElectUncleanMastr=true\nlistenPort=x\n"))
	require.NoError(t, err)
	_, _, err = load(props, "c.conf", slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, errConfig)
	require.ErrorContains(t, err, "c.conf:1: controllerDLegerPeers: ringmq's controller runs on raft: write controllerPeers")
	require.ErrorContains(t, err, "c.conf:2: unknown key enableElectUncleanMastr (did you mean enableElectUncleanMaster?)")
	require.ErrorContains(t, err, `c.conf:3: key listenPort = "x"`)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestThreeControllers starts three mqcontrollers as a file would, finds the leader through
// one of them, stops the leader and finds the new one.
func TestThreeControllers(t *testing.T) {
	peers := fmt.Sprintf("n0-%s;n1-%s;n2-%s", freeAddr(t), freeAddr(t), freeAddr(t))
	type proc struct {
		c      *controller.Controller
		cancel context.CancelFunc
		exited chan int
		stderr *syncBuffer
	}
	procs := make([]*proc, 3)
	for i := range procs {
		path := filepath.Join(t.TempDir(), "controller.conf")
		require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("controllerPeers=%s\ncontrollerSelfId=n%d\n"+
			"controllerStorePath=%s\nbindAddress=127.0.0.1\nlistenPort=0\nnetEngine=std\n"+
			"controllerRaftHeartbeatTimeoutMillis=250\ncontrollerRaftElectionTimeoutMillis=250\n",
			peers, i, filepath.Join(t.TempDir(), "store"))), 0o600))
		ctx, cancel := context.WithCancel(context.Background())
		p := &proc{cancel: cancel, exited: make(chan int, 1), stderr: &syncBuffer{}}
		started := make(chan *controller.Controller, 1)
		go func() { p.exited <- run(ctx, []string{"-c", path}, &syncBuffer{}, p.stderr, started) }()
		select {
		case p.c = <-started:
		case code := <-p.exited:
			t.Fatalf("mqcontroller exited with %d: %s", code, p.stderr.String())
		}
		procs[i] = p
	}
	stopProc := func(p *proc) {
		if p.cancel == nil {
			return
		}
		p.cancel()
		p.cancel = nil
		select {
		case code := <-p.exited:
			require.Equal(t, 0, code, p.stderr.String())
		case <-time.After(testutil.WaitTimeout):
			t.Fatal("mqcontroller did not stop")
		}
	}
	defer func() {
		for _, p := range procs {
			stopProc(p)
		}
	}()

	// Any controller names the leader; the leader takes writes.
	leaderAddr := func(via *proc) string {
		conn := remotingtest.Dial(t, via.c.Addr().String())
		defer conn.Close()
		var addr string
		testutil.Eventually(t, "a leader is named", func() bool {
			resp := conn.Call(codec.NewRequest(codec.RequestControllerGetMetadataInfo, nil, nil))
			addr = resp.ExtFields["controllerLeaderAddress"]
			return addr != ""
		})
		return addr
	}
	addr := leaderAddr(procs[0])
	conn := remotingtest.Dial(t, addr)
	resp := conn.Call(codec.NewRequest(codec.RequestControllerApplyBrokerID, map[string]string{"clusterName": "c1",
		"brokerName": "broker-a", "appliedBrokerId": "1", "registerCheckCode": "127.0.0.1:10911;1"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.NoError(t, conn.Close())

	var leader *proc
	for _, p := range procs {
		if p.c.Addr().String() == addr {
			leader = p
		}
	}
	require.NotNil(t, leader)
	stopProc(leader)
	for _, p := range procs {
		if p != leader {
			next := leaderAddr(p)
			if next == addr {
				testutil.Eventually(t, "a new leader is named", func() bool { return leaderAddr(p) != addr })
				next = leaderAddr(p)
			}
			conn := remotingtest.Dial(t, next)
			resp := conn.Call(codec.NewRequest(codec.RequestControllerGetNextBrokerID,
				map[string]string{"clusterName": "c1", "brokerName": "broker-a"}, nil))
			require.Equal(t, "2", resp.ExtFields["nextBrokerId"], "the new leader has the state")
			require.NoError(t, conn.Close())
			break
		}
	}
	require.True(t, strings.Contains(leader.stderr.String(), "controller: became the leader"))
}

func TestUsage(t *testing.T) {
	var stdout, stderr syncBuffer
	require.Equal(t, 2, run(context.Background(), nil, &stdout, &stderr, nil))
	require.Contains(t, stderr.String(), "usage: mqcontroller -c controller.conf")
	require.Equal(t, 0, run(context.Background(), []string{"--version"}, &stdout, &stderr, nil))
	require.Regexp(t, `^mqcontroller \S+ \(commit \S+, go\S+\)\n$`, stdout.String())
}
