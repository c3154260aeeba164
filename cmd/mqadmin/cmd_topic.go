package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
)

// Topic commands: topicList, topicRoute, topicStatus, updateTopic, deleteTopic.

// RocketMQ's prefixes of the per-group system topics (MixAll).
const (
	retryGroupTopicPrefix = "%RETRY%"
	dlqGroupTopicPrefix   = "%DLQ%"
)

// Topic permission bits (RocketMQ PermName).
const (
	permInherit int32 = 1
	permWrite   int32 = 2
	permRead    int32 = 4
)

// permString renders perm as RocketMQ's PermName.perm2String: "RW-" and the like.
func permString(perm int32) string {
	b := []byte("---")
	if perm&permRead != 0 {
		b[0] = 'R'
	}
	if perm&permWrite != 0 {
		b[1] = 'W'
	}
	if perm&permInherit != 0 {
		b[2] = 'X'
	}
	return string(b)
}

type topicListResult struct {
	Topics []string          `json:"topics,omitempty"`
	Rows   []topicClusterRow `json:"rows,omitempty"`
}

type topicClusterRow struct {
	Cluster string `json:"cluster"`
	Topic   string `json:"topic"`
	Group   string `json:"consumerGroup"`
}

func (r *topicListResult) text(w io.Writer) error {
	if r.Rows == nil {
		ew := &errWriter{w: w}
		for _, t := range r.Topics {
			ew.printf("%s\n", t)
		}
		return ew.err
	}
	t := newTable(w, "#Cluster Name", "#Topic", "#Consumer Group")
	for _, row := range r.Rows {
		t.row(row.Cluster, row.Topic, row.Group)
	}
	return t.flush()
}

func (a *app) topicListCommand() *cobra.Command {
	var clusterModel bool
	cmd := &cobra.Command{
		Use:   "topicList",
		Short: "Fetch all topic list from name server.",
		RunE: func(*cobra.Command, []string) error {
			topics, err := a.allTopics()
			if err != nil {
				return err
			}
			if !clusterModel {
				return a.emit(&topicListResult{Topics: topics})
			}
			ci, err := a.clusterInfo()
			if err != nil {
				return err
			}
			res := &topicListResult{Rows: []topicClusterRow{}}
			for _, topic := range topics {
				if strings.HasPrefix(topic, retryGroupTopicPrefix) || strings.HasPrefix(topic, dlqGroupTopicPrefix) {
					continue
				}
				cluster, groups := a.topicClusterAndGroups(ci, topic)
				if len(groups) == 0 {
					groups = []string{""}
				}
				for _, g := range groups {
					res.Rows = append(res.Rows, topicClusterRow{Cluster: cluster, Topic: topic, Group: g})
				}
			}
			return a.emit(res)
		},
	}
	cmd.Flags().BoolVarP(&clusterModel, "clusterModel", "c", false, "clusterModel")
	return cmd
}

// allTopics asks the name servers for every topic, sorted.
func (a *app) allTopics() ([]string, error) {
	resp, err := a.askNamesrv(codec.RequestGetAllTopicListFromNameServer, nil, nil, "")
	if err != nil {
		return nil, err
	}
	tl, err := codec.DecodeTopicList(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("topic list from the name server: %w", err)
	}
	return slices.Sorted(slices.Values(tl.TopicList)), nil
}

// topicClusterAndGroups finds the cluster a topic's first broker belongs to and the groups
// that consume it, as RocketMQ's topicList -c does; what cannot be found stays empty there.
func (a *app) topicClusterAndGroups(ci *codec.ClusterInfo, topic string) (cluster string, groups []string) {
	rd, err := a.topicRoute(topic)
	if err != nil || len(rd.BrokerDatas) == 0 {
		return "", nil
	}
	masters := routeMasters(rd)
	if len(masters) > 0 {
		for _, c := range slices.Sorted(maps.Keys(ci.ClusterAddrTable)) {
			if slices.Contains(ci.ClusterAddrTable[c], masters[0].Name) {
				cluster = c
				break
			}
		}
	}
	groups, _ = a.consumingGroups(masters, topic)
	return cluster, groups
}

// consumingGroups asks masters which groups consume topic (QUERY_TOPIC_CONSUME_BY_WHO) and
// returns them sorted, with the failures of the masters that did not say.
func (a *app) consumingGroups(masters []brokerRef, topic string) ([]string, error) {
	var groups []string
	var errs []error
	seen := map[string]bool{}
	for _, m := range masters {
		resp, err := a.askBroker(m.Addr, codec.RequestQueryTopicConsumeByWho, &codec.TopicRequestHeader{Topic: topic}, nil,
			fmt.Sprintf("topic %q", topic))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		gl, err := codec.DecodeGroupList(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("groups of topic %q from broker %s: %w", topic, m.Addr, err))
			continue
		}
		for _, g := range gl.GroupList {
			if !seen[g] {
				seen[g] = true
				groups = append(groups, g)
			}
		}
	}
	slices.Sort(groups)
	return groups, errors.Join(errs...)
}

type topicRouteResult struct {
	*codec.TopicRouteData
	list bool
}

// MarshalJSON writes the route itself (standard JSON, quoted broker ids).
func (r *topicRouteResult) MarshalJSON() ([]byte, error) {
	return codec.EncodeTopicRouteData(r.TopicRouteData, true)
}

func (r *topicRouteResult) text(w io.Writer) error {
	if !r.list {
		raw, err := codec.EncodeTopicRouteData(r.TopicRouteData, true)
		if err != nil {
			return err
		}
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, raw, "", "\t"); err != nil {
			return err
		}
		pretty.WriteByte('\n')
		_, err = w.Write(pretty.Bytes())
		return err
	}
	queues := map[string]codec.QueueData{}
	for _, q := range r.QueueDatas {
		queues[q.BrokerName] = q
	}
	t := newTable(w, "#ClusterName", "#BrokerName", "#BrokerAddrs", "#ReadQueue", "#WriteQueue", "#Perm")
	brokers := slices.Clone(r.BrokerDatas)
	slices.SortFunc(brokers, func(x, y codec.BrokerData) int { return strings.Compare(x.BrokerName, y.BrokerName) })
	var totalRead, totalWrite int32
	for _, bd := range brokers {
		q := queues[bd.BrokerName]
		totalRead += q.ReadQueueNums
		totalWrite += q.WriteQueueNums
		t.row(bd.Cluster, bd.BrokerName, brokerAddrsText(bd.BrokerAddrs), q.ReadQueueNums, q.WriteQueueNums, permString(q.Perm))
	}
	t.row("")
	t.row("Total:", len(brokers), "", totalRead, totalWrite, "")
	return t.flush()
}

// brokerAddrsText renders a broker id → address map as Java's HashMap.toString: {0=a, 1=b}.
func brokerAddrsText(addrs map[int64]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, id := range slices.Sorted(maps.Keys(addrs)) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d=%s", id, addrs[id])
	}
	b.WriteByte('}')
	return b.String()
}

func (a *app) topicRouteCommand() *cobra.Command {
	var topic string
	var list bool
	cmd := &cobra.Command{
		Use:   "topicRoute",
		Short: "Examine topic route info.",
		RunE: func(*cobra.Command, []string) error {
			rd, err := a.topicRoute(topic)
			if err != nil {
				return err
			}
			return a.emit(&topicRouteResult{TopicRouteData: rd, list: list})
		},
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	cmd.Flags().BoolVarP(&list, "list", "l", false, "Use list format to print data")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

type topicStatusRow struct {
	BrokerName          string `json:"brokerName"`
	QueueID             int32  `json:"queueId"`
	MinOffset           int64  `json:"minOffset"`
	MaxOffset           int64  `json:"maxOffset"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	lastUpdated         string
}

type topicStatusResult struct {
	Topic  string           `json:"topic"`
	Queues []topicStatusRow `json:"queues"`
}

func (r *topicStatusResult) text(w io.Writer) error {
	t := newTable(w, "#Broker Name", "#QID", "#Min Offset", "#Max Offset", "#Last Updated")
	for _, q := range r.Queues {
		t.row(q.BrokerName, q.QueueID, q.MinOffset, q.MaxOffset, q.lastUpdated)
	}
	return t.flush()
}

// sortQueues orders message queues as RocketMQ's MessageQueue.compareTo: topic, broker name,
// queue id.
func sortQueues(mqs []codec.MessageQueue) { slices.SortFunc(mqs, compareQueues) }

func compareQueues(x, y codec.MessageQueue) int {
	return cmp.Or(strings.Compare(x.Topic, y.Topic), strings.Compare(x.BrokerName, y.BrokerName), cmp.Compare(x.QueueID, y.QueueID))
}

func (a *app) topicStatusCommand() *cobra.Command {
	var topic, cluster string
	cmd := &cobra.Command{
		Use:   "topicStatus",
		Short: "Examine topic Status info.",
		RunE: func(*cobra.Command, []string) error {
			masters, err := a.topicMasters(topic, cluster)
			if err != nil {
				return err
			}
			table := map[codec.MessageQueue]codec.TopicOffset{}
			for _, m := range masters {
				resp, err := a.askBroker(m.Addr, codec.RequestGetTopicStatsInfo, &codec.TopicRequestHeader{Topic: topic}, nil,
					fmt.Sprintf("topic %q", topic))
				if err != nil {
					return err
				}
				ts, err := codec.DecodeTopicStatsTable(resp.Body)
				if err != nil {
					return fmt.Errorf("topic stats from broker %s: %w", m.Addr, err)
				}
				maps.Copy(table, ts.OffsetTable)
			}
			mqs := slices.Collect(maps.Keys(table))
			sortQueues(mqs)
			res := &topicStatusResult{Topic: topic, Queues: []topicStatusRow{}}
			for _, mq := range mqs {
				to := table[mq]
				row := topicStatusRow{BrokerName: mq.BrokerName, QueueID: mq.QueueID, MinOffset: to.MinOffset,
					MaxOffset: to.MaxOffset, LastUpdateTimestamp: to.LastUpdateTimestamp}
				if to.LastUpdateTimestamp > 0 {
					row.lastUpdated = a.humanTime(to.LastUpdateTimestamp)
				}
				res.Queues = append(res.Queues, row)
			}
			return a.emit(res)
		},
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	cmd.Flags().StringVarP(&cluster, "cluster", "c", "", "cluster name: only its brokers")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

// topicMasters returns the masters serving a topic, restricted to a cluster when one is
// given.
func (a *app) topicMasters(topic, cluster string) ([]brokerRef, error) {
	rd, err := a.topicRoute(topic)
	if err != nil {
		return nil, err
	}
	masters := routeMasters(rd)
	if cluster != "" {
		masters = slices.DeleteFunc(masters, func(b brokerRef) bool { return b.Cluster != cluster })
		if len(masters) == 0 {
			return nil, fmt.Errorf("topic %q has no broker in cluster %q", topic, cluster)
		}
	}
	return masters, nil
}

type topicConfigResult struct {
	Addrs  []string          `json:"addrs"`
	Config codec.TopicConfig `json:"topicConfig"`
	lines  []string
}

func (r *topicConfigResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, l := range r.lines {
		ew.printf("%s\n", l)
	}
	c := r.Config
	ew.printf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=%s, topicSysFlag=%d, order=%t, attributes=%s]\n",
		c.TopicName, c.ReadQueueNums, c.WriteQueueNums, permString(c.Perm), c.TopicFilterType, c.TopicSysFlag, c.Order,
		javaMapText(c.Attributes))
	return ew.err
}

// javaMapText renders a string map as Java's HashMap.toString, keys sorted: {a=b, c=d}.
func javaMapText(m map[string]string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + "=" + m[k])
	}
	b.WriteByte('}')
	return b.String()
}

// Topic system flags (RocketMQ TopicSysFlag).
const (
	topicSysFlagUnit    int32 = 1 << 0
	topicSysFlagUnitSub int32 = 1 << 1
)

// orderTopicConfigNamespace is the name servers' KV namespace of ordered topics' queue
// layouts ("brokerA:8;brokerB:8"), as RocketMQ's NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG.
const orderTopicConfigNamespace = "ORDER_TOPIC_CONFIG"

func (a *app) updateTopicCommand() *cobra.Command {
	var addr, cluster, topic, attributes string
	var readQueues, writeQueues, perm int32
	var order, unit, hasUnitSub boolArg
	cmd := &cobra.Command{
		Use:   "updateTopic",
		Short: "Update or create topic.",
		RunE: func(*cobra.Command, []string) error {
			if perm&^(permRead|permWrite|permInherit) != 0 {
				return usageError("-p %d: allowed permissions are 2 (W), 4 (R), 6 (RW), optionally +1 (inherit)", perm)
			}
			if readQueues <= 0 || writeQueues <= 0 {
				return usageError("-r %d / -w %d: queue counts must be positive", readQueues, writeQueues)
			}
			brokers, err := a.targetBrokers(addr, cluster, false)
			if err != nil {
				return err
			}
			var sysFlag int32
			if unit.value {
				sysFlag |= topicSysFlagUnit
			}
			if hasUnitSub.value {
				sysFlag |= topicSysFlagUnitSub
			}
			h := &codec.UpdateAndCreateTopicRequestHeader{
				Topic: topic, DefaultTopic: "TBW102", ReadQueueNums: readQueues, WriteQueueNums: writeQueues, Perm: perm,
				TopicFilterType: codec.TopicFilterSingleTag, TopicSysFlag: codec.Some(sysFlag), Order: order.value, Attributes: attributes,
			}
			res := &topicConfigResult{Config: codec.NewTopicConfig(topic)}
			res.Config.ReadQueueNums, res.Config.WriteQueueNums, res.Config.Perm = readQueues, writeQueues, perm
			res.Config.TopicSysFlag, res.Config.Order = sysFlag, order.value
			var orderConf []string
			for _, b := range brokers {
				if _, err := a.askBroker(b.Addr, codec.RequestUpdateAndCreateTopic, h, nil, fmt.Sprintf("topic %q", topic)); err != nil {
					return err
				}
				res.Addrs = append(res.Addrs, b.Addr)
				res.lines = append(res.lines, fmt.Sprintf("create topic to %s success.", b.Addr))
				if order.value {
					name := b.Name
					if name == "" {
						ci, err := a.clusterInfo()
						if err != nil {
							return err
						}
						var ok bool
						if name, ok = brokerNameOf(ci, b.Addr); !ok {
							return fmt.Errorf("broker %s is not in the name servers' cluster table: cannot name it in the order config", b.Addr)
						}
					}
					orderConf = append(orderConf, fmt.Sprintf("%s:%d", name, writeQueues))
				}
			}
			if order.value {
				conf := strings.Join(orderConf, ";")
				if _, err := a.askEveryNamesrv(codec.RequestPutKVConfig,
					&codec.PutKVConfigRequestHeader{Namespace: orderTopicConfigNamespace, Key: topic, Value: conf}, nil,
					fmt.Sprintf("order config of topic %q", topic)); err != nil {
					return err
				}
				res.lines = append(res.lines, fmt.Sprintf("set cluster orderConf. isOrder=%t, orderConf=[%s]", order.value, conf))
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&addr, "brokerAddr", "b", "", "create topic to which broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "create topic to which cluster")
	f.StringVarP(&attributes, "attributes", "a", "", "attribute(+a=b,+c=d,-e)")
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.Int32VarP(&readQueues, "readQueueNums", "r", 8, "set read queue nums")
	f.Int32VarP(&writeQueues, "writeQueueNums", "w", 8, "set write queue nums")
	f.Int32VarP(&perm, "perm", "p", 6, "set topic's permission(2|4|6), intro[2:W 4:R; 6:RW]")
	f.VarP(&order, "order", "o", "set topic's order(true|false)")
	f.VarP(&unit, "unit", "u", "is unit topic (true|false)")
	f.VarP(&hasUnitSub, "hasUnitSub", "s", "has unit sub (true|false)")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

func (a *app) deleteTopicCommand() *cobra.Command {
	var topic, cluster string
	cmd := &cobra.Command{
		Use:   "deleteTopic",
		Short: "Delete topic from broker and NameServer.",
		RunE: func(*cobra.Command, []string) error {
			res, err := a.deleteTopic(topic, cluster)
			if err != nil {
				return err
			}
			return a.emit(res)
		},
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	cmd.Flags().StringVarP(&cluster, "clusterName", "c", "", "delete topic from which cluster")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("clusterName")
	return cmd
}

// deleteTopic deletes a topic from a cluster's masters (slaves copy the master's table), then
// from every name server.
func (a *app) deleteTopic(topic, cluster string) (*messageResult, error) {
	brokers, err := a.targetBrokers("", cluster, false)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("topic %q", topic)
	res := &messageResult{}
	for _, b := range brokers {
		if _, err := a.askBroker(b.Addr, codec.RequestDeleteTopicInBroker, &codec.DeleteTopicRequestHeader{Topic: topic}, nil, what); err != nil {
			return nil, err
		}
		res.Addrs = append(res.Addrs, b.Addr)
	}
	servers, err := a.askEveryNamesrv(codec.RequestDeleteTopicInNamesrv,
		&codec.DeleteTopicFromNamesrvRequestHeader{Topic: topic, ClusterName: cluster}, nil, what)
	if err != nil {
		return nil, err
	}
	res.Addrs = append(res.Addrs, servers...)
	res.message = fmt.Sprintf("delete topic [%s] from cluster [%s] success.\ndelete topic [%s] from NameServer success.\n",
		topic, cluster, topic)
	return res, nil
}
