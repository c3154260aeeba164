package codec

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// BrokerStatsItem is one window of a VIEW_BROKER_STATS_DATA (315) answer (RocketMQ's
// BrokerStatsItem: long sum, double tps, double avgpt). Field order is fastjson's.
type BrokerStatsItem struct {
	Avgpt float64 `json:"avgpt"` // sum per call
	Sum   int64   `json:"sum"`
	Tps   float64 `json:"tps"` // sum per second
}

// BrokerStatsData is the body of a VIEW_BROKER_STATS_DATA (315) answer: one stats item's last
// minute, hour and day (RocketMQ's BrokerStatsData).
//
//	{"statsDay":{"avgpt":0.0,"sum":0,"tps":0.0},"statsHour":{...},"statsMinute":{...}}
type BrokerStatsData struct {
	StatsDay    BrokerStatsItem `json:"statsDay"`
	StatsHour   BrokerStatsItem `json:"statsHour"`
	StatsMinute BrokerStatsItem `json:"statsMinute"`
}

// Encode writes d as fastjson writes it: fields sorted by name, doubles as Java prints them.
func (d *BrokerStatsData) Encode() []byte {
	b := make([]byte, 0, 160)
	for i, w := range []struct {
		name string
		item *BrokerStatsItem
	}{{"statsDay", &d.StatsDay}, {"statsHour", &d.StatsHour}, {"statsMinute", &d.StatsMinute}} {
		if i == 0 {
			b = append(b, '{')
		} else {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, w.name...)
		b = append(b, `":{"avgpt":`...)
		b = AppendJavaDouble(b, w.item.Avgpt)
		b = append(b, `,"sum":`...)
		b = strconv.AppendInt(b, w.item.Sum, 10)
		b = append(b, `,"tps":`...)
		b = AppendJavaDouble(b, w.item.Tps)
		b = append(b, '}')
	}
	return append(b, '}')
}

// DecodeBrokerStatsData parses a BrokerStatsData. Safe for concurrent use.
func DecodeBrokerStatsData(body []byte) (*BrokerStatsData, error) {
	var d BrokerStatsData
	if err := decodeBodyJSON(body, &d, "BrokerStatsData"); err != nil {
		return nil, err
	}
	return &d, nil
}

// AppendJavaDouble appends v as Java's Double.toString writes it, which is what fastjson writes
// for a double field: "0.0", "12.5", "1.0E7", "1.0E-4"; NaN and infinities as null (fastjson).
func AppendJavaDouble(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	if v == 0 {
		if math.Signbit(v) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	if a := math.Abs(v); a >= 1e-3 && a < 1e7 {
		start := len(b)
		b = strconv.AppendFloat(b, v, 'f', -1, 64)
		if !strings.Contains(string(b[start:]), ".") {
			b = append(b, '.', '0')
		}
		return b
	}
	// Computerized scientific notation: one digit before the point, at least one after, "E" and
	// the exponent without sign or padding when positive.
	s := strconv.FormatFloat(v, 'e', -1, 64) // e.g. 1.2345e+07, 1e-04
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	b = append(b, mant...)
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(n), 10)
}

// ViewBrokerStatsDataRequestHeader is the header of VIEW_BROKER_STATS_DATA (315).
type ViewBrokerStatsDataRequestHeader struct {
	StatsName string // statsName, required: TOPIC_PUT_NUMS, GROUP_GET_NUMS, ...
	StatsKey  string // statsKey, required: a topic, topic@group, a cluster name
}

// Decode reads the keys.
func (h *ViewBrokerStatsDataRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "ViewBrokerStatsDataRequestHeader"}
	*h = ViewBrokerStatsDataRequestHeader{StatsName: r.str("statsName", true), StatsKey: r.str("statsKey", true)}
	return r.err
}

// Encode writes the keys.
func (h *ViewBrokerStatsDataRequestHeader) Encode(ext map[string]string) {
	ext["statsName"] = h.StatsName
	ext["statsKey"] = h.StatsKey
}

// GetConsumeStatsInBrokerHeader is the header of GET_BROKER_CONSUME_STATS (317).
type GetConsumeStatsInBrokerHeader struct {
	IsOrder bool // isOrder, required: only ordered topics
}

// Encode writes the keys.
func (h *GetConsumeStatsInBrokerHeader) Encode(ext map[string]string) {
	ext["isOrder"] = strconv.FormatBool(h.IsOrder)
}

// ConsumeStatsList is the body of a GET_BROKER_CONSUME_STATS (317) answer: per consumer group,
// one ConsumeStats per topic it consumes, and the lag of them all.
type ConsumeStatsList struct {
	BrokerAddr       string
	ConsumeStatsList []map[string][]ConsumeStats
	TotalDiff        int64
}

// DecodeConsumeStatsList parses a ConsumeStatsList (fastjson's queue-object keys included). Safe
// for concurrent use.
func DecodeConsumeStatsList(body []byte) (*ConsumeStatsList, error) {
	var in struct {
		BrokerAddr       string                                  `json:"brokerAddr"`
		ConsumeStatsList []map[string][]consumeStatsListEntryRaw `json:"consumeStatsList"`
		TotalDiff        int64                                   `json:"totalDiff"`
	}
	if err := decodeBodyJSON(body, &in, "ConsumeStatsList"); err != nil {
		return nil, err
	}
	out := &ConsumeStatsList{BrokerAddr: in.BrokerAddr, TotalDiff: in.TotalDiff}
	for _, groups := range in.ConsumeStatsList {
		m := make(map[string][]ConsumeStats, len(groups))
		for group, list := range groups {
			stats := make([]ConsumeStats, 0, len(list))
			for _, raw := range list {
				table, err := decodeQueueTable[OffsetWrapper](raw.OffsetTable, "ConsumeStatsList")
				if err != nil {
					return nil, err
				}
				stats = append(stats, ConsumeStats{ConsumeTps: raw.ConsumeTps, OffsetTable: table})
			}
			m[group] = stats
		}
		out.ConsumeStatsList = append(out.ConsumeStatsList, m)
	}
	return out, nil
}

type consumeStatsListEntryRaw struct {
	ConsumeTps  float64         `json:"consumeTps"`
	OffsetTable json.RawMessage `json:"offsetTable"`
}
