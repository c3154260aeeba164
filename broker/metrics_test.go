package broker

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

// scrape is one Gather of a registry: every series (name and labels as the exposition writes them)
// with its value; a histogram contributes name_count and name_sum.
type scrape map[string]float64

func scrapeOf(t testing.TB, g prometheus.Gatherer) scrape {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	s := scrape{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := seriesKey(f.GetName(), m.GetLabel())
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s[key] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				s[key] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				s[seriesKey(f.GetName()+"_count", m.GetLabel())] = float64(m.GetHistogram().GetSampleCount())
				s[seriesKey(f.GetName()+"_sum", m.GetLabel())] = m.GetHistogram().GetSampleSum()
			default:
				s[key] = m.GetUntyped().GetValue()
			}
		}
	}
	return s
}

func seriesKey(name string, labels []*dto.LabelPair) string {
	if len(labels) == 0 {
		return name
	}
	parts := make([]string, 0, len(labels))
	for _, l := range labels {
		parts = append(parts, l.GetName()+"="+strconv.Quote(l.GetValue()))
	}
	sort.Strings(parts)
	return name + "{" + strings.Join(parts, ",") + "}"
}

// familyOf is a series key's metric name (the histograms' _count and _sum folded into their family:
// every histogram here ends in _seconds but ringmq_flush_batch_waiters).
func familyOf(key string) string {
	name, _, _ := strings.Cut(key, "{")
	for _, suffix := range []string{"_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (strings.HasSuffix(base, "_seconds") || base == "ringmq_flush_batch_waiters") {
			return base
		}
	}
	return name
}

// value is the series' value, 0 when absent.
func (s scrape) value(key string) float64 { return s[key] }

// movedSince lists the series of s whose value differs from before's (a series new in s counts when
// it is not 0).
func (s scrape) movedSince(before scrape) map[string]bool {
	moved := map[string]bool{}
	for k, v := range s {
		if v != before[k] {
			moved[k] = true
		}
	}
	return moved
}

// notMovingHere are the series TestEveryMetricMoves does not move: states that take minutes, a failing
// disk or a full queue to reach, and gauges that are non-zero only for microseconds. A key is a family
// (every series of it) or one series. Each value starts with the tests that do move it, as "package
// directory TestName" (several joined by "; "), then says why not here; TestNotMovingHereNamesRealTests
// checks that those tests exist.
var notMovingHere = map[string]string{
	`ringmq_broker_auto_created_total{kind="dlq_topic"}`:                     "broker TestSendBackToDeadLetterQueue: a send-back past the group's retries",
	`ringmq_broker_client_refusals_total{reason="subscription_group_limit"}`: "broker TestHostileHeartbeatsStopAtTheGroupLimit: autoCreateSubscriptionGroupLimit reached",
	`ringmq_broker_client_refusals_total{reason="retry_topic_limit"}`:        "broker TestHostileHeartbeatsStopAtTheRetryTopicLimit: autoCreateRetryTopicLimit reached",
	`ringmq_broker_client_refusals_total{reason="offset_unknown_queue"}`:     "broker TestHostileOffsetCommitsAreCheckedAndNotSaved: a commit to a queue the topic lacks",
	`ringmq_broker_client_refusals_total{reason="offset_negative"}`:          "broker TestHostileOffsetCommitsAreCheckedAndNotSaved: a negative committed offset",
	`ringmq_broker_client_refusals_total{reason="offset_past_max"}`:          "broker TestHostileOffsetCommitsAreCheckedAndNotSaved: a committed offset past the queue's end",

	`ringmq_broker_system_busy_total{reason="pull_hold_full"}`:      "broker/readplane TestLongPollHoldTableIsBounded: a full hold table",
	`ringmq_broker_system_busy_total{reason="pc_synchronized"}`:     "broker TestSendPageCacheBusyAnswersSystemBusy: a put lock held past osPageCacheBusyTimeOutMills",
	`ringmq_broker_system_busy_total{reason="flush_queue_full"}`:    "broker TestSendSyncFlushRepliesOnlyAfterDurable: a full group commit queue",
	`ringmq_broker_system_busy_total{reason="overload"}`:            "broker TestFullAndSlowPoolsAnswerSystemBusy: a full pool queue",
	`ringmq_broker_system_busy_total{reason="timeout_clean_queue"}`: "broker TestFullAndSlowPoolsAnswerSystemBusy: a pull queued past waitTimeMillsInPullQueue",
	`ringmq_broker_system_busy_total{reason="pooled_bytes"}`:        "broker TestPooledCopiesCountAgainstTheRequestBudget: pooled copies over requestBudgetBytes",
	"ringmq_netio_connections_refused_total":                        "netio TestMaxConnections: maxConnections connections open at once, on every listener",
	"ringmq_netio_idle_closed_total":                                "netio TestIdleTimeout: a connection idle for the idle timeout (minutes by default)",
	"ringmq_netio_unmatched_responses_total":                        "netio TestServerInvoke: a response to no pending call; the broker's servers only answer",
	"ringmq_netio_request_budget_waits_total":                       "netio TestLargeFrameWaitsForBudget: frames over 64 KiB exceeding requestBudgetBytes together",
	"ringmq_netio_request_budget_waiting_frames":                    "netio TestLargeFrameWaitsForBudget: as request_budget_waits_total",
	"ringmq_netio_request_budget_used_bytes":                        "netio TestLargeFrameWaitsForBudget: non-zero only while a frame over 64 KiB is being read",
	"ringmq_replica_rejected_total":                                 "ha TestReplicasCompleteOnTheReport: a full SYNC_MASTER waiter queue",
	"ringmq_replica_slaves_behind_deleted":                          "ha TestSlaveBehindDeletedFiles: a slave whose offset is in deleted files",
	"ringmq_store_prewritten_bytes_total":                           "store TestPrewriteAppendModes: a prepared file pre-written under SYNC_FLUSH",
	"ringmq_store_prewrite_late_files_total":                        "store TestPrewriteEndsAtTheRoll: the writer reaching a file being pre-written",
	"ringmq_replica_sendfile_bytes_total":                           "store TestCatchUpFramesFromTheFile: a slave whole files behind",
	"ringmq_replica_slaves_refused_total":                           "ha TestSlaveMidRecordIsRefused; ha TestSlaveAheadStaysRefusedOnceTheMasterPassesIt: a slave ahead of or diverged from its master",
	"ringmq_flush_rejected_total":                                   "flush TestGroupCommitQueueFull: a full SYNC_FLUSH waiter queue",
	"ringmq_flush_timeouts_total":                                   "flush TestGroupCommitTimeout: syncFlushTimeout passing",
	"ringmq_flush_errors_total":                                     "broker TestFailedStoreIsNotLive; flush TestIntervalFlusherErrors: a failing fsync",
	"ringmq_flush_waiter_queue_depth":                               "flush TestGroupCommitQueueFull; flush TestGroupCommitTimeout: non-zero only while a flush is in flight",
	"ringmq_store_dispatch_behind_bytes":                            "store TestLagGaugesCountTheBytesBehind: non-zero only between a put and its dispatch",
	"ringmq_store_flush_behind_bytes":                               "store TestLagGaugesCountTheBytesBehind: non-zero only between a put and its flush (before the answer, under SYNC_FLUSH)",
	"ringmq_store_put_failures_total":                               "broker TestDiskFullIsLiveNotReady; broker TestFailedStoreIsNotLive: a refused put (disk full, read-only store)",
	"ringmq_store_running_flags":                                    "broker TestDiskFullIsLiveNotReady; broker TestFailedStoreIsNotLive: DISK_FULL, NOT_WRITEABLE",
	"ringmq_store_disk_used_ratio":                                  "broker TestDiskFullIsLiveNotReady: the file system's usage (faked through faultfs there)",
	"ringmq_store_forced_deleted_files_total":                       "store TestForcedDeletionIsAnExplicitChoice: cleanFileForciblyEnable deletions on a full disk",
	"ringmq_store_transient_pool_fallbacks_total":                   "store TestRollWithoutAPoolBufferAppendsIntoTheMapping: the transient pool exhausted at a roll",
	"ringmq_store_sync_rolls_total":                                 "store TestRollCreatesTheFileWhenTheAllocatorFailed: a CommitLog roll before the allocator prepared the next file",
	"ringmq_store_commitlog_min_offset_bytes":                       "store TestForcedDeletionIsAnExplicitChoice: retention deleting the oldest CommitLog file",
	"ringmq_namesrv_brokers_expired_total":                          "namesrv TestExpiryOverTheWire: a broker silent for 120 s",
	"ringmq_broker_stats_items":                                     "broker TestViewBrokerStatsDataAndConsumeTps: the stats windows sampled (every 10 s here, at chosen times there)",
	// Under SYNC_FLUSH the ASYNC_FLUSH flusher exists but never runs.
	`ringmq_flush_bytes_total{service="commitlog_async"}`:           "store TestCommittedBytesWakeOnlyTheirFlusher: the ASYNC_FLUSH flusher, idle under SYNC_FLUSH",
	`ringmq_flush_durable_writes_total{service="commitlog_async"}`:  "store TestCommittedBytesWakeOnlyTheirFlusher: the ASYNC_FLUSH flusher, idle under SYNC_FLUSH",
	`ringmq_flush_latency_seconds_count{service="commitlog_async"}`: "store TestCommittedBytesWakeOnlyTheirFlusher: the ASYNC_FLUSH flusher, idle under SYNC_FLUSH",
	`ringmq_flush_latency_seconds_sum{service="commitlog_async"}`:   "store TestCommittedBytesWakeOnlyTheirFlusher: the ASYNC_FLUSH flusher, idle under SYNC_FLUSH",

	`ringmq_netio_round_writes_total{engine="gnet",server="namesrv"}`: "netio TestRoundEndWritesToAnIdleConnection: the name server answers on its event loops; only the broker's SYNC_FLUSH answers are written at a round's end",
}

// neverMoving are series registered that cannot move in any configuration (none: the interval
// flushers and the commit service register no waiter series, flush.NewIntervalMetrics).
var neverMoving = map[string]string{}

// TestNotMovingHereNamesRealTests: every test notMovingHere names is a function of that package's
// tests, so a renamed or deleted test cannot leave a series excused by nothing.
func TestNotMovingHereNamesRealTests(t *testing.T) {
	named := regexp.MustCompile(`^([a-z/]+) (Test\w+)$`)
	for key, why := range notMovingHere {
		tests, _, ok := strings.Cut(why, ": ")
		require.True(t, ok, "%s: %q does not start with its tests", key, why)
		for _, test := range strings.Split(tests, "; ") {
			m := named.FindStringSubmatch(test)
			require.NotNil(t, m, "%s: %q is not \"package TestName\"", key, test)
			files, err := filepath.Glob(filepath.Join("..", m[1], "*_test.go"))
			require.NoError(t, err)
			found := false
			for _, f := range files {
				src, err := os.ReadFile(f)
				require.NoError(t, err)
				if strings.Contains(string(src), "\nfunc "+m[2]+"(t *testing.T) {") {
					found = true
					break
				}
			}
			require.True(t, found, "%s: no %s in %s", key, m[2], m[1])
		}
	}
}

// oneSeriesMoves are the families that make a series per label value before it is used (the name
// server's per request code): one of their series moving is enough.
var oneSeriesMoves = map[string]bool{"ringmq_namesrv_requests_total": true}

// TestEveryMetricMoves drives a SYNC_FLUSH SYNC_MASTER through sends (with no slave, with a slave
// that never acknowledges, with a real one), pulls on the loop and on the pool, one held by long
// polling, an offset commit, error answers, producer and consumer heartbeats and bad frames, and
// checks that every series its registry serves moved, except the ones notMovingHere names (with the
// tests that move them) and neverMoving, and that the series of METRICS.md have the values the traffic
// implies. The slave's own series are checked on its registry.
func TestEveryMetricMoves(t *testing.T) {
	master := startTestBroker(t, func(c *Config) {
		c.BrokerRole = RoleSyncMaster
		c.FlushDiskType = store.SyncFlush
		c.HAListenPort = 0
		c.SlaveTimeout = 200 * time.Millisecond
		c.FlushConsumerOffsetInterval = 50 * time.Millisecond
		c.AccessMessageInMemoryMaxRatio = 0 // every pull of stored messages runs on the pull pool
		c.FlushIntervalConsumeQueue = 20 * time.Millisecond
		c.FlushConsumeQueueThoroughInterval = 50 * time.Millisecond // a few entries are flushed too
	})
	reg := master.b.Registry()
	createTopic(t, master.b, "TopicM", 1)
	before := scrapeOf(t, reg)
	c := remotingtest.Dial(t, master.BrokerAddr)

	// SYNC_MASTER without a slave: SLAVE_NOT_AVAILABLE, stored.
	resp := c.Call(sendV1("TopicM", 0, []byte("m0"), ""))
	require.Equal(t, int32(codec.ResponseSlaveNotAvailable), resp.Code, resp.Remark)
	// A "slave" that reports offset 0 once and never again: the send waits, then FLUSH_SLAVE_TIMEOUT.
	mute, err := net.Dial("tcp", master.b.haServer.Addr().String())
	require.NoError(t, err)
	_, err = mute.Write(make([]byte, 8))
	require.NoError(t, err)
	testutil.Eventually(t, "the mute slave connected", func() bool { return master.b.haServer.SlaveCount() == 1 })
	opaque := c.Request(sendV1("TopicM", 0, []byte("m1"), ""))
	var waiting scrape
	testutil.Eventually(t, "a send waiting for the slave", func() bool {
		waiting = scrapeOf(t, reg)
		return waiting.value("ringmq_replica_waiters") == 1
	})
	require.Positive(t, waiting.value("ringmq_replica_behind_bytes"), "the mute slave has nothing")
	require.Equal(t, int32(codec.ResponseFlushSlaveTimeout), c.Await(opaque).Code)
	require.NoError(t, mute.Close())
	testutil.Eventually(t, "the mute slave gone", func() bool { return master.b.haServer.SlaveCount() == 0 })

	// A real slave (its registration moves the name server's series).
	slave := startTestBroker(t, func(c *Config) {
		c.BrokerRole = RoleSlave
		c.BrokerID = 1
		c.NamesrvEmbedded = false
		c.NamesrvAddr = master.NamesrvAddr
		c.HAListenPort = 0
		c.HAMasterAddress = master.b.haServer.Addr().String()
	})
	testutil.Eventually(t, "a slave connected", func() bool { return master.b.haServer.SlaveCount() == 1 })
	for _, c := range slave.b.Live() {
		require.True(t, c.OK, "a slave refuses sends by role, not because its store is read-only: %+v", c)
	}
	testutil.Eventually(t, "the slave ready: connected to its master", func() bool {
		for _, c := range slave.b.Ready() {
			if !c.OK {
				return false
			}
		}
		return true
	})
	require.Equal(t, opsserver.Check{Name: "role", OK: true, Detail: "SLAVE"}, slave.b.Ready()[4])

	// A producer and a consumer, each on its own connection; c is neither.
	producer, consumer := dialCtl(t, master.BrokerAddr), dialCtl(t, master.BrokerAddr)
	requireResponse(t, producer.heartbeat("10.0.0.1@p", nil, "PG"), codec.ResponseSuccess, "")
	requireResponse(t, consumer.heartbeat("10.0.0.2@c",
		[]codec.ConsumerData{*remotingtest.ConsumerData("GM", remotingtest.Subscription("TopicM", 1))}), codec.ResponseSuccess, "")

	for i := 2; i < 10; i++ {
		sendOK(t, c, sendV1("TopicM", 0, []byte("m"+strconv.Itoa(i)), ""))
	}
	testutil.Eventually(t, "TopicM/0 dispatched", func() bool { return master.b.store.GetMaxOffsetInQueue("TopicM", 0) == 10 })
	pulled, pulls := 0, 0
	for next := int64(0); next < 10; pulls++ { // stored messages are "on disk" here: a few per pull
		resp := c.Call(remotingtest.PullRequest("GM", "TopicM", 0, next, 32, subFlag, 0, "*"))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		pulled += len(remotingtest.Records(t, resp.Body))
		var h codec.PullMessageResponseHeader
		require.NoError(t, h.Decode(resp.ExtFields))
		next = h.NextBeginOffset
	}
	require.Equal(t, 10, pulled)

	// A pull held for a consumer whose connection then goes: the message that wakes it has no
	// connection to be written to (ringmq_broker_reply_errors_total). The consumer's unregistration
	// follows the connection being marked closed, so the answer cannot slip out before.
	gone := remotingtest.Dial(t, master.BrokerAddr)
	hb, err := (&codec.HeartbeatData{ClientID: "10.0.0.3@gone", ConsumerDataSet: []codec.ConsumerData{
		*remotingtest.ConsumerData("GGone", remotingtest.Subscription("TopicM", 1))}}).Encode()
	require.NoError(t, err)
	resp = gone.Call(codec.NewRequest(codec.RequestHeartBeat, nil, hb))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	gone.Request(remotingtest.PullRequest("GGone", "TopicM", 0, 10, 32, suspendFlags, 20*time.Second, "*"))
	testutil.Eventually(t, "the pull parked", func() bool { return master.b.read.HeldCount() == 1 })
	require.NoError(t, gone.Close())
	testutil.Eventually(t, "the consumer gone", func() bool {
		return scrapeOf(t, reg).value(`ringmq_broker_connections{role="consumer"}`) == 1
	})

	// A pull held by long polling (on the loop: nothing to read yet), woken by one more message.
	opaque = c.Request(remotingtest.PullRequest("GM", "TopicM", 0, 10, 32, suspendFlags, 20*time.Second, "*"))
	testutil.Eventually(t, "the pull parked", func() bool { return master.b.read.HeldCount() == 2 })
	during := scrapeOf(t, reg)
	sendOK(t, producerConn(t, master), sendV1("TopicM", 0, []byte("m10"), ""))
	resp = c.Await(opaque)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Len(t, remotingtest.Records(t, resp.Body), 1)
	pulls++
	testutil.Eventually(t, "the answer to the gone consumer not written", func() bool {
		return scrapeOf(t, reg).value("ringmq_broker_reply_errors_total") == 1
	})

	// The group commits offset 4 of 11: 7 behind.
	resp = c.Call(codec.NewRequest(codec.RequestUpdateConsumerOffset, map[string]string{
		"consumerGroup": "GM", "topic": "TopicM", "queueId": "0", "commitOffset": "4"}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)

	// Errors: a send to a topic name with a blank, an unknown request code, frames that are not ones
	// (to the broker and to the name server).
	resp = c.Call(sendV1("Bad Topic", 0, []byte("x"), ""))
	badTopic := codec.ResponseCode(resp.Code)
	require.NotEqual(t, codec.ResponseSuccess, badTopic, resp.Remark)
	resp = c.Call(codec.NewRequest(codec.RequestCode(777), nil, nil))
	require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), resp.Code)
	for server, addr := range map[string]string{"broker": master.BrokerAddr, "namesrv": master.NamesrvAddr} {
		// A remark over its 64 KiB cap: answered SYSTEM_ERROR, the connection stays open.
		big := codec.NewRequest(codec.RequestGetBrokerClusterInfo, nil, nil)
		big.Remark = strings.Repeat("r", 65<<10)
		resp := remotingtest.Dial(t, addr).Call(big)
		require.Equal(t, int32(codec.ResponseSystemError), resp.Code, server)
		require.Contains(t, resp.Remark, "remark", server)
		garbage, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		_, err = garbage.Write([]byte{0, 0, 0, 8, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4})
		require.NoError(t, err)
		key := `ringmq_netio_frame_errors_total{engine="gnet",server="` + server + `"}`
		testutil.Eventually(t, key, func() bool { return scrapeOf(t, reg).value(key) > 0 })
		require.NoError(t, garbage.Close())
	}
	// What moves on its own schedule: the files written, the ConsumeQueue flushed, the topic registered.
	for _, key := range []string{
		`ringmq_broker_config_file_writes_total{file="consumerOffset.json",result="ok"}`,
		`ringmq_flush_durable_writes_total{service="consumequeue"}`,
	} {
		testutil.Eventually(t, key, func() bool { return scrapeOf(t, reg).value(key) > 0 })
	}
	// The slave has every message and says its replication is alive.
	testutil.Eventually(t, "the slave caught up", func() bool { return slave.b.store.MaxPhyOffset() == master.b.store.MaxPhyOffset() })
	slaveScrape := scrapeOf(t, slave.b.Registry())
	require.Equal(t, 1.0, slaveScrape.value("ringmq_replica_slave_connects_total"))
	require.GreaterOrEqual(t, slaveScrape.value("ringmq_replica_slave_frames_received_total"), 2.0, "the sends after it connected came in frames")
	testutil.Eventually(t, "the slave registered too", func() bool { return scrapeOf(t, reg).value("ringmq_namesrv_brokers") == 2 })
	testutil.Eventually(t, "TopicM registered", func() bool {
		_, ok := embeddedNamesrv(master.b).TopicRoute("TopicM")
		return ok
	})

	after := scrapeOf(t, reg)
	moved := map[string]bool{}
	for _, s := range []scrape{waiting, during, after} {
		for k := range s.movedSince(before) {
			moved[k] = true
		}
	}
	movedFamilies := familiesOf(scrape(func() map[string]float64 {
		m := map[string]float64{}
		for k := range moved {
			m[k] = 1
		}
		return m
	}()))
	var still []string
	for k := range after {
		f := familyOf(k)
		if !moved[k] && notMovingHere[f] == "" && notMovingHere[k] == "" && neverMoving[k] == "" && !(oneSeriesMoves[f] && movedFamilies[f]) {
			still = append(still, k)
		}
	}
	for f := range familiesOf(before) { // a vector family without a series yet
		if !familiesOf(after)[f] && notMovingHere[f] == "" {
			still = append(still, f)
		}
	}
	slices.Sort(still)
	require.Empty(t, still, "series that did not move")

	// The values the traffic implies.
	for key, want := range map[string]float64{
		`ringmq_broker_topic_put_messages_total{topic="TopicM"}`:                                   11,
		`ringmq_broker_consumer_pulled_messages_total{group="GM",topic="TopicM"}`:                  11,
		`ringmq_broker_consumer_offset{group="GM",topic="TopicM"}`:                                 4,
		`ringmq_broker_consumer_lag_messages{group="GM",topic="TopicM"}`:                           7,
		`ringmq_broker_connections{role="producer"}`:                                               1,
		`ringmq_broker_connections{role="consumer"}`:                                               1,
		`ringmq_broker_requests_total{code="SEND_MESSAGE"}`:                                        12,
		`ringmq_broker_request_duration_seconds_count{code="SEND_MESSAGE"}`:                        12,
		`ringmq_broker_request_errors_total{code="SEND_MESSAGE",response="SLAVE_NOT_AVAILABLE"}`:   1,
		`ringmq_broker_request_errors_total{code="SEND_MESSAGE",response="FLUSH_SLAVE_TIMEOUT"}`:   1,
		`ringmq_broker_request_errors_total{code="<other>",response="REQUEST_CODE_NOT_SUPPORTED"}`: 1,
		`ringmq_broker_requests_total{code="<other>"}`:                                             1,
		`ringmq_broker_requests_total{code="PULL_MESSAGE"}`:                                        float64(pulls + 1), // and the gone consumer's
		`ringmq_broker_pull_runs_total{where="rerun"}`:                                             2,
		`ringmq_broker_reply_errors_total`:                                                         1,
		`ringmq_replica_slaves_connected`:                                                          1,
		`ringmq_namesrv_brokers`:                                                                   2, // the master's registration is before the first scrape, the slave's after
		`ringmq_replica_not_available_total`:                                                       1,
		`ringmq_replica_timeouts_total`:                                                            1,
	} {
		require.Equal(t, want, after.value(key), key)
	}
	require.Equal(t, 1.0, after.value(`ringmq_broker_request_errors_total{code="SEND_MESSAGE",response="`+badTopic.String()+`"}`))
	require.Equal(t, 2.0, during.value(`ringmq_broker_pulls_held`))
	require.Positive(t, after.value(`ringmq_broker_consumer_lag_seconds{group="GM",topic="TopicM"}`))
	require.Equal(t, float64(pulls+1), after.value(`ringmq_broker_request_duration_seconds_count{code="PULL_MESSAGE"}`))
	require.GreaterOrEqual(t, after.value(`ringmq_broker_connections{role="other"}`), 1.0)
}

func familiesOf(s scrape) map[string]bool {
	f := map[string]bool{}
	for k := range s {
		f[familyOf(k)] = true
	}
	return f
}

// producerConn is one more plain connection to tb's broker.
func producerConn(t *testing.T, tb *testBroker) *remotingtest.Conn {
	t.Helper()
	return remotingtest.Dial(t, tb.BrokerAddr)
}

var _ = fmt.Sprint
