package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Client bodies: HeartbeatData (HEART_BEAT 34 request, PROTOCOL §4.3) and the consumer
// list (GET_CONSUMER_LIST_BY_GROUP 38 response, §4.4).
//
// The Go client (internal/model.go heartbeatData, marshalled with jsoniter) differs from
// Java in ways a broker must absorb:
//   - codeSet items are JSON strings ("2598919"), not numbers: its utils.Set marshals every
//     item as a quoted string. TagCodeSet accepts both.
//   - those codes hash UTF-8 bytes (utils.HashString), Java's String.hashCode hashes UTF-16
//     units: they differ for non-ASCII tags, so a broker must recompute them from tagsSet
//     (SubscriptionData.JavaTagCodes) before filtering ConsumeQueue tag codes.
//   - the same Set writes tags as "\"" + tag + "\"" without escaping, so a tag holding '"' or
//     '\\' makes the whole heartbeat invalid JSON (DecodeHeartbeatData fails, as the Java
//     broker's parser does).
//   - subVersion is time.Now().UnixNano(), Java's is milliseconds; both fit int64.
//   - sets are sorted by their JSON text; tagsSet/codeSet are [] (never null) when empty.
//   - every push consumer also subscribes "%RETRY%<group>" with subString "*".
//   - no heartbeatFingerprint / withoutSub keys (5.x Java adds them; absent means 0/false).
//
// Go capture (PROTOCOL §4.3):
//
//	{"clientID":"192.0.2.2@18667","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[{"groupName":"G1",
//	 "consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",
//	 "subscriptionDataSet":[{"classFilterMode":false,"topic":"TopicTest","subString":"TagA || TagB",
//	 "tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],"subVersion":1796205192605311021,
//	 "expressionType":"TAG"}],"unitMode":false}]}

// ConsumeType is how a consumer gets messages (Java enum ConsumeType, by name).
type ConsumeType string

// Consume types.
const (
	ConsumeActively  ConsumeType = "CONSUME_ACTIVELY"  // pull consumer
	ConsumePassively ConsumeType = "CONSUME_PASSIVELY" // push consumer
	ConsumePop       ConsumeType = "CONSUME_POP"       // 5.x pop consumer
)

// MessageModel is clustering (queues shared out) or broadcasting (every member gets all).
type MessageModel string

// Message models.
const (
	MessageModelClustering   MessageModel = "CLUSTERING"
	MessageModelBroadcasting MessageModel = "BROADCASTING"
)

// ConsumeFromWhere is where a group with no stored offset starts (Java enum by name; the
// deprecated CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST, CONSUME_FROM_MIN_OFFSET
// and CONSUME_FROM_MAX_OFFSET may still arrive and are kept as they are).
type ConsumeFromWhere string

// Start points.
const (
	ConsumeFromLastOffset  ConsumeFromWhere = "CONSUME_FROM_LAST_OFFSET"
	ConsumeFromFirstOffset ConsumeFromWhere = "CONSUME_FROM_FIRST_OFFSET"
	ConsumeFromTimestamp   ConsumeFromWhere = "CONSUME_FROM_TIMESTAMP"
)

// Subscription expression types and the match-all subString.
const (
	ExpressionTypeTag   = "TAG"
	ExpressionTypeSQL92 = "SQL92"
	SubscriptionAll     = "*"
)

// HeartbeatData is the body of HEART_BEAT (34). Field order is fastjson's key order.
type HeartbeatData struct {
	ClientID        string         `json:"clientID"` // ip@pid or ip@instanceName[@unitName]
	ConsumerDataSet []ConsumerData `json:"consumerDataSet"`
	// HeartbeatFingerprint (5.x) ≠ 0 selects the broker's heartbeat-V2 path.
	HeartbeatFingerprint int32          `json:"heartbeatFingerprint"`
	ProducerDataSet      []ProducerData `json:"producerDataSet"`
	WithoutSub           bool           `json:"withoutSub"` // 5.x
}

// ProducerData names one producer group of the client.
type ProducerData struct {
	GroupName string `json:"groupName"`
}

// ConsumerData is one consumer group of the client with its subscriptions.
type ConsumerData struct {
	ConsumeFromWhere    ConsumeFromWhere   `json:"consumeFromWhere"`
	ConsumeType         ConsumeType        `json:"consumeType"`
	GroupName           string             `json:"groupName"`
	MessageModel        MessageModel       `json:"messageModel"`
	SubscriptionDataSet []SubscriptionData `json:"subscriptionDataSet"`
	UnitMode            bool               `json:"unitMode"`
}

// SubscriptionData is one topic subscription of a consumer group.
type SubscriptionData struct {
	ClassFilterMode bool       `json:"classFilterMode"`
	CodeSet         TagCodeSet `json:"codeSet"`        // tag hash codes as the client computed them
	ExpressionType  string     `json:"expressionType"` // TAG or SQL92
	SubString       string     `json:"subString"`      // "*", "tagA || tagB" or an SQL92 expression
	SubVersion      int64      `json:"subVersion"`     // Java: ms; Go client: ns
	TagsSet         []string   `json:"tagsSet"`
	Topic           string     `json:"topic"`
}

// JavaTagCodes returns the tag codes Java would send for TagsSet: String.hashCode over
// UTF-16 (JavaHashCode), in TagsSet order. Use these, not CodeSet, to match ConsumeQueue
// tag codes: the Go client hashes UTF-8 bytes.
func (s *SubscriptionData) JavaTagCodes() TagCodeSet {
	codes := make(TagCodeSet, len(s.TagsSet))
	for i, tag := range s.TagsSet {
		codes[i] = JavaHashCode(tag)
	}
	return codes
}

// TagCodeSet is SubscriptionData.codeSet. It decodes JSON numbers (Java) and decimal strings
// (the Go client), each within int32, and encodes numbers as Java does.
type TagCodeSet []int32

// UnmarshalJSON accepts [1,2], ["1","2"], a mix of both, and null. Its errors name the
// field; the body decoders wrap them in ErrBodyJSON.
func (c *TagCodeSet) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*c = nil
		return nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return errors.New(`field "codeSet": not an array`)
	}
	codes := make(TagCodeSet, 0, len(items))
	for _, item := range items {
		text := item
		if len(item) > 0 && item[0] == '"' {
			var s string
			if err := json.Unmarshal(item, &s); err != nil {
				return fmt.Errorf(`field "codeSet": bad string %s`, item)
			}
			text = []byte(s)
		}
		v, err := strconv.ParseInt(string(text), 10, 32)
		if err != nil {
			return fmt.Errorf(`field "codeSet": %s is not an int32`, item)
		}
		codes = append(codes, int32(v))
	}
	*c = codes
	return nil
}

// MarshalJSON writes [] for an empty set (Java never sends null) and numbers otherwise.
func (c TagCodeSet) MarshalJSON() ([]byte, error) {
	dst := make([]byte, 0, 2+len(c)*11)
	dst = append(dst, '[')
	for i, v := range c {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(v), 10)
	}
	return append(dst, ']'), nil
}

// DecodeHeartbeatData parses a heartbeat body from a Go or Java client.
// Safe for concurrent use.
func DecodeHeartbeatData(body []byte) (*HeartbeatData, error) {
	hb := new(HeartbeatData)
	if err := decodeBodyJSON(body, hb, "HeartbeatData"); err != nil {
		return nil, err
	}
	return hb, nil
}

// Encode writes the heartbeat as a Java client does: keys alphabetical, codeSet as numbers,
// empty sets as [] (never null). Safe for concurrent use if hb is not modified meanwhile.
func (hb *HeartbeatData) Encode() ([]byte, error) {
	out := *hb
	if out.ProducerDataSet == nil {
		out.ProducerDataSet = []ProducerData{}
	}
	out.ConsumerDataSet = make([]ConsumerData, len(hb.ConsumerDataSet))
	for i, cd := range hb.ConsumerDataSet {
		subs := make([]SubscriptionData, len(cd.SubscriptionDataSet))
		for j, sd := range cd.SubscriptionDataSet {
			if sd.TagsSet == nil {
				sd.TagsSet = []string{}
			}
			subs[j] = sd
		}
		cd.SubscriptionDataSet = subs
		out.ConsumerDataSet[i] = cd
	}
	return encodeBodyJSON(&out, false, "HeartbeatData")
}

// ConsumerListBody is the body of a GET_CONSUMER_LIST_BY_GROUP (38) response:
// {"consumerIdList":["10.0.0.5@1234",...]}. The Go client reads it with gjson
// (consumer/consumer.go findConsumerList) and takes queues only if its own id is listed.
type ConsumerListBody struct {
	ConsumerIDList []string `json:"consumerIdList"`
}

// Encode writes {"consumerIdList":[...]} ([] when empty). Safe for concurrent use if b is
// not modified meanwhile.
func (b *ConsumerListBody) Encode() ([]byte, error) {
	out := *b
	if out.ConsumerIDList == nil {
		out.ConsumerIDList = []string{}
	}
	return encodeBodyJSON(&out, false, "ConsumerListBody")
}

// DecodeConsumerListBody parses a consumer list response body. Safe for concurrent use.
func DecodeConsumerListBody(body []byte) (*ConsumerListBody, error) {
	b := new(ConsumerListBody)
	if err := decodeBodyJSON(body, b, "ConsumerListBody"); err != nil {
		return nil, err
	}
	return b, nil
}

// CheckClientRequestBody is the body of CHECK_CLIENT_CONFIG (46), which a Java consumer with
// an SQL92 subscription sends to every broker at start to have its expression checked.
type CheckClientRequestBody struct {
	ClientID         string            `json:"clientId"`
	Group            string            `json:"group"`
	SubscriptionData *SubscriptionData `json:"subscriptionData"`
}

// DecodeCheckClientRequestBody parses a CHECK_CLIENT_CONFIG body (fastjson or JSON).
func DecodeCheckClientRequestBody(body []byte) (*CheckClientRequestBody, error) {
	b := new(CheckClientRequestBody)
	if err := decodeBodyJSON(body, b, "CheckClientRequestBody"); err != nil {
		return nil, err
	}
	return b, nil
}

// Encode writes the body as the Java client does (keys in fastjson's alphabetical order).
func (b *CheckClientRequestBody) Encode() ([]byte, error) {
	return encodeBodyJSON(b, false, "CheckClientRequestBody")
}
