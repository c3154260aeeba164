package broker

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/brokerstats"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

// TestMetricsLabelCapSendsTheRestToOther: with metricsMaxTopics=3 and metricsMaxGroupTopics=2, a
// storm of topics and groups keeps three topic series and two pair series, everything after them
// summed under <other>, and the tables do not grow.
func TestMetricsLabelCapSendsTheRestToOther(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) {
		c.MetricsMaxTopics = 3
		c.MetricsMaxGroupTopics = 2
	}})
	c := remotingtest.Dial(t, db.addr)
	for i := range 10 { // auto-created topics S0..S9, i+1 messages each
		for range i + 1 {
			sendOK(t, c, sendV1("S"+strconv.Itoa(i), 0, []byte("x"), ""))
		}
	}
	for g := range 4 { // groups G0..G3 each pull S0's one message
		resp := c.Call(remotingtest.PullRequest("G"+strconv.Itoa(g), "S0", 0, 0, 32, subFlag, 0, "*"))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	}
	// G4 only commits, in S1 (2 messages), 1 behind: past the cap, its lag goes to <other> too.
	heartbeat(t, c, "G4", "S1", "*", 1)
	resp := c.Call(codec.NewRequest(codec.RequestUpdateConsumerOffset, map[string]string{
		"consumerGroup": "G4", "topic": "S1", "queueId": "0", "commitOffset": "1"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)

	s := scrapeOf(t, db.b.Registry())
	topics := map[string]float64{}
	pairs := map[string]float64{}
	lags := map[string]float64{}
	for k, v := range s {
		switch familyOf(k) {
		case "ringmq_broker_topic_put_messages_total":
			topics[k] = v
		case "ringmq_broker_consumer_pulled_messages_total":
			pairs[k] = v
		case "ringmq_broker_consumer_lag_messages":
			lags[k] = v
		}
	}
	require.Equal(t, map[string]float64{
		`ringmq_broker_topic_put_messages_total{topic="S0"}`:      1,
		`ringmq_broker_topic_put_messages_total{topic="S1"}`:      2,
		`ringmq_broker_topic_put_messages_total{topic="S2"}`:      3,
		`ringmq_broker_topic_put_messages_total{topic="<other>"}`: 4 + 5 + 6 + 7 + 8 + 9 + 10,
	}, topics)
	require.Equal(t, map[string]float64{
		`ringmq_broker_consumer_pulled_messages_total{group="G0",topic="S0"}`:           1,
		`ringmq_broker_consumer_pulled_messages_total{group="G1",topic="S0"}`:           1,
		`ringmq_broker_consumer_pulled_messages_total{group="<other>",topic="<other>"}`: 2,
	}, pairs)
	require.Equal(t, map[string]float64{`ringmq_broker_consumer_lag_messages{group="<other>",topic="<other>"}`: 1}, lags)

	// A storm far past the cap: the tables keep their three and two entries.
	flows := db.b.metrics.flows
	for i := range 5000 {
		flows.put("storm-"+strconv.Itoa(i), 1, 100)
		flows.pulled("storm-group", "storm-"+strconv.Itoa(i), 0, 1, 100, 0)
	}
	require.Len(t, *flows.puts.entries.Load(), 3)
	require.Len(t, *flows.pulls.entries.Load(), 2)
	require.Equal(t, int64(49+5000), flows.puts.other.messages.Load())
}

// TestConsumerLagAndOldestMessageAge: the lag collector sums committed offsets and lag over a
// group's queues, dates the oldest unconsumed message from its store time, and reads at most
// consumerLagLookupsPerScrape records per scrape, none for a queue whose offset did not move.
func TestConsumerLagAndOldestMessageAge(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	clock := testutil.NewManualClockAt(t0)
	mem := storetest.NewMemStore(store.DefaultConfig(t.TempDir()), clock.Now)
	require.NoError(t, mem.Start())
	put := func(topic string, queueID int32) {
		res, err := mem.PutMessage(&codec.Message{Topic: topic, QueueID: queueID, Body: []byte("x"),
			BornHost: netip.MustParseAddrPort("10.0.0.1:5000")})
		require.NoError(t, err)
		require.Equal(t, store.PutOK, res.Status)
	}
	for range 5 { // L/0 stored at t0, t0+1s, ... t0+4s
		put("L", 0)
		clock.Advance(time.Second)
	}
	for range 3 {
		put("L", 1)
	}
	offsets := []store.ConsumerOffset{{Group: "G", Topic: "L", QueueID: 0, Offset: 2}, {Group: "G", Topic: "L", QueueID: 1, Offset: 3}}
	coll := newTopicCollector(newFlowStats(10, 10), mem, func() []store.ConsumerOffset { return offsets }, clock.Now)
	reg := prometheus.NewRegistry()
	reg.MustRegister(coll)

	clock.Set(t0.Add(10 * time.Second))
	s := scrapeOf(t, reg)
	require.Equal(t, 5.0, s.value(`ringmq_broker_consumer_offset{group="G",topic="L"}`))
	require.Equal(t, 3.0, s.value(`ringmq_broker_consumer_lag_messages{group="G",topic="L"}`))
	require.Equal(t, 8.0, s.value(`ringmq_broker_consumer_lag_seconds{group="G",topic="L"}`), "L/0 offset 2 was stored at t0+2s")
	require.Equal(t, int64(1), coll.lookups.Load(), "one lagging queue, one record read")
	clock.Advance(5 * time.Second)
	s = scrapeOf(t, reg)
	require.Equal(t, 13.0, s.value(`ringmq_broker_consumer_lag_seconds{group="G",topic="L"}`))
	require.Equal(t, int64(1), coll.lookups.Load(), "the offset did not move: the date is reused")
	offsets[0].Offset = 5 // caught up
	s = scrapeOf(t, reg)
	require.Equal(t, 0.0, s.value(`ringmq_broker_consumer_lag_messages{group="G",topic="L"}`))
	require.Equal(t, 0.0, s.value(`ringmq_broker_consumer_lag_seconds{group="G",topic="L"}`))

	// 300 lagging queues: 256 read by the first scrape, the other 44 by the second, none by the third.
	offsets = offsets[:0]
	for q := range int32(300) {
		put("W", q)
		offsets = append(offsets, store.ConsumerOffset{Group: "GW", Topic: "W", QueueID: q, Offset: 0})
	}
	clock.Advance(5 * time.Second)
	before := coll.lookups.Load()
	for i, want := range []int64{consumerLagLookupsPerScrape, 300, 300} {
		s = scrapeOf(t, reg)
		require.Equal(t, want, coll.lookups.Load()-before, "scrape %d", i)
		require.Equal(t, 300.0, s.value(`ringmq_broker_consumer_lag_messages{group="GW",topic="W"}`))
		require.Equal(t, 5.0, s.value(`ringmq_broker_consumer_lag_seconds{group="GW",topic="W"}`))
	}
	require.Len(t, coll.dated, 300)
}

// TestMetricsHotPathsDoNotAllocate: counting a request, its answer and a put or pull costs no
// allocation once the code, topic or pair has its series.
func TestMetricsHotPathsDoNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	m := newMetrics(prometheus.NewRegistry(), &Config{MetricsMaxTopics: 10, MetricsMaxGroupTopics: 10}, time.Now)
	received := time.Now()
	code := int32(codec.RequestSendMessageV2)
	warm := func() {
		m.reqs.received(code)
		m.reqs.answered(code, codec.ResponseSuccess, received)
		m.reqs.answered(code, codec.ResponseSystemBusy, received)
		m.reqs.received(777)
		m.flows.put("T", 1, 100)
		m.flows.pulled("G", "T", 3, 32, 3200, 2)
	}
	warm()
	require.Zero(t, testing.AllocsPerRun(1000, warm))
}

// healthBody is what /healthz and /readyz answer.
type healthBody struct {
	Status string            `json:"status"`
	Checks []opsserver.Check `json:"checks"`
}

func getProbe(t *testing.T, url string) (int, healthBody) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a local test server
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var body healthBody
	require.NoError(t, json.Unmarshal(raw, &body), string(raw))
	return resp.StatusCode, body
}

// faultBroker is a broker whose store runs on faultfs, with the operators' HTTP endpoint.
type faultBroker struct {
	b               *Broker
	ffs             *faultfs.FS
	reg             *prometheus.Registry
	healthz, readyz string
	shut            bool
}

// startFaultBroker starts a broker on faultfs (no name server) and its probes; mutate edits the
// config first. The broker shuts down at cleanup unless shutdown was called.
func startFaultBroker(t *testing.T, mutate func(*Config)) *faultBroker {
	t.Helper()
	cfg := testBrokerConfig(t)
	cfg.NamesrvEmbedded = false
	port := pickPort(t)
	cfg.ListenPort, cfg.HAListenPort = port, pickPort(t, port)
	if mutate != nil {
		mutate(&cfg)
	}
	fb := &faultBroker{ffs: faultfs.New(store.NewOSFS(nil)), reg: prometheus.NewRegistry()}
	sc, err := storeConfig(&cfg, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)))
	require.NoError(t, err)
	st, err := store.Open(sc, store.Deps{Logger: testLogger(t), FS: fb.ffs, Registerer: fb.reg})
	require.NoError(t, err)
	fb.b, err = New(cfg, Deps{Logger: testLogger(t), Store: st, Registerer: fb.reg})
	require.NoError(t, err)
	require.NoError(t, fb.b.Start())
	t.Cleanup(func() {
		if !fb.shut {
			fb.shutdown(t)
		}
	})
	ops, err := opsserver.Start("127.0.0.1:0", fb.reg, fb.b)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ops.Close()) })
	fb.healthz, fb.readyz = "http://"+ops.Addr()+"/healthz", "http://"+ops.Addr()+"/readyz"
	return fb
}

func (fb *faultBroker) shutdown(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	require.NoError(t, fb.b.Shutdown(ctx))
	fb.shut = true
}

var (
	liveBody = healthBody{Status: "ok", Checks: []opsserver.Check{{Name: "event_loops", OK: true}, {Name: "put_path", OK: true},
		{Name: "store_failed", OK: true}}}
	notRegistered = opsserver.Check{Name: "namesrv_registered", OK: true, Detail: "no name server: namesrvAddr is empty and namesrvEmbedded=false"}
	readyBody     = healthBody{Status: "ok", Checks: []opsserver.Check{{Name: "store_recovered", OK: true},
		{Name: "listeners_up", OK: true}, notRegistered, {Name: "store_writable", OK: true}, {Name: "role", OK: true, Detail: "ASYNC_MASTER"}}}
)

// TestDiskFullIsLiveNotReady: while the disk is above diskSpaceWarningLevelRatio (the store refuses
// puts) /readyz answers 503 naming the store and /livez (and /healthz) stay 200: a full disk clears
// itself, a restart would not help. Both are 200 again once space is back, without a restart; /readyz
// fails once the broker shuts down. The store's disk gauges move with it.
func TestDiskFullIsLiveNotReady(t *testing.T) {
	fb := startFaultBroker(t, func(c *Config) { c.CleanResourceInterval = 20 * time.Millisecond })
	b, ffs, reg, readyz := fb.b, fb.ffs, fb.reg, fb.readyz
	livez := strings.TrimSuffix(fb.healthz, "/healthz") + "/livez"

	for _, url := range []string{livez, fb.healthz} {
		code, body := getProbe(t, url)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, liveBody, body)
	}
	code, body := getProbe(t, readyz)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, readyBody, body)
	c := remotingtest.Dial(t, b.Addr())
	sendOK(t, c, sendV1("TopicH", 0, []byte("x"), ""))
	before := scrapeOf(t, reg)

	// 95 % used: above diskSpaceWarningLevelRatio (90 %).
	ffs.SetDiskUsage(func(string) (store.DiskUsage, error) {
		return store.DiskUsage{TotalBytes: 100 << 30, FreeBytes: 5 << 30}, nil
	})
	testutil.Eventually(t, "/readyz 503", func() bool { code, _ := getProbe(t, readyz); return code == http.StatusServiceUnavailable })
	_, body = getProbe(t, readyz)
	require.Equal(t, opsserver.Check{Name: "store_writable", OK: false,
		Detail: "store running flags DISK_FULL: disk above diskSpaceWarningLevelRatio or out of space, sends refused until space is freed"},
		body.Checks[3])
	require.Equal(t, "fail", body.Status)
	for _, url := range []string{livez, fb.healthz} {
		code, body = getProbe(t, url)
		require.Equal(t, http.StatusOK, code, "a full disk does not make the broker dead: it clears itself")
		require.Equal(t, liveBody, body)
	}
	resp := c.Call(sendV1("TopicH", 0, []byte("x"), ""))
	requireDiskFullAnswer(t, resp)
	full := scrapeOf(t, reg)
	require.Equal(t, 0.95, full.value("ringmq_store_disk_used_ratio"))
	require.Equal(t, float64(store.FlagDiskFull), full.value("ringmq_store_running_flags"))
	require.Equal(t, before.value("ringmq_store_put_failures_total")+1, full.value("ringmq_store_put_failures_total"))

	ffs.SetDiskUsage(nil) // space is back
	testutil.Eventually(t, "/readyz 200", func() bool { code, _ := getProbe(t, readyz); return code == http.StatusOK })
	sendOK(t, c, sendV1("TopicH", 0, []byte("x"), ""))
	require.Zero(t, scrapeOf(t, reg).value("ringmq_store_running_flags"))

	fb.shutdown(t)
	code, body = getProbe(t, readyz)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, opsserver.Check{Name: "listeners_up", OK: false, Detail: "not started, or shutting down"}, body.Checks[1])
}

// TestFailedStoreIsNotLive: an fsync of the CommitLog failing with EIO makes the store read-only
// (NOT_WRITEABLE, until a restart: the kernel may have dropped the dirty pages); /livez and /healthz
// answer 503 naming the flag and what it means (a restart is the cure), /readyz too (sends are
// refused); the send whose flush failed is answered FLUSH_DISK_TIMEOUT and the next one
// SERVICE_NOT_AVAILABLE. The flush error, the refused put and the flag show in the metrics.
func TestFailedStoreIsNotLive(t *testing.T) {
	fb := startFaultBroker(t, func(c *Config) { c.FlushDiskType = store.SyncFlush })
	livez := strings.TrimSuffix(fb.healthz, "/healthz") + "/livez"
	c := remotingtest.Dial(t, fb.b.Addr())
	sendOK(t, c, sendV1("TopicR", 0, []byte("durable"), ""))
	code, body := getProbe(t, livez)
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, liveBody, body)
	before := scrapeOf(t, fb.reg)

	remove := fb.ffs.Inject(faultfs.Rule{Ops: faultfs.OpSync, PathContains: "commitlog", Err: syscall.EIO})
	t.Cleanup(remove) // before the shutdown (cleanups run last first): its final flush must succeed
	resp := c.Call(sendV1("TopicR", 0, []byte("lost?"), ""))
	require.Equal(t, int32(codec.ResponseFlushDiskTimeout), resp.Code, resp.Remark)
	require.Contains(t, resp.Remark, "flush failed")
	require.Contains(t, resp.Remark, "input/output error")

	failed := opsserver.Check{Name: "store_failed", OK: false,
		Detail: "store running flags NOT_WRITEABLE: a CommitLog flush failed with an I/O error; sends are refused until a restart"}
	for _, url := range []string{livez, fb.healthz} {
		code, body = getProbe(t, url)
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, healthBody{Status: "fail", Checks: []opsserver.Check{{Name: "event_loops", OK: true},
			{Name: "put_path", OK: true}, failed}}, body)
	}
	code, body = getProbe(t, fb.readyz)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, opsserver.Check{Name: "store_writable", OK: false,
		Detail: "store running flags NOT_WRITEABLE: a CommitLog flush failed, sends refused until a restart"}, body.Checks[3])
	resp = c.Call(sendV1("TopicR", 0, []byte("refused"), ""))
	require.Equal(t, int32(codec.ResponseServiceNotAvailable), resp.Code, resp.Remark)

	after := scrapeOf(t, fb.reg)
	require.Equal(t, float64(store.FlagNotWriteable), after.value("ringmq_store_running_flags"))
	require.Equal(t, before.value("ringmq_store_put_failures_total")+1, after.value("ringmq_store_put_failures_total"))
	require.Zero(t, before.value(`ringmq_flush_errors_total{service="commitlog_sync"}`))
	require.Positive(t, after.value(`ringmq_flush_errors_total{service="commitlog_sync"}`))

	// Still failed once the disk answers again: only a restart clears it.
	remove()
	resp = c.Call(sendV1("TopicR", 0, []byte("refused"), ""))
	require.Equal(t, int32(codec.ResponseServiceNotAvailable), resp.Code, resp.Remark)
	code, _ = getProbe(t, livez)
	require.Equal(t, http.StatusServiceUnavailable, code)
}

// stuckStore is a store whose put path has been stuck for inLock.
type stuckStore struct {
	store.MessageStore
	inLock atomic.Int64
}

func (s *stuckStore) BeginTimeInLock() time.Duration { return time.Duration(s.inLock.Load()) }

// stalledServer is a remoting server stuck for stalled.
type stalledServer struct {
	netio.Server
	stalled time.Duration
}

func (s stalledServer) Stalled() time.Duration { return s.stalled }

// TestStuckPutPathOrEventLoopIsNotLive: /livez fails while the put path (a put in the put lock, or
// puts not finishing) or an event loop has been stuck past the bound, naming which and for how long,
// and passes again once it moves; readiness does not look at either.
func TestStuckPutPathOrEventLoopIsNotLive(t *testing.T) {
	cfg := testBrokerConfig(t)
	cfg.NamesrvEmbedded = false
	port := pickPort(t)
	cfg.ListenPort, cfg.HAListenPort = port, pickPort(t, port)
	sc, err := storeConfig(&cfg, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port)))
	require.NoError(t, err)
	opened, err := store.Open(sc, store.Deps{Logger: testLogger(t)})
	require.NoError(t, err)
	st := &stuckStore{MessageStore: opened}
	b, err := New(cfg, Deps{Logger: testLogger(t), Store: st, Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	b.livenessStallBound = 10 * time.Second
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	require.Equal(t, liveBody.Checks, b.Live())

	st.inLock.Store(int64(10 * time.Second)) // at the bound: not yet
	require.Equal(t, liveBody.Checks, b.Live())
	st.inLock.Store(int64(12*time.Second + 300*time.Millisecond))
	require.Equal(t, opsserver.Check{Name: "put_path", OK: false,
		Detail: "a put has held the CommitLog put lock, or puts have not finished, for 12s (bound 10s)"}, b.Live()[1])
	require.Equal(t, readyBody.Checks, b.Ready())
	st.inLock.Store(0)
	require.Equal(t, liveBody.Checks, b.Live())

	// netio.Server.Stalled (netio's tests drive it with a stuck handler) past the bound on the fast port.
	servers := *b.watchedServers.Load()
	b.watchedServers.Store(&[]namedServer{servers[0], {"fastListenPort", stalledServer{stalled: 31 * time.Second}}})
	require.Equal(t, opsserver.Check{Name: "event_loops", OK: false,
		Detail: "a request has held an event loop of fastListenPort for 31s (bound 10s)"}, b.Live()[0])
	require.Equal(t, readyBody.Checks, b.Ready())
	b.watchedServers.Store(&servers)
	require.Equal(t, liveBody.Checks, b.Live())
}

// TestNamesrvDownIsLiveNotReady: with namesrvAddr, /readyz needs a registration accepted by one of
// its name servers within three registration periods; when they are all down the broker stays live
// (a liveness probe following the name servers would restart every broker at once).
func TestNamesrvDownIsLiveNotReady(t *testing.T) {
	ns, err := testNamesrv(EmbeddedNamesrvSpec{ListenAddr: "127.0.0.1:0", NetEngine: "gnet",
		KVConfigPath: t.TempDir() + "/kv.json", Logger: testLogger(t), Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	require.NoError(t, ns.Start())
	nsUp := true
	stopNs := func() {
		if nsUp {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, ns.Shutdown(ctx))
			nsUp = false
		}
	}
	t.Cleanup(stopNs)
	tb := startTestBroker(t, func(c *Config) {
		c.NamesrvEmbedded = false
		c.NamesrvAddr = ns.Addr().String()
	})
	b := tb.b
	require.Equal(t, liveBody.Checks, b.Live())
	require.Equal(t, opsserver.Check{Name: "namesrv_registered", OK: true}, b.Ready()[2])

	// The name server goes away; the last accepted registration is now older than 3 periods (2 s each).
	stopNs()
	r := b.ctl.registrar
	r.lastNamesrvAddrOK.Store(time.Now().Add(-3*r.period - 1500*time.Millisecond).UnixNano())
	require.Equal(t, opsserver.Check{Name: "namesrv_registered", OK: false,
		Detail: "last registration accepted by a name server of namesrvAddr 8s ago (limit 6s)"}, b.Ready()[2])
	require.Equal(t, liveBody.Checks, b.Live(), "unreachable name servers do not make the broker dead")
}

// TestNeverRegisteredIsNotReady: a broker whose name servers never answered is live and not ready.
func TestNeverRegisteredIsNotReady(t *testing.T) {
	dead := pickPort(t) // nothing listens there
	tb := startTestBroker(t, func(c *Config) {
		c.NamesrvEmbedded = false
		c.NamesrvAddr = "127.0.0.1:" + strconv.Itoa(dead)
	})
	require.Equal(t, liveBody.Checks, tb.b.Live())
	require.Equal(t, opsserver.Check{Name: "namesrv_registered", OK: false,
		Detail: "no registration accepted yet by a name server of namesrvAddr"}, tb.b.Ready()[2])
}

// TestEmbeddedNamesrvNamedInNamesrvAddrIsReady: namesrvAddr naming the broker's own embedded name
// server (a common way to write broker.conf) counts as registered with namesrvAddr: ready and live.
// Without namesrvAddr the embedded name server's registration is what counts.
func TestEmbeddedNamesrvNamedInNamesrvAddrIsReady(t *testing.T) {
	for name, host := range map[string]string{"loopback address": "127.0.0.1", "localhost": "localhost", "none": ""} {
		t.Run(name, func(t *testing.T) {
			nsPort := pickPort(t)
			addr := ""
			if host != "" {
				addr = net.JoinHostPort(host, strconv.Itoa(nsPort))
			}
			tb := startTestBroker(t, func(c *Config) {
				c.NamesrvEmbedded = true
				c.NamesrvListenPort = nsPort
				c.NamesrvAddr = addr
			})
			b := tb.b
			require.Len(t, b.namesrvTargets(), 1, "the embedded name server is registered with once")
			require.Equal(t, liveBody.Checks, b.Live())
			require.Equal(t, []opsserver.Check{{Name: "store_recovered", OK: true}, {Name: "listeners_up", OK: true},
				{Name: "namesrv_registered", OK: true}, {Name: "store_writable", OK: true},
				{Name: "role", OK: true, Detail: "ASYNC_MASTER"}}, b.Ready())
		})
	}
}

// TestMetricsDocListsEveryRegisteredSeries: METRICS.md names exactly the series a broker registers:
// the union over a broker with every optional part on (SYNC_MASTER, ACL, embedded name server, the
// fast port) and a slave. Go runtime and process collectors (go_*, process_*, registered by
// mqbroker) are documented as a group and not listed.
func TestMetricsDocListsEveryRegisteredSeries(t *testing.T) {
	doc, err := os.ReadFile("../METRICS.md")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(ringmq_[a-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		require.False(t, documented[m[1]], "%s listed twice", m[1])
		documented[m[1]] = true
	}

	registered, _, _ := startEverySeriesBrokers(t)
	var missing, extra []string
	for name := range registered {
		if !documented[name] {
			missing = append(missing, name)
		}
	}
	for name := range documented {
		// The controller's series are checked by the controller's own test, the controller-mode
		// supervisor's (registered by mqbroker beside the broker's) by broker/controlled's.
		if _, ok := registered[name]; !ok && !strings.HasPrefix(name, "ringmq_controller_") &&
			!strings.HasPrefix(name, "ringmq_controlled_") {
			extra = append(extra, name)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	require.Empty(t, missing, "registered but not in METRICS.md")
	require.Empty(t, extra, "in METRICS.md but not registered")
}

// startEverySeriesBrokers starts the brokers that between them register every series: a
// SYNC_MASTER under SYNC_FLUSH (the group commit's waiter series) with ACL and the embedded name
// server, and a slave replicating from it. It returns the label names of every family their
// collectors describe (by family name), their registries, and the master.
func startEverySeriesBrokers(t *testing.T) (map[string][]string, prometheus.Gatherers, *Broker) {
	aclPath := t.TempDir() + "/plain_acl.yml"
	require.NoError(t, os.WriteFile(aclPath, []byte(aclE2EFileV1), 0o644))
	registered := map[string][]string{}
	var gatherers prometheus.Gatherers
	start := func(mutate func(*Config)) *Broker {
		cfg := testBrokerConfig(t)
		mutate(&cfg)
		reg := prometheus.NewRegistry()
		gatherers = append(gatherers, reg)
		b, err := New(cfg, Deps{Logger: testLogger(t), Namesrv: testNamesrv,
			Registerer: describingRegisterer{Registerer: reg, families: registered}})
		require.NoError(t, err)
		require.NoError(t, b.Start())
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			require.NoError(t, b.Shutdown(ctx))
		})
		return b
	}
	master := start(func(c *Config) {
		c.BrokerRole = RoleSyncMaster
		c.FlushDiskType = store.SyncFlush // the group commit's waiter series
		c.HAListenPort = 0
		c.AclEnable = true
		c.AclFile = aclPath
	})
	start(func(c *Config) {
		c.BrokerRole = RoleSlave
		c.BrokerID = 1
		c.NamesrvEmbedded = false
		c.HAListenPort = 0
		c.HAMasterAddress = master.haServer.Addr().String()
	})
	return registered, gatherers, master
}

// describingRegisterer records the family names every registered collector describes, with
// their label names, variable and constant (a vector without a series yet is not gathered, but
// it is described).
type describingRegisterer struct {
	prometheus.Registerer
	families map[string][]string // not locked: New registers from one goroutine
}

// descPattern reads a Desc's String(): the name, the constant labels and the variable ones
// (c(name) when constrained).
var descPattern = regexp.MustCompile(`^Desc\{fqName: "([^"]+)", .*constLabels: \{(.*)\}, variableLabels: \{([^}]*)\}\}$`)

func (r describingRegisterer) Register(c prometheus.Collector) error {
	ch := make(chan *prometheus.Desc, 64)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	constLabel := regexp.MustCompile(`(?:^|,)([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for d := range ch {
		m := descPattern.FindStringSubmatch(d.String())
		if m == nil {
			continue // an invalid Desc: Register below reports it
		}
		labels := r.families[m[1]]
		for _, l := range constLabel.FindAllStringSubmatch(m[2], -1) {
			labels = append(labels, l[1])
		}
		for l := range strings.SplitSeq(m[3], ",") {
			if l = strings.TrimSuffix(strings.TrimPrefix(l, "c("), ")"); l != "" {
				labels = append(labels, l)
			}
		}
		slices.Sort(labels)
		r.families[m[1]] = slices.Compact(labels)
	}
	return r.Registerer.Register(c)
}

func (r describingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// TestMetricsKeys: metricsAddr defaults to loopback port 9106, empty and off turn the endpoint off,
// anything else must be host:port; the caps must not be negative. Errors name the key and the value.
func TestMetricsKeys(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, "127.0.0.1:9106", c.MetricsListenAddr())
	require.Equal(t, 1000, c.MetricsMaxTopics)
	require.Equal(t, 1000, c.MetricsMaxGroupTopics)
	for value, want := range map[string]string{"": "", "off": "", "OFF": "", ":9106": ":9106", "0.0.0.0:0": "0.0.0.0:0"} {
		c := DefaultConfig()
		_, err := c.Set("metricsAddr", value, 1)
		require.NoError(t, err)
		require.NoError(t, c.Validate(), value)
		require.Equal(t, want, c.MetricsListenAddr(), value)
	}
	for key, tc := range map[string]struct{ value, want string }{
		"metricsAddr":           {"9106", `key metricsAddr = "9106": "9106" is not host:port, empty or off`},
		"metricsMaxTopics":      {"-1", `key metricsMaxTopics = "-1"; allowed: 0 or more`},
		"metricsMaxGroupTopics": {"-1", `key metricsMaxGroupTopics = "-1"; allowed: 0 or more`},
	} {
		c := DefaultConfig()
		_, err := c.Set(key, tc.value, 1)
		require.NoError(t, err)
		err = c.Validate()
		require.ErrorIs(t, err, ErrConfig, key)
		require.ErrorContains(t, err, tc.want)
	}
	c = DefaultConfig()
	c.MetricsAddr = "127.0.0.1:99999"
	require.ErrorContains(t, c.Validate(), `key metricsAddr = "127.0.0.1:99999": "127.0.0.1:99999": the port must be 0..65535`)
}

// TestGroupGetLatencyStats: GROUP_GET_LATENCY of queueId@topic@group sums the milliseconds the
// pulls that found messages took, one call each, as RocketMQ 4.9.8 counts them; a pull that finds
// nothing is not counted, and a pair sharing <other> has no item.
func TestGroupGetLatencyStats(t *testing.T) {
	mem := storetest.NewMemStore(store.DefaultConfig(t.TempDir()), nil)
	require.NoError(t, mem.Start())
	t.Cleanup(func() { require.NoError(t, mem.Shutdown()) })
	for _, q := range []int32{0, 0, 2} {
		res, err := mem.PutMessage(&codec.Message{Topic: "TopicL", QueueID: q, Body: []byte("x"),
			BornHost: netip.MustParseAddrPort("10.0.0.1:5000")})
		require.NoError(t, err)
		require.Equal(t, store.PutOK, res.Status)
	}
	// The clock moves by step at every reading: a pull takes step.
	cur, step := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC), time.Duration(0)
	clock := func() time.Time {
		now := cur
		cur = cur.Add(step)
		return now
	}
	flows := newFlowStats(10, 1)
	ms := meteredStore{MessageStore: mem, stats: flows, pulls: true, now: clock}
	pull := func(group string, queueID int32, offset int64, took time.Duration) int {
		step = took
		res, err := ms.GetMessage(group, "TopicL", queueID, offset, 32, 1<<20, nil)
		require.NoError(t, err)
		defer res.Release()
		return res.MessageCount
	}
	require.Equal(t, 2, pull("G", 0, 0, 7*time.Millisecond+900*time.Microsecond)) // 7 ms, as Java's (int) ms
	require.Equal(t, 1, pull("G", 0, 1, 3*time.Millisecond))
	require.Equal(t, 0, pull("G", 0, 2, 50*time.Millisecond), "found nothing: not counted")
	require.Equal(t, 1, pull("G", 2, 0, 5*time.Millisecond))
	require.Equal(t, 2, pull("G2", 0, 0, 9*time.Millisecond), "past metricsMaxGroupTopics: <other>")

	stats := newBrokerStats(flows, "DefaultCluster")
	stats.Sample(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	d, ok := stats.Get(brokerstats.GroupGetLatency, "0@TopicL@G")
	require.True(t, ok)
	require.Equal(t, brokerstats.Snapshot{Sum: 10, Tps: 1, Avgpt: 5, Times: 2}, d.Minute)
	d, ok = stats.Get(brokerstats.GroupGetLatency, "2@TopicL@G")
	require.True(t, ok)
	require.Equal(t, brokerstats.Snapshot{Sum: 5, Tps: 0.5, Avgpt: 5, Times: 1}, d.Minute)
	for _, key := range []string{"1@TopicL@G", "0@TopicL@G2", "TopicL@G"} {
		_, ok = stats.Get(brokerstats.GroupGetLatency, key)
		require.False(t, ok, key)
	}
	d, ok = stats.Get(brokerstats.GroupGetNums, "TopicL@G")
	require.True(t, ok)
	require.Equal(t, int64(4), d.Minute.Sum, "the same pulls")
}
