package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
)

// The commands that reach a consumer through its broker, which relays the request to the
// client's connection: consumerStatus (GET_CONSUMER_RUNNING_INFO), queryMsgById and
// queryMsgByUniqueKey with -g and -d (CONSUME_MESSAGE_DIRECTLY), consumerProgress -s true (the
// queues each client holds, from its running info).

// relayTimeout is how long mqadmin waits for a relayed answer: the broker itself waits up to
// 10 s for the client, so a shorter wait would give up before the broker's own refusal.
// RocketMQ's tools wait 3 × their timeout for CONSUME_MESSAGE_DIRECTLY.
func (a *app) relayTimeout() time.Duration { return max(3*a.timeout, 12*time.Second) }

// consumerRunningInfo asks the group's brokers, in turn, for clientID's running info.
func (a *app) consumerRunningInfo(group, clientID string, jstack bool) (*codec.ConsumerRunningInfo, error) {
	masters, err := a.groupMasters(group, "", "")
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, m := range masters {
		req := request(codec.RequestGetConsumerRunningInfo,
			&codec.GetConsumerRunningInfoRequestHeader{ConsumerGroup: group, ClientID: clientID, JstackEnable: jstack}, nil)
		resp, err := a.askWithin(m.Addr, req, fmt.Sprintf("consumer %q of group %q", clientID, group))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		info, err := codec.DecodeConsumerRunningInfo(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("running info of consumer %q from broker %s: %w", clientID, m.Addr, err)
		}
		return info, nil
	}
	if len(errs) == 0 {
		return nil, fmt.Errorf("group %q: no broker to ask", group)
	}
	return nil, errors.Join(errs...)
}

// askWithin is askBroker with relayTimeout for a relayed request.
func (a *app) askWithin(addr string, req *codec.RemotingCommand, what string) (*codec.RemotingCommand, error) {
	saved := a.client.Timeout
	a.client.Timeout = a.relayTimeout()
	defer func() { a.client.Timeout = saved }()
	return a.ask("broker "+addr, addr, req, what, nil)
}

// consumeDirectly has clientID of group consume the message id names (an offset message id,
// or a producer's message id found in topic's index) once more.
func (a *app) consumeDirectly(group, clientID, topic, cluster, id string) (*codec.ConsumeMessageDirectlyResult, error) {
	m, err := a.queryByID(topic, cluster, id)
	if err != nil {
		return nil, err
	}
	host, _, err := codec.DecodeOffsetMsgID(m.OffsetMsgID)
	if err != nil {
		return nil, fmt.Errorf("message %q: its offset message id %q: %w", id, m.OffsetMsgID, err)
	}
	req := request(codec.RequestConsumeMessageDirectly, &codec.ConsumeMessageDirectlyResultRequestHeader{
		ConsumerGroup: group, ClientID: clientID, MsgID: m.OffsetMsgID}, nil)
	resp, err := a.askWithin(host.String(), req, fmt.Sprintf("consumer %q of group %q", clientID, group))
	if err != nil {
		return nil, err
	}
	res, err := codec.DecodeConsumeMessageDirectlyResult(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("consume result of consumer %q from broker %s: %w", clientID, host, err)
	}
	return res, nil
}

// directResults is what queryMsgById / queryMsgByUniqueKey -g -d print: one line per message
// in RocketMQ's ConsumeMessageDirectlyResult.toString form.
type directResults struct {
	Results []directResult `json:"results"`
}

type directResult struct {
	MsgID string `json:"msgId"`
	codec.ConsumeMessageDirectlyResult
}

func (r *directResults) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, d := range r.Results {
		ew.printf("ConsumeMessageDirectlyResult [order=%t, autoCommit=%t, consumeResult=%s, remark=%s, spentTimeMills=%d]\n",
			d.Order, d.AutoCommit, d.ConsumeResult, d.Remark, d.SpentTimeMills)
	}
	return ew.err
}

// pushMessages consumes each id directly (queryMsgById -g -d).
func (a *app) pushMessages(group, clientID, topic, cluster string, ids []string) error {
	res := &directResults{Results: []directResult{}}
	for _, id := range ids {
		d, err := a.consumeDirectly(group, clientID, topic, cluster, id)
		if err != nil {
			return err
		}
		res.Results = append(res.Results, directResult{MsgID: id, ConsumeMessageDirectlyResult: *d})
	}
	return a.emit(res)
}

// queueAllocation maps each queue a member of group holds to the member's IP (the client id
// before '@'), as consumerProgress -s true shows it; members that cannot be asked are left out,
// as RocketMQ does.
func (a *app) queueAllocation(group string) map[codec.MessageQueue]string {
	out := map[codec.MessageQueue]string{}
	cc, err := a.consumerConnection(group, "")
	if err != nil {
		return out
	}
	for _, c := range cc.ConnectionSet {
		info, err := a.consumerRunningInfo(group, c.ClientID, false)
		if err != nil {
			continue
		}
		ip, _, _ := strings.Cut(c.ClientID, "@")
		for mq := range info.MQTable {
			out[mq] = ip
		}
	}
	return out
}

func (a *app) consumerStatusCommand() *cobra.Command {
	var group, clientID, addr string
	var jstack bool
	cmd := &cobra.Command{
		Use:   "consumerStatus",
		Short: "Query consumer's internal data structure",
		Long: "Query consumer's internal data structure: its running info (properties, subscriptions, queues,\n" +
			"rates), asked of the client through its broker. With -i, one client's, printed; without, every\n" +
			"client's, each written to <now>/<clientId> in the working directory (as RocketMQ's mqadmin does),\n" +
			"then whether the clients' subscriptions agree and which queues look stuck.",
		RunE: func(*cobra.Command, []string) error {
			if clientID != "" {
				info, err := a.consumerRunningInfo(group, clientID, jstack)
				if err != nil {
					return err
				}
				return a.emit(newRunningInfoResult(clientID, info, a.loc))
			}
			return a.allConsumersStatus(group, addr, jstack)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&group, "consumerGroup", "g", "", "consumer group name")
	f.StringVarP(&clientID, "clientId", "i", "", "The consumer's client id")
	f.StringVarP(&addr, "brokerAddr", "b", "", "broker address")
	f.BoolVarP(&jstack, "jstack", "s", false, "Run jstack command in the consumer progress")
	_ = cmd.MarkFlagRequired("consumerGroup")
	return cmd
}

// consumersStatus is consumerStatus without -i.
type consumersStatus struct {
	Clients []clientStatusRow `json:"clients"`
	// SameSubscription is RocketMQ's analyzeSubscription; Rebalance its analyzeRebalance
	// ("OK" or "Failed"); Stuck the analyzeProcessQueue lines. Absent when no client answered.
	SameSubscription *bool    `json:"sameSubscription,omitempty"`
	Rebalance        string   `json:"rebalance,omitempty"`
	Stuck            []string `json:"stuck,omitempty"`
}

type clientStatusRow struct {
	Index    int    `json:"index"`
	ClientID string `json:"clientId"`
	Version  string `json:"version"`
	File     string `json:"file"`
}

func (r *consumersStatus) text(w io.Writer) error {
	t := newTable(w, "#Index", "#ClientId", "#Version", "#ConsumerRunningInfoFile")
	for _, c := range r.Clients {
		t.row(c.Index, c.ClientID, c.Version, c.File)
	}
	if err := t.flush(); err != nil {
		return err
	}
	ew := &errWriter{w: w}
	switch {
	case r.SameSubscription == nil:
	case *r.SameSubscription:
		ew.printf("\n\nSame subscription in the same group of consumer")
		ew.printf("\n\nRebalance %s\n", r.Rebalance)
		for _, s := range r.Stuck {
			ew.printf("%s", s)
		}
	default:
		ew.printf("\n\nWARN: Different subscription in the same group of consumer!!!\n")
	}
	return ew.err
}

// allConsumersStatus asks every member of group for its running info, writes each to
// <now ms>/<clientId> and prints the list and RocketMQ's analysis (ConsumerStatusSubCommand).
func (a *app) allConsumersStatus(group, addr string, jstack bool) error {
	cc, err := a.consumerConnection(group, addr)
	if err != nil {
		return err
	}
	now := a.now()
	dir := strconv.FormatInt(now.UnixMilli(), 10)
	res := &consumersStatus{Clients: []clientStatusRow{}}
	conns := slices.SortedFunc(slices.Values(cc.ConnectionSet), func(x, y codec.Connection) int { return cmp.Compare(x.ClientID, y.ClientID) })
	infos := map[string]*codec.ConsumerRunningInfo{}
	var errs []error
	for _, c := range conns {
		info, err := a.consumerRunningInfo(group, c.ClientID, jstack)
		if err != nil {
			errs = append(errs, err) // RocketMQ prints the stack trace and goes on
			continue
		}
		path := filepath.Join(dir, c.ClientID)
		var text strings.Builder
		if err := newRunningInfoResult(c.ClientID, info, a.loc).text(&text); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(text.String()), 0o644); err != nil {
			return err
		}
		infos[c.ClientID] = info
		res.Clients = append(res.Clients, clientStatusRow{Index: len(res.Clients) + 1, ClientID: c.ClientID,
			Version: codec.MQVersionName(c.Version), File: path})
	}
	if len(infos) > 0 {
		same := sameSubscription(infos, now)
		res.SameSubscription = &same
		if same {
			res.Rebalance = "OK"
			for _, id := range slices.Sorted(maps.Keys(infos)) {
				res.Stuck = append(res.Stuck, stuckQueues(id, infos[id], now)...)
			}
		}
	}
	if err := a.emit(res); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// isPush says whether a running info is a push consumer's.
func isPush(info *codec.ConsumerRunningInfo) bool {
	return info.Properties[codec.PropConsumeType] == string(codec.ConsumePassively)
}

// sameSubscription is RocketMQ's ConsumerRunningInfo.analyzeSubscription: for a push group whose
// first client started over 2 minutes ago, every client must subscribe the same way, and to
// something.
func sameSubscription(infos map[string]*codec.ConsumerRunningInfo, now time.Time) bool {
	ids := slices.Sorted(maps.Keys(infos))
	first := infos[ids[0]]
	started, _ := strconv.ParseInt(first.Properties[codec.PropConsumerStartTimestamp], 10, 64)
	if !isPush(first) || now.UnixMilli()-started <= 2*60*1000 {
		return true
	}
	want := subscriptionKeys(first)
	for _, id := range ids[1:] {
		if !slices.Equal(subscriptionKeys(infos[id]), want) {
			return false
		}
	}
	return len(subscriptionKeys(infos[ids[len(ids)-1]])) > 0
}

// subscriptionKeys are a client's subscriptions as Java's TreeSet<SubscriptionData> orders and
// compares them: topic@subString.
func subscriptionKeys(info *codec.ConsumerRunningInfo) []string {
	keys := make([]string, 0, len(info.SubscriptionSet))
	for _, s := range info.SubscriptionSet {
		keys = append(keys, s.Topic+"@"+s.SubString)
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// stuckQueues is RocketMQ's ConsumerRunningInfo.analyzeProcessQueue: an orderly push
// consumer's queues it cannot lock or unlock, a concurrent one's queues with cached messages
// and nothing consumed for a minute.
func stuckQueues(clientID string, info *codec.ConsumerRunningInfo, now time.Time) []string {
	if !isPush(info) {
		return nil
	}
	orderly, _ := strconv.ParseBool(info.Properties[codec.PropConsumeOrderly])
	var out []string
	for _, mq := range sortedQueues(info.MQTable) {
		pq := info.MQTable[mq]
		switch {
		case orderly && !pq.Locked:
			out = append(out, fmt.Sprintf("%s %s can't lock for a while, %dms\n", clientID, javaQueue(mq), now.UnixMilli()-pq.LastLockTimestamp))
		case orderly && pq.Droped && pq.TryUnlockTimes > 0:
			out = append(out, fmt.Sprintf("%s %s unlock %d times, still failed\n", clientID, javaQueue(mq), pq.TryUnlockTimes))
		case !orderly:
			if diff := now.UnixMilli() - pq.LastConsumeTimestamp; diff > 60*1000 && pq.CachedMsgCount > 0 {
				out = append(out, fmt.Sprintf("%s %s can't consume for a while, maybe blocked, %dms\n", clientID, javaQueue(mq), diff))
			}
		}
	}
	return out
}

// javaQueue is Java's MessageQueue.toString.
func javaQueue(mq codec.MessageQueue) string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", mq.Topic, mq.BrokerName, mq.QueueID)
}

func sortedQueues[V any](m map[codec.MessageQueue]V) []codec.MessageQueue {
	return slices.SortedFunc(maps.Keys(m), func(x, y codec.MessageQueue) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.BrokerName, y.BrokerName), cmp.Compare(x.QueueID, y.QueueID))
	})
}

// runningInfoResult is one client's running info: text is RocketMQ's
// ConsumerRunningInfo.formatString (the file consumerStatus writes, byte for byte but for the
// order of the properties, sorted here).
type runningInfoResult struct {
	ClientID        string                         `json:"clientId"`
	Properties      map[string]string              `json:"properties"`
	SubscriptionSet []codec.SubscriptionData       `json:"subscriptionSet"`
	Queues          []runningQueue                 `json:"mqTable"`
	StatusTable     map[string]codec.ConsumeStatus `json:"statusTable"`
	Jstack          string                         `json:"jstack,omitempty"`

	info *codec.ConsumerRunningInfo
	loc  *time.Location
}

type runningQueue struct {
	codec.MessageQueue
	codec.ProcessQueueInfo
}

func newRunningInfoResult(clientID string, info *codec.ConsumerRunningInfo, loc *time.Location) *runningInfoResult {
	r := &runningInfoResult{ClientID: clientID, Properties: info.Properties, SubscriptionSet: info.SubscriptionSet,
		Queues: []runningQueue{}, StatusTable: info.StatusTable, Jstack: info.Jstack, info: info, loc: loc}
	for _, mq := range sortedQueues(info.MQTable) {
		r.Queues = append(r.Queues, runningQueue{MessageQueue: mq, ProcessQueueInfo: info.MQTable[mq]})
	}
	return r
}

// humanMillis is Java's UtilAll.timeMillisToHumanString: yyyyMMddHHmmssSSS in local time.
func humanMillis(ms int64, loc *time.Location) string {
	t := time.UnixMilli(ms).In(loc)
	return t.Format("20060102150405") + fmt.Sprintf("%03d", t.Nanosecond()/int(time.Millisecond))
}

func (r *runningInfoResult) text(w io.Writer) error {
	info := r.info
	ew := &errWriter{w: w}
	ew.printf("#Consumer Properties#\n")
	for _, k := range slices.Sorted(maps.Keys(info.Properties)) {
		ew.printf("%-40s: %s\n", k, info.Properties[k])
	}
	ew.printf("\n\n#Consumer Subscription#\n")
	subs := slices.SortedFunc(slices.Values(info.SubscriptionSet), func(x, y codec.SubscriptionData) int {
		return cmp.Compare(x.Topic+"@"+x.SubString, y.Topic+"@"+y.SubString)
	})
	for i, s := range subs {
		ew.printf("%03d Topic: %-40s ClassFilter: %-8t SubExpression: %s\n", i+1, s.Topic, s.ClassFilterMode, s.SubString)
	}
	queues := sortedQueues(info.MQTable)
	ew.printf("\n\n#Consumer Offset#\n")
	ew.printf("%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#Consumer Offset")
	for _, mq := range queues {
		ew.printf("%-32s  %-32s  %-4d  %-20d\n", mq.Topic, mq.BrokerName, mq.QueueID, info.MQTable[mq].CommitOffset)
	}
	ew.printf("\n\n#Consumer MQ Detail#\n")
	ew.printf("%-64s  %-32s  %-4s  %-20s\n", "#Topic", "#Broker Name", "#QID", "#ProcessQueueInfo")
	for _, mq := range queues {
		pq := info.MQTable[mq]
		ew.printf("%-64s  %-32s  %-4d  ProcessQueueInfo [commitOffset=%d, cachedMsgMinOffset=%d, cachedMsgMaxOffset=%d, "+
			"cachedMsgCount=%d, cachedMsgSizeInMiB=%d, transactionMsgMinOffset=%d, transactionMsgMaxOffset=%d, "+
			"transactionMsgCount=%d, locked=%t, tryUnlockTimes=%d, lastLockTimestamp=%s, droped=%t, lastPullTimestamp=%s, "+
			"lastConsumeTimestamp=%s]\n",
			mq.Topic, mq.BrokerName, mq.QueueID, pq.CommitOffset, pq.CachedMsgMinOffset, pq.CachedMsgMaxOffset,
			pq.CachedMsgCount, pq.CachedMsgSizeInMiB, pq.TransactionMsgMinOffset, pq.TransactionMsgMaxOffset,
			pq.TransactionMsgCount, pq.Locked, pq.TryUnlockTimes, humanMillis(pq.LastLockTimestamp, r.loc), pq.Droped,
			humanMillis(pq.LastPullTimestamp, r.loc), humanMillis(pq.LastConsumeTimestamp, r.loc))
	}
	ew.printf("\n\n#Consumer RT&TPS#\n")
	ew.printf("%-64s  %14s %14s %14s %14s %18s %25s\n", "#Topic", "#Pull RT", "#Pull TPS", "#Consume RT",
		"#ConsumeOK TPS", "#ConsumeFailed TPS", "#ConsumeFailedMsgsInHour")
	for _, topic := range slices.Sorted(maps.Keys(info.StatusTable)) {
		s := info.StatusTable[topic]
		ew.printf("%-32s  %14.2f %14.2f %14.2f %14.2f %18.2f %25d\n", topic, s.PullRT, s.PullTPS, s.ConsumeRT,
			s.ConsumeOKTPS, s.ConsumeFailedTPS, s.ConsumeFailedMsgs)
	}
	if info.Jstack != "" {
		ew.printf("\n\n#Consumer jstack#\n")
		ew.printf("%s", info.Jstack)
	}
	return ew.err
}
