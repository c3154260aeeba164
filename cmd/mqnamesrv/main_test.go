package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
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
		// gnet's ants pool goroutines are started in package init and live for the process.
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
		// lumberjack keeps one goroutine per rotating file for the life of the process.
		goleak.IgnoreAnyFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"),
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

func writeConf(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "namesrv.conf")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestApplyProperties(t *testing.T) {
	props, err := conf.Parse([]byte(`# a RocketMQ namesrv.conf
listenPort = 9877
kvConfigPath=/data/namesrv/kvConfig.json
orderMessageEnable=TRUE
returnOrderTopicConfigToBroker=false
scanNotActiveBrokerInterval=2000
waitSecondsForService=30
needWaitForService=true
serverChannelMaxIdleTimeSeconds=60
enableAllTopicList=false
enableTopicList=false
netEngine=std
netEventLoops=3
brokerExpiryMillis=30000
serverWorkerThreads=8
serverWorkerThreads=16
clientRequestThreadPoolNums=8
rocketmqHome=/opt/rocketmq
rocketmqHome=/opt/rocketmq
`))
	require.NoError(t, err)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s := defaultSettings()
	require.NoError(t, applyProperties(&s, props, "namesrv.conf", logger))

	require.Equal(t, 9877, s.listenPort)
	require.Equal(t, ":9877", s.listenAddr())
	require.Equal(t, "/data/namesrv/kvConfig.json", s.ns.KVConfigPath)
	require.True(t, s.ns.OrderMessageEnable)
	require.False(t, s.ns.ReturnOrderTopicConfigToBroker)
	require.Equal(t, 2*time.Second, s.ns.ScanInterval)
	require.Equal(t, 30*time.Second, s.ns.WaitForService)
	require.True(t, s.ns.NeedWaitForService)
	require.Equal(t, time.Minute, s.ns.IdleTimeout)
	require.False(t, s.ns.EnableAllTopicList)
	require.False(t, s.ns.EnableTopicList)
	require.Equal(t, "std", s.ns.NetEngine)
	require.Equal(t, 3, s.ns.NetEventLoops)
	require.Equal(t, 30*time.Second, s.ns.BrokerExpiry)

	out := logs.String()
	require.Equal(t, 1, strings.Count(out, "key=serverWorkerThreads"), "a not-applied key is logged once:\n%s", out)
	require.Contains(t, out, `level=INFO msg="config key accepted but not applied" key=clientRequestThreadPoolNums`)
	require.Equal(t, 1, strings.Count(out, "key=rocketmqHome"), out)
	require.NotContains(t, out, "level=WARN")
}

// TestUnknownKeysAreErrors: a key neither ringmq nor Apache RocketMQ 4.x reads is an error naming
// the file, the line, the key and the nearest known key; every one is reported, and the keys
// around them are still read.
func TestUnknownKeysAreErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"listenPrt=9877", "unknown key listenPrt: neither ringmq nor Apache RocketMQ 4.x reads it; did you mean listenPort?"},
		{"kvconfigpath=/x", "unknown key kvconfigpath: neither ringmq nor Apache RocketMQ 4.x reads it; did you mean kvConfigPath?"},
		{"serverWorkerThread=8", "unknown key serverWorkerThread: neither ringmq nor Apache RocketMQ 4.x reads it; did you mean serverWorkerThreads?"},
		{"logLevl=debug", "unknown key logLevl: neither ringmq nor Apache RocketMQ 4.x reads it; did you mean logLevel?"},
		{"fancyNewKey=1", "unknown key fancyNewKey: neither ringmq nor Apache RocketMQ 4.x reads it"},
	} {
		props, err := conf.Parse([]byte("# namesrv.conf\n" + tc.line + "\norderMessageEnable=true\n"))
		require.NoError(t, err)
		s := defaultSettings()
		err = applyProperties(&s, props, "namesrv.conf", slog.New(slog.DiscardHandler))
		require.ErrorIs(t, err, errConfig, tc.line)
		require.ErrorIs(t, err, conf.ErrUnknownKey, tc.line)
		require.EqualError(t, err, "mqnamesrv: config: namesrv.conf:2: "+tc.want)
		require.True(t, s.ns.OrderMessageEnable)
	}
	props, err := conf.Parse([]byte("listenPrt=1\nfancyNewKey=2\n"))
	require.NoError(t, err)
	s := defaultSettings()
	err = applyProperties(&s, props, "n.conf", slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "n.conf:1: unknown key listenPrt")
	require.ErrorContains(t, err, "n.conf:2: unknown key fancyNewKey")
}

// TestMetricsAddrReadAsTheBrokerReadsIt: metricsAddr takes host:port, or empty or off (any case)
// for no endpoint, like mqbroker's key; anything else is an error saying what is allowed.
func TestMetricsAddrReadAsTheBrokerReadsIt(t *testing.T) {
	for value, want := range map[string]string{"off": "", "OFF": "", "": "", "127.0.0.1:9107": "127.0.0.1:9107", ":0": ":0"} {
		s := defaultSettings()
		s.metricsAddr = "before"
		require.NoError(t, keys["metricsAddr"](&s, value), value)
		require.Equal(t, want, s.metricsAddr, value)
	}
	for _, value := range []string{"on", "127.0.0.1", "host:99999"} {
		s := defaultSettings()
		require.ErrorContains(t, keys["metricsAddr"](&s, value), "allowed: host:port, empty or off", value)
	}
	// A run with metricsAddr=off reads it (--printConfigItem: it would start the same way).
	var stdout, stderr syncBuffer
	require.Equal(t, 0, run(context.Background(), []string{"-c", writeConf(t, "metricsAddr=off\n"), "--printConfigItem"},
		&stdout, &stderr, nil), stderr.String())
	require.Contains(t, stdout.String(), "\nmetricsAddr=\n")
}

func TestApplyPropertiesErrors(t *testing.T) {
	props, err := conf.Parse([]byte("listenPort=abc\norderMessageEnable=yes\nscanNotActiveBrokerInterval=5s\nkvConfigPath=ok\n"))
	require.NoError(t, err)
	s := defaultSettings()
	err = applyProperties(&s, props, "bad.conf", slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, errConfig)
	msg := err.Error()
	require.Contains(t, msg, `bad.conf:1: listenPort="abc": not a whole number`)
	require.Contains(t, msg, `bad.conf:2: orderMessageEnable="yes": not true or false`)
	require.Contains(t, msg, `bad.conf:3: scanNotActiveBrokerInterval="5s": not a whole number`)
	require.Equal(t, "ok", s.ns.KVConfigPath, "good keys are still applied")
}

func TestRunExitCodes(t *testing.T) {
	var stdout, stderr syncBuffer
	ctx := context.Background()

	require.Equal(t, 2, run(ctx, []string{"--nope"}, &stdout, &stderr, nil))
	require.Equal(t, 2, run(ctx, []string{"extra"}, &stdout, &stderr, nil))
	require.Equal(t, 2, run(ctx, []string{"--logLevel", "loud"}, &stdout, &stderr, nil))
	require.Equal(t, 0, run(ctx, []string{"-h"}, &stdout, &stderr, nil))
	require.Contains(t, stderr.String(), "--listenPort")

	require.Equal(t, 1, run(ctx, []string{"-c", filepath.Join(t.TempDir(), "missing.conf")}, &stdout, &stderr, nil))
	require.Equal(t, 1, run(ctx, []string{"-c", writeConf(t, "listenPort=x\n")}, &stdout, &stderr, nil))
	require.Contains(t, stderr.String(), `listenPort="x": not a whole number`)
	require.Equal(t, 1, run(ctx, []string{"-c", writeConf(t, "scanNotActiveBrokerInterval=0\n")}, &stdout, &stderr, nil))
	require.Contains(t, stderr.String(), "ScanInterval")

	// A bad logging value in the file names file, line, key, value and the allowed values.
	stderr = syncBuffer{}
	bad := writeConf(t, "listenPort=9877\nlogFormat=xml\n")
	require.Equal(t, 1, run(ctx, []string{"-c", bad}, &stdout, &stderr, nil))
	require.Equal(t, "mqnamesrv: config: "+bad+`:2: key logFormat = "xml"; allowed: text or json`+"\n", stderr.String())

	// The logging keys from the file (json to a file), the level from the flag: -p prints
	// without starting, and the file holds the config line as JSON.
	logPath := filepath.Join(t.TempDir(), "namesrv.log")
	stdout, stderr = syncBuffer{}, syncBuffer{}
	require.Equal(t, 0, run(ctx, []string{"-c", writeConf(t, "logFormat=json\nlogFile="+logPath+"\nrocketmqHome=/opt/rmq\n"),
		"--logLevel", "info", "--printConfigItem"}, &stdout, &stderr, nil))
	require.Empty(t, stderr.String(), "logged to the file, not stderr")
	logged, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Contains(t, string(logged), `"level":"INFO","msg":"config key accepted but not applied","key":"rocketmqHome"`)

	// A misspelt key stops --printConfigItem (and a start) with one line: file, line, key, suggestion.
	stdout, stderr = syncBuffer{}, syncBuffer{}
	typo := writeConf(t, "listenPort=9877\norderMessageEnabel=true\n")
	require.Equal(t, 1, run(ctx, []string{"-c", typo, "--printConfigItem"}, &stdout, &stderr, nil))
	require.Empty(t, stdout.String())
	require.Equal(t, "mqnamesrv: config: "+typo+":2: unknown key orderMessageEnabel: neither ringmq nor Apache RocketMQ 4.x "+
		"reads it; did you mean orderMessageEnable?\n", stderr.String())
	// A misspelt flag gets the nearest flag.
	stderr = syncBuffer{}
	require.Equal(t, 2, run(ctx, []string{"--listenPrt=1"}, &stdout, &stderr, nil))
	require.Contains(t, stderr.String(), "mqnamesrv: unknown flag --listenPrt: did you mean --listenPort?\n")

	// -p overrides the file; --printConfigItem shows the result without starting.
	stdout = syncBuffer{}
	require.Equal(t, 0, run(ctx, []string{"-c", writeConf(t, "listenPort=9877\n"), "-p", "9999", "--printConfigItem"}, &stdout, &stderr, nil))
	require.Contains(t, stdout.String(), "ListenAddr::9999")
}

func TestRunServesAndShutsDown(t *testing.T) {
	dir := t.TempDir()
	confPath := writeConf(t, "bindAddress=127.0.0.1\nlistenPort=0\nmetricsAddr=127.0.0.1:0\n"+
		"kvConfigPath="+filepath.Join(dir, "kv.json")+"\nnetEventLoops=1\n")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan net.Addr, 1)
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"-c", confPath, "--logLevel", "debug"}, &stdout, &stderr, started) }()

	var addr net.Addr
	select {
	case addr = <-started:
	case code := <-exited:
		t.Fatalf("run exited with %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("name server did not start")
	}
	require.Contains(t, stdout.String(), "The Name Server boot success. serializeType=JSON, address "+addr.String())

	// It answers remoting requests.
	conn := remotingtest.Dial(t, addr.String())
	conn.Send(&codec.RemotingCommand{Code: int32(codec.RequestGetRouteInfoByTopic), Language: codec.LanguageGo, Version: 317,
		Opaque: 1, ExtFields: map[string]string{"topic": "T"}})
	resp := conn.Next()
	require.Equal(t, int32(codec.ResponseTopicNotExist), resp.Code)

	// And serves metrics at the address it logged.
	m := regexp.MustCompile(`msg="metrics served" addr=(\S+)`).FindStringSubmatch(stderr.String())
	require.Len(t, m, 2, stderr.String())
	client := &http.Client{Timeout: 10 * time.Second}
	httpResp, err := client.Get("http://" + m[1] + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(httpResp.Body)
	require.NoError(t, err)
	require.NoError(t, httpResp.Body.Close())
	require.Contains(t, string(body), `ringmq_namesrv_requests_total{code="GET_ROUTEINFO_BY_TOPIC"} 1`)
	client.CloseIdleConnections()

	cancel() // what SIGINT/SIGTERM do through signal.NotifyContext
	select {
	case code := <-exited:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	require.Contains(t, stderr.String(), "namesrv: stopped")
}

// TestVersion: --version prints one line, "mqnamesrv <version> (commit <sha>, <go version>)", and starts nothing.
func TestVersion(t *testing.T) {
	var stdout, stderr syncBuffer
	require.Equal(t, 0, run(context.Background(), []string{"--version"}, &stdout, &stderr, nil))
	require.Regexp(t, `^mqnamesrv \S+ \(commit \S+, go\S+\)\n$`, stdout.String())
	require.Empty(t, stderr.String())
}

func TestControllerKeys(t *testing.T) {
	props, err := conf.Parse([]byte("enableControllerInNamesrv=true\ncontrollerPeers=n0-127.0.0.1:9878;n1-127.0.0.1:9868\n" +
		"controllerSelfId=n1\ncontrollerStorePath=/data/controller\nenableElectUncleanMaster=true\n" +
		"notifyBrokerRoleChanged=false\nscanNotActiveBrokerInterval=2000\ncontrollerHeartBeatTimeoutMills=3000\n"))
	require.NoError(t, err)
	s := defaultSettings()
	require.NoError(t, applyProperties(&s, props, "namesrv.conf", slog.New(slog.DiscardHandler)))
	require.True(t, s.controllerEnabled)
	require.Equal(t, "n1", s.controller.SelfID)
	require.Equal(t, "n0-127.0.0.1:9878;n1-127.0.0.1:9868", controller.FormatPeers(s.controller.Peers))
	require.Equal(t, "/data/controller", s.controller.StorePath)
	require.True(t, s.controller.ElectUncleanMaster)
	require.False(t, s.controller.NotifyBrokerRoleChanged)
	require.Equal(t, 2*time.Second, s.controller.ScanNotActiveBrokerInterval, "RocketMQ 5 reads it for both")
	require.Equal(t, 2*time.Second, s.ns.ScanInterval)
	require.Equal(t, 3*time.Second, s.controller.BrokerHeartbeatTimeout)
	require.NoError(t, s.controller.Validate())

	props, err = conf.Parse([]byte("controllerDLegerPeers=n0-127.0.0.1:9878\ncontrollerPeers=n0\n"))
	require.NoError(t, err)
	s = defaultSettings()
	err = applyProperties(&s, props, "bad.conf", slog.New(slog.DiscardHandler))
	require.ErrorIs(t, err, errConfig)
	require.Contains(t, err.Error(), "bad.conf:1: controllerDLegerPeers: ringmq's controller runs on raft: write controllerPeers")
	require.Contains(t, err.Error(), `bad.conf:2: key controllerPeers = "n0"`)
}

// TestEmbeddedControllerAnswersOnNamesrvPort: with enableControllerInNamesrv=true the name
// server's port answers the controller's codes (as one controller of one), and still its own.
func TestEmbeddedControllerAnswersOnNamesrvPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	raftAddr := ln.Addr().String()
	require.NoError(t, ln.Close())
	dir := t.TempDir()
	confPath := writeConf(t, "bindAddress=127.0.0.1\nlistenPort=0\nkvConfigPath="+filepath.Join(dir, "kv.json")+
		"\nnetEventLoops=1\nenableControllerInNamesrv=true\ncontrollerPeers=n0-"+raftAddr+"\ncontrollerSelfId=n0\n"+
		"controllerStorePath="+filepath.Join(dir, "controller")+"\ncontrollerRaftHeartbeatTimeoutMillis=100\n"+
		"controllerRaftElectionTimeoutMillis=100\n")
	var stdout, stderr syncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := make(chan net.Addr, 1)
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"-c", confPath}, &stdout, &stderr, started) }()
	var addr net.Addr
	select {
	case addr = <-started:
	case code := <-exited:
		t.Fatalf("run exited with %d: %s", code, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatal("name server did not start")
	}

	conn := remotingtest.Dial(t, addr.String())
	call := func(code codec.RequestCode, ext map[string]string) *codec.RemotingCommand {
		return conn.Call(codec.NewRequest(code, ext, nil))
	}
	testutil.Eventually(t, "the controller leads and names this port", func() bool {
		resp := call(codec.RequestControllerGetMetadataInfo, nil)
		return resp.ExtFields["isLeader"] == "true" && resp.ExtFields["controllerLeaderAddress"] == addr.String()
	})
	resp := call(codec.RequestControllerApplyBrokerID, map[string]string{"clusterName": "c1", "brokerName": "broker-a",
		"appliedBrokerId": "1", "registerCheckCode": "127.0.0.1:10911;1"})
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	resp = call(codec.RequestControllerGetNextBrokerID, map[string]string{"clusterName": "c1", "brokerName": "broker-a"})
	require.Equal(t, "2", resp.ExtFields["nextBrokerId"])
	resp = call(codec.RequestBrokerHeartbeat, map[string]string{"clusterName": "c1", "brokerAddr": "127.0.0.1:10911",
		"brokerName": "broker-a", "brokerId": "1"})
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code)
	require.Equal(t, "Heart beat success", resp.Remark)
	resp = call(codec.RequestGetRouteInfoByTopic, map[string]string{"topic": "T"})
	require.Equal(t, int32(codec.ResponseTopicNotExist), resp.Code)

	cancel()
	select {
	case code := <-exited:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after cancel")
	}
	require.Contains(t, stderr.String(), "controller: stopped")
}
