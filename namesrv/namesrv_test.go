package namesrv

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

func TestConfigValidate(t *testing.T) {
	def := DefaultConfig()
	require.NoError(t, def.Validate())
	require.Equal(t, ":9876", def.ListenAddr)
	require.Equal(t, 5*time.Second, def.ScanInterval)
	require.Equal(t, 120*time.Second, def.BrokerExpiry)
	require.True(t, def.ReturnOrderTopicConfigToBroker)
	require.False(t, def.OrderMessageEnable)
	if home, err := os.UserHomeDir(); err == nil {
		require.Equal(t, filepath.Join(home, "namesrv", "kvConfig.json"), def.KVConfigPath)
	}

	for _, tc := range []struct {
		field  string
		mutate func(*Config)
	}{
		{"ListenAddr", func(c *Config) { c.ListenAddr = "9876" }},
		{"netEngine", func(c *Config) { c.NetEngine = "netty" }},
		{"netEventLoops", func(c *Config) { c.NetEventLoops = -1 }},
		{"IdleTimeout", func(c *Config) { c.IdleTimeout = -time.Second }},
		{"ScanInterval", func(c *Config) { c.ScanInterval = 0 }},
		{"BrokerExpiry", func(c *Config) { c.BrokerExpiry = 0 }},
		{"WaitForService", func(c *Config) { c.WaitForService = -1 }},
	} {
		cfg := DefaultConfig()
		tc.mutate(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, ErrConfig, tc.field)
		require.Contains(t, err.Error(), tc.field)
		_, err = New(cfg, testLogger(), nil)
		require.ErrorIs(t, err, ErrConfig)
	}
	_, err := New(DefaultConfig(), nil, nil)
	require.ErrorIs(t, err, ErrConfig)
}

func TestLifecycle(t *testing.T) {
	cfg := testConfig(t, netio.EngineGnet)
	n, err := New(cfg, testLogger(), nil)
	require.NoError(t, err)
	require.ErrorIs(t, n.Shutdown(context.Background()), ErrState, "Shutdown before Start")
	require.NoError(t, n.Start())
	require.ErrorIs(t, n.Start(), ErrState, "Start twice")

	// A second name server on the same port cannot bind; it leaves no goroutine behind.
	cfg2 := testConfig(t, netio.EngineStd)
	cfg2.ListenAddr = n.Addr().String()
	n2, err := New(cfg2, testLogger(), nil)
	require.NoError(t, err)
	require.Error(t, n2.Start())
	require.ErrorIs(t, n2.Shutdown(context.Background()), ErrState)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	require.NoError(t, n.Shutdown(ctx))
	require.ErrorIs(t, n.Shutdown(ctx), ErrState, "Shutdown twice")
	require.False(t, n.kvWorker.Submit(func() {}), "no KV change is queued after Shutdown")
	require.False(t, n.brokerWorker.Submit(func() {}), "no registration is queued after Shutdown")
}

func TestKVConfigFile(t *testing.T) {
	dir := t.TempDir()

	kv, err := loadKVConfig(filepath.Join(dir, "missing", "kvConfig.json"))
	require.NoError(t, err)
	_, ok := kv.list("any")
	require.False(t, ok)

	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = loadKVConfig(empty)
	require.NoError(t, err)

	_, err = loadKVConfig(filepath.Join(empty, "kvConfig.json"))
	require.ErrorIs(t, err, ErrKVConfig, "a path through a regular file")

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"configTable":`), 0o644))
	_, err = New(Config{ListenAddr: "127.0.0.1:0", NetEngine: "std", ScanInterval: time.Second,
		BrokerExpiry: time.Second, KVConfigPath: bad}, testLogger(), nil)
	require.ErrorIs(t, err, ErrKVConfig)
	require.Contains(t, err.Error(), bad)

	// Java's file loads as it stands.
	java := filepath.Join(dir, "java.json")
	require.NoError(t, os.WriteFile(java, []byte(`{"configTable":{"ORDER_TOPIC_CONFIG":{"T":"broker-a:8"}}}`), 0o644))
	kv, err = loadKVConfig(java)
	require.NoError(t, err)
	v, ok := kv.get("ORDER_TOPIC_CONFIG", "T")
	require.True(t, ok)
	require.Equal(t, "broker-a:8", v)

	// Each change rewrites the file; no temp file is left behind.
	require.NoError(t, kv.put("NS", "k", "v"))
	require.NoError(t, kv.delete("ORDER_TOPIC_CONFIG", "T"))
	data, err := os.ReadFile(java)
	require.NoError(t, err)
	require.Equal(t, `{"configTable":{"NS":{"k":"v"},"ORDER_TOPIC_CONFIG":{}}}`, string(data))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	require.Equal(t, []string{"bad.json", "empty.json", "java.json"}, names)

	// Memory only.
	mem, err := loadKVConfig("")
	require.NoError(t, err)
	require.NoError(t, mem.put("NS", "k", "v"))
	v, _ = mem.get("NS", "k")
	require.Equal(t, "v", v)
}

// A KV change that cannot be persisted is answered SYSTEM_ERROR but kept in memory.
func TestKVPersistFailure(t *testing.T) {
	cfg := testConfig(t, netio.EngineGnet)
	n := startNamesrv(t, cfg)
	// After the (missing) file was loaded, its directory becomes a regular file.
	require.NoError(t, os.WriteFile(filepath.Dir(cfg.KVConfigPath), nil, 0o644))
	c := dial(t, n)
	resp := c.call(request(codec.RequestPutKVConfig, map[string]string{"namespace": "NS", "key": "k", "value": "v"}, nil))
	require.Equal(t, codec.ResponseSystemError, codec.ResponseCode(resp.Code))
	require.Contains(t, resp.Remark, "namesrv: kv config")
	resp = c.call(request(codec.RequestGetKVConfig, map[string]string{"namespace": "NS", "key": "k"}, nil))
	requireCode(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, "v", resp.ExtFields["value"])
}

func TestMetrics(t *testing.T) {
	cfg := testConfig(t, netio.EngineGnet)
	reg := prometheus.NewRegistry()
	n, err := New(cfg, testLogger(), reg)
	require.NoError(t, err)
	require.NoError(t, n.Start())
	defer func() { require.NoError(t, n.Shutdown(context.Background())) }()

	c := dial(t, n)
	brokerA(false).register(t, c)
	c.call(routeRequest("TopicTest", versionGoClient, false))
	c.call(routeRequest("TopicTest", versionGoClient, false))
	c.call(request(4242, nil, nil))

	require.Equal(t, 1.0, metricValue(t, n.metrics.registrations))
	require.Equal(t, 1.0, metricValue(t, n.metrics.brokers))
	require.Equal(t, 2.0, metricValue(t, n.metrics.topics))
	require.Equal(t, 2.0, metricValue(t, n.metrics.requests.WithLabelValues("GET_ROUTEINFO_BY_TOPIC")))
	require.Equal(t, 1.0, metricValue(t, n.metrics.requests.WithLabelValues("unsupported")))

	// The broker's connection closes: the gauges follow.
	require.NoError(t, c.Close())
	testutil.Eventually(t, "the brokers gauge to drop", func() bool { return metricValue(t, n.metrics.brokers) == 0 })
	require.Equal(t, 0.0, metricValue(t, n.metrics.topics))

	families, err := reg.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{"ringmq_namesrv_requests_total", "ringmq_namesrv_broker_registrations_total",
		"ringmq_namesrv_brokers_expired_total", "ringmq_namesrv_brokers", "ringmq_namesrv_topics", "ringmq_netio_connections"} {
		require.True(t, names[want], want)
	}
}

// The in-process accessors the embedding broker uses.
func TestInProcessAccessors(t *testing.T) {
	n := startNamesrv(t, testConfig(t, netio.EngineStd))
	brokerA(false).register(t, dial(t, n))
	rd, ok := n.TopicRoute("TopicTest")
	require.True(t, ok)
	require.Equal(t, map[int64]string{0: "127.0.0.1:10911"}, rd.BrokerDatas[0].BrokerAddrs)
	_, ok = n.TopicRoute("nope")
	require.False(t, ok)
	require.Equal(t, map[string][]string{"DefaultCluster": {"broker-a"}}, n.ClusterInfo().ClusterAddrTable)
	// Copies: changing them does not change the name server.
	rd.BrokerDatas[0].BrokerAddrs[0] = "changed"
	rd2, _ := n.TopicRoute("TopicTest")
	require.Equal(t, "127.0.0.1:10911", rd2.BrokerDatas[0].BrokerAddrs[0])
}

// metricValue reads a counter's or gauge's current value.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var out dto.Metric
	require.NoError(t, m.Write(&out))
	if out.Counter != nil {
		return out.Counter.GetValue()
	}
	require.NotNil(t, out.Gauge)
	return out.Gauge.GetValue()
}

// Full worker queues answer SYSTEM_BUSY at once instead of queueing without bound.
func TestWorkerQueuesFull(t *testing.T) {
	n, err := New(testConfig(t, netio.EngineStd), testLogger(), nil) // not started: no worker drains
	require.NoError(t, err)
	for range kvQueueLength {
		require.True(t, n.kvWorker.Submit(func() {}))
	}
	req := request(codec.RequestPutKVConfig, map[string]string{"namespace": "NS", "key": "k", "value": "v"}, nil)
	requireCode(t, n.proc.handle(nil, req, codec.RequestPutKVConfig), codec.ResponseSystemBusy,
		"[REJECTREQUEST]system busy, too many KV config changes pending")

	for range brokerQueueLength {
		require.True(t, n.brokerWorker.Submit(func() {}))
	}
	req = brokerA(false).registerRequest(t)
	requireCode(t, n.proc.handle(nil, req, codec.RequestRegisterBroker), codec.ResponseSystemBusy,
		"[REJECTREQUEST]system busy, too many broker registrations pending")
	req = request(codec.RequestUnregisterBroker, map[string]string{
		"brokerName": "broker-a", "brokerAddr": "127.0.0.1:10911", "clusterName": "DefaultCluster", "brokerId": "0"}, nil)
	requireCode(t, n.proc.handle(nil, req, codec.RequestUnregisterBroker), codec.ResponseSystemBusy,
		"[REJECTREQUEST]system busy, too many broker registrations pending")
}
