package codec

// Headers of the admin requests a broker relays to a consumer's connection
// (GET_CONSUMER_RUNNING_INFO 307, CONSUME_MESSAGE_DIRECTLY 309, INVOKE_BROKER_TO_GET_CONSUMER_STATUS
// 223 and its per-client GET_CONSUMER_STATUS_FROM_CLIENT 221), and of RESUME_CHECK_HALF_MESSAGE
// (323). Key names are those of RocketMQ 4.9.8's header classes.

// GetConsumerRunningInfoRequestHeader is the header of GET_CONSUMER_RUNNING_INFO (307): the
// broker forwards the request unchanged to the consumer clientID of ConsumerGroup.
type GetConsumerRunningInfoRequestHeader struct {
	ConsumerGroup string // consumerGroup, required
	ClientID      string // clientId, required
	JstackEnable  bool   // jstackEnable: the client adds its thread (goroutine) dump
}

// Decode reads the keys.
func (h *GetConsumerRunningInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetConsumerRunningInfoRequestHeader"}
	*h = GetConsumerRunningInfoRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		ClientID:      r.str("clientId", true),
		JstackEnable:  r.boolean("jstackEnable", false, false),
	}
	return r.err
}

// Encode writes the keys.
func (h *GetConsumerRunningInfoRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["clientId"] = h.ClientID
	extPutBool(ext, "jstackEnable", h.JstackEnable)
}

// ConsumeMessageDirectlyResultRequestHeader is the header of CONSUME_MESSAGE_DIRECTLY (309):
// the broker reads the message MsgID names (an offset message id), adds brokerName and
// forwards the request with the stored record as its body to the consumer ClientID.
type ConsumeMessageDirectlyResultRequestHeader struct {
	ConsumerGroup string // consumerGroup, required
	ClientID      string // clientId
	MsgID         string // msgId: the offset message id (store host + CommitLog offset)
	BrokerName    string // brokerName: set by the broker when it forwards
}

// Decode reads the keys.
func (h *ConsumeMessageDirectlyResultRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ConsumeMessageDirectlyResultRequestHeader"}
	*h = ConsumeMessageDirectlyResultRequestHeader{
		ConsumerGroup: r.str("consumerGroup", true),
		ClientID:      r.str("clientId", false),
		MsgID:         r.str("msgId", false),
		BrokerName:    r.str("brokerName", false),
	}
	return r.err
}

// Encode writes the keys (the optional ones only when set).
func (h *ConsumeMessageDirectlyResultRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	extPutString(ext, "clientId", h.ClientID)
	extPutString(ext, "msgId", h.MsgID)
	extPutString(ext, "brokerName", h.BrokerName)
}

// GetConsumerStatusRequestHeader is the header of INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223,
// admin → broker) and of GET_CONSUMER_STATUS_FROM_CLIENT (221, broker → each consumer): the
// consumers' offsets of Topic. ClientAddr (223 only) picks one client by its client id.
type GetConsumerStatusRequestHeader struct {
	Topic      string // topic, required
	Group      string // group, required
	ClientAddr string // clientAddr: a client id; empty asks every member
}

// Decode reads the keys.
func (h *GetConsumerStatusRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetConsumerStatusRequestHeader"}
	*h = GetConsumerStatusRequestHeader{
		Topic:      r.str("topic", true),
		Group:      r.str("group", true),
		ClientAddr: r.str("clientAddr", false),
	}
	return r.err
}

// Encode writes the keys (clientAddr only when set).
func (h *GetConsumerStatusRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	ext["group"] = h.Group
	extPutString(ext, "clientAddr", h.ClientAddr)
}

// ResumeCheckHalfMessageRequestHeader is the header of RESUME_CHECK_HALF_MESSAGE (323): the
// half message MsgID (an offset message id) is put back into the half queue with its check
// count reset, so the transaction checker asks its producer again.
type ResumeCheckHalfMessageRequestHeader struct {
	MsgID string // msgId
}

// Decode reads the key.
func (h *ResumeCheckHalfMessageRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ResumeCheckHalfMessageRequestHeader"}
	*h = ResumeCheckHalfMessageRequestHeader{MsgID: r.str("msgId", false)}
	return r.err
}

// Encode writes the key when set.
func (h *ResumeCheckHalfMessageRequestHeader) Encode(ext map[string]string) {
	extPutString(ext, "msgId", h.MsgID)
}
