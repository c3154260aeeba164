package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
)

// queryCq: a ConsumeQueue's entries (QUERY_CONSUME_QUEUE), printed as RocketMQ's queryCq prints
// them.

// consumeQueueEntry is RocketMQ's ConsumeQueueData.
type consumeQueueEntry struct {
	PhysicOffset   int64   `json:"physicOffset"`
	PhysicSize     int32   `json:"physicSize"`
	TagsCode       int64   `json:"tagsCode"`
	ExtendDataJSON *string `json:"extendDataJson,omitempty"`
	BitMap         *string `json:"bitMap,omitempty"`
	Eval           bool    `json:"eval"`
	Msg            *string `json:"msg,omitempty"`
}

// queryCqResult is RocketMQ's QueryConsumeQueueResponseBody plus the first index asked for.
type queryCqResult struct {
	Index            int64                   `json:"-"`
	SubscriptionData *codec.SubscriptionData `json:"subscriptionData,omitempty"`
	FilterData       *string                 `json:"filterData,omitempty"`
	MaxQueueIndex    int64                   `json:"maxQueueIndex"`
	MinQueueIndex    int64                   `json:"minQueueIndex"`
	QueueData        []consumeQueueEntry     `json:"queueData"`
}

const queryCqRule = "======================================\n"

// javaNullable prints a Java String field as String concatenation does: null as "null".
func javaNullable(s *string) string {
	if s == nil {
		return "null"
	}
	return *s
}

func (r *queryCqResult) text(w io.Writer) error {
	var b strings.Builder
	if r.SubscriptionData != nil {
		sub, err := json.MarshalIndent(r.SubscriptionData, "", "\t")
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "Subscription data: \n%s\n%s", sub, queryCqRule)
	}
	if r.FilterData != nil {
		fmt.Fprintf(&b, "Filter data: \n%s\n%s", *r.FilterData, queryCqRule)
	}
	fmt.Fprintf(&b, "Queue data: \nmax: %d, min: %d\n%s", r.MaxQueueIndex, r.MinQueueIndex, queryCqRule)
	for i, e := range r.QueueData {
		fmt.Fprintf(&b, "idx: %d\nConsumeQueueData{physicOffset=%d, physicSize=%d, tagsCode=%d, extendDataJson='%s', "+
			"bitMap='%s', eval=%t, msg='%s'}\n%s", r.Index+int64(i), e.PhysicOffset, e.PhysicSize, e.TagsCode,
			javaNullable(e.ExtendDataJSON), javaNullable(e.BitMap), e.Eval, javaNullable(e.Msg), queryCqRule)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *app) queryCqCommand() *cobra.Command {
	var topic, broker, group string
	var queueID, count int32
	var index int64
	cmd := &cobra.Command{
		Use:   "queryCq",
		Short: "Query cq command.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			topic, broker = strings.TrimSpace(topic), strings.TrimSpace(broker)
			if broker == "" {
				masters, err := a.topicMasters(topic, "")
				if err != nil {
					return err
				}
				broker = masters[0].Addr
			}
			h := &codec.QueryConsumeQueueRequestHeader{Topic: topic, QueueID: queueID, Index: index, Count: count}
			if cmd.Flags().Changed("consumer") {
				h.ConsumerGroup = codec.Some(strings.TrimSpace(group))
			}
			resp, err := a.askBroker(broker, codec.RequestQueryConsumeQueue, h, nil, fmt.Sprintf("queue %d of topic %q", queueID, topic))
			if err != nil {
				return err
			}
			res := &queryCqResult{Index: index}
			if len(resp.Body) > 0 {
				if err := json.Unmarshal(resp.Body, res); err != nil {
					return fmt.Errorf("broker %s answered QUERY_CONSUME_QUEUE with a body that does not decode: %w", broker, err)
				}
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.Int32VarP(&queueID, "queue", "q", 0, "queue num, ie. 1")
	f.Int64VarP(&index, "index", "i", 0, "start queue index.")
	f.Int32VarP(&count, "count", "c", 10, "how many.")
	f.StringVarP(&broker, "broker", "b", "", "broker addr.")
	f.StringVarP(&group, "consumer", "g", "", "consumer group.")
	for _, name := range []string{"topic", "queue", "index"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// cleanExpiredCQCommand is RocketMQ's cleanExpiredCQ: CLEAN_EXPIRED_CONSUMEQUEUE to the broker
// given, or to every broker (slaves too) of the cluster given, or of every cluster.
func (a *app) cleanExpiredCQCommand() *cobra.Command {
	var addr, cluster string
	cmd := &cobra.Command{
		Use:   "cleanExpiredCQ",
		Short: "Clean expired ConsumeQueue on broker.",
		RunE: func(*cobra.Command, []string) error {
			addr, cluster = strings.TrimSpace(addr), strings.TrimSpace(cluster)
			var brokers []brokerRef
			switch {
			case addr != "": // -b wins over -c, as in RocketMQ
				brokers = []brokerRef{{Addr: addr}}
			default:
				ci, err := a.clusterInfo()
				if err != nil {
					return err
				}
				clusters := []string{cluster}
				if cluster == "" {
					clusters = slices.Sorted(maps.Keys(ci.ClusterAddrTable))
				}
				for _, c := range clusters {
					bs, err := brokersOf(ci, c, true)
					if err != nil {
						return err
					}
					brokers = append(brokers, bs...)
				}
			}
			res := &messageResult{message: "success\n"}
			for _, b := range brokers {
				if _, err := a.askBroker(b.Addr, codec.RequestCleanExpiredConsumeQueue, nil, nil, ""); err != nil {
					return err
				}
				res.Addrs = append(res.Addrs, b.Addr)
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "Broker address")
	f.StringVarP(&cluster, "cluster", "c", "", "clustername")
	return cmd
}
