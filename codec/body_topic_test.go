package codec

import (
	"encoding/json"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/stretchr/testify/require"
)

func TestTopicConfigGolden(t *testing.T) {
	tc := NewTopicConfig("T")
	tc.ReadQueueNums, tc.WriteQueueNums = 4, 4
	got, err := json.Marshal(tc)
	require.NoError(t, err)
	require.Equal(t, `{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",`+
		`"topicName":"T","topicSysFlag":0,"writeQueueNums":4}`, string(got))

	// Zero value: attributes {} and SINGLE_TAG filled in, as Java (never null) writes.
	got, err = encodeBodyJSON(TopicConfig{TopicName: "<a&b>"}, false, "test")
	require.NoError(t, err)
	require.Equal(t, `{"attributes":{},"order":false,"perm":0,"readQueueNums":0,"topicFilterType":"SINGLE_TAG",`+
		`"topicName":"<a&b>","topicSysFlag":0,"writeQueueNums":0}`, string(got), "no HTML escaping, as fastjson")
}

func TestTopicConfigDefaultsOnDecode(t *testing.T) {
	var tc TopicConfig
	require.NoError(t, json.Unmarshal([]byte(`{"topicName":"T","perm":7}`), &tc))
	want := NewTopicConfig("T")
	want.Perm = 7
	require.Equal(t, want, tc)
}

const topicsJSONJava = `{
	"dataVersion":{
		"counter":3,
		"stateVersion":0,
		"timestamp":1700000000000
	},
	"topicConfigTable":{
		"T":{
			"attributes":{},
			"order":false,
			"perm":6,
			"readQueueNums":4,
			"topicFilterType":"SINGLE_TAG",
			"topicName":"T",
			"topicSysFlag":0,
			"writeQueueNums":4
		},
		"TBW102":{
			"order":false,
			"perm":7,
			"readQueueNums":8,
			"topicFilterType":"SINGLE_TAG",
			"topicName":"TBW102",
			"topicSysFlag":0,
			"writeQueueNums":8
		}
	}
}`

func topicsWrapper() *TopicConfigSerializeWrapper {
	t := NewTopicConfig("T")
	t.ReadQueueNums, t.WriteQueueNums = 4, 4
	tbw := NewTopicConfig("TBW102")
	tbw.Perm, tbw.ReadQueueNums, tbw.WriteQueueNums = 7, 8, 8
	return &TopicConfigSerializeWrapper{
		DataVersion:      DataVersion{Counter: 3, Timestamp: 1700000000000},
		TopicConfigTable: map[string]TopicConfig{"T": t, "TBW102": tbw},
	}
}

func TestTopicConfigSerializeWrapper(t *testing.T) {
	w, err := DecodeTopicConfigSerializeWrapper([]byte(topicsJSONJava))
	require.NoError(t, err)
	require.Equal(t, topicsWrapper(), w)

	compact, err := w.Encode(false)
	require.NoError(t, err)
	require.Equal(t, `{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},"topicConfigTable":{`+
		`"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4},`+
		`"TBW102":{"attributes":{},"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8}}}`,
		string(compact))

	pretty, err := w.Encode(true)
	require.NoError(t, err)
	require.Contains(t, string(pretty), "\n\t\"topicConfigTable\": {\n\t\t\"T\": {\n\t\t\t\"attributes\": {},")
	back, err := DecodeTopicConfigSerializeWrapper(pretty)
	require.NoError(t, err)
	require.Equal(t, w, back)

	// 4.x DataVersion (no stateVersion) and an empty file body.
	w4, err := DecodeTopicConfigSerializeWrapper([]byte(`{"dataVersion":{"counter":1,"timestamp":2}}`))
	require.NoError(t, err)
	require.Equal(t, &TopicConfigSerializeWrapper{DataVersion: DataVersion{Counter: 1, Timestamp: 2},
		TopicConfigTable: map[string]TopicConfig{}}, w4)
	empty, err := (&TopicConfigSerializeWrapper{}).Encode(false)
	require.NoError(t, err)
	require.Equal(t, `{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"topicConfigTable":{}}`, string(empty))
}

func TestTopicConfigAndMappingVariant(t *testing.T) {
	// GET_ALL_TOPIC_CONFIG from a 5.x broker: mapping fields, bare Integer keys inside.
	in := `{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":2},"mappingDataVersion":{"counter":5,"stateVersion":0,"timestamp":6},` +
		`"topicConfigTable":{"T":{"perm":6,"readQueueNums":1,"topicName":"T","writeQueueNums":1}},` +
		`"topicQueueMappingDetailMap":{"T":{"hostedQueues":{0:[{"bname":"b","gen":0}]}}},"topicQueueMappingInfoMap":null}`
	w, err := DecodeTopicConfigSerializeWrapper([]byte(in))
	require.NoError(t, err)
	require.Equal(t, &DataVersion{Counter: 5, Timestamp: 6}, w.MappingDataVersion)
	require.JSONEq(t, `{"T":{"hostedQueues":{"0":[{"bname":"b","gen":0}]}}}`, string(w.TopicQueueMappingDetailMap))
	require.Nil(t, w.TopicQueueMappingInfoMap)
	require.Equal(t, int32(1), w.TopicConfigTable["T"].ReadQueueNums)
	require.Equal(t, TopicFilterSingleTag, w.TopicConfigTable["T"].TopicFilterType)

	out, err := w.Encode(false)
	require.NoError(t, err)
	require.Equal(t, `{"dataVersion":{"counter":1,"stateVersion":0,"timestamp":2},"mappingDataVersion":{"counter":5,"stateVersion":0,"timestamp":6},`+
		`"topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":1,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":1}},`+
		`"topicQueueMappingDetailMap":{"T":{"hostedQueues":{"0":[{"bname":"b","gen":0}]}}}}`, string(out))
}

func TestDecodeTopicConfigSerializeWrapperGarbage(t *testing.T) {
	for _, in := range []string{"", "{", topicsJSONJava[:80], `{"topicConfigTable":[]}`,
		`{"topicConfigTable":{"T":{"perm":"6"}}}`, `{"dataVersion":{"counter":1.5}}`} {
		_, err := DecodeTopicConfigSerializeWrapper([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q", in)
	}
}

func TestTopicList(t *testing.T) {
	l := &TopicList{TopicList: []string{"A", "B"}}
	body, err := l.Encode()
	require.NoError(t, err)
	require.Equal(t, `{"topicList":["A","B"]}`, string(body))

	// The Go admin's public decoder (admin/response.go RemotingSerializable.Decode).
	var goList admin.TopicList
	_, err = goList.Decode(body, &goList)
	require.NoError(t, err)
	require.Equal(t, []string{"A", "B"}, goList.TopicList)

	withAddr, err := (&TopicList{BrokerAddr: "10.0.0.1:10911", TopicList: []string{"A"}}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"brokerAddr":"10.0.0.1:10911","topicList":["A"]}`, string(withAddr))
	var goList2 admin.TopicList
	_, err = goList2.Decode(withAddr, &goList2)
	require.NoError(t, err)
	require.Equal(t, "10.0.0.1:10911", goList2.BrokerAddr)

	back, err := DecodeTopicList(withAddr)
	require.NoError(t, err)
	require.Equal(t, &TopicList{BrokerAddr: "10.0.0.1:10911", TopicList: []string{"A"}}, back)

	empty, err := (&TopicList{}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"topicList":[]}`, string(empty))
	_, err = DecodeTopicList([]byte(`{"topicList":"A"}`))
	require.ErrorIs(t, err, ErrBodyJSON)
}

func TestKVTable(t *testing.T) {
	kv := &KVTable{Table: map[string]string{"msgPutTotalTodayNow": "12", "brokerVersionDesc": "V5_3_3"}}
	body, err := kv.Encode()
	require.NoError(t, err)
	require.Equal(t, `{"table":{"brokerVersionDesc":"V5_3_3","msgPutTotalTodayNow":"12"}}`, string(body))
	back, err := DecodeKVTable(body)
	require.NoError(t, err)
	require.Equal(t, kv, back)

	empty, err := (&KVTable{}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"table":{}}`, string(empty))
	_, err = DecodeKVTable([]byte(`{"table":{"a":1}}`))
	require.ErrorIs(t, err, ErrBodyJSON)
	require.ErrorContains(t, err, "table")
}
