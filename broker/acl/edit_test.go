package acl

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// editFixture is a hand-written file: comments, an unknown top-level key, an unknown account
// key, flow-style lists, and a secret that reads as a number.
const editFixture = `# accounts of the payments cluster
globalWhiteRemoteAddresses: ["10.10.103.*"]
owner: payments # not an ACL key: kept
accounts:
  - accessKey: RocketMQ # the producer
    secretKey: 12345678
    defaultTopicPerm: DENY
    topicPerms: ["topicA=PUB"]
    note: kept
  - accessKey: adminUser
    secretKey: adminsecret
    admin: true
`

var editEpoch = time.UnixMilli(1700000000123)

func newEditValidator(t *testing.T, content string) (*Validator, string, *testutil.ManualClock) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o640))
	clock := testutil.NewManualClockAt(editEpoch)
	v, err := New(Deps{File: path, WatchInterval: time.Hour, RuleOf: testRuleOf, Clock: clock.Now})
	require.NoError(t, err)
	return v, path, clock
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(data)
}

func ptr[T any](v T) *T { return &v }

func TestUpdateAccessConfigEditsTheAccountInPlace(t *testing.T) {
	v, path, clock := newEditValidator(t, editFixture)
	version, all := v.Versions()
	require.Equal(t, DataVersion{Counter: 0, Timestamp: editEpoch.UnixMilli()}, version, "unversioned: counter 0 at load time")
	require.Equal(t, map[string]DataVersion{path: version}, all)
	send := func(ak, sk, topic string) string {
		return v.Check(aclOutside, signedAs(ak, sk, codec.RequestSendMessageV2, map[string]string{"b": topic}, nil))
	}
	require.Empty(t, send("RocketMQ", "12345678", "topicA"))

	clock.Advance(5 * time.Second)
	require.NoError(t, v.UpdateAccessConfig(AccessConfig{AccessKey: "RocketMQ", SecretKey: "87654321",
		DefaultGroupPerm: "SUB", TopicPerms: []string{"topicA=DENY", "topicB=PUB|SUB"}}))
	// The account moves to the end with its unknown key and its untouched keys; the rest of the
	// file (comments included) stays; dataVersion is appended.
	require.Equal(t, `# accounts of the payments cluster
globalWhiteRemoteAddresses: ["10.10.103.*"]
owner: payments # not an ACL key: kept
accounts:
- accessKey: adminUser
  secretKey: adminsecret
  admin: true
- accessKey: RocketMQ # the producer
  secretKey: "87654321"
  defaultTopicPerm: DENY
  topicPerms:
  - topicA=DENY
  - topicB=PUB|SUB
  note: kept
  admin: false
  defaultGroupPerm: SUB
dataVersion:
- counter: 1
  timestamp: 1700000005123
`, fileText(t, path))
	info, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), info.Mode().Perm(), "the file keeps its permission bits")

	// In use at once: the old secret no longer signs, the new permissions apply.
	require.Contains(t, send("RocketMQ", "12345678", "topicB"), "Check signature failed")
	require.Empty(t, send("RocketMQ", "87654321", "topicB"))
	require.Contains(t, send("RocketMQ", "87654321", "topicA"), "needs PUB, accessKey=RocketMQ has DENY")
	version, all = v.Versions()
	require.Equal(t, DataVersion{Counter: 1, Timestamp: 1700000005123}, version)
	require.Equal(t, map[string]DataVersion{path: version}, all)

	// A new account is appended; the version advances from the file's, even one the
	// watcher has not read yet.
	clock.Advance(time.Second)
	text := fileText(t, path)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(text, "counter: 1", "counter: 41", 1)), 0o640))
	require.NoError(t, v.UpdateAccessConfig(AccessConfig{AccessKey: "consumer1", SecretKey: "consumer-secret",
		WhiteRemoteAddress: ptr("192.168.1.*"), DefaultTopicPerm: "SUB", GroupPerms: []string{"G1=SUB"}}))
	require.Contains(t, fileText(t, path), `  note: kept
  admin: false
  defaultGroupPerm: SUB
- accessKey: consumer1
  secretKey: consumer-secret
  whiteRemoteAddress: 192.168.1.*
  admin: false
  defaultTopicPerm: SUB
  groupPerms:
  - G1=SUB
dataVersion:
- counter: 42
  timestamp: 1700000006123
`)
	require.Empty(t, v.Check(aclOutside, signedAs("consumer1", "consumer-secret", codec.RequestPullMessage,
		map[string]string{"topic": "T", "consumerGroup": "G1"}, nil)))

	// The watcher finds the content it already has: nothing reloaded, nothing reported.
	var logs aclLogBuffer
	v.logger = slog.New(slog.NewTextHandler(&logs, nil))
	v.reloadIfChanged()
	require.Zero(t, logs.count("acl:"))
}

func TestUpdateAccessConfigRefusals(t *testing.T) {
	v, path, _ := newEditValidator(t, editFixture)
	cases := []struct {
		c      AccessConfig
		remark string
	}{
		{AccessConfig{AccessKey: "short", SecretKey: "12345678"},
			"The accessKey=short and secretKey=12345678 cannot be null and length should longer than 6"},
		{AccessConfig{AccessKey: "RocketMQ"},
			"The accessKey=RocketMQ and secretKey=null cannot be null and length should longer than 6"},
		{AccessConfig{AccessKey: "RocketMQ", SecretKey: "12345678", TopicPerms: []string{"topicA"}},
			"Parse Resource format error for topicA.\nThe expected resource format is 'Res=Perm'. For example: topicA=SUB"},
		{AccessConfig{AccessKey: "RocketMQ", SecretKey: "12345678", TopicPerms: []string{""}},
			"Parse Resource format error for .\nThe expected resource format is 'Res=Perm'. For example: topicA=SUB"},
		{AccessConfig{AccessKey: "RocketMQ", SecretKey: "12345678", GroupPerms: []string{"G=ALL"}},
			"Parse resource permission error for G=ALL.\nThe expected permissions are 'SUB' or 'PUB' or 'SUB|PUB' or 'PUB|SUB'."},
		// What Java would write and then fail to load, ringmq refuses before writing.
		{AccessConfig{AccessKey: "RocketMQ", SecretKey: "12345678", WhiteRemoteAddress: ptr("10.0.0.300")},
			`accounts[1] (accessKey "RocketMQ"): whiteRemoteAddress: address pattern "10.0.0.300": "10.0.0.300" is not an IP address`},
		{AccessConfig{AccessKey: "RocketMQ", SecretKey: "12345678", DefaultTopicPerm: "PUBSUB"},
			`accounts[1] (accessKey "RocketMQ"): defaultTopicPerm: permission "PUBSUB": want DENY, PUB, SUB or PUB|SUB`},
	}
	for _, tc := range cases {
		err := v.UpdateAccessConfig(tc.c)
		var refused *EditRefused
		require.ErrorAs(t, err, &refused, tc.remark)
		require.Equal(t, tc.remark, refused.Remark)
	}
	require.Equal(t, editFixture, fileText(t, path), "nothing written")
	version, _ := v.Versions()
	require.Zero(t, version.Counter)
}

func TestDeleteAccessConfig(t *testing.T) {
	v, path, _ := newEditValidator(t, editFixture)
	deleted, err := v.DeleteAccessConfig("nobody-here")
	require.NoError(t, err)
	require.False(t, deleted)
	deleted, err = v.DeleteAccessConfig("")
	require.NoError(t, err)
	require.False(t, deleted)
	require.Equal(t, editFixture, fileText(t, path))

	deleted, err = v.DeleteAccessConfig("RocketMQ")
	require.NoError(t, err)
	require.True(t, deleted)
	require.Equal(t, `# accounts of the payments cluster
globalWhiteRemoteAddresses: ["10.10.103.*"]
owner: payments # not an ACL key: kept
accounts:
- accessKey: adminUser
  secretKey: adminsecret
  admin: true
dataVersion:
- counter: 1
  timestamp: 1700000000123
`, fileText(t, path))
	require.Contains(t, v.Check(aclOutside, signedAs("RocketMQ", "12345678", codec.RequestSendMessageV2,
		map[string]string{"b": "topicA"}, nil)), "No acl config for RocketMQ")
}

func TestUpdateGlobalWhiteAddrs(t *testing.T) {
	v, path, _ := newEditValidator(t, "accounts: []\n")
	other := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(other, nil, 0o644))
	updated, err := v.UpdateGlobalWhiteAddrs([]string{"172.16.*.*"}, other)
	require.NoError(t, err)
	require.False(t, updated, "not the broker's aclFile")

	updated, err = v.UpdateGlobalWhiteAddrs(SplitList("172.16.*.*,10.0.0.1"), path)
	require.NoError(t, err)
	require.True(t, updated)
	require.Equal(t, "accounts: []\nglobalWhiteRemoteAddresses:\n- 172.16.*.*\n- 10.0.0.1\ndataVersion:\n- counter: 1\n  timestamp: 1700000000123\n",
		fileText(t, path))
	require.Empty(t, v.Check(aclOutside, aclRequest(codec.RequestUpdateAndCreateTopic, nil, nil)), "white-listed")

	// "" names the aclFile; a list is replaced whole.
	updated, err = v.UpdateGlobalWhiteAddrs(SplitList("10.0.0.2"), "")
	require.NoError(t, err)
	require.True(t, updated)
	require.Contains(t, fileText(t, path), "globalWhiteRemoteAddresses:\n- 10.0.0.2\ndataVersion:\n- counter: 2\n")
	require.Contains(t, v.Check(aclOutside, aclRequest(codec.RequestUpdateAndCreateTopic, nil, nil)), "No accessKey")

	_, err = v.UpdateGlobalWhiteAddrs([]string{"10.0.0.*", "300.1.1.1"}, "")
	require.ErrorContains(t, err, `globalWhiteRemoteAddresses[1]: address pattern "300.1.1.1"`)
}

// An empty file (Java creates the default one empty) grows into a file; Java lists no
// version for a file without data.
func TestEditAnEmptyFile(t *testing.T) {
	v, path, _ := newEditValidator(t, "")
	_, all := v.Versions()
	require.Empty(t, all)
	require.NoError(t, v.UpdateAccessConfig(AccessConfig{AccessKey: "first-user", SecretKey: "first-secret", Admin: true}))
	require.Equal(t, "accounts:\n- accessKey: first-user\n  secretKey: first-secret\n  admin: true\n"+
		"dataVersion:\n- counter: 1\n  timestamp: 1700000000123\n", fileText(t, path))
	version, all := v.Versions()
	require.Equal(t, map[string]DataVersion{path: version}, all)
	vj, allj := EncodeVersions(version, all)
	require.Equal(t, `{"counter":1,"timestamp":1700000000123}`, vj)
	require.Equal(t, `{"`+path+`":{"counter":1,"timestamp":1700000000123}}`, allj)
}

func TestSplitListIsJavas(t *testing.T) {
	for in, want := range map[string][]string{
		"":      {""},
		"a":     {"a"},
		"a,b":   {"a", "b"},
		"a,,b,": {"a", "", "b"},
		",a":    {"", "a"},
		",":     {},
	} {
		require.Equal(t, want, SplitList(in), in)
	}
}
