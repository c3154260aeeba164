package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
)

// Consumer and producer group commands: updateSubGroup, deleteSubGroup, consumerProgress,
// consumerConnection, producerConnection, resetOffsetByTime.

type subGroupResult struct {
	Addrs  []string                      `json:"addrs"`
	Config codec.SubscriptionGroupConfig `json:"subscriptionGroupConfig"`
	lines  []string
}

func (r *subGroupResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, l := range r.lines {
		ew.printf("%s\n", l)
	}
	c := r.Config
	ew.printf("SubscriptionGroupConfig [groupName=%s, consumeEnable=%t, consumeFromMinEnable=%t, consumeBroadcastEnable=%t, "+
		"consumeMessageOrderly=%t, retryQueueNums=%d, retryMaxTimes=%d, brokerId=%d, whichBrokerWhenConsumeSlowly=%d, "+
		"notifyConsumerIdsChangedEnable=%t, groupSysFlag=%d, consumeTimeoutMinute=%d, attributes=%s]\n",
		c.GroupName, c.ConsumeEnable, c.ConsumeFromMinEnable, c.ConsumeBroadcastEnable, c.ConsumeMessageOrderly,
		c.RetryQueueNums, c.RetryMaxTimes, c.BrokerID, c.WhichBrokerWhenConsumeSlowly, c.NotifyConsumerIdsChangedEnable,
		c.GroupSysFlag, c.ConsumeTimeoutMinute, javaMapText(c.Attributes))
	return ew.err
}

func (a *app) updateSubGroupCommand() *cobra.Command {
	var addr, cluster, group, retryPolicy, attributes string
	var consumeEnable, fromMin, broadcast, orderly, notify boolArg
	var retryQueues, retryMax int32
	var brokerID, slowBroker int64
	cmd := &cobra.Command{
		Use:   "updateSubGroup",
		Short: "Update or create subscription group.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			brokers, err := a.targetBrokers(addr, cluster, false)
			if err != nil {
				return err
			}
			// RocketMQ's command starts from Java's defaults with broadcast and from-min off.
			cfg := codec.NewSubscriptionGroupConfig(group)
			cfg.ConsumeBroadcastEnable, cfg.ConsumeFromMinEnable = false, false
			for _, b := range []struct {
				arg *boolArg
				dst *bool
			}{{&consumeEnable, &cfg.ConsumeEnable}, {&fromMin, &cfg.ConsumeFromMinEnable}, {&broadcast, &cfg.ConsumeBroadcastEnable},
				{&orderly, &cfg.ConsumeMessageOrderly}, {&notify, &cfg.NotifyConsumerIdsChangedEnable}} {
				if b.arg.set {
					*b.dst = b.arg.value
				}
			}
			f := cmd.Flags()
			if f.Changed("retryQueueNums") {
				cfg.RetryQueueNums = retryQueues
			}
			if f.Changed("retryMaxTimes") {
				cfg.RetryMaxTimes = retryMax
			}
			if f.Changed("brokerId") {
				cfg.BrokerID = brokerID
			}
			if f.Changed("whichBrokerWhenConsumeSlowly") {
				cfg.WhichBrokerWhenConsumeSlowly = slowBroker
			}
			if retryPolicy != "" {
				if !json.Valid([]byte(retryPolicy)) {
					return usageError("-p %q: the group retry policy must be JSON", retryPolicy)
				}
				cfg.GroupRetryPolicy = []byte(retryPolicy)
			}
			if attributes != "" {
				attrs, err := parseAttributes(attributes)
				if err != nil {
					return err
				}
				cfg.Attributes = attrs
			}
			body, err := cfg.Encode()
			if err != nil {
				return err
			}
			res := &subGroupResult{Config: cfg}
			for _, b := range brokers {
				if _, err := a.askBroker(b.Addr, codec.RequestUpdateAndCreateSubscriptionGroup, nil, body,
					fmt.Sprintf("group %q", group)); err != nil {
					return err
				}
				res.Addrs = append(res.Addrs, b.Addr)
				res.lines = append(res.lines, fmt.Sprintf("create subscription group to %s success.", b.Addr))
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "create subscription group to which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "create subscription group to which cluster")
	f.StringVarP(&group, "groupName", "g", "", "consumer group name")
	f.VarP(&consumeEnable, "consumeEnable", "s", "consume enable")
	f.VarP(&fromMin, "consumeFromMinEnable", "m", "from min offset")
	f.VarP(&broadcast, "consumeBroadcastEnable", "d", "broadcast")
	f.VarP(&orderly, "consumeMessageOrderly", "o", "consume message orderly")
	f.Int32VarP(&retryQueues, "retryQueueNums", "q", 1, "retry queue nums")
	f.Int32VarP(&retryMax, "retryMaxTimes", "r", 16, "retry max times")
	f.StringVarP(&retryPolicy, "groupRetryPolicy", "p", "", "the json string of retry policy (5.x brokers)")
	f.Int64VarP(&brokerID, "brokerId", "i", 0, "consumer from which broker id")
	f.Int64VarP(&slowBroker, "whichBrokerWhenConsumeSlowly", "w", 1, "which broker id when consume slowly")
	f.VarP(&notify, "notifyConsumerIdsChanged", "a", "notify consumerId changed")
	f.StringVar(&attributes, "attributes", "", "attribute(+a=b,+c=d,-e)")
	_ = cmd.MarkFlagRequired("groupName")
	return cmd
}

// parseAttributes reads RocketMQ's attribute list "+a=b,+c=d" into a map (the "-e" removals
// only mean something to a broker's merge, which a whole new config does not do).
func parseAttributes(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		k, v, ok := strings.Cut(strings.TrimPrefix(item, "+"), "=")
		if !strings.HasPrefix(item, "+") || !ok || k == "" {
			return nil, usageError("--attributes %q: each item must be +key=value", s)
		}
		out[k] = v
	}
	return out, nil
}

func (a *app) deleteSubGroupCommand() *cobra.Command {
	var addr, cluster, group string
	var removeOffset boolArg
	cmd := &cobra.Command{
		Use:   "deleteSubGroup",
		Short: "Delete subscription group from broker.",
		RunE: func(*cobra.Command, []string) error {
			brokers, err := a.targetBrokers(addr, cluster, false)
			if err != nil {
				return err
			}
			h := &codec.DeleteSubscriptionGroupRequestHeader{GroupName: group, CleanOffset: removeOffset.value}
			res := &messageResult{}
			var msg strings.Builder
			for _, b := range brokers {
				if _, err := a.askBroker(b.Addr, codec.RequestDeleteSubscriptionGroup, h, nil, fmt.Sprintf("group %q", group)); err != nil {
					return err
				}
				res.Addrs = append(res.Addrs, b.Addr)
				if cluster == "" {
					fmt.Fprintf(&msg, "delete subscription group [%s] from broker [%s] success.\n", group, b.Addr)
				} else {
					fmt.Fprintf(&msg, "delete subscription group [%s] from broker [%s] in cluster [%s] success.\n", group, b.Addr, cluster)
				}
			}
			if cluster != "" {
				// RocketMQ also drops the group's retry and dead-letter topics from the cluster.
				for _, topic := range []string{retryGroupTopicPrefix + group, dlqGroupTopicPrefix + group} {
					dr, err := a.deleteTopic(topic, cluster)
					if err != nil {
						return err
					}
					msg.WriteString(dr.message)
				}
			}
			res.message = msg.String()
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "delete subscription group from which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "delete subscription group from which cluster")
	f.StringVarP(&group, "groupName", "g", "", "subscription group name")
	f.VarP(&removeOffset, "removeOffset", "r", "remove offset")
	_ = cmd.MarkFlagRequired("groupName")
	return cmd
}

// groupMasters returns the masters that may hold a group's state: those of the topic when one
// is given, else those of the group's retry topic (created at its first heartbeat), else every
// master the name servers know.
func (a *app) groupMasters(group, topic, cluster string) ([]brokerRef, error) {
	if topic != "" {
		return a.topicMasters(topic, cluster)
	}
	masters, err := a.topicMasters(retryGroupTopicPrefix+group, cluster)
	if !isTopicNotExist(err) {
		return masters, err
	}
	ci, err := a.clusterInfo()
	if err != nil {
		return nil, err
	}
	clusters := []string{cluster}
	if cluster == "" {
		clusters = slices.Sorted(maps.Keys(ci.ClusterAddrTable))
	}
	var all []brokerRef
	for _, c := range clusters {
		bs, err := brokersOf(ci, c, false)
		if err != nil {
			return nil, err
		}
		all = append(all, bs...)
	}
	return all, nil
}

// consumeStats gathers GET_CONSUME_STATS of a group (for one topic or all it consumes) from
// its masters.
func (a *app) consumeStats(group, topic, cluster string) (map[codec.MessageQueue]codec.OffsetWrapper, float64, error) {
	masters, err := a.groupMasters(group, topic, cluster)
	if err != nil {
		return nil, 0, err
	}
	what := fmt.Sprintf("group %q", group)
	if topic != "" {
		what += fmt.Sprintf(" and topic %q", topic)
	}
	table := map[codec.MessageQueue]codec.OffsetWrapper{}
	var tps float64
	for _, m := range masters {
		resp, err := a.askBroker(m.Addr, codec.RequestGetConsumeStats,
			&codec.GetConsumeStatsRequestHeader{ConsumerGroup: group, Topic: topic}, nil, what)
		if err != nil {
			return nil, 0, err
		}
		cs, err := codec.DecodeConsumeStats(resp.Body)
		if err != nil {
			return nil, 0, fmt.Errorf("consume stats from broker %s: %w", m.Addr, err)
		}
		maps.Copy(table, cs.OffsetTable)
		tps += cs.ConsumeTps
	}
	return table, tps, nil
}

type progressRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	ClientIP       string `json:"clientIp,omitempty"`
	Lag            int64  `json:"lag"`
	LastTimestamp  int64  `json:"lastTimestamp"`
	lastTime       string
}

type progressResult struct {
	Group      string        `json:"group"`
	Queues     []progressRow `json:"queues"`
	ConsumeTPS float64       `json:"consumeTps"`
	LagTotal   int64         `json:"lagTotal"`
	showIP     bool
}

func (r *progressResult) text(w io.Writer) error {
	header := []string{"#Topic", "#Broker Name", "#QID", "#Broker Offset", "#Consumer Offset", "#Diff", "#LastTime"}
	if r.showIP {
		header = slices.Insert(header, 5, "#Client IP")
	}
	t := newTable(w, header...)
	for _, q := range r.Queues {
		cells := []any{q.Topic, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag, q.lastTime}
		if r.showIP {
			cells = slices.Insert(cells, 5, any(q.ClientIP))
		}
		t.row(cells...)
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nConsume TPS: %.2f\nDiff Total: %d\n", r.ConsumeTPS, r.LagTotal)
	return err
}

type groupSummary struct {
	Group        string  `json:"group"`
	Count        int     `json:"count"`
	Version      string  `json:"version"`
	ConsumeType  string  `json:"consumeType"`
	MessageModel string  `json:"messageModel"`
	ConsumeTPS   float64 `json:"consumeTps"`
	LagTotal     int64   `json:"lagTotal"`
}

type groupsResult struct {
	Groups []groupSummary `json:"groups"`
}

func (r *groupsResult) text(w io.Writer) error {
	t := newTable(w, "#Group", "#Count", "#Version", "#Type", "#Model", "#TPS", "#Diff Total")
	for _, g := range r.Groups {
		t.row(g.Group, g.Count, g.Version, g.ConsumeType, g.MessageModel, int64(g.ConsumeTPS), g.LagTotal)
	}
	return t.flush()
}

func (a *app) consumerProgressCommand() *cobra.Command {
	var group, topic, cluster string
	var showIP boolArg
	cmd := &cobra.Command{
		Use:   "consumerProgress",
		Short: "Query consumer's progress, speed.",
		Long: "Query consumer's progress, speed. With -g: per queue the broker offset, the group's offset and the\n" +
			"lag between them (#Diff), and the totals; without -g: one line per consumer group.\n" +
			"-s true: the IP of the client holding each queue, from the clients' running info (N/A when none).",
		RunE: func(*cobra.Command, []string) error {
			if group == "" {
				return a.allGroupsProgress(cluster)
			}
			table, tps, err := a.consumeStats(group, topic, cluster)
			if err != nil {
				return err
			}
			if len(table) == 0 {
				return fmt.Errorf("group %q has no consume stats: no broker has offsets of it (it may not have consumed any message yet)", group)
			}
			mqs := slices.Collect(maps.Keys(table))
			sortQueues(mqs)
			res := &progressResult{Group: group, Queues: []progressRow{}, ConsumeTPS: tps, showIP: showIP.value}
			var holders map[codec.MessageQueue]string
			if showIP.value {
				holders = a.queueAllocation(group)
			}
			for _, mq := range mqs {
				ow := table[mq]
				row := progressRow{Topic: mq.Topic, BrokerName: mq.BrokerName, QueueID: mq.QueueID, BrokerOffset: ow.BrokerOffset,
					ConsumerOffset: ow.ConsumerOffset, Lag: ow.BrokerOffset - ow.ConsumerOffset, LastTimestamp: ow.LastTimestamp, lastTime: "N/A"}
				if ow.LastTimestamp > 0 {
					row.lastTime = time.UnixMilli(ow.LastTimestamp).In(a.loc).Format(time.DateTime)
				}
				if showIP.value {
					row.ClientIP = cmp.Or(holders[mq], "N/A")
				}
				res.LagTotal += row.Lag
				res.Queues = append(res.Queues, row)
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&group, "groupName", "g", "", "consumer group name")
	f.StringVarP(&topic, "topicName", "t", "", "topic name")
	f.VarP(&showIP, "showClientIP", "s", "Show Client IP per Queue")
	f.StringVarP(&cluster, "cluster", "c", "", "Cluster name")
	return cmd
}

// allGroupsProgress lists every group that has a retry topic, as RocketMQ's consumerProgress
// without -g does; a group whose stats or connections cannot be read shows what could be.
func (a *app) allGroupsProgress(cluster string) error {
	topics, err := a.allTopics()
	if err != nil {
		return err
	}
	res := &groupsResult{Groups: []groupSummary{}}
	for _, topic := range topics {
		group, ok := strings.CutPrefix(topic, retryGroupTopicPrefix)
		if !ok {
			continue
		}
		g := groupSummary{Group: group, Version: "OFFLINE"}
		if table, tps, err := a.consumeStats(group, "", cluster); err == nil {
			g.ConsumeTPS = tps
			for _, ow := range table {
				g.LagTotal += ow.BrokerOffset - ow.ConsumerOffset
			}
		}
		if cc, err := a.consumerConnection(group, ""); err == nil && len(cc.ConnectionSet) > 0 {
			g.Count = len(cc.ConnectionSet)
			minVersion := cc.ConnectionSet[0].Version
			for _, c := range cc.ConnectionSet {
				minVersion = min(minVersion, c.Version)
			}
			g.Version = codec.MQVersionName(minVersion)
			g.ConsumeType = "PUSH"
			if cc.ConsumeType == codec.ConsumeActively {
				g.ConsumeType = "PULL"
			}
			g.MessageModel = string(cc.MessageModel)
		}
		res.Groups = append(res.Groups, g)
	}
	return a.emit(res)
}

// consumerConnection asks for a group's connections: at addr when given, else at the first
// master of the group that knows it online.
func (a *app) consumerConnection(group, addr string) (*codec.ConsumerConnection, error) {
	var addrs []string
	if addr != "" {
		addrs = []string{addr}
	} else {
		masters, err := a.groupMasters(group, "", "")
		if err != nil {
			return nil, err
		}
		for _, m := range masters {
			addrs = append(addrs, m.Addr)
		}
	}
	var errs []error
	for _, ad := range addrs {
		resp, err := a.askBroker(ad, codec.RequestGetConsumerConnectionList,
			&codec.GetConsumerConnectionListRequestHeader{ConsumerGroup: group}, nil, fmt.Sprintf("group %q", group))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cc, err := codec.DecodeConsumerConnection(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("consumer connections from broker %s: %w", ad, err)
		}
		return cc, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("group %q: no broker to ask", group)
	}
	return nil, errors.Join(errs...)
}

type connectionRow struct {
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
	Language   string `json:"language"`
	Version    string `json:"version"`
}

func connectionRows(cs []codec.Connection) []connectionRow {
	out := make([]connectionRow, 0, len(cs))
	for _, c := range cs {
		out = append(out, connectionRow{ClientID: c.ClientID, ClientAddr: c.ClientAddr, Language: c.Language,
			Version: codec.MQVersionName(c.Version)})
	}
	slices.SortFunc(out, func(x, y connectionRow) int { return strings.Compare(x.ClientID, y.ClientID) })
	return out
}

type subscriptionRow struct {
	Topic         string `json:"topic"`
	SubExpression string `json:"subExpression"`
}

type consumerConnectionResult struct {
	Connections      []connectionRow   `json:"connections"`
	Subscriptions    []subscriptionRow `json:"subscriptions"`
	ConsumeType      string            `json:"consumeType"`
	MessageModel     string            `json:"messageModel"`
	ConsumeFromWhere string            `json:"consumeFromWhere"`
}

func (r *consumerConnectionResult) text(w io.Writer) error {
	t := newTable(w, "#ClientId", "#ClientAddr", "#Language", "#Version")
	for _, c := range r.Connections {
		t.row(c.ClientID, c.ClientAddr, c.Language, c.Version)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "\nBelow is subscription:\n"); err != nil {
		return err
	}
	t = newTable(w, "#Topic", "#SubExpression")
	for _, s := range r.Subscriptions {
		t.row(s.Topic, s.SubExpression)
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nConsumeType: %s\nMessageModel: %s\nConsumeFromWhere: %s\n", r.ConsumeType, r.MessageModel, r.ConsumeFromWhere)
	return err
}

func (a *app) consumerConnectionCommand() *cobra.Command {
	var group, addr string
	cmd := &cobra.Command{
		Use:   "consumerConnection",
		Short: "Query consumer's socket connection, client version and subscription.",
		RunE: func(*cobra.Command, []string) error {
			cc, err := a.consumerConnection(group, addr)
			if err != nil {
				return err
			}
			res := &consumerConnectionResult{Connections: connectionRows(cc.ConnectionSet), Subscriptions: []subscriptionRow{},
				ConsumeType: string(cc.ConsumeType), MessageModel: string(cc.MessageModel), ConsumeFromWhere: string(cc.ConsumeFromWhere)}
			for _, topic := range slices.Sorted(maps.Keys(cc.SubscriptionTable)) {
				res.Subscriptions = append(res.Subscriptions, subscriptionRow{Topic: topic, SubExpression: cc.SubscriptionTable[topic].SubString})
			}
			return a.emit(res)
		},
	}
	cmd.Flags().StringVarP(&group, "consumerGroup", "g", "", "consumer group name")
	cmd.Flags().StringVarP(&addr, "brokerAddr", "b", "", "broker address")
	_ = cmd.MarkFlagRequired("consumerGroup")
	return cmd
}

type producerConnectionResult struct {
	Connections []connectionRow `json:"connections"`
}

func (r *producerConnectionResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for i, c := range r.Connections {
		ew.printf("%04d  %-32s %-22s %-8s %s\n", i+1, c.ClientID, c.ClientAddr, c.Language, c.Version)
	}
	return ew.err
}

func (a *app) producerConnectionCommand() *cobra.Command {
	var group, topic string
	cmd := &cobra.Command{
		Use:   "producerConnection",
		Short: "Query producer's socket connection and client version.",
		RunE: func(*cobra.Command, []string) error {
			masters, err := a.topicMasters(topic, "")
			if err != nil {
				return err
			}
			seen := map[string]codec.Connection{}
			var errs []error
			for _, m := range masters {
				resp, err := a.askBroker(m.Addr, codec.RequestGetProducerConnectionList,
					&codec.GetProducerConnectionListRequestHeader{ProducerGroup: group}, nil, fmt.Sprintf("producer group %q", group))
				if err != nil {
					errs = append(errs, err)
					continue
				}
				pc, err := codec.DecodeProducerConnection(resp.Body)
				if err != nil {
					return fmt.Errorf("producer connections from broker %s: %w", m.Addr, err)
				}
				for _, c := range pc.ConnectionSet {
					seen[c.ClientID+"@"+c.ClientAddr] = c
				}
			}
			if len(seen) == 0 && len(errs) > 0 {
				return errors.Join(errs...)
			}
			return a.emit(&producerConnectionResult{Connections: connectionRows(slices.Collect(maps.Values(seen)))})
		},
	}
	cmd.Flags().StringVarP(&group, "producerGroup", "g", "", "producer group name")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	_ = cmd.MarkFlagRequired("producerGroup")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}
