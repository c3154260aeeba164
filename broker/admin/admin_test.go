package admin

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/conntest"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/store"
)

// Unit tests of the plane with fakes for its dependencies. The admin requests' behaviour
// over the wire, against a real broker, is tested in package broker (control_test.go,
// role_slave_test.go, goclient_admin_test.go).

// call runs one handler on a request with ext and body and returns its only response.
func call(t *testing.T, h func(*remoting.Request), ext map[string]string, body []byte) *codec.RemotingCommand {
	t.Helper()
	replies := remoting.NewReplies(prometheus.NewCounter(prometheus.CounterOpts{Name: "reply_errors_total"}),
		logtest.Discard())
	conn := &conntest.Conn{Remote: netip.MustParseAddrPort("10.0.0.1:4000")}
	cmd := codec.NewRequest(codec.RequestGetTopicConfig, ext, body)
	h(replies.NewRequest(conn, cmd, time.Time{}))
	got := conn.MustResponses(t)
	require.Len(t, got, 1, "one response")
	return got[0]
}

func requireAnswer(t *testing.T, resp *codec.RemotingCommand, code codec.ResponseCode, remark string) {
	t.Helper()
	require.Equal(t, int32(code), resp.Code, "remark %q", resp.Remark)
	require.Equal(t, remark, resp.Remark)
}

func openTables(t *testing.T) *metadata.Tables {
	t.Helper()
	tables, err := metadata.Open(metadata.Options{
		StorePathRootDir: t.TempDir(),
		Topics:           metadata.TopicOptions{ClusterName: "C", BrokerName: "b", DefaultTopicQueueNums: 4},
		Logger:           logtest.Discard(),
	})
	require.NoError(t, err)
	return tables
}

func TestSlaveRefusesChangesBeforeTouchingTables(t *testing.T) {
	// Java's AdminBrokerProcessor.validateSlave remark, byte for byte: apache/rocketmq's
	// AdminBrokerProcessorTest (testUpdateAndCreateTopicOnSlave, testDeleteTopicOnSlave) asserts this
	// text with SYSTEM_ERROR.
	require.Equal(t, "Can't modify topic or subscription group from slave broker, please execute it from master broker.",
		SlaveRemark)
	p := New(Deps{IsSlave: true, Store: fakeStore{}}) // no tables: a refusal must not reach them
	for _, h := range []func(*remoting.Request){p.ProcessUpdateAndCreateTopic, p.ProcessDeleteTopicInBroker,
		p.ProcessUpdateAndCreateSubscriptionGroup, p.ProcessDeleteSubscriptionGroup} {
		requireAnswer(t, call(t, h, map[string]string{"topic": "T", "groupName": "G"}, nil), codec.ResponseSystemError,
			SlaveRemark)
	}
}

// A topic change is answered once the registration round ends; a failed round is logged, and
// the change stands.
func TestCreateTopicWaitsForRegistration(t *testing.T) {
	tables := openTables(t)
	logger, rec := logtest.Logger()
	var waits int
	p := New(Deps{Topics: tables.Topics, Groups: tables.Groups, Offsets: tables.Offsets, Store: fakeStore{},
		Logger: logger,
		WaitRegistration: func(ctx context.Context) error {
			_, bounded := ctx.Deadline()
			require.True(t, bounded, "the wait is bounded (adminRegisterWait)")
			require.True(t, tables.Topics.Contains("NewT"), "the topic exists before the round is asked for")
			waits++
			return errors.New("name server down")
		}})
	h := codec.UpdateAndCreateTopicRequestHeader{Topic: "NewT", ReadQueueNums: 2, WriteQueueNums: 2, Perm: 6,
		TopicFilterType: codec.TopicFilterSingleTag}
	ext := map[string]string{}
	h.Encode(ext)
	requireAnswer(t, call(t, p.ProcessUpdateAndCreateTopic, ext, nil), codec.ResponseSuccess, "")
	require.Equal(t, 1, waits)
	warnings := rec.AtLevel(slog.LevelWarn)
	require.Len(t, warnings, 1)
	require.Equal(t, "broker: registration after admin change failed", warnings[0].Message)
}

func TestAlterAttributes(t *testing.T) {
	for _, tc := range []struct {
		name         string
		create       bool
		current      map[string]string
		modification string
		want         map[string]string
		err          string
	}{
		{name: "empty", create: true, want: map[string]string{}},
		{name: "add on create", create: true, modification: "+message.type=FIFO,+k=v",
			want: map[string]string{"message.type": "FIFO", "k": "v"}},
		{name: "delete on create", create: true, modification: "-k",
			err: "only add attribute is supported while creating topic. key: k"},
		{name: "set and delete on update", current: map[string]string{"k": "v", "x": "1"}, modification: "+x=2,-k",
			want: map[string]string{"x": "2"}},
		{name: "delete a missing key", current: map[string]string{}, modification: "-k",
			err: "attempt to delete a nonexistent key: k"},
		{name: "no value", modification: "+k=", err: "add/alter attribute format is wrong: +k="},
		{name: "no key", modification: "+=v", err: "add/alter attribute format is wrong: +=v"},
		{name: "no action", modification: "k=v", err: `unknown attribute action symbol in "k=v"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before map[string]string
			if tc.current != nil {
				before = map[string]string{}
				for k, v := range tc.current {
					before[k] = v
				}
			}
			got, err := alterAttributes(tc.create, tc.current, tc.modification)
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, before, tc.current, "the current attributes are not modified")
		})
	}
}

func TestAppendQueueKey(t *testing.T) {
	require.Equal(t, `{"brokerName":"b\"1","queueId":3,"topic":"T"}:`, string(appendQueueKey(nil, `b"1`, 3, "T")))
}

func TestConnectionLists(t *testing.T) {
	sub := &codec.SubscriptionData{Topic: "T", SubString: "*"}
	consumers := fakeConsumers{"CG": {
		Members:       []Client{{Addr: "10.0.0.2:5000", ClientID: "c1", Language: codec.LanguageGo, Version: 400}},
		Subscriptions: map[string]*codec.SubscriptionData{"T": sub}, ConsumeType: codec.ConsumePassively,
		MessageModel: codec.MessageModelClustering, ConsumeFromWhere: codec.ConsumeFromLastOffset,
	}, "Empty": {}}
	producers := fakeProducers{"PG": {{Addr: "10.0.0.3:5000", ClientID: "p1", Language: codec.LanguageJava, Version: 1}}}
	p := New(Deps{Store: fakeStore{}, Consumers: consumers, Producers: producers})

	resp := call(t, p.ProcessGetConsumerConnectionList, map[string]string{"consumerGroup": "CG"}, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	subJSON, err := json.Marshal(*sub)
	require.NoError(t, err)
	require.Equal(t, `{"connectionSet":[{"clientAddr":"10.0.0.2:5000","clientId":"c1","language":"GO","version":400}],`+
		`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",`+
		`"subscriptionTable":{"T":`+string(subJSON)+`}}`, string(resp.Body))
	for _, group := range []string{"Empty", "Nope"} {
		requireAnswer(t, call(t, p.ProcessGetConsumerConnectionList, map[string]string{"consumerGroup": group}, nil),
			codec.ResponseConsumerNotOnline, "the consumer group["+group+"] not online")
	}
	requireAnswer(t, call(t, p.ProcessGetConsumerConnectionList, nil, nil), codec.ResponseSystemError,
		"the custom field <consumerGroup> is null")

	resp = call(t, p.ProcessGetProducerConnectionList, map[string]string{"producerGroup": "PG"}, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, `{"connectionSet":[{"clientAddr":"10.0.0.3:5000","clientId":"p1","language":"JAVA","version":1}]}`,
		string(resp.Body))
	requireAnswer(t, call(t, p.ProcessGetProducerConnectionList, map[string]string{"producerGroup": "Nope"}, nil),
		codec.ResponseSystemError, "the producer group[Nope] not exist")
}

func TestGetBrokerConfig(t *testing.T) {
	boot := time.UnixMilli(1_700_000_000_123)
	p := New(Deps{Store: fakeStore{}, BootTime: boot, Properties: func(yield func(string, string) bool) {
		_ = yield("brokerName", "b") && yield("listenPort", "10911") && yield("empty", "")
	}})
	resp := call(t, p.ProcessGetBrokerConfig, nil, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, "brokerName=b\nlistenPort=10911\nempty=\n", string(resp.Body))
	require.Equal(t, `{"counter":0,"stateVersion":0,"timestamp":1700000000123}`, resp.ExtFields["version"])
}

func TestRuntimeInfo(t *testing.T) {
	boot := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	now := boot.Add(26*time.Hour + 3*time.Minute + 4*time.Second)
	st := fakeStore{stats: store.Stats{PutMessageTimesTotal: 4, PutMessageSizeTotal: 10, GetMessageTransferredMsg: 7,
		CommitLogMaxOffset: 900}}
	depth := func(n int64) func() int64 { return func() int64 { return n } }
	p := New(Deps{Store: st, BootTime: boot, Clock: func() time.Time { return now },
		Pools: Pools{Pull: Pool{Depth: depth(1), Capacity: 10000}, Query: Pool{Depth: depth(2), Capacity: 1000},
			Admin: Pool{Depth: depth(3), Capacity: 100}}})
	resp := call(t, p.ProcessGetBrokerRuntimeInfo, nil, nil)
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	kv, err := codec.DecodeKVTable(resp.Body)
	require.NoError(t, err)
	for key, want := range map[string]string{
		"brokerVersionDesc": "V4_9_8", "brokerVersion": "409",
		"bootTimestamp": "1714557600000", "runtime": "[ 1 days, 2 hours, 3 minutes, 4 seconds ]",
		"msgPutTotalTodayNow": "4", "msgGetTotalTodayNow": "7", "putMessageAverageSize": "2.50",
		"commitLogMaxOffset": "900", "earliestMessageTimeStamp": "0",
		"pullThreadPoolQueueSize": "1", "pullThreadPoolQueueCapacity": "10000",
		"queryThreadPoolQueueSize": "2", "queryThreadPoolQueueCapacity": "1000",
		"adminBrokerThreadPoolQueueSize": "3", "adminBrokerThreadPoolQueueCapity": "100",
		"putTps": "0.00 0.00 0.00", // never sampled
	} {
		require.Equal(t, want, kv.Table[key], key)
	}
}

func TestRuntimeText(t *testing.T) {
	require.Equal(t, "[ 0 days, 0 hours, 0 minutes, 0 seconds ]", runtimeText(999*time.Millisecond))
	require.Equal(t, "[ 2 days, 3 hours, 4 minutes, 5 seconds ]", runtimeText(51*time.Hour+4*time.Minute+5*time.Second))
}

// The TPS figures are rates over the last 10, 60 and 600 samples, over fewer while fewer
// were taken; the morning counters roll over when a sample falls on a new day.
func TestRuntimeStats(t *testing.T) {
	now := time.Date(2024, 5, 1, 23, 50, 0, 0, time.UTC)
	var st store.Stats
	r := NewRuntimeStats(func() store.Stats { return st }, func() time.Time { return now })
	put := func(s runtimeSample) int64 { return s.put }
	require.Equal(t, "0.00 0.00 0.00", r.tpsText(put))

	// 30 s at 10 puts/s, then 30 s at 40 puts/s.
	for i := range 61 {
		if i > 0 {
			now = now.Add(time.Second)
			if i <= 30 {
				st.PutMessageTimesTotal += 10
			} else {
				st.PutMessageTimesTotal += 40
			}
		}
		r.Sample()
	}
	require.Equal(t, "40.00 25.00 25.00", r.tpsText(put))
	require.Equal(t, morningCounters{}, r.mornings())

	// The next day: today's morning is the counters then, yesterday's the previous today's.
	st.GetMessageTransferredMsg = 5
	now = time.Date(2024, 5, 2, 0, 0, 1, 0, time.UTC)
	r.Sample()
	require.Equal(t, morningCounters{todayPut: st.PutMessageTimesTotal, todayGet: 5}, r.mornings())
	now = now.Add(24 * time.Hour)
	r.Sample()
	require.Equal(t, morningCounters{todayPut: st.PutMessageTimesTotal, todayGet: 5, yesterdayPut: st.PutMessageTimesTotal,
		yesterdayGet: 5}, r.mornings())
}

// fakeStore answers Stats and an empty CommitLog; any other call panics (nil Store).
type fakeStore struct {
	Store
	stats store.Stats
}

func (s fakeStore) Stats() store.Stats             { return s.stats }
func (s fakeStore) BeginTimeInLock() time.Duration { return 0 }
func (s fakeStore) MinPhyOffset() int64            { return 0 }
func (s fakeStore) MaxPhyOffset() int64            { return 0 }

type fakeConsumers map[string]ConsumerConnection

func (c fakeConsumers) Connection(group string) (ConsumerConnection, bool) {
	g, ok := c[group]
	return g, ok
}
func (c fakeConsumers) ConsumerIDs(string) []string                                 { return nil }
func (c fakeConsumers) GroupsByTopic(string) []string                               { return nil }
func (c fakeConsumers) FindSubscriptionData(string, string) *codec.SubscriptionData { return nil }
func (c fakeConsumers) Oneway(string, func() *codec.RemotingCommand) int            { return 0 }

type fakeProducers map[string][]Client

func (p fakeProducers) Connections(group string) []Client { return p[group] }
func (p fakeProducers) Groups() []string                  { return slices.Sorted(maps.Keys(p)) }

// UPDATE_BROKER_CONFIG: the body's properties reach UpdateConfig in order; its refusals and
// failures become the answer's code and remark; only a brokerPermission change advances the topic
// version and waits for a registration round.
func TestUpdateBrokerConfigAnswers(t *testing.T) {
	tables := openTables(t)
	var got [][]conf.Property
	var answer error
	waits := 0
	p := New(Deps{Topics: tables.Topics, Groups: tables.Groups, Offsets: tables.Offsets, Store: fakeStore{},
		UpdateConfig:     func(props []conf.Property) error { got = append(got, props); return answer },
		WaitRegistration: func(context.Context) error { waits++; return nil }})
	v0 := tables.Topics.DataVersion().Counter

	requireAnswer(t, call(t, p.ProcessUpdateBrokerConfig, nil, []byte("autoCreateTopicEnable=false\n")), codec.ResponseSuccess, "")
	require.Equal(t, [][]conf.Property{{{Key: "autoCreateTopicEnable", Value: "false", Line: 1}}}, got)
	require.Equal(t, 0, waits)
	require.Equal(t, v0, tables.Topics.DataVersion().Counter)

	requireAnswer(t, call(t, p.ProcessUpdateBrokerConfig, nil, []byte("# drain\nbrokerPermission : 4")), codec.ResponseSuccess, "")
	require.Equal(t, []conf.Property{{Key: "brokerPermission", Value: "4", Line: 2}}, got[1])
	require.Equal(t, 1, waits)
	require.Equal(t, v0+1, tables.Topics.DataVersion().Counter)

	for _, tc := range []struct {
		err    error
		code   codec.ResponseCode
		remark string
	}{
		{&ConfigRefused{NoPermission: true, Remark: "key x needs a restart"}, codec.ResponseNoPermission, "key x needs a restart"},
		{&ConfigRefused{Remark: "unknown key y"}, codec.ResponseInvalidParameter, "unknown key y"},
		{errors.New("disk full; nothing changed"), codec.ResponseSystemError, "disk full; nothing changed"},
	} {
		answer = tc.err
		requireAnswer(t, call(t, p.ProcessUpdateBrokerConfig, nil, []byte("brokerPermission=4")), tc.code, tc.remark)
	}
	require.Equal(t, 1, waits, "a refused change registers nothing")

	calls := len(got)
	requireAnswer(t, call(t, p.ProcessUpdateBrokerConfig, nil, nil), codec.ResponseSuccess, "")
	requireAnswer(t, call(t, p.ProcessUpdateBrokerConfig, nil, []byte("a=\\u12")), codec.ResponseSystemError,
		`string2Properties error: conf: malformed properties: line 1: value of "a": malformed \uxxxx escape: \u12`)
	require.Len(t, got, calls, "nothing to change: UpdateConfig not called")

	requireAnswer(t, call(t, New(Deps{Store: fakeStore{}}).ProcessUpdateBrokerConfig, nil, []byte("a=1")),
		codec.ResponseRequestCodeNotSupported, "request type 25 not supported")
}
