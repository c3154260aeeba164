package broker

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// SQL92 filtering over the wire: CHECK_CLIENT_CONFIG as a Java consumer sends it at start,
// and pulls of a heartbeat's SQL92 subscription.

const remarkNoSQL92 = "The broker does not support consumer to filter message by SQL92"

// checkClientConfig sends CHECK_CLIENT_CONFIG (46) with the body a Java 4.9.8 consumer sends
// (fastjson: keys in alphabetical order, the SubscriptionData as FilterAPI builds it).
func checkClientConfig(t *testing.T, c *remotingtest.Conn, exprType, expr string) *codec.RemotingCommand {
	t.Helper()
	body := `{"clientId":"10.0.0.7@12345","group":"GroupSQL","subscriptionData":{"classFilterMode":false,` +
		`"codeSet":[],"expressionType":` + strconv.Quote(exprType) + `,"subString":` + strconv.Quote(expr) +
		`,"subVersion":1733370000000,"tagsSet":[],"topic":"TopicSQL"}}`
	return c.Call(codec.NewRequest(codec.RequestCheckClientConfig, nil, []byte(body)))
}

func TestCheckClientConfigFilterOff(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)

	resp := checkClientConfig(t, c, "SQL92", "a > 1")
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, remarkNoSQL92, resp.Remark)

	resp = checkClientConfig(t, c, "TAG", "TagA || TagB") // a TAG subscription is always fine
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Empty(t, resp.Remark)

	resp = c.Call(codec.NewRequest(codec.RequestCheckClientConfig, nil, []byte(`{"clientId":"x","group":"g"}`)))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "no subscription: nothing to check")

	resp = c.Call(codec.NewRequest(codec.RequestCheckClientConfig, nil, []byte(`{"clientId":`)))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Contains(t, resp.Remark, "CheckClientRequestBody")
}

func TestCheckClientConfigFilterOn(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) { c.EnablePropertyFilter = true }})
	c := remotingtest.Dial(t, db.addr)

	resp := checkClientConfig(t, c, "SQL92", "TAGS IN ('TagA', 'TagB') AND price BETWEEN 10 AND 20.5")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Empty(t, resp.Remark)

	for expr, remark := range map[string]string{
		"a >":     `org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 1, column 4.`,
		"a > 'x'": "java.lang.RuntimeException: Value ''x'' cannot be compared.",
		"a = 1 #": `org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line 1, column 7.  Encountered: "#"`,
	} {
		resp = checkClientConfig(t, c, "SQL92", expr)
		require.Equal(t, int32(codec.ResponseSubscriptionParseFailed), resp.Code, expr)
		require.Equal(t, remark, resp.Remark, expr)
	}
	resp = checkClientConfig(t, c, "GROOVY", "a")
	require.Equal(t, int32(codec.ResponseSubscriptionParseFailed), resp.Code)
	require.Contains(t, resp.Remark, "GROOVY")
}

// heartbeatSQL registers a consumer group's SQL92 subscription as a Go push consumer does.
func heartbeatSQL(t *testing.T, c *remotingtest.Conn, group, topic, expr string, version int64) {
	t.Helper()
	sd := codec.SubscriptionData{Topic: topic, SubString: expr, ExpressionType: codec.ExpressionTypeSQL92,
		SubVersion: version, TagsSet: []string{}, CodeSet: codec.TagCodeSet{}}
	sendHeartbeat(t, c, group, sd)
}

// TestPullSQL92 (file store): the heartbeat's expression selects exactly the matching
// messages, with their queue and CommitLog offsets; the next offset passes the filtered
// ones. With the filter switched off at run time (UPDATE_BROKER_CONFIG), the same pull is
// refused as RocketMQ refuses it.
func TestPullSQL92(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: true, mutate: func(c *Config) { c.EnablePropertyFilter = true }})
	c := remotingtest.Dial(t, db.addr)
	var sent []codec.SendMessageResponseHeader
	for i := range 10 {
		tag := []string{"TagA", "TagB"}[i%2]
		sent = append(sent, sendOK(t, c, sendV1("TopicQ", 0, []byte("m"+strconv.Itoa(i)),
			props("TAGS", tag, "price", strconv.Itoa(i*10), "region", []string{"eu", "us", "ap"}[i%3]))))
	}
	testutil.Eventually(t, "TopicQ/0 dispatched",
		func() bool { return db.b.store.GetMaxOffsetInQueue("TopicQ", 0) == 10 })
	heartbeatSQL(t, c, "GQ", "TopicQ", "TAGS = 'TagA' AND price >= 20 AND region <> 'ap'", 1)

	resp := c.Call(remotingtest.PullRequest("GQ", "TopicQ", 0, 0, 32, 0, 0, ""))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 10, 0, 10)
	recs := remotingtest.Records(t, resp.Body)
	var bodies []string
	for _, r := range recs {
		bodies = append(bodies, string(r.Body))
		i, err := strconv.Atoi(string(r.Body[1:]))
		require.NoError(t, err)
		require.Equal(t, int64(i), r.QueueOffset)
		require.Equal(t, offsetOf(t, sent[i].MsgID), r.PhysicalOffset)
	}
	// The odd ones are TagB, m0 costs 0, m2 and m8 are in region ap.
	require.Equal(t, []string{"m4", "m6"}, bodies)

	resp = c.Call(remotingtest.PullRequest("GQ", "TopicQ", 0, 9, 32, 0, 0, ""))
	requirePull(t, resp, codec.ResponsePullRetryImmediately, "NO_MATCHED_MESSAGE", 10, 0, 10)

	resp = c.Call(codec.NewRequest(codec.RequestUpdateBrokerConfig, nil, []byte("enablePropertyFilter=false\n")))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	resp = c.Call(remotingtest.PullRequest("GQ", "TopicQ", 0, 0, 32, 0, 0, ""))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, remarkNoSQL92, resp.Remark)
	resp = checkClientConfig(t, c, "SQL92", "a > 1")
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, remarkNoSQL92, resp.Remark)
}

// TestPullPathAllocationsSQL92: an SQL92 pull of 32 messages — the heartbeat's subscription
// or one carried by the request — allocates nothing: the compiled expression comes from the
// cache, and the store evaluates it on each record's properties in place.
func TestPullPathAllocationsSQL92(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	db := startDataBroker(t, dataBrokerOptions{fileStore: true, mutate: func(c *Config) { c.EnablePropertyFilter = true }})
	createTopic(t, db.b, "AllocSQL", 1)
	c := remotingtest.Dial(t, db.addr)
	for i := range 64 {
		sendOK(t, c, sendV1("AllocSQL", 0, []byte("m"), props("TAGS", "TagA", "price", strconv.Itoa(i))))
	}
	testutil.Eventually(t, "AllocSQL/0 dispatched",
		func() bool { return db.b.store.GetMaxOffsetInQueue("AllocSQL", 0) == 64 })
	const expr = "TAGS IN ('TagA', 'TagB') AND price >= 0 AND region IS NULL"
	heartbeatSQL(t, c, "AG", "AllocSQL", expr, 1)
	inRequest := remotingtest.PullRequest("AG2", "AllocSQL", 0, 0, 32, subFlag, 0, expr)
	inRequest.ExtFields["expressionType"] = codec.ExpressionTypeSQL92
	for name, cmd := range map[string]*codec.RemotingCommand{
		"heartbeat": remotingtest.PullRequest("AG", "AllocSQL", 0, 0, 32, 0, 0, ""),
		"request":   inRequest,
	} {
		conn := &nullConn{}
		rc := db.b.newRequestContext(conn, cmd)
		db.b.read.ProcessPullMessage(rc) // compiles the subscription once
		allocs := testing.AllocsPerRun(200, func() { db.b.read.ProcessPullMessage(rc) })
		require.Zero(t, conn.failed.Load(), name)
		require.Zero(t, allocs, name)
	}
}
