package codec

import (
	"bytes"
	"slices"
)

// Message properties (PROTOCOL.md §5.4) are a string of `key 0x01 value 0x02` pairs.
// Clients end the string with 0x02; Apache RocketMQ drops the final 0x02 when it
// re-encodes a single message on disk, so readers accept both forms.
//
// Two ways to read them live here. The lenient one (RangeProperties, LookupProperty,
// DecodeProperties) skips malformed pieces the way Java's MessageDecoder does; it reads
// what is already stored, including records an older broker wrote. The strict one
// (ValidateProperties) decides what may be stored at all: the broker refuses a send whose
// properties fail it, and the store refuses to write them.
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

// AppendPropertiesWithout appends props to dst with the named keys left out, each pair
// ended by 0x02. Used to re-encode a message whose properties change (delay delivery,
// retry, transaction commit). It writes only the pairs ValidateProperties accepts and
// drops every other piece — including a pair whose value holds a 0x01, which the lenient
// readers above keep — so that what it returns always validates: a stored record written
// before properties were checked (or by another broker) is re-encoded canonically rather
// than copied with its defects. It does not allocate beyond growing dst.
func AppendPropertiesWithout(dst, props []byte, drop ...string) []byte {
	for len(props) > 0 {
		piece := props
		if i := bytes.IndexByte(props, PropertySeparator); i >= 0 {
			piece, props = props[:i], props[i+1:]
		} else {
			props = nil
		}
		if j, problem, _ := checkPropertyPiece(piece); problem == 0 && !isDropped(piece[:j], drop) {
			dst = append(dst, piece...)
			dst = append(dst, PropertySeparator)
		}
	}
	return dst
}

func isDropped(name []byte, drop []string) bool {
	for _, d := range drop {
		if string(name) == d {
			return true
		}
	}
	return false
}

// ValidateProperties checks that props is well formed: pieces separated by 0x02, each
// `name 0x01 value` with a non-empty name and a non-empty value that holds no 0x01. The
// final 0x02 is optional (clients write it; Apache RocketMQ drops it on disk, so both
// forms are stored), and empty properties are valid. Names may repeat (RocketMQ 4.9's
// batch append adds the batch's properties after an item's own). It does not check UTF-8.
//
// These are the strings every reader parses alike. The readers:
//   - Apache RocketMQ's MessageDecoder.string2messageProperties (4.9/5.x): takes a piece of
//     at least 3 chars whose first 0x01 is neither its first nor its last char; name =
//     before, value = everything after, further 0x01 included.
//   - Older Java (String.split on 0x02, then on 0x01, keeping pieces that split in two):
//     keeps an empty name, and "k 0x01 v 0x01" as k=v.
//   - The Go client (primitive.Message.UnmarshalProperties: bytes.Split on 0x02, then on
//     every 0x01, keeping pieces that split in exactly two): keeps an empty name and an
//     empty value, and drops a pair whose value holds a 0x01.
//
// So an empty name, an empty value and a 0x01 in a value are refused: Java and Go readers
// of the same record (a Java slave or tool, a Go consumer) would see different properties.
// An empty piece or one without 0x01 is skipped by all of them, which makes it junk that a
// byte-level checker of the RocketMQ layout rejects.
//
// The error is a *PropertiesError (wrapping ErrMalformedProperties) naming the first
// malformed piece and its byte offset. ValidateProperties does not allocate unless it
// fails. Safe for concurrent use.
func ValidateProperties(props []byte) error {
	for start, piece := 0, 1; start < len(props); piece++ {
		end := bytes.IndexByte(props[start:], PropertySeparator)
		if end < 0 {
			end = len(props) - start
		}
		if j, problem, at := checkPropertyPiece(props[start : start+end]); problem != 0 {
			return newPropertiesError(props, piece, start, j, problem, at)
		}
		start += end + 1
	}
	return nil
}

// AppendPropertiesDroppingEmptyValues appends props to dst without its pairs whose value
// is empty (`name 0x01` pieces), each pair ended by 0x02. Any other defect fails it with
// ValidateProperties' error (offsets into props) and dst unchanged. Apache RocketMQ drops
// such pairs when it re-encodes a sent message, and Java clients send them (for example
// Message.setKeys with an empty collection writes "KEYS 0x01 0x02"): a broker uses this to
// accept what Apache RocketMQ accepts while storing only well-formed properties.
func AppendPropertiesDroppingEmptyValues(dst, props []byte) ([]byte, error) {
	n := len(dst)
	for start, piece := 0, 1; start < len(props); piece++ {
		end := bytes.IndexByte(props[start:], PropertySeparator)
		if end < 0 {
			end = len(props) - start
		}
		p := props[start : start+end]
		switch j, problem, at := checkPropertyPiece(p); problem {
		case 0:
			dst = append(dst, p...)
			dst = append(dst, PropertySeparator)
		case PropertiesEmptyValue:
		default:
			return dst[:n], newPropertiesError(props, piece, start, j, problem, at)
		}
		start += end + 1
	}
	return dst, nil
}

// checkPropertyPiece checks one piece (the bytes between separators). j is the index of
// its first 0x01 (-1 if none); at, for PropertiesSeparatorInValue, the index of the
// value's 0x01. problem is 0 for a well-formed pair.
func checkPropertyPiece(piece []byte) (j int, problem PropertiesProblem, at int) {
	if len(piece) == 0 {
		return -1, PropertiesEmptyPiece, 0
	}
	j = bytes.IndexByte(piece, NameValueSeparator)
	switch {
	case j < 0:
		return j, PropertiesNoSeparator, 0
	case j == 0:
		return j, PropertiesEmptyName, 0
	case j == len(piece)-1:
		return j, PropertiesEmptyValue, 0
	}
	if k := bytes.IndexByte(piece[j+1:], NameValueSeparator); k >= 0 {
		return j, PropertiesSeparatorInValue, j + 1 + k
	}
	return j, 0, 0
}

// newPropertiesError builds the error for the malformed piece at props[start:]; j and at
// are checkPropertyPiece's, relative to the piece.
func newPropertiesError(props []byte, piece, start, j int, problem PropertiesProblem, at int) error {
	e := &PropertiesError{Piece: piece, Offset: start, Problem: problem}
	switch problem {
	case PropertiesEmptyValue, PropertiesSeparatorInValue:
		name := props[start : start+j]
		if len(name) > maxErrorNameBytes {
			name = name[:maxErrorNameBytes]
		}
		e.Name = string(name)
	}
	if problem == PropertiesSeparatorInValue {
		e.At = start + at
	}
	return e
}

// ParseDecimal parses an optionally signed decimal int32 — a numeric property value such as
// DELAY, REAL_QID or TRANSACTION_CHECK_TIMES — without allocating.
func ParseDecimal(b []byte) (int, bool) {
	neg := false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 10 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 1<<31-1 {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}
