package broker

import (
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/ringmq/ringmq/internal/conf"
)

// GET_BROKER_CONFIG (mqadmin getBrokerConfig, the Dashboard's broker config page) shows every key
// the broker reads: ringmq's own keys with their values, then the Apache RocketMQ 4.9.8 keys
// ringmq accepts without a setting of its own (NotNeededKeys, RefusedKeys at their off value,
// the ones it ignores with a warning) with the value the configuration gave them, else RocketMQ's
// default, as a Java broker lists its BrokerConfig, NettyServerConfig, NettyClientConfig and
// MessageStoreConfig fields. A key whose Java default is null is left out, as Java leaves it out.

// rocketMQDefaults are RocketMQ 4.9.8's defaults of the keys ringmq has no setting for, by the
// name Java lists them under (its field names: isEnableBatchPush for enableBatchPush). Those that
// depend on the host (cores, ROCKETMQ_HOME) are rocketMQHostDefaults'.
var rocketMQDefaults = map[string]string{
	"adminBrokerThreadPoolNums": "16", "autoDeleteUnusedStats": "false", "bitMapLengthConsumeQueueExt": "64",
	"channelNotActiveInterval": "60000", "clientAsyncSemaphoreValue": "65535", "clientChannelMaxIdleTimeSeconds": "120",
	"clientCloseSocketIfTimeout": "true", "clientManageThreadPoolNums": "32",
	"clientManagerThreadPoolQueueCapacity": "1000000", "clientOnewaySemaphoreValue": "65535",
	"clientPooledByteBufAllocatorEnable": "false", "clientSocketRcvBufSize": "0", "clientSocketSndBufSize": "0",
	"clientWorkerThreads": "4", "commercialBaseCount": "1", "commercialBigCount": "1", "commercialEnable": "true",
	"commercialTimerCount": "1", "commercialTransCount": "1", "compressedRegister": "false",
	"configBlackList": "configBlackList;brokerConfigPath", "connectTimeoutMillis": "3000",
	"consumerFallbehindThreshold": "17179869184", "consumerManageThreadPoolNums": "32",
	"consumerManagerThreadPoolQueueCapacity": "1000000", "debugLockEnable": "false",
	"deleteCommitLogFilesInterval": "100", "deleteConsumeQueueFilesInterval": "100",
	"disableConsumeIfConsumerReadSlowly": "false", "diskFallRecorded": "true", "duplicationEnable": "false",
	"isEnableBatchPush": "false", "enableCalcFilterBitMap": "false", "enableConsumeQueueExt": "false",
	"enableDLegerCommitLog": "false", "enableDetailStat": "true", "enableLmq": "false", "enableMultiDispatch": "false",
	"enableScheduleAsyncDeliver": "false", "enableScheduleMessageStats": "true",
	"endTransactionPoolQueueCapacity": "100000", "expectConsumerNumUseFilter": "32",
	"fastFailIfNoBufferInStorePool": "false", "fetchNamesrvAddrByAddressServer": "false",
	"filterDataCleanTimeSpan": "86400000", "filterServerNums": "0", "filterSupportRetry": "false",
	"flushConsumerOffsetHistoryInterval": "60000", "flushDelayOffsetInterval": "10000", "forceRegister": "true",
	"heartbeatThreadPoolQueueCapacity": "50000", "highSpeedMode": "false", "isolateLogEnable": "false",
	"mappedFileSizeConsumeQueueExt": "50331648", "maxDelayTime": "40", "maxErrorRateOfBloomFilter": "20",
	"maxLmqConsumeQueueNum": "20000", "maxMsgsNumBatch": "64", "messageIndexSafe": "false", "messageStorePlugIn": "",
	"pullThreadPoolQueueCapacity": "100000", "putMsgIndexHightWater": "600000", "putThreadPoolQueueCapacity": "10000",
	"queryThreadPoolQueueCapacity": "20000", "redeleteHangedFileInterval": "120000", "regionId": "DefaultRegion",
	"replyThreadPoolQueueCapacity": "10000", "scheduleAsyncDeliverMaxPendingLimit": "2000",
	"scheduleAsyncDeliverMaxResendNum2Blocked": "3", "sendThreadPoolQueueCapacity": "10000",
	"serverAsyncSemaphoreValue": "64", "serverCallbackExecutorThreads": "0", "serverChannelMaxIdleTimeSeconds": "120",
	"serverOnewaySemaphoreValue": "256", "serverPooledByteBufAllocatorEnable": "true", "serverSelectorThreads": "3",
	"serverSocketBacklog": "1024", "serverSocketRcvBufSize": "0", "serverSocketSndBufSize": "0",
	"serverWorkerThreads": "8", "startAcceptSendRequestTimeStamp": "0", "storeReplyMessageEnable": "true",
	"traceOn": "true", "transferMsgByHeap": "true", "useEpollNativeSelector": "false", "useTLS": "false",
	"waitTimeMillsInHeartbeatQueue": "31000", "waitTimeMillsInTransactionQueue": "3000",
	"writeBufferHighWaterMark": "0", "writeBufferLowWaterMark": "0",
}

// rocketMQHostDefaults are the RocketMQ defaults computed from the host: the thread pools sized by
// the cores (Java's availableProcessors), rocketmqHome from ROCKETMQ_HOME (left out when unset).
func rocketMQHostDefaults() map[string]string {
	cores := runtime.NumCPU()
	send := min(cores, 4)
	d := map[string]string{
		"clientCallbackExecutorThreads":     strconv.Itoa(cores),
		"endTransactionThreadPoolNums":      strconv.Itoa(max(8+cores*2, send*4)),
		"heartbeatThreadPoolNums":           strconv.Itoa(min(32, cores)),
		"processReplyMessageThreadPoolNums": strconv.Itoa(16 + cores*2),
		"pullMessageThreadPoolNums":         strconv.Itoa(16 + cores*2),
		"putMessageFutureThreadPoolNums":    strconv.Itoa(min(cores, 4)),
		"queryMessageThreadPoolNums":        strconv.Itoa(8 + cores),
		"sendMessageThreadPoolNums":         strconv.Itoa(send),
	}
	if home := os.Getenv("ROCKETMQ_HOME"); home != "" {
		d["rocketmqHome"] = home
	}
	return d
}

// javaFieldNames are the keys RocketMQ lists under another name than the one it reads.
var javaFieldNames = map[string]string{"enableBatchPush": "isEnableBatchPush"}

// rocketMQOnlyKeys are the RocketMQ 4.9.8 broker keys ringmq has no setting of its own for, sorted
// (the legacy spellings of its own keys are not among them).
var rocketMQOnlyKeys = sync.OnceValue(func() []string {
	own := PropertyNames()
	var out []string
	for _, k := range conf.RocketMQBrokerKeys() {
		if _, alias := LegacyAliases[k]; !alias && !slices.Contains(own, k) {
			out = append(out, k)
		}
	}
	return out
})

// allProperties yields every key the broker reads with its value, in GET_BROKER_CONFIG's order:
// ringmq's keys, then RocketMQ's keys ringmq has no setting for (see above), then the legacy
// spellings RocketMQ still lists (destroyMapedFileIntervalForcibly) with their key's value.
func (c *Config) allProperties(yield func(key, value string) bool) {
	for _, key := range PropertyNames() {
		v, _ := c.Get(key)
		if !yield(key, v) {
			return
		}
	}
	host := rocketMQHostDefaults()
	for _, key := range rocketMQOnlyKeys() {
		name := key
		if n, ok := javaFieldNames[key]; ok {
			name = n
		}
		v, ok := c.rocketMQValues[key]
		if !ok {
			v, ok = rocketMQDefaults[name]
		}
		if !ok {
			v, ok = host[name]
		}
		if ok && !yield(name, v) {
			return
		}
	}
	for _, legacy := range slices.Sorted(maps.Keys(LegacyAliases)) {
		if !slices.Contains(conf.RocketMQBrokerKeys(), legacy) {
			continue
		}
		v, _ := c.Get(LegacyAliases[legacy])
		if !yield(legacy, v) {
			return
		}
	}
}

// keepRocketMQValue remembers the value the configuration gave a RocketMQ key ringmq has no
// setting for (GET_BROKER_CONFIG shows it). Copy on write: configs share the map.
func (c *Config) keepRocketMQValue(key, value string) {
	next := maps.Clone(c.rocketMQValues)
	if next == nil {
		next = map[string]string{}
	}
	next[key] = value
	c.rocketMQValues = next
}
