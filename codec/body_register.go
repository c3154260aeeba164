package codec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zlib"
)

// RegisterBrokerBody is the body of REGISTER_BROKER (103), PROTOCOL §3.8, §4.6.
//
// With header compressed=false it is JSON:
//
//	{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{...},"topicConfigTable":{...}}}
//
// (a 5.x broker also sends the AndMapping fields). With compressed=true it is one zlib
// stream (Java: DeflaterOutputStream, BEST_COMPRESSION) of big-endian length-prefixed items:
//
//	int32 len, DataVersion JSON
//	int32 topicCount, then per topic: int32 len, TopicConfig text "name read write perm filterType[ attributesJSON]"
//	int32 len, filterServerList JSON
//	only when the sender's version ≥ V5_0_0 (413): int32 count, then per item: int32 len, TopicQueueMappingInfo JSON
//
// The topic text form drops topicSysFlag and order (the namesrv does not need them).
// 4.9.x namesrvs accept exactly five space-separated fields, 5.x ones five or six. Java 5.x
// brokers always append the attributes ("{}" when empty), which a 4.9.x namesrv rejects;
// EncodeCompressed appends them only when there are some, so an attribute-less table stays
// readable by both (5.x reads a missing sixth field as no attributes).
// Java's default is compressed=false (broker config compressedRegister).
type RegisterBrokerBody struct {
	FilterServerList            []string                    `json:"filterServerList"` // always [] in practice
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
}

// MaxRegisterBrokerBodyInflatedBytes caps what a compressed register body may inflate to.
// Java has no cap; ours stops a small zlib bomb from taking the namesrv's memory. A table of
// 100,000 topics needs about 5 MiB.
const MaxRegisterBrokerBodyInflatedBytes = 64 << 20

// registerMappingVersion is MQVersion V5_0_0: from it on the compressed body carries the
// static-topic mapping list (and the topic text carries attributes).
const registerMappingVersion = 413

// RegisterBrokerBodyCRC32 is the header field bodyCrc32 for a register body: CRC-32 (IEEE)
// of the body bytes as sent (compressed or not), masked to 31 bits — RocketMQ's one CRC
// helper, the same as a record's BODYCRC. 0 means "not checked".
func RegisterBrokerBodyCRC32(body []byte) int32 { return BodyCRC(body) }

// Encode writes the uncompressed (JSON) form, compact.
// Safe for concurrent use if b is not modified meanwhile.
func (b *RegisterBrokerBody) Encode() ([]byte, error) {
	out := *b
	if out.FilterServerList == nil {
		out.FilterServerList = []string{}
	}
	return encodeBodyJSON(&out, false, "RegisterBrokerBody")
}

// EncodeCompressed writes the compressed form for a sender of version senderVersion (the
// MQVersion ordinal in the request header; ≥ 413 adds attributes and the mapping list).
// Topics are written in name order. A topic name or attribute containing a space cannot be
// carried by the text form and is rejected (Java would send it and the namesrv would lose
// it). Safe for concurrent use if b is not modified meanwhile.
func (b *RegisterBrokerBody) EncodeCompressed(senderVersion int32) ([]byte, error) {
	const name = "RegisterBrokerBody"
	w5 := senderVersion >= registerMappingVersion
	var plain []byte
	dv, err := encodeBodyJSON(&b.TopicConfigSerializeWrapper.DataVersion, false, name)
	if err != nil {
		return nil, err
	}
	plain = bodyAppendLenPrefixed(plain, dv)

	table := b.TopicConfigSerializeWrapper.TopicConfigTable
	plain = binary.BigEndian.AppendUint32(plain, uint32(len(table)))
	for _, topic := range bodySortedKeys(table) {
		tc := table[topic]
		text, err := topicConfigText(&tc, w5)
		if err != nil {
			return nil, err
		}
		plain = bodyAppendLenPrefixed(plain, text)
	}

	filters := b.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	fl, err := encodeBodyJSON(filters, false, name)
	if err != nil {
		return nil, err
	}
	plain = bodyAppendLenPrefixed(plain, fl)

	if w5 {
		infos, err := mappingInfoItems(b.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap)
		if err != nil {
			return nil, err
		}
		plain = binary.BigEndian.AppendUint32(plain, uint32(len(infos)))
		for _, item := range infos {
			plain = bodyAppendLenPrefixed(plain, item)
		}
	}

	var out bytes.Buffer
	zw, err := zlib.NewWriterLevel(&out, zlib.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBodyCompressed, name, err)
	}
	if _, err := zw.Write(plain); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBodyCompressed, name, err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBodyCompressed, name, err)
	}
	return out.Bytes(), nil
}

// DecodeRegisterBrokerBody parses a register body. compressed is the request header's
// "compressed" field; senderVersion the request's version (the mapping list is read only
// when it is ≥ 413, as Java does; bytes after the last expected item are ignored, also as
// Java does). Safe for concurrent use.
func DecodeRegisterBrokerBody(body []byte, compressed bool, senderVersion int32) (*RegisterBrokerBody, error) {
	if !compressed {
		b := new(RegisterBrokerBody)
		if err := decodeBodyJSON(body, b, "RegisterBrokerBody"); err != nil {
			return nil, err
		}
		if b.FilterServerList == nil {
			b.FilterServerList = []string{}
		}
		if b.TopicConfigSerializeWrapper.TopicConfigTable == nil {
			b.TopicConfigSerializeWrapper.TopicConfigTable = map[string]TopicConfig{}
		}
		return b, nil
	}
	plain, err := inflateRegisterBody(body, MaxRegisterBrokerBodyInflatedBytes)
	if err != nil {
		return nil, err
	}
	r := registerReader{buf: plain}
	b := &RegisterBrokerBody{}
	w := &b.TopicConfigSerializeWrapper

	dv, err := r.item("dataVersion")
	if err != nil {
		return nil, err
	}
	if err := decodeBodyJSON(dv, &w.DataVersion, "RegisterBrokerBody.dataVersion"); err != nil {
		return nil, err
	}

	count, err := r.count("topicCount")
	if err != nil {
		return nil, err
	}
	w.TopicConfigTable = make(map[string]TopicConfig, min(count, 1024))
	for i := range count {
		text, err := r.item(fmt.Sprintf("topicConfig[%d]", i))
		if err != nil {
			return nil, err
		}
		tc, err := parseTopicConfigText(string(text))
		if err != nil {
			return nil, err
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}

	fl, err := r.item("filterServerList")
	if err != nil {
		return nil, err
	}
	// Java logs and keeps an empty list when this JSON is bad; so do we.
	if json.Unmarshal(fl, &b.FilterServerList) != nil || b.FilterServerList == nil {
		b.FilterServerList = []string{}
	}

	if senderVersion >= registerMappingVersion {
		n, err := r.count("topicQueueMappingCount")
		if err != nil {
			return nil, err
		}
		items := make([]json.RawMessage, 0, min(n, 1024))
		for i := range n {
			item, err := r.item(fmt.Sprintf("topicQueueMappingInfo[%d]", i))
			if err != nil {
				return nil, err
			}
			fixed, err := quoteBareKeys(item)
			if err != nil {
				return nil, fmt.Errorf("%w: RegisterBrokerBody: topicQueueMappingInfo[%d]: %w", ErrBodyJSON, i, err)
			}
			items = append(items, fixed)
		}
		if w.TopicQueueMappingInfoMap, err = mappingInfoMap(items); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// inflateRegisterBody inflates a zlib stream, refusing more than maxBytes.
func inflateRegisterBody(body []byte, maxBytes int) ([]byte, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBodyCompressed, err)
	}
	defer zr.Close()
	plain, err := io.ReadAll(io.LimitReader(zr, int64(maxBytes)+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBodyCompressed, err)
	}
	if len(plain) > maxBytes {
		return nil, fmt.Errorf("%w: register body inflates past %d bytes", ErrBodyTooLarge, maxBytes)
	}
	return plain, nil
}

// registerReader walks the inflated, length-prefixed items.
type registerReader struct {
	buf []byte
	off int
}

// count reads an int32 count; negative is an error (Java would fail allocating).
func (r *registerReader) count(field string) (int, error) {
	if len(r.buf)-r.off < 4 {
		return 0, fmt.Errorf("%w: %s: truncated at offset %d", ErrBodyCompressed, field, r.off)
	}
	n := int32(binary.BigEndian.Uint32(r.buf[r.off:]))
	r.off += 4
	if n < 0 {
		return 0, fmt.Errorf("%w: %s: negative value %d", ErrBodyCompressed, field, n)
	}
	return int(n), nil
}

// item reads an int32 length and that many bytes (a view into the inflated buffer).
func (r *registerReader) item(field string) ([]byte, error) {
	n, err := r.count(field + " length")
	if err != nil {
		return nil, err
	}
	if len(r.buf)-r.off < n {
		return nil, fmt.Errorf("%w: %s: length %d runs past the end (%d bytes left)", ErrBodyCompressed, field, n, len(r.buf)-r.off)
	}
	item := r.buf[r.off : r.off+n]
	r.off += n
	return item, nil
}

// bodyAppendLenPrefixed appends a big-endian int32 length and p.
func bodyAppendLenPrefixed(dst, p []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(p)))
	return append(dst, p...)
}

// topicConfigText renders Java's TopicConfig.encode text form.
func topicConfigText(tc *TopicConfig, withAttributes bool) ([]byte, error) {
	const body = "RegisterBrokerBody"
	if strings.ContainsRune(tc.TopicName, ' ') {
		return nil, bodyFieldError(body, "topicName", fmt.Sprintf("%q contains a space", tc.TopicName))
	}
	filter := tc.TopicFilterType
	if filter == "" {
		filter = TopicFilterSingleTag
	}
	if filter != TopicFilterSingleTag && filter != TopicFilterMultiTag {
		return nil, bodyFieldError(body, "topicFilterType", fmt.Sprintf("%q of topic %q", filter, tc.TopicName))
	}
	dst := make([]byte, 0, len(tc.TopicName)+32)
	dst = append(dst, tc.TopicName...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(tc.ReadQueueNums), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(tc.WriteQueueNums), 10)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(tc.Perm), 10)
	dst = append(dst, ' ')
	dst = append(dst, filter...)
	if withAttributes && len(tc.Attributes) > 0 {
		attrs, err := encodeBodyJSON(tc.Attributes, false, body)
		if err != nil {
			return nil, err
		}
		if bytes.IndexByte(attrs, ' ') >= 0 {
			return nil, bodyFieldError(body, "attributes", fmt.Sprintf("of topic %q contain a space", tc.TopicName))
		}
		dst = append(dst, ' ')
		dst = append(dst, attrs...)
	}
	return dst, nil
}

// parseTopicConfigText parses Java's TopicConfig text form: five space-separated fields
// (name, read, write, perm, filter type) and optionally attributes JSON. Java splits on every
// space and silently drops attributes it cannot parse; we take the whole remainder as the
// attributes JSON and drop it the same way when it does not parse. topicSysFlag and order
// are not carried: they come back as 0 / false, as in Java.
func parseTopicConfigText(text string) (TopicConfig, error) {
	const body = "RegisterBrokerBody"
	parts := strings.SplitN(text, " ", 6)
	if len(parts) < 5 {
		return TopicConfig{}, bodyFieldError(body, "topicConfig", fmt.Sprintf("%q has %d fields, want at least 5", text, len(parts)))
	}
	tc := NewTopicConfig(parts[0])
	nums := [3]*int32{&tc.ReadQueueNums, &tc.WriteQueueNums, &tc.Perm}
	names := [3]string{"readQueueNums", "writeQueueNums", "perm"}
	for i := range nums {
		v, err := strconv.ParseInt(parts[1+i], 10, 32)
		if err != nil {
			return TopicConfig{}, bodyFieldError(body, names[i], fmt.Sprintf("%q of topic %q", parts[1+i], parts[0]))
		}
		*nums[i] = int32(v)
	}
	switch parts[4] {
	case TopicFilterSingleTag, TopicFilterMultiTag:
		tc.TopicFilterType = parts[4]
	default:
		return TopicConfig{}, bodyFieldError(body, "topicFilterType", fmt.Sprintf("%q of topic %q", parts[4], parts[0]))
	}
	if len(parts) == 6 && parts[5] != "" {
		var attrs map[string]string
		if json.Unmarshal([]byte(parts[5]), &attrs) == nil && attrs != nil {
			tc.Attributes = attrs
		}
	}
	return tc, nil
}

// mappingInfoItems splits the topicQueueMappingInfoMap object (topic → info) into its
// values, ordered by topic.
func mappingInfoItems(raw json.RawMessage) ([][]byte, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, bodyJSONError("RegisterBrokerBody.topicQueueMappingInfoMap", err)
	}
	items := make([][]byte, 0, len(m))
	for _, topic := range bodySortedKeys(m) {
		items = append(items, m[topic])
	}
	return items, nil
}

// mappingInfoMap rebuilds topic → info from the compressed list; like Java it keys each
// item by its own "topic" field. No items gives nil (absent), which encodes the same way.
func mappingInfoMap(items []json.RawMessage) (json.RawMessage, error) {
	if len(items) == 0 {
		return nil, nil
	}
	m := make(map[string]json.RawMessage, len(items))
	for i, item := range items {
		var head struct {
			Topic string `json:"topic"`
		}
		if err := json.Unmarshal(item, &head); err != nil {
			return nil, bodyJSONError(fmt.Sprintf("RegisterBrokerBody.topicQueueMappingInfo[%d]", i), err)
		}
		m[head.Topic] = item
	}
	return encodeBodyJSON(m, false, "RegisterBrokerBody")
}
