package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gnet's ants pool goroutines are started in package init and live for the process.
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

// syncBuffer is a bytes.Buffer the command and the test can share.
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

// smallStoreFlags keep a test broker small and on loopback.
func smallStoreFlags(dir string) []string {
	return []string{
		"--storePathRootDir=" + dir, "--listenPort=0", "--namesrvListenPort=0", "--brokerIP1=127.0.0.1",
		"--mappedFileSizeCommitLog=4194304", "--mappedFileSizeConsumeQueue=20480", "--maxMessageSize=1048576",
		"--maxHashSlotNum=1024", "--maxIndexNum=4096", "--maxConnections=1000", "--netEventLoops=1",
	}
}

func TestRunServesAndStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr syncBuffer
	signals := make(chan os.Signal, 1)
	exit := make(chan int, 1)
	confFile := writeConf(t, "# cmd-broker\nbrokerPermission=6\n")
	args := append(smallStoreFlags(dir), "-c", confFile, "--metricsAddr=127.0.0.1:0", "--brokerName=cmd-broker", "--logFormat=json",
		"--hiccupMeterInterval=1")
	go func() { exit <- run(args, &stdout, &stderr, signals) }()

	booted := testutil.Poll(testutil.WaitTimeout, func() bool { return strings.Contains(stdout.String(), "boot success") })
	require.True(t, booted, "stdout: %s\nstderr: %s", &stdout, &stderr) // the output as it is when the wait ends
	out := stdout.String()
	brokerAddr := regexp.MustCompile(`The broker\[cmd-broker, (127\.0\.0\.1:\d+)\] boot success`).FindStringSubmatch(out)
	require.NotNil(t, brokerAddr, out)
	nsAddr := regexp.MustCompile(`name server is (127\.0\.0\.1:\d+)\n`).FindStringSubmatch(out)
	require.NotNil(t, nsAddr, out)
	require.Contains(t, out, "embedded name server listening on 127.0.0.1:")
	require.Contains(t, out, "store at "+dir)
	metricsURL := regexp.MustCompile(`metrics on (http://\S+/metrics)`).FindStringSubmatch(out)
	require.NotNil(t, metricsURL, out)

	// The startup summary, once, in JSON lines (logFormat=json) at INFO.
	summary := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if msg, _ := rec["msg"].(string); slices.Contains([]string{"broker started", "listening", "store", "flush", "append"}, msg) {
			require.NotContains(t, summary, msg, "logged once")
			require.Equal(t, "INFO", rec["level"])
			summary[msg] = rec
		}
	}
	require.Len(t, summary, 5, "stderr: %s", &stderr)
	require.Equal(t, "cmd-broker", summary["broker started"]["brokerName"])
	require.Equal(t, brokerAddr[1], summary["listening"]["advertised"])
	require.Equal(t, strings.TrimSuffix(strings.TrimPrefix(metricsURL[1], "http://"), "/metrics"), summary["listening"]["metrics"])
	require.Equal(t, dir, summary["store"]["path"])
	require.EqualValues(t, 4194304, summary["store"]["commitLogFileBytes"])
	require.EqualValues(t, 2, summary["store"]["preallocatedCommitLogFiles"])
	require.EqualValues(t, 40+1024*4+4096*20, summary["store"]["indexFileBytes"])
	require.Equal(t, "ASYNC_FLUSH", summary["flush"]["flushDiskType"])
	require.Equal(t, "msync", summary["flush"]["flushBackend"])
	require.Equal(t, "mmap", summary["append"]["mode"])

	// The embedded name server routes to the broker.
	cl, err := netio.NewClient(netio.DefaultClientConfig(), slogDiscard())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, nsAddr[1], codec.NewRequest(codec.RequestGetRouteInfoByTopic, map[string]string{"topic": "TBW102"}, nil))
	require.NoError(t, err)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	route, err := codec.DecodeTopicRouteData(resp.Body)
	require.NoError(t, err)
	require.Equal(t, brokerAddr[1], route.BrokerDatas[0].BrokerAddrs[0])
	// UPDATE_BROKER_CONFIG keeps its change in the -c file for the next start.
	resp, err = cl.Invoke(ctx, brokerAddr[1], codec.NewRequest(codec.RequestUpdateBrokerConfig, nil, []byte("autoCreateSubscriptionGroup=false\n")))
	require.NoError(t, err)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	kept, err := os.ReadFile(confFile)
	require.NoError(t, err)
	require.Equal(t, "# cmd-broker\nbrokerPermission=6\nautoCreateSubscriptionGroup=false\n", string(kept))
	require.NoError(t, cl.Close())

	// Metrics and pprof.
	body := httpGet(t, metricsURL[1])
	require.Contains(t, body, "go_goroutines")
	require.Contains(t, body, "ringmq_netio_connections")
	require.Contains(t, httpGet(t, strings.TrimSuffix(metricsURL[1], "/metrics")+"/debug/pprof/"), "goroutine")
	// hiccupMeterInterval=1: the sleeper's histogram counts wake-ups; its stalls are listed (maybe none).
	sampled := regexp.MustCompile(`(?m)^ringmq_hiccup_seconds_count [1-9]`)
	require.True(t, testutil.Poll(testutil.WaitTimeout, func() bool { return sampled.MatchString(httpGet(t, metricsURL[1])) }),
		"no ringmq_hiccup_seconds samples")
	require.True(t, strings.HasPrefix(httpGet(t, strings.TrimSuffix(metricsURL[1], "/metrics")+"/debug/hiccups"),
		"# start_unix_ns late_ns (interval 1ms, recorded from 1ms, samples "))
	// The probes (httpGet requires 200): live (/healthz is /livez), and ready: registered with the
	// embedded name server, store writable, a master.
	for _, path := range []string{"/livez", "/healthz"} {
		require.Equal(t, `{"status":"ok","checks":[{"name":"event_loops","ok":true},{"name":"put_path","ok":true},{"name":"store_failed","ok":true}]}`+"\n",
			httpGet(t, strings.TrimSuffix(metricsURL[1], "/metrics")+path))
	}
	require.Equal(t, `{"status":"ok","checks":[{"name":"store_recovered","ok":true},{"name":"listeners_up","ok":true},`+
		`{"name":"namesrv_registered","ok":true},{"name":"store_writable","ok":true},{"name":"role","ok":true,"detail":"ASYNC_MASTER"}]}`+"\n",
		httpGet(t, strings.TrimSuffix(metricsURL[1], "/metrics")+"/readyz"))

	_, err = os.Stat(filepath.Join(dir, "abort"))
	require.NoError(t, err, "abort marker present while running")
	signals <- syscall.SIGTERM
	select {
	case code := <-exit:
		require.Equal(t, 0, code, "stderr: %s", &stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("no exit after SIGTERM")
	}
	_, err = os.Stat(filepath.Join(dir, "abort"))
	require.ErrorIs(t, err, os.ErrNotExist, "a clean shutdown removes the abort marker")
	require.Contains(t, stdout.String(), "The broker shut down.")
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // test against a local server
	require.NoError(t, err)
	defer func() { require.NoError(t, resp.Body.Close()) }()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(data)
}

func writeConf(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestConfigFileFlagsAndPrint(t *testing.T) {
	path := writeConf(t, `# a production-style broker.conf
brokerClusterName=DefaultCluster
brokerName=fromFile
listenPort=1234
namesrvAddr=10.0.0.1:9876;10.0.0.2:9876
autoCreateTopicEnable=true
haListenPort=10912
haListenPort=10913
sendMessageThreadPoolNums=16
sendMessageThreadPoolNums=32
mapedFileSizeCommitLog=8388608
redeleteHangedFileInterval=120000
highSpeedMode=true
enableDLegerCommitLog=false
`)
	var stdout, stderr syncBuffer
	code := run([]string{"-c", path, "--listenPort=2345", "--autoCreateTopicEnable=false", "--slaveReadEnable",
		"--serverWorkerThreads=8", "--transferMsgByHeap=false", "-p"}, &stdout, &stderr, nil)
	require.Equal(t, 0, code, "stderr: %s", &stderr)
	out := stdout.String()
	for _, line := range []string{"brokerName=fromFile", "listenPort=2345", "autoCreateTopicEnable=false",
		"slaveReadEnable=true", "haListenPort=10913", "namesrvAddr=10.0.0.1:9876;10.0.0.2:9876", "mappedFileSizeCommitLog=8388608",
		"aclFile=" + filepath.Join(filepath.Dir(path), "plain_acl.yml")} {
		require.Contains(t, out, line+"\n")
	}
	logs := stderr.String()
	// RocketMQ keys ringmq does not read: a warning naming each, from the file or a flag.
	const ignored = `why="an Apache RocketMQ 4.x key ringmq does not read; its value has no effect"\n`
	require.Regexp(t, `level=WARN msg="RocketMQ config key ignored" key=redeleteHangedFileInterval file=\S+ line=12 `+ignored, logs)
	require.Regexp(t, `level=WARN msg="RocketMQ config key ignored" key=highSpeedMode file=\S+ line=13 `+ignored, logs)
	require.Regexp(t, `level=WARN msg="RocketMQ config key ignored" key=transferMsgByHeap flag=--transferMsgByHeap `+ignored, logs)
	require.Contains(t, logs, `level=INFO msg="config key accepted but not needed" key=serverWorkerThreads flag=--serverWorkerThreads `+
		`instead="network work runs on gnet event loops (netEventLoops)"`+"\n")
	require.Equal(t, 1, strings.Count(logs, "key=sendMessageThreadPoolNums"), "not-needed keys are reported once")
	require.Contains(t, logs, `msg="config key accepted but not needed" key=sendMessageThreadPoolNums`)
	require.NotContains(t, logs, "key=haListenPort", "haListenPort is read")

	// metricsAddr=off (any case) is no endpoint, as in mqnamesrv; -p prints it as written.
	for _, off := range []string{"off", "OFF"} {
		stdout = syncBuffer{}
		require.Equal(t, 0, run([]string{"-c", writeConf(t, "metricsAddr="+off+"\n"), "-p"}, &stdout, io.Discard, nil))
		require.Contains(t, stdout.String(), "\nmetricsAddr="+off+"\n")
	}

	// -n sets namesrvAddr and wins over the file.
	stdout = syncBuffer{}
	require.Equal(t, 0, run([]string{"-c", path, "-n", "127.0.0.1:9876", "-p"}, &stdout, io.Discard, nil))
	require.Contains(t, stdout.String(), "namesrvAddr=127.0.0.1:9876\n")
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name     string
		file     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"bad value in file", "brokerName=b\nlistenPort=abc\n", nil, 1,
			`broker.conf:2: broker: config: key listenPort = "abc": not a whole number; allowed: 0..65535` + "\n"},
		{"bad enum in file", "flushDiskType=SOMETIMES\n", nil, 1,
			`broker.conf:1: broker: config: key flushDiskType = "SOMETIMES"; allowed: ASYNC_FLUSH or SYNC_FLUSH` + "\n"},
		{"out of range in file", "brokerName=b\n\ndefaultTopicQueueNums=5000\n", nil, 1,
			`broker.conf:3: broker: config: key defaultTopicQueueNums = "5000"; allowed: 1..1024` + "\n"},
		{"store check in file", "mappedFileSizeCommitLog=8388609\n", nil, 1,
			`broker.conf:1: broker: config: store: invalid config: key mappedFileSizeCommitLog = "8388609"; allowed: a positive multiple of the page size` + "\n"},
		{"unimplemented feature", "enableDLegerCommitLog=true\n", nil, 1,
			`broker.conf:1: broker: config: key enableDLegerCommitLog = "true": ringmq does not implement the DLedger (Raft) CommitLog`},
		{"bad flag value", "", []string{"--defaultTopicQueueNums=x"}, 1,
			`flag --defaultTopicQueueNums: broker: config: key defaultTopicQueueNums = "x": not a whole number; allowed: 1..1024` + "\n"},
		{"bad enum", "", []string{"--flushDiskType=SOMETIMES"}, 1,
			`flag --flushDiskType: broker: config: key flushDiskType = "SOMETIMES"; allowed: ASYNC_FLUSH or SYNC_FLUSH` + "\n"},
		{"invalid combination", "", []string{"--brokerRole=SLAVE"}, 1,
			`default value: broker: config: key brokerId = "0": a SLAVE needs brokerId > 0 (0 is the master's); allowed: 0 for a master, 1 or more for a SLAVE` + "\n"},
		{"bad log level", "logLevel=verbose\n", nil, 1,
			`broker.conf:1: broker: config: key logLevel = "verbose"; allowed: debug, info, warn or error` + "\n"},
		{"hiccup meter without metrics", "hiccupMeterInterval=1\nmetricsAddr=off\n", nil, 1,
			`key hiccupMeterInterval = "1": needs metricsAddr (the meter reports there)`},
		{"typo in file", "brokerName=b\nflushDiskTpye=SYNC_FLUSH\n", nil, 1, "broker.conf:2: broker: config: unknown key flushDiskTpye: " +
			"neither ringmq nor Apache RocketMQ 4.x reads it; did you mean flushDiskType?\n"},
		{"wrong case in file", "listenport=1\n", nil, 1, "broker.conf:1: broker: config: unknown key listenport: " +
			"neither ringmq nor Apache RocketMQ 4.x reads it; did you mean listenPort?\n"},
		{"unknown key in file", "\n\nfancyNewKey=1\n", nil, 1, "broker.conf:3: broker: config: unknown key fancyNewKey: " +
			"neither ringmq nor Apache RocketMQ 4.x reads it\n"},
		{"unknown flag", "", []string{"--noSuchKey=1"}, 2, "unknown flag: --noSuchKey\n"},
		{"misspelt RocketMQ flag", "", []string{"--highSpeedMod=true"}, 2, "unknown flag: --highSpeedMod (did you mean --highSpeedMode?)\n"},
		{"misspelt flag", "", []string{"--listenPrt=1"}, 2, "unknown flag: --listenPrt (did you mean --listenPort?)\n"},
		{"stray argument", "", []string{"extra"}, 2, "unexpected arguments: [extra]"},
		{"missing file", "", []string{"-c", "/nonexistent/broker.conf"}, 1, "no such file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"-p"}, tc.args...)
			if tc.file != "" {
				args = append(args, "-c", writeConf(t, tc.file))
			}
			var stderr syncBuffer
			require.Equal(t, tc.wantCode, run(args, io.Discard, &stderr, nil))
			require.Contains(t, stderr.String(), tc.wantErr)
		})
	}
}

// TestTypoStopsStartAndPrint: a misspelt key stops -p and a start alike with exit status 1 and one
// line on stderr naming the file, the line, the key and the key it probably meant; the start opens
// nothing (no store directory).
func TestTypoStopsStartAndPrint(t *testing.T) {
	path := writeConf(t, "# durable\nbrokerName=b\nflushDiskTpye=SYNC_FLUSH\nsendMessageThreadPoolNums=8\n")
	want := path + ":3: broker: config: unknown key flushDiskTpye: neither ringmq nor Apache RocketMQ 4.x reads it; " +
		"did you mean flushDiskType?\n"
	for _, printOnly := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "store")
		args := append(smallStoreFlags(dir), "-c", path)
		if printOnly {
			args = append(args, "-p")
		}
		var stdout, stderr syncBuffer
		require.Equal(t, 1, run(args, &stdout, &stderr, nil), "-p %v", printOnly)
		require.Empty(t, stdout.String())
		// The not-needed key's info line comes first (the logger exists only once the file is read).
		require.Equal(t, want, regexp.MustCompile(`(?m)^.* level=INFO .*\n`).ReplaceAllString(stderr.String(), ""))
		_, err := os.Stat(dir)
		require.ErrorIs(t, err, os.ErrNotExist)
	}
}

func TestStartFailureExitsNonZero(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { require.NoError(t, busy.Close()) }()
	port := busy.Addr().(*net.TCPAddr).Port
	args := append(smallStoreFlags(t.TempDir()), "--namesrvEmbedded=false", "--listenPort="+strconv.Itoa(port))
	var stderr syncBuffer
	require.Equal(t, 1, run(args, io.Discard, &stderr, nil))
	require.Contains(t, stderr.String(), "address already in use")
}

// TestHelpFromTheKeys: --help lists every key as a flag with what it means, its unit, its default and,
// for an enum, the allowed values, all from the config's tags.
func TestHelpFromTheKeys(t *testing.T) {
	var stdout, stderr syncBuffer
	require.Equal(t, 0, run([]string{"--help"}, &stdout, &stderr, nil))
	help := stderr.String()
	line := func(flag string) string {
		t.Helper()
		m := regexp.MustCompile(`(?m)^ +--` + flag + ` .*$`).FindString(help)
		require.NotEmpty(t, m, "--%s in --help", flag)
		return m
	}
	for flag, want := range map[string][]string{
		"flushDiskType":       {"--flushDiskType enum", "answers a send once written", "(one of ASYNC_FLUSH, SYNC_FLUSH)", `(default ASYNC_FLUSH)`},
		"brokerRole":          {"refuses writes", "(one of ASYNC_MASTER, SYNC_MASTER, SLAVE)", `(default ASYNC_MASTER)`},
		"flushBackend":        {"how CommitLog bytes are made durable", "(one of iouring, msync, fdatasync)"},
		"syncFlushTimeout":    {"--syncFlushTimeout ms", "FLUSH_DISK_TIMEOUT (ms)", `(default 5000)`},
		"fileReservedTime":    {"--fileReservedTime hours", "older than this", "(hours)", `(default 72)`},
		"haTransferBatchSize": {"HA transfer frame", "(allowed: 1..4194304)", `(default 32768)`},
		"listenPort":          {"--listenPort int", "port clients", "(allowed: 0..65535)", `(default 10911)`},
		"brokerId":            {"(default 0)"},
		"slaveReadEnable":     {"--slaveReadEnable ", "(default false)"},
		"brokerName":          {"master and its slaves"},
	} {
		got := line(flag)
		for _, w := range want {
			require.Contains(t, got, w, flag)
		}
	}
	require.NotContains(t, line("flushBackend"), "(default", "empty default: picked by append mode")
	require.NotContains(t, line("brokerName"), "(default", "the host name is not printed: --help reads the same everywhere")
}

// goldenHelp is mqbroker --help as it stands; RINGMQ_UPDATE_GOLDEN=1 rewrites it when a key or its
// help changes on purpose, and the diff shows the change to review.
const goldenHelp = "testdata/help.golden"

// TestHelpGolden: --help is the command's flags, then every key in its section (broker, network,
// store, flush, HA, messages, ACL/TLS, limits, metrics/ops, logging) with its meaning, unit, allowed
// values and default, exactly as recorded.
func TestHelpGolden(t *testing.T) {
	var stdout, stderr syncBuffer
	require.Equal(t, 0, run([]string{"--help"}, &stdout, &stderr, nil))
	require.Empty(t, stdout.String())
	got := stderr.String()
	if os.Getenv("RINGMQ_UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(goldenHelp, []byte(got), 0o644))
	}
	want, err := os.ReadFile(goldenHelp)
	require.NoError(t, err)
	require.Equal(t, string(want), got)
	var sections []string
	for _, m := range regexp.MustCompile(`(?m)^(\S.*):$`).FindAllStringSubmatch(got, -1) {
		sections = append(sections, m[1])
	}
	require.Equal(t, []string{"Command", "Keys: broker", "Keys: network", "Keys: store", "Keys: flush", "Keys: HA",
		"Keys: messages", "Keys: ACL/TLS", "Keys: limits", "Keys: metrics/ops", "Keys: logging"}, sections)
}

// TestVersion: --version prints one line, "mqbroker <version> (commit <sha>, <go version>)", and starts nothing.
func TestVersion(t *testing.T) {
	var stdout, stderr syncBuffer
	require.Equal(t, 0, run([]string{"--version", "--storePathRootDir=" + t.TempDir()}, &stdout, &stderr, nil))
	require.Regexp(t, `^mqbroker \S+ \(commit \S+, go\S+\)\n$`, stdout.String())
	require.Empty(t, stderr.String())
}
