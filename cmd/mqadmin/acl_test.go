package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/internal/launch"
	"github.com/ringmq/ringmq/internal/testutil"
)

// startACLBroker starts a broker with aclEnable=true whose aclFile has one admin account,
// mqadminAdmin / 12345678.
func startACLBroker(t *testing.T) (*broker.Broker, broker.Config, string) {
	t.Helper()
	dir := t.TempDir()
	aclFile := filepath.Join(dir, "plain_acl.yml")
	require.NoError(t, os.WriteFile(aclFile, []byte("accounts:\n"+
		"  - accessKey: mqadminAdmin\n    secretKey: 12345678\n    admin: true\n"), 0o600))
	cfg := smallBrokerConfig(filepath.Join(dir, "store"))
	cfg.AclEnable, cfg.AclFile = true, aclFile
	b, err := launch.New(cfg, broker.Deps{})
	require.NoError(t, err)
	require.NoError(t, b.Start())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	return b, cfg, aclFile
}

// toolsHome is the environment of an mqadmin whose $ROCKETMQ_HOME/conf/tools.yml signs as
// ak/sk, with b's name server.
func toolsHome(t *testing.T, b *broker.Broker, ak, sk string) map[string]string {
	t.Helper()
	h := filepath.Join(t.TempDir(), "home")
	require.NoError(t, os.MkdirAll(filepath.Join(h, "conf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(h, "conf", "tools.yml"),
		[]byte("accessKey: "+ak+"\nsecretKey: "+sk+"\n"), 0o600))
	return map[string]string{"ROCKETMQ_HOME": h, "NAMESRV_ADDR": b.EmbeddedNamesrvAddr()}
}

// Against a broker with aclEnable=true, unsigned requests are refused and mqadmin signs with
// --accessKey/--secretKey or, as RocketMQ's mqadmin, with $ROCKETMQ_HOME/conf/tools.yml.
func TestACL(t *testing.T) {
	b, _, _ := startACLBroker(t)
	addr := b.BrokerAddr()

	r := mqadmin(t, nil, "brokerStatus", "-b", addr)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "mqadmin brokerStatus: broker "+addr+" answered NO_PERMISSION (16)")

	r = mqadmin(t, nil, "brokerStatus", "-b", addr, "--accessKey", "mqadminAdmin", "--secretKey", "12345678", "--output", "json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, `"brokerActive": "true"`)

	r = mqadmin(t, nil, "brokerStatus", "-b", addr, "--accessKey", "mqadminAdmin", "--secretKey", "wrong-secret")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "NO_PERMISSION (16)")

	r = mqadmin(t, toolsHome(t, b, "mqadminAdmin", "12345678"),
		"updateTopic", "-b", addr, "-t", "SignedTopic", "-r", "1", "-w", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "create topic to "+addr+" success.\n")
}

// The ACL commands against a broker with aclEnable=true, signed by the admin account of
// $ROCKETMQ_HOME/conf/tools.yml (-a and -s name the account edited, as in RocketMQ's mqadmin).
func TestACLCommands(t *testing.T) {
	b, cfg, aclFile := startACLBroker(t)
	addr := b.BrokerAddr()
	admin := toolsHome(t, b, "mqadminAdmin", "12345678")
	run := func(env map[string]string, args ...string) runResult {
		t.Helper()
		return mqadmin(t, env, args...)
	}
	okAs := func(env map[string]string, args ...string) string {
		t.Helper()
		r := run(env, args...)
		require.Equal(t, 0, r.code, r.stderr)
		return r.stdout
	}
	aclDir := func(s string) string { return strings.ReplaceAll(s, aclFile, "ACL_FILE") }
	testutil.Eventually(t, "the broker in its name server's cluster table", func() bool {
		return run(admin, "clusterAclConfigVersion", "-c", cfg.BrokerClusterName).code == 0
	})

	golden(t, "updateAclConfig", okAs(admin, "updateAclConfig", "-b", addr, "-a", "producer01", "-s", "producer-secret",
		"-i", "DENY", "-t", "TopicA=PUB,TopicB=PUB|SUB", "-w", "10.0.0.*"))
	file, err := os.ReadFile(aclFile)
	require.NoError(t, err)
	require.Contains(t, string(file), "- accessKey: producer01\n  secretKey: producer-secret\n  whiteRemoteAddress: 10.0.0.*\n"+
		"  admin: false\n  defaultTopicPerm: DENY\n  topicPerms:\n  - TopicA=PUB\n  - TopicB=PUB|SUB\n")

	golden(t, "clusterAclConfigVersion", aclDir(okAs(admin, "clusterAclConfigVersion", "-b", addr)))
	golden(t, "updateGlobalWhiteAddr_cluster", okAs(admin, "updateGlobalWhiteAddr", "-c", cfg.BrokerClusterName,
		"-g", "10.10.103.*,192.168.0.*"))
	golden(t, "clusterAclConfigVersion_cluster", aclDir(okAs(admin, "clusterAclConfigVersion", "-c", cfg.BrokerClusterName)))
	var versions struct {
		Rows []aclVersionRow `json:"rows"`
	}
	require.NoError(t, json.Unmarshal([]byte(okAs(admin, "clusterAclConfigVersion", "-b", addr, "--output", "json")), &versions))
	require.Len(t, versions.Rows, 1)
	require.Equal(t, aclVersionRow{Cluster: cfg.BrokerClusterName, BrokerName: cfg.BrokerName, BrokerAddr: addr,
		AclFilePath: aclFile, Counter: 2, Timestamp: versions.Rows[0].Timestamp}, versions.Rows[0])
	file, err = os.ReadFile(aclFile)
	require.NoError(t, err)
	require.Contains(t, string(file), "globalWhiteRemoteAddresses:\n- 10.10.103.*\n- 192.168.0.*\n")

	// The edited account signs now, but is not an admin: ACL edits are refused to it.
	r := run(toolsHome(t, b, "producer01", "producer-secret"), "deleteAclConfig", "-b", addr, "-a", "mqadminAdmin")
	require.Equal(t, 1, r.code)
	golden(t, "error_deleteAclConfig_not_admin", r.stderr)
	r = run(admin, "deleteAclConfig", "-b", addr, "-a", "nobody01")
	require.Equal(t, 1, r.code)
	golden(t, "error_deleteAclConfig_unknown", r.stderr)
	r = run(admin, "updateAclConfig", "-b", addr, "-a", "producer01", "-s", "short")
	require.Equal(t, 1, r.code)
	golden(t, "error_updateAclConfig_short_secret", r.stderr)

	golden(t, "deleteAclConfig_cluster", okAs(admin, "deleteAccessConfig", "-c", cfg.BrokerClusterName, "-a", "producer01"))
	file, err = os.ReadFile(aclFile)
	require.NoError(t, err)
	require.NotContains(t, string(file), "producer01")
	require.Contains(t, string(file), "dataVersion:\n- counter: 3\n")
}

// Against a broker without ACL, the edits fail as they fail against Apache RocketMQ's.
func TestACLCommandsWithoutACL(t *testing.T) {
	r := mqadmin(t, nil, "updateAclConfig", "-b", fixture.broker, "-a", "producer01", "-s", "producer-secret")
	require.Equal(t, 1, r.code)
	golden(t, "error_updateAclConfig_acl_off", r.stderr)
	r = mqadmin(t, nil, "clusterAclConfigVersion", "-b", fixture.broker, "--timeout", "200ms")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "did not answer GET_BROKER_CLUSTER_ACL_INFO")
	require.Contains(t, r.stderr, "a broker with aclEnable=false does not answer it (Apache RocketMQ's neither)")
}
