package broker

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A production-style broker.conf, key by key as operators write them (Apache
// RocketMQ's 2m-2s-async sample plus the usual tuning keys).
var productionConf = [][2]string{
	{"brokerClusterName", "DefaultCluster"},
	{"brokerName", "broker-a"},
	{"brokerId", "0"},
	{"namesrvAddr", "10.0.0.1:9876;10.0.0.2:9876"},
	{"defaultTopicQueueNums", "4"},
	{"autoCreateTopicEnable", "true"},
	{"autoCreateSubscriptionGroup", "true"},
	{"listenPort", "10911"},
	{"haListenPort", "10912"},
	{"deleteWhen", "04"},
	{"fileReservedTime", "48"},
	{"mapedFileSizeCommitLog", "1073741824"},
	{"mapedFileSizeConsumeQueue", "300000"},
	{"destroyMapedFileIntervalForcibly", "120000"},
	{"redeleteHangedFileInterval", "120000"},
	{"diskMaxUsedSpaceRatio", "88"},
	{"storePathRootDir", "/data/rocketmq/store"},
	{"storePathCommitLog", "/data/rocketmq/store/commitlog"},
	{"storePathConsumeQueue", "/data/rocketmq/store/consumequeue"},
	{"storePathIndex", "/data/rocketmq/store/index"},
	{"storeCheckpoint", "/data/rocketmq/store/checkpoint"},
	{"abortFile", "/data/rocketmq/store/abort"},
	{"maxMessageSize", "65536"},
	{"flushCommitLogLeastPages", "4"},
	{"flushConsumeQueueLeastPages", "2"},
	{"flushCommitLogThoroughInterval", "10000"},
	{"flushConsumeQueueThoroughInterval", "60000"},
	{"brokerRole", "ASYNC_MASTER"},
	{"flushDiskType", "ASYNC_FLUSH"},
	{"checkTransactionMessageEnable", "false"},
	{"sendMessageThreadPoolNums", "128"},
	{"pullMessageThreadPoolNums", "128"},
	{"warmMapedFileEnable", "true"},
	{"transientStorePoolEnable", "false"},
}

func TestProductionConfLoads(t *testing.T) {
	c := DefaultConfig()
	var unknown, notNeeded []string
	for i, kv := range productionConf {
		w, err := c.Set(kv[0], kv[1], i+1)
		require.NoError(t, err, kv[0])
		if w != nil {
			if w.Unknown {
				unknown = append(unknown, w.Key)
			} else {
				notNeeded = append(notNeeded, w.Key)
			}
		}
	}
	require.Equal(t, []string{"redeleteHangedFileInterval"}, unknown)
	require.Equal(t, []string{"sendMessageThreadPoolNums", "pullMessageThreadPoolNums"}, notNeeded)
	require.Equal(t, 10912, c.HAListenPort)
	require.NoError(t, c.Validate())

	require.Equal(t, "broker-a", c.BrokerName)
	require.Equal(t, []string{"10.0.0.1:9876", "10.0.0.2:9876"}, c.NamesrvAddrs())
	require.Equal(t, int64(1<<30), c.MappedFileSizeCommitLog, "legacy alias mapedFileSizeCommitLog")
	require.Equal(t, int64(300000), c.MappedFileSizeConsumeQueue)
	require.Equal(t, 120*time.Second, c.DestroyMappedFileIntervalForcibly)
	require.Equal(t, 48*time.Hour, c.FileReservedTime, "fileReservedTime is in hours")
	require.Equal(t, 10*time.Second, c.FlushCommitLogThoroughInterval, "milliseconds")
	require.Equal(t, 88, c.DiskMaxUsedSpaceRatio)
	require.True(t, c.WarmMappedFileEnable)
	require.False(t, c.CheckTransactionMessage)
	require.Equal(t, "/data/rocketmq/store/commitlog", c.StorePathCommitLog)

	v, ok := c.Get("fileReservedTime")
	require.True(t, ok)
	require.Equal(t, "48", v)
}

func TestConfigBadValuesNameTheKey(t *testing.T) {
	c := DefaultConfig()
	_, err := c.Set("listenPort", "ten", 3)
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "listenPort")
	_, err = c.Set("autoCreateTopicEnable", "yes please", 4)
	require.ErrorContains(t, err, "autoCreateTopicEnable")

	for _, tc := range []struct{ key, value, want string }{
		{"flushDiskType", "SOMETIMES", "flushDiskType"},
		{"brokerRole", "BACKUP", "brokerRole"},
		{"brokerRole", "SLAVE", "brokerId"}, // with the default brokerId 0
		{"flushBackend", "carrier-pigeon", "flushBackend"},
		{"netEngine", "tokio", "netEngine"},
		{"maxMessageSize", "0", "maxMessageSize"},
		{"messageDelayLevel", "1s 5x", "messageDelayLevel"},
		{"diskMaxUsedSpaceRatio", "99", "diskMaxUsedSpaceRatio"},
		{"requestBudgetBytes", "0", "requestBudgetBytes"},
	} {
		c := DefaultConfig()
		_, err := c.Set(tc.key, tc.value, 1)
		require.NoError(t, err)
		err = c.Validate()
		require.ErrorIs(t, err, ErrConfig, tc.key)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestDefaultConfigValidAndComplete(t *testing.T) {
	c := DefaultConfig()
	require.NoError(t, c.Validate())
	seen := map[string]bool{}
	for _, name := range PropertyNames() {
		require.NotEmpty(t, name)
		require.False(t, seen[name], "duplicate key %s", name)
		seen[name] = true
		_, ok := c.Get(name)
		require.True(t, ok, name)
	}
	// Every key DESIGN.md names is readable.
	for _, k := range []string{"brokerClusterName", "brokerName", "brokerId", "namesrvAddr", "listenPort",
		"storePathRootDir", "mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue", "flushDiskType",
		"transientStorePoolEnable", "transientStorePoolSize", "warmMapedFileEnable", "syncFlushTimeout",
		"maxMessageSize", "fileReservedTime", "deleteWhen", "diskMaxUsedSpaceRatio", "autoCreateTopicEnable",
		"defaultTopicQueueNums", "osPageCacheBusyTimeOutMills", "flushBackend", "netEngine", "netEventLoops",
		"metricsAddr", "namesrvEmbedded", "namesrvListenPort", "aclFile"} {
		require.True(t, seen[k], k)
	}
	levels, err := ParseDelayLevels(c.MessageDelayLevel)
	require.NoError(t, err)
	require.Len(t, levels, 18)
	require.Equal(t, 5*time.Second, levels[1])
	require.Equal(t, 2*time.Hour, levels[17])
}

// TestCleanFileForciblyEnableKey: RocketMQ's key reaches the store; its default is false here (true in
// RocketMQ): unexpired messages are deleted on a nearly full disk only when an operator says so.
func TestCleanFileForciblyEnableKey(t *testing.T) {
	c := DefaultConfig()
	require.False(t, c.CleanFileForciblyEnable)
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	sc, err := storeConfig(&c, host)
	require.NoError(t, err)
	require.False(t, sc.CleanFileForciblyEnable)
	w, err := c.Set("cleanFileForciblyEnable", "true", 1)
	require.NoError(t, err)
	require.Nil(t, w, "a key ringmq uses")
	sc, err = storeConfig(&c, host)
	require.NoError(t, err)
	require.True(t, sc.CleanFileForciblyEnable)
}

func TestConfigTLSKeys(t *testing.T) {
	for _, tc := range []struct {
		set  map[string]string
		mode string // EffectiveTLSMode; "" when Validate must fail
		key  string // the key the error names
	}{
		{map[string]string{}, "disabled", ""},
		{map[string]string{"tlsEnable": "true", "tlsCertFile": "c.pem", "tlsKeyFile": "k.pem"}, "enforcing", ""},
		{map[string]string{"tlsServerMode": "permissive", "tlsCertFile": "c.pem", "tlsKeyFile": "k.pem"}, "permissive", ""},
		{map[string]string{"tlsEnable": "true", "tlsServerMode": "permissive", "tlsCertFile": "c.pem", "tlsKeyFile": "k.pem"}, "permissive", ""},
		{map[string]string{"tlsServerMode": "disabled"}, "disabled", ""},
		{map[string]string{"tlsEnable": "true", "tlsServerMode": "disabled"}, "", "tlsServerMode"},
		{map[string]string{"tlsServerMode": "sometimes"}, "", "tlsServerMode"},
		{map[string]string{"tlsEnable": "true"}, "", "tlsCertFile"},
		{map[string]string{"tlsServerMode": "enforcing", "tlsCertFile": "c.pem"}, "", "tlsKeyFile"},
	} {
		c := DefaultConfig()
		for k, v := range tc.set {
			w, err := c.Set(k, v, 1)
			require.NoError(t, err, k)
			require.Nil(t, w, k)
		}
		err := c.Validate()
		if tc.mode == "" {
			require.ErrorIs(t, err, ErrConfig, tc.set)
			require.ErrorContains(t, err, tc.key, tc.set)
			continue
		}
		require.NoError(t, err, tc.set)
		require.Equal(t, tc.mode, c.EffectiveTLSMode(), tc.set)
	}
}

// TestWarmKeysReachTheStore: the warming keys (RocketMQ's spellings, old and new) land in the store's
// configuration, and a bad page count is refused naming the key.
func TestWarmKeysReachTheStore(t *testing.T) {
	c := DefaultConfig()
	sc, err := storeConfig(&c, netipLoopback())
	require.NoError(t, err)
	require.False(t, sc.WarmMappedFileEnable)
	require.Equal(t, 4096, sc.FlushLeastPagesWhenWarmMappedFile)
	require.False(t, sc.WarmMappedFileMlock)

	for i, kv := range [][2]string{{"warmMappedFileEnable", "true"}, {"flushLeastPagesWhenWarmMapedFile", "1024"},
		{"warmMappedFileMlock", "true"}} {
		_, err := c.Set(kv[0], kv[1], i+1)
		require.NoError(t, err, kv[0])
	}
	sc, err = storeConfig(&c, netipLoopback())
	require.NoError(t, err)
	require.True(t, sc.WarmMappedFileEnable)
	require.Equal(t, 1024, sc.FlushLeastPagesWhenWarmMappedFile)
	require.True(t, sc.WarmMappedFileMlock)
	require.NoError(t, sc.Validate())

	_, err = c.Set("flushLeastPagesWhenWarmMappedFile", "0", 9)
	require.NoError(t, err)
	_, err = storeConfig(&c, netipLoopback())
	require.ErrorContains(t, err, "flushLeastPagesWhenWarmMapedFile")
}

// TestRequestBudgetReachesTheServer: requestBudgetBytes (default 64 MiB) becomes the remoting
// server's request budget, and --help says what it does.
func TestRequestBudgetReachesTheServer(t *testing.T) {
	c := DefaultConfig()
	nc, err := serverConfig(&c, "127.0.0.1", nil)
	require.NoError(t, err)
	require.EqualValues(t, 64<<20, nc.RequestBudgetBytes)
	_, err = c.Set("requestBudgetBytes", "33554432", 1)
	require.NoError(t, err)
	nc, err = serverConfig(&c, "127.0.0.1", nil)
	require.NoError(t, err)
	require.EqualValues(t, 32<<20, nc.RequestBudgetBytes)
	require.NoError(t, nc.Validate())
	require.Contains(t, PropertyHelp("requestBudgetBytes"), "64 KiB")
	require.Empty(t, PropertyHelp("brokerName"))
}
