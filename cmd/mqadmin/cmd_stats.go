package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/adminclient"
)

// statsAll and brokerConsumeStats: the brokers' statistics windows (VIEW_BROKER_STATS_DATA) and
// consume stats (GET_BROKER_CONSUME_STATS), printed as RocketMQ's mqadmin prints them.

// Stats names statsAll reads (RocketMQ's Stats constants).
const (
	statsTopicPutNums = "TOPIC_PUT_NUMS"
	statsGroupGetNums = "GROUP_GET_NUMS"
)

// statsRow is one line of statsAll: a topic and one group consuming it, or the topic alone
// (Group empty, NoConsumer) when nobody does.
type statsRow struct {
	Topic        string  `json:"topic"`
	Group        string  `json:"group,omitempty"`
	Accumulation int64   `json:"accumulation"`
	InTPS        float64 `json:"inTps"`
	OutTPS       float64 `json:"outTps"`
	InMsg24Hour  int64   `json:"inMsg24Hour"`
	OutMsg24Hour int64   `json:"outMsg24Hour"`
	NoConsumer   bool    `json:"noConsumer,omitempty"`
}

type statsAllResult struct {
	Rows []statsRow `json:"rows"`
}

func (r *statsAllResult) text(w io.Writer) error {
	t := newTable(w, "#Topic", "#Consumer Group", "#Accumulation", "#InTPS", "#OutTPS", "#InMsg24Hour", "#OutMsg24Hour")
	for _, row := range r.Rows {
		if row.NoConsumer {
			t.row(row.Topic, "", 0, fmt.Sprintf("%.2f", row.InTPS), "", row.InMsg24Hour, "NO_CONSUMER")
			continue
		}
		t.row(row.Topic, row.Group, row.Accumulation, fmt.Sprintf("%.2f", row.InTPS), fmt.Sprintf("%.2f", row.OutTPS),
			row.InMsg24Hour, row.OutMsg24Hour)
	}
	return t.flush()
}

// brokerStats asks a broker for one stats item's windows; a broker that keeps no such item
// (RocketMQ's "The stats <name> <key> not exist") counts as nothing, as RocketMQ's statsAll
// counts it; any other failure is an error.
func (a *app) brokerStats(addr, name, key string) (*codec.BrokerStatsData, error) {
	resp, err := a.askBroker(addr, codec.RequestViewBrokerStatsData,
		&codec.ViewBrokerStatsDataRequestHeader{StatsName: name, StatsKey: key}, nil, fmt.Sprintf("stats %s of %q", name, key))
	var re *adminclient.ResponseError
	if errors.As(err, &re) && re.Code == codec.ResponseSystemError && strings.HasSuffix(re.Remark, "> not exist") {
		return &codec.BrokerStatsData{}, nil
	}
	if err != nil {
		return nil, err
	}
	d, err := codec.DecodeBrokerStatsData(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("stats from broker %s: %w", addr, err)
	}
	return d, nil
}

// sum24Hours is what RocketMQ's statsAll shows as a day's messages: the day window's sum, else
// the hour's, else the minute's (a broker up for less than an hour has sampled no day yet).
func sum24Hours(d *codec.BrokerStatsData) int64 {
	for _, s := range []int64{d.StatsDay.Sum, d.StatsHour.Sum, d.StatsMinute.Sum} {
		if s != 0 {
			return s
		}
	}
	return 0
}

// statsOver sums one stats item over masters: the minute's rate and the day's messages.
func (a *app) statsOver(masters []brokerRef, name, key string) (tps float64, day int64, err error) {
	for _, m := range masters {
		d, err := a.brokerStats(m.Addr, name, key)
		if err != nil {
			return 0, 0, err
		}
		tps += d.StatsMinute.Tps
		day += sum24Hours(d)
	}
	return tps, day, nil
}

// topicStats is RocketMQ's StatsAllSubCommand.printTopicDetail: the topic's put rate and day,
// and per group consuming it the pull rate, day and lag.
func (a *app) topicStats(topic string, activeOnly bool) ([]statsRow, error) {
	masters, err := a.topicMasters(topic, "")
	if err != nil {
		return nil, err
	}
	inTPS, inDay, err := a.statsOver(masters, statsTopicPutNums, topic)
	if err != nil {
		return nil, err
	}
	groups, err := a.consumingGroups(masters, topic)
	if err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		if activeOnly && inDay == 0 {
			return nil, nil
		}
		return []statsRow{{Topic: topic, InTPS: inTPS, InMsg24Hour: inDay, NoConsumer: true}}, nil
	}
	var rows []statsRow
	for _, g := range groups {
		outTPS, outDay, err := a.statsOver(masters, statsGroupGetNums, topic+"@"+g)
		if err != nil {
			return nil, err
		}
		table, _, err := a.consumeStats(g, topic, "")
		if err != nil {
			return nil, err
		}
		var lag int64
		for _, w := range table {
			lag += w.BrokerOffset - w.ConsumerOffset
		}
		if activeOnly && inDay == 0 && outDay == 0 {
			continue
		}
		rows = append(rows, statsRow{Topic: topic, Group: g, Accumulation: max(lag, 0), InTPS: inTPS, OutTPS: outTPS,
			InMsg24Hour: inDay, OutMsg24Hour: outDay})
	}
	return rows, nil
}

func (a *app) statsAllCommand() *cobra.Command {
	var activeOnly bool
	var topic string
	cmd := &cobra.Command{
		Use:   "statsAll",
		Short: "Topic and Consumer tps stats",
		Long: "Topic and Consumer tps stats: per topic (not the retry and dead-letter ones) and group consuming it,\n" +
			"the messages not consumed yet (#Accumulation), the put and pull rates of the last minute and the\n" +
			"messages of the last day, from the masters' statistics windows (VIEW_BROKER_STATS_DATA).",
		RunE: func(*cobra.Command, []string) error {
			topics, err := a.allTopics()
			if err != nil {
				return err
			}
			topic = strings.TrimSpace(topic)
			res := &statsAllResult{Rows: []statsRow{}}
			for _, t := range topics {
				if strings.HasPrefix(t, retryGroupTopicPrefix) || strings.HasPrefix(t, dlqGroupTopicPrefix) ||
					(topic != "" && t != topic) {
					continue
				}
				rows, err := a.topicStats(t, activeOnly)
				if isTopicNotExist(err) {
					continue // listed but without a route (deleted meanwhile)
				}
				if err != nil {
					return err
				}
				res.Rows = append(res.Rows, rows...)
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&activeOnly, "activeTopic", "a", false, "print active topic only")
	f.StringVarP(&topic, "topic", "t", "", "print select topic only")
	return cmd
}

// brokerConsumeRow is one queue of brokerConsumeStats.
type brokerConsumeRow struct {
	Topic          string `json:"topic"`
	Group          string `json:"group"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTimestamp  int64  `json:"lastTimestamp"`
	lastTime       string
}

type brokerConsumeResult struct {
	BrokerAddr string             `json:"brokerAddr"`
	Queues     []brokerConsumeRow `json:"queues"`
	TotalDiff  int64              `json:"totalDiff"`
}

func (r *brokerConsumeResult) text(w io.Writer) error {
	t := newTable(w, "#Topic", "#Group", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime")
	for _, q := range r.Queues {
		t.row(q.Topic, q.Group, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Diff, q.lastTime)
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nDiff Total: %d\n", r.TotalDiff)
	return err
}

// brokerConsumeStatsCommand is RocketMQ's brokerConsumeStats: GET_BROKER_CONSUME_STATS of one
// broker, a line per queue of every group's topics that has consumed something (lastTimestamp
// set) and lags by at least -l.
func (a *app) brokerConsumeStatsCommand() *cobra.Command {
	var addr string
	var level int64
	var order boolArg
	var timeoutMillis int64
	cmd := &cobra.Command{
		Use:   "brokerConsumeStats",
		Short: "Fetch broker consume stats data",
		RunE: func(*cobra.Command, []string) error {
			addr = strings.TrimSpace(addr)
			resp, err := a.askBroker(addr, codec.RequestGetBrokerConsumeStats,
				&codec.GetConsumeStatsInBrokerHeader{IsOrder: order.value}, nil, "")
			if err != nil {
				return err
			}
			list, err := codec.DecodeConsumeStatsList(resp.Body)
			if err != nil {
				return fmt.Errorf("consume stats from broker %s: %w", addr, err)
			}
			res := &brokerConsumeResult{BrokerAddr: list.BrokerAddr, Queues: []brokerConsumeRow{}, TotalDiff: list.TotalDiff}
			for _, groups := range list.ConsumeStatsList {
				for _, group := range slices.Sorted(maps.Keys(groups)) {
					for _, cs := range groups[group] {
						queues := slices.SortedFunc(maps.Keys(cs.OffsetTable), compareQueues)
						for _, mq := range queues {
							w := cs.OffsetTable[mq]
							diff := w.BrokerOffset - w.ConsumerOffset
							if diff < level || w.LastTimestamp <= 0 {
								continue
							}
							res.Queues = append(res.Queues, brokerConsumeRow{Topic: mq.Topic, Group: group,
								BrokerName: mq.BrokerName, QueueID: mq.QueueID, BrokerOffset: w.BrokerOffset,
								ConsumerOffset: w.ConsumerOffset, Diff: diff, LastTimestamp: w.LastTimestamp,
								lastTime: time.UnixMilli(w.LastTimestamp).In(a.loc).Format(time.DateTime)})
						}
					}
				}
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "Broker address")
	f.Int64VarP(&timeoutMillis, "timeoutMillis", "t", 50000, "request timeout Millis (mqadmin's --timeout applies)")
	f.Int64VarP(&level, "level", "l", 0, "threshold of print diff")
	f.VarP(&order, "order", "o", "order topic")
	_ = cmd.MarkFlagRequired("brokerAddr")
	return cmd
}
