package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// statsAll's rows as RocketMQ prints them, a topic nobody consumes included.
func TestStatsAllText(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, (&statsAllResult{Rows: []statsRow{
		{Topic: "Orders", Group: "Billing", Accumulation: 12, InTPS: 3.456, OutTPS: 2.5, InMsg24Hour: 1000, OutMsg24Hour: 988},
		{Topic: "Audit", InTPS: 0.1, InMsg24Hour: 6, NoConsumer: true},
	}}).text(&b))
	golden(t, "statsAll_text", b.String())
}

// A day's messages: the day window's sum, else the hour's, else the minute's (a broker up for
// less than an hour has no day sample yet), as RocketMQ's statsAll computes them.
func TestSum24Hours(t *testing.T) {
	for _, tc := range []struct {
		d    codec.BrokerStatsData
		want int64
	}{
		{codec.BrokerStatsData{StatsDay: codec.BrokerStatsItem{Sum: 7}, StatsHour: codec.BrokerStatsItem{Sum: 3}}, 7},
		{codec.BrokerStatsData{StatsHour: codec.BrokerStatsItem{Sum: 3}, StatsMinute: codec.BrokerStatsItem{Sum: 1}}, 3},
		{codec.BrokerStatsData{StatsMinute: codec.BrokerStatsItem{Sum: 1}}, 1},
		{codec.BrokerStatsData{}, 0},
	} {
		require.Equal(t, tc.want, sum24Hours(&tc.d))
	}
}
