package conf

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRocketMQKeyLists: the lists hold RocketMQ 4.9.8's keys as its setters spell them (the
// BrokerConfig, MessageStoreConfig, Netty and NamesrvConfig classes), sorted and without duplicates.
func TestRocketMQKeyLists(t *testing.T) {
	broker := RocketMQBrokerKeys()
	require.True(t, slices.IsSorted(broker))
	require.Len(t, broker, len(slices.Compact(slices.Clone(broker))))
	for _, key := range []string{"brokerClusterName", "flushDiskType", "brokerRole", "listenPort", "clientWorkerThreads",
		"destroyMapedFileIntervalForcibly", "warmMapedFileEnable", "dLegerPeers", "enableDLegerCommitLog",
		"sendMessageThreadPoolNums", "haListenPort", "transientStorePoolEnable", "rocketmqHome"} {
		require.Contains(t, broker, key)
	}
	for _, key := range []string{"flushDiskTpye", "mapedFileSizeCommitLog", "kvConfigPath", "metricsAddr"} {
		require.NotContains(t, broker, key)
	}
	namesrv := RocketMQNamesrvKeys()
	require.True(t, slices.IsSorted(namesrv))
	require.Equal(t, []string{"clusterTest", "configBlackList", "configStorePath", "kvConfigPath", "listenPort",
		"orderMessageEnable", "productEnvName", "rocketmqHome", "serverAsyncSemaphoreValue", "serverCallbackExecutorThreads",
		"serverChannelMaxIdleTimeSeconds", "serverOnewaySemaphoreValue", "serverPooledByteBufAllocatorEnable",
		"serverSelectorThreads", "serverSocketBacklog", "serverSocketRcvBufSize", "serverSocketSndBufSize",
		"serverWorkerThreads", "useEpollNativeSelector", "writeBufferHighWaterMark", "writeBufferLowWaterMark"}, namesrv)
}

func TestVocabularyCheck(t *testing.T) {
	v := Vocabulary{Own: []string{"listenPort", "flushDiskType", "netEngine"}, RocketMQ: []string{"listenPort", "highSpeedMode"}}
	for _, tc := range []struct {
		key        string
		kind       KeyKind
		suggestion string
	}{
		{"listenPort", KeyOwn, ""},
		{"netEngine", KeyOwn, ""},
		{"highSpeedMode", KeyRocketMQOnly, ""},
		{"flushDiskTpye", KeyUnknown, "flushDiskType"},
		{"highSpeedMod", KeyUnknown, "highSpeedMode"},
		{"netengine", KeyUnknown, "netEngine"},
		{"somethingElse", KeyUnknown, ""},
	} {
		kind, err := v.Check(tc.key)
		require.Equal(t, tc.kind, kind, tc.key)
		if tc.kind != KeyUnknown {
			require.NoError(t, err, tc.key)
			continue
		}
		require.ErrorIs(t, err, ErrUnknownKey)
		require.Equal(t, &UnknownKeyError{Key: tc.key, Suggestion: tc.suggestion}, err)
	}
	_, err := v.Check("flushDiskTpye")
	require.EqualError(t, err, "unknown key flushDiskTpye: neither ringmq nor Apache RocketMQ 4.x reads it; did you mean flushDiskType?")
	_, err = v.Check("zzz")
	require.EqualError(t, err, "unknown key zzz: neither ringmq nor Apache RocketMQ 4.x reads it")
}
