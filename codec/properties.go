package codec

import (
	"bytes"
	"slices"
)

// Message properties (PROTOCOL.md §5.4) are a string of `key 0x01 value 0x02` pairs.
// Clients end the string with 0x02; Apache RocketMQ drops the final 0x02 when it
// re-encodes a single message on disk, so readers accept both forms.
const (
	NameValueSeparator byte = 0x01
	PropertySeparator  byte = 0x02
)

// Property keys RocketMQ clients and brokers use (MessageConst).
const (
	PropertyKeys                      = "KEYS"
	PropertyTags                      = "TAGS"
	PropertyWaitStoreMsgOK            = "WAIT"
	PropertyDelayTimeLevel            = "DELAY"
	PropertyRetryTopic                = "RETRY_TOPIC"
	PropertyRealTopic                 = "REAL_TOPIC"
	PropertyRealQueueID               = "REAL_QID"
	PropertyTransactionPrepared       = "TRAN_MSG"
	PropertyProducerGroup             = "PGROUP"
	PropertyMinOffset                 = "MIN_OFFSET"
	PropertyMaxOffset                 = "MAX_OFFSET"
	PropertyUniqClientMessageIDKey    = "UNIQ_KEY"
	PropertyMaxReconsumeTimes         = "MAX_RECONSUME_TIMES"
	PropertyReconsumeTime             = "RECONSUME_TIME"
	PropertyConsumeStartTimestamp     = "CONSUME_START_TIME"
	PropertyOriginMessageID           = "ORIGIN_MESSAGE_ID"
	PropertyTransactionPreparedQueue  = "TRAN_PREPARED_QUEUE_OFFSET"
	PropertyTransactionCheckTimes     = "TRANSACTION_CHECK_TIMES"
	PropertyCheckImmunityTimeInSecond = "CHECK_IMMUNITY_TIME_IN_SECONDS"
	PropertyTransactionID             = "__transactionId__"
	PropertyCluster                   = "CLUSTER"
	PropertyMsgRegion                 = "MSG_REGION"
	PropertyTraceSwitch               = "TRACE_ON"
	PropertyCorrelationID             = "CORRELATION_ID"
	PropertyReplyToClient             = "REPLY_TO_CLIENT"
	PropertyMessageTTL                = "TTL"
	PropertyArriveTime                = "ARRIVE_TIME"
	PropertyMessageType               = "MSG_TYPE"
	PropertyShardingKeyJava           = "__SHARDINGKEY"
	PropertyShardingKeyGo             = "SHARDING_KEY"
	PropertyCRC32                     = "__CRC32#"
)

// AppendProperty appends `key 0x01 value 0x02`. Empty keys or values are not
// written, as RocketMQ never writes them.
func AppendProperty(dst []byte, key, value string) []byte {
	if key == "" || value == "" {
		return dst
	}
	dst = append(dst, key...)
	dst = append(dst, NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, PropertySeparator)
}

// EncodeProperties encodes a map with its keys in sorted order (deterministic bytes;
// RocketMQ's own order is a HashMap's and carries no meaning).
func EncodeProperties(props map[string]string) []byte {
	keys := make([]string, 0, len(props))
	size := 0
	for k, v := range props {
		keys = append(keys, k)
		size += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	dst := make([]byte, 0, size)
	for _, k := range keys {
		dst = AppendProperty(dst, k, props[k])
	}
	return dst
}

// RangeProperties calls fn for every well-formed pair in order, until fn returns
// false. A piece is well formed, as in RocketMQ's parser, when it has a 0x01 that is
// neither its first nor its last byte; other pieces are skipped. k and v are views
// into props. It does not allocate.
func RangeProperties(props []byte, fn func(key, value []byte) bool) {
	for len(props) > 0 {
		var piece []byte
		if i := bytes.IndexByte(props, PropertySeparator); i >= 0 {
			piece, props = props[:i], props[i+1:]
		} else {
			piece, props = props, nil
		}
		if j := bytes.IndexByte(piece, NameValueSeparator); j > 0 && j < len(piece)-1 {
			if !fn(piece[:j], piece[j+1:]) {
				return
			}
		}
	}
}

// LookupProperty returns the value of key (a view into props) without allocating.
// When a key appears twice the last one wins, as with RocketMQ's map.
func LookupProperty(props []byte, key string) (value []byte, ok bool) {
	RangeProperties(props, func(k, v []byte) bool {
		if string(k) == key {
			value, ok = v, true
		}
		return true
	})
	return value, ok
}

// DecodeProperties parses props into a new map. It never fails: malformed pieces are
// skipped exactly as RocketMQ's parser skips them.
func DecodeProperties(props []byte) map[string]string {
	m := make(map[string]string)
	RangeProperties(props, func(k, v []byte) bool {
		m[string(k)] = string(v)
		return true
	})
	return m
}

// AppendPropertiesWithout appends props to dst with the named keys left out
// (well-formed pairs only, each ended by 0x02). Used to re-encode a message whose
// properties change (delay delivery, retry, transaction commit).
func AppendPropertiesWithout(dst, props []byte, drop ...string) []byte {
	RangeProperties(props, func(k, v []byte) bool {
		for _, d := range drop {
			if string(k) == d {
				return true
			}
		}
		dst = append(dst, k...)
		dst = append(dst, NameValueSeparator)
		dst = append(dst, v...)
		dst = append(dst, PropertySeparator)
		return true
	})
	return dst
}
