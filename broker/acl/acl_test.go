package acl

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// aclSampleYAML is PROTOCOL.md §12's sample, as RocketMQ 4.x ships it.
const aclSampleYAML = `globalWhiteRemoteAddresses: ["10.10.103.*", "192.168.0.*"]
accounts:
  - accessKey: RocketMQ          # ≥ 6 chars
    secretKey: 12345678          # ≥ 6 chars
    whiteRemoteAddress:          # optional IP pattern (*, ranges a-b, IPv6)
    admin: false
    defaultTopicPerm: DENY       # DENY | PUB | SUB | PUB|SUB
    defaultGroupPerm: SUB
    topicPerms: ["topicA=DENY", "topicB=PUB|SUB", "topicC=SUB"]
    groupPerms: ["groupA=DENY", "groupB=PUB|SUB", "groupC=SUB"]
  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
`

// aclSign signs a request the way the pinned Go client does (internal/remote/interceptor.go):
// AccessKey plus every extField, sorted by key, values concatenated, then the body;
// SecurityToken is sent but not signed.
func aclSign(cmd *codec.RemotingCommand, accessKey, secretKey, securityToken string) {
	if cmd.ExtFields == nil {
		cmd.ExtFields = map[string]string{}
	}
	delete(cmd.ExtFields, aclSignatureField)
	cmd.ExtFields[aclAccessKeyField] = accessKey
	keys := make([]string, 0, len(cmd.ExtFields))
	for k := range cmd.ExtFields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var content []byte
	for _, k := range keys {
		content = append(content, cmd.ExtFields[k]...)
	}
	content = append(content, cmd.Body...)
	mac := hmac.New(sha1.New, []byte(secretKey))
	mac.Write(content)
	cmd.ExtFields[aclSignatureField] = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if securityToken != "" {
		cmd.ExtFields[aclSecurityTokenField] = securityToken
	}
	cmd.Language = codec.LanguageGo
}

func aclRequest(code codec.RequestCode, ext map[string]string, body []byte) *codec.RemotingCommand {
	return codec.NewRequest(code, ext, body)
}

// testRules are the rules the broker's route table gives these codes (broker/routes.go,
// pinned there by TestRouteTable).
var testRules = map[codec.RequestCode]Rule{
	codec.RequestSendMessage:            SendTo("topic"),
	codec.RequestSendMessageV2:          SendTo("b"),
	codec.RequestSendBatchMessage:       SendTo("b"),
	codec.RequestSendReplyMessage:       SendTo("topic"),
	codec.RequestSendReplyMessageV2:     SendTo("b"),
	codec.RequestConsumerSendMsgBack:    GroupOnly("group"),
	codec.RequestPullMessage:            TopicThenGroup,
	codec.RequestLitePullMessage:        TopicThenGroup,
	codec.RequestQueryMessage:           TopicOnly("topic"),
	codec.RequestHeartBeat:              Heartbeat,
	codec.RequestUnregisterClient:       GroupOnly("consumerGroup"),
	codec.RequestGetConsumerListByGroup: GroupOnly("consumerGroup"),
	codec.RequestUpdateConsumerOffset:   GroupThenTopic,
	codec.RequestUpdateAndCreateTopic:   Admin,
	codec.RequestDeleteTopicInBroker:    Admin,
	513:                                 Admin, // RocketMQ 5.x's UPDATE_AND_CREATE_STATIC_TOPIC
}

func testRuleOf(code int32) Rule { return testRules[codec.RequestCode(code)] }

func testACLValidator(t testing.TB, yaml string) (*Validator, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	v, err := New(Deps{File: path, WatchInterval: time.Hour, RuleOf: testRuleOf, Registerer: prometheus.NewRegistry()})
	require.NoError(t, err)
	return v, path
}

var (
	aclOutside = netip.MustParseAddr("172.16.0.9") // on no white list
	aclPartner = netip.MustParseAddr("192.168.1.77")
)

// TestACLSignatureVector checks the content rule against an HMAC computed outside Go:
//
//	printf 'RocketMQPG3TopicAhello' | openssl dgst -sha1 -hmac 12345678 -binary | base64
//
// (keys sorted: AccessKey, producerGroup, queueId, topic; then the body "hello").
func TestACLSignatureVector(t *testing.T) {
	const vector = "wIdXhQtJf0FbgoRnhafjV0m1ERI="
	v, _ := testACLValidator(t, aclSampleYAML)
	acct := v.current.Load().accounts["RocketMQ"]
	s := &aclScratch{}
	base := func() *codec.RemotingCommand {
		return aclRequest(codec.RequestGetMaxOffset, map[string]string{
			"AccessKey": "RocketMQ", "topic": "TopicA", "producerGroup": "PG", "queueId": "3",
			"Signature": vector,
		}, []byte("hello"))
	}
	require.True(t, acct.verifySignature(base(), s))

	// Our Go-client signer produces the same vector.
	signed := base()
	aclSign(signed, "RocketMQ", "12345678", "")
	require.Equal(t, vector, signed.ExtFields[aclSignatureField])

	// Any change to a header value, the body, the secret or the signature fails.
	for name, mutate := range map[string]func(c *codec.RemotingCommand){
		"header":    func(c *codec.RemotingCommand) { c.ExtFields["queueId"] = "4" },
		"new field": func(c *codec.RemotingCommand) { c.ExtFields["extra"] = "x" },
		"body":      func(c *codec.RemotingCommand) { c.Body = []byte("hellO") },
		"no body":   func(c *codec.RemotingCommand) { c.Body = nil },
		"signature": func(c *codec.RemotingCommand) { c.ExtFields["Signature"] = "wIdXhQtJf0FbgoRnhafjV0m2ERI=" },
		"pad bits":  func(c *codec.RemotingCommand) { c.ExtFields["Signature"] = "wIdXhQtJf0FbgoRnhafjV0m1ERJ=" },
		"truncated": func(c *codec.RemotingCommand) { c.ExtFields["Signature"] = vector[:20] },
		"too long":  func(c *codec.RemotingCommand) { c.ExtFields["Signature"] = vector + vector },
		"not b64":   func(c *codec.RemotingCommand) { c.ExtFields["Signature"] = "!!!!!!!!!!!!!!!!!!!!!!!!!!!=" },
		"missing":   func(c *codec.RemotingCommand) { delete(c.ExtFields, "Signature") },
	} {
		c := base()
		mutate(c)
		require.False(t, acct.verifySignature(c, s), name)
	}
	other := v.current.Load().accounts["rocketmq2"] // same secret, but a different AccessKey value would be signed
	c := base()
	require.True(t, other.verifySignature(c, s), "the secret signs; the account only picks it")
}

// TestACLSignatureVariants: SecurityToken signed (Java) or not (Go client), and
// _UNIQUE_KEY_QUERY left out (Java brokers ≤ 4.9.3 for old clients) are all accepted.
func TestACLSignatureVariants(t *testing.T) {
	v, _ := testACLValidator(t, aclSampleYAML)
	acct := v.current.Load().accounts["RocketMQ"]
	s := &aclScratch{}
	ext := func() map[string]string { return map[string]string{"topic": "topicB", "queueId": "1"} }

	goForm := aclRequest(codec.RequestQueryMessage, ext(), []byte("b"))
	aclSign(goForm, "RocketMQ", "12345678", "sts-token")
	require.Equal(t, "sts-token", goForm.ExtFields[aclSecurityTokenField])
	require.True(t, acct.verifySignature(goForm, s), "Go client: token sent, not signed")
	goForm.Language = codec.LanguageJava
	require.True(t, acct.verifySignature(goForm, s), "whatever the language says")

	javaForm := aclRequest(codec.RequestQueryMessage, ext(), []byte("b"))
	javaForm.ExtFields[aclSecurityTokenField] = "sts-token"
	aclSign(javaForm, "RocketMQ", "12345678", "") // signs the token with everything else
	require.True(t, acct.verifySignature(javaForm, s), "Java client: token signed")
	javaForm.ExtFields[aclSecurityTokenField] = "forged"
	require.False(t, acct.verifySignature(javaForm, s), "a signed token cannot change")

	uniq := aclRequest(codec.RequestQueryMessage, ext(), nil)
	aclSign(uniq, "RocketMQ", "12345678", "")
	uniq.ExtFields[aclUniqueKeyQuery] = "true" // added after signing
	require.True(t, acct.verifySignature(uniq, s))
	uniq.ExtFields[aclSecurityTokenField] = "t" // both left out
	require.True(t, acct.verifySignature(uniq, s))
}

func TestParseACLSample(t *testing.T) {
	cfg, err := parseACL([]byte(aclSampleYAML))
	require.NoError(t, err)
	require.Len(t, cfg.globalWhite, 2)
	require.True(t, cfg.globalWhite[0].match(netip.MustParseAddr("10.10.103.250")))
	require.False(t, cfg.globalWhite[0].match(netip.MustParseAddr("10.10.104.1")))
	require.True(t, cfg.globalWhite[1].match(netip.MustParseAddr("192.168.0.1")))
	require.Len(t, cfg.accounts, 2)

	a := cfg.accounts["RocketMQ"]
	require.NotNil(t, a)
	require.Nil(t, a.white, "empty whiteRemoteAddress: none")
	require.False(t, a.admin)
	require.Equal(t, aclDeny, a.defaultTopic)
	require.Equal(t, aclSub, a.defaultGroup)
	require.Equal(t, map[string]aclPerm{"topicA": aclDeny, "topicB": aclPub | aclSub, "topicC": aclSub}, a.topics)
	require.Equal(t, map[string]aclPerm{"groupA": aclDeny, "groupB": aclPub | aclSub, "groupC": aclSub}, a.groups)
	require.False(t, a.unrestricted)
	// secretKey: 12345678 is a YAML integer; it is still the secret "12345678".
	signed := aclRequest(codec.RequestGetMaxOffset, map[string]string{"topic": "x"}, nil)
	aclSign(signed, "RocketMQ", "12345678", "")
	require.True(t, a.verifySignature(signed, &aclScratch{}))

	b := cfg.accounts["rocketmq2"]
	require.True(t, b.admin)
	require.True(t, b.unrestricted, "admin without topicPerms/groupPerms")
	require.NotNil(t, b.white)
	require.True(t, b.white.match(aclPartner))
	require.Equal(t, aclDeny, b.defaultTopic, "missing defaults are DENY")
	require.Equal(t, aclDeny, b.defaultGroup)

	empty, err := parseACL(nil)
	require.NoError(t, err)
	require.Empty(t, empty.accounts)
	require.Empty(t, empty.globalWhite)
}

func TestParseACLErrorsNameTheField(t *testing.T) {
	account := func(extra string) string {
		return "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n" + extra
	}
	for _, tc := range []struct{ yaml, want string }{
		{"accounts: [", "yaml"},
		{"accounts:\n  - accessKey: abcdef\n    secretKey: 12345678\n", "accessKey must be longer than 6"},
		{"accounts:\n  - accessKey: abcdefg\n    secretKey: 123456\n", "secretKey must be longer than 6"},
		{account("    defaultTopicPerm: PUB | SUB\n"), "defaultTopicPerm"},
		{account("    defaultGroupPerm: ALL\n"), "defaultGroupPerm"},
		{account("    topicPerms: [\"a=PUB\", \"b\"]\n"), "topicPerms[1]"},
		{account("    topicPerms: [\"a=PUB=SUB\"]\n"), "topicPerms[0]"},
		{account("    groupPerms: [\"=SUB\"]\n"), "groupPerms[0]"},
		{account("    groupPerms: [\"g=READ\"]\n"), "groupPerms[0]"},
		{account("    whiteRemoteAddress: 300.1.1.1\n"), "whiteRemoteAddress"},
		{account("  - accessKey: RocketMQ\n    secretKey: 87654321\n"), "configured twice"},
		{"globalWhiteRemoteAddresses: [\"10.1.*\"]\n", "globalWhiteRemoteAddresses[0]"},
	} {
		_, err := parseACL([]byte(tc.yaml))
		require.ErrorIs(t, err, ErrFile, tc.yaml)
		require.ErrorContains(t, err, tc.want, tc.yaml)
	}
	// Seven characters is enough (Java: longer than 6).
	_, err := parseACL([]byte("accounts:\n  - accessKey: abcdefg\n    secretKey: 1234567\n"))
	require.NoError(t, err)
}

func TestACLAddressPatterns(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		match   []string
		miss    []string
	}{
		{"*", []string{"1.2.3.4", "::1"}, nil},
		{"*.*.*.*", []string{"1.2.3.4"}, nil},
		{"*:*:*:*:*:*:*:*", []string{"fe80::1"}, nil},
		{"192.168.0.1", []string{"192.168.0.1"}, []string{"192.168.0.2", "::ffff:192.168.0.2"}},
		{"192.168.1.*", []string{"192.168.1.0", "192.168.1.255"}, []string{"192.168.2.1", "::1"}},
		{"192.168.*.*", []string{"192.168.7.8"}, []string{"192.169.0.0"}},
		{"192.168.1.1-100", []string{"192.168.1.1", "192.168.1.100"}, []string{"192.168.1.0", "192.168.1.101"}},
		{"10.1-2.*.*", []string{"10.1.0.0", "10.2.255.255"}, []string{"10.3.0.0"}},
		{"192.168.1.{1,2,3}", []string{"192.168.1.2"}, []string{"192.168.1.4"}},
		{"10.0.0.1,10.0.0.2", []string{"10.0.0.2"}, []string{"10.0.0.3"}},
		{"::1", []string{"::1", "0:0:0:0:0:0:0:1"}, []string{"::2", "127.0.0.1"}},
		{"1050:0000:0000:0000:0005:0600:300c:326b", []string{"1050::5:600:300c:326b"}, []string{"1050::5:600:300c:326c"}},
		{"1050:0:0:0:5:600:300c:*", []string{"1050::5:600:300c:1", "1050::5:600:300c:ffff"}, []string{"1050::5:600:300d:1", "10.0.0.1"}},
		{"1050::5:600:300c:1-ff", []string{"1050::5:600:300c:ff"}, []string{"1050::5:600:300c:100"}},
		{"fe80::{1,a}", []string{"fe80::a"}, []string{"fe80::b"}},
	} {
		p, err := parseAddrPattern(tc.pattern)
		require.NoError(t, err, tc.pattern)
		for _, a := range tc.match {
			require.True(t, p.match(netip.MustParseAddr(a).Unmap()), "%s should match %s", tc.pattern, a)
		}
		for _, a := range tc.miss {
			require.False(t, p.match(netip.MustParseAddr(a).Unmap()), "%s should not match %s", tc.pattern, a)
		}
	}
	for _, bad := range []string{"192.168.1", "192.168.1.300", "192.168.1.9-2", "192.168.1.-5", "1.2.3.4.5",
		"1::2::3", "1:2:3:4:5:6:7:8:9", "{1,2}", "1.2.3.{4,x}", "10.0.0.1,nope", "host.example", "1:2:3:4:5:6:7:*:*"} {
		_, err := parseAddrPattern(bad)
		require.Error(t, err, bad)
	}
}

func TestACLPermissionTable(t *testing.T) {
	for _, tc := range []struct {
		owned, needed aclPerm
		want          bool
	}{
		{aclPub, aclPub, true}, {aclPub, aclSub, false}, {aclSub, aclSub, true}, {aclSub, aclPub, false},
		{aclPub | aclSub, aclPub, true}, {aclPub | aclSub, aclSub, true},
		{aclDeny, aclPub, false}, {aclDeny, aclSub, false}, {aclDeny | aclPub, aclPub, false},
		{aclPub, aclAny, true}, {aclSub, aclAny, true}, {aclDeny, aclAny, false},
	} {
		require.Equal(t, tc.want, tc.owned.allows(tc.needed), "%s allows %s", tc.owned, tc.needed)
	}
	for _, s := range []string{"PUB|SUB", "SUB|PUB", " PUB|SUB "} {
		p, err := parseACLPerm(s)
		require.NoError(t, err)
		require.Equal(t, aclPub|aclSub, p)
	}
}

// aclCase is one request through check.
type aclCase struct {
	name   string
	remote netip.Addr
	cmd    *codec.RemotingCommand
	want   string // "" allowed, else a fragment of the remark
}

func signedAs(ak, sk string, code codec.RequestCode, ext map[string]string, body []byte) *codec.RemotingCommand {
	c := aclRequest(code, ext, body)
	aclSign(c, ak, sk, "")
	return c
}

func TestACLCheck(t *testing.T) {
	v, _ := testACLValidator(t, aclSampleYAML+`  - accessKey: adminWithPerms
    secretKey: adminsecret
    admin: true
    defaultTopicPerm: SUB
    topicPerms: ["locked=DENY"]
`)
	rmq := func(code codec.RequestCode, ext map[string]string, body []byte) *codec.RemotingCommand {
		return signedAs("RocketMQ", "12345678", code, ext, body)
	}
	send := func(topic string) map[string]string {
		return map[string]string{"a": "PG", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1", "h": "0"}
	}
	cases := []aclCase{
		{"global white list, unsigned", netip.MustParseAddr("10.10.103.5"), aclRequest(codec.RequestSendMessageV2, send("topicA"), []byte("x")), ""},
		{"global white list, IPv4-mapped", netip.MustParseAddr("::ffff:192.168.0.3"), aclRequest(codec.RequestUpdateAndCreateTopic, nil, nil), ""},
		{"unsigned", aclOutside, aclRequest(codec.RequestSendMessageV2, send("topicB"), nil), "No accessKey is configured"},
		{"no ext at all", aclOutside, &codec.RemotingCommand{Code: int32(codec.RequestHeartBeat)}, "No accessKey is configured"},
		{"unknown access key", aclOutside, signedAs("Stranger", "12345678", codec.RequestSendMessageV2, send("topicB"), nil), "No acl config for Stranger"},
		{"wrong secret", aclOutside, signedAs("RocketMQ", "87654321", codec.RequestSendMessageV2, send("topicB"), nil), "Check signature failed for accessKey=RocketMQ"},
		{"no signature", aclOutside, aclRequest(codec.RequestSendMessageV2, map[string]string{"AccessKey": "RocketMQ", "b": "topicB"}, nil), "carries no Signature"},
		{"account white list skips the signature", aclPartner, signedAs("rocketmq2", "wrong-secret", codec.RequestUpdateAndCreateTopic, nil, nil), ""},
		{"account white list needs the key", aclPartner, aclRequest(codec.RequestUpdateAndCreateTopic, nil, nil), "No accessKey"},

		{"send V2 PUB|SUB topic", aclOutside, rmq(codec.RequestSendMessageV2, send("topicB"), []byte("body")), ""},
		{"batch DENY topic", aclOutside, rmq(codec.RequestSendBatchMessage, send("topicA"), nil), "No permission for topic:topicA: needs PUB, accessKey=RocketMQ has DENY"},
		{"send SUB-only topic", aclOutside, rmq(codec.RequestSendMessage, map[string]string{"topic": "topicC", "producerGroup": "PG"}, nil), "topic:topicC: needs PUB"},
		{"send default DENY", aclOutside, rmq(codec.RequestSendMessage, map[string]string{"topic": "other"}, nil), "topic:other: needs PUB, accessKey=RocketMQ has DENY"},
		{"reply V2 topic", aclOutside, rmq(codec.RequestSendReplyMessageV2, send("topicB"), nil), ""},
		{"send to a retry topic needs SUB on the group", aclOutside, rmq(codec.RequestSendMessageV2, send("%RETRY%groupC"), nil), ""},
		{"send to a denied group's retry topic", aclOutside, rmq(codec.RequestSendMessageV2, send("%RETRY%groupA"), nil), "group:groupA: needs SUB"},

		{"pull", aclOutside, rmq(codec.RequestPullMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupB"}, nil), ""},
		{"pull default group SUB", aclOutside, rmq(codec.RequestPullMessage, map[string]string{"topic": "topicC", "consumerGroup": "anyGroup"}, nil), ""},
		{"pull denied topic", aclOutside, rmq(codec.RequestPullMessage, map[string]string{"topic": "topicA", "consumerGroup": "groupB"}, nil), "topic:topicA: needs SUB"},
		{"pull denied group", aclOutside, rmq(codec.RequestPullMessage, map[string]string{"topic": "topicC", "consumerGroup": "groupA"}, nil), "group:groupA: needs SUB"},
		{"lite pull", aclOutside, rmq(codec.RequestLitePullMessage, map[string]string{"topic": "topicA", "consumerGroup": "groupB"}, nil), "topic:topicA"},
		{"pull the retry topic", aclOutside, rmq(codec.RequestPullMessage, map[string]string{"topic": "%RETRY%groupB", "consumerGroup": "groupB"}, nil), ""},
		{"query message", aclOutside, rmq(codec.RequestQueryMessage, map[string]string{"topic": "topicA"}, nil), "topic:topicA: needs SUB"},
		{"send back", aclOutside, rmq(codec.RequestConsumerSendMsgBack, map[string]string{"group": "groupA", "originTopic": "topicB"}, nil), "group:groupA"},
		{"unregister", aclOutside, rmq(codec.RequestUnregisterClient, map[string]string{"clientID": "c", "consumerGroup": "groupC"}, nil), ""},
		{"consumer list", aclOutside, rmq(codec.RequestGetConsumerListByGroup, map[string]string{"consumerGroup": "groupA"}, nil), "group:groupA"},
		{"update offset", aclOutside, rmq(codec.RequestUpdateConsumerOffset, map[string]string{"consumerGroup": "groupC", "topic": "topicA"}, nil), "topic:topicA"},
		{"query offset: signature only", aclOutside, rmq(codec.RequestQueryConsumerOffset, map[string]string{"consumerGroup": "groupA", "topic": "topicA"}, nil), ""},
		{"heartbeat", aclOutside, rmq(codec.RequestHeartBeat, nil, remotingtest.HeartbeatBody(t, map[string][]string{"groupB": {"topicB", "%RETRY%groupB"}})), ""},
		{"heartbeat denied topic", aclOutside, rmq(codec.RequestHeartBeat, nil, remotingtest.HeartbeatBody(t, map[string][]string{"groupB": {"topicA"}})), "topic:topicA: needs SUB"},
		{"heartbeat denied group", aclOutside, rmq(codec.RequestHeartBeat, nil, remotingtest.HeartbeatBody(t, map[string][]string{"groupA": nil})), "group:groupA"},
		{"heartbeat bad body", aclOutside, rmq(codec.RequestHeartBeat, nil, []byte("{")), "HEART_BEAT: body"},
		{"producer heartbeat", aclOutside, rmq(codec.RequestHeartBeat, nil, []byte(`{"clientID":"c","producerDataSet":[{"groupName":"PG"}]}`)), ""},

		{"admin code needs admin", aclOutside, rmq(codec.RequestUpdateAndCreateTopic, map[string]string{"topic": "x"}, nil), "Need admin permission for request code=17, but accessKey=RocketMQ is not"},
		{"admin code 513", aclOutside, rmq(513, nil, nil), "code=513"},
		{"admin without perms may do everything", aclOutside, signedAs("rocketmq2", "12345678", codec.RequestDeleteTopicInBroker, map[string]string{"topic": "topicA"}, nil), ""},
		{"admin without perms sends anywhere", aclOutside, signedAs("rocketmq2", "12345678", codec.RequestSendMessageV2, send("x"), nil), ""},
		{"admin with perms is checked", aclOutside, signedAs("adminWithPerms", "adminsecret", codec.RequestPullMessage, map[string]string{"topic": "locked", "consumerGroup": "g"}, nil), "topic:locked"},
		{"admin with perms, default SUB", aclOutside, signedAs("adminWithPerms", "adminsecret", codec.RequestSendMessageV2, send("t"), nil), "topic:t: needs PUB, accessKey=adminWithPerms has SUB"},
		{"missing topic is the processor's business", aclOutside, rmq(codec.RequestSendMessageV2, map[string]string{"a": "PG"}, nil), ""},
	}
	for _, tc := range cases {
		got := v.Check(tc.remote, tc.cmd)
		if tc.want == "" {
			require.Empty(t, got, tc.name)
		} else {
			require.Contains(t, got, tc.want, tc.name)
		}
	}
	require.Equal(t, 1.0, deniedCount(t, v, aclDeniedUnknownAccessKey))
	require.Equal(t, 2.0, deniedCount(t, v, aclDeniedSignature))
	require.Equal(t, 3.0, deniedCount(t, v, aclDeniedNoAccessKey))
	require.Equal(t, 2.0, deniedCount(t, v, aclDeniedAdmin))
	require.Equal(t, 1.0, deniedCount(t, v, aclDeniedBadRequest))
}

// deniedCount sums ringmq_broker_acl_denied_total over the codes for one reason.
func deniedCount(t *testing.T, v *Validator, reason string) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	v.denied.Collect(ch)
	close(ch)
	var sum float64
	for metric := range ch {
		var m dto.Metric
		require.NoError(t, metric.Write(&m))
		for _, l := range m.GetLabel() {
			if l.GetName() == "reason" && l.GetValue() == reason {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// aclLogBuffer collects log output for assertions.
type aclLogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *aclLogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *aclLogBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// writeACLFile replaces the file the way editors and config tools do: a new file renamed
// over the old one.
func writeACLFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o644))
	require.NoError(t, os.Rename(tmp, path))
}

const aclReloadV1 = `accounts:
  - accessKey: reloader
    secretKey: reloader-secret
    defaultTopicPerm: PUB
`

func TestACLReload(t *testing.T) {
	var logs aclLogBuffer
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(aclReloadV1), 0o644))
	v, err := New(Deps{File: path, WatchInterval: time.Hour, RuleOf: testRuleOf, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	sendTo := func(topic string) string {
		return v.Check(aclOutside, signedAs("reloader", "reloader-secret", codec.RequestSendMessageV2,
			map[string]string{"b": topic}, nil))
	}
	require.Empty(t, sendTo("T"))

	// A changed file is swapped in.
	writeACLFile(t, path, strings.Replace(aclReloadV1, "defaultTopicPerm: PUB", "defaultTopicPerm: SUB", 1))
	v.reloadIfChanged()
	require.Contains(t, sendTo("T"), "needs PUB, accessKey=reloader has SUB")
	require.Equal(t, 1, logs.count("acl: reloaded"))

	// A broken file keeps the configuration in use and is reported once.
	writeACLFile(t, path, "accounts:\n  - accessKey: reloader\n    secretKey: short\n")
	for range 3 {
		v.reloadIfChanged()
	}
	require.Contains(t, sendTo("T"), "has SUB", "the previous configuration stays")
	require.Equal(t, 1, logs.count("keeping the configuration in use"))
	require.Equal(t, 1, logs.count("secretKey must be longer than 6"))

	// So is a missing file.
	require.NoError(t, os.Remove(path))
	for range 3 {
		v.reloadIfChanged()
	}
	require.Equal(t, 2, logs.count("keeping the configuration in use"))
	require.Contains(t, sendTo("T"), "has SUB")

	// A good file again takes effect.
	writeACLFile(t, path, aclReloadV1)
	v.reloadIfChanged()
	require.Empty(t, sendTo("T"))
	require.Equal(t, 2, logs.count("acl: reloaded"))

	// Rewritten in place with the same size within the file system's timestamp granularity:
	// the recent modification time makes it be read anyway.
	st, err := os.Stat(path)
	require.NoError(t, err)
	same := strings.Replace(aclReloadV1, "PUB", "SUB", 1)
	require.Len(t, same, len(aclReloadV1))
	require.NoError(t, os.WriteFile(path, []byte(same), 0o644))
	require.NoError(t, os.Chtimes(path, st.ModTime(), st.ModTime()))
	v.reloadIfChanged()
	require.Contains(t, sendTo("T"), "has SUB")
}

// TestACLWatcher: the watcher goroutine picks a change up by itself, and stops.
func TestACLWatcher(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(aclReloadV1), 0o644))
	v, err := New(Deps{File: path, WatchInterval: 5 * time.Millisecond, RuleOf: testRuleOf})
	require.NoError(t, err)
	require.NoError(t, v.Start())
	t.Cleanup(func() { require.NoError(t, v.Stop(context.Background())) })
	req := func() *codec.RemotingCommand {
		return signedAs("reloader", "reloader-secret", codec.RequestSendMessageV2, map[string]string{"b": "T"}, nil)
	}
	require.Empty(t, v.Check(aclOutside, req()))
	writeACLFile(t, path, "globalWhiteRemoteAddresses: [\"172.16.*.*\"]\naccounts: []\n")
	testutil.Eventually(t, "unsigned requests from the newly white-listed range pass", func() bool {
		return v.Check(aclOutside, aclRequest(codec.RequestSendMessageV2, map[string]string{"b": "T"}, nil)) == ""
	})
	require.Contains(t, v.Check(netip.MustParseAddr("10.0.0.1"), req()), "No acl config for reloader")
}

func TestNewACLValidatorRefusesMissingOrBadFile(t *testing.T) {
	dir := t.TempDir()
	_, err := New(Deps{File: filepath.Join(dir, "absent.yml")})
	require.ErrorIs(t, err, ErrFile)
	require.ErrorContains(t, err, "absent.yml")
	bad := filepath.Join(dir, "bad.yml")
	require.NoError(t, os.WriteFile(bad, []byte("accounts:\n  - accessKey: x\n"), 0o644))
	_, err = New(Deps{File: bad})
	require.ErrorIs(t, err, ErrFile)
	require.ErrorContains(t, err, "bad.yml")
	require.ErrorContains(t, err, "accessKey must be longer than 6")
}

// sendV2Request is what the Go client sends for one message (SEND_MESSAGE_V2), signed.
func sendV2Request(body []byte) *codec.RemotingCommand {
	return signedAs("RocketMQ", "12345678", codec.RequestSendMessageV2, map[string]string{
		"a": "PG-bench", "b": "topicB", "c": "TBW102", "d": "4", "e": "2", "f": "0", "g": "1700000000000",
		"h": "0", "i": "UNIQ_KEY\x01AC110001000000000000000000000000\x02WAIT\x01true\x02", "j": "0",
		"k": "false", "l": "16", "m": "false", "n": "broker-a",
	}, body)
}

// TestACLChecksAServerDecodedSend: a send decoded the way the servers decode it (its fields
// kept as a list, codec.DecodeRequestInto) is verified like one built with a map; a field
// changed after signing, or sent twice with the second value changed, is refused.
func TestACLChecksAServerDecodedSend(t *testing.T) {
	v, _ := testACLValidator(t, aclSampleYAML)
	decoded := func(cmd *codec.RemotingCommand) *codec.RemotingCommand {
		frame, err := cmd.AppendFrame(nil)
		require.NoError(t, err)
		var c codec.RemotingCommand
		require.NoError(t, codec.DecodeRequestInto(&c, frame[4:]))
		require.Empty(t, c.ExtFields, "kept as a list")
		return &c
	}
	cmd := sendV2Request(make([]byte, 1024))
	require.Empty(t, v.Check(aclOutside, decoded(cmd)))
	if !testutil.RaceEnabled {
		c := decoded(cmd)
		require.Zero(t, testing.AllocsPerRun(200, func() {
			if v.Check(aclOutside, c) != "" {
				t.Fatal("denied")
			}
		}))
	}
	cmd.ExtFields["e"] = "3"
	require.Contains(t, v.Check(aclOutside, decoded(cmd)), "Check signature failed")

	// The JSON header names "b" twice: the last value is the topic, and the signature must
	// cover that one.
	cmd = sendV2Request(nil)
	frame, err := cmd.AppendFrame(nil)
	require.NoError(t, err)
	hdrLen := int(binary.BigEndian.Uint32(frame[4:]) & 0xFFFFFF)
	hdr := string(frame[8 : 8+hdrLen])
	require.Contains(t, hdr, `"b":"topicB"`)
	hdr = strings.Replace(hdr, `"b":"topicB"`, `"b":"topicB","b":"topicX"`, 1)
	payload := binary.BigEndian.AppendUint32(nil, uint32(len(hdr)))
	payload = append(payload, hdr...)
	var c codec.RemotingCommand
	require.NoError(t, codec.DecodeRequestInto(&c, payload))
	topic, _ := c.Ext("b")
	require.Equal(t, "topicX", topic)
	require.Contains(t, v.Check(aclOutside, &c), "Check signature failed")
}

// TestACLSendCheckAllocs: the check of a signed send allocates nothing.
func TestACLSendCheckAllocs(t *testing.T) {
	if testutil.RaceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	v, _ := testACLValidator(t, aclSampleYAML)
	cmd := sendV2Request(make([]byte, 1024))
	require.Empty(t, v.Check(aclOutside, cmd))
	allocs := testing.AllocsPerRun(1000, func() {
		if v.Check(aclOutside, cmd) != "" {
			t.Fatal("denied")
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkACLCheckSend(b *testing.B) {
	for _, size := range []int{128, 4096} {
		b.Run("body="+strconv.Itoa(size), func(b *testing.B) {
			v, _ := testACLValidator(b, aclSampleYAML)
			cmd := sendV2Request(make([]byte, size))
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if v.Check(aclOutside, cmd) != "" {
					b.Fatal("denied")
				}
			}
		})
	}
}

func TestACLCodeLabelIsBounded(t *testing.T) {
	require.Equal(t, "SEND_MESSAGE_V2", aclCodeLabel(int32(codec.RequestSendMessageV2)))
	require.Equal(t, "other", aclCodeLabel(987654))
}
