package codec

import "strconv"

// SerializeType is the header serialization of a remoting frame: the high byte of the
// header word (PROTOCOL.md §1.1).
type SerializeType byte

// Header serializations.
const (
	SerializeJSON     SerializeType = 0 // JSON text header (§1.2); what every client sends by default
	SerializeRocketMQ SerializeType = 1 // ROCKETMQ binary header (§1.3)
)

// String returns "JSON", "ROCKETMQ" or "SerializeType(n)".
func (t SerializeType) String() string {
	switch t {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return "SerializeType(" + strconv.Itoa(int(t)) + ")"
}

// LanguageCode is the sender's implementation language (Java enum LanguageCode). The JSON
// header carries it by name, the ROCKETMQ header as one byte (the ordinal).
type LanguageCode byte

// Language codes, in the Java enum's ordinal order (§1.2).
const (
	LanguageJava   LanguageCode = 0
	LanguageCPP    LanguageCode = 1
	LanguageDotNet LanguageCode = 2
	LanguagePython LanguageCode = 3
	LanguageDelphi LanguageCode = 4
	LanguageErlang LanguageCode = 5
	LanguageRuby   LanguageCode = 6
	LanguageOther  LanguageCode = 7
	LanguageHTTP   LanguageCode = 8
	LanguageGo     LanguageCode = 9
	LanguagePHP    LanguageCode = 10
	LanguageOMS    LanguageCode = 11
	LanguageRust   LanguageCode = 12
	LanguageNodeJS LanguageCode = 13
)

var languageNames = [...]string{
	LanguageJava:   "JAVA",
	LanguageCPP:    "CPP",
	LanguageDotNet: "DOTNET",
	LanguagePython: "PYTHON",
	LanguageDelphi: "DELPHI",
	LanguageErlang: "ERLANG",
	LanguageRuby:   "RUBY",
	LanguageOther:  "OTHER",
	LanguageHTTP:   "HTTP",
	LanguageGo:     "GO",
	LanguagePHP:    "PHP",
	LanguageOMS:    "OMS",
	LanguageRust:   "RUST",
	LanguageNodeJS: "NODE_JS",
}

// known reports whether l is one of the named enum values.
func (l LanguageCode) known() bool { return int(l) < len(languageNames) }

// String returns the Java enum name ("JAVA", "GO", ...) or "LanguageCode(n)".
func (l LanguageCode) String() string {
	if l.known() {
		return languageNames[l]
	}
	return "LanguageCode(" + strconv.Itoa(int(l)) + ")"
}

// ParseLanguageCode maps a Java enum name (exact, upper case) to its code.
func ParseLanguageCode(name string) (LanguageCode, bool) {
	for i, n := range languageNames {
		if n == name {
			return LanguageCode(i), true
		}
	}
	return 0, false
}

// RequestCode is the code of a request command (Java RequestCode). Responses carry a
// ResponseCode in the same header field.
type RequestCode int32

// ResponseCode is the code of a response command (Java ResponseCode and
// RemotingSysResponseCode).
type ResponseCode int32

// RequestCode constants (PROTOCOL.md §2.1), named after the Java constants.
const (
	RequestSendMessage                      RequestCode = 10     // SEND_MESSAGE
	RequestPullMessage                      RequestCode = 11     // PULL_MESSAGE
	RequestQueryMessage                     RequestCode = 12     // QUERY_MESSAGE
	RequestQueryConsumerOffset              RequestCode = 14     // QUERY_CONSUMER_OFFSET
	RequestUpdateConsumerOffset             RequestCode = 15     // UPDATE_CONSUMER_OFFSET
	RequestUpdateAndCreateTopic             RequestCode = 17     // UPDATE_AND_CREATE_TOPIC
	RequestUpdateAndCreateTopicList         RequestCode = 18     // UPDATE_AND_CREATE_TOPIC_LIST
	RequestGetAllTopicConfig                RequestCode = 21     // GET_ALL_TOPIC_CONFIG
	RequestGetTopicConfigList               RequestCode = 22     // GET_TOPIC_CONFIG_LIST
	RequestGetTopicNameList                 RequestCode = 23     // GET_TOPIC_NAME_LIST
	RequestUpdateBrokerConfig               RequestCode = 25     // UPDATE_BROKER_CONFIG
	RequestGetBrokerConfig                  RequestCode = 26     // GET_BROKER_CONFIG
	RequestGetBrokerRuntimeInfo             RequestCode = 28     // GET_BROKER_RUNTIME_INFO
	RequestSearchOffsetByTimestamp          RequestCode = 29     // SEARCH_OFFSET_BY_TIMESTAMP
	RequestGetMaxOffset                     RequestCode = 30     // GET_MAX_OFFSET
	RequestGetMinOffset                     RequestCode = 31     // GET_MIN_OFFSET
	RequestGetEarliestMsgStoretime          RequestCode = 32     // GET_EARLIEST_MSG_STORETIME
	RequestViewMessageByID                  RequestCode = 33     // VIEW_MESSAGE_BY_ID
	RequestHeartBeat                        RequestCode = 34     // HEART_BEAT
	RequestUnregisterClient                 RequestCode = 35     // UNREGISTER_CLIENT
	RequestConsumerSendMsgBack              RequestCode = 36     // CONSUMER_SEND_MSG_BACK
	RequestEndTransaction                   RequestCode = 37     // END_TRANSACTION
	RequestGetConsumerListByGroup           RequestCode = 38     // GET_CONSUMER_LIST_BY_GROUP
	RequestCheckTransactionState            RequestCode = 39     // CHECK_TRANSACTION_STATE
	RequestNotifyConsumerIdsChanged         RequestCode = 40     // NOTIFY_CONSUMER_IDS_CHANGED
	RequestLockBatchMQ                      RequestCode = 41     // LOCK_BATCH_MQ
	RequestUnlockBatchMQ                    RequestCode = 42     // UNLOCK_BATCH_MQ
	RequestGetAllConsumerOffset             RequestCode = 43     // GET_ALL_CONSUMER_OFFSET
	RequestGetAllDelayOffset                RequestCode = 45     // GET_ALL_DELAY_OFFSET
	RequestCheckClientConfig                RequestCode = 46     // CHECK_CLIENT_CONFIG
	RequestUpdateAndCreateACLConfig         RequestCode = 50     // UPDATE_AND_CREATE_ACL_CONFIG
	RequestDeleteACLConfig                  RequestCode = 51     // DELETE_ACL_CONFIG
	RequestGetBrokerClusterACLInfo          RequestCode = 52     // GET_BROKER_CLUSTER_ACL_INFO
	RequestUpdateGlobalWhiteAddrsConfig     RequestCode = 53     // UPDATE_GLOBAL_WHITE_ADDRS_CONFIG
	RequestPutKVConfig                      RequestCode = 100    // PUT_KV_CONFIG
	RequestGetKVConfig                      RequestCode = 101    // GET_KV_CONFIG
	RequestDeleteKVConfig                   RequestCode = 102    // DELETE_KV_CONFIG
	RequestRegisterBroker                   RequestCode = 103    // REGISTER_BROKER
	RequestUnregisterBroker                 RequestCode = 104    // UNREGISTER_BROKER
	RequestGetRouteInfoByTopic              RequestCode = 105    // GET_ROUTEINFO_BY_TOPIC
	RequestGetBrokerClusterInfo             RequestCode = 106    // GET_BROKER_CLUSTER_INFO
	RequestUpdateAndCreateSubscriptionGroup RequestCode = 200    // UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
	RequestGetAllSubscriptionGroupConfig    RequestCode = 201    // GET_ALL_SUBSCRIPTIONGROUP_CONFIG
	RequestGetTopicStatsInfo                RequestCode = 202    // GET_TOPIC_STATS_INFO
	RequestGetConsumerConnectionList        RequestCode = 203    // GET_CONSUMER_CONNECTION_LIST
	RequestGetProducerConnectionList        RequestCode = 204    // GET_PRODUCER_CONNECTION_LIST
	RequestWipeWritePermOfBroker            RequestCode = 205    // WIPE_WRITE_PERM_OF_BROKER
	RequestGetAllTopicListFromNameServer    RequestCode = 206    // GET_ALL_TOPIC_LIST_FROM_NAMESERVER
	RequestDeleteSubscriptionGroup          RequestCode = 207    // DELETE_SUBSCRIPTIONGROUP
	RequestGetConsumeStats                  RequestCode = 208    // GET_CONSUME_STATS
	RequestResetConsumerOffsetInBroker      RequestCode = 212    // RESET_CONSUMER_OFFSET_IN_BROKER
	RequestDeleteTopicInBroker              RequestCode = 215    // DELETE_TOPIC_IN_BROKER
	RequestDeleteTopicInNamesrv             RequestCode = 216    // DELETE_TOPIC_IN_NAMESRV
	RequestRegisterTopicInNamesrv           RequestCode = 217    // REGISTER_TOPIC_IN_NAMESRV
	RequestGetKVListByNamespace             RequestCode = 219    // GET_KVLIST_BY_NAMESPACE
	RequestResetConsumerClientOffset        RequestCode = 220    // RESET_CONSUMER_CLIENT_OFFSET
	RequestGetConsumerStatusFromClient      RequestCode = 221    // GET_CONSUMER_STATUS_FROM_CLIENT
	RequestInvokeBrokerToResetOffset        RequestCode = 222    // INVOKE_BROKER_TO_RESET_OFFSET
	RequestInvokeBrokerToGetConsumerStatus  RequestCode = 223    // INVOKE_BROKER_TO_GET_CONSUMER_STATUS
	RequestGetTopicsByCluster               RequestCode = 224    // GET_TOPICS_BY_CLUSTER
	RequestQueryTopicConsumeByWho           RequestCode = 300    // QUERY_TOPIC_CONSUME_BY_WHO
	RequestQueryConsumeTimeSpan             RequestCode = 303    // QUERY_CONSUME_TIME_SPAN
	RequestGetSystemTopicListFromNS         RequestCode = 304    // GET_SYSTEM_TOPIC_LIST_FROM_NS
	RequestGetSystemTopicListFromBroker     RequestCode = 305    // GET_SYSTEM_TOPIC_LIST_FROM_BROKER
	RequestCleanExpiredConsumeQueue         RequestCode = 306    // CLEAN_EXPIRED_CONSUMEQUEUE
	RequestGetConsumerRunningInfo           RequestCode = 307    // GET_CONSUMER_RUNNING_INFO
	RequestQueryCorrectionOffset            RequestCode = 308    // QUERY_CORRECTION_OFFSET
	RequestConsumeMessageDirectly           RequestCode = 309    // CONSUME_MESSAGE_DIRECTLY
	RequestSendMessageV2                    RequestCode = 310    // SEND_MESSAGE_V2
	RequestCloneGroupOffset                 RequestCode = 314    // CLONE_GROUP_OFFSET
	RequestViewBrokerStatsData              RequestCode = 315    // VIEW_BROKER_STATS_DATA
	RequestCleanUnusedTopic                 RequestCode = 316    // CLEAN_UNUSED_TOPIC
	RequestGetBrokerConsumeStats            RequestCode = 317    // GET_BROKER_CONSUME_STATS
	RequestUpdateNamesrvConfig              RequestCode = 318    // UPDATE_NAMESRV_CONFIG
	RequestGetNamesrvConfig                 RequestCode = 319    // GET_NAMESRV_CONFIG
	RequestSendBatchMessage                 RequestCode = 320    // SEND_BATCH_MESSAGE
	RequestQueryConsumeQueue                RequestCode = 321    // QUERY_CONSUME_QUEUE
	RequestQueryDataVersion                 RequestCode = 322    // QUERY_DATA_VERSION
	RequestResumeCheckHalfMessage           RequestCode = 323    // RESUME_CHECK_HALF_MESSAGE
	RequestSendReplyMessage                 RequestCode = 324    // SEND_REPLY_MESSAGE
	RequestSendReplyMessageV2               RequestCode = 325    // SEND_REPLY_MESSAGE_V2
	RequestPushReplyMessageToClient         RequestCode = 326    // PUSH_REPLY_MESSAGE_TO_CLIENT
	RequestAddWritePermOfBroker             RequestCode = 327    // ADD_WRITE_PERM_OF_BROKER
	RequestGetAllProducerInfo               RequestCode = 328    // GET_ALL_PRODUCER_INFO
	RequestDeleteExpiredCommitLog           RequestCode = 329    // DELETE_EXPIRED_COMMITLOG
	RequestGetTopicConfig                   RequestCode = 351    // GET_TOPIC_CONFIG
	RequestGetSubscriptionGroupConfig       RequestCode = 352    // GET_SUBSCRIPTIONGROUP_CONFIG
	RequestLitePullMessage                  RequestCode = 361    // LITE_PULL_MESSAGE
	RequestQueryAssignment                  RequestCode = 400    // QUERY_ASSIGNMENT
	RequestSetMessageRequestMode            RequestCode = 401    // SET_MESSAGE_REQUEST_MODE
	RequestBrokerHeartbeat                  RequestCode = 904    // BROKER_HEARTBEAT
	RequestControllerAlterSyncStateSet      RequestCode = 1001   // CONTROLLER_ALTER_SYNC_STATE_SET
	RequestControllerElectMaster            RequestCode = 1002   // CONTROLLER_ELECT_MASTER
	RequestControllerRegisterBroker         RequestCode = 1003   // CONTROLLER_REGISTER_BROKER
	RequestControllerGetReplicaInfo         RequestCode = 1004   // CONTROLLER_GET_REPLICA_INFO
	RequestControllerGetMetadataInfo        RequestCode = 1005   // CONTROLLER_GET_METADATA_INFO
	RequestControllerGetSyncStateData       RequestCode = 1006   // CONTROLLER_GET_SYNC_STATE_DATA
	RequestGetBrokerEpochCache              RequestCode = 1007   // GET_BROKER_EPOCH_CACHE
	RequestNotifyBrokerRoleChanged          RequestCode = 1008   // NOTIFY_BROKER_ROLE_CHANGED
	RequestUpdateControllerConfig           RequestCode = 1009   // UPDATE_CONTROLLER_CONFIG
	RequestGetControllerConfig              RequestCode = 1010   // GET_CONTROLLER_CONFIG
	RequestCleanBrokerData                  RequestCode = 1011   // CLEAN_BROKER_DATA
	RequestControllerGetNextBrokerID        RequestCode = 1012   // CONTROLLER_GET_NEXT_BROKER_ID
	RequestControllerApplyBrokerID          RequestCode = 1013   // CONTROLLER_APPLY_BROKER_ID
	RequestPopMessage                       RequestCode = 200050 // POP_MESSAGE
	RequestAckMessage                       RequestCode = 200051 // ACK_MESSAGE
	RequestPeekMessage                      RequestCode = 200052 // PEEK_MESSAGE
	RequestChangeMessageInvisibleTime       RequestCode = 200053 // CHANGE_MESSAGE_INVISIBLETIME
	RequestNotification                     RequestCode = 200054 // NOTIFICATION
	RequestPollingInfo                      RequestCode = 200055 // POLLING_INFO
	RequestBatchAckMessage                  RequestCode = 200151 // BATCH_ACK_MESSAGE
)

var requestCodeNames = map[RequestCode]string{
	RequestSendMessage:                      "SEND_MESSAGE",
	RequestPullMessage:                      "PULL_MESSAGE",
	RequestQueryMessage:                     "QUERY_MESSAGE",
	RequestQueryConsumerOffset:              "QUERY_CONSUMER_OFFSET",
	RequestUpdateConsumerOffset:             "UPDATE_CONSUMER_OFFSET",
	RequestUpdateAndCreateTopic:             "UPDATE_AND_CREATE_TOPIC",
	RequestUpdateAndCreateTopicList:         "UPDATE_AND_CREATE_TOPIC_LIST",
	RequestGetAllTopicConfig:                "GET_ALL_TOPIC_CONFIG",
	RequestGetTopicConfigList:               "GET_TOPIC_CONFIG_LIST",
	RequestGetTopicNameList:                 "GET_TOPIC_NAME_LIST",
	RequestUpdateBrokerConfig:               "UPDATE_BROKER_CONFIG",
	RequestGetBrokerConfig:                  "GET_BROKER_CONFIG",
	RequestGetBrokerRuntimeInfo:             "GET_BROKER_RUNTIME_INFO",
	RequestSearchOffsetByTimestamp:          "SEARCH_OFFSET_BY_TIMESTAMP",
	RequestGetMaxOffset:                     "GET_MAX_OFFSET",
	RequestGetMinOffset:                     "GET_MIN_OFFSET",
	RequestGetEarliestMsgStoretime:          "GET_EARLIEST_MSG_STORETIME",
	RequestViewMessageByID:                  "VIEW_MESSAGE_BY_ID",
	RequestHeartBeat:                        "HEART_BEAT",
	RequestUnregisterClient:                 "UNREGISTER_CLIENT",
	RequestConsumerSendMsgBack:              "CONSUMER_SEND_MSG_BACK",
	RequestEndTransaction:                   "END_TRANSACTION",
	RequestGetConsumerListByGroup:           "GET_CONSUMER_LIST_BY_GROUP",
	RequestCheckTransactionState:            "CHECK_TRANSACTION_STATE",
	RequestNotifyConsumerIdsChanged:         "NOTIFY_CONSUMER_IDS_CHANGED",
	RequestLockBatchMQ:                      "LOCK_BATCH_MQ",
	RequestUnlockBatchMQ:                    "UNLOCK_BATCH_MQ",
	RequestGetAllConsumerOffset:             "GET_ALL_CONSUMER_OFFSET",
	RequestGetAllDelayOffset:                "GET_ALL_DELAY_OFFSET",
	RequestCheckClientConfig:                "CHECK_CLIENT_CONFIG",
	RequestPutKVConfig:                      "PUT_KV_CONFIG",
	RequestGetKVConfig:                      "GET_KV_CONFIG",
	RequestDeleteKVConfig:                   "DELETE_KV_CONFIG",
	RequestRegisterBroker:                   "REGISTER_BROKER",
	RequestUnregisterBroker:                 "UNREGISTER_BROKER",
	RequestGetRouteInfoByTopic:              "GET_ROUTEINFO_BY_TOPIC",
	RequestGetBrokerClusterInfo:             "GET_BROKER_CLUSTER_INFO",
	RequestUpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	RequestGetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG",
	RequestGetTopicStatsInfo:                "GET_TOPIC_STATS_INFO",
	RequestGetConsumerConnectionList:        "GET_CONSUMER_CONNECTION_LIST",
	RequestGetProducerConnectionList:        "GET_PRODUCER_CONNECTION_LIST",
	RequestWipeWritePermOfBroker:            "WIPE_WRITE_PERM_OF_BROKER",
	RequestGetAllTopicListFromNameServer:    "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	RequestDeleteSubscriptionGroup:          "DELETE_SUBSCRIPTIONGROUP",
	RequestGetConsumeStats:                  "GET_CONSUME_STATS",
	RequestResetConsumerOffsetInBroker:      "RESET_CONSUMER_OFFSET_IN_BROKER",
	RequestDeleteTopicInBroker:              "DELETE_TOPIC_IN_BROKER",
	RequestDeleteTopicInNamesrv:             "DELETE_TOPIC_IN_NAMESRV",
	RequestRegisterTopicInNamesrv:           "REGISTER_TOPIC_IN_NAMESRV",
	RequestGetKVListByNamespace:             "GET_KVLIST_BY_NAMESPACE",
	RequestResetConsumerClientOffset:        "RESET_CONSUMER_CLIENT_OFFSET",
	RequestGetConsumerStatusFromClient:      "GET_CONSUMER_STATUS_FROM_CLIENT",
	RequestInvokeBrokerToResetOffset:        "INVOKE_BROKER_TO_RESET_OFFSET",
	RequestInvokeBrokerToGetConsumerStatus:  "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	RequestGetTopicsByCluster:               "GET_TOPICS_BY_CLUSTER",
	RequestQueryTopicConsumeByWho:           "QUERY_TOPIC_CONSUME_BY_WHO",
	RequestGetSystemTopicListFromNS:         "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	RequestGetConsumerRunningInfo:           "GET_CONSUMER_RUNNING_INFO",
	RequestConsumeMessageDirectly:           "CONSUME_MESSAGE_DIRECTLY",
	RequestSendMessageV2:                    "SEND_MESSAGE_V2",
	RequestGetBrokerConsumeStats:            "GET_BROKER_CONSUME_STATS",
	RequestUpdateNamesrvConfig:              "UPDATE_NAMESRV_CONFIG",
	RequestGetNamesrvConfig:                 "GET_NAMESRV_CONFIG",
	RequestSendBatchMessage:                 "SEND_BATCH_MESSAGE",
	RequestQueryDataVersion:                 "QUERY_DATA_VERSION",
	RequestSendReplyMessage:                 "SEND_REPLY_MESSAGE",
	RequestSendReplyMessageV2:               "SEND_REPLY_MESSAGE_V2",
	RequestPushReplyMessageToClient:         "PUSH_REPLY_MESSAGE_TO_CLIENT",
	RequestAddWritePermOfBroker:             "ADD_WRITE_PERM_OF_BROKER",
	RequestGetTopicConfig:                   "GET_TOPIC_CONFIG",
	RequestGetSubscriptionGroupConfig:       "GET_SUBSCRIPTIONGROUP_CONFIG",
	RequestLitePullMessage:                  "LITE_PULL_MESSAGE",
	RequestQueryAssignment:                  "QUERY_ASSIGNMENT",
	RequestSetMessageRequestMode:            "SET_MESSAGE_REQUEST_MODE",
	RequestBrokerHeartbeat:                  "BROKER_HEARTBEAT",
	RequestControllerAlterSyncStateSet:      "CONTROLLER_ALTER_SYNC_STATE_SET",
	RequestControllerElectMaster:            "CONTROLLER_ELECT_MASTER",
	RequestControllerRegisterBroker:         "CONTROLLER_REGISTER_BROKER",
	RequestControllerGetReplicaInfo:         "CONTROLLER_GET_REPLICA_INFO",
	RequestControllerGetMetadataInfo:        "CONTROLLER_GET_METADATA_INFO",
	RequestControllerGetSyncStateData:       "CONTROLLER_GET_SYNC_STATE_DATA",
	RequestGetBrokerEpochCache:              "GET_BROKER_EPOCH_CACHE",
	RequestNotifyBrokerRoleChanged:          "NOTIFY_BROKER_ROLE_CHANGED",
	RequestUpdateControllerConfig:           "UPDATE_CONTROLLER_CONFIG",
	RequestGetControllerConfig:              "GET_CONTROLLER_CONFIG",
	RequestCleanBrokerData:                  "CLEAN_BROKER_DATA",
	RequestControllerGetNextBrokerID:        "CONTROLLER_GET_NEXT_BROKER_ID",
	RequestControllerApplyBrokerID:          "CONTROLLER_APPLY_BROKER_ID",
	RequestPopMessage:                       "POP_MESSAGE",
	RequestAckMessage:                       "ACK_MESSAGE",
	RequestPeekMessage:                      "PEEK_MESSAGE",
	RequestChangeMessageInvisibleTime:       "CHANGE_MESSAGE_INVISIBLETIME",
	RequestNotification:                     "NOTIFICATION",
	RequestPollingInfo:                      "POLLING_INFO",
	RequestBatchAckMessage:                  "BATCH_ACK_MESSAGE",
	RequestUpdateAndCreateACLConfig:         "UPDATE_AND_CREATE_ACL_CONFIG",
	RequestDeleteACLConfig:                  "DELETE_ACL_CONFIG",
	RequestGetBrokerClusterACLInfo:          "GET_BROKER_CLUSTER_ACL_INFO",
	RequestUpdateGlobalWhiteAddrsConfig:     "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	RequestQueryConsumeTimeSpan:             "QUERY_CONSUME_TIME_SPAN",
	RequestGetSystemTopicListFromBroker:     "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	RequestCleanExpiredConsumeQueue:         "CLEAN_EXPIRED_CONSUMEQUEUE",
	RequestQueryCorrectionOffset:            "QUERY_CORRECTION_OFFSET",
	RequestCloneGroupOffset:                 "CLONE_GROUP_OFFSET",
	RequestViewBrokerStatsData:              "VIEW_BROKER_STATS_DATA",
	RequestCleanUnusedTopic:                 "CLEAN_UNUSED_TOPIC",
	RequestQueryConsumeQueue:                "QUERY_CONSUME_QUEUE",
	RequestResumeCheckHalfMessage:           "RESUME_CHECK_HALF_MESSAGE",
	RequestGetAllProducerInfo:               "GET_ALL_PRODUCER_INFO",
	RequestDeleteExpiredCommitLog:           "DELETE_EXPIRED_COMMITLOG",
}

// ResponseCode constants (PROTOCOL.md §2.2), named after the Java constants.
const (
	ResponseSuccess                              ResponseCode = 0     // SUCCESS
	ResponseSystemError                          ResponseCode = 1     // SYSTEM_ERROR
	ResponseSystemBusy                           ResponseCode = 2     // SYSTEM_BUSY
	ResponseRequestCodeNotSupported              ResponseCode = 3     // REQUEST_CODE_NOT_SUPPORTED
	ResponseTransactionFailed                    ResponseCode = 4     // TRANSACTION_FAILED
	ResponseFlushDiskTimeout                     ResponseCode = 10    // FLUSH_DISK_TIMEOUT
	ResponseSlaveNotAvailable                    ResponseCode = 11    // SLAVE_NOT_AVAILABLE
	ResponseFlushSlaveTimeout                    ResponseCode = 12    // FLUSH_SLAVE_TIMEOUT
	ResponseMessageIllegal                       ResponseCode = 13    // MESSAGE_ILLEGAL
	ResponseServiceNotAvailable                  ResponseCode = 14    // SERVICE_NOT_AVAILABLE
	ResponseVersionNotSupported                  ResponseCode = 15    // VERSION_NOT_SUPPORTED
	ResponseNoPermission                         ResponseCode = 16    // NO_PERMISSION
	ResponseTopicNotExist                        ResponseCode = 17    // TOPIC_NOT_EXIST
	ResponseTopicExistAlready                    ResponseCode = 18    // TOPIC_EXIST_ALREADY
	ResponsePullNotFound                         ResponseCode = 19    // PULL_NOT_FOUND
	ResponsePullRetryImmediately                 ResponseCode = 20    // PULL_RETRY_IMMEDIATELY
	ResponsePullOffsetMoved                      ResponseCode = 21    // PULL_OFFSET_MOVED
	ResponseQueryNotFound                        ResponseCode = 22    // QUERY_NOT_FOUND
	ResponseSubscriptionParseFailed              ResponseCode = 23    // SUBSCRIPTION_PARSE_FAILED
	ResponseSubscriptionNotExist                 ResponseCode = 24    // SUBSCRIPTION_NOT_EXIST
	ResponseSubscriptionNotLatest                ResponseCode = 25    // SUBSCRIPTION_NOT_LATEST
	ResponseSubscriptionGroupNotExist            ResponseCode = 26    // SUBSCRIPTION_GROUP_NOT_EXIST
	ResponseFilterDataNotExist                   ResponseCode = 27    // FILTER_DATA_NOT_EXIST
	ResponseFilterDataNotLatest                  ResponseCode = 28    // FILTER_DATA_NOT_LATEST
	ResponseInvalidParameter                     ResponseCode = 29    // INVALID_PARAMETER
	ResponseTransactionShouldCommit              ResponseCode = 200   // TRANSACTION_SHOULD_COMMIT
	ResponseTransactionShouldRollback            ResponseCode = 201   // TRANSACTION_SHOULD_ROLLBACK
	ResponseTransactionStateUnknow               ResponseCode = 202   // TRANSACTION_STATE_UNKNOW
	ResponseTransactionStateGroupWrong           ResponseCode = 203   // TRANSACTION_STATE_GROUP_WRONG
	ResponseNoBuyerID                            ResponseCode = 204   // NO_BUYER_ID
	ResponseNotInCurrentUnit                     ResponseCode = 205   // NOT_IN_CURRENT_UNIT
	ResponseConsumerNotOnline                    ResponseCode = 206   // CONSUMER_NOT_ONLINE
	ResponseConsumeMsgTimeout                    ResponseCode = 207   // CONSUME_MSG_TIMEOUT
	ResponseNoMessage                            ResponseCode = 208   // NO_MESSAGE
	ResponseUpdateAndCreateACLConfigFailed       ResponseCode = 209   // UPDATE_AND_CREATE_ACL_CONFIG_FAILED (5.x's pop reuses it: POLLING_FULL)
	ResponseDeleteACLConfigFailed                ResponseCode = 210   // DELETE_ACL_CONFIG_FAILED (5.x: POLLING_TIMEOUT)
	ResponseUpdateGlobalWhiteAddrsConfigFailed   ResponseCode = 211   // UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED (5.x: BROKER_NOT_EXIST)
	ResponseBrokerDispatchNotComplete            ResponseCode = 212   // BROKER_DISPATCH_NOT_COMPLETE
	ResponseBroadcastConsumption                 ResponseCode = 213   // BROADCAST_CONSUMPTION
	ResponseFlowControl                          ResponseCode = 215   // FLOW_CONTROL
	ResponseNotLeaderForQueue                    ResponseCode = 501   // NOT_LEADER_FOR_QUEUE
	ResponseIllegalOperation                     ResponseCode = 604   // ILLEGAL_OPERATION
	ResponseGoAway                               ResponseCode = 1500  // GO_AWAY
	ResponseControllerFencedMasterEpoch          ResponseCode = 2000  // CONTROLLER_FENCED_MASTER_EPOCH
	ResponseControllerFencedSyncStateSetEpoch    ResponseCode = 2001  // CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH
	ResponseControllerInvalidMaster              ResponseCode = 2002  // CONTROLLER_INVALID_MASTER
	ResponseControllerInvalidReplicas            ResponseCode = 2003  // CONTROLLER_INVALID_REPLICAS
	ResponseControllerMasterNotAvailable         ResponseCode = 2004  // CONTROLLER_MASTER_NOT_AVAILABLE
	ResponseControllerInvalidRequest             ResponseCode = 2005  // CONTROLLER_INVALID_REQUEST
	ResponseControllerBrokerNotAlive             ResponseCode = 2006  // CONTROLLER_BROKER_NOT_ALIVE
	ResponseControllerNotLeader                  ResponseCode = 2007  // CONTROLLER_NOT_LEADER
	ResponseControllerBrokerMetadataNotExist     ResponseCode = 2008  // CONTROLLER_BROKER_METADATA_NOT_EXIST
	ResponseControllerInvalidCleanBrokerMetadata ResponseCode = 2009  // CONTROLLER_INVALID_CLEAN_BROKER_METADATA
	ResponseControllerBrokerNeedToBeRegistered   ResponseCode = 2010  // CONTROLLER_BROKER_NEED_TO_BE_REGISTERED
	ResponseControllerMasterStillExist           ResponseCode = 2011  // CONTROLLER_MASTER_STILL_EXIST
	ResponseControllerElectMasterFailed          ResponseCode = 2012  // CONTROLLER_ELECT_MASTER_FAILED
	ResponseControllerAlterSyncStateSetFailed    ResponseCode = 2013  // CONTROLLER_ALTER_SYNC_STATE_SET_FAILED
	ResponseControllerBrokerIDInvalid            ResponseCode = 2014  // CONTROLLER_BROKER_ID_INVALID
	ResponseControllerJRaftInternalError         ResponseCode = 2015  // CONTROLLER_JRAFT_INTERNAL_ERROR
	ResponseControllerBrokerLiveInfoNotExists    ResponseCode = 2016  // CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS
	ResponseUserNotExist                         ResponseCode = 3001  // USER_NOT_EXIST
	ResponsePolicyNotExist                       ResponseCode = 3002  // POLICY_NOT_EXIST
	ResponseRPCUnknown                           ResponseCode = -1000 // RPC_UNKNOWN
	ResponseRPCAddrIsNull                        ResponseCode = -1002 // RPC_ADDR_IS_NULL
	ResponseRPCSendToChannelFailed               ResponseCode = -1004 // RPC_SEND_TO_CHANNEL_FAILED
	ResponseRPCTimeOut                           ResponseCode = -1006 // RPC_TIME_OUT
)

var responseCodeNames = map[ResponseCode]string{
	ResponseSuccess:                              "SUCCESS",
	ResponseSystemError:                          "SYSTEM_ERROR",
	ResponseSystemBusy:                           "SYSTEM_BUSY",
	ResponseRequestCodeNotSupported:              "REQUEST_CODE_NOT_SUPPORTED",
	ResponseTransactionFailed:                    "TRANSACTION_FAILED",
	ResponseFlushDiskTimeout:                     "FLUSH_DISK_TIMEOUT",
	ResponseSlaveNotAvailable:                    "SLAVE_NOT_AVAILABLE",
	ResponseFlushSlaveTimeout:                    "FLUSH_SLAVE_TIMEOUT",
	ResponseMessageIllegal:                       "MESSAGE_ILLEGAL",
	ResponseServiceNotAvailable:                  "SERVICE_NOT_AVAILABLE",
	ResponseVersionNotSupported:                  "VERSION_NOT_SUPPORTED",
	ResponseNoPermission:                         "NO_PERMISSION",
	ResponseTopicNotExist:                        "TOPIC_NOT_EXIST",
	ResponseTopicExistAlready:                    "TOPIC_EXIST_ALREADY",
	ResponsePullNotFound:                         "PULL_NOT_FOUND",
	ResponsePullRetryImmediately:                 "PULL_RETRY_IMMEDIATELY",
	ResponsePullOffsetMoved:                      "PULL_OFFSET_MOVED",
	ResponseQueryNotFound:                        "QUERY_NOT_FOUND",
	ResponseSubscriptionParseFailed:              "SUBSCRIPTION_PARSE_FAILED",
	ResponseSubscriptionNotExist:                 "SUBSCRIPTION_NOT_EXIST",
	ResponseSubscriptionNotLatest:                "SUBSCRIPTION_NOT_LATEST",
	ResponseSubscriptionGroupNotExist:            "SUBSCRIPTION_GROUP_NOT_EXIST",
	ResponseFilterDataNotExist:                   "FILTER_DATA_NOT_EXIST",
	ResponseFilterDataNotLatest:                  "FILTER_DATA_NOT_LATEST",
	ResponseInvalidParameter:                     "INVALID_PARAMETER",
	ResponseTransactionShouldCommit:              "TRANSACTION_SHOULD_COMMIT",
	ResponseTransactionShouldRollback:            "TRANSACTION_SHOULD_ROLLBACK",
	ResponseTransactionStateUnknow:               "TRANSACTION_STATE_UNKNOW",
	ResponseTransactionStateGroupWrong:           "TRANSACTION_STATE_GROUP_WRONG",
	ResponseNoBuyerID:                            "NO_BUYER_ID",
	ResponseNotInCurrentUnit:                     "NOT_IN_CURRENT_UNIT",
	ResponseConsumerNotOnline:                    "CONSUMER_NOT_ONLINE",
	ResponseConsumeMsgTimeout:                    "CONSUME_MSG_TIMEOUT",
	ResponseNoMessage:                            "NO_MESSAGE",
	ResponseUpdateAndCreateACLConfigFailed:       "UPDATE_AND_CREATE_ACL_CONFIG_FAILED",
	ResponseDeleteACLConfigFailed:                "DELETE_ACL_CONFIG_FAILED",
	ResponseUpdateGlobalWhiteAddrsConfigFailed:   "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED",
	ResponseBrokerDispatchNotComplete:            "BROKER_DISPATCH_NOT_COMPLETE",
	ResponseBroadcastConsumption:                 "BROADCAST_CONSUMPTION",
	ResponseFlowControl:                          "FLOW_CONTROL",
	ResponseNotLeaderForQueue:                    "NOT_LEADER_FOR_QUEUE",
	ResponseIllegalOperation:                     "ILLEGAL_OPERATION",
	ResponseGoAway:                               "GO_AWAY",
	ResponseControllerFencedMasterEpoch:          "CONTROLLER_FENCED_MASTER_EPOCH",
	ResponseControllerFencedSyncStateSetEpoch:    "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH",
	ResponseControllerInvalidMaster:              "CONTROLLER_INVALID_MASTER",
	ResponseControllerInvalidReplicas:            "CONTROLLER_INVALID_REPLICAS",
	ResponseControllerMasterNotAvailable:         "CONTROLLER_MASTER_NOT_AVAILABLE",
	ResponseControllerInvalidRequest:             "CONTROLLER_INVALID_REQUEST",
	ResponseControllerBrokerNotAlive:             "CONTROLLER_BROKER_NOT_ALIVE",
	ResponseControllerNotLeader:                  "CONTROLLER_NOT_LEADER",
	ResponseControllerBrokerMetadataNotExist:     "CONTROLLER_BROKER_METADATA_NOT_EXIST",
	ResponseControllerInvalidCleanBrokerMetadata: "CONTROLLER_INVALID_CLEAN_BROKER_METADATA",
	ResponseControllerBrokerNeedToBeRegistered:   "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED",
	ResponseControllerMasterStillExist:           "CONTROLLER_MASTER_STILL_EXIST",
	ResponseControllerElectMasterFailed:          "CONTROLLER_ELECT_MASTER_FAILED",
	ResponseControllerAlterSyncStateSetFailed:    "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED",
	ResponseControllerBrokerIDInvalid:            "CONTROLLER_BROKER_ID_INVALID",
	ResponseControllerJRaftInternalError:         "CONTROLLER_JRAFT_INTERNAL_ERROR",
	ResponseControllerBrokerLiveInfoNotExists:    "CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS",
	ResponseUserNotExist:                         "USER_NOT_EXIST",
	ResponsePolicyNotExist:                       "POLICY_NOT_EXIST",
	ResponseRPCUnknown:                           "RPC_UNKNOWN",
	ResponseRPCAddrIsNull:                        "RPC_ADDR_IS_NULL",
	ResponseRPCSendToChannelFailed:               "RPC_SEND_TO_CHANNEL_FAILED",
	ResponseRPCTimeOut:                           "RPC_TIME_OUT",
}

// String returns the Java constant name ("SEND_MESSAGE") or "RequestCode(n)".
func (c RequestCode) String() string {
	if n, ok := requestCodeNames[c]; ok {
		return n
	}
	return "RequestCode(" + strconv.Itoa(int(c)) + ")"
}

// String returns the Java constant name ("SUCCESS") or "ResponseCode(n)".
func (c ResponseCode) String() string {
	if n, ok := responseCodeNames[c]; ok {
		return n
	}
	return "ResponseCode(" + strconv.Itoa(int(c)) + ")"
}
