package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/netio"
)

// fakeConsumer is a consumer client of the fixture broker that answers the requests the
// broker relays to it (GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY) with Java-shaped
// bodies, and records them.
type fakeConsumer struct {
	cl      *netio.Client
	answers map[int32]string // request code → SUCCESS body

	mu       sync.Mutex
	received []*codec.RemotingCommand
}

func (c *fakeConsumer) OnOpen(netio.Conn)         {}
func (c *fakeConsumer) OnClose(netio.Conn, error) {}
func (c *fakeConsumer) OnRequest(conn netio.Conn, cmd *codec.RemotingCommand) {
	owned := cmd.Clone()
	c.mu.Lock()
	c.received = append(c.received, owned)
	c.mu.Unlock()
	if body, ok := c.answers[cmd.Code]; ok {
		resp := codec.NewResponse(cmd, codec.ResponseSuccess, "")
		resp.Body = []byte(body)
		_ = conn.WriteCommand(resp)
	}
}

func (c *fakeConsumer) requests(code codec.RequestCode) []*codec.RemotingCommand {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*codec.RemotingCommand
	for _, cmd := range c.received {
		if cmd.Code == int32(code) {
			out = append(out, cmd)
		}
	}
	return out
}

// startFakeConsumer connects clientID as a push consumer of group subscribed to topic.
func startFakeConsumer(t *testing.T, clientID, group, topic string, answers map[int32]string) *fakeConsumer {
	t.Helper()
	c := &fakeConsumer{answers: answers}
	cfg := netio.DefaultClientConfig()
	cfg.Handler = c
	cl, err := netio.NewClient(cfg, logtest.Discard())
	require.NoError(t, err)
	c.cl = cl
	t.Cleanup(func() { _ = cl.Close() })
	sub := codec.SubscriptionData{Topic: topic, SubString: "*", ExpressionType: "TAG", SubVersion: 1}
	body, err := (&codec.HeartbeatData{ClientID: clientID, ConsumerDataSet: []codec.ConsumerData{{GroupName: group,
		ConsumeType: codec.ConsumePassively, MessageModel: codec.MessageModelClustering,
		ConsumeFromWhere: codec.ConsumeFromLastOffset, SubscriptionDataSet: []codec.SubscriptionData{sub}}}}).Encode()
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, fixture.broker, codec.NewRequest(codec.RequestHeartBeat, nil, body))
	require.NoError(t, err)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	return c
}

// runningInfoOf is a Java 4.9.8 push consumer's ConsumerRunningInfo (fastjson) holding queues
// 0 and 1 of topic; the times are fixed, far in the past.
func runningInfoOf(topic string) string {
	pq := func(commit, cached int) string {
		return fmt.Sprintf(`{"cachedMsgCount":%d,"cachedMsgMaxOffset":%d,"cachedMsgMinOffset":%d,"cachedMsgSizeInMiB":0,"commitOffset":%d,`+
			`"droped":false,"lastConsumeTimestamp":1700000000300,"lastLockTimestamp":0,"lastPullTimestamp":1700000000200,"locked":false,`+
			`"transactionMsgCount":0,"transactionMsgMaxOffset":0,"transactionMsgMinOffset":0,"tryUnlockTimes":0}`, cached, commit+cached, commit, commit)
	}
	mq := func(q int) string {
		return fmt.Sprintf(`{"brokerName":"broker-a","queueId":%d,"topic":"%s"}`, q, topic)
	}
	return `{"jstack":"","mqTable":{` + mq(0) + `:` + pq(2, 0) + `,` + mq(1) + `:` + pq(1, 3) + `},` +
		`"properties":{"PROP_CLIENT_VERSION":"V4_9_8","PROP_CONSUMEORDERLY":"false","PROP_CONSUME_TYPE":"CONSUME_PASSIVELY",` +
		`"PROP_CONSUMER_START_TIMESTAMP":"1700000000000","PROP_NAMESERVER_ADDR":"127.0.0.1:9876;","PROP_THREADPOOL_CORE_SIZE":"20"},` +
		`"statusTable":{"` + topic + `":{"consumeFailedMsgs":1,"consumeFailedTPS":0.0,"consumeOKTPS":2.5,"consumeRT":1.25,"pullRT":3.0,"pullTPS":4.0}},` +
		`"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1,"tagsSet":[],"topic":"` + topic + `"}]}`
}

var relayRuns atomic.Int32

// TestRelayCommands: consumerStatus, queryMsgById / queryMsgByUniqueKey -g -d and
// consumerProgress -s true reach a consumer through the broker's relay.
func TestRelayCommands(t *testing.T) {
	suffix := ""
	if n := relayRuns.Add(1); n > 1 {
		suffix = fmt.Sprintf("_r%d", n)
	}
	topic, group, clientID := "RelayTopic"+suffix, "RelayGroup"+suffix, "10.1.2.3@relay"+suffix
	ago := regexp.MustCompile(`, \d+ms\n`) // how long ago the fixed timestamps were
	golden := func(t *testing.T, name, out string) {
		t.Helper()
		golden(t, name, ago.ReplaceAllString(strings.ReplaceAll(out, suffix, ""), ", Nms\n"))
	}
	ok(t, "updateTopic", "-c", fixture.cluster, "-t", topic, "-r", "2", "-w", "2")
	s := send(t, topic, "0", "push me", "relayKey", "tagR")
	const direct = `{"autoCommit":true,"consumeResult":"CR_SUCCESS","order":false,"remark":"","spentTimeMills":3}`
	consumer := startFakeConsumer(t, clientID, group, topic, map[int32]string{
		int32(codec.RequestGetConsumerRunningInfo): runningInfoOf(topic),
		int32(codec.RequestConsumeMessageDirectly): direct,
	})

	t.Run("consumerStatus_client", func(t *testing.T) {
		out := ok(t, "consumerStatus", "-g", group, "-i", clientID)
		golden(t, "consumerStatus_client", out)
		asked := consumer.requests(codec.RequestGetConsumerRunningInfo)
		require.NotEmpty(t, asked)
		require.Equal(t, map[string]string{"consumerGroup": group, "clientId": clientID, "jstackEnable": "false"}, asked[len(asked)-1].ExtFields)

		var got struct {
			ClientID   string            `json:"clientId"`
			Properties map[string]string `json:"properties"`
			MQTable    []struct {
				Topic          string `json:"topic"`
				QueueID        int32  `json:"queueId"`
				CommitOffset   int64  `json:"commitOffset"`
				CachedMsgCount int32  `json:"cachedMsgCount"`
			} `json:"mqTable"`
			StatusTable map[string]codec.ConsumeStatus `json:"statusTable"`
		}
		out = ok(t, "consumerStatus", "-g", group, "-i", clientID, "-s", "--output", "json")
		require.NoError(t, json.Unmarshal([]byte(out), &got), out)
		require.Equal(t, clientID, got.ClientID)
		require.Equal(t, "CONSUME_PASSIVELY", got.Properties["PROP_CONSUME_TYPE"])
		require.Len(t, got.MQTable, 2)
		require.Equal(t, int64(1), got.MQTable[1].CommitOffset)
		require.Equal(t, int32(3), got.MQTable[1].CachedMsgCount)
		require.Equal(t, 2.5, got.StatusTable[topic].ConsumeOKTPS)
		asked = consumer.requests(codec.RequestGetConsumerRunningInfo)
		require.Equal(t, "true", asked[len(asked)-1].ExtFields["jstackEnable"], "-s asks for the stack dump")
	})

	t.Run("consumerStatus", func(t *testing.T) {
		var out string
		dir := t.TempDir()
		t.Run("in a scratch directory", func(t *testing.T) {
			t.Chdir(dir) // the running info files go to <now>/<clientId> in the working directory
			out = ok(t, "consumerStatus", "-g", group)
		})
		golden(t, "consumerStatus", out)
		// The file holds what -i prints.
		m := regexp.MustCompile(`(\d{13}/` + regexp.QuoteMeta(clientID) + `)\n`).FindStringSubmatch(out)
		require.NotNil(t, m, out)
		written, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(m[1])))
		require.NoError(t, err)
		require.Equal(t, ok(t, "consumerStatus", "-g", group, "-i", clientID), string(written))
	})

	t.Run("queryMsgById_push", func(t *testing.T) {
		golden(t, "queryMsgById_push", ok(t, "queryMsgById", "-t", topic, "-i", s.OffsetMsgID, "-g", group, "-d", clientID))
		pushed := consumer.requests(codec.RequestConsumeMessageDirectly)
		require.Len(t, pushed, 1)
		require.Equal(t, map[string]string{"consumerGroup": group, "clientId": clientID, "msgId": s.OffsetMsgID,
			"brokerName": fixture.brokerName}, pushed[0].ExtFields)
		r, err := codec.DecodeRecord(pushed[0].Body, true)
		require.NoError(t, err)
		require.Equal(t, "push me", string(r.Body))
		// By the producer's id, through the topic's index.
		golden(t, "queryMsgById_push", ok(t, "queryMsgByUniqueKey", "-t", topic, "-i", s.MsgID, "-g", group, "-d", clientID))
		require.Len(t, consumer.requests(codec.RequestConsumeMessageDirectly), 2)
	})

	t.Run("consumerProgress_clientIP", func(t *testing.T) {
		golden(t, "consumerProgress_clientIP", ok(t, "consumerProgress", "-g", group, "-t", topic, "-s", "true"))
	})

	t.Run("not_online", func(t *testing.T) {
		r := mqadmin(t, nil, "consumerStatus", "-g", group, "-i", "10.9.9.9@nobody")
		require.Equal(t, 1, r.code, r.stderr)
		golden(t, "error_consumerStatus_not_online", r.stderr)
	})
}
