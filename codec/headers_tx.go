package codec

// EndTransactionRequestHeader is the header of END_TRANSACTION (37), §3.5.
type EndTransactionRequestHeader struct {
	ProducerGroup        string // producerGroup, required
	TranStateTableOffset int64  // tranStateTableOffset, required: the half message's queue offset
	CommitLogOffset      int64  // commitLogOffset, required: the half message's CommitLog offset
	CommitOrRollback     int32  // commitOrRollback, required: 0 unknown, 8 commit, 12 rollback
	FromTransactionCheck bool   // fromTransactionCheck
	MsgID                string // msgId, required (UNIQ_KEY)
	TransactionID        string // transactionId
	Topic                string // topic
	BrokerName           string // bname
}

// Decode reads the keys.
func (h *EndTransactionRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "EndTransactionRequestHeader"}
	*h = EndTransactionRequestHeader{
		ProducerGroup:        r.str("producerGroup", true),
		TranStateTableOffset: r.i64("tranStateTableOffset", true),
		CommitLogOffset:      r.i64("commitLogOffset", true),
		CommitOrRollback:     r.i32("commitOrRollback", true),
		FromTransactionCheck: r.boolean("fromTransactionCheck", false, false),
		MsgID:                r.str("msgId", true),
		TransactionID:        r.str("transactionId", false),
		Topic:                r.str("topic", false),
		BrokerName:           r.str("bname", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *EndTransactionRequestHeader) Encode(ext map[string]string) {
	ext["producerGroup"] = h.ProducerGroup
	extPutInt64(ext, "tranStateTableOffset", h.TranStateTableOffset)
	extPutInt64(ext, "commitLogOffset", h.CommitLogOffset)
	extPutInt32(ext, "commitOrRollback", h.CommitOrRollback)
	extPutBool(ext, "fromTransactionCheck", h.FromTransactionCheck)
	ext["msgId"] = h.MsgID
	extPutString(ext, "transactionId", h.TransactionID)
	extPutString(ext, "topic", h.Topic)
	extPutString(ext, "bname", h.BrokerName)
}

// CheckTransactionStateRequestHeader is the header of CHECK_TRANSACTION_STATE (39), which
// the broker sends to a producer (oneway; body = the half message record), §3.5.
type CheckTransactionStateRequestHeader struct {
	Topic                string // topic
	TranStateTableOffset int64  // tranStateTableOffset, required
	CommitLogOffset      int64  // commitLogOffset, required
	MsgID                string // msgId (UNIQ_KEY)
	TransactionID        string // transactionId (= UNIQ_KEY)
	OffsetMsgID          string // offsetMsgId
	BrokerName           string // bname
}

// Decode reads the keys.
func (h *CheckTransactionStateRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "CheckTransactionStateRequestHeader"}
	*h = CheckTransactionStateRequestHeader{
		Topic:                r.str("topic", false),
		TranStateTableOffset: r.i64("tranStateTableOffset", true),
		CommitLogOffset:      r.i64("commitLogOffset", true),
		MsgID:                r.str("msgId", false),
		TransactionID:        r.str("transactionId", false),
		OffsetMsgID:          r.str("offsetMsgId", false),
		BrokerName:           r.str("bname", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *CheckTransactionStateRequestHeader) Encode(ext map[string]string) {
	extPutString(ext, "topic", h.Topic)
	extPutInt64(ext, "tranStateTableOffset", h.TranStateTableOffset)
	extPutInt64(ext, "commitLogOffset", h.CommitLogOffset)
	extPutString(ext, "msgId", h.MsgID)
	extPutString(ext, "transactionId", h.TransactionID)
	extPutString(ext, "offsetMsgId", h.OffsetMsgID)
	extPutString(ext, "bname", h.BrokerName)
}
