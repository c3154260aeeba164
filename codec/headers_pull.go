package codec

// Pull request sysFlag bits (PullSysFlag, §3.2).
const (
	PullSysFlagCommitOffset int32 = 0x1  // store commitOffset as the group's offset
	PullSysFlagSuspend      int32 = 0x2  // long polling allowed
	PullSysFlagSubscription int32 = 0x4  // subscription carries the expression
	PullSysFlagClassFilter  int32 = 0x8  // class filter mode
	PullSysFlagLitePull     int32 = 0x10 // lite pull consumer
)

// PullMessageRequestHeader is the header of PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361),
// §3.2.
type PullMessageRequestHeader struct {
	ConsumerGroup        string          // consumerGroup, required
	Topic                string          // topic, required
	QueueID              int32           // queueId, required
	QueueOffset          int64           // queueOffset, required
	MaxMsgNums           int32           // maxMsgNums, required (the Go pull consumer may send 0)
	SysFlag              int32           // sysFlag, required: PullSysFlag* bits
	CommitOffset         int64           // commitOffset, required
	SuspendTimeoutMillis int64           // suspendTimeoutMillis, required
	Subscription         string          // subscription
	SubVersion           int64           // subVersion, required
	ExpressionType       string          // expressionType: TAG or SQL92
	MaxMsgBytes          Optional[int32] // maxMsgBytes
	RequestSource        Optional[int32] // requestSource (proxy)
	ProxyForwardClientID string          // proxyFrowardClientId (sic)
}

// Decode reads the pull request keys.
func (h *PullMessageRequestHeader) Decode(ext map[string]string) error {
	return h.DecodeFrom(ExtMap(ext))
}

// DecodeFrom reads the pull request keys from src: a decoded command (a server's hot request
// keeps its fields as a list: no map is built) or ExtMap.
func (h *PullMessageRequestHeader) DecodeFrom(src ExtSource) error {
	r := fromCommand(src, "PullMessageRequestHeader")
	*h = PullMessageRequestHeader{
		ConsumerGroup:        r.str("consumerGroup", true),
		Topic:                r.str("topic", true),
		QueueID:              r.i32("queueId", true),
		QueueOffset:          r.i64("queueOffset", true),
		MaxMsgNums:           r.i32("maxMsgNums", true),
		SysFlag:              r.i32("sysFlag", true),
		CommitOffset:         r.i64("commitOffset", true),
		SuspendTimeoutMillis: r.i64("suspendTimeoutMillis", true),
		Subscription:         r.str("subscription", false),
		SubVersion:           r.i64("subVersion", true),
		ExpressionType:       r.str("expressionType", false),
		MaxMsgBytes:          r.optI32("maxMsgBytes"),
		RequestSource:        r.optI32("requestSource"),
		ProxyForwardClientID: r.str("proxyFrowardClientId", false),
	}
	return r.err
}

// Encode writes the pull request keys.
func (h *PullMessageRequestHeader) Encode(ext map[string]string) {
	ext["consumerGroup"] = h.ConsumerGroup
	ext["topic"] = h.Topic
	extPutInt32(ext, "queueId", h.QueueID)
	extPutInt64(ext, "queueOffset", h.QueueOffset)
	extPutInt32(ext, "maxMsgNums", h.MaxMsgNums)
	extPutInt32(ext, "sysFlag", h.SysFlag)
	extPutInt64(ext, "commitOffset", h.CommitOffset)
	extPutInt64(ext, "suspendTimeoutMillis", h.SuspendTimeoutMillis)
	extPutString(ext, "subscription", h.Subscription)
	extPutInt64(ext, "subVersion", h.SubVersion)
	extPutString(ext, "expressionType", h.ExpressionType)
	extPutOptInt32(ext, "maxMsgBytes", h.MaxMsgBytes)
	extPutOptInt32(ext, "requestSource", h.RequestSource)
	extPutString(ext, "proxyFrowardClientId", h.ProxyForwardClientID)
}

// PullMessageResponseHeader is the response header of a pull, for every pull status (Java
// clients read the first four unconditionally), §3.2.
type PullMessageResponseHeader struct {
	SuggestWhichBrokerID int64           // suggestWhichBrokerId, required: 0 = master
	NextBeginOffset      int64           // nextBeginOffset, required
	MinOffset            int64           // minOffset, required
	MaxOffset            int64           // maxOffset, required (exclusive end)
	OffsetDelta          Optional[int64] // offsetDelta
	TopicSysFlag         Optional[int32] // topicSysFlag
	GroupSysFlag         Optional[int32] // groupSysFlag
	ForbiddenType        Optional[int32] // forbiddenType
}

// Decode reads the pull response keys.
func (h *PullMessageResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "PullMessageResponseHeader"}
	*h = PullMessageResponseHeader{
		SuggestWhichBrokerID: r.i64("suggestWhichBrokerId", true),
		NextBeginOffset:      r.i64("nextBeginOffset", true),
		MinOffset:            r.i64("minOffset", true),
		MaxOffset:            r.i64("maxOffset", true),
		OffsetDelta:          r.optI64("offsetDelta"),
		TopicSysFlag:         r.optI32("topicSysFlag"),
		GroupSysFlag:         r.optI32("groupSysFlag"),
		ForbiddenType:        r.optI32("forbiddenType"),
	}
	return r.err
}

// Encode writes the pull response keys.
func (h *PullMessageResponseHeader) Encode(ext map[string]string) {
	extPutInt64(ext, "suggestWhichBrokerId", h.SuggestWhichBrokerID)
	extPutInt64(ext, "nextBeginOffset", h.NextBeginOffset)
	extPutInt64(ext, "minOffset", h.MinOffset)
	extPutInt64(ext, "maxOffset", h.MaxOffset)
	extPutOptInt64(ext, "offsetDelta", h.OffsetDelta)
	extPutOptInt32(ext, "topicSysFlag", h.TopicSysFlag)
	extPutOptInt32(ext, "groupSysFlag", h.GroupSysFlag)
	extPutOptInt32(ext, "forbiddenType", h.ForbiddenType)
}
