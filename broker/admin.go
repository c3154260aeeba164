package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ringmq/ringmq/broker/clients"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Admin processors (mqadmin, the Go client's admin package, dashboards). They run on the
// admin pool (routes.go): they write config files, walk whole tables, read records from the
// store, or wait for a registration round.
//
//	17  UPDATE_AND_CREATE_TOPIC            215 DELETE_TOPIC_IN_BROKER
//	21  GET_ALL_TOPIC_CONFIG               351 GET_TOPIC_CONFIG
//	200 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP 201 GET_ALL_SUBSCRIPTIONGROUP_CONFIG
//	207 DELETE_SUBSCRIPTIONGROUP           352 GET_SUBSCRIPTIONGROUP_CONFIG
//	28  GET_BROKER_RUNTIME_INFO            26  GET_BROKER_CONFIG
//	202 GET_TOPIC_STATS_INFO               208 GET_CONSUME_STATS
//	203 GET_CONSUMER_CONNECTION_LIST       204 GET_PRODUCER_CONNECTION_LIST
//	43  GET_ALL_CONSUMER_OFFSET            45  GET_ALL_DELAY_OFFSET
//	300 QUERY_TOPIC_CONSUME_BY_WHO

// adminRegisterWait bounds how long a topic change waits for the name servers to learn it
// before it is answered (RocketMQ registers synchronously in the admin thread).
const adminRegisterWait = 5 * time.Second

// brokerVersionDesc is MQVersion.getVersionDesc(codec.ServerVersion) (479 = V5_3_3).
const brokerVersionDesc = "V5_3_3"

// adminExt reads a required custom-header field; it answers SYSTEM_ERROR naming the field
// (as Java's header decoding does) and returns ok=false when it is missing.
func (b *Broker) adminExt(rc *remoting.Request, key string) (string, bool) {
	v, ok := rc.Cmd.ExtFields[key]
	if !ok {
		rc.Reply.Answer(codec.ResponseSystemError, "the custom field <"+key+"> is null")
	}
	return v, ok
}

// refuseOnSlave answers SYSTEM_ERROR when this broker is a SLAVE and returns true: topics
// and subscription groups change on the master, and reach a slave through metadata sync
// (RocketMQ AdminBrokerProcessor.validateSlave).
func (b *Broker) refuseOnSlave(rc *remoting.Request) bool {
	if !b.cfg.IsSlave() {
		return false
	}
	rc.Reply.Answer(codec.ResponseSystemError, slaveAdminRemark)
	return true
}

// systemTopicRemark is Java's remark for create/delete of a built-in topic.
func systemTopicRemark(topic string) string {
	return "The topic[" + topic + "] is conflict with system topic."
}

// processUpdateAndCreateTopic creates or replaces a topic, writes topics.json and waits
// (up to adminRegisterWait) for the name servers to learn it, so that the topic has a
// route when the admin call returns.
func (b *Broker) processUpdateAndCreateTopic(rc *remoting.Request) {
	if b.refuseOnSlave(rc) {
		return
	}
	var h codec.UpdateAndCreateTopicRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	if remark := metadata.ValidateTopicName(h.Topic); remark != "" {
		rc.Reply.Answer(codec.ResponseSystemError, remark)
		return
	}
	if b.topics.IsSystemTopic(h.Topic) {
		rc.Reply.Answer(codec.ResponseSystemError, systemTopicRemark(h.Topic))
		return
	}
	switch {
	case h.ReadQueueNums < 0:
		rc.Reply.Answer(codec.ResponseInvalidParameter, fmt.Sprintf("readQueueNums %d must not be negative", h.ReadQueueNums))
		return
	case h.WriteQueueNums < 0:
		rc.Reply.Answer(codec.ResponseInvalidParameter, fmt.Sprintf("writeQueueNums %d must not be negative", h.WriteQueueNums))
		return
	case h.TopicFilterType != codec.TopicFilterSingleTag && h.TopicFilterType != codec.TopicFilterMultiTag:
		rc.Reply.Answer(codec.ResponseSystemError, "topicFilterType "+strconv.Quote(h.TopicFilterType)+
			": want SINGLE_TAG or MULTI_TAG")
		return
	}
	current, exists := b.topics.Get(h.Topic)
	attrs, err := alterAttributes(!exists, current.Attributes, h.Attributes)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	tc := codec.NewTopicConfig(h.Topic)
	tc.ReadQueueNums, tc.WriteQueueNums = h.ReadQueueNums, h.WriteQueueNums
	tc.Perm = h.Perm
	tc.TopicFilterType = h.TopicFilterType
	tc.TopicSysFlag = h.TopicSysFlag.Or(0)
	tc.Order = h.Order
	tc.Attributes = attrs
	if err := b.topics.Update(tc); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	b.waitRegistration()
	rc.Reply.OK()
}

// waitRegistration asks for a registration round and waits for it, briefly: a slow or
// dead name server delays the admin answer, not the change.
func (b *Broker) waitRegistration() {
	ctx, cancel := context.WithTimeout(context.Background(), adminRegisterWait)
	defer cancel()
	if err := b.ctl.registrar.registerAndWait(ctx); err != nil {
		b.logger.Warn("broker: registration after admin change failed", "err", err)
	}
}

// alterAttributes applies a 5.x attribute modification list ("+k=v,+k2=v2,-k3") to the
// current attributes (RocketMQ AttributeParser + AttributeUtil.alterCurrentAttributes): on
// create only additions are allowed; on update "+k=v" sets and "-k" removes an existing key.
func alterAttributes(create bool, current map[string]string, modification string) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	if modification == "" {
		return out, nil
	}
	for _, kv := range strings.Split(modification, ",") {
		switch {
		case strings.HasPrefix(kv, "+"):
			key, value, ok := strings.Cut(kv[1:], "=")
			if !ok || key == "" || value == "" {
				return nil, fmt.Errorf("add/alter attribute format is wrong: %s", kv)
			}
			out[key] = value
		case strings.HasPrefix(kv, "-"):
			if create {
				return nil, fmt.Errorf("only add attribute is supported while creating topic. key: %s", kv[1:])
			}
			if _, ok := out[kv[1:]]; !ok {
				return nil, fmt.Errorf("attempt to delete a nonexistent key: %s", kv[1:])
			}
			delete(out, kv[1:])
		default:
			return nil, fmt.Errorf("unknown attribute action symbol in %q", kv)
		}
	}
	return out, nil
}

// processDeleteTopicInBroker deletes a topic: its config, every group's offsets in it and
// its ConsumeQueues (records stay in the CommitLog until retention), then re-registers.
func (b *Broker) processDeleteTopicInBroker(rc *remoting.Request) {
	if b.refuseOnSlave(rc) {
		return
	}
	var h codec.DeleteTopicRequestHeader
	if err := h.Decode(rc.Cmd.ExtFields); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err))
		return
	}
	if remark := metadata.ValidateTopicName(h.Topic); remark != "" {
		rc.Reply.Answer(codec.ResponseSystemError, remark)
		return
	}
	if b.topics.IsSystemTopic(h.Topic) {
		rc.Reply.Answer(codec.ResponseSystemError, systemTopicRemark(h.Topic))
		return
	}
	_, err := b.topics.Delete(h.Topic)
	if n := b.offsets.RemoveTopic(h.Topic); n > 0 {
		err = errors.Join(err, b.offsets.Persist())
	}
	err = errors.Join(err, b.store.DeleteTopics(h.Topic))
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	b.waitRegistration()
	rc.Reply.OK()
}

// processGetAllTopicConfig answers topics.json's content (compact).
func (b *Broker) processGetAllTopicConfig(rc *remoting.Request) {
	body, err := b.topics.Snapshot().Encode(false)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// processGetTopicConfig answers one topic's TopicConfig JSON.
func (b *Broker) processGetTopicConfig(rc *remoting.Request) {
	topic, ok := b.adminExt(rc, "topic")
	if !ok {
		return
	}
	tc, ok := b.topics.Get(topic)
	if !ok {
		rc.Reply.Answer(codec.ResponseSystemError, "No topic in this broker. topic: "+topic)
		return
	}
	rc.Reply.JSON(tc)
}

// processUpdateAndCreateSubscriptionGroup creates or replaces a group from its JSON body.
func (b *Broker) processUpdateAndCreateSubscriptionGroup(rc *remoting.Request) {
	if b.refuseOnSlave(rc) {
		return
	}
	c, err := codec.DecodeSubscriptionGroupConfig(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	if !metadata.ValidGroupName(c.GroupName) {
		rc.Reply.Answer(codec.ResponseSystemError, fmt.Sprintf(
			"the specified group[%s] is blank, longer than %d or contains illegal characters, allowing only %s",
			c.GroupName, metadata.RetryOrDLQTopicNameMaxLen, metadata.TopicNameAllowedCharacters))
		return
	}
	if err := b.subscriptions.Update(*c); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.OK()
}

// processGetAllSubscriptionGroupConfig answers subscriptionGroup.json's content (compact).
func (b *Broker) processGetAllSubscriptionGroupConfig(rc *remoting.Request) {
	body, err := b.subscriptions.Snapshot().Encode(false)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// processGetSubscriptionGroupConfig answers one group's config.
func (b *Broker) processGetSubscriptionGroupConfig(rc *remoting.Request) {
	group, ok := b.adminExt(rc, "group")
	if !ok {
		return
	}
	c, ok := b.subscriptions.Get(group)
	if !ok {
		rc.Reply.Answer(codec.ResponseSubscriptionGroupNotExist, "The consumer group "+group+" not exist")
		return
	}
	body, err := c.Encode()
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// processDeleteSubscriptionGroup deletes a group; with cleanOffset=true also its offsets.
func (b *Broker) processDeleteSubscriptionGroup(rc *remoting.Request) {
	if b.refuseOnSlave(rc) {
		return
	}
	group, ok := b.adminExt(rc, "groupName")
	if !ok {
		return
	}
	_, err := b.subscriptions.Delete(group)
	if clean, _ := strconv.ParseBool(rc.Cmd.ExtFields["cleanOffset"]); clean {
		if n := b.offsets.RemoveGroup(group); n > 0 {
			err = errors.Join(err, b.offsets.Persist())
		}
	}
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.OK()
}

// processGetBrokerConfig answers every config key as "key=value" lines (RocketMQ
// MixAll.properties2String) with header version = the config's DataVersion JSON.
func (b *Broker) processGetBrokerConfig(rc *remoting.Request) {
	cfg := b.cfg
	var sb strings.Builder
	for _, key := range PropertyNames() {
		v, _ := cfg.Get(key)
		sb.WriteString(key)
		sb.WriteByte('=')
		sb.WriteString(v)
		sb.WriteByte('\n')
	}
	version := fmt.Sprintf(`{"counter":0,"stateVersion":0,"timestamp":%d}`, b.ctl.bootTime.UnixMilli())
	f := rc.Reply.NewFrame()
	f.Bodies = append(f.Bodies, []byte(sb.String()))
	rc.Reply.Frame(f, codec.ResponseSuccess, "", []codec.Field{codec.StrField("version", version)}, f.Bodies)
}

// processGetAllConsumerOffset answers consumerOffset.json's content (compact, bare keys).
func (b *Broker) processGetAllConsumerOffset(rc *remoting.Request) {
	rc.Reply.Body(b.offsets.Snapshot().Encode(false))
}

// processGetAllDelayOffset answers the schedule service's live cursors in delayOffset.json's
// form (compact, bare level keys).
func (b *Broker) processGetAllDelayOffset(rc *remoting.Request) {
	rc.Reply.Body(b.schedule.Encode(false))
}

// processQueryTopicConsumeByWho answers {"groupList":[...]}: groups subscribed to the
// topic now, or with stored offsets in it.
func (b *Broker) processQueryTopicConsumeByWho(rc *remoting.Request) {
	topic, ok := b.adminExt(rc, "topic")
	if !ok {
		return
	}
	groups := append(b.consumers.GroupsByTopic(topic), b.offsets.GroupsByTopic(topic)...)
	slices.Sort(groups)
	groups = slices.Compact(groups)
	if groups == nil {
		groups = []string{}
	}
	rc.Reply.JSON(struct {
		GroupList []string `json:"groupList"`
	}{groups})
}

// connectionJSON is RocketMQ's Connection (GET_CONSUMER/PRODUCER_CONNECTION_LIST).
type connectionJSON struct {
	ClientAddr string `json:"clientAddr"`
	ClientID   string `json:"clientId"`
	Language   string `json:"language"`
	Version    int32  `json:"version"`
}

func connectionsJSON(members []clients.ClientChannelInfo) []connectionJSON {
	out := make([]connectionJSON, 0, len(members))
	for _, m := range members {
		out = append(out, connectionJSON{
			ClientAddr: m.Conn.RemoteAddr().String(), ClientID: m.ClientID,
			Language: m.Language.String(), Version: m.Version,
		})
	}
	return out
}

// processGetConsumerConnectionList answers RocketMQ's ConsumerConnection for a group, or
// CONSUMER_NOT_ONLINE when it has no live member.
func (b *Broker) processGetConsumerConnectionList(rc *remoting.Request) {
	group, ok := b.adminExt(rc, "consumerGroup")
	if !ok {
		return
	}
	g, ok := b.consumers.Group(group)
	if !ok || len(g.Members) == 0 {
		rc.Reply.Answer(codec.ResponseConsumerNotOnline, "the consumer group["+group+"] not online")
		return
	}
	subs := make(map[string]codec.SubscriptionData, len(g.Subscriptions))
	for topic, s := range g.Subscriptions {
		subs[topic] = *s
	}
	rc.Reply.JSON(struct {
		ConnectionSet     []connectionJSON                  `json:"connectionSet"`
		ConsumeFromWhere  codec.ConsumeFromWhere            `json:"consumeFromWhere"`
		ConsumeType       codec.ConsumeType                 `json:"consumeType"`
		MessageModel      codec.MessageModel                `json:"messageModel"`
		SubscriptionTable map[string]codec.SubscriptionData `json:"subscriptionTable"`
	}{connectionsJSON(g.Members), g.ConsumeFromWhere, g.ConsumeType, g.MessageModel, subs})
}

// processGetProducerConnectionList answers RocketMQ's ProducerConnection for a group, or
// SYSTEM_ERROR when it has no live producer.
func (b *Broker) processGetProducerConnectionList(rc *remoting.Request) {
	group, ok := b.adminExt(rc, "producerGroup")
	if !ok {
		return
	}
	members := b.producers.Members(group)
	if len(members) == 0 {
		rc.Reply.Answer(codec.ResponseSystemError, "the producer group["+group+"] not exist")
		return
	}
	rc.Reply.JSON(struct {
		ConnectionSet []connectionJSON `json:"connectionSet"`
	}{connectionsJSON(members)})
}

// storeTimeAt returns the store timestamp of a queue entry's message, 0 when unknown.
func (b *Broker) storeTimeAt(topic string, queueID int32, offset int64) int64 {
	if offset < b.store.GetMinOffsetInQueue(topic, queueID) || offset >= b.store.GetMaxOffsetInQueue(topic, queueID) {
		return 0
	}
	rec, release, err := b.store.LookMessageByOffset(b.store.GetCommitLogOffsetInQueue(topic, queueID, offset))
	if err != nil {
		return 0
	}
	defer release()
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		return 0
	}
	return r.StoreTimestamp
}

// appendQueueKey appends a MessageQueue written as a map key the way fastjson writes
// object keys ({"brokerName":..,"queueId":..,"topic":..}:) — encoding/json cannot.
func appendQueueKey(dst []byte, brokerName string, queueID int32, topic string) []byte {
	name, _ := json.Marshal(brokerName)
	t, _ := json.Marshal(topic)
	dst = append(dst, `{"brokerName":`...)
	dst = append(dst, name...)
	dst = append(dst, `,"queueId":`...)
	dst = strconv.AppendInt(dst, int64(queueID), 10)
	dst = append(dst, `,"topic":`...)
	dst = append(dst, t...)
	return append(dst, '}', ':')
}

// processGetTopicStatsInfo answers RocketMQ's TopicStatsTable: per write queue its min and
// max offset and the store time of its last message.
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":..,"maxOffset":..,"minOffset":..},...}}
func (b *Broker) processGetTopicStatsInfo(rc *remoting.Request) {
	topic, ok := b.adminExt(rc, "topic")
	if !ok {
		return
	}
	tc, ok := b.topics.Get(topic)
	if !ok {
		rc.Reply.Answer(codec.ResponseTopicNotExist, "topic["+topic+"] not exist")
		return
	}
	body := []byte(`{"offsetTable":{`)
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		if q > 0 {
			body = append(body, ',')
		}
		minOffset := max(b.store.GetMinOffsetInQueue(topic, q), 0)
		maxOffset := max(b.store.GetMaxOffsetInQueue(topic, q), 0)
		var last int64
		if maxOffset > 0 {
			last = b.storeTimeAt(topic, q, maxOffset-1)
		}
		body = appendQueueKey(body, b.cfg.BrokerName, q, topic)
		body = fmt.Appendf(body, `{"lastUpdateTimestamp":%d,"maxOffset":%d,"minOffset":%d}`, last, maxOffset, minOffset)
	}
	body = append(body, '}', '}')
	rc.Reply.Body(body)
}

// processGetConsumeStats answers RocketMQ's ConsumeStats for a group: per read queue of
// the topic (or of every topic the group has offsets in), the broker's max offset, the
// group's committed offset, and the store time of the last consumed message.
//
//	{"consumeTps":0.0,"offsetTable":{{queue}:{"brokerOffset":..,"consumerOffset":..,"lastTimestamp":..,"pullOffset":..}}}
func (b *Broker) processGetConsumeStats(rc *remoting.Request) {
	group, ok := b.adminExt(rc, "consumerGroup")
	if !ok {
		return
	}
	topics := []string{rc.Cmd.ExtFields["topic"]}
	if topics[0] == "" {
		topics = b.offsets.TopicsByGroup(group)
	}
	live := b.consumers.ConsumerIDs(group) != nil
	body := []byte(`{"consumeTps":0.0,"offsetTable":{`)
	first := true
	for _, topic := range topics {
		tc, ok := b.topics.Get(topic)
		if !ok {
			continue
		}
		// A live group that does not subscribe the topic (any more) is not reported for it.
		if live && b.consumers.FindSubscriptionData(group, topic) == nil {
			continue
		}
		for q := int32(0); q < tc.ReadQueueNums; q++ {
			brokerOffset := max(b.store.GetMaxOffsetInQueue(topic, q), 0)
			consumerOffset := max(b.offsets.Query(group, topic, q), 0)
			var last int64
			if consumerOffset > 0 {
				last = b.storeTimeAt(topic, q, consumerOffset-1)
			}
			if !first {
				body = append(body, ',')
			}
			first = false
			body = appendQueueKey(body, b.cfg.BrokerName, q, topic)
			body = fmt.Appendf(body, `{"brokerOffset":%d,"consumerOffset":%d,"lastTimestamp":%d,"pullOffset":%d}`,
				brokerOffset, consumerOffset, last, consumerOffset)
		}
	}
	body = append(body, '}', '}')
	rc.Reply.Body(body)
}

// processGetBrokerRuntimeInfo answers a KVTable with the keys mqadmin brokerStatus shows.
func (b *Broker) processGetBrokerRuntimeInfo(rc *remoting.Request) {
	table := b.runtimeInfo()
	body, err := (&codec.KVTable{Table: table}).Encode()
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// runtimeInfo builds GET_BROKER_RUNTIME_INFO's table (RocketMQ BrokerController
// prepareRuntimeInfo plus the store's runtime info).
func (b *Broker) runtimeInfo() map[string]string {
	st := b.store.Stats()
	rs := b.ctl.runtime
	now := b.clock()
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	t := map[string]string{
		"brokerVersionDesc":                brokerVersionDesc,
		"brokerVersion":                    strconv.Itoa(int(codec.ServerVersion)),
		"bootTimestamp":                    i64(b.ctl.bootTime.UnixMilli()),
		"runtime":                          runtimeText(now.Sub(b.ctl.bootTime)),
		"brokerActive":                     "true",
		"msgPutTotalTodayNow":              i64(st.PutMessageTimesTotal),
		"msgGetTotalTodayNow":              i64(st.GetMessageTransferredMsg),
		"putMessageTimesTotal":             i64(st.PutMessageTimesTotal),
		"putMessageSizeTotal":              i64(st.PutMessageSizeTotal),
		"putMessageFailedTimes":            i64(st.PutMessageFailedTimes),
		"getMessageTimesTotal":             i64(st.GetMessageTimesTotal),
		"getMessageTransferedMsgCount":     i64(st.GetMessageTransferredMsg),
		"commitLogMaxOffset":               i64(st.CommitLogMaxOffset),
		"commitLogMinOffset":               i64(st.CommitLogMinOffset),
		"commitLogFlushedOffset":           i64(st.CommitLogFlushedOffset),
		"dispatchBehindBytes":              i64(st.DispatchBehindBytes),
		"runningFlags":                     st.RunningFlags.String(),
		"putMessageEntireTimeMax":          i64(st.PutLockMax.Milliseconds()),
		"pageCacheLockTimeMills":           i64(b.store.BeginTimeInLock().Milliseconds()),
		"startAcceptSendRequestTimeStamp":  "0",
		"earliestMessageTimeStamp":         i64(b.earliestMessageTime()),
		"pullThreadPoolQueueSize":          i64(b.pullPool.Depth()),
		"pullThreadPoolQueueCapacity":      strconv.Itoa(cap(b.pullPool.queue)),
		"queryThreadPoolQueueSize":         i64(b.queryPool.Depth()),
		"queryThreadPoolQueueCapacity":     strconv.Itoa(cap(b.queryPool.queue)),
		"adminBrokerThreadPoolQueueSize":   i64(b.adminPool.Depth()),
		"adminBrokerThreadPoolQueueCapity": strconv.Itoa(cap(b.adminPool.queue)),
		"sendThreadPoolQueueSize":          "0", // sends run on the event loops
		"sendThreadPoolQueueCapacity":      "0",
	}
	if st.PutMessageTimesTotal > 0 {
		t["putMessageAverageSize"] = strconv.FormatFloat(float64(st.PutMessageSizeTotal)/float64(st.PutMessageTimesTotal), 'f', 2, 64)
	} else {
		t["putMessageAverageSize"] = "0.00"
	}
	morning := rs.mornings()
	t["msgPutTotalTodayMorning"] = i64(morning.todayPut)
	t["msgGetTotalTodayMorning"] = i64(morning.todayGet)
	t["msgPutTotalYesterdayMorning"] = i64(morning.yesterdayPut)
	t["msgGetTotalYesterdayMorning"] = i64(morning.yesterdayGet)
	t["putTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.put })
	t["getTotalTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.get })
	t["getTransferedTps"] = rs.tpsText(func(s runtimeSample) int64 { return s.transferred })
	return t
}

// earliestMessageTime is the store time of the oldest record in the CommitLog, 0 when empty.
func (b *Broker) earliestMessageTime() int64 {
	if b.store.MaxPhyOffset() <= b.store.MinPhyOffset() {
		return 0
	}
	rec, release, err := b.store.LookMessageByOffset(b.store.MinPhyOffset())
	if err != nil {
		return 0
	}
	defer release()
	r, err := codec.DecodeRecord(rec, false)
	if err != nil {
		return 0
	}
	return r.StoreTimestamp
}

// runtimeText formats an uptime as RocketMQ does: "[ 0 days, 1 hours, 2 minutes, 3 seconds ]".
func runtimeText(d time.Duration) string {
	s := int64(d / time.Second)
	return fmt.Sprintf("[ %d days, %d hours, %d minutes, %d seconds ]", s/86400, s%86400/3600, s%3600/60, s%60)
}

// runtimeSample is one second's store counters.
type runtimeSample struct {
	at                    time.Time
	put, get, transferred int64
}

// runtimeSamplesKept covers RocketMQ's longest TPS window (600 s) plus one.
const runtimeSamplesKept = 601

// runtimeStats samples store counters every second for the TPS figures of
// GET_BROKER_RUNTIME_INFO (10 s, 60 s and 600 s windows, as RocketMQ's StoreStatsService)
// and keeps the counters at the start of today and yesterday. Safe for concurrent use.
type runtimeStats struct {
	stats func() store.Stats
	clock func() time.Time

	mu      sync.Mutex
	ring    [runtimeSamplesKept]runtimeSample
	n, next int
	day     int // day of the last sample (YearDay + 1000*Year)
	morning morningCounters
}

type morningCounters struct{ todayPut, todayGet, yesterdayPut, yesterdayGet int64 }

func newRuntimeStats(stats func() store.Stats, clock func() time.Time) *runtimeStats {
	now := clock()
	return &runtimeStats{stats: stats, clock: clock, day: now.Year()*1000 + now.YearDay()}
}

// sample records the current counters.
func (r *runtimeStats) sample() {
	st := r.stats()
	now := r.clock()
	s := runtimeSample{at: now, put: st.PutMessageTimesTotal, get: st.GetMessageTimesTotal, transferred: st.GetMessageTransferredMsg}
	r.mu.Lock()
	defer r.mu.Unlock()
	if day := now.Year()*1000 + now.YearDay(); day != r.day {
		r.day = day
		r.morning = morningCounters{todayPut: s.put, todayGet: s.transferred,
			yesterdayPut: r.morning.todayPut, yesterdayGet: r.morning.todayGet}
	}
	r.ring[r.next] = s
	r.next = (r.next + 1) % runtimeSamplesKept
	r.n = min(r.n+1, runtimeSamplesKept)
}

func (r *runtimeStats) mornings() morningCounters {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.morning
}

// tpsText formats the rate of a counter over the last 10, 60 and 600 seconds
// ("12.50 10.00 3.20"), each over the samples available when fewer were taken.
func (r *runtimeStats) tpsText(counter func(runtimeSample) int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	parts := make([]string, 0, 3)
	for _, window := range []int{10, 60, 600} {
		parts = append(parts, strconv.FormatFloat(r.rateLocked(window, counter), 'f', 2, 64))
	}
	return strings.Join(parts, " ")
}

// rateLocked is the counter's per-second rate between the newest sample and the one
// window samples before it. Caller holds r.mu.
func (r *runtimeStats) rateLocked(window int, counter func(runtimeSample) int64) float64 {
	if r.n < 2 {
		return 0
	}
	back := min(window, r.n-1)
	newest := r.ring[(r.next-1+runtimeSamplesKept)%runtimeSamplesKept]
	oldest := r.ring[(r.next-1-back+2*runtimeSamplesKept)%runtimeSamplesKept]
	secs := newest.at.Sub(oldest.at).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(counter(newest)-counter(oldest)) / secs
}
