package namesrv

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/netio"
)

// waitTimeout bounds every wait on a condition in these tests.
const waitTimeout = 10 * time.Second

// Request versions used below (MQVersion ordinals, PROTOCOL §1.5).
const (
	versionGoClient = 317 // V4_5_2: what the Go client sends; bare brokerAddrs keys
	versionV4_9_4   = 401 // from here on quoted keys
	versionJava5    = 479 // V5_3_3: a 5.x broker; compressed bodies carry the mapping list
)

var engines = []string{netio.EngineGnet, netio.EngineStd}

func forEachEngine(t *testing.T, f func(t *testing.T, engine string)) {
	for _, e := range engines {
		t.Run(e, func(t *testing.T) { f(t, e) })
	}
}

func testLogger() *slog.Logger {
	if testing.Verbose() && os.Getenv("NAMESRV_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// testConfig is a config for tests: loopback, port 0, KV file in a temp dir.
func testConfig(t *testing.T, engine string) Config {
	cfg := DefaultConfig()
	cfg.ListenAddr = "127.0.0.1:0"
	cfg.NetEngine = engine
	cfg.NetEventLoops = 2
	cfg.KVConfigPath = filepath.Join(t.TempDir(), "namesrv", "kvConfig.json")
	return cfg
}

// startNamesrv starts a name server; it is shut down when the test ends.
func startNamesrv(t *testing.T, cfg Config) *Namesrv {
	t.Helper()
	n, err := New(cfg, testLogger(), prometheus.NewRegistry())
	require.NoError(t, err)
	require.NoError(t, n.Start())
	t.Cleanup(func() { stopNamesrv(t, n) })
	return n
}

func stopNamesrv(t *testing.T, n *Namesrv) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, n.Shutdown(ctx))
}

// nsClient is a remoting connection whose call checks what every name server response
// must be.
type nsClient struct {
	*remotingtest.Conn
	t *testing.T
}

func dial(t *testing.T, n *Namesrv) nsClient {
	t.Helper()
	return nsClient{Conn: remotingtest.Dial(t, n.Addr().String()), t: t}
}

// request builds a request as the Go client sends it (language GO, version 317, JSON).
func request(code codec.RequestCode, ext map[string]string, body []byte) *codec.RemotingCommand {
	return &codec.RemotingCommand{
		Code: int32(code), Language: codec.LanguageGo, Version: versionGoClient,
		ExtFields: ext, Body: body, SerializeType: codec.SerializeJSON,
	}
}

// call sends cmd with a fresh opaque and returns the next frame, which must be its
// response (so an answer to a oneway request sent before fails the test).
func (c nsClient) call(cmd *codec.RemotingCommand) *codec.RemotingCommand {
	c.t.Helper()
	c.Request(cmd)
	resp := c.Next()
	require.True(c.t, resp.IsResponse())
	require.Equal(c.t, cmd.Opaque, resp.Opaque)
	require.Equal(c.t, codec.ServerVersion(), resp.Version)
	require.Equal(c.t, codec.LanguageJava, resp.Language)
	return resp
}

// requireCode checks a response's code and remark.
func requireCode(t *testing.T, resp *codec.RemotingCommand, code codec.ResponseCode, remark string) {
	t.Helper()
	require.Equal(t, code, codec.ResponseCode(resp.Code), "remark %q", resp.Remark)
	require.Equal(t, remark, resp.Remark)
}

// fakeBroker describes one broker registration over the wire.
type fakeBroker struct {
	cluster, name, addr, haAddr string
	id                          int64
	counter                     int64 // dataVersion counter
	topics                      []codec.TopicConfig
	compressed                  bool
	version                     int32 // request version; 0 = versionJava5
	crc                         bool  // send bodyCrc32
	header                      map[string]string
}

// registerRequest builds the REGISTER_BROKER request.
func (b *fakeBroker) registerRequest(t *testing.T) *codec.RemotingCommand {
	t.Helper()
	version := b.version
	if version == 0 {
		version = versionJava5
	}
	table := make(map[string]codec.TopicConfig, len(b.topics))
	for _, tc := range b.topics {
		table[tc.TopicName] = tc
	}
	body := codec.RegisterBrokerBody{
		FilterServerList: []string{},
		TopicConfigSerializeWrapper: codec.TopicConfigSerializeWrapper{
			DataVersion:      codec.DataVersion{Counter: b.counter, Timestamp: 1_700_000_000_000},
			TopicConfigTable: table,
		},
	}
	var raw []byte
	var err error
	if b.compressed {
		raw, err = body.EncodeCompressed(version)
	} else {
		raw, err = body.Encode()
	}
	require.NoError(t, err)
	h := codec.RegisterBrokerRequestHeader{
		BrokerName: b.name, BrokerAddr: b.addr, ClusterName: b.cluster, HAServerAddr: b.haAddr,
		BrokerID: b.id, Compressed: b.compressed, EnableActingMaster: codec.Some(false),
	}
	if b.crc {
		h.BodyCrc32 = codec.RegisterBrokerBodyCRC32(raw)
	}
	ext := make(map[string]string)
	h.Encode(ext)
	for k, v := range b.header {
		ext[k] = v
	}
	req := codec.NewRequest(codec.RequestRegisterBroker, ext, raw)
	req.Version = version
	return req
}

func (b *fakeBroker) register(t *testing.T, c nsClient) *codec.RemotingCommand {
	t.Helper()
	resp := c.call(b.registerRequest(t))
	requireCode(t, resp, codec.ResponseSuccess, "")
	return resp
}

// routeRequest builds GET_ROUTEINFO_BY_TOPIC as a client of the given version sends it.
func routeRequest(topic string, version int32, standardOnly bool) *codec.RemotingCommand {
	ext := map[string]string{"topic": topic}
	if standardOnly {
		ext["acceptStandardJsonOnly"] = "true"
	}
	req := request(codec.RequestGetRouteInfoByTopic, ext, nil)
	req.Version = version
	return req
}
