package codec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Bodies a consumer writes when its broker relays an admin request to it, and the broker's
// own GetConsumerStatusBody (PROTOCOL §4):
//
//	GET_CONSUMER_RUNNING_INFO (307)            ConsumerRunningInfo, written by the client
//	CONSUME_MESSAGE_DIRECTLY (309)             ConsumeMessageDirectlyResult, by the client
//	GET_CONSUMER_STATUS_FROM_CLIENT (221)      GetConsumerStatusBody{messageQueueTable}, by the client
//	INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) GetConsumerStatusBody{consumerTable}, by the broker
//
// The broker relays the first two unchanged; the decoders are for the tools that read them
// (mqadmin) and for the broker reading 221's answers. Java's classes (RocketMQ 4.9.8
// common.protocol.body) give the field names; maps keyed by MessageQueue come with the queue
// OBJECT as key (fastjson). Every decoder treats its body as untrusted (FuzzBodyConsumer).

// GetConsumerStatusBody is Java's GetConsumerStatusBody: a client's answer to 221 fills
// MessageQueueTable (its offsets), the broker's answer to 223 ConsumerTable (client id → that
// client's offsets).
type GetConsumerStatusBody struct {
	MessageQueueTable map[MessageQueue]int64
	ConsumerTable     map[string]map[MessageQueue]int64
}

// Encode writes the body as fastjson does: {"consumerTable":{"<clientId>":{{queue}:offset,...}},
// "messageQueueTable":{{queue}:offset,...}}, client ids sorted, queues ordered by topic, broker
// name, queue id. Safe for concurrent use if b is not modified meanwhile.
func (b *GetConsumerStatusBody) Encode() []byte {
	dst := make([]byte, 0, 64)
	dst = append(dst, `{"consumerTable":{`...)
	for i, id := range slices.Sorted(maps.Keys(b.ConsumerTable)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = bodyAppendString(dst, id)
		dst = append(dst, ':')
		dst = bodyAppendQueueInt64Map(dst, b.ConsumerTable[id])
	}
	dst = append(dst, `},"messageQueueTable":`...)
	dst = bodyAppendQueueInt64Map(dst, b.MessageQueueTable)
	return append(dst, '}')
}

// bodyAppendQueueInt64Map appends a Map<MessageQueue,Long> in fastjson's form, queues in
// order (topic, broker name, queue id).
func bodyAppendQueueInt64Map(dst []byte, m map[MessageQueue]int64) []byte {
	queues := slices.SortedFunc(maps.Keys(m), compareQueues)
	dst = append(dst, '{')
	for i, mq := range queues {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"brokerName":`...)
		dst = bodyAppendString(dst, mq.BrokerName)
		dst = append(dst, `,"queueId":`...)
		dst = strconv.AppendInt(dst, int64(mq.QueueID), 10)
		dst = append(dst, `,"topic":`...)
		dst = bodyAppendString(dst, mq.Topic)
		dst = append(dst, '}', ':')
		dst = strconv.AppendInt(dst, m[mq], 10)
	}
	return append(dst, '}')
}

// compareQueues orders queues by topic, broker name, queue id (Java MessageQueue.compareTo).
func compareQueues(x, y MessageQueue) int {
	return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.BrokerName, y.BrokerName), cmp.Compare(x.QueueID, y.QueueID))
}

// DecodeGetConsumerStatusBody parses a GetConsumerStatusBody; absent tables are empty. Safe
// for concurrent use.
func DecodeGetConsumerStatusBody(body []byte) (*GetConsumerStatusBody, error) {
	const name = "GetConsumerStatusBody"
	var in struct {
		ConsumerTable     map[string]json.RawMessage `json:"consumerTable"`
		MessageQueueTable json.RawMessage            `json:"messageQueueTable"`
	}
	if err := decodeBodyJSON(body, &in, name); err != nil {
		return nil, err
	}
	mqt, err := decodeQueueTableField[int64](in.MessageQueueTable, name, "messageQueueTable")
	if err != nil {
		return nil, err
	}
	out := &GetConsumerStatusBody{MessageQueueTable: mqt, ConsumerTable: make(map[string]map[MessageQueue]int64, len(in.ConsumerTable))}
	for id, raw := range in.ConsumerTable {
		t, err := decodeQueueTableField[int64](raw, name, "consumerTable")
		if err != nil {
			return nil, err
		}
		out.ConsumerTable[id] = t
	}
	return out, nil
}

// ProcessQueueInfo is one queue's row of a ConsumerRunningInfo (Java ProcessQueueInfo): the
// consumer's local view of the queue. Field order and names are Java's; Java spells the
// dropped flag "droped" (the Go client "dropped": the decoder takes either).
type ProcessQueueInfo struct {
	CachedMsgCount          int32 `json:"cachedMsgCount"`
	CachedMsgMaxOffset      int64 `json:"cachedMsgMaxOffset"`
	CachedMsgMinOffset      int64 `json:"cachedMsgMinOffset"`
	CachedMsgSizeInMiB      int32 `json:"cachedMsgSizeInMiB"`
	CommitOffset            int64 `json:"commitOffset"`
	Droped                  bool  `json:"droped"`
	LastConsumeTimestamp    int64 `json:"lastConsumeTimestamp"`
	LastLockTimestamp       int64 `json:"lastLockTimestamp"`
	LastPullTimestamp       int64 `json:"lastPullTimestamp"`
	Locked                  bool  `json:"locked"`
	TransactionMsgCount     int32 `json:"transactionMsgCount"`
	TransactionMsgMaxOffset int64 `json:"transactionMsgMaxOffset"`
	TransactionMsgMinOffset int64 `json:"transactionMsgMinOffset"`
	TryUnlockTimes          int64 `json:"tryUnlockTimes"`
}

// ConsumeStatus is one topic's row of a ConsumerRunningInfo's statusTable (Java ConsumeStatus).
type ConsumeStatus struct {
	ConsumeFailedMsgs int64   `json:"consumeFailedMsgs"` // in the last hour
	ConsumeFailedTPS  float64 `json:"consumeFailedTPS"`
	ConsumeOKTPS      float64 `json:"consumeOKTPS"`
	ConsumeRT         float64 `json:"consumeRT"`
	PullRT            float64 `json:"pullRT"`
	PullTPS           float64 `json:"pullTPS"`
}

// ConsumerRunningInfo is a consumer's answer to GET_CONSUMER_RUNNING_INFO (Java
// ConsumerRunningInfo): its properties (PROP_* keys and its settings), subscriptions, queues
// and per-topic rates, and with jstackEnable its thread dump.
type ConsumerRunningInfo struct {
	Properties      map[string]string // Java Properties; a non-string value is kept as its JSON text
	SubscriptionSet []SubscriptionData
	MQTable         map[MessageQueue]ProcessQueueInfo
	StatusTable     map[string]ConsumeStatus
	Jstack          string
}

// ConsumerRunningInfo property keys (Java ConsumerRunningInfo.PROP_*).
const (
	PropNamesrvAddr            = "PROP_NAMESERVER_ADDR"
	PropThreadPoolCoreSize     = "PROP_THREADPOOL_CORE_SIZE"
	PropConsumeOrderly         = "PROP_CONSUMEORDERLY"
	PropConsumeType            = "PROP_CONSUME_TYPE"
	PropClientVersion          = "PROP_CLIENT_VERSION"
	PropConsumerStartTimestamp = "PROP_CONSUMER_START_TIMESTAMP"
)

// DecodeConsumerRunningInfo parses a ConsumerRunningInfo as a Java or Go consumer writes it.
// Safe for concurrent use.
func DecodeConsumerRunningInfo(body []byte) (*ConsumerRunningInfo, error) {
	const name = "ConsumerRunningInfo"
	var in struct {
		Jstack          string                     `json:"jstack"`
		MQTable         json.RawMessage            `json:"mqTable"`
		Properties      map[string]json.RawMessage `json:"properties"`
		StatusTable     map[string]ConsumeStatus   `json:"statusTable"`
		SubscriptionSet []SubscriptionData         `json:"subscriptionSet"`
	}
	if err := decodeBodyJSON(escapeControlInStrings(body), &in, name); err != nil {
		return nil, err
	}
	type goProcessQueueInfo struct {
		ProcessQueueInfo
		Dropped *bool `json:"dropped"` // the Go client's spelling
	}
	table, err := decodeQueueTableField[goProcessQueueInfo](in.MQTable, name, "mqTable")
	if err != nil {
		return nil, err
	}
	out := &ConsumerRunningInfo{
		Properties:      make(map[string]string, len(in.Properties)),
		SubscriptionSet: in.SubscriptionSet,
		MQTable:         make(map[MessageQueue]ProcessQueueInfo, len(table)),
		StatusTable:     in.StatusTable,
		Jstack:          in.Jstack,
	}
	if out.StatusTable == nil {
		out.StatusTable = map[string]ConsumeStatus{}
	}
	for k, raw := range in.Properties {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(bytes.TrimSpace(raw)) // a number, a boolean, an enum object: its text
		}
		out.Properties[k] = s
	}
	for mq, row := range table {
		if row.Dropped != nil {
			row.Droped = row.Droped || *row.Dropped
		}
		out.MQTable[mq] = row.ProcessQueueInfo
	}
	return out, nil
}

// escapeControlInStrings returns body with the raw control characters inside its JSON strings
// escaped (\n, \r, \t, else \u00XX); body itself when there are none. The Go client writes
// its goroutine dump into "jstack" unescaped, line breaks and all; fastjson, which reads it on
// a Java admin, accepts that, encoding/json does not.
func escapeControlInStrings(body []byte) []byte {
	var out []byte
	inString, escaped := false, false
	for i, c := range body {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString && c < 0x20:
			if out == nil {
				out = append(make([]byte, 0, len(body)+64), body[:i]...)
			}
			switch c {
			case '\n':
				out = append(out, '\\', 'n')
			case '\r':
				out = append(out, '\\', 'r')
			case '\t':
				out = append(out, '\\', 't')
			default:
				out = append(out, fmt.Sprintf("\\u%04x", c)...)
			}
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	if out == nil {
		return body
	}
	return out
}

// CMResult names of a ConsumeMessageDirectlyResult's consumeResult (Java CMResult), by
// ordinal: the Go client writes the ordinal, Java the name.
var cmResultNames = []string{"CR_SUCCESS", "CR_LATER", "CR_ROLLBACK", "CR_COMMIT", "CR_THROW_EXCEPTION", "CR_RETURN_NULL"}

// ConsumeMessageDirectlyResult is a consumer's answer to CONSUME_MESSAGE_DIRECTLY (Java
// ConsumeMessageDirectlyResult).
type ConsumeMessageDirectlyResult struct {
	AutoCommit     bool   `json:"autoCommit"`
	ConsumeResult  string `json:"consumeResult"` // a CMResult name: CR_SUCCESS, CR_LATER, ...
	Order          bool   `json:"order"`
	Remark         string `json:"remark"`
	SpentTimeMills int64  `json:"spentTimeMills"`
}

// DecodeConsumeMessageDirectlyResult parses a ConsumeMessageDirectlyResult; consumeResult may
// be a CMResult name (Java) or its ordinal (the Go client). Safe for concurrent use.
func DecodeConsumeMessageDirectlyResult(body []byte) (*ConsumeMessageDirectlyResult, error) {
	const name = "ConsumeMessageDirectlyResult"
	var in struct {
		ConsumeMessageDirectlyResult
		ConsumeResult json.RawMessage `json:"consumeResult"`
	}
	in.AutoCommit = true // Java's default
	if err := decodeBodyJSON(body, &in, name); err != nil {
		return nil, err
	}
	out := in.ConsumeMessageDirectlyResult
	bodyNormalizeRaw(&in.ConsumeResult)
	if len(in.ConsumeResult) > 0 {
		var s string
		var n int
		switch {
		case json.Unmarshal(in.ConsumeResult, &s) == nil:
			out.ConsumeResult = s
		case json.Unmarshal(in.ConsumeResult, &n) == nil && n >= 0 && n < len(cmResultNames):
			out.ConsumeResult = cmResultNames[n]
		default:
			return nil, fmt.Errorf("%w: %s: field \"consumeResult\": %s is not a CMResult", ErrBodyJSON, name, in.ConsumeResult)
		}
	}
	return &out, nil
}
