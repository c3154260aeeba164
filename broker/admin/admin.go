package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/store"
)

// adminRegisterWait bounds how long a topic change waits for the name servers to learn it
// before it is answered (RocketMQ registers synchronously in the admin thread).
const adminRegisterWait = 5 * time.Second

// SlaveRemark is RocketMQ's AdminBrokerProcessor.validateSlave remark, answered with
// SYSTEM_ERROR to topic and subscription-group changes sent to a slave.
const SlaveRemark = "Can't modify topic or subscription group from slave broker, please execute it from master broker."

// adminExt reads a required custom-header field; it answers SYSTEM_ERROR naming the field
// (as Java's header decoding does) and returns ok=false when it is missing.
func adminExt(rc *remoting.Request, key string) (string, bool) {
	v, ok := rc.Cmd.ExtFields[key]
	if !ok {
		rc.Reply.Answer(codec.ResponseSystemError, "the custom field <"+key+"> is null")
	}
	return v, ok
}

// refuseOnSlave answers SYSTEM_ERROR when this broker is a SLAVE and returns true: topics
// and subscription groups change on the master, and reach a slave through metadata sync
// (RocketMQ AdminBrokerProcessor.validateSlave).
func (p *Plane) refuseOnSlave(rc *remoting.Request) bool {
	if !p.d.IsSlave {
		return false
	}
	rc.Reply.Answer(codec.ResponseSystemError, SlaveRemark)
	return true
}

// systemTopicRemark is Java's remark for create/delete of a built-in topic.
func systemTopicRemark(topic string) string {
	return "The topic[" + topic + "] is conflict with system topic."
}

// ProcessUpdateAndCreateTopic creates or replaces a topic, writes topics.json and waits
// (up to adminRegisterWait) for the name servers to learn it, so that the topic has a
// route when the admin call returns.
func (p *Plane) ProcessUpdateAndCreateTopic(rc *remoting.Request) {
	if p.refuseOnSlave(rc) {
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
	if p.d.Topics.IsSystemTopic(h.Topic) {
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
	current, exists := p.d.Topics.Get(h.Topic)
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
	if err := p.d.Topics.Update(tc); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	p.waitRegistration()
	rc.Reply.OK()
}

// waitRegistration asks for a registration round and waits for it, briefly: a slow or
// dead name server delays the admin answer, not the change.
func (p *Plane) waitRegistration() {
	ctx, cancel := context.WithTimeout(context.Background(), adminRegisterWait)
	defer cancel()
	if err := p.d.WaitRegistration(ctx); err != nil {
		p.d.Logger.Warn("broker: registration after admin change failed", "err", err)
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

// ProcessDeleteTopicInBroker deletes a topic: its config, every group's offsets in it and
// its ConsumeQueues (records stay in the CommitLog until retention), then re-registers.
func (p *Plane) ProcessDeleteTopicInBroker(rc *remoting.Request) {
	if p.refuseOnSlave(rc) {
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
	if p.d.Topics.IsSystemTopic(h.Topic) {
		rc.Reply.Answer(codec.ResponseSystemError, systemTopicRemark(h.Topic))
		return
	}
	_, err := p.d.Topics.Delete(h.Topic)
	if n := p.d.Offsets.RemoveTopic(h.Topic); n > 0 {
		err = errors.Join(err, p.d.Offsets.Persist())
	}
	err = errors.Join(err, p.d.Store.DeleteTopics(h.Topic))
	p.d.Stats.ForgetTopic(h.Topic)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	p.waitRegistration()
	rc.Reply.OK()
}

// ProcessGetAllTopicConfig answers topics.json's content (compact).
func (p *Plane) ProcessGetAllTopicConfig(rc *remoting.Request) {
	body, err := p.d.Topics.Snapshot().Encode(false)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// ProcessGetTopicConfig answers one topic's TopicConfig JSON.
func (p *Plane) ProcessGetTopicConfig(rc *remoting.Request) {
	topic, ok := adminExt(rc, "topic")
	if !ok {
		return
	}
	tc, ok := p.d.Topics.Get(topic)
	if !ok {
		rc.Reply.Answer(codec.ResponseSystemError, "No topic in this broker. topic: "+topic)
		return
	}
	rc.Reply.JSON(tc)
}

// ProcessUpdateAndCreateSubscriptionGroup creates or replaces a group from its JSON body.
func (p *Plane) ProcessUpdateAndCreateSubscriptionGroup(rc *remoting.Request) {
	if p.refuseOnSlave(rc) {
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
	if err := p.d.Groups.Update(*c); err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.OK()
}

// ProcessGetAllSubscriptionGroupConfig answers subscriptionGroup.json's content (compact).
func (p *Plane) ProcessGetAllSubscriptionGroupConfig(rc *remoting.Request) {
	body, err := p.d.Groups.Snapshot().Encode(false)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.Body(body)
}

// ProcessGetSubscriptionGroupConfig answers one group's config.
func (p *Plane) ProcessGetSubscriptionGroupConfig(rc *remoting.Request) {
	group, ok := adminExt(rc, "group")
	if !ok {
		return
	}
	c, ok := p.d.Groups.Get(group)
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

// ProcessDeleteSubscriptionGroup deletes a group; with cleanOffset=true also its offsets.
func (p *Plane) ProcessDeleteSubscriptionGroup(rc *remoting.Request) {
	if p.refuseOnSlave(rc) {
		return
	}
	group, ok := adminExt(rc, "groupName")
	if !ok {
		return
	}
	_, err := p.d.Groups.Delete(group)
	p.d.Stats.ForgetGroup(group)
	if clean, _ := strconv.ParseBool(rc.Cmd.ExtFields["cleanOffset"]); clean {
		if n := p.d.Offsets.RemoveGroup(group); n > 0 {
			err = errors.Join(err, p.d.Offsets.Persist())
		}
	}
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	rc.Reply.OK()
}

// ProcessGetBrokerConfig answers every config key as "key=value" lines (RocketMQ
// MixAll.properties2String) with header version = the config's DataVersion JSON.
func (p *Plane) ProcessGetBrokerConfig(rc *remoting.Request) {
	var sb strings.Builder
	for key, v := range p.d.Properties {
		sb.WriteString(key)
		sb.WriteByte('=')
		sb.WriteString(v)
		sb.WriteByte('\n')
	}
	v := codec.DataVersion{Timestamp: p.d.BootTime.UnixMilli()}
	if p.d.ConfigVersion != nil {
		v = p.d.ConfigVersion()
	}
	version := fmt.Sprintf(`{"counter":%d,"stateVersion":%d,"timestamp":%d}`, v.Counter, v.StateVersion, v.Timestamp)
	f := rc.Reply.NewFrame()
	f.Bodies = append(f.Bodies, []byte(sb.String()))
	rc.Reply.Frame(f, codec.ResponseSuccess, "", []codec.Field{codec.StrField("version", version)}, f.Bodies)
}

// ProcessUpdateBrokerConfig changes broker keys while the broker runs (RocketMQ
// AdminBrokerProcessor.updateBrokerConfig; mqadmin updateBrokerConfig). The body is Java
// properties text, key=value lines. Unlike RocketMQ, which ignores an unknown key or a value it
// cannot parse and answers SUCCESS, every key is checked as a start checks it and the request
// takes effect whole or not at all (Deps.UpdateConfig): a key that needs a restart is refused
// NO_PERMISSION, an unknown key or bad value INVALID_PARAMETER, each remark naming the key. A
// body that does not parse is SYSTEM_ERROR, as in RocketMQ; an empty one changes nothing.
//
// A change of brokerPermission, as in RocketMQ, advances the topic table's version and
// registers with every name server before the answer, so that routes show the new perm when
// the operator's command returns (writes drained with brokerPermission=4 stop at once: sends
// are refused here and producers stop picking the broker's queues).
func (p *Plane) ProcessUpdateBrokerConfig(rc *remoting.Request) {
	if p.d.UpdateConfig == nil {
		rc.Reply.Answer(codec.ResponseRequestCodeNotSupported, "request type 25 not supported")
		return
	}
	props, err := conf.Parse(rc.Cmd.Body)
	if err != nil {
		rc.Reply.Answer(codec.ResponseSystemError, "string2Properties error: "+err.Error())
		return
	}
	if len(props) == 0 {
		rc.Reply.OK()
		return
	}
	if err := p.d.UpdateConfig(props); err != nil {
		var refused *ConfigRefused
		switch {
		case errors.As(err, &refused) && refused.NoPermission:
			rc.Reply.Answer(codec.ResponseNoPermission, refused.Remark)
		case errors.As(err, &refused):
			rc.Reply.Answer(codec.ResponseInvalidParameter, refused.Remark)
		default:
			rc.Reply.Answer(codec.ResponseSystemError, err.Error())
		}
		return
	}
	if slices.ContainsFunc(props, func(pr conf.Property) bool { return pr.Key == "brokerPermission" }) {
		p.d.Topics.NextVersion()
		p.waitRegistration()
	}
	rc.Reply.OK()
}

// ProcessGetAllConsumerOffset answers consumerOffset.json's content (compact, bare keys).
func (p *Plane) ProcessGetAllConsumerOffset(rc *remoting.Request) {
	rc.Reply.Body(p.d.Offsets.Snapshot().Encode(false))
}

// ProcessGetAllDelayOffset answers the schedule service's live cursors in delayOffset.json's
// form (compact, bare level keys).
func (p *Plane) ProcessGetAllDelayOffset(rc *remoting.Request) {
	rc.Reply.Body(p.d.DelayOffsets.Encode(false))
}

// ProcessQueryTopicConsumeByWho answers {"groupList":[...]}: groups subscribed to the
// topic now, or with stored offsets in it.
func (p *Plane) ProcessQueryTopicConsumeByWho(rc *remoting.Request) {
	topic, ok := adminExt(rc, "topic")
	if !ok {
		return
	}
	groups := append(p.d.Consumers.GroupsByTopic(topic), p.d.Offsets.GroupsByTopic(topic)...)
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

func connectionsJSON(members []Client) []connectionJSON {
	out := make([]connectionJSON, 0, len(members))
	for _, m := range members {
		out = append(out, connectionJSON{
			ClientAddr: m.Addr, ClientID: m.ClientID,
			Language: m.Language.String(), Version: m.Version,
		})
	}
	return out
}

// ProcessGetConsumerConnectionList answers RocketMQ's ConsumerConnection for a group, or
// CONSUMER_NOT_ONLINE when it has no live member.
func (p *Plane) ProcessGetConsumerConnectionList(rc *remoting.Request) {
	group, ok := adminExt(rc, "consumerGroup")
	if !ok {
		return
	}
	g, ok := p.d.Consumers.Connection(group)
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

// ProcessGetProducerConnectionList answers RocketMQ's ProducerConnection for a group, or
// SYSTEM_ERROR when it has no live producer.
func (p *Plane) ProcessGetProducerConnectionList(rc *remoting.Request) {
	group, ok := adminExt(rc, "producerGroup")
	if !ok {
		return
	}
	members := p.d.Producers.Connections(group)
	if len(members) == 0 {
		rc.Reply.Answer(codec.ResponseSystemError, "the producer group["+group+"] not exist")
		return
	}
	rc.Reply.JSON(struct {
		ConnectionSet []connectionJSON `json:"connectionSet"`
	}{connectionsJSON(members)})
}

// existingTopic returns topic's config, or answers TOPIC_NOT_EXIST with RocketMQ's remark and
// returns false.
func (p *Plane) existingTopic(rc *remoting.Request, topic string) (codec.TopicConfig, bool) {
	tc, ok := p.d.Topics.Get(topic)
	if !ok {
		rc.Reply.Answer(codec.ResponseTopicNotExist, "topic["+topic+"] not exist")
	}
	return tc, ok
}

// storeTimeAt returns the store timestamp of a queue entry's message, 0 when unknown.
func (p *Plane) storeTimeAt(topic string, queueID int32, offset int64) int64 {
	if offset < p.d.Store.GetMinOffsetInQueue(topic, queueID) || offset >= p.d.Store.GetMaxOffsetInQueue(topic, queueID) {
		return 0
	}
	return store.RecordStoreTime(p.d.Store, p.d.Store.GetCommitLogOffsetInQueue(topic, queueID, offset))
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

// ProcessGetTopicStatsInfo answers RocketMQ's TopicStatsTable: per write queue its min and
// max offset and the store time of its last message.
//
//	{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:{"lastUpdateTimestamp":..,"maxOffset":..,"minOffset":..},...}}
func (p *Plane) ProcessGetTopicStatsInfo(rc *remoting.Request) {
	topic, ok := adminExt(rc, "topic")
	if !ok {
		return
	}
	tc, ok := p.existingTopic(rc, topic)
	if !ok {
		return
	}
	body := []byte(`{"offsetTable":{`)
	for q := int32(0); q < tc.WriteQueueNums; q++ {
		if q > 0 {
			body = append(body, ',')
		}
		minOffset := max(p.d.Store.GetMinOffsetInQueue(topic, q), 0)
		maxOffset := max(p.d.Store.GetMaxOffsetInQueue(topic, q), 0)
		var last int64
		if maxOffset > 0 {
			last = p.storeTimeAt(topic, q, maxOffset-1)
		}
		body = appendQueueKey(body, p.d.BrokerName, q, topic)
		body = fmt.Appendf(body, `{"lastUpdateTimestamp":%d,"maxOffset":%d,"minOffset":%d}`, last, maxOffset, minOffset)
	}
	body = append(body, '}', '}')
	rc.Reply.Body(body)
}

// ProcessGetConsumeStats answers RocketMQ's ConsumeStats for a group: per read queue of
// the topic (or of every topic the group has offsets in), the broker's max offset, the
// group's committed offset, and the store time of the last consumed message.
//
// consumeTps is the group's pull rate of the last minute summed over those topics
// (GROUP_GET_NUMS, brokerstats).
//
//	{"consumeTps":0.0,"offsetTable":{{queue}:{"brokerOffset":..,"consumerOffset":..,"lastTimestamp":..,"pullOffset":..}}}
func (p *Plane) ProcessGetConsumeStats(rc *remoting.Request) {
	group, ok := adminExt(rc, "consumerGroup")
	if !ok {
		return
	}
	topics := []string{rc.Cmd.ExtFields["topic"]}
	if topics[0] == "" {
		topics = p.d.Offsets.TopicsByGroup(group)
	}
	live := p.d.Consumers.ConsumerIDs(group) != nil
	// consumeTps comes first in the body and sums over the topics reported: the table is built
	// apart and appended after it.
	var table []byte
	var tps float64
	first := true
	for _, topic := range topics {
		tc, ok := p.d.Topics.Get(topic)
		if !ok {
			continue
		}
		// A live group that does not subscribe the topic (any more) is not reported for it.
		if live && p.d.Consumers.FindSubscriptionData(group, topic) == nil {
			continue
		}
		table, _ = p.appendOffsetTable(table, group, topic, tc, &first)
		tps += p.consumeTps(group, topic)
	}
	body := appendConsumeStatsHead(make([]byte, 0, len(table)+64), tps)
	body = append(body, table...)
	body = append(body, '}', '}')
	rc.Reply.Body(body)
}

// appendOffsetTable appends ConsumeStats.offsetTable's entries of one topic for group (after a
// comma unless *first) and returns the sum of their lags (ConsumeStats.computeTotalDiff).
func (p *Plane) appendOffsetTable(body []byte, group, topic string, tc codec.TopicConfig, first *bool) ([]byte, int64) {
	var diff int64
	for q := int32(0); q < tc.ReadQueueNums; q++ {
		brokerOffset := max(p.d.Store.GetMaxOffsetInQueue(topic, q), 0)
		consumerOffset := max(p.d.Offsets.Query(group, topic, q), 0)
		var last int64
		if consumerOffset > 0 {
			last = p.storeTimeAt(topic, q, consumerOffset-1)
		}
		if !*first {
			body = append(body, ',')
		}
		*first = false
		body = appendQueueKey(body, p.d.BrokerName, q, topic)
		body = fmt.Appendf(body, `{"brokerOffset":%d,"consumerOffset":%d,"lastTimestamp":%d,"pullOffset":%d}`,
			brokerOffset, consumerOffset, last, consumerOffset)
		diff += brokerOffset - consumerOffset
	}
	return body, diff
}
