package codec

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

func consumerOffsets() *ConsumerOffsetSerializeWrapper {
	return &ConsumerOffsetSerializeWrapper{OffsetTable: map[string]map[int32]int64{
		"TopicTest@G1": {0: 250, 1: 248, 10: 7},
		"%RETRY%G1@G1": {0: 0},
	}}
}

func TestConsumerOffsetEncodeGolden(t *testing.T) {
	w := consumerOffsets()
	require.Equal(t, `{"offsetTable":{"%RETRY%G1@G1":{0:0},"TopicTest@G1":{0:250,1:248,10:7}}}`, string(w.Encode(false)))
	require.Equal(t, "{\n\t\"offsetTable\":{\n\t\t\"%RETRY%G1@G1\":{0:0},\n\t\t\"TopicTest@G1\":{0:250,1:248,10:7}\n\t}\n}",
		string(w.Encode(true)))

	w.DataVersion = &DataVersion{Counter: 4, Timestamp: 1700000000000}
	require.Equal(t, `{"dataVersion":{"counter":4,"stateVersion":0,"timestamp":1700000000000},"offsetTable":{"%RETRY%G1@G1":{0:0},"TopicTest@G1":{0:250,1:248,10:7}}}`,
		string(w.Encode(false)))
	require.Equal(t, "{\n\t\"dataVersion\":{\"counter\":4,\"stateVersion\":0,\"timestamp\":1700000000000},"+
		"\n\t\"offsetTable\":{\n\t\t\"%RETRY%G1@G1\":{0:0},\n\t\t\"TopicTest@G1\":{0:250,1:248,10:7}\n\t}\n}", string(w.Encode(true)))

	empty := &ConsumerOffsetSerializeWrapper{}
	require.Equal(t, `{"offsetTable":{}}`, string(empty.Encode(false)))
	require.Equal(t, "{\n\t\"offsetTable\":{}\n}", string(empty.Encode(true)))
}

func TestConsumerOffsetDecode(t *testing.T) {
	// PROTOCOL §7.6 literal (4.x).
	got, err := DecodeConsumerOffsetSerializeWrapper([]byte(`{"offsetTable":{"TopicTest@G1":{0:250,1:248},"%RETRY%G1@G1":{0:0}}}`))
	require.NoError(t, err)
	require.Equal(t, &ConsumerOffsetSerializeWrapper{OffsetTable: map[string]map[int32]int64{
		"TopicTest@G1": {0: 250, 1: 248}, "%RETRY%G1@G1": {0: 0},
	}}, got)

	// 5.x file, pretty, with dataVersion and the derived groupTopicMap (ignored).
	java5 := "{\n\t\"dataVersion\":{\n\t\t\"counter\":9,\n\t\t\"stateVersion\":0,\n\t\t\"timestamp\":1700000000000\n\t},\n" +
		"\t\"groupTopicMap\":{\"G1\":[\"TopicTest\"]},\n\t\"offsetTable\":{\n\t\t\"TopicTest@G1\":{0:250,1:248\n\t\t}\n\t}\n}"
	got, err = DecodeConsumerOffsetSerializeWrapper([]byte(java5))
	require.NoError(t, err)
	require.Equal(t, &ConsumerOffsetSerializeWrapper{
		DataVersion: &DataVersion{Counter: 9, Timestamp: 1700000000000},
		OffsetTable: map[string]map[int32]int64{"TopicTest@G1": {0: 250, 1: 248}},
	}, got)

	// Quoted keys (BrowserCompatible writers, Go tools) read the same.
	got, err = DecodeConsumerOffsetSerializeWrapper([]byte(`{"offsetTable":{"T@G":{"3":5}}}`))
	require.NoError(t, err)
	require.Equal(t, map[int32]int64{3: 5}, got.OffsetTable["T@G"])

	got, err = DecodeConsumerOffsetSerializeWrapper([]byte(`{}`))
	require.NoError(t, err)
	require.NotNil(t, got.OffsetTable)

	for _, in := range []string{"", "{", `{"offsetTable":{"T@G":{x:1}}}`, `{"offsetTable":{"T@G":{0:"1"}}}`,
		`{"offsetTable":{"T@G":{4294967296:1}}}`, `{"offsetTable":{"T@G":{0:1}}`} {
		_, err := DecodeConsumerOffsetSerializeWrapper([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q", in)
	}
}

func TestConsumerOffsetRoundTrip(t *testing.T) {
	w := consumerOffsets()
	w.DataVersion = &DataVersion{Counter: 1, StateVersion: 2, Timestamp: 3}
	for _, pretty := range []bool{false, true} {
		got, err := DecodeConsumerOffsetSerializeWrapper(w.Encode(pretty))
		require.NoError(t, err)
		require.Equal(t, w, got)
	}
}

func TestDelayOffset(t *testing.T) {
	w := &DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{2: 0, 1: 3, 18: 40}}
	require.Equal(t, `{"offsetTable":{1:3,2:0,18:40}}`, string(w.Encode(false)))
	require.Equal(t, "{\n\t\"offsetTable\":{1:3,2:0,18:40}\n}", string(w.Encode(true)))
	w.DataVersion = &DataVersion{Counter: 1}
	require.Equal(t, `{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":0},"offsetTable":{1:3,2:0,18:40}}`, string(w.Encode(false)))

	for _, pretty := range []bool{false, true} {
		got, err := DecodeDelayOffsetSerializeWrapper(w.Encode(pretty))
		require.NoError(t, err)
		require.Equal(t, w, got)
	}

	got, err := DecodeDelayOffsetSerializeWrapper([]byte(`{"offsetTable":{1:3,2:0}}`)) // PROTOCOL §7.6
	require.NoError(t, err)
	require.Equal(t, &DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{1: 3, 2: 0}}, got)
	require.Equal(t, `{"offsetTable":{}}`, string((&DelayOffsetSerializeWrapper{}).Encode(false)))

	for _, in := range []string{"", `{"offsetTable":{1:3,}}`, `{"offsetTable":[1]}`, `{"offsetTable":{a:1}}`} {
		_, err := DecodeDelayOffsetSerializeWrapper([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q", in)
	}
}

// goClientParseResetFastJSON repeats internal/model.go parseFastJsonFormat of the pinned
// client (internal package, cannot be called): gjson for offsetTable's text, then string
// surgery on "{{", ",{" and "}:".
func goClientParseResetFastJSON(body []byte) map[primitive.MessageQueue]int64 {
	offsetTable := map[primitive.MessageQueue]int64{}
	offsetStr := gjson.Get(string(body), "offsetTable").String()
	if len(offsetStr) <= 2 {
		return offsetTable
	}
	for _, v := range strings.Split(offsetStr[2:len(offsetStr)-1], ",{") {
		tuple := strings.Split(v, "}:")
		offset, _ := strconv.Atoi(tuple[1])
		var queue primitive.MessageQueue
		_ = json.Unmarshal([]byte("{"+tuple[0]+"}"), &queue)
		offsetTable[queue] = int64(offset)
	}
	return offsetTable
}

func TestResetOffsetBody(t *testing.T) {
	b := &ResetOffsetBody{OffsetTable: map[MessageQueue]int64{
		{BrokerName: "broker-a", QueueID: 1, Topic: "T"}: 200,
		{BrokerName: "broker-a", QueueID: 0, Topic: "T"}: 100,
		{BrokerName: "broker-b", QueueID: 0, Topic: "A"}: 7,
	}}
	body := b.Encode()
	require.Equal(t, `{"offsetTable":{{"brokerName":"broker-b","queueId":0,"topic":"A"}:7,`+
		`{"brokerName":"broker-a","queueId":0,"topic":"T"}:100,{"brokerName":"broker-a","queueId":1,"topic":"T"}:200}}`, string(body))

	// ResetOffsetBody.Decode picks its fastjson path when the body is not valid JSON.
	require.False(t, gjson.ValidBytes(body))
	require.Equal(t, map[primitive.MessageQueue]int64{
		{Topic: "T", BrokerName: "broker-a", QueueId: 1}: 200,
		{Topic: "T", BrokerName: "broker-a", QueueId: 0}: 100,
		{Topic: "A", BrokerName: "broker-b", QueueId: 0}: 7,
	}, goClientParseResetFastJSON(body))

	got, err := DecodeResetOffsetBody(body)
	require.NoError(t, err)
	require.Equal(t, b, got)

	// gson's pair form.
	got, err = DecodeResetOffsetBody([]byte(`{"offsetTable":[[{"topic":"T","brokerName":"b","queueId":2},5],[{"topic":"T","brokerName":"b","queueId":3},6]]}`))
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]int64{{BrokerName: "b", QueueID: 2, Topic: "T"}: 5, {BrokerName: "b", QueueID: 3, Topic: "T"}: 6}, got.OffsetTable)

	got, err = DecodeResetOffsetBody([]byte(`{"offsetTable":{}}`))
	require.NoError(t, err)
	require.Empty(t, got.OffsetTable)
	require.Equal(t, `{"offsetTable":{}}`, string((&ResetOffsetBody{}).Encode()))

	for _, in := range []string{"", `{"offsetTable":{{"queueId":"x"}:1}}`, `{"offsetTable":{"nope":1}}`,
		`{"offsetTable":[[{"queueId":0}]]}`, `{"offsetTable":[[{"queueId":0},"x"]]}`, `{"offsetTable":5}`,
		`{"offsetTable":{{"queueId":0}:1.5}}`} {
		_, err := DecodeResetOffsetBody([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q", in)
	}
}
