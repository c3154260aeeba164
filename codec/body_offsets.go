package codec

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Offset bodies with numeric (or object) map keys, which fastjson writes BARE:
//
//	consumerOffset.json / GET_ALL_CONSUMER_OFFSET (43):  {"offsetTable":{"TopicTest@G1":{0:250,1:248}}}
//	delayOffset.json / GET_ALL_DELAY_OFFSET (45):        {"offsetTable":{1:3,2:0}}
//	ResetOffsetBody (RESET_CONSUMER_CLIENT_OFFSET 220):  {"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:100}}
//
// (5.x adds "dataVersion" to the first two and a derived "groupTopicMap" to the first;
// PROTOCOL §7.6, §4.6.) The decoders go through QuoteBareKeys; the encoders write bare keys
// by hand because no encoding/json output can contain them (see body_json.go). Java reads
// both bare and quoted keys, so the choice only matters for byte-identical files.

// ConsumerOffsetSerializeWrapper is consumerOffset.json and the body of
// GET_ALL_CONSUMER_OFFSET (43): committed offsets by "topic@group" and queue id.
type ConsumerOffsetSerializeWrapper struct {
	DataVersion *DataVersion               // 5.x; nil = absent (4.x)
	OffsetTable map[string]map[int32]int64 // "topic@group" → queueId → offset
}

// consumerOffsetJSON is the decoding shape; groupTopicMap (derived) is ignored.
type consumerOffsetJSON struct {
	DataVersion *DataVersion               `json:"dataVersion"`
	OffsetTable map[string]map[int32]int64 `json:"offsetTable"`
}

// DecodeConsumerOffsetSerializeWrapper parses consumerOffset.json or a 43 body, bare or
// quoted keys, 4.x or 5.x. The table comes back non-nil. Safe for concurrent use.
func DecodeConsumerOffsetSerializeWrapper(body []byte) (*ConsumerOffsetSerializeWrapper, error) {
	var in consumerOffsetJSON
	if err := decodeBodyJSON(body, &in, "ConsumerOffsetSerializeWrapper"); err != nil {
		return nil, err
	}
	if in.OffsetTable == nil {
		in.OffsetTable = map[string]map[int32]int64{}
	}
	return &ConsumerOffsetSerializeWrapper{DataVersion: in.DataVersion, OffsetTable: in.OffsetTable}, nil
}

// Encode writes what Java writes: bare queue-id keys, map keys ascending, dataVersion only
// when set. pretty gives the tab-indented file layout (one topic@group per line, its queues
// on that line); otherwise compact (the 43 body). Safe for concurrent use if w is not
// modified meanwhile.
func (w *ConsumerOffsetSerializeWrapper) Encode(pretty bool) []byte {
	dst := make([]byte, 0, 64+len(w.OffsetTable)*48)
	dst = append(dst, '{')
	dst = bodyAppendDataVersionField(dst, w.DataVersion, pretty)
	dst = bodyAppendFieldName(dst, "offsetTable", pretty, 1)
	dst = append(dst, '{')
	keys := bodySortedKeys(w.OffsetTable)
	for i, key := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		if pretty {
			dst = append(dst, "\n\t\t"...)
		}
		dst = bodyAppendString(dst, key)
		dst = append(dst, ':')
		dst = bodyAppendIntInt64Map(dst, w.OffsetTable[key])
	}
	if pretty && len(keys) > 0 {
		dst = append(dst, "\n\t"...)
	}
	dst = append(dst, '}')
	if pretty {
		dst = append(dst, '\n')
	}
	return append(dst, '}')
}

// DelayOffsetSerializeWrapper is delayOffset.json and the body of GET_ALL_DELAY_OFFSET (45):
// per delay level, the next ConsumeQueue offset of SCHEDULE_TOPIC_XXXX queue level−1.
type DelayOffsetSerializeWrapper struct {
	DataVersion *DataVersion    // 5.x; nil = absent (4.x)
	OffsetTable map[int32]int64 // delay level → offset
}

// delayOffsetJSON is the decoding shape.
type delayOffsetJSON struct {
	DataVersion *DataVersion    `json:"dataVersion"`
	OffsetTable map[int32]int64 `json:"offsetTable"`
}

// DecodeDelayOffsetSerializeWrapper parses delayOffset.json or a 45 body, bare or quoted
// keys. The table comes back non-nil. Safe for concurrent use.
func DecodeDelayOffsetSerializeWrapper(body []byte) (*DelayOffsetSerializeWrapper, error) {
	var in delayOffsetJSON
	if err := decodeBodyJSON(body, &in, "DelayOffsetSerializeWrapper"); err != nil {
		return nil, err
	}
	if in.OffsetTable == nil {
		in.OffsetTable = map[int32]int64{}
	}
	return &DelayOffsetSerializeWrapper{DataVersion: in.DataVersion, OffsetTable: in.OffsetTable}, nil
}

// Encode writes what Java writes: bare level keys ascending, dataVersion only when set,
// tab-indented when pretty. Safe for concurrent use if w is not modified meanwhile.
func (w *DelayOffsetSerializeWrapper) Encode(pretty bool) []byte {
	dst := make([]byte, 0, 64+len(w.OffsetTable)*16)
	dst = append(dst, '{')
	dst = bodyAppendDataVersionField(dst, w.DataVersion, pretty)
	dst = bodyAppendFieldName(dst, "offsetTable", pretty, 1)
	dst = bodyAppendIntInt64Map(dst, w.OffsetTable)
	if pretty {
		dst = append(dst, '\n')
	}
	return append(dst, '}')
}

// ResetOffsetBody is the body of RESET_CONSUMER_CLIENT_OFFSET (220, broker → client):
// the offsets a consumer must jump to. Java writes Map<MessageQueue,Long> with the queue
// OBJECT as key (fastjson), which the Go client cuts apart by hand (internal/model.go
// parseFastJsonFormat: take the offsetTable text, drop "{{" and "}", split on ",{", cut
// each piece at "}:"); it also accepts gson's [[{queue},offset],...] pair form, which is
// valid JSON. Encode writes the fastjson form, Decode reads both.
type ResetOffsetBody struct {
	OffsetTable map[MessageQueue]int64
}

// Encode writes {"offsetTable":{{"brokerName":..,"queueId":..,"topic":..}:offset,...}}
// compactly, queues ordered by topic, broker name, queue id (the form a Java broker sends;
// the Go client's hand parser needs it compact). Safe for concurrent use if b is not
// modified meanwhile.
func (b *ResetOffsetBody) Encode() []byte {
	dst := make([]byte, 0, 32+len(b.OffsetTable)*64)
	dst = append(dst, `{"offsetTable":`...)
	dst = bodyAppendQueueInt64Map(dst, b.OffsetTable)
	return append(dst, '}')
}

// DecodeResetOffsetBody parses a ResetOffsetBody in fastjson form (queue objects as keys) or
// gson form (an array of [queue, offset] pairs). Safe for concurrent use.
func DecodeResetOffsetBody(body []byte) (*ResetOffsetBody, error) {
	var in struct {
		OffsetTable json.RawMessage `json:"offsetTable"`
	}
	if err := decodeBodyJSON(body, &in, "ResetOffsetBody"); err != nil {
		return nil, err
	}
	out := &ResetOffsetBody{OffsetTable: map[MessageQueue]int64{}}
	bodyNormalizeRaw(&in.OffsetTable)
	if len(in.OffsetTable) == 0 {
		return out, nil
	}
	if in.OffsetTable[0] == '[' {
		var pairs [][2]json.RawMessage
		if err := json.Unmarshal(in.OffsetTable, &pairs); err != nil {
			return nil, bodyJSONError("ResetOffsetBody.offsetTable", err)
		}
		for _, p := range pairs {
			var mq MessageQueue
			var off int64
			if err := json.Unmarshal(p[0], &mq); err != nil {
				return nil, bodyJSONError("ResetOffsetBody.offsetTable", err)
			}
			if err := json.Unmarshal(p[1], &off); err != nil {
				return nil, bodyJSONError("ResetOffsetBody.offsetTable", err)
			}
			out.OffsetTable[mq] = off
		}
		return out, nil
	}
	// QuoteBareKeys turned each queue-object key into a string holding its JSON text.
	var table map[string]int64
	if err := json.Unmarshal(in.OffsetTable, &table); err != nil {
		return nil, bodyJSONError("ResetOffsetBody.offsetTable", err)
	}
	for key, off := range table {
		var mq MessageQueue
		if err := json.Unmarshal([]byte(key), &mq); err != nil {
			return nil, fmt.Errorf("%w: ResetOffsetBody: field \"offsetTable\": key %q is not a MessageQueue", ErrBodyJSON, key)
		}
		out.OffsetTable[mq] = off
	}
	return out, nil
}

// bodyAppendIntInt64Map appends {k:v,...} with bare integer keys in ascending order.
func bodyAppendIntInt64Map(dst []byte, m map[int32]int64) []byte {
	dst = append(dst, '{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = bodyAppendIntKey(dst, int64(k), false)
		dst = strconv.AppendInt(dst, m[k], 10)
	}
	return append(dst, '}')
}

// bodyAppendFieldName appends a top-level or nested key with its colon, on its own
// tab-indented line when pretty. It assumes the key follows '{' or a previous field's value
// (the caller adds no comma; a key after a value gets one here unless it is the first).
func bodyAppendFieldName(dst []byte, name string, pretty bool, depth int) []byte {
	if dst[len(dst)-1] != '{' {
		dst = append(dst, ',')
	}
	if pretty {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, '\t')
		}
	}
	dst = bodyAppendString(dst, name)
	return append(dst, ':')
}

// bodyAppendDataVersionField appends "dataVersion":{...} when dv is set.
func bodyAppendDataVersionField(dst []byte, dv *DataVersion, pretty bool) []byte {
	if dv == nil {
		return dst
	}
	dst = bodyAppendFieldName(dst, "dataVersion", pretty, 1)
	dst = append(dst, `{"counter":`...)
	dst = strconv.AppendInt(dst, dv.Counter, 10)
	dst = append(dst, `,"stateVersion":`...)
	dst = strconv.AppendInt(dst, dv.StateVersion, 10)
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, dv.Timestamp, 10)
	return append(dst, '}')
}
