package codec

// SendMessageRequestHeader is the header of SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324)
// with full key names (Decode/Encode), and of SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE
// (320) and SEND_REPLY_MESSAGE_V2 (325) with one-letter keys (DecodeV2/EncodeV2), §3.1.
type SendMessageRequestHeader struct {
	ProducerGroup         string          // producerGroup / a, required
	Topic                 string          // topic / b, required
	DefaultTopic          string          // defaultTopic / c, required: auto-create template (TBW102)
	DefaultTopicQueueNums int32           // defaultTopicQueueNums / d, required
	QueueID               int32           // queueId / e, required; < 0: the broker picks a queue
	SysFlag               int32           // sysFlag / f, required (record SysFlag bits)
	BornTimestamp         int64           // bornTimestamp / g, required, ms
	Flag                  int32           // flag / h, required: user flag
	Properties            string          // properties / i: encoded message properties
	ReconsumeTimes        int32           // reconsumeTimes / j
	UnitMode              bool            // unitMode / k
	MaxReconsumeTimes     Optional[int32] // maxReconsumeTimes / l; absent: the group's setting
	Batch                 bool            // batch / m: the body is a batch body
	BrokerName            string          // bname / n
}

// sendMessageKeys names the fields in the two key sets.
type sendMessageKeys struct {
	producerGroup, topic, defaultTopic, defaultTopicQueueNums, queueID, sysFlag, bornTimestamp,
	flag, properties, reconsumeTimes, unitMode, maxReconsumeTimes, batch, brokerName string
}

var (
	sendMessageKeysV1 = sendMessageKeys{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums",
		"queueId", "sysFlag", "bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode",
		"maxReconsumeTimes", "batch", "bname"}
	sendMessageKeysV2 = sendMessageKeys{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}
)

// Decode reads the full-name keys (SEND_MESSAGE, SEND_REPLY_MESSAGE).
func (h *SendMessageRequestHeader) Decode(ext map[string]string) error {
	return h.DecodeFrom(ExtMap(ext), false)
}

// DecodeV2 reads the one-letter keys (SEND_MESSAGE_V2, SEND_BATCH_MESSAGE,
// SEND_REPLY_MESSAGE_V2). Errors name the letter.
func (h *SendMessageRequestHeader) DecodeV2(ext map[string]string) error {
	return h.DecodeFrom(ExtMap(ext), true)
}

// DecodeFrom reads the full-name keys, or the one-letter keys when v2, from src: a decoded
// command (a server's hot request keeps its fields as a list: no map is built) or ExtMap.
func (h *SendMessageRequestHeader) DecodeFrom(src ExtSource, v2 bool) error {
	k := &sendMessageKeysV1
	if v2 {
		k = &sendMessageKeysV2
	}
	r := fromCommand(src, "SendMessageRequestHeader")
	*h = SendMessageRequestHeader{
		ProducerGroup:         r.str(k.producerGroup, true),
		Topic:                 r.str(k.topic, true),
		DefaultTopic:          r.str(k.defaultTopic, true),
		DefaultTopicQueueNums: r.i32(k.defaultTopicQueueNums, true),
		QueueID:               r.i32(k.queueID, true),
		SysFlag:               r.i32(k.sysFlag, true),
		BornTimestamp:         r.i64(k.bornTimestamp, true),
		Flag:                  r.i32(k.flag, true),
		Properties:            r.str(k.properties, false),
		ReconsumeTimes:        r.i32(k.reconsumeTimes, false),
		UnitMode:              r.boolean(k.unitMode, false, false),
		MaxReconsumeTimes:     r.optI32(k.maxReconsumeTimes),
		Batch:                 r.boolean(k.batch, false, false),
		BrokerName:            r.str(k.brokerName, false),
	}
	return r.err
}

// Encode writes the full-name keys.
func (h *SendMessageRequestHeader) Encode(ext map[string]string) { h.encode(ext, &sendMessageKeysV1) }

// EncodeV2 writes the one-letter keys.
func (h *SendMessageRequestHeader) EncodeV2(ext map[string]string) { h.encode(ext, &sendMessageKeysV2) }

func (h *SendMessageRequestHeader) encode(ext map[string]string, k *sendMessageKeys) {
	ext[k.producerGroup] = h.ProducerGroup
	ext[k.topic] = h.Topic
	ext[k.defaultTopic] = h.DefaultTopic
	extPutInt32(ext, k.defaultTopicQueueNums, h.DefaultTopicQueueNums)
	extPutInt32(ext, k.queueID, h.QueueID)
	extPutInt32(ext, k.sysFlag, h.SysFlag)
	extPutInt64(ext, k.bornTimestamp, h.BornTimestamp)
	extPutInt32(ext, k.flag, h.Flag)
	extPutString(ext, k.properties, h.Properties)
	extPutInt32(ext, k.reconsumeTimes, h.ReconsumeTimes)
	extPutBool(ext, k.unitMode, h.UnitMode)
	extPutOptInt32(ext, k.maxReconsumeTimes, h.MaxReconsumeTimes)
	extPutBool(ext, k.batch, h.Batch)
	extPutString(ext, k.brokerName, h.BrokerName)
}

// SendMessageResponseHeader is the response header of every send (§3.1).
type SendMessageResponseHeader struct {
	MsgID         string         // msgId, required: offsetMsgId; a batch's ids joined with ','
	QueueID       int32          // queueId, required
	QueueOffset   int64          // queueOffset, required: first logical offset
	TransactionID string         // transactionId (= UNIQ_KEY)
	BatchUniqID   string         // batchUniqId (inner batch only)
	RecallHandle  string         // recallHandle (5.x timer messages)
	MsgRegion     string         // MSG_REGION, added by the Java broker (DefaultRegion)
	TraceOn       Optional[bool] // TRACE_ON, added by the Java broker ("true")
}

// Decode reads the send response keys.
func (h *SendMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "SendMessageResponseHeader"}
	*h = SendMessageResponseHeader{
		MsgID:         r.str("msgId", true),
		QueueID:       r.i32("queueId", true),
		QueueOffset:   r.i64("queueOffset", true),
		TransactionID: r.str("transactionId", false),
		BatchUniqID:   r.str("batchUniqId", false),
		RecallHandle:  r.str("recallHandle", false),
		MsgRegion:     r.str("MSG_REGION", false),
		TraceOn:       r.optBool("TRACE_ON"),
	}
	return r.err
}

// Encode writes the send response keys.
func (h *SendMessageResponseHeader) Encode(ext map[string]string) {
	ext["msgId"] = h.MsgID
	extPutInt32(ext, "queueId", h.QueueID)
	extPutInt64(ext, "queueOffset", h.QueueOffset)
	extPutString(ext, "transactionId", h.TransactionID)
	extPutString(ext, "batchUniqId", h.BatchUniqID)
	extPutString(ext, "recallHandle", h.RecallHandle)
	extPutString(ext, "MSG_REGION", h.MsgRegion)
	extPutOptBool(ext, "TRACE_ON", h.TraceOn)
}

// ConsumerSendMsgBackRequestHeader is the header of CONSUMER_SEND_MSG_BACK (36), §3.6.
type ConsumerSendMsgBackRequestHeader struct {
	Offset            int64           // offset, required: CommitLog offset of the consumed record
	Group             string          // group, required
	DelayLevel        int32           // delayLevel, required: 0 broker chooses, < 0 straight to the DLQ
	OriginMsgID       string          // originMsgId
	OriginTopic       string          // originTopic
	UnitMode          bool            // unitMode
	MaxReconsumeTimes Optional[int32] // maxReconsumeTimes; absent: the group's setting
	BrokerName        string          // bname
}

// Decode reads the send-back keys.
func (h *ConsumerSendMsgBackRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ConsumerSendMsgBackRequestHeader"}
	*h = ConsumerSendMsgBackRequestHeader{
		Offset:            r.i64("offset", true),
		Group:             r.str("group", true),
		DelayLevel:        r.i32("delayLevel", true),
		OriginMsgID:       r.str("originMsgId", false),
		OriginTopic:       r.str("originTopic", false),
		UnitMode:          r.boolean("unitMode", false, false),
		MaxReconsumeTimes: r.optI32("maxReconsumeTimes"),
		BrokerName:        r.str("bname", false),
	}
	return r.err
}

// Encode writes the send-back keys.
func (h *ConsumerSendMsgBackRequestHeader) Encode(ext map[string]string) {
	extPutInt64(ext, "offset", h.Offset)
	ext["group"] = h.Group
	extPutInt32(ext, "delayLevel", h.DelayLevel)
	extPutString(ext, "originMsgId", h.OriginMsgID)
	extPutString(ext, "originTopic", h.OriginTopic)
	extPutBool(ext, "unitMode", h.UnitMode)
	extPutOptInt32(ext, "maxReconsumeTimes", h.MaxReconsumeTimes)
	extPutString(ext, "bname", h.BrokerName)
}
