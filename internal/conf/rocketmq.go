package conf

import (
	"errors"
	"slices"
)

// The keys an Apache RocketMQ 4.9.8 server reads, by class, in one place: a key in neither these
// lists nor a binary's own keys is a typo that stops the start (UnknownKeyError), one only here is
// a RocketMQ key ringmq ignores (a warning naming it).
//
// RocketMQ reads a properties file with MixAll.properties2Object: a key sets the public setter of
// its name (setFlushDiskType for flushDiskType) whose parameter is a String, a boolean or a number,
// so the keys are exactly those setters, taken from the rocketmq-all-4.9.8 sources (mqbroker:
// BrokerConfig, NettyServerConfig, NettyClientConfig, MessageStoreConfig; mqnamesrv: NamesrvConfig,
// NettyServerConfig). MessageStoreConfig's brokerRole and flushDiskType also have enum setters;
// its dLeger* setters keep a lower-case d.
var (
	rocketMQBrokerConfigKeys = []string{
		"aclEnable", "adminBrokerThreadPoolNums", "autoCreateSubscriptionGroup", "autoCreateTopicEnable",
		"autoDeleteUnusedStats", "brokerClusterName", "brokerFastFailureEnable", "brokerIP1", "brokerIP2",
		"brokerId", "brokerName", "brokerPermission", "brokerTopicEnable", "clientManageThreadPoolNums",
		"clientManagerThreadPoolQueueCapacity", "clusterTopicEnable", "commercialBaseCount",
		"commercialBigCount", "commercialEnable", "commercialTimerCount", "commercialTransCount",
		"compressedRegister", "configBlackList", "consumerFallbehindThreshold", "consumerManageThreadPoolNums",
		"consumerManagerThreadPoolQueueCapacity", "defaultTopicQueueNums",
		"disableConsumeIfConsumerReadSlowly", "enableCalcFilterBitMap", "enableDetailStat",
		"enablePropertyFilter", "endTransactionPoolQueueCapacity", "endTransactionThreadPoolNums",
		"expectConsumerNumUseFilter", "fetchNamesrvAddrByAddressServer", "filterDataCleanTimeSpan",
		"filterServerNums", "filterSupportRetry", "flushConsumerOffsetHistoryInterval",
		"flushConsumerOffsetInterval", "forceRegister", "heartbeatThreadPoolNums",
		"heartbeatThreadPoolQueueCapacity", "highSpeedMode", "isolateLogEnable", "longPollingEnable",
		"maxDelayTime", "maxErrorRateOfBloomFilter", "messageStorePlugIn", "msgTraceTopicName", "namesrvAddr",
		"notifyConsumerIdsChangedEnable", "processReplyMessageThreadPoolNums", "pullMessageThreadPoolNums",
		"pullThreadPoolQueueCapacity", "putMessageFutureThreadPoolNums", "putThreadPoolQueueCapacity",
		"queryMessageThreadPoolNums", "queryThreadPoolQueueCapacity", "regionId", "registerBrokerTimeoutMills",
		"registerNameServerPeriod", "rejectTransactionMessage", "replyThreadPoolQueueCapacity", "rocketmqHome",
		"sendMessageThreadPoolNums", "sendThreadPoolQueueCapacity", "shortPollingTimeMills", "slaveReadEnable",
		"startAcceptSendRequestTimeStamp", "storeReplyMessageEnable", "traceOn", "traceTopicEnable",
		"transactionCheckInterval", "transactionCheckMax", "transactionTimeOut", "transferMsgByHeap",
		"waitTimeMillsInHeartbeatQueue", "waitTimeMillsInPullQueue", "waitTimeMillsInSendQueue",
		"waitTimeMillsInTransactionQueue",
	}
	rocketMQMessageStoreConfigKeys = []string{
		"accessMessageInMemoryMaxRatio", "bitMapLengthConsumeQueueExt", "brokerRole", "checkCRCOnRecover",
		"cleanFileForciblyEnable", "cleanResourceInterval", "commitCommitLogLeastPages",
		"commitCommitLogThoroughInterval", "commitIntervalCommitLog", "debugLockEnable", "defaultQueryMaxNum",
		"deleteCommitLogFilesInterval", "deleteConsumeQueueFilesInterval", "deleteWhen",
		"destroyMapedFileIntervalForcibly", "diskFallRecorded", "diskMaxUsedSpaceRatio", "duplicationEnable",
		"enableBatchPush", "enableConsumeQueueExt", "enableDLegerCommitLog", "enableLmq",
		"enableMultiDispatch", "enableScheduleAsyncDeliver", "enableScheduleMessageStats",
		"fastFailIfNoBufferInStorePool", "fileReservedTime", "flushCommitLogLeastPages",
		"flushCommitLogThoroughInterval", "flushCommitLogTimed", "flushConsumeQueueLeastPages",
		"flushConsumeQueueThoroughInterval", "flushDelayOffsetInterval", "flushDiskType",
		"flushIntervalCommitLog", "flushIntervalConsumeQueue", "flushLeastPagesWhenWarmMapedFile",
		"haHousekeepingInterval", "haListenPort", "haMasterAddress", "haSendHeartbeatInterval",
		"haSlaveFallbehindMax", "haTransferBatchSize", "mappedFileSizeCommitLog", "mappedFileSizeConsumeQueue",
		"mappedFileSizeConsumeQueueExt", "maxHashSlotNum", "maxIndexNum", "maxLmqConsumeQueueNum",
		"maxMessageSize", "maxMsgsNumBatch", "maxTransferBytesOnMessageInDisk",
		"maxTransferBytesOnMessageInMemory", "maxTransferCountOnMessageInDisk",
		"maxTransferCountOnMessageInMemory", "messageDelayLevel", "messageIndexEnable", "messageIndexSafe",
		"offsetCheckInSlave", "osPageCacheBusyTimeOutMills", "preferredLeaderId", "putMsgIndexHightWater",
		"readOnlyCommitLogStorePaths", "redeleteHangedFileInterval", "scheduleAsyncDeliverMaxPendingLimit",
		"scheduleAsyncDeliverMaxResendNum2Blocked", "slaveTimeout", "storePathCommitLog",
		"storePathDLedgerCommitLog", "storePathRootDir", "syncFlushTimeout", "transientStorePoolEnable",
		"transientStorePoolSize", "useReentrantLockWhenPutMessage", "warmMapedFileEnable", "dLegerGroup",
		"dLegerPeers", "dLegerSelfId",
	}
	rocketMQNettyServerConfigKeys = []string{
		"listenPort", "serverAsyncSemaphoreValue", "serverCallbackExecutorThreads",
		"serverChannelMaxIdleTimeSeconds", "serverOnewaySemaphoreValue", "serverPooledByteBufAllocatorEnable",
		"serverSelectorThreads", "serverSocketBacklog", "serverSocketRcvBufSize", "serverSocketSndBufSize",
		"serverWorkerThreads", "useEpollNativeSelector", "writeBufferHighWaterMark", "writeBufferLowWaterMark",
	}
	rocketMQNettyClientConfigKeys = []string{
		"channelNotActiveInterval", "clientAsyncSemaphoreValue", "clientCallbackExecutorThreads",
		"clientChannelMaxIdleTimeSeconds", "clientCloseSocketIfTimeout", "clientOnewaySemaphoreValue",
		"clientPooledByteBufAllocatorEnable", "clientSocketRcvBufSize", "clientSocketSndBufSize",
		"clientWorkerThreads", "connectTimeoutMillis", "useTLS", "writeBufferHighWaterMark",
		"writeBufferLowWaterMark",
	}
	rocketMQNamesrvConfigKeys = []string{
		"clusterTest", "configBlackList", "configStorePath", "kvConfigPath", "orderMessageEnable",
		"productEnvName", "rocketmqHome",
	}
)

// RocketMQBrokerKeys lists the keys an Apache RocketMQ 4.9.8 broker reads (BrokerConfig,
// NettyServerConfig, NettyClientConfig, MessageStoreConfig), sorted, without duplicates.
func RocketMQBrokerKeys() []string {
	return sortedUnion(rocketMQBrokerConfigKeys, rocketMQNettyServerConfigKeys, rocketMQNettyClientConfigKeys,
		rocketMQMessageStoreConfigKeys)
}

// RocketMQNamesrvKeys lists the keys an Apache RocketMQ 4.9.8 name server reads (NamesrvConfig,
// NettyServerConfig), sorted, without duplicates.
func RocketMQNamesrvKeys() []string {
	return sortedUnion(rocketMQNamesrvConfigKeys, rocketMQNettyServerConfigKeys)
}

func sortedUnion(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ErrUnknownKey is wrapped by UnknownKeyError.
var ErrUnknownKey = errors.New("conf: unknown key")

// UnknownKeyError is a key that neither ringmq nor Apache RocketMQ 4.x reads: most likely a
// misspelling, which must stop the start rather than leave the key's default in force (a
// misspelt flushDiskType would start an ASYNC_FLUSH broker). Where it was written (file and
// line, or the flag) is the loader's to add.
type UnknownKeyError struct {
	Key        string
	Suggestion string // the nearest known key (Suggest), "" when none is near
}

func (e *UnknownKeyError) Error() string {
	s := "unknown key " + e.Key + ": neither ringmq nor Apache RocketMQ 4.x reads it"
	if e.Suggestion != "" {
		s += "; did you mean " + e.Suggestion + "?"
	}
	return s
}

func (e *UnknownKeyError) Unwrap() error { return ErrUnknownKey }

// Vocabulary is every key one binary knows: the keys it reads (Own, first: a suggestion prefers
// them), and the keys of the Apache RocketMQ server it replaces that it ignores or refuses
// (RocketMQ). Check sorts a key into one of three kinds.
type Vocabulary struct {
	Own      []string
	RocketMQ []string
}

// KeyKind is what Vocabulary.Check found a key to be.
type KeyKind int

const (
	// KeyOwn: a key the binary reads (or accepts on purpose).
	KeyOwn KeyKind = iota
	// KeyRocketMQOnly: an Apache RocketMQ key the binary does not read; worth a warning naming it.
	KeyRocketMQOnly
	// KeyUnknown: known to neither; Check returns an *UnknownKeyError.
	KeyUnknown
)

// Check says which kind key is; for an unknown key the error names the nearest known key.
func (v Vocabulary) Check(key string) (KeyKind, error) {
	switch {
	case slices.Contains(v.Own, key):
		return KeyOwn, nil
	case slices.Contains(v.RocketMQ, key):
		return KeyRocketMQOnly, nil
	}
	return KeyUnknown, &UnknownKeyError{Key: key, Suggestion: Suggest(key, append(append([]string(nil), v.Own...), v.RocketMQ...))}
}
