package codec

import (
	"errors"
	"maps"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// sendV2 adapts the letter-key form of SendMessageRequestHeader to CustomHeader.
type sendV2 struct{ SendMessageRequestHeader }

func (h *sendV2) Decode(ext map[string]string) error { return h.DecodeV2(ext) }
func (h *sendV2) Encode(ext map[string]string)       { h.EncodeV2(ext) }

// headerCase describes one typed header: a full ext map exactly as Encode writes it, the
// struct it decodes to, its required keys and its keys that must parse.
type headerCase struct {
	name     string
	new      func() CustomHeader
	ext      map[string]string
	want     CustomHeader
	required []string
	parsed   []string
}

func headerCases() []headerCase {
	return append([]headerCase{
		{
			name: "SendMessageRequestHeader",
			new:  func() CustomHeader { return &SendMessageRequestHeader{} },
			ext: map[string]string{"producerGroup": "PG", "topic": "T", "defaultTopic": "TBW102",
				"defaultTopicQueueNums": "4", "queueId": "-1", "sysFlag": "4", "bornTimestamp": "1700000000123",
				"flag": "7", "properties": "KEYS\x01k\x02", "reconsumeTimes": "2", "unitMode": "false",
				"maxReconsumeTimes": "16", "batch": "false", "bname": "broker-a"},
			want: &SendMessageRequestHeader{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102",
				DefaultTopicQueueNums: 4, QueueID: -1, SysFlag: 4, BornTimestamp: 1700000000123, Flag: 7,
				Properties: "KEYS\x01k\x02", ReconsumeTimes: 2, MaxReconsumeTimes: Some[int32](16), BrokerName: "broker-a"},
			required: []string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
				"bornTimestamp", "flag"},
			parsed: []string{"defaultTopicQueueNums", "queueId", "sysFlag", "bornTimestamp", "flag", "reconsumeTimes",
				"unitMode", "maxReconsumeTimes", "batch"},
		},
		{
			name: "SendMessageRequestHeader",
			new:  func() CustomHeader { return &sendV2{} },
			ext: map[string]string{"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0",
				"g": "1700000000123", "h": "0", "j": "0", "k": "true", "m": "true"},
			want: &sendV2{SendMessageRequestHeader{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102",
				DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: 1700000000123, UnitMode: true, Batch: true}},
			required: []string{"a", "b", "c", "d", "e", "f", "g", "h"},
			parsed:   []string{"d", "e", "f", "g", "h", "j", "k", "l", "m"},
		},
		{
			name: "SendMessageResponseHeader",
			new:  func() CustomHeader { return &SendMessageResponseHeader{} },
			ext: map[string]string{"msgId": "7F00000100002A9F0000000000000000", "queueId": "3", "queueOffset": "99",
				"transactionId": "TX", "batchUniqId": "B", "recallHandle": "R", "MSG_REGION": "DefaultRegion", "TRACE_ON": "true"},
			want: &SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000000000", QueueID: 3, QueueOffset: 99,
				TransactionID: "TX", BatchUniqID: "B", RecallHandle: "R", MsgRegion: "DefaultRegion", TraceOn: Some(true)},
			required: []string{"msgId", "queueId", "queueOffset"},
			parsed:   []string{"queueId", "queueOffset", "TRACE_ON"},
		},
		{
			name: "ConsumerSendMsgBackRequestHeader",
			new:  func() CustomHeader { return &ConsumerSendMsgBackRequestHeader{} },
			ext: map[string]string{"offset": "4096", "group": "G", "delayLevel": "-1", "originMsgId": "O",
				"originTopic": "T", "unitMode": "false", "maxReconsumeTimes": "16", "bname": "b"},
			want: &ConsumerSendMsgBackRequestHeader{Offset: 4096, Group: "G", DelayLevel: -1, OriginMsgID: "O",
				OriginTopic: "T", MaxReconsumeTimes: Some[int32](16), BrokerName: "b"},
			required: []string{"offset", "group", "delayLevel"},
			parsed:   []string{"offset", "delayLevel", "unitMode", "maxReconsumeTimes"},
		},
		{
			name: "PullMessageRequestHeader",
			new:  func() CustomHeader { return &PullMessageRequestHeader{} },
			ext: map[string]string{"consumerGroup": "G1", "topic": "%RETRY%G1", "queueId": "0", "queueOffset": "0",
				"maxMsgNums": "32", "sysFlag": "2", "commitOffset": "-1", "suspendTimeoutMillis": "20000",
				"subVersion": "0", "expressionType": "TAG", "subscription": "TagA || TagB", "maxMsgBytes": "1024",
				"requestSource": "1", "proxyFrowardClientId": "c"},
			want: &PullMessageRequestHeader{ConsumerGroup: "G1", Topic: "%RETRY%G1", MaxMsgNums: 32,
				SysFlag: PullSysFlagSuspend, CommitOffset: -1, SuspendTimeoutMillis: 20000, ExpressionType: "TAG",
				Subscription: "TagA || TagB", MaxMsgBytes: Some[int32](1024), RequestSource: Some[int32](1),
				ProxyForwardClientID: "c"},
			required: []string{"consumerGroup", "topic", "queueId", "queueOffset", "maxMsgNums", "sysFlag",
				"commitOffset", "suspendTimeoutMillis", "subVersion"},
			parsed: []string{"queueId", "queueOffset", "maxMsgNums", "sysFlag", "commitOffset", "suspendTimeoutMillis",
				"subVersion", "maxMsgBytes", "requestSource"},
		},
		{
			name: "PullMessageResponseHeader",
			new:  func() CustomHeader { return &PullMessageResponseHeader{} },
			ext: map[string]string{"suggestWhichBrokerId": "0", "nextBeginOffset": "12", "minOffset": "0",
				"maxOffset": "12", "offsetDelta": "1", "topicSysFlag": "0", "groupSysFlag": "0", "forbiddenType": "1"},
			want: &PullMessageResponseHeader{NextBeginOffset: 12, MaxOffset: 12, OffsetDelta: Some[int64](1),
				TopicSysFlag: Some[int32](0), GroupSysFlag: Some[int32](0), ForbiddenType: Some[int32](1)},
			required: []string{"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset"},
			parsed: []string{"suggestWhichBrokerId", "nextBeginOffset", "minOffset", "maxOffset", "offsetDelta",
				"topicSysFlag", "groupSysFlag", "forbiddenType"},
		},
		{
			name: "QueryMessageRequestHeader",
			new:  func() CustomHeader { return &QueryMessageRequestHeader{} },
			ext: map[string]string{"topic": "T", "key": "K", "maxNum": "32", "beginTimestamp": "0",
				"endTimestamp": "9223372036854775807", "_UNIQUE_KEY_QUERY": "true"},
			want:     &QueryMessageRequestHeader{Topic: "T", Key: "K", MaxNum: 32, EndTimestamp: 1<<63 - 1, UniqueKeyQuery: true},
			required: []string{"topic", "key", "maxNum", "beginTimestamp", "endTimestamp"},
			parsed:   []string{"maxNum", "beginTimestamp", "endTimestamp", "_UNIQUE_KEY_QUERY"},
		},
		{
			name:     "QueryMessageResponseHeader",
			new:      func() CustomHeader { return &QueryMessageResponseHeader{} },
			ext:      map[string]string{"indexLastUpdateTimestamp": "1700000000000", "indexLastUpdatePhyoffset": "100"},
			want:     &QueryMessageResponseHeader{IndexLastUpdateTimestamp: 1700000000000, IndexLastUpdatePhyoffset: 100},
			required: []string{"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"},
			parsed:   []string{"indexLastUpdateTimestamp", "indexLastUpdatePhyoffset"},
		},
		{
			name:     "ViewMessageByIDRequestHeader",
			new:      func() CustomHeader { return &ViewMessageByIDRequestHeader{} },
			ext:      map[string]string{"offset": "123", "topic": "T"},
			want:     &ViewMessageByIDRequestHeader{Offset: 123, Topic: "T"},
			required: []string{"offset"},
			parsed:   []string{"offset"},
		},
		{
			name:     "QueryConsumerOffsetRequestHeader",
			new:      func() CustomHeader { return &QueryConsumerOffsetRequestHeader{} },
			ext:      map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "2", "setZeroIfNotFound": "false"},
			want:     &QueryConsumerOffsetRequestHeader{ConsumerGroup: "G", Topic: "T", QueueID: 2},
			required: []string{"consumerGroup", "topic", "queueId"},
			parsed:   []string{"queueId", "setZeroIfNotFound"},
		},
		{
			name:     "OffsetResponseHeader",
			new:      func() CustomHeader { return &OffsetResponseHeader{} },
			ext:      map[string]string{"offset": "-1"},
			want:     &OffsetResponseHeader{Offset: -1},
			required: []string{"offset"},
			parsed:   []string{"offset"},
		},
		{
			name:     "UpdateConsumerOffsetRequestHeader",
			new:      func() CustomHeader { return &UpdateConsumerOffsetRequestHeader{} },
			ext:      map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "1", "commitOffset": "77"},
			want:     &UpdateConsumerOffsetRequestHeader{ConsumerGroup: "G", Topic: "T", QueueID: 1, CommitOffset: 77},
			required: []string{"consumerGroup", "topic", "queueId", "commitOffset"},
			parsed:   []string{"queueId", "commitOffset"},
		},
		{
			name:     "GetMaxOffsetRequestHeader",
			new:      func() CustomHeader { return &GetMaxOffsetRequestHeader{} },
			ext:      map[string]string{"topic": "T", "queueId": "1", "committed": "false"},
			want:     &GetMaxOffsetRequestHeader{Topic: "T", QueueID: 1},
			required: []string{"topic", "queueId"},
			parsed:   []string{"queueId", "committed"},
		},
		{
			name:     "GetMinOffsetRequestHeader",
			new:      func() CustomHeader { return &GetMinOffsetRequestHeader{} },
			ext:      map[string]string{"topic": "T", "queueId": "5"},
			want:     &GetMinOffsetRequestHeader{Topic: "T", QueueID: 5},
			required: []string{"topic", "queueId"},
			parsed:   []string{"queueId"},
		},
		{
			name:     "GetEarliestMsgStoretimeRequestHeader",
			new:      func() CustomHeader { return &GetEarliestMsgStoretimeRequestHeader{} },
			ext:      map[string]string{"topic": "T", "queueId": "5"},
			want:     &GetEarliestMsgStoretimeRequestHeader{Topic: "T", QueueID: 5},
			required: []string{"topic", "queueId"},
			parsed:   []string{"queueId"},
		},
		{
			name:     "GetEarliestMsgStoretimeResponseHeader",
			new:      func() CustomHeader { return &GetEarliestMsgStoretimeResponseHeader{} },
			ext:      map[string]string{"timestamp": "1700000000000"},
			want:     &GetEarliestMsgStoretimeResponseHeader{Timestamp: 1700000000000},
			required: []string{"timestamp"},
			parsed:   []string{"timestamp"},
		},
		{
			name:     "SearchOffsetRequestHeader",
			new:      func() CustomHeader { return &SearchOffsetRequestHeader{} },
			ext:      map[string]string{"topic": "T", "queueId": "0", "timestamp": "1700000000000", "boundaryType": "UPPER"},
			want:     &SearchOffsetRequestHeader{Topic: "T", Timestamp: 1700000000000, BoundaryType: BoundaryUpper},
			required: []string{"topic", "queueId", "timestamp"},
			parsed:   []string{"queueId", "timestamp"},
		},
		{
			name: "EndTransactionRequestHeader",
			new:  func() CustomHeader { return &EndTransactionRequestHeader{} },
			ext: map[string]string{"producerGroup": "PG", "tranStateTableOffset": "3", "commitLogOffset": "4096",
				"commitOrRollback": "8", "fromTransactionCheck": "true", "msgId": "U", "transactionId": "U",
				"topic": "T", "bname": "b"},
			want: &EndTransactionRequestHeader{ProducerGroup: "PG", TranStateTableOffset: 3, CommitLogOffset: 4096,
				CommitOrRollback: 8, FromTransactionCheck: true, MsgID: "U", TransactionID: "U", Topic: "T", BrokerName: "b"},
			required: []string{"producerGroup", "tranStateTableOffset", "commitLogOffset", "commitOrRollback", "msgId"},
			parsed:   []string{"tranStateTableOffset", "commitLogOffset", "commitOrRollback", "fromTransactionCheck"},
		},
		{
			name: "CheckTransactionStateRequestHeader",
			new:  func() CustomHeader { return &CheckTransactionStateRequestHeader{} },
			ext: map[string]string{"topic": "T", "tranStateTableOffset": "3", "commitLogOffset": "4096", "msgId": "U",
				"transactionId": "U", "offsetMsgId": "7F00000100002A9F0000000000001000", "bname": "b"},
			want: &CheckTransactionStateRequestHeader{Topic: "T", TranStateTableOffset: 3, CommitLogOffset: 4096,
				MsgID: "U", TransactionID: "U", OffsetMsgID: "7F00000100002A9F0000000000001000", BrokerName: "b"},
			required: []string{"tranStateTableOffset", "commitLogOffset"},
			parsed:   []string{"tranStateTableOffset", "commitLogOffset"},
		},
		{
			name:     "UnregisterClientRequestHeader",
			new:      func() CustomHeader { return &UnregisterClientRequestHeader{} },
			ext:      map[string]string{"clientID": "10.0.0.5@1234", "producerGroup": "PG", "consumerGroup": "CG"},
			want:     &UnregisterClientRequestHeader{ClientID: "10.0.0.5@1234", ProducerGroup: "PG", ConsumerGroup: "CG"},
			required: []string{"clientID"},
		},
		{
			name:     "GetConsumerListByGroupRequestHeader",
			new:      func() CustomHeader { return &GetConsumerListByGroupRequestHeader{} },
			ext:      map[string]string{"consumerGroup": "G"},
			want:     &GetConsumerListByGroupRequestHeader{ConsumerGroup: "G"},
			required: []string{"consumerGroup"},
		},
		{
			name:     "NotifyConsumerIdsChangedRequestHeader",
			new:      func() CustomHeader { return &NotifyConsumerIdsChangedRequestHeader{} },
			ext:      map[string]string{"consumerGroup": "G"},
			want:     &NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: "G"},
			required: []string{"consumerGroup"},
		},
		{
			name: "UpdateAndCreateTopicRequestHeader",
			new:  func() CustomHeader { return &UpdateAndCreateTopicRequestHeader{} },
			ext: map[string]string{"topic": "T", "defaultTopic": "defaultTopic", "readQueueNums": "8",
				"writeQueueNums": "8", "perm": "6", "topicFilterType": "SINGLE_TAG", "topicSysFlag": "0",
				"order": "false", "attributes": "+message.type=NORMAL", "force": "true"},
			want: &UpdateAndCreateTopicRequestHeader{Topic: "T", DefaultTopic: "defaultTopic", ReadQueueNums: 8,
				WriteQueueNums: 8, Perm: 6, TopicFilterType: "SINGLE_TAG", TopicSysFlag: Some[int32](0),
				Attributes: "+message.type=NORMAL", Force: true},
			required: []string{"topic", "defaultTopic", "readQueueNums", "writeQueueNums", "perm", "topicFilterType", "order"},
			parsed:   []string{"readQueueNums", "writeQueueNums", "perm", "topicSysFlag", "order", "force"},
		},
		{
			name:     "DeleteTopicRequestHeader",
			new:      func() CustomHeader { return &DeleteTopicRequestHeader{} },
			ext:      map[string]string{"topic": "T"},
			want:     &DeleteTopicRequestHeader{Topic: "T"},
			required: []string{"topic"},
		},
		{
			name:     "GetConsumeStatsRequestHeader",
			new:      func() CustomHeader { return &GetConsumeStatsRequestHeader{} },
			ext:      map[string]string{"consumerGroup": "G", "topic": "T"},
			want:     &GetConsumeStatsRequestHeader{ConsumerGroup: "G", Topic: "T"},
			required: []string{"consumerGroup"},
		},
		{
			name:     "TopicRequestHeader",
			new:      func() CustomHeader { return &TopicRequestHeader{} },
			ext:      map[string]string{"topic": "T"},
			want:     &TopicRequestHeader{Topic: "T"},
			required: []string{"topic"},
		},
		{
			name:     "GetConsumerConnectionListRequestHeader",
			new:      func() CustomHeader { return &GetConsumerConnectionListRequestHeader{} },
			ext:      map[string]string{"consumerGroup": "G"},
			want:     &GetConsumerConnectionListRequestHeader{ConsumerGroup: "G"},
			required: []string{"consumerGroup"},
		},
		{
			name:     "GetProducerConnectionListRequestHeader",
			new:      func() CustomHeader { return &GetProducerConnectionListRequestHeader{} },
			ext:      map[string]string{"producerGroup": "PG"},
			want:     &GetProducerConnectionListRequestHeader{ProducerGroup: "PG"},
			required: []string{"producerGroup"},
		},
		{
			name: "CreateAccessConfigRequestHeader",
			new:  func() CustomHeader { return &CreateAccessConfigRequestHeader{} },
			ext: map[string]string{"accessKey": "RocketMQ", "secretKey": "12345678", "whiteRemoteAddress": "",
				"admin": "true", "defaultTopicPerm": "DENY", "defaultGroupPerm": "SUB",
				"topicPerms": "topicA=DENY,topicB=PUB|SUB", "groupPerms": "groupA=SUB"},
			want: &CreateAccessConfigRequestHeader{AccessKey: "RocketMQ", SecretKey: "12345678", WhiteRemoteAddress: Some(""),
				Admin: true, DefaultTopicPerm: "DENY", DefaultGroupPerm: "SUB",
				TopicPerms: Some("topicA=DENY,topicB=PUB|SUB"), GroupPerms: Some("groupA=SUB")},
			required: []string{"accessKey"},
			parsed:   []string{"admin"},
		},
		{
			name:     "DeleteAccessConfigRequestHeader",
			new:      func() CustomHeader { return &DeleteAccessConfigRequestHeader{} },
			ext:      map[string]string{"accessKey": "RocketMQ"},
			want:     &DeleteAccessConfigRequestHeader{AccessKey: "RocketMQ"},
			required: []string{"accessKey"},
		},
		{
			name:     "UpdateGlobalWhiteAddrsConfigRequestHeader",
			new:      func() CustomHeader { return &UpdateGlobalWhiteAddrsConfigRequestHeader{} },
			ext:      map[string]string{"globalWhiteAddrs": "10.10.103.*,192.168.0.*", "aclFileFullPath": ""},
			want:     &UpdateGlobalWhiteAddrsConfigRequestHeader{GlobalWhiteAddrs: "10.10.103.*,192.168.0.*"},
			required: []string{"globalWhiteAddrs", "aclFileFullPath"},
		},
		{
			name: "GetBrokerAclConfigResponseHeader",
			new:  func() CustomHeader { return &GetBrokerAclConfigResponseHeader{} },
			ext: map[string]string{"version": `{"counter":1,"timestamp":1700000000000}`,
				"allAclFileVersion": `{"/conf/plain_acl.yml":{"counter":1,"timestamp":1700000000000}}`,
				"brokerName":        "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "DefaultCluster"},
			want: &GetBrokerAclConfigResponseHeader{Version: `{"counter":1,"timestamp":1700000000000}`,
				AllAclFileVersion: `{"/conf/plain_acl.yml":{"counter":1,"timestamp":1700000000000}}`,
				BrokerName:        "broker-a", BrokerAddr: "10.0.0.1:10911", ClusterName: "DefaultCluster"},
			required: []string{"version", "brokerName", "brokerAddr", "clusterName"},
		},
		{
			name:     "DeleteSubscriptionGroupRequestHeader",
			new:      func() CustomHeader { return &DeleteSubscriptionGroupRequestHeader{} },
			ext:      map[string]string{"groupName": "G", "cleanOffset": "true"},
			want:     &DeleteSubscriptionGroupRequestHeader{GroupName: "G", CleanOffset: true},
			required: []string{"groupName"},
			parsed:   []string{"cleanOffset"},
		},
		{
			name: "ResetOffsetRequestHeader",
			new:  func() CustomHeader { return &ResetOffsetRequestHeader{} },
			ext: map[string]string{"topic": "T", "group": "G", "timestamp": "1700000000000", "isForce": "true",
				"queueId": "3", "offset": "42"},
			want: &ResetOffsetRequestHeader{Topic: "T", Group: "G", Timestamp: 1700000000000, IsForce: true,
				QueueID: Some[int32](3), Offset: Some[int64](42)},
			required: []string{"topic", "group", "timestamp", "isForce"},
			parsed:   []string{"timestamp", "isForce", "queueId", "offset"},
		},
		{
			name: "RegisterBrokerRequestHeader",
			new:  func() CustomHeader { return &RegisterBrokerRequestHeader{} },
			ext: map[string]string{"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911", "clusterName": "DefaultCluster",
				"haServerAddr": "10.0.0.1:10912", "brokerId": "0", "heartbeatTimeoutMillis": "120000",
				"enableActingMaster": "false", "compressed": "true", "bodyCrc32": "123456", "__ZONE_NAME": "z"},
			want: &RegisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "10.0.0.1:10911",
				ClusterName: "DefaultCluster", HAServerAddr: "10.0.0.1:10912", HeartbeatTimeoutMillis: Some[int64](120000),
				EnableActingMaster: Some(false), Compressed: true, BodyCrc32: 123456, ZoneName: "z"},
			required: []string{"brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId"},
			parsed:   []string{"brokerId", "heartbeatTimeoutMillis", "enableActingMaster", "compressed", "bodyCrc32"},
		},
		{
			name:     "RegisterBrokerResponseHeader",
			new:      func() CustomHeader { return &RegisterBrokerResponseHeader{} },
			ext:      map[string]string{"haServerAddr": "10.0.0.1:10912", "masterAddr": "10.0.0.1:10911"},
			want:     &RegisterBrokerResponseHeader{HAServerAddr: "10.0.0.1:10912", MasterAddr: "10.0.0.1:10911"},
			required: nil,
		},
		{
			name: "UnregisterBrokerRequestHeader",
			new:  func() CustomHeader { return &UnregisterBrokerRequestHeader{} },
			ext: map[string]string{"brokerName": "broker-a", "brokerAddr": "10.0.0.1:10911",
				"clusterName": "DefaultCluster", "brokerId": "1"},
			want: &UnregisterBrokerRequestHeader{BrokerName: "broker-a", BrokerAddr: "10.0.0.1:10911",
				ClusterName: "DefaultCluster", BrokerID: 1},
			required: []string{"brokerName", "brokerAddr", "clusterName", "brokerId"},
			parsed:   []string{"brokerId"},
		},
		{
			name:     "GetRouteInfoRequestHeader",
			new:      func() CustomHeader { return &GetRouteInfoRequestHeader{} },
			ext:      map[string]string{"topic": "TopicTest", "acceptStandardJsonOnly": "true"},
			want:     &GetRouteInfoRequestHeader{Topic: "TopicTest", AcceptStandardJSONOnly: true},
			required: []string{"topic"},
			parsed:   []string{"acceptStandardJsonOnly"},
		},
		{
			name:     "DeleteTopicFromNamesrvRequestHeader",
			new:      func() CustomHeader { return &DeleteTopicFromNamesrvRequestHeader{} },
			ext:      map[string]string{"topic": "T", "clusterName": "C"},
			want:     &DeleteTopicFromNamesrvRequestHeader{Topic: "T", ClusterName: "C"},
			required: []string{"topic"},
		},
		{
			name:     "GetKVConfigRequestHeader",
			new:      func() CustomHeader { return &GetKVConfigRequestHeader{} },
			ext:      map[string]string{"namespace": "ORDER_TOPIC_CONFIG", "key": "T"},
			want:     &GetKVConfigRequestHeader{Namespace: "ORDER_TOPIC_CONFIG", Key: "T"},
			required: []string{"namespace", "key"},
		},
		{
			name:     "GetKVConfigResponseHeader",
			new:      func() CustomHeader { return &GetKVConfigResponseHeader{} },
			ext:      map[string]string{"value": "broker-a:4"},
			want:     &GetKVConfigResponseHeader{Value: "broker-a:4"},
			required: nil,
		},
		{
			name:     "PutKVConfigRequestHeader",
			new:      func() CustomHeader { return &PutKVConfigRequestHeader{} },
			ext:      map[string]string{"namespace": "N", "key": "K", "value": ""},
			want:     &PutKVConfigRequestHeader{Namespace: "N", Key: "K"},
			required: []string{"namespace", "key", "value"},
		},
	}, relayHeaderCases()...)
}

func TestTypedHeaders(t *testing.T) {
	for _, tc := range headerCases() {
		t.Run(tc.name+"/"+firstKey(tc.ext), func(t *testing.T) {
			h := tc.new()
			require.NoError(t, h.Decode(tc.ext))
			require.Equal(t, tc.want, h)

			out := map[string]string{}
			tc.want.Encode(out)
			require.Equal(t, tc.ext, out, "Encode writes exactly these keys and values")

			// Decoding into a used header resets it; unknown keys are ignored.
			noisy := maps.Clone(tc.ext)
			noisy["bname2"], noisy["ns"], noisy["oway"] = "x", "y", "true"
			require.NoError(t, h.Decode(noisy))
			require.Equal(t, tc.want, h)

			for _, key := range tc.required {
				ext := maps.Clone(tc.ext)
				delete(ext, key)
				err := tc.new().Decode(ext)
				var fe *FieldError
				require.ErrorAs(t, err, &fe, "missing %q", key)
				require.ErrorIs(t, err, ErrMissingField)
				require.Equal(t, key, fe.Field)
				require.Equal(t, tc.name, fe.Header)
				require.Contains(t, err.Error(), tc.name)
				require.Contains(t, err.Error(), `"`+key+`"`)
			}
			for _, key := range tc.parsed {
				for _, bad := range []string{"x", "", "1.5", "99999999999999999999", " 1"} {
					ext := maps.Clone(tc.ext)
					ext[key] = bad
					err := tc.new().Decode(ext)
					var fe *FieldError
					require.ErrorAs(t, err, &fe, "%q=%q", key, bad)
					require.ErrorIs(t, err, ErrBadField)
					require.False(t, errors.Is(err, ErrMissingField))
					require.Equal(t, key, fe.Field)
					require.Equal(t, bad, fe.Value)
				}
			}
		})
	}
}

func firstKey(m map[string]string) string {
	for _, k := range sortedKeys(m, nil) {
		return k
	}
	return ""
}

// TestTypedHeaderDefaults: absent optional keys read as their documented defaults.
func TestTypedHeaderDefaults(t *testing.T) {
	var q QueryConsumerOffsetRequestHeader
	require.NoError(t, q.Decode(map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "0"}))
	require.True(t, q.SetZeroIfNotFound, "absent setZeroIfNotFound reads as true")

	var m GetMaxOffsetRequestHeader
	require.NoError(t, m.Decode(map[string]string{"topic": "T", "queueId": "0"}))
	require.True(t, m.Committed, "absent committed reads as true")

	var s SearchOffsetRequestHeader
	for v, want := range map[string]BoundaryType{"": BoundaryLower, "upper": BoundaryUpper, "Upper": BoundaryUpper,
		"LOWER": BoundaryLower, "sideways": BoundaryLower} {
		require.NoError(t, s.Decode(map[string]string{"topic": "T", "queueId": "0", "timestamp": "1", "boundaryType": v}))
		require.Equal(t, want, s.BoundaryType, v)
	}

	var send SendMessageRequestHeader
	require.NoError(t, send.DecodeV2(map[string]string{"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "0",
		"f": "0", "g": "1", "h": "0", "k": "TRUE", "m": "False"}))
	require.False(t, send.MaxReconsumeTimes.Set)
	require.Equal(t, int32(16), send.MaxReconsumeTimes.Or(16))
	require.True(t, send.UnitMode)
	require.False(t, send.Batch)
	require.Empty(t, send.Properties)

	var rb RegisterBrokerRequestHeader
	require.NoError(t, rb.Decode(map[string]string{"brokerName": "b", "brokerAddr": "a", "clusterName": "c",
		"haServerAddr": "h", "brokerId": "0"}))
	require.False(t, rb.EnableActingMaster.Set, "absent = old broker")
	require.False(t, rb.HeartbeatTimeoutMillis.Set)

	// Ints accept a leading '+', as Java's parseInt does.
	var off OffsetResponseHeader
	require.NoError(t, off.Decode(map[string]string{"offset": "+5"}))
	require.Equal(t, int64(5), off.Offset)
	// int32 fields reject int64 values.
	var uo UpdateConsumerOffsetRequestHeader
	err := uo.Decode(map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "2147483648", "commitOffset": "1"})
	require.ErrorIs(t, err, ErrBadField)
	// A nil map: every required field missing, the first one reported.
	err = uo.Decode(nil)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	require.Equal(t, "consumerGroup", fe.Field)
}

// TestTypedHeadersGoClientMaps: the exact maps the pinned Go client builds (internal/request.go)
// decode as expected.
func TestTypedHeadersGoClientMaps(t *testing.T) {
	// SendMessageRequestHeader.Encode (code 10): all keys always present.
	var send SendMessageRequestHeader
	require.NoError(t, send.Decode(map[string]string{"producerGroup": "PG", "topic": "TopicTest", "queueId": "2",
		"sysFlag": "0", "bornTimestamp": "1700000000123", "flag": "0", "reconsumeTimes": "0", "unitMode": "false",
		"maxReconsumeTimes": "0", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4", "batch": "false",
		"properties": "UNIQ_KEY\x01AC\x02WAIT\x01true\x02", "bname": "broker-a"}))
	require.Equal(t, SendMessageRequestHeader{ProducerGroup: "PG", Topic: "TopicTest", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 2, BornTimestamp: 1700000000123, Properties: "UNIQ_KEY\x01AC\x02WAIT\x01true\x02",
		MaxReconsumeTimes: Some[int32](0), BrokerName: "broker-a"}, send)

	// SendMessageRequestV2Header.Encode (code 320): letters a..n.
	require.NoError(t, send.DecodeV2(map[string]string{"a": "PG", "b": "TopicTest", "c": "TBW102", "d": "4", "e": "1",
		"f": "0", "g": "1700000000123", "h": "0", "i": "", "j": "0", "k": "false", "l": "0", "m": "true", "n": "broker-a"}))
	require.Equal(t, SendMessageRequestHeader{ProducerGroup: "PG", Topic: "TopicTest", DefaultTopic: "TBW102",
		DefaultTopicQueueNums: 4, QueueID: 1, BornTimestamp: 1700000000123, MaxReconsumeTimes: Some[int32](0),
		Batch: true, BrokerName: "broker-a"}, send)

	// PullMessageRequestHeader (PROTOCOL §3.2 capture).
	var pull PullMessageRequestHeader
	require.NoError(t, pull.Decode(map[string]string{"consumerGroup": "G1", "topic": "%RETRY%G1", "queueId": "0",
		"queueOffset": "0", "maxMsgNums": "32", "sysFlag": "2", "commitOffset": "-1", "suspendTimeoutMillis": "20000",
		"subscription": "", "subVersion": "0", "expressionType": "TAG", "bname": "broker-a"}))
	require.Equal(t, PullMessageRequestHeader{ConsumerGroup: "G1", Topic: "%RETRY%G1", MaxMsgNums: 32, SysFlag: 2,
		CommitOffset: -1, SuspendTimeoutMillis: 20000, ExpressionType: "TAG"}, pull)

	// SearchOffsetRequestHeader without boundaryType, EndTransaction with every key.
	var so SearchOffsetRequestHeader
	require.NoError(t, so.Decode(map[string]string{"topic": "T", "queueId": "3", "timestamp": "1700000000000", "bname": "b"}))
	require.Equal(t, SearchOffsetRequestHeader{Topic: "T", QueueID: 3, Timestamp: 1700000000000}, so)
	var et EndTransactionRequestHeader
	require.NoError(t, et.Decode(map[string]string{"producerGroup": "PG", "tranStateTableOffset": "7",
		"commitLogOffset": "8192", "commitOrRollback": "0", "fromTransactionCheck": "false", "msgId": "U",
		"transactionId": "", "bname": "b"}))
	require.Equal(t, EndTransactionRequestHeader{ProducerGroup: "PG", TranStateTableOffset: 7, CommitLogOffset: 8192,
		MsgID: "U", BrokerName: "b"}, et)
}

// TestTypedHeaderDecodeAllocs: decoding the hot send header allocates nothing (strings are
// the ExtFields strings).
func TestTypedHeaderDecodeAllocs(t *testing.T) {
	ext := headerCases()[1].ext
	var h SendMessageRequestHeader
	allocs := testing.AllocsPerRun(100, func() {
		if err := h.DecodeV2(ext); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}

// TestParseSmallDecimalAgreesWithParseInt: the fast path gives strconv.ParseInt's value when it
// answers, and declines exactly where ParseInt needs its own rules.
func TestParseSmallDecimalAgreesWithParseInt(t *testing.T) {
	for _, v := range []string{"0", "7", "-7", "1700000000123", "2147483647", "-2147483648", "2147483648",
		"-2147483649", "999999999999999999", "1000000000000000000", "+5", "", "-", "1_0", "12a", "٣", "0007"} {
		for _, bits := range []int{32, 64} {
			want, werr := strconv.ParseInt(v, 10, bits)
			got, ok := parseSmallDecimal(v, bits)
			if ok && (werr != nil || got != want) {
				t.Fatalf("%q/%d: fast %d, ParseInt %d, %v", v, bits, got, want, werr)
			}
			if !ok && werr == nil && len(v) <= 18 && v[0] != '+' {
				t.Fatalf("%q/%d: fast path declined a plain value", v, bits)
			}
		}
	}
}
