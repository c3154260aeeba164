package codec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// What a Java 4.x broker sends for GET_TOPIC_STATS_INFO and GET_CONSUME_STATS: fastjson,
// queue objects as map keys; ringmq's admin plane writes the same form.
const (
	topicStatsFastjson = `{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":1700000000123,"maxOffset":7,"minOffset":2},` +
		`{"brokerName":"broker-a","queueId":1,"topic":"T"}:{"lastUpdateTimestamp":0,"maxOffset":0,"minOffset":0}}}`
	consumeStatsFastjson = `{"consumeTps":1.5,"offsetTable":{{"brokerName":"broker-a","queueId":3,"topic":"T"}:{"brokerOffset":10,"consumerOffset":4,"lastTimestamp":1700000000999}}}`
)

func TestDecodeTopicStatsTable(t *testing.T) {
	got, err := DecodeTopicStatsTable([]byte(topicStatsFastjson))
	require.NoError(t, err)
	require.Equal(t, map[MessageQueue]TopicOffset{
		{BrokerName: "broker-a", QueueID: 0, Topic: "T"}: {LastUpdateTimestamp: 1700000000123, MaxOffset: 7, MinOffset: 2},
		{BrokerName: "broker-a", QueueID: 1, Topic: "T"}: {},
	}, got.OffsetTable)

	empty, err := DecodeTopicStatsTable([]byte(`{"offsetTable":{}}`))
	require.NoError(t, err)
	require.Empty(t, empty.OffsetTable)
	absent, err := DecodeTopicStatsTable([]byte(`{}`))
	require.NoError(t, err)
	require.NotNil(t, absent.OffsetTable)
}

func TestDecodeConsumeStats(t *testing.T) {
	got, err := DecodeConsumeStats([]byte(consumeStatsFastjson))
	require.NoError(t, err)
	require.Equal(t, 1.5, got.ConsumeTps)
	require.Equal(t, map[MessageQueue]OffsetWrapper{
		{BrokerName: "broker-a", QueueID: 3, Topic: "T"}: {BrokerOffset: 10, ConsumerOffset: 4, LastTimestamp: 1700000000999},
	}, got.OffsetTable)
}

func TestDecodeAdminBodiesRejectBadInput(t *testing.T) {
	for name, body := range map[string]string{
		"not a queue key": `{"offsetTable":{{"queueId":"x"}:{"maxOffset":1}}}`,
		"wrong type":      `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"maxOffset":"x"}}}`,
		"truncated":       `{"offsetTable":{{"brokerName":"b"`,
		"empty":           ``,
	} {
		_, err := DecodeTopicStatsTable([]byte(body))
		require.ErrorIs(t, err, ErrBodyJSON, name)
		require.Contains(t, err.Error(), "TopicStatsTable", name)
	}
	_, err := DecodeConsumeStats([]byte(`{"consumeTps":"fast"}`))
	require.ErrorIs(t, err, ErrBodyJSON)
	require.Contains(t, err.Error(), `"consumeTps"`)
}

func TestDecodeConnectionsAndGroupList(t *testing.T) {
	cc, err := DecodeConsumerConnection([]byte(`{"connectionSet":[{"clientAddr":"127.0.0.1:5000","clientId":"c@1","language":"GO","version":317}],` +
		`"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING",` +
		`"subscriptionTable":{"T":{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":5,"tagsSet":[],"topic":"T"}}}`))
	require.NoError(t, err)
	require.Equal(t, []Connection{{ClientAddr: "127.0.0.1:5000", ClientID: "c@1", Language: "GO", Version: 317}}, cc.ConnectionSet)
	require.Equal(t, MessageModel("CLUSTERING"), cc.MessageModel)
	require.Equal(t, "*", cc.SubscriptionTable["T"].SubString)

	pc, err := DecodeProducerConnection([]byte(`{"connectionSet":[{"clientAddr":"a","clientId":"p@1","language":"JAVA","version":1}]}`))
	require.NoError(t, err)
	require.Len(t, pc.ConnectionSet, 1)
	require.Equal(t, "p@1", pc.ConnectionSet[0].ClientID)

	gl, err := DecodeGroupList([]byte(`{"groupList":["G1","G2"]}`))
	require.NoError(t, err)
	require.Equal(t, []string{"G1", "G2"}, gl.GroupList)
}

// FuzzBodyAdmin: the admin answer decoders never panic, fail only with ErrBodyJSON, and a
// decoded table's rows re-encode (as plain JSON) to the values they were decoded from.
func FuzzBodyAdmin(f *testing.F) {
	for _, seed := range []string{
		topicStatsFastjson, consumeStatsFastjson,
		`{"offsetTable":{}}`, `{"offsetTable":null}`, `{"groupList":["a"]}`,
		`{"connectionSet":[{"clientAddr":"a","clientId":"b","language":"GO","version":1}]}`,
		`{"offsetTable":{{"queueId":1}:{}}}`, `{`, `{{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if ts, err := DecodeTopicStatsTable(body); err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
		} else {
			for mq, row := range ts.OffsetTable {
				b, err := json.Marshal(row)
				require.NoError(t, err)
				var again TopicOffset
				require.NoError(t, json.Unmarshal(b, &again))
				require.Equal(t, row, again, "queue %+v", mq)
			}
		}
		if cs, err := DecodeConsumeStats(body); err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
		} else {
			require.NotNil(t, cs.OffsetTable)
		}
		for _, decode := range []func([]byte) error{
			func(b []byte) error { _, err := DecodeConsumerConnection(b); return err },
			func(b []byte) error { _, err := DecodeProducerConnection(b); return err },
			func(b []byte) error { _, err := DecodeGroupList(b); return err },
		} {
			if err := decode(body); err != nil {
				require.ErrorIs(t, err, ErrBodyJSON)
			}
		}
	})
}
