package broker

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/acl"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/adminclient"
	"github.com/ringmq/ringmq/internal/fsutil"
	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

// ACL end to end with the pinned Go client: its primitive.Credentials sign every request
// (namesrv ones too); the broker verifies them and answers refusals NO_PERMISSION, which
// the client surfaces from SendSync as "CODE: 16, DESC: <remark>".

const (
	aclE2EKey     = "aclE2EProducer"
	aclE2ESecret  = "aclE2ESecret"
	aclE2EPartner = "aclE2EPartner" // white-listed by address: its secret is never checked
	aclE2ETopic   = "AclE2ETopic"
	aclE2EDenied  = "AclE2EDenied"
	aclE2EGroup   = "G-acl-e2e"
)

const aclE2EFileTemplate = `globalWhiteRemoteAddresses: []
accounts:
  - accessKey: %[1]s
    secretKey: %[2]s
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms: ["%[4]s=%[7]s", "%[5]s=DENY", "TBW102=PUB"]
    groupPerms: ["%[6]s=%[8]s"]
  - accessKey: %[3]s
    secretKey: partner-secret
    whiteRemoteAddress: 127.0.0.1
`

// aclE2EFileV1 lets the account publish to and consume from the topic.
var aclE2EFileV1 = fmt.Sprintf(aclE2EFileTemplate, aclE2EKey, aclE2ESecret, aclE2EPartner, aclE2ETopic,
	aclE2EDenied, aclE2EGroup, "PUB|SUB", "SUB")

// aclE2EFileV2 takes SUB on the topic away from the account, and denies its group.
var aclE2EFileV2 = fmt.Sprintf(aclE2EFileTemplate, aclE2EKey, aclE2ESecret, aclE2EPartner, aclE2ETopic,
	aclE2EDenied, aclE2EGroup, "PUB", "DENY")

// aclE2EFileV3 lets every loopback client in unsigned.
const aclE2EFileV3 = "globalWhiteRemoteAddresses: [\"127.0.0.*\"]\naccounts: []\n"

// aclRaw sends one request to addr over a fresh netio.Client, signed when accessKey is set.
func aclRaw(t *testing.T, addr string, code codec.RequestCode, ext map[string]string, accessKey, secretKey string) *codec.RemotingCommand {
	t.Helper()
	return aclRawBody(t, addr, code, ext, nil, accessKey, secretKey)
}

func aclRawBody(t *testing.T, addr string, code codec.RequestCode, ext map[string]string, body []byte, accessKey, secretKey string) *codec.RemotingCommand {
	t.Helper()
	cl, err := netio.NewClient(netio.DefaultClientConfig(), slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer cl.Close()
	cmd := codec.NewRequest(code, ext, body)
	if accessKey != "" {
		adminclient.Credentials{AccessKey: accessKey, SecretKey: secretKey}.Sign(cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, addr, cmd)
	require.NoError(t, err)
	return resp
}

// goroutineStacks returns every goroutine's stack in the Go-client driver, one block each.
func goroutineStacks(t *testing.T, d *goclienttest.Driver) []string {
	t.Helper()
	stacks, err := d.Stacks()
	require.NoError(t, err)
	return strings.Split(stacks, "\n\n")
}

// goroutinesIn reports whether a goroutine of the driver has fn in its stack.
func goroutinesIn(t *testing.T, d *goclienttest.Driver, fn string) bool {
	t.Helper()
	for _, g := range goroutineStacks(t, d) {
		if strings.Contains(g, fn) {
			return true
		}
	}
	return false
}

// goClientPullsInFlight counts the driver's push consumers' pull loops waiting for a response.
func goClientPullsInFlight(t *testing.T, d *goclienttest.Driver) int {
	t.Helper()
	n := 0
	for _, g := range goroutineStacks(t, d) {
		if strings.Contains(g, "consumer.(*pushConsumer).pullMessage") &&
			strings.Contains(g, "remote.(*ResponseFuture).waitResponse") {
			n++
		}
	}
	return n
}

// aclPullExt is a complete PULL_MESSAGE header that does not wait (no suspend flag).
func aclPullExt(topic, group string) map[string]string {
	return map[string]string{"consumerGroup": group, "topic": topic, "queueId": "0", "queueOffset": "0",
		"maxMsgNums": "1", "sysFlag": "0", "commitOffset": "0", "suspendTimeoutMillis": "0",
		"subscription": "*", "subVersion": "0"}
}

// aclDenied sums ringmq_broker_acl_denied_total for one request code.
func aclDenied(t *testing.T, b *Broker, code codec.RequestCode) float64 {
	t.Helper()
	families, err := b.Registry().Gather()
	require.NoError(t, err)
	var sum float64
	for _, f := range families {
		if f.GetName() != "ringmq_broker_acl_denied_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "code" && l.GetValue() == code.String() {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// readQueues is the number of readable queues the name server routes for topic.
func readQueues(t *testing.T, b *Broker, topic string) int {
	t.Helper()
	route, ok := embeddedNamesrv(b).TopicRoute(topic)
	require.True(t, ok, topic)
	n := 0
	for _, q := range route.QueueDatas {
		n += int(q.ReadQueueNums)
	}
	return n
}

// withProducerCredentials signs a producer's requests with c.
func withProducerCredentials(c primitive.Credentials) func(*goclient.ProducerOptions) {
	return func(o *goclient.ProducerOptions) { o.Credentials = c }
}

func sendErr(p interface {
	SendSync(context.Context, ...*primitive.Message) (*primitive.SendResult, error)
}, topic, body string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte(body)))
	return err
}

func TestACLGoClientEndToEnd(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("end-to-end with the Go client")
	}

	aclFile := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(aclFile, []byte(aclE2EFileV1), 0o644))
	tb := startTestBroker(t, func(c *Config) {
		c.AclEnable = true
		c.AclFile = aclFile
		// Short polling: a pull parked when the ACL changes comes back within 100 ms, so the
		// push consumer's next pull meets the new rules and nothing waits out a long poll.
		c.LongPollingEnable = false
		c.ShortPollingTimeMills = 100 * time.Millisecond
	})
	e := newE2EEnv(t, tb, "acl")
	creds := func(ak, sk string) primitive.Credentials { return primitive.Credentials{AccessKey: ak, SecretKey: sk} }

	// The right credentials: sends and a push consumer work.
	p := e.producer(t, "PG-acl", withProducerCredentials(creds(aclE2EKey, aclE2ESecret)))
	for i := range 4 {
		sendSync(t, p, primitive.NewMessage(aclE2ETopic, []byte(fmt.Sprintf("acl-%d", i))))
	}
	e.waitRoute(t, aclE2ETopic)
	// A heartbeat first creates the group's retry topic, so that the consumer's first
	// rebalance already pulls it: its pull loops are then known (see the reload below).
	hb := &codec.HeartbeatData{ClientID: "127.0.0.1@acl-warmup", ConsumerDataSet: []codec.ConsumerData{{
		GroupName: aclE2EGroup, ConsumeType: codec.ConsumePassively, MessageModel: codec.MessageModelClustering,
		ConsumeFromWhere:    codec.ConsumeFromFirstOffset,
		SubscriptionDataSet: []codec.SubscriptionData{{Topic: aclE2ETopic, SubString: "*", ExpressionType: codec.ExpressionTypeTag}},
	}}}
	hbBody, err := hb.Encode()
	require.NoError(t, err)
	resp := aclRawBody(t, tb.BrokerAddr, codec.RequestHeartBeat, nil, hbBody, aclE2EKey, aclE2ESecret)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	e.waitRoute(t, metadata.RetryTopic(aclE2EGroup))
	pullLoops := readQueues(t, tb.b, aclE2ETopic) + readQueues(t, tb.b, metadata.RetryTopic(aclE2EGroup))
	rec := newReceived()
	c := e.pushConsumer(t, aclE2EGroup, aclE2ETopic, "*", rec,
		func(o *goclient.ConsumerOptions) { o.Credentials = creds(aclE2EKey, aclE2ESecret) })
	testutil.Eventually(t, "consumed with credentials", func() bool { return rec.distinct() == 4 })
	counts, _, _ := rec.snapshot()
	require.Equal(t, map[string]int{"acl-0": 1, "acl-1": 1, "acl-2": 1, "acl-3": 1}, counts)
	// With a SecurityToken, which the Go client sends but does not sign.
	tokened := e.producer(t, "PG-acl-token", withProducerCredentials(primitive.Credentials{
		AccessKey: aclE2EKey, SecretKey: aclE2ESecret, SecurityToken: "sts-token"}))
	sendSync(t, tokened, primitive.NewMessage(aclE2ETopic, []byte("with-token")))

	// A wrong secret, no credentials, a DENY topic and a topic left to the DENY default.
	bad := e.producer(t, "PG-acl-bad", withProducerCredentials(creds(aclE2EKey, "not-the-secret")))
	err = sendErr(bad, aclE2ETopic, "x")
	require.ErrorContains(t, err, "CODE: 16")
	require.ErrorContains(t, err, "Check signature failed for accessKey="+aclE2EKey)
	anon := e.producer(t, "PG-acl-anon")
	err = sendErr(anon, aclE2ETopic, "x")
	require.ErrorContains(t, err, "CODE: 16")
	require.ErrorContains(t, err, "No accessKey is configured")
	err = sendErr(p, aclE2EDenied, "x")
	require.ErrorContains(t, err, "CODE: 16")
	require.ErrorContains(t, err, "No permission for topic:"+aclE2EDenied+": needs PUB, accessKey="+aclE2EKey+" has DENY")
	err = sendErr(p, "AclE2EUnlisted", "x")
	require.ErrorContains(t, err, "No permission for topic:AclE2EUnlisted")
	require.Zero(t, queueTotal(tb.b, aclE2EDenied, 8), "nothing stored for refused sends")

	// An account white-listed by address is let in without its secret (4.x semantics).
	partner := e.producer(t, "PG-acl-partner", withProducerCredentials(creds(aclE2EPartner, "wrong-but-white-listed")))
	sendSync(t, partner, primitive.NewMessage(aclE2EDenied, []byte("white-listed")))
	testutil.Eventually(t, "the denied topic's one message",
		func() bool { return queueTotal(tb.b, aclE2EDenied, 8) == 1 })

	// Admin-only codes need admin; the name server ignores the signature fields (the Go
	// client signs its route requests too, and route lookups worked above).
	resp = aclRaw(t, tb.BrokerAddr, codec.RequestUpdateAndCreateTopic, map[string]string{"topic": "AclNew"}, aclE2EKey, aclE2ESecret)
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Contains(t, resp.Remark, "Need admin permission for request code=17")
	resp = aclRaw(t, tb.NamesrvAddr, codec.RequestGetRouteInfoByTopic, map[string]string{"topic": aclE2ETopic}, aclE2EKey, "any-secret")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	route, err := codec.DecodeTopicRouteData(resp.Body)
	require.NoError(t, err)
	require.NotEmpty(t, route.QueueDatas)

	// Hot reload: SUB on the topic is taken away and the group denied; pulls are refused
	// from the next one on. (The test's own pulls use LITE_PULL_MESSAGE, checked the same
	// way, so that the PULL_MESSAGE refusals counted below are the consumer's.)
	pull := aclPullExt(aclE2ETopic, aclE2EGroup)
	resp = aclRaw(t, tb.BrokerAddr, codec.RequestLitePullMessage, pull, aclE2EKey, aclE2ESecret)
	require.NotEqual(t, int32(codec.ResponseNoPermission), resp.Code, resp.Remark)
	require.NoError(t, fsutil.WriteFileAtomic(aclFile, []byte(aclE2EFileV2), nil))
	testutil.Eventually(t, "the reloaded file refuses pulls", func() bool {
		return aclRaw(t, tb.BrokerAddr, codec.RequestLitePullMessage, pull, aclE2EKey, aclE2ESecret).Code == int32(codec.ResponseNoPermission)
	})
	resp = aclRaw(t, tb.BrokerAddr, codec.RequestLitePullMessage, pull, aclE2EKey, aclE2ESecret)
	require.Contains(t, resp.Remark, "No permission for topic:"+aclE2ETopic+": needs SUB, accessKey="+aclE2EKey+" has PUB")
	resp = aclRaw(t, tb.BrokerAddr, codec.RequestLitePullMessage, aclPullExt(metadata.RetryTopic(aclE2EGroup), aclE2EGroup), aclE2EKey, aclE2ESecret)
	require.Contains(t, resp.Remark, "No permission for group:"+aclE2EGroup+": needs SUB, accessKey="+aclE2EKey+" has DENY")
	sendSync(t, p, primitive.NewMessage(aclE2ETopic, []byte("still PUB"))) // PUB kept
	// Each of the consumer's pull loops is refused once, then sleeps 3 s before it looks at
	// its state again. Shut it down inside that sleep: the Go client drops the responses it
	// awaits when it shuts down, so a pull in flight would wait out its 30 s timeout. The
	// broker's count says every loop was refused; the driver's stacks say the client has taken
	// every refusal in (no pull loop waits for a response), and then that its loops end.
	testutil.Eventually(t, fmt.Sprintf("every pull loop of the consumer refused (%d loops)", pullLoops), func() bool {
		return aclDenied(t, tb.b, codec.RequestPullMessage) >= float64(pullLoops) &&
			goClientPullsInFlight(t, e.client) == 0
	})
	require.NoError(t, c.Shutdown())
	testutil.Eventually(t, "the consumer's pull loops end",
		func() bool { return !goroutinesIn(t, e.client, "consumer.(*pushConsumer).pullMessage") })

	// Hot reload: the loopback range is white-listed globally; unsigned clients get in.
	require.NoError(t, fsutil.WriteFileAtomic(aclFile, []byte(aclE2EFileV3), nil))
	testutil.Eventually(t, "the reloaded white list lets unsigned pulls in", func() bool {
		return aclRaw(t, tb.BrokerAddr, codec.RequestLitePullMessage, pull, "", "").Code != int32(codec.ResponseNoPermission)
	})
	sendSync(t, anon, primitive.NewMessage(aclE2ETopic, []byte("anonymous")))
}

// TestBrokerWithACLNeedsTheFile: aclEnable=true without a readable, valid aclFile does not
// start (the default path is conf/plain_acl.yml when aclFile is empty).
func TestBrokerWithACLNeedsTheFile(t *testing.T) {
	cfg := testBrokerConfig(t)
	cfg.AclEnable = true
	cfg.AclFile = filepath.Join(t.TempDir(), "absent.yml")
	_, err := New(cfg, Deps{Logger: testLogger(t), Namesrv: testNamesrv})
	require.ErrorIs(t, err, acl.ErrFile)
	require.ErrorContains(t, err, "absent.yml")

	cfg.StorePathRootDir = t.TempDir()
	cfg.AclFile = ""
	_, err = New(cfg, Deps{Logger: testLogger(t), Namesrv: testNamesrv})
	require.ErrorIs(t, err, acl.ErrFile)
	require.ErrorContains(t, err, DefaultAclFile)
}
