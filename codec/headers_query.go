package codec

// QueryMessageRequestHeader is the header of QUERY_MESSAGE (12), §3.4.
type QueryMessageRequestHeader struct {
	Topic          string // topic, required
	Key            string // key, required: a KEYS entry, or a UNIQ_KEY when UniqueKeyQuery
	MaxNum         int32  // maxNum, required
	BeginTimestamp int64  // beginTimestamp, required, ms
	EndTimestamp   int64  // endTimestamp, required, ms
	UniqueKeyQuery bool   // _UNIQUE_KEY_QUERY: Key is a UNIQ_KEY (maxNum then ignored)
}

// Decode reads the keys.
func (h *QueryMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "QueryMessageRequestHeader"}
	*h = QueryMessageRequestHeader{
		Topic:          r.str("topic", true),
		Key:            r.str("key", true),
		MaxNum:         r.i32("maxNum", true),
		BeginTimestamp: r.i64("beginTimestamp", true),
		EndTimestamp:   r.i64("endTimestamp", true),
		UniqueKeyQuery: r.boolean("_UNIQUE_KEY_QUERY", false, false),
	}
	return r.err
}

// Encode writes the keys (_UNIQUE_KEY_QUERY only when true).
func (h *QueryMessageRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["key"] = h.Key
	extPutInt32(ext, "maxNum", h.MaxNum)
	extPutInt64(ext, "beginTimestamp", h.BeginTimestamp)
	extPutInt64(ext, "endTimestamp", h.EndTimestamp)
	if h.UniqueKeyQuery {
		extPutBool(ext, "_UNIQUE_KEY_QUERY", true)
	}
}

// QueryMessageResponseHeader is the response header of QUERY_MESSAGE (12).
type QueryMessageResponseHeader struct {
	IndexLastUpdateTimestamp int64 // indexLastUpdateTimestamp, required
	IndexLastUpdatePhyoffset int64 // indexLastUpdatePhyoffset, required
}

// Decode reads the keys.
func (h *QueryMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "QueryMessageResponseHeader"}
	*h = QueryMessageResponseHeader{
		IndexLastUpdateTimestamp: r.i64("indexLastUpdateTimestamp", true),
		IndexLastUpdatePhyoffset: r.i64("indexLastUpdatePhyoffset", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *QueryMessageResponseHeader) Encode(ext map[string]string) {
	extPutInt64(ext, "indexLastUpdateTimestamp", h.IndexLastUpdateTimestamp)
	extPutInt64(ext, "indexLastUpdatePhyoffset", h.IndexLastUpdatePhyoffset)
}

// ViewMessageByIDRequestHeader is the header of VIEW_MESSAGE_BY_ID (33), §3.4.
type ViewMessageByIDRequestHeader struct {
	Offset int64  // offset, required: CommitLog offset (from the offsetMsgId)
	Topic  string // topic
}

// Decode reads the keys.
func (h *ViewMessageByIDRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ViewMessageByIDRequestHeader"}
	*h = ViewMessageByIDRequestHeader{Offset: r.i64("offset", true), Topic: r.str("topic", false)}
	return r.err
}

// Encode writes the keys.
func (h *ViewMessageByIDRequestHeader) Encode(ext map[string]string) {
	extPutInt64(ext, "offset", h.Offset)
	extPutString(ext, "topic", h.Topic)
}
