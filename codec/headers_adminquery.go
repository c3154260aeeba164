package codec

// Headers of the admin queries an admin tool sends (GET_CONSUME_STATS 208,
// GET_TOPIC_STATS_INFO 202, GET_CONSUMER/PRODUCER_CONNECTION_LIST 203/204,
// QUERY_TOPIC_CONSUME_BY_WHO 300, DELETE_SUBSCRIPTIONGROUP 207), named after the Java classes.

// GetConsumeStatsRequestHeader is the header of GET_CONSUME_STATS (208).
type GetConsumeStatsRequestHeader struct {
	ConsumerGroup string // consumerGroup, required
	Topic         string // topic: empty for every topic the group has offsets in
}

// Decode reads the keys.
func (h *GetConsumeStatsRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetConsumeStatsRequestHeader"}
	*h = GetConsumeStatsRequestHeader{ConsumerGroup: r.str("consumerGroup", true), Topic: r.str("topic", false)}
	return r.err
}

// Encode writes the keys (topic only when set).
func (h *GetConsumeStatsRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	extPutString(ext, "topic", h.Topic)
}

// TopicRequestHeader is the header of the requests whose only key is the topic:
// GET_TOPIC_STATS_INFO (202, Java GetTopicStatsInfoRequestHeader) and
// QUERY_TOPIC_CONSUME_BY_WHO (300, Java QueryTopicConsumeByWhoRequestHeader).
type TopicRequestHeader struct {
	Topic string // topic, required
}

// Decode reads the key.
func (h *TopicRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "TopicRequestHeader"}
	*h = TopicRequestHeader{Topic: r.str("topic", true)}
	return r.err
}

// Encode writes the key.
func (h *TopicRequestHeader) Encode(ext map[string]string) { ext["topic"] = h.Topic }

// GetConsumerConnectionListRequestHeader is the header of GET_CONSUMER_CONNECTION_LIST (203).
type GetConsumerConnectionListRequestHeader struct {
	ConsumerGroup string // consumerGroup, required
}

// Decode reads the key.
func (h *GetConsumerConnectionListRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetConsumerConnectionListRequestHeader"}
	*h = GetConsumerConnectionListRequestHeader{ConsumerGroup: r.str("consumerGroup", true)}
	return r.err
}

// Encode writes the key.
func (h *GetConsumerConnectionListRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
}

// GetProducerConnectionListRequestHeader is the header of GET_PRODUCER_CONNECTION_LIST (204).
type GetProducerConnectionListRequestHeader struct {
	ProducerGroup string // producerGroup, required
}

// Decode reads the key.
func (h *GetProducerConnectionListRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetProducerConnectionListRequestHeader"}
	*h = GetProducerConnectionListRequestHeader{ProducerGroup: r.str("producerGroup", true)}
	return r.err
}

// Encode writes the key.
func (h *GetProducerConnectionListRequestHeader) Encode(ext map[string]string) {
	ext["producerGroup"] = h.ProducerGroup
}

// DeleteSubscriptionGroupRequestHeader is the header of DELETE_SUBSCRIPTIONGROUP (207).
type DeleteSubscriptionGroupRequestHeader struct {
	GroupName   string // groupName, required
	CleanOffset bool   // cleanOffset: also delete the group's consumer offsets
}

// Decode reads the keys.
func (h *DeleteSubscriptionGroupRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "DeleteSubscriptionGroupRequestHeader"}
	*h = DeleteSubscriptionGroupRequestHeader{
		GroupName:   r.str("groupName", true),
		CleanOffset: r.boolean("cleanOffset", false, false),
	}
	return r.err
}

// Encode writes the keys.
func (h *DeleteSubscriptionGroupRequestHeader) Encode(ext map[string]string) {
	ext["groupName"] = h.GroupName
	extPutBool(ext, "cleanOffset", h.CleanOffset)
}

// CloneGroupOffsetRequestHeader is the header of CLONE_GROUP_OFFSET (314).
type CloneGroupOffsetRequestHeader struct {
	SrcGroup  string // srcGroup, required
	DestGroup string // destGroup, required
	Topic     string // topic: empty for every topic of SrcGroup
	Offline   bool   // offline: also the topics a live SrcGroup does not subscribe
}

// Decode reads the keys.
func (h *CloneGroupOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "CloneGroupOffsetRequestHeader"}
	*h = CloneGroupOffsetRequestHeader{
		SrcGroup:  r.str("srcGroup", true),
		DestGroup: r.str("destGroup", true),
		Topic:     r.str("topic", false),
		Offline:   r.boolean("offline", false, false),
	}
	return r.err
}

// Encode writes the keys.
func (h *CloneGroupOffsetRequestHeader) Encode(ext map[string]string) {
	ext["srcGroup"] = h.SrcGroup
	ext["destGroup"] = h.DestGroup
	if h.Topic != "" {
		ext["topic"] = h.Topic
	}
	extPutBool(ext, "offline", h.Offline)
}

// QueryConsumeQueueRequestHeader is the header of QUERY_CONSUME_QUEUE (321).
type QueryConsumeQueueRequestHeader struct {
	Topic         string           // topic, required
	QueueID       int32            // queueId, required
	Index         int64            // index, required: the first logical offset
	Count         int32            // count, required: entries at most
	ConsumerGroup Optional[string] // consumerGroup: also the group's subscription and filter
}

// Decode reads the keys.
func (h *QueryConsumeQueueRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "QueryConsumeQueueRequestHeader"}
	*h = QueryConsumeQueueRequestHeader{
		Topic:   r.str("topic", true),
		QueueID: r.i32("queueId", true),
		Index:   r.i64("index", true),
		Count:   r.i32("count", true),
	}
	h.ConsumerGroup = r.optStr("consumerGroup")
	return r.err
}

// Encode writes the keys.
func (h *QueryConsumeQueueRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
	extPutInt64(ext, "index", h.Index)
	extPutInt32(ext, "count", h.Count)
	if h.ConsumerGroup.Set {
		ext["consumerGroup"] = h.ConsumerGroup.Value
	}
}

// ResetOffsetRequestHeader is the header of INVOKE_BROKER_TO_RESET_OFFSET (222): the broker
// finds each queue's offset at Timestamp and tells the group's live consumers to jump there.
type ResetOffsetRequestHeader struct {
	Topic     string          // topic, required
	Group     string          // group, required
	Timestamp int64           // timestamp, required, ms
	IsForce   bool            // isForce, required: also move offsets forward
	QueueID   Optional[int32] // queueId (5.x): one queue only
	Offset    Optional[int64] // offset (5.x): this offset instead of the timestamp's
}

// Decode reads the keys.
func (h *ResetOffsetRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ResetOffsetRequestHeader"}
	*h = ResetOffsetRequestHeader{
		Topic:     r.str("topic", true),
		Group:     r.str("group", true),
		Timestamp: r.i64("timestamp", true),
		IsForce:   r.boolean("isForce", true, false),
		QueueID:   r.optI32("queueId"),
		Offset:    r.optI64("offset"),
	}
	return r.err
}

// Encode writes the keys (queueId and offset only when set).
func (h *ResetOffsetRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["group"] = h.Group
	extPutInt64(ext, "timestamp", h.Timestamp)
	extPutBool(ext, "isForce", h.IsForce)
	extPutOptInt32(ext, "queueId", h.QueueID)
	extPutOptInt64(ext, "offset", h.Offset)
}
