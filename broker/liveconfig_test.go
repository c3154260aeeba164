package broker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// startConfigBroker starts a test broker whose configuration was read from a broker.conf
// holding text (its keys are not applied: the harness's configuration is the start's), so that
// UPDATE_BROKER_CONFIG writes its changes there.
func startConfigBroker(t *testing.T, text string) (*testBroker, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o640))
	tb := &testBroker{cfg: testBrokerConfig(t), configFile: path}
	tb.start(t)
	t.Cleanup(func() { tb.shutdown(t) })
	return tb, path
}

// updateBrokerConfig sends UPDATE_BROKER_CONFIG (25) with body as mqadmin does.
func updateBrokerConfig(c *remotingtest.Conn, body string) *codec.RemotingCommand {
	return c.Call(codec.NewRequest(codec.RequestUpdateBrokerConfig, nil, []byte(body)))
}

// routePerm is the perm the name server's route gives topic's queues on the one broker.
func routePerm(t *testing.T, namesrvAddr, topic string) int32 {
	t.Helper()
	ns := remotingtest.Dial(t, namesrvAddr)
	defer func() { _ = ns.Close() }()
	resp := ns.Call(codec.NewRequest(codec.RequestGetRouteInfoByTopic, map[string]string{"topic": topic}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	rd, err := codec.DecodeTopicRouteData(resp.Body)
	require.NoError(t, err)
	require.Len(t, rd.QueueDatas, 1)
	return rd.QueueDatas[0].Perm
}

// brokerConfigLines is GET_BROKER_CONFIG's body as key -> value, and its version header.
func brokerConfigLines(t *testing.T, c *remotingtest.Conn) (map[string]string, string) {
	t.Helper()
	resp := c.Call(codec.NewRequest(codec.RequestGetBrokerConfig, nil, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	props, err := conf.Parse(resp.Body)
	require.NoError(t, err)
	m := map[string]string{}
	for _, p := range props {
		m[p.Key] = p.Value
	}
	return m, resp.ExtFields["version"]
}

// The operator's drain: brokerPermission=4 refuses sends at once with RocketMQ's answer, keeps
// serving pulls, and the route the name server gives already says 4 when the answer comes;
// 6 restores sends. Each change is in broker.conf, in place, and in GET_BROKER_CONFIG.
func TestUpdateBrokerPermissionDrainsWrites(t *testing.T) {
	const confText = "# production broker\nbrokerClusterName=TestCluster\nbrokerPermission = 6\n\n# end\n"
	tb, path := startConfigBroker(t, confText)
	c := remotingtest.Dial(t, tb.BrokerAddr)
	sendOK(t, c, sendV1("Drained", 0, []byte("before"), ""))
	testutil.Eventually(t, "the auto-created topic's route", func() bool {
		ns := remotingtest.Dial(t, tb.NamesrvAddr)
		defer func() { _ = ns.Close() }()
		return ns.Call(codec.NewRequest(codec.RequestGetRouteInfoByTopic, map[string]string{"topic": "Drained"}, nil)).Code == 0
	})
	require.Equal(t, metadata.PermRead|metadata.PermWrite, routePerm(t, tb.NamesrvAddr, "Drained"))

	resp := updateBrokerConfig(c, "brokerPermission=4\n")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, metadata.PermRead, routePerm(t, tb.NamesrvAddr, "Drained"), "registered before the answer")
	resp = c.Call(sendV1("Drained", 0, []byte("refused"), ""))
	require.Equal(t, int32(codec.ResponseNoPermission), resp.Code)
	require.Equal(t, "the broker[127.0.0.1] sending message is forbidden", resp.Remark)
	testutil.Eventually(t, "the first message in the ConsumeQueue", func() bool {
		return tb.b.store.GetMaxOffsetInQueue("Drained", 0) == 1
	})
	resp = c.Call(remotingtest.PullRequest("G", "Drained", 0, 0, 32, subFlag, 0, "*"))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "before", string(recs[0].Body))

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "# production broker\nbrokerClusterName=TestCluster\nbrokerPermission=4\n\n# end\n", string(got))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), st.Mode().Perm())
	props, version := brokerConfigLines(t, c)
	require.Equal(t, "4", props["brokerPermission"])
	require.True(t, strings.HasPrefix(version, `{"counter":1,"stateVersion":0,"timestamp":`), version)
	require.Equal(t, 4, tb.b.Config().BrokerPermission)

	resp = updateBrokerConfig(c, "brokerPermission=6")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.Equal(t, metadata.PermRead|metadata.PermWrite, routePerm(t, tb.NamesrvAddr, "Drained"))
	sendOK(t, c, sendV1("Drained", 0, []byte("after"), ""))
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, confText[:len("# production broker\nbrokerClusterName=TestCluster\n")]+"brokerPermission=6\n\n# end\n", string(got))
	props, version = brokerConfigLines(t, c)
	require.Equal(t, "6", props["brokerPermission"])
	require.True(t, strings.HasPrefix(version, `{"counter":2,`), version)
}

// A request is checked whole before anything changes: a bad value, an unknown key, a key that
// needs a restart or one of RocketMQ's black-listed keys is refused naming the key, and the
// valid keys beside it are neither applied nor written.
func TestUpdateBrokerConfigRefusesWhole(t *testing.T) {
	const confText = "brokerPermission=6\n"
	tb, path := startConfigBroker(t, confText)
	c := remotingtest.Dial(t, tb.BrokerAddr)
	for _, tc := range []struct {
		body   string
		code   codec.ResponseCode
		remark string
	}{
		{"autoCreateTopicEnable=false\nbrokerPermission=5\n", codec.ResponseInvalidParameter,
			`key brokerPermission = "5"; allowed: 0, 2 (write only), 4 (read only) or 6 (read and write)`},
		{"autoCreateTopicEnable=false\nslaveReadEnable=maybe\n", codec.ResponseInvalidParameter,
			`key slaveReadEnable = "maybe": not true or false; allowed: true or false`},
		{"autoCreateTopicEnable=false\nbrokerPermision=4\n", codec.ResponseInvalidParameter,
			"unknown key brokerPermision: neither ringmq nor Apache RocketMQ 4.x reads it; did you mean brokerPermission?"},
		{"autoCreateTopicEnable=false\nfileReservedTime=48\n", codec.ResponseNoPermission,
			"key fileReservedTime needs a restart: edit broker.conf (keys that change at run time: autoCreateRetryTopicLimit, " +
				"autoCreateSubscriptionGroup, autoCreateSubscriptionGroupLimit, autoCreateTopicEnable, brokerPermission, " +
				"enablePropertyFilter, notifyConsumerIdsChangedEnable, offsetCheckInSlave, rejectTransactionMessage, slaveReadEnable)"},
		{"autoCreateTopicEnable=false\nbrokerConfigPath=/tmp/x\n", codec.ResponseNoPermission,
			"Can not update config in black list: brokerConfigPath"},
		{"autoCreateTopicEnable=false\nsendMessageThreadPoolNums=64\n", codec.ResponseInvalidParameter,
			"key sendMessageThreadPoolNums is not used by ringmq: sends run on the event loops; durability waits are callbacks, not threads"},
		{"autoCreateTopicEnable=false\nenableDLegerCommitLog=true\n", codec.ResponseInvalidParameter,
			`key enableDLegerCommitLog = "true": ringmq does not implement the DLedger (Raft) CommitLog; ringmq replicates master to slave (brokerRole); allowed: "false" or no such line`},
		{"bad=\\uZZZZ\n", codec.ResponseSystemError,
			`string2Properties error: conf: malformed properties: line 1: value of "bad": malformed \uxxxx escape: \uZZZZ`},
	} {
		resp := updateBrokerConfig(c, tc.body)
		require.Equal(t, int32(tc.code), resp.Code, "%q: %s", tc.body, resp.Remark)
		require.Equal(t, tc.remark, resp.Remark, tc.body)
	}
	// Nothing applied: auto-creation still on, the file and the version untouched.
	sendOK(t, c, sendV1("AutoCreated", 0, []byte("x"), ""))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, confText, string(got))
	props, version := brokerConfigLines(t, c)
	require.Equal(t, "true", props["autoCreateTopicEnable"])
	require.True(t, strings.HasPrefix(version, `{"counter":0,`), version)

	// The same keys, all valid, take effect together; an absent key is appended.
	resp := updateBrokerConfig(c, "autoCreateTopicEnable=false\nautoCreateSubscriptionGroup=FALSE\n")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	resp = c.Call(sendV1("NotCreated", 0, []byte("x"), ""))
	require.Equal(t, int32(codec.ResponseTopicNotExist), resp.Code, resp.Remark)
	resp = c.Call(remotingtest.PullRequest("NewGroup", "AutoCreated", 0, 0, 32, subFlag, 0, "*"))
	require.Equal(t, int32(codec.ResponseSubscriptionGroupNotExist), resp.Code, resp.Remark)
	got, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, confText+"autoCreateTopicEnable=false\nautoCreateSubscriptionGroup=false\n", string(got))

	// What a restart reads from the file is what runs now.
	fileProps, err := conf.ReadFile(path)
	require.NoError(t, err)
	restarted := testBrokerConfig(t)
	for _, p := range fileProps {
		w, err := restarted.Set(p.Key, p.Value, p.Line)
		require.NoError(t, err)
		require.Nil(t, w)
	}
	running := tb.b.Config()
	require.Equal(t, running.AutoCreateTopicEnable, restarted.AutoCreateTopicEnable)
	require.Equal(t, running.AutoCreateSubscriptionGroup, restarted.AutoCreateSubscriptionGroup)
	require.False(t, restarted.AutoCreateTopicEnable)
}

// Without a -c file a change lasts until the broker stops; an empty body changes nothing.
// An operator whose clients reach a limit raises it while the broker runs.
func TestUpdateBrokerConfigRaisesTheLimits(t *testing.T) {
	tb := &testBroker{cfg: testBrokerConfig(t)}
	tb.cfg.AutoCreateSubscriptionGroupLimit, tb.cfg.AutoCreateRetryTopicLimit = 1, 1
	tb.start(t)
	t.Cleanup(func() { tb.shutdown(t) })
	c := remotingtest.Dial(t, tb.BrokerAddr)
	pull := func(group string) *codec.RemotingCommand {
		return c.Call(remotingtest.PullRequest(group, "TBW102", 0, 0, 32, subFlag, 0, "*"))
	}
	require.NotEqual(t, int32(codec.ResponseSubscriptionGroupNotExist), pull("G1").Code)
	resp := pull("G2")
	require.Equal(t, int32(codec.ResponseSubscriptionGroupNotExist), resp.Code)
	require.Contains(t, resp.Remark, "subscription group limit 1 reached (key autoCreateSubscriptionGroupLimit)")
	_, err := tb.b.topics.CreateInSendMessageBack(metadata.RetryTopic("G1"), 1, 6, 0)
	require.NoError(t, err)
	_, err = tb.b.topics.CreateInSendMessageBack(metadata.RetryTopic("G2"), 1, 6, 0)
	require.ErrorContains(t, err, "retry topic limit 1 reached")

	resp = updateBrokerConfig(c, "autoCreateSubscriptionGroupLimit=2\nautoCreateRetryTopicLimit=2\n")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.NotEqual(t, int32(codec.ResponseSubscriptionGroupNotExist), pull("G2").Code)
	_, err = tb.b.topics.CreateInSendMessageBack(metadata.RetryTopic("G2"), 1, 6, 0)
	require.NoError(t, err)
	resp = updateBrokerConfig(c, "autoCreateSubscriptionGroupLimit=0\n")
	require.Equal(t, int32(codec.ResponseInvalidParameter), resp.Code)
	require.Contains(t, resp.Remark, "autoCreateSubscriptionGroupLimit")
}

func TestUpdateBrokerConfigWithoutFile(t *testing.T) {
	tb := startTestBroker(t, nil)
	c := remotingtest.Dial(t, tb.BrokerAddr)
	resp := updateBrokerConfig(c, "")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	resp = updateBrokerConfig(c, "rejectTransactionMessage=true")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	require.True(t, tb.b.live.RejectTransactionMessage.Load())
	props, _ := brokerConfigLines(t, c)
	require.Equal(t, "true", props["rejectTransactionMessage"])
}

// A change the broker cannot keep in its -c file (here: the file is gone) is not made either.
func TestUpdateBrokerConfigUnwritableFileChangesNothing(t *testing.T) {
	tb, path := startConfigBroker(t, "brokerPermission=6\n")
	require.NoError(t, os.Remove(path))
	c := remotingtest.Dial(t, tb.BrokerAddr)
	resp := updateBrokerConfig(c, "brokerPermission=4\n")
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code, resp.Remark)
	require.Equal(t, "broker: config file "+path+": lstat "+path+": no such file or directory; nothing changed", resp.Remark)
	sendOK(t, c, sendV1("StillWritable", 0, []byte("x"), ""))
	props, version := brokerConfigLines(t, c)
	require.Equal(t, "6", props["brokerPermission"])
	require.True(t, strings.HasPrefix(version, `{"counter":0,`), version)
}
