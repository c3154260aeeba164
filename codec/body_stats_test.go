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

// FuzzBrokerStatsData: any body either fails with ErrBodyJSON or decodes to data that encodes
// and decodes back to itself.
func FuzzBrokerStatsData(f *testing.F) {
	for _, seed := range []string{
		`{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{"avgpt":1.5,"sum":3,"tps":0.005},"statsMinute":{"avgpt":1.0,"sum":5,"tps":8.3E-4}}`,
		`{}`, `{"statsMinute":null}`, `{"statsMinute":{"sum":1e3}}`, `{`, `[]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
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
