package readplane

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conntest"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
)

// The read plane's test harness: a Plane over a MemStore (or the file store on t.TempDir()),
// real metadata tables, subscriptions set by the test, and a pull pool that runs each task
// on its own goroutine. Requests are driven through the exported handlers as the broker's
// dispatcher does (the pool part of a split handler runs on a goroutine), and answers are
// read from a fakeConn. The wire-level tests (codes and bytes through the remoting server)
// stay in package broker.

// readPlane is a started Plane and what it was built from.
type readPlane struct {
	t       testing.TB
	p       *Plane
	st      store.MessageStore
	tables  *metadata.Tables
	subs    *subscriptions
	replies *remoting.Replies
	pool    *goPool
	busy    prometheus.Counter // the HoldFull counter
	opaques atomic.Int32
}

type planeOptions struct {
	fileStore bool                                        // the file store on t.TempDir() instead of a MemStore
	wrap      func(store.MessageStore) store.MessageStore // wraps the store
	settings  func(*Settings)                             // changes testSettings
	live      func(*live.Settings)                        // changes testLive
	beforeRun func(*Plane)                                // after New, before Start
}

// testHost is the STOREHOST of the harness's records.
var testHost = netip.MustParseAddrPort("127.0.0.1:10911")

// testSettings are the broker's defaults (long polling on, defaultQueryMaxNum 32) with every
// record counting as hot; testLive's brokerPermission is 6.
func testSettings() Settings {
	return Settings{
		BrokerIP:           testHost.Addr().String(),
		LongPollingEnable:  true,
		ShortPollingTime:   time.Second,
		DefaultQueryMaxNum: 32,
		HotMaxBehindBytes:  1 << 30,
	}
}

// testLive is a broker's run-time keys at their defaults: brokerPermission 6, the rest off.
func testLive() *live.Settings {
	l := new(live.Settings)
	l.BrokerPermission.Store(metadata.PermRead | metadata.PermWrite)
	return l
}

// startPlane builds and starts a plane; its cleanup stops it, the pool and the store.
func startPlane(t testing.TB, opts planeOptions) *readPlane {
	t.Helper()
	dir := t.TempDir()
	sc := store.DefaultConfig(dir)
	sc.StoreHost = testHost
	sc.MappedFileSizeCommitLog = 4 << 20
	sc.MappedFileSizeConsumeQueue = 1024 * 20
	sc.MaxHashSlotNum = 1024
	sc.MaxIndexNum = 4096
	sc.MaxMessageSize = 1 << 20
	var st store.MessageStore
	if opts.fileStore {
		fs, err := store.Open(sc, store.Deps{Logger: logtest.Discard()})
		require.NoError(t, err)
		st = fs
	} else {
		st = storetest.NewMemStore(sc, nil)
	}
	if opts.wrap != nil {
		st = opts.wrap(st)
	}
	tables, err := metadata.Open(metadata.Options{StorePathRootDir: dir, AutoCreateSubscriptionGroup: true,
		Topics: metadata.TopicOptions{ClusterName: "TestCluster", BrokerName: "broker-test", DefaultTopicQueueNums: 4}})
	require.NoError(t, err)
	set := testSettings()
	if opts.settings != nil {
		opts.settings(&set)
	}
	rp := &readPlane{t: t, st: st, tables: tables, subs: &subscriptions{m: map[[2]string]*codec.SubscriptionData{}},
		replies: remoting.NewReplies(prometheus.NewCounter(prometheus.CounterOpts{Name: "reply_errors_total"}), logtest.Discard()),
		pool:    &goPool{}, busy: prometheus.NewCounter(prometheus.CounterOpts{Name: "busy_total"})}
	liveSet := testLive()
	if opts.live != nil {
		opts.live(liveSet)
	}
	rp.p, err = New(Deps{Store: st, Topics: tables.Topics, Groups: tables.Groups, Offsets: tables.Offsets,
		Subscriptions: rp.subs, Pool: rp.pool, Settings: set, Live: liveSet, Registerer: prometheus.NewRegistry(), HoldFull: rp.busy,
		Logger: logtest.Discard()})
	require.NoError(t, err)
	st.SetArrivingListener(rp.p.OnMessageArriving)
	if opts.beforeRun != nil {
		opts.beforeRun(rp.p)
	}
	require.NoError(t, st.Start())
	require.NoError(t, rp.p.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rp.p.Stop(ctx))
		rp.pool.close()
		require.NoError(t, st.Shutdown())
	})
	return rp
}

// createTopic creates a read-write topic with queues queues.
func (rp *readPlane) createTopic(name string, queues int32) {
	rp.t.Helper()
	tc := codec.NewTopicConfig(name)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	require.NoError(rp.t, rp.tables.Topics.Update(tc))
}

// put stores a message (with a TAGS property unless tags is empty) in topic/queueID, creating
// the topic with 4 queues as a send's auto-creation would, and returns its CommitLog offset.
func (rp *readPlane) put(topic string, queueID int32, body string, tags string) int64 {
	rp.t.Helper()
	var props []byte
	if tags != "" {
		props = codec.AppendProperty(props, codec.PropertyTags, tags)
	}
	return rp.putProps(topic, queueID, body, props)
}

// putProps is put with the message's properties.
func (rp *readPlane) putProps(topic string, queueID int32, body string, props []byte) int64 {
	rp.t.Helper()
	if _, ok := rp.tables.Topics.Get(topic); !ok {
		rp.createTopic(topic, 4)
	}
	m := codec.Message{Topic: topic, QueueID: queueID, Body: []byte(body), Properties: props,
		BornTimestamp: 1700000000000, BornHost: testHost, StoreHost: testHost}
	res, err := rp.st.PutMessage(&m)
	require.NoError(rp.t, err)
	require.Equal(rp.t, store.PutOK, res.Status)
	return m.PhysicalOffset
}

// waitMax waits until topic/queueID's max offset is n (the file store dispatches on its own goroutine).
func (rp *readPlane) waitMax(topic string, queueID int32, n int64) {
	rp.t.Helper()
	testutil.Eventually(rp.t, topic+" dispatched", func() bool { return rp.st.GetMaxOffsetInQueue(topic, queueID) == n })
}

// waitHeld waits until n pulls are parked, each in the hold goroutine's table. Counted but still
// queued for it is not enough: a park taken after an arrival is re-run without a tag check (as
// Java's checkHoldRequest), so a test putting right after would race it.
func (rp *readPlane) waitHeld(n int) {
	rp.t.Helper()
	h := rp.p.hold
	testutil.Eventually(rp.t, "parked pulls",
		func() bool { return h.HeldCount() == n && h.queued.Load() == 0 })
}

// pending is a request handed to the plane; its answer arrives on conn.
type pending struct {
	t      testing.TB
	conn   *conntest.Conn
	opaque int32
}

// Await waits for the request's answer and checks it carries the request's opaque.
func (r *pending) Await() *codec.RemotingCommand {
	r.t.Helper()
	testutil.Eventually(r.t, "the answer", func() bool { return len(r.conn.MustResponses(r.t)) > 0 })
	resps := r.conn.MustResponses(r.t)
	require.Len(r.t, resps, 1, "one answer per request")
	require.Equal(r.t, r.opaque, resps[0].Opaque)
	return resps[0]
}

// answered reports whether the request has been answered yet.
func (r *pending) answered() bool { return len(r.conn.MustResponses(r.t)) > 0 }

// request wraps cmd, given a fresh opaque, as the dispatcher would for a request received now.
func (rp *readPlane) request(cmd *codec.RemotingCommand) (*remoting.Request, *pending) {
	conn := &conntest.Conn{}
	cmd.Opaque = rp.opaques.Add(1)
	return rp.replies.NewRequest(conn, cmd, time.Now()), &pending{t: rp.t, conn: conn, opaque: cmd.Opaque}
}

// pull hands a pull to ProcessPullMessage; its pool part, if any, runs on the pool.
func (rp *readPlane) pull(cmd *codec.RemotingCommand) *pending {
	rc, pr := rp.request(cmd)
	if rest := rp.p.ProcessPullMessage(rc); rest != nil {
		rp.pool.run(rest)
	}
	return pr
}

// call runs a request through its handler (split handlers' pool parts on the pool) and waits
// for the answer.
func (rp *readPlane) call(cmd *codec.RemotingCommand) *codec.RemotingCommand {
	rp.t.Helper()
	rc, pr := rp.request(cmd)
	var rest func()
	switch codec.RequestCode(cmd.Code) {
	case codec.RequestPullMessage, codec.RequestLitePullMessage:
		rest = rp.p.ProcessPullMessage(rc)
	case codec.RequestQueryMessage:
		rest = rp.p.ProcessQueryMessage(rc)
	case codec.RequestViewMessageByID:
		rest = rp.p.ProcessViewMessageByID(rc)
	case codec.RequestSearchOffsetByTimestamp:
		rest = rp.p.ProcessSearchOffsetByTimestamp(rc)
	case codec.RequestGetEarliestMsgStoretime:
		rest = rp.p.ProcessGetEarliestMsgStoretime(rc)
	case codec.RequestGetMaxOffset:
		rp.p.ProcessGetMaxOffset(rc)
	case codec.RequestGetMinOffset:
		rp.p.ProcessGetMinOffset(rc)
	default:
		rp.t.Fatalf("not a read request: %d", cmd.Code)
	}
	if rest != nil {
		rp.pool.run(rest)
	}
	return pr.Await()
}

// subscriptions are the consumers' heartbeat subscriptions, set by the test.
type subscriptions struct {
	mu sync.Mutex
	m  map[[2]string]*codec.SubscriptionData
}

func (s *subscriptions) FindSubscriptionData(group, topic string) *codec.SubscriptionData {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[[2]string{group, topic}]
}

// goPool runs each task on its own goroutine (the broker's pull pool, unbounded); after close
// it refuses work as a closed pool does.
type goPool struct {
	mu     sync.Mutex
	wg     sync.WaitGroup
	closed bool
}

func (p *goPool) Submit(req *remoting.Request, fn func(*remoting.Request)) error {
	return p.spawn(func() { fn(req) })
}

// run runs the pool part of a split handler, as the dispatcher queues it.
func (p *goPool) run(rest func()) {
	if err := p.spawn(rest); err != nil {
		panic(err)
	}
}

func (p *goPool) spawn(fn func()) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errPoolClosed
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		fn()
	}()
	return nil
}

func (p *goPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}

var errPoolClosed = errors.New("test pool closed")

const (
	subFlag      = codec.PullSysFlagSubscription
	suspendFlags = codec.PullSysFlagSuspend | codec.PullSysFlagSubscription
)

// requirePull checks a pull response's code, remark and the four offsets.
func requirePull(t testing.TB, resp *codec.RemotingCommand, code codec.ResponseCode, remark string,
	next, minOff, maxOff int64) codec.PullMessageResponseHeader {
	t.Helper()
	require.Equal(t, int32(code), resp.Code, "remark: %s", resp.Remark)
	require.Equal(t, remark, resp.Remark)
	var h codec.PullMessageResponseHeader
	require.NoError(t, h.Decode(resp.ExtFields), "pull response header: %v", resp.ExtFields)
	require.Equal(t, next, h.NextBeginOffset, "nextBeginOffset")
	require.Equal(t, minOff, h.MinOffset, "minOffset")
	require.Equal(t, maxOff, h.MaxOffset, "maxOffset")
	require.Equal(t, int64(0), h.SuggestWhichBrokerID)
	return h
}

// counterValue reads a counter's current value.
func counterValue(t testing.TB, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
