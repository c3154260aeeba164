package codec

import (
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
)

func TestDecodeLockRequestFromGoClient(t *testing.T) {
	// consumer/consumer.go doLock/doUnlock: jsoniter.Marshal of lockBatchRequestBody (the
	// type is unexported; this struct has its exact fields and tags).
	goBody := struct {
		ConsumerGroup string                    `json:"consumerGroup"`
		ClientId      string                    `json:"clientId"`
		MQs           []*primitive.MessageQueue `json:"mqSet"`
	}{
		ConsumerGroup: "G",
		ClientId:      "192.0.2.2@18667",
		MQs: []*primitive.MessageQueue{
			{Topic: "T", BrokerName: "broker-a", QueueId: 0},
			{Topic: "T", BrokerName: "broker-a", QueueId: 3},
		},
	}
	raw, err := jsoniter.Marshal(goBody)
	require.NoError(t, err)
	require.Equal(t, `{"consumerGroup":"G","clientId":"192.0.2.2@18667","mqSet":[{"topic":"T","brokerName":"broker-a","queueId":0},`+
		`{"topic":"T","brokerName":"broker-a","queueId":3}]}`, string(raw))

	want := &LockBatchRequestBody{
		ClientID:      "192.0.2.2@18667",
		ConsumerGroup: "G",
		MQSet:         []MessageQueue{{BrokerName: "broker-a", QueueID: 0, Topic: "T"}, {BrokerName: "broker-a", QueueID: 3, Topic: "T"}},
	}
	lock, err := DecodeLockBatchRequestBody(raw)
	require.NoError(t, err)
	require.Equal(t, want, lock)
	unlock, err := DecodeUnlockBatchRequestBody(raw)
	require.NoError(t, err)
	require.Equal(t, (*UnlockBatchRequestBody)(want), unlock)
}

func TestEncodeLockBodiesGolden(t *testing.T) {
	req := &LockBatchRequestBody{
		ClientID: "ip@1", ConsumerGroup: "G", OnlyThisBroker: true,
		MQSet: []MessageQueue{{BrokerName: "b", QueueID: 1, Topic: "T"}},
	}
	body, err := req.Encode()
	require.NoError(t, err)
	want := `{"clientId":"ip@1","consumerGroup":"G","mqSet":[{"brokerName":"b","queueId":1,"topic":"T"}],"onlyThisBroker":true}`
	require.Equal(t, want, string(body))
	back, err := DecodeLockBatchRequestBody(body)
	require.NoError(t, err)
	require.Equal(t, req, back)

	ureq := (*UnlockBatchRequestBody)(req)
	ubody, err := ureq.Encode()
	require.NoError(t, err)
	require.Equal(t, want, string(ubody))

	empty, err := (&LockBatchRequestBody{}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"clientId":"","consumerGroup":"","mqSet":[],"onlyThisBroker":false}`, string(empty))
	uempty, err := (&UnlockBatchRequestBody{}).Encode()
	require.NoError(t, err)
	require.Equal(t, string(empty), string(uempty))
}

func TestLockResponseReadByGoClient(t *testing.T) {
	resp := &LockBatchResponseBody{LockOKMQSet: []MessageQueue{
		{BrokerName: "broker-a", QueueID: 0, Topic: "T"}, {BrokerName: "broker-a", QueueID: 2, Topic: "T"},
	}}
	body, err := resp.Encode()
	require.NoError(t, err)
	require.Equal(t, `{"lockOKMQSet":[{"brokerName":"broker-a","queueId":0,"topic":"T"},{"brokerName":"broker-a","queueId":2,"topic":"T"}]}`, string(body))

	// consumer/consumer.go doLock: jsoniter into []primitive.MessageQueue under "lockOKMQSet".
	var got struct {
		MQs []primitive.MessageQueue `json:"lockOKMQSet"`
	}
	require.NoError(t, jsoniter.Unmarshal(body, &got))
	require.Equal(t, []primitive.MessageQueue{
		{Topic: "T", BrokerName: "broker-a", QueueId: 0}, {Topic: "T", BrokerName: "broker-a", QueueId: 2},
	}, got.MQs)

	back, err := DecodeLockBatchResponseBody(body)
	require.NoError(t, err)
	require.Equal(t, resp, back)

	none, err := (&LockBatchResponseBody{}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"lockOKMQSet":[]}`, string(none))
}

func TestDecodeLockBodiesGarbage(t *testing.T) {
	for _, in := range []string{"", "{", `{"mqSet":[{"queueId":"0"}]}`, `{"mqSet":{}}`, `{"lockOKMQSet":[{"queueId":4294967296}]}`} {
		_, err := DecodeLockBatchRequestBody([]byte(in))
		_, err2 := DecodeLockBatchResponseBody([]byte(in))
		_, err3 := DecodeUnlockBatchRequestBody([]byte(in))
		require.True(t, err != nil || err2 != nil || err3 != nil, "input %q", in)
		for _, e := range []error{err, err2, err3} {
			if e != nil {
				require.ErrorIs(t, e, ErrBodyJSON)
			}
		}
	}
}
