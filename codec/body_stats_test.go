package codec

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// Java's Double.toString (what fastjson writes for a double field), value by value.
func TestAppendJavaDouble(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{0, "0.0"}, {1, "1.0"}, {0.25, "0.25"}, {12.5, "12.5"}, {-3, "-3.0"},
		{1.0 / 3, "0.3333333333333333"}, {0.001, "0.001"}, {9999999, "9999999.0"},
		{1e7, "1.0E7"}, {12345678.9, "1.23456789E7"}, {0.0005, "5.0E-4"},
		{3.0 / 3600, "8.333333333333334E-4"}, {-1.5e-10, "-1.5E-10"}, {math.NaN(), "null"}, {math.Inf(1), "null"},
	} {
		require.Equal(t, tc.want, string(AppendJavaDouble(nil, tc.v)), "%v", tc.v)
	}
}

func TestBrokerStatsDataRoundTrip(t *testing.T) {
	d := BrokerStatsData{StatsMinute: BrokerStatsItem{Sum: 5, Tps: 0.25, Avgpt: 1},
		StatsHour: BrokerStatsItem{Sum: 3, Tps: 0.005, Avgpt: 1.5}}
	body := d.Encode()
	require.Equal(t, `{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":1.5,"sum":3,"tps":0.005},`+
		`"statsMinute":{"avgpt":1.0,"sum":5,"tps":0.25}}`, string(body))
	got, err := DecodeBrokerStatsData(body)
	require.NoError(t, err)
	require.Equal(t, d, *got)
	_, err = DecodeBrokerStatsData([]byte(`{"statsMinute":{"sum":"x"}}`))
	require.ErrorContains(t, err, "BrokerStatsData")
}

const consumeStatsListFastjson = `{"brokerAddr":"10.0.0.1:10911","consumeStatsList":[{"G":[{"consumeTps":0.25,` +
	`"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":17,"pullOffset":3}}}]},` +
	`{"H":[]}],"totalDiff":2}`

func TestDecodeConsumeStatsList(t *testing.T) {
	l, err := DecodeConsumeStatsList([]byte(consumeStatsListFastjson))
	require.NoError(t, err)
	require.Equal(t, &ConsumeStatsList{BrokerAddr: "10.0.0.1:10911", TotalDiff: 2, ConsumeStatsList: []map[string][]ConsumeStats{
		{"G": {{ConsumeTps: 0.25, OffsetTable: map[MessageQueue]OffsetWrapper{
			{Topic: "T", BrokerName: "b", QueueID: 0}: {BrokerOffset: 5, ConsumerOffset: 3, LastTimestamp: 17, PullOffset: 3}}}}},
		{"H": {}},
	}}, l)
	_, err = DecodeConsumeStatsList([]byte(`{"consumeStatsList":[{"G":[{"offsetTable":{"x":{}}}]}]}`))
	require.ErrorContains(t, err, "ConsumeStatsList")
}

// FuzzBodyStats: any body either fails with ErrBodyJSON or decodes; a BrokerStatsData encodes and
// decodes back to itself.
func FuzzBodyStats(f *testing.F) {
	for _, seed := range []string{
		`{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":1.5,"sum":3,"tps":0.005},"statsMinute":{"avgpt":1.0,"sum":5,"tps":8.3E-4}}`,
		`{}`, `{"statsMinute":null}`, `{"statsMinute":{"sum":1e3}}`, `{`, `[]`, consumeStatsListFastjson,
		`{"consumeStatsList":[{"G":null}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if _, err := DecodeConsumeStatsList(body); err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
		}
		d, err := DecodeBrokerStatsData(body)
		if err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
			return
		}
		again, err := DecodeBrokerStatsData(d.Encode())
		require.NoError(t, err)
		require.Equal(t, *d, *again)
	})
}
