package codec

import (
	"encoding/json"
	"fmt"
)

// Admin answer bodies an admin tool reads (PROTOCOL §4): TopicStatsTable (GET_TOPIC_STATS_INFO
// 202), ConsumeStats (GET_CONSUME_STATS 208), ConsumerConnection (203), ProducerConnection
// (204) and GroupList (QUERY_TOPIC_CONSUME_BY_WHO 300). The first two are Java maps keyed by
// MessageQueue, which fastjson writes with the queue OBJECT as key:
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":3,...},...}}
//
// Decoders accept that form (through QuoteBareKeys) and plain JSON; they are meant for
// answers from any broker, so they treat the body as untrusted (FuzzBodyAdmin).

// TopicOffset is one queue's row of a TopicStatsTable. Field order is fastjson's.
type TopicOffset struct {
	LastUpdateTimestamp int64 `json:"lastUpdateTimestamp"` // store time of the queue's last message, ms; 0 when empty
	MaxOffset           int64 `json:"maxOffset"`
	MinOffset           int64 `json:"minOffset"`
}

// TopicStatsTable is the body of a GET_TOPIC_STATS_INFO (202) answer.
type TopicStatsTable struct {
	OffsetTable map[MessageQueue]TopicOffset
}

// OffsetWrapper is one queue's row of a ConsumeStats. Field order is fastjson's.
type OffsetWrapper struct {
	BrokerOffset   int64 `json:"brokerOffset"`   // the queue's max offset
	ConsumerOffset int64 `json:"consumerOffset"` // the group's committed offset
	LastTimestamp  int64 `json:"lastTimestamp"`  // store time of the last consumed message, ms; 0 when unknown
	PullOffset     int64 `json:"pullOffset"`     // 5.x; 4.x brokers leave it out (0)
}

// ConsumeStats is the body of a GET_CONSUME_STATS (208) answer.
type ConsumeStats struct {
	ConsumeTps  float64
	OffsetTable map[MessageQueue]OffsetWrapper
}

// Connection is one client connection in a ConsumerConnection or ProducerConnection.
type Connection struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"` // LanguageCode by name
	Version    int32  `json:"version"`  // MQVersion ordinal
}

// ConsumerConnection is the body of a GET_CONSUMER_CONNECTION_LIST (203) answer.
type ConsumerConnection struct {
	ConnectionSet     []Connection                `json:"connectionSet"`
	ConsumeFromWhere  ConsumeFromWhere            `json:"consumeFromWhere"`
	ConsumeType       ConsumeType                 `json:"consumeType"`
	MessageModel      MessageModel                `json:"messageModel"`
	SubscriptionTable map[string]SubscriptionData `json:"subscriptionTable"`
}

// ProducerConnection is the body of a GET_PRODUCER_CONNECTION_LIST (204) answer.
type ProducerConnection struct {
	ConnectionSet []Connection `json:"connectionSet"`
}

// GroupList is the body of a QUERY_TOPIC_CONSUME_BY_WHO (300) answer.
type GroupList struct {
	GroupList []string `json:"groupList"`
}

// DecodeTopicStatsTable parses a TopicStatsTable. Safe for concurrent use.
func DecodeTopicStatsTable(body []byte) (*TopicStatsTable, error) {
	var in struct {
		OffsetTable json.RawMessage `json:"offsetTable"`
	}
	if err := decodeBodyJSON(body, &in, "TopicStatsTable"); err != nil {
		return nil, err
	}
	table, err := decodeQueueTable[TopicOffset](in.OffsetTable, "TopicStatsTable")
	if err != nil {
		return nil, err
	}
	return &TopicStatsTable{OffsetTable: table}, nil
}

// DecodeConsumeStats parses a ConsumeStats. Safe for concurrent use.
func DecodeConsumeStats(body []byte) (*ConsumeStats, error) {
	var in struct {
		ConsumeTps  float64         `json:"consumeTps"`
		OffsetTable json.RawMessage `json:"offsetTable"`
	}
	if err := decodeBodyJSON(body, &in, "ConsumeStats"); err != nil {
		return nil, err
	}
	table, err := decodeQueueTable[OffsetWrapper](in.OffsetTable, "ConsumeStats")
	if err != nil {
		return nil, err
	}
	return &ConsumeStats{ConsumeTps: in.ConsumeTps, OffsetTable: table}, nil
}

// decodeQueueTable decodes a body's offsetTable (decodeQueueTableField).
func decodeQueueTable[V any](raw json.RawMessage, body string) (map[MessageQueue]V, error) {
	return decodeQueueTableField[V](raw, body, "offsetTable")
}

// decodeQueueTableField decodes the Map<MessageQueue,V> of a body's field that decodeBodyJSON
// has already made standard JSON (each queue-object key is now a string holding the queue's
// JSON text). An absent or null table is an empty map.
func decodeQueueTableField[V any](raw json.RawMessage, body, field string) (map[MessageQueue]V, error) {
	out := map[MessageQueue]V{}
	bodyNormalizeRaw(&raw)
	if len(raw) == 0 {
		return out, nil
	}
	var table map[string]V
	if err := json.Unmarshal(raw, &table); err != nil {
		return nil, bodyJSONError(body+"."+field, err)
	}
	for key, v := range table {
		var mq MessageQueue
		if err := json.Unmarshal([]byte(key), &mq); err != nil {
			return nil, fmt.Errorf("%w: %s: field %q: key %q is not a MessageQueue", ErrBodyJSON, body, field, key)
		}
		out[mq] = v
	}
	return out, nil
}

// DecodeConsumerConnection parses a ConsumerConnection. Safe for concurrent use.
func DecodeConsumerConnection(body []byte) (*ConsumerConnection, error) {
	var out ConsumerConnection
	if err := decodeBodyJSON(body, &out, "ConsumerConnection"); err != nil {
		return nil, err
	}
	return &out, nil
}

// DecodeProducerConnection parses a ProducerConnection. Safe for concurrent use.
func DecodeProducerConnection(body []byte) (*ProducerConnection, error) {
	var out ProducerConnection
	if err := decodeBodyJSON(body, &out, "ProducerConnection"); err != nil {
		return nil, err
	}
	return &out, nil
}

// DecodeGroupList parses a GroupList. Safe for concurrent use.
func DecodeGroupList(body []byte) (*GroupList, error) {
	var out GroupList
	if err := decodeBodyJSON(body, &out, "GroupList"); err != nil {
		return nil, err
	}
	return &out, nil
}
