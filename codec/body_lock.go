package codec

// Queue lock bodies (LOCK_BATCH_MQ 41 / UNLOCK_BATCH_MQ 42, PROTOCOL §4.5).
//
// Java request: {"clientId":"ip@pid","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":0,"topic":"T"}],
// "onlyThisBroker":false}. The Go client (consumer/consumer.go lockBatchRequestBody, jsoniter)
// sends {"consumerGroup":..,"clientId":..,"mqSet":[{"topic":..,"brokerName":..,"queueId":..}]}
// without onlyThisBroker (absent = false), for both lock and unlock. The 41 response is
// {"lockOKMQSet":[MessageQueue...]}; the Go client decodes it with jsoniter into
// []primitive.MessageQueue and treats an empty body as "nothing locked".

// MessageQueue identifies one queue: topic, broker name, queue id. Field order is fastjson's.
type MessageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

// LockBatchRequestBody is the body of LOCK_BATCH_MQ (41).
type LockBatchRequestBody struct {
	ClientID       string         `json:"clientId"`
	ConsumerGroup  string         `json:"consumerGroup"`
	MQSet          []MessageQueue `json:"mqSet"`
	OnlyThisBroker bool           `json:"onlyThisBroker"` // Go client never sends it
}

// UnlockBatchRequestBody is the body of UNLOCK_BATCH_MQ (42); same keys as the lock request.
type UnlockBatchRequestBody LockBatchRequestBody

// LockBatchResponseBody is the body of a LOCK_BATCH_MQ response: the queues now locked by
// the requesting client.
type LockBatchResponseBody struct {
	LockOKMQSet []MessageQueue `json:"lockOKMQSet"`
}

// Encode writes the request as the Java client does (mqSet [] when empty).
// Safe for concurrent use if b is not modified meanwhile.
func (b *LockBatchRequestBody) Encode() ([]byte, error) {
	out := *b
	if out.MQSet == nil {
		out.MQSet = []MessageQueue{}
	}
	return encodeBodyJSON(&out, false, "LockBatchRequestBody")
}

// DecodeLockBatchRequestBody parses a lock request from a Go or Java client.
// Safe for concurrent use.
func DecodeLockBatchRequestBody(body []byte) (*LockBatchRequestBody, error) {
	b := new(LockBatchRequestBody)
	if err := decodeBodyJSON(body, b, "LockBatchRequestBody"); err != nil {
		return nil, err
	}
	return b, nil
}

// Encode writes the request as the Java client does (mqSet [] when empty).
// Safe for concurrent use if b is not modified meanwhile.
func (b *UnlockBatchRequestBody) Encode() ([]byte, error) {
	out := *b
	if out.MQSet == nil {
		out.MQSet = []MessageQueue{}
	}
	return encodeBodyJSON(&out, false, "UnlockBatchRequestBody")
}

// DecodeUnlockBatchRequestBody parses an unlock request from a Go or Java client.
// Safe for concurrent use.
func DecodeUnlockBatchRequestBody(body []byte) (*UnlockBatchRequestBody, error) {
	b := new(UnlockBatchRequestBody)
	if err := decodeBodyJSON(body, b, "UnlockBatchRequestBody"); err != nil {
		return nil, err
	}
	return b, nil
}

// Encode writes {"lockOKMQSet":[...]} ([] when nothing was locked).
// Safe for concurrent use if b is not modified meanwhile.
func (b *LockBatchResponseBody) Encode() ([]byte, error) {
	out := *b
	if out.LockOKMQSet == nil {
		out.LockOKMQSet = []MessageQueue{}
	}
	return encodeBodyJSON(&out, false, "LockBatchResponseBody")
}

// DecodeLockBatchResponseBody parses a lock response. Safe for concurrent use.
func DecodeLockBatchResponseBody(body []byte) (*LockBatchResponseBody, error) {
	b := new(LockBatchResponseBody)
	if err := decodeBodyJSON(body, b, "LockBatchResponseBody"); err != nil {
		return nil, err
	}
	return b, nil
}
