package broker

import (
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
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
	var ignored, notNeeded []string
	for i, kv := range productionConf {
		w, err := c.Set(kv[0], kv[1], i+1)
		require.NoError(t, err, kv[0])
		if w != nil {
			if w.Ignored {
				ignored = append(ignored, w.Key)
			} else {
				notNeeded = append(notNeeded, w.Key)
			}
		}
	}
	require.Equal(t, []string{"redeleteHangedFileInterval"}, ignored)
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

	for _, tc := range []struct {
		key, value, want string
		enum             bool // refused when the key is read (Set), not by Validate
	}{
		{"flushDiskType", "SOMETIMES", "flushDiskType", true},
		{"brokerRole", "BACKUP", "brokerRole", true},
		{"brokerRole", "SLAVE", "brokerId", false}, // with the default brokerId 0
		{"flushBackend", "carrier-pigeon", "flushBackend", true},
		{"netEngine", "tokio", "netEngine", true},
		{"maxMessageSize", "0", "maxMessageSize", false},
		{"messageDelayLevel", "1s 5x", "messageDelayLevel", false},
		{"diskMaxUsedSpaceRatio", "99", "diskMaxUsedSpaceRatio", false},
		{"requestBudgetBytes", "0", "requestBudgetBytes", false},
		{"brokerPermission", "7", `key brokerPermission = "7"; allowed: 0, 2 (write only), 4 (read only) or 6 (read and write)`, false},
	} {
		c := DefaultConfig()
		_, err := c.Set(tc.key, tc.value, 1)
		if !tc.enum {
			require.NoError(t, err)
			err = c.Validate()
		}
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
		var err error
		for k, v := range tc.set {
			var w *ConfigWarning
			w, err = c.Set(k, v, 1)
			if err != nil && tc.mode == "" {
				break // an enum value is refused when it is read
			}
			require.NoError(t, err, k)
			require.Nil(t, w, k)
		}
		if err == nil {
			err = c.Validate()
		}
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
	// Every key says what it means (issue 15 item 4), RocketMQ's own keys too.
	require.Contains(t, PropertyHelp("brokerName"), "master and its slaves")
}

// TestEnumKeysParsedWhenRead: every enum key is parsed when it is read (Set): a value that is not one
// of its spellings is refused naming the key, the value and every allowed value, and is not applied;
// Get prints each value as RocketMQ (or ringmq) spells it.
func TestEnumKeysParsedWhenRead(t *testing.T) {
	for key, allowed := range map[string][]string{
		"flushDiskType": {"ASYNC_FLUSH", "SYNC_FLUSH"},
		"brokerRole":    {"ASYNC_MASTER", "SYNC_MASTER", "SLAVE"},
		"flushBackend":  {"iouring", "msync", "fdatasync"},
		"netEngine":     {"gnet", "std"},
		"tlsServerMode": {"disabled", "permissive", "enforcing"},
	} {
		c := DefaultConfig()
		before, _ := c.Get(key)
		_, err := c.Set(key, "sync_flush", 7)
		require.ErrorIs(t, err, ErrConfig, key)
		require.ErrorContains(t, err, "key "+key+` = "sync_flush"; allowed: `, key)
		for _, v := range allowed {
			require.ErrorContains(t, err, v, key)
		}
		after, _ := c.Get(key)
		require.Equal(t, before, after, "%s: a refused value leaves the key as it was", key)
		require.Contains(t, PropertyUsage(key), "(one of "+strings.Join(allowed, ", ")+")", key)

		for _, v := range allowed {
			w, err := c.Set(key, " "+v+" ", 1)
			require.NoError(t, err, key)
			require.Nil(t, w, key)
			got, _ := c.Get(key)
			require.Equal(t, v, got, key)
		}
		if strings.ToLower(allowed[0]) != allowed[0] {
			_, err = c.Set(key, strings.ToLower(allowed[0]), 1)
			require.ErrorContains(t, err, key, "spelled exactly, as RocketMQ's valueOf reads it")
		}
	}
	c := DefaultConfig()
	require.Equal(t, store.AsyncFlush, c.FlushDiskType)
	require.Equal(t, RoleAsyncMaster, c.BrokerRole)
	require.Equal(t, store.FlushBackend(0), c.FlushBackend, "empty: picked by append mode")
	require.Equal(t, netio.NetEngineGnet, c.NetEngine)
	require.Equal(t, netio.TLSModeUnset, c.TLSServerMode)
	for key, value := range map[string]string{"flushDiskType": "SYNC_FLUSH", "brokerRole": "SYNC_MASTER",
		"flushBackend": "fdatasync", "netEngine": "std", "tlsServerMode": "permissive"} {
		_, err := c.Set(key, value, 1)
		require.NoError(t, err)
	}
	require.Equal(t, store.SyncFlush, c.FlushDiskType)
	require.True(t, c.IsSyncMaster())
	require.Equal(t, "fdatasync", c.FlushBackend.String())
	require.Equal(t, netio.NetEngineStd, c.NetEngine)
	require.Equal(t, "permissive", c.EffectiveTLSMode())
	for _, key := range []string{"flushBackend", "tlsServerMode"} {
		_, err := c.Set(key, "", 1)
		require.NoError(t, err, "%s: empty is its default", key)
		v, _ := c.Get(key)
		require.Empty(t, v, key)
	}
}

// TestEveryKeyHasHelp: --help says what each key means; durations give their unit.
func TestEveryKeyHasHelp(t *testing.T) {
	for _, key := range PropertyNames() {
		require.NotEmpty(t, PropertyHelp(key), key)
	}
	require.Equal(t, "CommitLog files older than this are deleted at deleteWhen (hours) (allowed: 1 or more)", PropertyUsage("fileReservedTime"))
	require.Contains(t, PropertyUsage("syncFlushTimeout"), "FLUSH_DISK_TIMEOUT (ms)")
	require.Empty(t, PropertyUsage("noSuchKey"))
}

// TestStoreKeysReachTheOpenedStore: the store's keys, set through broker.Config (legacy spellings
// included), are the configuration the broker opens its store with; the store's settings no key sets
// are derived: the store host from brokerIP1:listenPort.
func TestStoreKeysReachTheOpenedStore(t *testing.T) {
	commitLogDir := filepath.Join(t.TempDir(), "cl")
	tb := startTestBroker(t, func(c *Config) {
		for _, kv := range [][2]string{{"mapedFileSizeCommitLog", "1048576"}, {"maxMessageSize", "65536"},
			{"storePathCommitLog", commitLogDir}, {"flushDiskType", "SYNC_FLUSH"}} {
			w, err := c.Set(kv[0], kv[1], 1)
			require.NoError(t, err, kv[0])
			require.Nil(t, w, kv[0])
		}
	})
	require.EqualValues(t, 1<<20, tb.b.store.FileSize(), "mappedFileSizeCommitLog")
	require.DirExists(t, commitLogDir, "storePathCommitLog")
	require.NoDirExists(t, filepath.Join(tb.cfg.StorePathRootDir, "commitlog"))
	require.True(t, tb.b.send.Settings().SyncFlush, "flushDiskType")

	c := tb.b.Config()
	sc, err := storeConfig(&c, netipLoopback())
	require.NoError(t, err)
	require.Equal(t, netipLoopback(), sc.StoreHost)
	require.False(t, sc.Slave)
	c.BrokerRole, c.BrokerID = RoleSlave, 1
	sc, err = storeConfig(&c, netipLoopback())
	require.NoError(t, err)
	require.True(t, sc.Slave, "brokerRole=SLAVE")
}

// TestNetioKeysAreNetios: the remoting server's keys are netio.ServerSettings embedded (their
// defaults written once, in netio), read from broker.conf like any key and carried onto the
// server's netio.Config.
func TestNetioKeysAreNetios(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, netio.DefaultServerSettings(), c.ServerSettings)
	for key, value := range map[string]string{"netEngine": "std", "netEventLoops": "3", "maxConnections": "7",
		"requestBudgetBytes": "1048576"} {
		_, err := c.Set(key, value, 1)
		require.NoError(t, err)
	}
	nc, err := serverConfig(&c, "127.0.0.1", nil)
	require.NoError(t, err)
	require.Equal(t, "std", nc.Engine)
	require.Equal(t, 3, nc.EventLoops)
	require.Equal(t, 7, nc.MaxConnections)
	require.Equal(t, int64(1<<20), nc.RequestBudgetBytes)
	require.Equal(t, "127.0.0.1:10911", nc.Addr)

	_, err = c.Set("maxConnections", "-1", 1)
	require.NoError(t, err)
	require.ErrorContains(t, c.Validate(), "maxConnections")
}

// TestEveryKeyInAHelpGroup: --help lists each key under one of KeyGroups.
func TestEveryKeyInAHelpGroup(t *testing.T) {
	for _, key := range PropertyNames() {
		require.Contains(t, KeyGroups, PropertyGroup(key), key)
	}
	require.Equal(t, "flush", PropertyGroup("flushDiskType"))
	require.Equal(t, "logging", PropertyGroup("logFile"))
	require.Equal(t, "HA", PropertyGroup("haTransferBatchSize"))
}

// TestRefusedFeatureKeys: a key switching on a RocketMQ feature ringmq lacks is an error naming
// the key, the value, the feature and the value that is accepted; the off value is accepted
// without a warning.
func TestRefusedFeatureKeys(t *testing.T) {
	c := DefaultConfig()
	for key, value := range map[string]string{"enableDLegerCommitLog": "true", "enableSlaveActingMaster": "TRUE",
		"filterServerNums": "2", "storeType": "defaultRocksDB", "messageStorePlugIn": "tiered", "enableLmq": "yes",
		"filterSupportRetry": "true"} {
		w, err := c.Set(key, value, 3)
		require.Nil(t, w, key)
		require.ErrorIs(t, err, ErrConfig, key)
		var ve *conf.ValueError
		require.ErrorAs(t, err, &ve, key)
		require.Equal(t, key, ve.Key)
		require.Equal(t, value, ve.Value)
		require.Contains(t, ve.Problem, "ringmq does not implement "+RefusedKeys[key].Feature)
		require.Equal(t, strconv.Quote(RefusedKeys[key].Off)+" or no such line", ve.Allowed)
	}
	_, err := c.Set("enableDLegerCommitLog", "true", 3)
	require.EqualError(t, err, `broker: config: key enableDLegerCommitLog = "true": ringmq does not implement the DLedger `+
		`(Raft) CommitLog; ringmq replicates master to slave (brokerRole); allowed: "false" or no such line`)
	for key, value := range map[string]string{"enableDLegerCommitLog": "false", "enableSlaveActingMaster": "False",
		"filterServerNums": "0", "storeType": "default", "messageStorePlugIn": "", "timerWheelEnable": " false "} {
		w, err := c.Set(key, value, 3)
		require.NoError(t, err, key)
		require.Nil(t, w, key)
	}
}

// TestUnknownKeyIsAnError: a key neither ringmq nor Apache RocketMQ 4.x reads stops the start
// (an error wrapping ErrConfig and conf.ErrUnknownKey) naming the key and the nearest known key,
// among ringmq's keys, the RocketMQ keys it accepts and RocketMQ's others; nothing is set.
func TestUnknownKeyIsAnError(t *testing.T) {
	for _, tc := range []struct{ key, suggestion string }{
		{"flushDiskTpye", "flushDiskType"},
		{"listenport", "listenPort"},
		{"sendMessageThreadPoolNum", "sendMessageThreadPoolNums"},
		{"enableDlegerCommitLog", "enableDLegerCommitLog"},
		{"transferMsgByHeep", "transferMsgByHeap"}, // a RocketMQ key ringmq ignores is a known key too
		{"mapedFileSizeCommitLg", "mapedFileSizeCommitLog"},
		{"fancyNewKey", ""},
	} {
		c := DefaultConfig()
		w, err := c.Set(tc.key, "SYNC_FLUSH", 5)
		require.Nil(t, w, tc.key)
		require.ErrorIs(t, err, ErrConfig, tc.key)
		require.ErrorIs(t, err, conf.ErrUnknownKey, tc.key)
		var unknown *conf.UnknownKeyError
		require.ErrorAs(t, err, &unknown, tc.key)
		require.Equal(t, conf.UnknownKeyError{Key: tc.key, Suggestion: tc.suggestion}, *unknown)
		require.Equal(t, DefaultConfig(), c, tc.key)
	}
	c := DefaultConfig()
	_, err := c.Set("flushDiskTpye", "SYNC_FLUSH", 2)
	require.EqualError(t, err, "broker: config: unknown key flushDiskTpye: neither ringmq nor Apache RocketMQ 4.x reads it; "+
		"did you mean flushDiskType?")
}

// TestRocketMQKeyRingmqIgnoresIsAWarning: every Apache RocketMQ 4.9 broker key ringmq does not read
// is accepted with a warning naming it (Ignored), whatever its value; the keys ringmq reads are
// not among them.
func TestRocketMQKeyRingmqIgnoresIsAWarning(t *testing.T) {
	ignored := RocketMQOnlyKeys()
	for _, key := range []string{"redeleteHangedFileInterval", "highSpeedMode", "commercialEnable", "transferMsgByHeap",
		"clientWorkerThreads", "serverSocketBacklog", "dLegerPeers"} {
		require.Contains(t, ignored, key)
	}
	for _, key := range []string{"flushDiskType", "listenPort", "brokerRole", "sendMessageThreadPoolNums",
		"enableDLegerCommitLog", "destroyMapedFileIntervalForcibly"} {
		require.NotContains(t, ignored, key)
	}
	for _, key := range ignored {
		c := DefaultConfig()
		w, err := c.Set(key, "anything", 7)
		require.NoError(t, err, key)
		require.Equal(t, &ConfigWarning{Key: key, Line: 7, Ignored: true, Message: ignoredMessage}, w)
	}
}

// TestValidateRunsTheStoreChecks: Validate (what mqbroker -p runs) refuses what opening the store
// would, naming the key, the value as the file writes it, and the allowed values.
func TestValidateRunsTheStoreChecks(t *testing.T) {
	for key, value := range map[string]string{"mappedFileSizeCommitLog": "8388609", "deleteWhen": "25",
		"flushIntervalCommitLog": "0", "logFileMaxSizeMB": "0", "brokerIP1": "10.0.0.300", "maxConnections": "-1"} {
		c := DefaultConfig()
		_, err := c.Set(key, value, 1)
		require.NoError(t, err, key)
		err = c.Validate()
		require.ErrorIs(t, err, ErrConfig, key)
		var ve *conf.ValueError
		require.ErrorAs(t, err, &ve, key)
		require.Equal(t, key, ve.Key)
		require.Equal(t, value, ve.Value, "%s: the value as written", key)
		require.NotEmpty(t, ve.Allowed, key)
	}
}
