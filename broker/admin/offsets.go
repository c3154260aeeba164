package admin

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
)

// ProcessCloneGroupOffset copies a consumer group's offsets to another group (mqadmin
// cloneGroupOffset): for the topic given, or for every topic srcGroup has offsets in, destGroup's
// offsets become a copy of srcGroup's. As in RocketMQ, a topic that does not exist is skipped,
// and so, unless offline=true, is a topic a live srcGroup does not subscribe. The answer is
// SUCCESS without a body. (RocketMQ 4.9.8 clones only when the topic is given: with none it
// loops over the group's topics but clones the blank topic; ringmq clones each.)
func (p *Plane) ProcessCloneGroupOffset(rc *remoting.Request) {
	var h codec.CloneGroupOffsetRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	src, dest, offline := h.SrcGroup, h.DestGroup, h.Offline
	topics := []string{h.Topic}
	if strings.TrimSpace(h.Topic) == "" {
		topics = p.d.Offsets.TopicsByGroup(src)
	}
	live, _ := p.d.Consumers.Connection(src)
	for _, topic := range topics {
		if !p.d.Topics.Contains(topic) {
			p.d.Logger.Warn("broker: cloneGroupOffset: topic does not exist", "topic", topic, "srcGroup", src)
			continue
		}
		if !offline && len(live.Subscriptions) > 0 && p.d.Consumers.FindSubscriptionData(src, topic) == nil {
			p.d.Logger.Warn("broker: cloneGroupOffset: the live group does not subscribe the topic", "topic", topic,
				"srcGroup", src)
			continue
		}
		p.d.Offsets.CloneOffset(src, dest, topic)
	}
	rc.Reply.Answer(codec.ResponseSuccess, "")
}

// queueTimeSpan is RocketMQ's QueueTimeSpan as fastjson writes it: its fields and its getters'
// formatted *Str properties, keys sorted.
type queueTimeSpan struct {
	ConsumeTimeStamp    int64        `json:"consumeTimeStamp"`
	ConsumeTimeStampStr string       `json:"consumeTimeStampStr"`
	DelayTime           int64        `json:"delayTime"`
	MaxTimeStamp        int64        `json:"maxTimeStamp"`
	MaxTimeStampStr     string       `json:"maxTimeStampStr"`
	MessageQueue        messageQueue `json:"messageQueue"`
	MinTimeStamp        int64        `json:"minTimeStamp"`
	MinTimeStampStr     string       `json:"minTimeStampStr"`
}

// messageQueue is RocketMQ's MessageQueue.
type messageQueue struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Topic      string `json:"topic"`
}

// javaDateLayout is UtilAll.YYYY_MM_DD_HH_MM_SS_SSS ("yyyy-MM-dd#HH:mm:ss:SSS").
const javaDateLayout = "2006-01-02#15:04:05:000"

// javaDate formats milliseconds since the epoch as UtilAll.formatDate does, in local time.
func javaDate(ms int64) string { return time.UnixMilli(ms).Format(javaDateLayout) }

// ProcessQueryConsumeTimeSpan answers RocketMQ's QueryConsumeTimeSpanBody for a topic and group:
// per write queue the store times of its first and last message, of the group's last consumed
// message, and how long the next unconsumed message has waited. Times are -1 where RocketMQ's
// store answers -1 (no such message), and the arithmetic is RocketMQ's: a group without an
// offset consumed up to the first message, and its delay counts from -1.
//
//	{"consumeTimeSpanSet":[{"consumeTimeStamp":..,"consumeTimeStampStr":"..","delayTime":..,"maxTimeStamp":..,...}]}
func (p *Plane) ProcessQueryConsumeTimeSpan(rc *remoting.Request) {
	topic, ok := adminExt(rc, "topic")
	if !ok {
		return
	}
	group, ok := adminExt(rc, "group")
	if !ok {
		return
	}
	tc, ok := p.existingTopic(rc, topic)
	if !ok {
		return
	}
	now := p.d.Clock().UnixMilli()
	spans := make([]queueTimeSpan, 0, tc.WriteQueueNums)
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		minTime := p.storeTimeOrMinus1(topic, q, p.d.Store.GetMinOffsetInQueue(topic, q))
		maxOffset := p.d.Store.GetMaxOffsetInQueue(topic, q)
		maxTime := p.storeTimeOrMinus1(topic, q, maxOffset-1)
		consumerOffset := p.d.Offsets.Query(group, topic, q)
		consumeTime := minTime
		if consumerOffset > 0 {
			consumeTime = p.storeTimeOrMinus1(topic, q, consumerOffset-1)
		}
		var delay int64
		if consumerOffset < maxOffset {
			delay = now - p.storeTimeOrMinus1(topic, q, consumerOffset)
		}
		spans = append(spans, queueTimeSpan{
			ConsumeTimeStamp: consumeTime, ConsumeTimeStampStr: javaDate(consumeTime),
			DelayTime:    delay,
			MaxTimeStamp: maxTime, MaxTimeStampStr: javaDate(maxTime),
			MessageQueue: messageQueue{BrokerName: p.d.BrokerName, QueueID: q, Topic: topic},
			MinTimeStamp: minTime, MinTimeStampStr: javaDate(minTime),
		})
	}
	rc.Reply.JSON(struct {
		ConsumeTimeSpanSet []queueTimeSpan `json:"consumeTimeSpanSet"`
	}{spans})
}

// storeTimeOrMinus1 is DefaultMessageStore.getMessageStoreTimeStamp: the store time of a queue
// entry's message, -1 when the queue has no such entry (storeTimeAt's 0).
func (p *Plane) storeTimeOrMinus1(topic string, queueID int32, offset int64) int64 {
	if t := p.storeTimeAt(topic, queueID, offset); t != 0 {
		return t
	}
	return -1
}

// producerInfo is RocketMQ's ProducerInfo as fastjson writes it (keys sorted). remoteIP is the
// channel's InetSocketAddress.toString(): "/ip:port".
type producerInfo struct {
	ClientID            string `json:"clientId"`
	Language            string `json:"language"`
	LastUpdateTimestamp int64  `json:"lastUpdateTimestamp"`
	RemoteIP            string `json:"remoteIP"`
	Version             int32  `json:"version"`
}

// ProcessGetAllProducerInfo answers RocketMQ's ProducerTableInfo: every live producer group
// with its members, as the producer connections of GET_PRODUCER_CONNECTION_LIST know them plus
// their last heartbeat.
//
//	{"data":{"PG":[{"clientId":"..","language":"JAVA","lastUpdateTimestamp":..,"remoteIP":"/10.0.0.1:4000","version":409}]}}
func (p *Plane) ProcessGetAllProducerInfo(rc *remoting.Request) {
	data := map[string][]producerInfo{}
	for _, group := range p.d.Producers.Groups() {
		members := p.d.Producers.Connections(group)
		if len(members) == 0 {
			continue // gone since Groups
		}
		infos := make([]producerInfo, 0, len(members))
		for _, m := range members {
			infos = append(infos, producerInfo{ClientID: m.ClientID, Language: m.Language.String(),
				LastUpdateTimestamp: m.LastUpdate.UnixMilli(), RemoteIP: "/" + m.Addr, Version: m.Version})
		}
		data[group] = infos
	}
	rc.Reply.JSON(struct {
		Data map[string][]producerInfo `json:"data"`
	}{data})
}

// ProcessCleanUnusedTopic deletes the ConsumeQueues of every topic the topic table does not
// have (mqadmin cleanUnusedTopic), as RocketMQ's cleanUnusedTopic does: SCHEDULE_TOPIC_XXXX and
// RMQ_SYS_TRANS_OP_HALF_TOPIC, which have queues but no topic config, are kept. The answer is
// SUCCESS without a body.
func (p *Plane) ProcessCleanUnusedTopic(rc *remoting.Request) {
	var unused []string
	for _, topic := range p.d.Store.QueueTopics() {
		if topic == metadata.ScheduleTopic || topic == metadata.TransOpHalfTopic || p.d.Topics.Contains(topic) {
			continue
		}
		unused = append(unused, topic)
	}
	if len(unused) > 0 {
		if err := p.d.Store.DeleteTopics(unused...); err != nil {
			rc.Reply.Answer(codec.ResponseSystemError, err.Error())
			return
		}
		p.d.Logger.Info("broker: cleanUnusedTopic: ConsumeQueues deleted", "topics", unused)
	}
	rc.Reply.Answer(codec.ResponseSuccess, "")
}

// consumeQueueData is RocketMQ's ConsumeQueueData as fastjson writes it: ringmq has no
// ConsumeQueue extension (enableConsumeQueueExt), so extendDataJson, bitMap and msg, which only an
// extension entry sets, are always absent (null), and eval is false.
type consumeQueueData struct {
	Eval         bool  `json:"eval"`
	PhysicOffset int64 `json:"physicOffset"`
	PhysicSize   int32 `json:"physicSize"`
	TagsCode     int64 `json:"tagsCode"`
}

// queryConsumeQueueBody is RocketMQ's QueryConsumeQueueResponseBody (null fields left out, as
// fastjson leaves them out).
type queryConsumeQueueBody struct {
	FilterData       *string                 `json:"filterData,omitempty"`
	MaxQueueIndex    int64                   `json:"maxQueueIndex"`
	MinQueueIndex    int64                   `json:"minQueueIndex"`
	QueueData        []consumeQueueData      `json:"queueData,omitempty"`
	SubscriptionData *codec.SubscriptionData `json:"subscriptionData,omitempty"`
}

// ProcessQueryConsumeQueue answers RocketMQ's QueryConsumeQueueResponseBody (mqadmin queryCq): up
// to count ConsumeQueue entries from index, the queue's min and max logical offsets and, when a
// consumerGroup is given, the group's live subscription to the topic. As in RocketMQ, a queue
// that does not exist is SYSTEM_ERROR, and an index outside the queue is SUCCESS with a remark
// and no body. RocketMQ stops at the end of the ConsumeQueue file holding index; ringmq reads on.
func (p *Plane) ProcessQueryConsumeQueue(rc *remoting.Request) {
	var h codec.QueryConsumeQueueRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	maxOffset := p.d.Store.GetMaxOffsetInQueue(h.Topic, h.QueueID)
	if maxOffset <= 0 || !slices.Contains(p.d.Store.QueueTopics(), h.Topic) {
		rc.Reply.Answer(codec.ResponseSystemError, fmt.Sprintf("%d@%s is not exist!", h.QueueID, h.Topic))
		return
	}
	body := queryConsumeQueueBody{MaxQueueIndex: maxOffset, MinQueueIndex: p.d.Store.GetMinOffsetInQueue(h.Topic, h.QueueID)}
	if h.ConsumerGroup.Set {
		group := h.ConsumerGroup.Value
		body.SubscriptionData = p.d.Consumers.FindSubscriptionData(group, h.Topic)
		filter := fmt.Sprintf("%s@%s is not online!", group, h.Topic)
		if body.SubscriptionData != nil {
			filter = consumerFilterJSON(group, h.Topic, body.SubscriptionData)
		}
		body.FilterData = &filter
	}
	if h.Index < body.MinQueueIndex || h.Index >= maxOffset {
		rc.Reply.Answer(codec.ResponseSuccess, fmt.Sprintf("Index %d of %d@%s is not exist!", h.Index, h.QueueID, h.Topic))
		return
	}
	body.QueueData = []consumeQueueData{}
	for off := h.Index; off < maxOffset && off-h.Index < int64(h.Count); off++ {
		e, ok := p.d.Store.ConsumeQueueEntry(h.Topic, h.QueueID, off)
		if !ok {
			break
		}
		body.QueueData = append(body.QueueData, consumeQueueData{PhysicOffset: e.PhyOffset, PhysicSize: e.Size,
			TagsCode: e.TagsCode})
	}
	rc.Reply.JSON(body)
}

// consumerFilterJSON is filterData for a live subscription: what JSON.toJSONString(filterData,
// true) prints of RocketMQ's ConsumerFilterManager entry, which exists only for SQL92
// subscriptions ("null" for a tag subscription). For SQL92 ringmq prints the entry's
// identifying fields (group, topic, expression, type, client version), not its bloom filter
// data, which it does not keep.
func consumerFilterJSON(group, topic string, sd *codec.SubscriptionData) string {
	if sd.ExpressionType != codec.ExpressionTypeSQL92 {
		return "null"
	}
	b, _ := json.MarshalIndent(struct {
		ClientVersion  int64  `json:"clientVersion"`
		ConsumerGroup  string `json:"consumerGroup"`
		Expression     string `json:"expression"`
		ExpressionType string `json:"expressionType"`
		Topic          string `json:"topic"`
	}{sd.SubVersion, group, sd.SubString, sd.ExpressionType, topic}, "", "\t")
	return string(b)
}

// ProcessCleanExpiredConsumeQueue deletes the ConsumeQueues whose records retention has all
// removed (mqadmin cleanExpiredCQ), as RocketMQ's cleanExpiredConsumerQueue does. The answer is
// SUCCESS without a body.
func (p *Plane) ProcessCleanExpiredConsumeQueue(rc *remoting.Request) {
	n, err := p.d.Store.CleanExpiredConsumeQueues()
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	p.d.Logger.Info("broker: cleanExpiredConsumeQueue done", "queuesDeleted", n)
	rc.Reply.Answer(codec.ResponseSuccess, "")
}

// ProcessGetSystemTopicListFromBroker answers RocketMQ's TopicList of the broker's system topics
// (TopicValidator.getSystemTopicSet), sorted.
//
//	{"topicList":["BenchmarkTest","DefaultCluster",...]}
func (p *Plane) ProcessGetSystemTopicListFromBroker(rc *remoting.Request) {
	rc.Reply.JSON(struct {
		TopicList []string `json:"topicList"`
	}{p.d.Topics.SystemTopics()})
}

// ProcessQueryCorrectionOffset answers RocketMQ's QueryCorrectionOffsetBody: per queue of the topic,
// the smallest offset of the groups with an offset there (filterGroups, comma-separated, left
// out; offsets below the queue's minimum ignored), or Long.MAX_VALUE where that is above
// compareGroup's offset. Unlike RocketMQ 4.9.8, leaving groups out does not delete their offsets
// from the table, and a queue only compareGroup has no valid offset in is left out instead of
// failing the request.
//
//	{"correctionOffsets":{0:5,1:9223372036854775807}}
func (p *Plane) ProcessQueryCorrectionOffset(rc *remoting.Request) {
	topic, ok := adminExt(rc, "topic")
	if !ok {
		return
	}
	compareGroup, ok := adminExt(rc, "compareGroup")
	if !ok {
		return
	}
	filtered := map[string]bool{}
	if f := strings.TrimSpace(rc.Cmd.ExtFields["filterGroups"]); f != "" {
		for _, g := range strings.Split(f, ",") {
			filtered[g] = true
		}
	}
	correction := map[int32]int64{}
	for _, group := range p.d.Offsets.GroupsByTopic(topic) {
		if filtered[group] {
			continue
		}
		for q, off := range p.d.Offsets.QueryAll(group, topic) {
			if off < p.d.Store.GetMinOffsetInQueue(topic, q) {
				continue
			}
			if cur, ok := correction[q]; !ok || off < cur {
				correction[q] = off
			}
		}
	}
	for q, off := range p.d.Offsets.QueryAll(compareGroup, topic) {
		if cur, ok := correction[q]; ok && cur > off {
			correction[q] = math.MaxInt64
		}
	}
	body := []byte(`{"correctionOffsets":{`)
	for i, q := range slices.Sorted(maps.Keys(correction)) {
		if i > 0 {
			body = append(body, ',')
		}
		body = strconv.AppendInt(body, int64(q), 10) // fastjson writes Integer keys bare
		body = append(body, ':')
		body = strconv.AppendInt(body, correction[q], 10)
	}
	rc.Reply.Body(append(body, '}', '}'))
}

// ProcessGetBrokerConsumeStats answers RocketMQ's ConsumeStatsList (mqadmin brokerConsumeStats):
// for every subscription group, one ConsumeStats per topic it has offsets in (only ordered topics
// when isOrder; not the topics a live group does not subscribe), and the lag of them all.
//
// Each consumeTps is the group's pull rate from the topic over the last minute (GROUP_GET_NUMS).
//
//	{"brokerAddr":"..","consumeStatsList":[{"G":[{"consumeTps":0.0,"offsetTable":{..}}]}],"totalDiff":N}
func (p *Plane) ProcessGetBrokerConsumeStats(rc *remoting.Request) {
	isOrder, ok := adminExt(rc, "isOrder")
	if !ok {
		return
	}
	orderOnly := strings.EqualFold(isOrder, "true")
	groups := slices.Sorted(maps.Keys(p.d.Groups.Snapshot().SubscriptionGroupTable))
	brokerAddr, _ := json.Marshal(p.d.BrokerAddr)
	body := append([]byte(`{"brokerAddr":`), brokerAddr...)
	body = append(body, `,"consumeStatsList":[`...)
	var totalDiff int64
	for i, group := range groups {
		if i > 0 {
			body = append(body, ',')
		}
		name, _ := json.Marshal(group)
		body = append(body, '{')
		body = append(body, name...)
		body = append(body, ':', '[')
		live, _ := p.d.Consumers.Connection(group)
		firstStats := true
		for _, topic := range p.d.Offsets.TopicsByGroup(group) {
			tc, ok := p.d.Topics.Get(topic)
			if !ok || (orderOnly && !tc.Order) {
				continue
			}
			if len(live.Subscriptions) > 0 && p.d.Consumers.FindSubscriptionData(group, topic) == nil {
				continue
			}
			if !firstStats {
				body = append(body, ',')
			}
			firstStats = false
			body = appendConsumeStatsHead(body, p.consumeTps(group, topic))
			first := true
			var diff int64
			body, diff = p.appendOffsetTable(body, group, topic, tc, &first)
			totalDiff += diff
			body = append(body, '}', '}')
		}
		body = append(body, ']', '}')
	}
	body = fmt.Appendf(body, `],"totalDiff":%d}`, totalDiff)
	rc.Reply.Body(body)
}

// ProcessDeleteExpiredCommitLog has the next retention passes delete the CommitLog files older
// than fileReservedTime at once, whatever deleteWhen says (mqadmin deleteExpiredCommitLog), as
// RocketMQ's executeDeleteFilesManually does. The answer is SUCCESS without a body.
func (p *Plane) ProcessDeleteExpiredCommitLog(rc *remoting.Request) {
	p.d.Store.DeleteExpiredFilesManually()
	p.d.Logger.Info("broker: deleteExpiredCommitLog: expired CommitLog files go at the next retention passes")
	rc.Reply.Answer(codec.ResponseSuccess, "")
}
