package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/internal/launch"
)

// Against a broker with aclEnable=true, unsigned requests are refused and mqadmin signs with
// --accessKey/--secretKey or, as RocketMQ's mqadmin, with $ROCKETMQ_HOME/conf/tools.yml.
func TestACL(t *testing.T) {
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

	home := filepath.Join(dir, "home")
	require.NoError(t, os.MkdirAll(filepath.Join(home, "conf"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "conf", "tools.yml"),
		[]byte("accessKey: mqadminAdmin\nsecretKey: 12345678\n"), 0o600))
	r = mqadmin(t, map[string]string{"ROCKETMQ_HOME": home, "NAMESRV_ADDR": b.EmbeddedNamesrvAddr()},
		"updateTopic", "-b", addr, "-t", "SignedTopic", "-r", "1", "-w", "1")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "create topic to "+addr+" success.\n")
}
