package codec

// UnregisterClientRequestHeader is the header of UNREGISTER_CLIENT (35), §3.7.
type UnregisterClientRequestHeader struct {
	ClientID      string // clientID, required
	ProducerGroup string // producerGroup
	ConsumerGroup string // consumerGroup
}

// Decode reads the keys.
func (h *UnregisterClientRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "UnregisterClientRequestHeader"}
	*h = UnregisterClientRequestHeader{
		ClientID:      r.str("clientID", true),
		ProducerGroup: r.str("producerGroup", false),
		ConsumerGroup: r.str("consumerGroup", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *UnregisterClientRequestHeader) Encode(ext map[string]string) {
	ext["clientID"] = h.ClientID
	extPutString(ext, "producerGroup", h.ProducerGroup)
	extPutString(ext, "consumerGroup", h.ConsumerGroup)
}

// GetConsumerListByGroupRequestHeader is the header of GET_CONSUMER_LIST_BY_GROUP (38);
// the answer is a JSON body (§4.4).
type GetConsumerListByGroupRequestHeader struct {
	ConsumerGroup string // consumerGroup, required
}

// Decode reads the key.
func (h *GetConsumerListByGroupRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetConsumerListByGroupRequestHeader"}
	*h = GetConsumerListByGroupRequestHeader{ConsumerGroup: r.str("consumerGroup", true)}
	return r.err
}

// Encode writes the key.
func (h *GetConsumerListByGroupRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
}

// NotifyConsumerIdsChangedRequestHeader is the header of NOTIFY_CONSUMER_IDS_CHANGED (40),
// which the broker sends to each member of a group whose membership changed.
type NotifyConsumerIdsChangedRequestHeader struct {
	ConsumerGroup string // consumerGroup, required
}

// Decode reads the key.
func (h *NotifyConsumerIdsChangedRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "NotifyConsumerIdsChangedRequestHeader"}
	*h = NotifyConsumerIdsChangedRequestHeader{ConsumerGroup: r.str("consumerGroup", true)}
	return r.err
}

// Encode writes the key.
func (h *NotifyConsumerIdsChangedRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
}

// UpdateAndCreateTopicRequestHeader is the header of UPDATE_AND_CREATE_TOPIC (17), Java's
// CreateTopicRequestHeader, §3.7.
type UpdateAndCreateTopicRequestHeader struct {
	Topic           string          // topic, required
	DefaultTopic    string          // defaultTopic, required
	ReadQueueNums   int32           // readQueueNums, required
	WriteQueueNums  int32           // writeQueueNums, required
	Perm            int32           // perm, required: 4 read, 2 write (6 = both)
	TopicFilterType string          // topicFilterType, required: SINGLE_TAG or MULTI_TAG
	TopicSysFlag    Optional[int32] // topicSysFlag
	Order           bool            // order, required
	Attributes      string          // attributes (5.x, "+k=v,..." list)
	Force           bool            // force
}

// Decode reads the keys.
func (h *UpdateAndCreateTopicRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "UpdateAndCreateTopicRequestHeader"}
	*h = UpdateAndCreateTopicRequestHeader{
		Topic:           r.str("topic", true),
		DefaultTopic:    r.str("defaultTopic", true),
		ReadQueueNums:   r.i32("readQueueNums", true),
		WriteQueueNums:  r.i32("writeQueueNums", true),
		Perm:            r.i32("perm", true),
		TopicFilterType: r.str("topicFilterType", true),
		TopicSysFlag:    r.optI32("topicSysFlag"),
		Order:           r.boolean("order", true, false),
		Attributes:      r.str("attributes", false),
		Force:           r.boolean("force", false, false),
	}
	return r.err
}

// Encode writes the keys.
func (h *UpdateAndCreateTopicRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["defaultTopic"] = h.DefaultTopic
	extPutInt32(ext, "readQueueNums", h.ReadQueueNums)
	extPutInt32(ext, "writeQueueNums", h.WriteQueueNums)
	extPutInt32(ext, "perm", h.Perm)
	ext["topicFilterType"] = h.TopicFilterType
	extPutOptInt32(ext, "topicSysFlag", h.TopicSysFlag)
	extPutBool(ext, "order", h.Order)
	extPutString(ext, "attributes", h.Attributes)
	extPutBool(ext, "force", h.Force)
}

// DeleteTopicRequestHeader is the header of DELETE_TOPIC_IN_BROKER (215).
type DeleteTopicRequestHeader struct {
	Topic string // topic, required
}

// Decode reads the key.
func (h *DeleteTopicRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "DeleteTopicRequestHeader"}
	*h = DeleteTopicRequestHeader{Topic: r.str("topic", true)}
	return r.err
}

// Encode writes the key.
func (h *DeleteTopicRequestHeader) Encode(ext map[string]string) { ext["topic"] = h.Topic }
