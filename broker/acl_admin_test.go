package broker

import (
	"encoding/json"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/adminclient"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// The ACL's admin requests (50–53) over the remoting protocol, their answers checked field by
// field against RocketMQ 4.9.8's classes: headers CreateAccessConfigRequestHeader,
// DeleteAccessConfigRequestHeader, UpdateGlobalWhiteAddrsConfigRequestHeader (requests) and
// GetBrokerAclConfigResponseHeader (version: String, allAclFileVersion: String, brokerName:
// String, brokerAddr: String, clusterName: String), the versions being DataVersion JSON
// ({"counter": long, "timestamp": long}).

const aclAdminFile = `accounts:
  - accessKey: aclAdmin01
    secretKey: admin-secret
    admin: true
  - accessKey: producer01
    secretKey: producer-secret
    defaultTopicPerm: DENY
`

var (
	aclAdminCreds    = adminclient.Credentials{AccessKey: "aclAdmin01", SecretKey: "admin-secret"}
	aclProducerCreds = adminclient.Credentials{AccessKey: "producer01", SecretKey: "producer-secret"}
)

// signedCall sends cmd signed with creds (unsigned when creds is zero) and returns the answer.
func signedCall(c *remotingtest.Conn, creds adminclient.Credentials, cmd *codec.RemotingCommand) *codec.RemotingCommand {
	creds.Sign(cmd)
	return c.Call(cmd)
}

// dataVersionFields decodes a DataVersion's JSON keeping the field names and JSON types.
func dataVersionFields(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m), s)
	return m
}

func TestACLAdminRequests(t *testing.T) {
	aclFile := filepath.Join(t.TempDir(), "plain_acl.yml")
	require.NoError(t, os.WriteFile(aclFile, []byte(aclAdminFile), 0o600))
	tb := startTestBroker(t, func(c *Config) {
		c.AclEnable = true
		c.AclFile = aclFile
	})
	createTopic(t, tb.b, "AclAdminTopic", 1)
	c := remotingtest.Dial(t, tb.BrokerAddr)
	send := func(creds adminclient.Credentials) *codec.RemotingCommand {
		return signedCall(c, creds, sendV2("AclAdminTopic", 0, []byte("hello"), ""))
	}
	update := func(creds adminclient.Credentials, h codec.CreateAccessConfigRequestHeader) *codec.RemotingCommand {
		return signedCall(c, creds, request(codec.RequestUpdateAndCreateACLConfig, &h))
	}
	requireResponse(t, send(aclProducerCreds), codec.ResponseNoPermission,
		"No permission for topic:AclAdminTopic: needs PUB, accessKey=producer01 has DENY")

	// Admin accounts only; unsigned requests are refused first.
	grant := codec.CreateAccessConfigRequestHeader{AccessKey: "producer01", SecretKey: "producer-secret",
		DefaultTopicPerm: "DENY", TopicPerms: codec.Some("AclAdminTopic=PUB")}
	requireResponse(t, update(aclProducerCreds, grant), codec.ResponseNoPermission,
		"Need admin permission for request code=50, but accessKey=producer01 is not")
	requireResponse(t, update(adminclient.Credentials{}, grant), codec.ResponseNoPermission,
		"No accessKey is configured: the broker has aclEnable=true and request code 50 from 127.0.0.1 carries no AccessKey; configure the client's credentials")

	// UPDATE_AND_CREATE_ACL_CONFIG: SUCCESS without a remark or fields; the account may send now.
	resp := update(aclAdminCreds, grant)
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Empty(t, resp.ExtFields)
	require.Empty(t, resp.Body)
	requireResponse(t, send(aclProducerCreds), codec.ResponseSuccess, "")
	file, err := os.ReadFile(aclFile)
	require.NoError(t, err)
	require.Contains(t, string(file), "- accessKey: producer01\n  secretKey: producer-secret\n  defaultTopicPerm: DENY\n"+
		"  admin: false\n  topicPerms:\n  - AclAdminTopic=PUB\ndataVersion:\n- counter: 1\n  timestamp: ")
	info, err := os.Stat(aclFile)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// Refusals: Java's code and AclException text, the file untouched.
	requireResponse(t, update(aclAdminCreds, codec.CreateAccessConfigRequestHeader{AccessKey: "producer01", SecretKey: "short"}),
		codec.ResponseUpdateAndCreateACLConfigFailed,
		"The accessKey=producer01 and secretKey=short cannot be null and length should longer than 6")
	requireResponse(t, update(aclAdminCreds, codec.CreateAccessConfigRequestHeader{AccessKey: "producer01",
		SecretKey: "producer-secret", GroupPerms: codec.Some("G1=SUB,G2")}),
		codec.ResponseUpdateAndCreateACLConfigFailed,
		"Parse Resource format error for G2.\nThe expected resource format is 'Res=Perm'. For example: topicA=SUB")
	requireResponse(t, signedCall(c, aclAdminCreds, codec.NewRequest(codec.RequestUpdateAndCreateACLConfig,
		map[string]string{"secretKey": "12345678"}, nil)), codec.ResponseSystemError, "the custom field <accessKey> is null")
	after, err := os.ReadFile(aclFile)
	require.NoError(t, err)
	require.Equal(t, string(file), string(after))

	// GET_BROKER_CLUSTER_ACL_INFO: everything in the response header.
	resp = signedCall(c, aclAdminCreds, codec.NewRequest(codec.RequestGetBrokerClusterACLInfo, nil, nil))
	requireResponse(t, resp, codec.ResponseSuccess, "")
	require.Equal(t, []string{"allAclFileVersion", "brokerAddr", "brokerName", "clusterName", "version"},
		slices.Sorted(maps.Keys(resp.ExtFields)))
	var info52 codec.GetBrokerAclConfigResponseHeader
	require.NoError(t, info52.Decode(resp.ExtFields))
	require.Equal(t, "broker-test", info52.BrokerName)
	require.Equal(t, tb.BrokerAddr, info52.BrokerAddr)
	require.Equal(t, tb.cfg.BrokerClusterName, info52.ClusterName)
	version := dataVersionFields(t, info52.Version)
	require.Equal(t, []string{"counter", "timestamp"}, slices.Sorted(maps.Keys(version)))
	require.Equal(t, 1.0, version["counter"])
	require.InDelta(t, float64(time.Now().UnixMilli()), version["timestamp"], float64(time.Minute.Milliseconds()))
	var all map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(info52.AllAclFileVersion), &all))
	require.Equal(t, map[string]map[string]any{aclFile: version}, all)
	requireResponse(t, signedCall(c, aclProducerCreds, codec.NewRequest(codec.RequestGetBrokerClusterACLInfo, nil, nil)),
		codec.ResponseNoPermission, "Need admin permission for request code=52, but accessKey=producer01 is not")

	// UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: aclFileFullPath is required ("" is the aclFile); another
	// file is refused with Java's remark.
	white := func(addrs, path string) *codec.RemotingCommand {
		return signedCall(c, aclAdminCreds, request(codec.RequestUpdateGlobalWhiteAddrsConfig,
			&codec.UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: addrs, AclFileFullPath: path}))
	}
	requireResponse(t, signedCall(c, aclAdminCreds, codec.NewRequest(codec.RequestUpdateGlobalWhiteAddrsConfig,
		map[string]string{"globalWhiteAddrs": "10.1.1.1"}, nil)), codec.ResponseSystemError, "the custom field <aclFileFullPath> is null")
	requireResponse(t, white("10.1.1.1", filepath.Join(t.TempDir(), "other.yml")), codec.ResponseUpdateGlobalWhiteAddrsConfigFailed,
		"The globalWhiteAddresses[10.1.1.1] has been updated failed.")
	requireResponse(t, white("10.1.1.1,10.2.*.*", ""), codec.ResponseSuccess, "")
	requireResponse(t, white("127.0.0.1", aclFile), codec.ResponseSuccess, "")
	file, err = os.ReadFile(aclFile)
	require.NoError(t, err)
	require.Contains(t, string(file), "globalWhiteRemoteAddresses:\n- 127.0.0.1\n")
	require.Contains(t, string(file), "dataVersion:\n- counter: 3\n")
	requireResponse(t, signedCall(c, adminclient.Credentials{}, sendV2("AclAdminTopic", 0, []byte("white"), "")),
		codec.ResponseSuccess, "")
	requireResponse(t, white("", ""), codec.ResponseSuccess, "") // Java writes [""]: a blank pattern matches nothing
	resp = signedCall(c, adminclient.Credentials{}, sendV2("AclAdminTopic", 0, []byte("white"), ""))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Contains(t, resp.Remark, "No accessKey is configured")

	// DELETE_ACL_CONFIG: the account is gone at once; an unknown one is refused.
	del := func(creds adminclient.Credentials, key string) *codec.RemotingCommand {
		return signedCall(c, creds, request(codec.RequestDeleteACLConfig, &codec.DeleteAccessConfigRequestHeader{AccessKey: key}))
	}
	requireResponse(t, del(aclProducerCreds, "producer01"), codec.ResponseNoPermission,
		"Need admin permission for request code=51, but accessKey=producer01 is not")
	requireResponse(t, del(aclAdminCreds, "nobody01"), codec.ResponseDeleteACLConfigFailed,
		"The accesskey[nobody01] corresponding to accessConfig has been deleted failed.")
	requireResponse(t, del(aclAdminCreds, "producer01"), codec.ResponseSuccess, "")
	requireResponse(t, send(aclProducerCreds), codec.ResponseNoPermission, "No acl config for producer01")
	file, err = os.ReadFile(aclFile)
	require.NoError(t, err)
	require.NotContains(t, string(file), "producer01")
	resp = signedCall(c, aclAdminCreds, codec.NewRequest(codec.RequestGetBrokerClusterACLInfo, nil, nil))
	require.NoError(t, info52.Decode(resp.ExtFields))
	require.Equal(t, 5.0, dataVersionFields(t, info52.Version)["counter"], "one version per edit")
}

// With aclEnable=false the Java broker has no validator: 50, 51 and 53 fail with their code
// and no remark, and 52 gets no answer at all.
func TestACLAdminRequestsWithACLOff(t *testing.T) {
	logger, rec := logtest.Logger()
	rb := startRelBrokerDeps(t, nil, nil, Deps{Logger: logger})
	t.Cleanup(func() { require.NoError(t, rb.close()) })
	c := remotingtest.Dial(t, rb.addr)

	op := c.Request(codec.NewRequest(codec.RequestGetBrokerClusterACLInfo, nil, nil))
	testutil.Eventually(t, "GET_BROKER_CLUSTER_ACL_INFO handled", func() bool {
		for _, r := range rec.AtLevel(slog.LevelDebug) {
			if r.Message == "acl: GET_BROKER_CLUSTER_ACL_INFO with aclEnable=false: not answered, as RocketMQ's broker does not answer it" {
				return true
			}
		}
		return false
	})
	resp := c.Call(request(codec.RequestUpdateAndCreateACLConfig,
		&codec.CreateAccessConfigRequestHeader{AccessKey: "someone1", SecretKey: "12345678"}))
	requireResponse(t, resp, codec.ResponseUpdateAndCreateACLConfigFailed, "")
	require.Empty(t, resp.Remark)
	requireResponse(t, c.Call(request(codec.RequestDeleteACLConfig, &codec.DeleteAccessConfigRequestHeader{AccessKey: "someone1"})),
		codec.ResponseDeleteACLConfigFailed, "")
	requireResponse(t, c.Call(request(codec.RequestUpdateGlobalWhiteAddrsConfig,
		&codec.UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: "10.0.0.1"})),
		codec.ResponseUpdateGlobalWhiteAddrsConfigFailed, "")
	// The header is read before the validator is looked for, as in Java.
	requireResponse(t, c.Call(codec.NewRequest(codec.RequestDeleteACLConfig, map[string]string{}, nil)),
		codec.ResponseSystemError, "the custom field <accessKey> is null")
	_, err := c.TryAwait(op, 100*time.Millisecond)
	require.ErrorIs(t, err, remotingtest.ErrTimeout, "GET_BROKER_CLUSTER_ACL_INFO is never answered")
}

func request(code codec.RequestCode, h codec.CustomHeader) *codec.RemotingCommand {
	ext := map[string]string{}
	h.Encode(ext)
	return codec.NewRequest(code, ext, nil)
}
