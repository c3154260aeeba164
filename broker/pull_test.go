package broker

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/store"
)

// pullHeader decodes a pull response header.
func pullHeader(t testing.TB, resp *codec.RemotingCommand) codec.PullMessageResponseHeader {
	t.Helper()
	var h codec.PullMessageResponseHeader
	require.NoError(t, h.Decode(resp.ExtFields), "pull response header: %v", resp.ExtFields)
	return h
}

// requirePull checks a pull response's code, remark and the four offsets.
func requirePull(t testing.TB, resp *codec.RemotingCommand, code codec.ResponseCode, remark string,
	next, minOff, maxOff int64) codec.PullMessageResponseHeader {
	t.Helper()
	require.Equal(t, int32(code), resp.Code, "remark: %s", resp.Remark)
	require.Equal(t, remark, resp.Remark)
	h := pullHeader(t, resp)
	require.Equal(t, next, h.NextBeginOffset, "nextBeginOffset")
	require.Equal(t, minOff, h.MinOffset, "minOffset")
	require.Equal(t, maxOff, h.MaxOffset, "maxOffset")
	require.Equal(t, int64(0), h.SuggestWhichBrokerID)
	return h
}

const subFlag = codec.PullSysFlagSubscription

func TestPullStatusTable(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	var sent []codec.SendMessageResponseHeader
	for i := range 3 {
		sent = append(sent, sendOK(t, c, sendV1("TopicP", 0, []byte("m"+strconv.Itoa(i)), props("TAGS", "TagA"))))
	}

	// FOUND: the stored records, byte for byte.
	resp := c.Call(remotingtest.PullRequest("G", "TopicP", 0, 0, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 3, 0, 3)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 3)
	for i, r := range recs {
		require.Equal(t, "m"+strconv.Itoa(i), string(r.Body))
		require.Equal(t, int64(i), r.QueueOffset)
		require.Equal(t, offsetOf(t, sent[i].MsgID), r.PhysicalOffset)
	}
	var want []byte
	for _, s := range sent {
		ext := map[string]string{"offset": strconv.FormatInt(offsetOf(t, s.MsgID), 10)}
		want = append(want, c.Call(codec.NewRequest(codec.RequestViewMessageByID, ext, nil)).Body...)
	}
	require.Equal(t, want, resp.Body)

	// maxMsgNums limits the batch; 0 means 32.
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 0, 1, 1, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 2, 0, 3)
	require.Len(t, remotingtest.Records(t, resp.Body), 1)
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 0, 0, 0, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 3, 0, 3)
	require.Len(t, remotingtest.Records(t, resp.Body), 3)

	// Nothing new.
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 0, 3, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponsePullNotFound, "OFFSET_OVERFLOW_ONE", 3, 0, 3)
	require.Empty(t, resp.Body)
	// Past the end: corrected to the start (min is 0).
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 0, 10, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponsePullOffsetMoved, "OFFSET_OVERFLOW_BADLY", 0, 0, 3)
	// A queue without data.
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 1, 0, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponsePullNotFound, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 1, 5, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponsePullOffsetMoved, "NO_MATCHED_LOGIC_QUEUE", 0, 0, 0)

	// Tag filter: nothing matches → PULL_RETRY_IMMEDIATELY past the filtered entries.
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 0, 0, 32, subFlag, 0, "TagB"))
	requirePull(t, resp, codec.ResponsePullRetryImmediately, "NO_MATCHED_MESSAGE", 3, 0, 3)
	sendOK(t, c, sendV1("TopicP", 0, []byte("b"), props("TAGS", "TagB")))
	sendOK(t, c, sendV1("TopicP", 0, []byte("c"), props("TAGS", "TagC")))
	sendOK(t, c, sendV1("TopicP", 0, []byte("d"), props("TAGS", "TagD")))
	resp = c.Call(remotingtest.PullRequest("G", "TopicP", 0, 0, 32, subFlag, 0, " TagB ||TagD"))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 6, 0, 6)
	recs = remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 2)
	require.Equal(t, "b", string(recs[0].Body))
	require.Equal(t, "d", string(recs[1].Body))
}

// cannedStore answers GetMessage for topic "Canned" with a fixed result.
type cannedStore struct {
	store.MessageStore
	mu     sync.Mutex
	result store.GetMessageResult
}

func (s *cannedStore) set(r store.GetMessageResult) {
	s.mu.Lock()
	s.result = r
	s.mu.Unlock()
}

func (s *cannedStore) GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int,
	filter store.MessageFilter) (*store.GetMessageResult, error) {
	if topic == "Canned" {
		s.mu.Lock()
		r := s.result
		s.mu.Unlock()
		return &r, nil
	}
	return s.MessageStore.GetMessage(group, topic, queueID, offset, maxMsgNums, maxBytes, filter)
}

func TestPullOffsetTooSmallAndOtherStatuses(t *testing.T) {
	canned := &cannedStore{}
	db := startDataBroker(t, dataBrokerOptions{wrap: func(s store.MessageStore) store.MessageStore {
		canned.MessageStore = s
		return canned
	}})
	tc := codec.NewTopicConfig("Canned")
	tc.ReadQueueNums, tc.WriteQueueNums = 1, 1
	require.NoError(t, db.b.topics.Update(tc))
	c := remotingtest.Dial(t, db.addr)
	cases := []struct {
		status store.GetMessageStatus
		code   codec.ResponseCode
	}{
		{store.OffsetTooSmall, codec.ResponsePullOffsetMoved},
		{store.MessageWasRemoving, codec.ResponsePullRetryImmediately},
		{store.OffsetFoundNull, codec.ResponsePullNotFound},
	}
	for _, tc := range cases {
		canned.set(store.GetMessageResult{Status: tc.status, NextBeginOffset: 5, MinOffset: 5, MaxOffset: 9})
		resp := c.Call(remotingtest.PullRequest("G", "Canned", 0, 2, 32, subFlag, 0, "*"))
		requirePull(t, resp, tc.code, tc.status.String(), 5, 5, 9)
	}
}

func TestPullChecks(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	sendOK(t, c, sendV1("TopicC", 0, []byte("x"), ""))

	cmd := remotingtest.PullRequest("G", "TopicC", 0, 0, 32, subFlag, 0, "*")
	delete(cmd.ExtFields, "queueOffset")
	resp := c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "the custom field <queueOffset> is null", resp.Remark)

	resp = c.Call(remotingtest.PullRequest("G", "NoTopic", 0, 0, 32, subFlag, 0, "*"))
	require.Equal(t, int32(codec.ResponseTopicNotExist), resp.Code)
	require.Equal(t, "topic[NoTopic] not exist, apply first please!", resp.Remark)

	resp = c.Call(remotingtest.PullRequest("G", "TopicC", 4, 0, 32, subFlag, 0, "*"))
	require.Equal(t, int32(codec.ResponseInvalidParameter), resp.Code)
	require.True(t, strings.HasPrefix(resp.Remark, "queueId[4] is illegal, topic:[TopicC] topicConfig.readQueueNums:[4] consumer:[127.0.0.1:"), resp.Remark)

	resp = c.Call(remotingtest.PullRequest("G", "TopicC", 0, 0, 32, 0, 0, ""))
	require.Equal(t, int32(codec.ResponseSubscriptionNotExist), resp.Code)
	require.Equal(t, "the consumer's subscription not exist", resp.Remark)

	sql := remotingtest.PullRequest("G", "TopicC", 0, 0, 32, subFlag, 0, "a > 1")
	sql.ExtFields["expressionType"] = codec.ExpressionTypeSQL92
	resp = c.Call(sql)
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "The broker does not support consumer to filter message by SQL92", resp.Remark)

	resp = c.Call(remotingtest.PullRequest("G", "TopicC", 0, 0, 32, subFlag, 0, "||"))
	require.Equal(t, int32(codec.ResponseSubscriptionParseFailed), resp.Code)
	require.Equal(t, "parse the consumer's subscription failed", resp.Remark)

	g := codec.NewSubscriptionGroupConfig("Disabled")
	g.ConsumeEnable = false
	require.NoError(t, db.b.subscriptions.Update(g))
	resp = c.Call(remotingtest.PullRequest("Disabled", "TopicC", 0, 0, 32, subFlag, 0, "*"))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "subscription group no permission, Disabled", resp.Remark)

	tc := codec.NewTopicConfig("WriteOnly")
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 1, 1, metadata.PermWrite
	require.NoError(t, db.b.topics.Update(tc))
	resp = c.Call(remotingtest.PullRequest("G", "WriteOnly", 0, 0, 32, subFlag, 0, "*"))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "the topic[WriteOnly] pulling message is forbidden", resp.Remark)

	// Still usable after all the refusals.
	resp = c.Call(remotingtest.PullRequest("G", "TopicC", 0, 0, 32, subFlag, 0, "*"))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 1, 0, 1)
}

func TestPullUnknownGroupWithoutAutoCreate(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{mutate: func(c *Config) { c.AutoCreateSubscriptionGroup = false }})
	c := remotingtest.Dial(t, db.addr)
	sendOK(t, c, sendV1("TopicC", 0, []byte("x"), ""))
	resp := c.Call(remotingtest.PullRequest("NoGroup", "TopicC", 0, 0, 32, subFlag, 0, "*"))
	require.Equal(t, int32(codec.ResponseSubscriptionGroupNotExist), resp.Code)
	require.Equal(t, "subscription group [NoGroup] does not exist", resp.Remark)
}

// heartbeat registers a consumer group subscription the way a Go push consumer does.
func heartbeat(t testing.TB, c *remotingtest.Conn, group, topic, subString string, subVersion int64) {
	t.Helper()
	sd := codec.SubscriptionData{Topic: topic, SubString: subString, ExpressionType: codec.ExpressionTypeTag,
		SubVersion: subVersion, TagsSet: []string{}, CodeSet: codec.TagCodeSet{}}
	if subString != "*" {
		for _, tag := range strings.Split(subString, "||") {
			sd.TagsSet = append(sd.TagsSet, strings.TrimSpace(tag))
		}
	}
	sendHeartbeat(t, c, group, sd)
}

// sendHeartbeat registers one subscription of a clustering consumer group.
func sendHeartbeat(t testing.TB, c *remotingtest.Conn, group string, sd codec.SubscriptionData) {
	t.Helper()
	hb := codec.HeartbeatData{ClientID: "127.0.0.1@test", ConsumerDataSet: []codec.ConsumerData{{
		GroupName: group, ConsumeType: codec.ConsumePassively, MessageModel: codec.MessageModelClustering,
		ConsumeFromWhere: codec.ConsumeFromFirstOffset, SubscriptionDataSet: []codec.SubscriptionData{sd},
	}}}
	body, err := hb.Encode()
	require.NoError(t, err)
	resp := c.Call(codec.NewRequest(codec.RequestHeartBeat, nil, body))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
}

func TestPullUsesHeartbeatSubscription(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	for _, tag := range []string{"TagA", "TagB", "TagA", "Ünï"} {
		sendOK(t, c, sendV1("TopicH", 0, []byte(tag), props("TAGS", tag)))
	}
	heartbeat(t, c, "GH", "TopicH", "TagA || Ünï", 10)

	resp := c.Call(remotingtest.PullRequest("GH", "TopicH", 0, 0, 32, 0, 0, ""))
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 4, 0, 4)
	var bodies []string
	for _, r := range remotingtest.Records(t, resp.Body) {
		bodies = append(bodies, string(r.Body))
	}
	// The non-ASCII tag matches: codes are recomputed with Java's UTF-16 hash.
	require.Equal(t, []string{"TagA", "TagA", "Ünï"}, bodies)

	// A request with a newer subVersion than the heartbeat's is refused.
	cmd := remotingtest.PullRequest("GH", "TopicH", 0, 0, 32, 0, 0, "")
	cmd.ExtFields["subVersion"] = "11"
	resp = c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSubscriptionNotLatest), resp.Code)
	require.Equal(t, "the consumer's subscription not latest", resp.Remark)
}

func TestPullCommitOffsetFlag(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	sendOK(t, c, sendV1("TopicO", 0, []byte("x"), ""))
	cmd := remotingtest.PullRequest("GO", "TopicO", 0, 0, 32, subFlag|codec.PullSysFlagCommitOffset, 0, "*")
	cmd.ExtFields["commitOffset"] = "1"
	requirePull(t, c.Call(cmd), codec.ResponseSuccess, "FOUND", 1, 0, 1)
	require.Equal(t, int64(1), db.b.offsets.Query("GO", "TopicO", 0))

	// Without the flag nothing is stored.
	cmd = remotingtest.PullRequest("GO", "TopicO", 0, 0, 32, subFlag, 0, "*")
	cmd.ExtFields["commitOffset"] = "0"
	requirePull(t, c.Call(cmd), codec.ResponseSuccess, "FOUND", 1, 0, 1)
	require.Equal(t, int64(1), db.b.offsets.Query("GO", "TopicO", 0))
}

// The event loop / pull pool decision and the status mapping are tested in package readplane
// (pull_test.go there); the bound comes from here.
func TestHotPullThreshold(t *testing.T) {
	require.Equal(t, int64(40<<30/100*40), hotPullThreshold(40<<30, 40))
	require.Equal(t, int64(1<<30/100*40), hotPullThreshold(0, 40))
}

func TestLitePullMessage(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	sendOK(t, c, sendV1("TopicLite", 0, []byte("lite"), ""))
	cmd := remotingtest.PullRequest("GLite", "TopicLite", 0, 0, 32, subFlag|codec.PullSysFlagLitePull, 0, "*")
	cmd.Code = int32(codec.RequestLitePullMessage)
	resp := c.Call(cmd)
	requirePull(t, resp, codec.ResponseSuccess, "FOUND", 1, 0, 1)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "lite", string(recs[0].Body))
}
