package codec

import "strings"

// QueryConsumerOffsetRequestHeader is the header of QUERY_CONSUMER_OFFSET (14), §3.3.
type QueryConsumerOffsetRequestHeader struct {
	ConsumerGroup     string // consumerGroup, required
	Topic             string // topic, required
	QueueID           int32  // queueId, required
	SetZeroIfNotFound bool   // setZeroIfNotFound; absent reads as true (Java treats null so)
}

// Decode reads the keys.
func (h *QueryConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "QueryConsumerOffsetRequestHeader"}
	*h = QueryConsumerOffsetRequestHeader{
		ConsumerGroup:     r.str("consumerGroup", true),
		Topic:             r.str("topic", true),
		QueueID:           r.i32("queueId", true),
		SetZeroIfNotFound: r.boolean("setZeroIfNotFound", false, true),
	}
	return r.err
}

// Encode writes the keys.
func (h *QueryConsumerOffsetRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
	extPutBool(ext, "setZeroIfNotFound", h.SetZeroIfNotFound)
}

// OffsetResponseHeader is the response header {offset} of QUERY_CONSUMER_OFFSET (14),
// GET_MAX_OFFSET (30), GET_MIN_OFFSET (31) and SEARCH_OFFSET_BY_TIMESTAMP (29).
type OffsetResponseHeader struct {
	Offset int64 // offset, required
}

// Decode reads the key.
func (h *OffsetResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "OffsetResponseHeader"}
	*h = OffsetResponseHeader{Offset: r.i64("offset", true)}
	return r.err
}

// Encode writes the key.
func (h *OffsetResponseHeader) Encode(ext map[string]string) { extPutInt64(ext, "offset", h.Offset) }

// UpdateConsumerOffsetRequestHeader is the header of UPDATE_CONSUMER_OFFSET (15), §3.3.
type UpdateConsumerOffsetRequestHeader struct {
	ConsumerGroup string // consumerGroup, required
	Topic         string // topic, required
	QueueID       int32  // queueId, required
	CommitOffset  int64  // commitOffset, required
}

// Decode reads the keys.
func (h *UpdateConsumerOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "UpdateConsumerOffsetRequestHeader"}
	*h = UpdateConsumerOffsetRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		Topic:         r.str("topic", true),
		QueueID:       r.i32("queueId", true),
		CommitOffset:  r.i64("commitOffset", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *UpdateConsumerOffsetRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
	extPutInt64(ext, "commitOffset", h.CommitOffset)
}

// GetMaxOffsetRequestHeader is the header of GET_MAX_OFFSET (30); the response is an
// OffsetResponseHeader.
type GetMaxOffsetRequestHeader struct {
	Topic     string // topic, required
	QueueID   int32  // queueId, required
	Committed bool   // committed; absent reads as true
}

// Decode reads the keys.
func (h *GetMaxOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetMaxOffsetRequestHeader"}
	*h = GetMaxOffsetRequestHeader{
		Topic:     r.str("topic", true),
		QueueID:   r.i32("queueId", true),
		Committed: r.boolean("committed", false, true),
	}
	return r.err
}

// Encode writes the keys.
func (h *GetMaxOffsetRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
	extPutBool(ext, "committed", h.Committed)
}

// GetMinOffsetRequestHeader is the header of GET_MIN_OFFSET (31); the response is an
// OffsetResponseHeader.
type GetMinOffsetRequestHeader struct {
	Topic   string // topic, required
	QueueID int32  // queueId, required
}

// Decode reads the keys.
func (h *GetMinOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetMinOffsetRequestHeader"}
	*h = GetMinOffsetRequestHeader{Topic: r.str("topic", true), QueueID: r.i32("queueId", true)}
	return r.err
}

// Encode writes the keys.
func (h *GetMinOffsetRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
}

// GetEarliestMsgStoretimeRequestHeader is the header of GET_EARLIEST_MSG_STORETIME (32); the
// response is a GetEarliestMsgStoretimeResponseHeader.
type GetEarliestMsgStoretimeRequestHeader struct {
	Topic   string // topic, required
	QueueID int32  // queueId, required
}

// Decode reads the keys.
func (h *GetEarliestMsgStoretimeRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetEarliestMsgStoretimeRequestHeader"}
	*h = GetEarliestMsgStoretimeRequestHeader{Topic: r.str("topic", true), QueueID: r.i32("queueId", true)}
	return r.err
}

// Encode writes the keys.
func (h *GetEarliestMsgStoretimeRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
}

// GetEarliestMsgStoretimeResponseHeader is the response header of
// GET_EARLIEST_MSG_STORETIME (32).
type GetEarliestMsgStoretimeResponseHeader struct {
	Timestamp int64 // timestamp, required, ms
}

// Decode reads the key.
func (h *GetEarliestMsgStoretimeResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetEarliestMsgStoretimeResponseHeader"}
	*h = GetEarliestMsgStoretimeResponseHeader{Timestamp: r.i64("timestamp", true)}
	return r.err
}

// Encode writes the key.
func (h *GetEarliestMsgStoretimeResponseHeader) Encode(ext map[string]string) {
	extPutInt64(ext, "timestamp", h.Timestamp)
}

// BoundaryType selects which end of a run of equal store times SEARCH_OFFSET_BY_TIMESTAMP
// answers with.
type BoundaryType byte

// Boundary types.
const (
	BoundaryLower BoundaryType = 0 // the first matching offset (default)
	BoundaryUpper BoundaryType = 1 // the last matching offset
)

// String returns "LOWER" or "UPPER".
func (b BoundaryType) String() string {
	if b == BoundaryUpper {
		return "UPPER"
	}
	return "LOWER"
}

// SearchOffsetRequestHeader is the header of SEARCH_OFFSET_BY_TIMESTAMP (29); the response
// is an OffsetResponseHeader.
type SearchOffsetRequestHeader struct {
	Topic        string       // topic, required
	QueueID      int32        // queueId, required
	Timestamp    int64        // timestamp, required, ms
	BoundaryType BoundaryType // boundaryType: "UPPER" (any case) is upper, anything else lower, as in Java
}

// Decode reads the keys.
func (h *SearchOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "SearchOffsetRequestHeader"}
	*h = SearchOffsetRequestHeader{
		Topic:     r.str("topic", true),
		QueueID:   r.i32("queueId", true),
		Timestamp: r.i64("timestamp", true),
	}
	if strings.EqualFold(r.str("boundaryType", false), "UPPER") {
		h.BoundaryType = BoundaryUpper
	}
	return r.err
}

// Encode writes the keys.
func (h *SearchOffsetRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
	extPutInt64(ext, "timestamp", h.Timestamp)
	ext["boundaryType"] = h.BoundaryType.String()
}
