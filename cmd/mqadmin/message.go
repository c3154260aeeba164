package main

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/ringmq/ringmq/codec"
)

// Messages as the message commands show them, and the reads behind them: pull by queue
// offset, view by offset id, query by key or unique key.

// toolsConsumerGroup is the group mqadmin pulls with unless told otherwise (RocketMQ's
// MixAll.TOOLS_CONSUMER_GROUP).
const toolsConsumerGroup = "TOOLS_CONSUMER"

// maxBodyBytes bounds an inflated (decompressed) body: a record cannot exceed 4 MiB by
// default, and 64 MiB leaves room for any broker's maxMessageSize.
const maxBodyBytes = 64 << 20

// messageView is one stored message with owned values, ready to print or marshal.
type messageView struct {
	MsgID           string            `json:"msgId"` // the producer's UNIQ_KEY, else the offset id
	OffsetMsgID     string            `json:"offsetMsgId"`
	Topic           string            `json:"topic"`
	Tags            string            `json:"tags,omitempty"`
	Keys            string            `json:"keys,omitempty"`
	QueueID         int32             `json:"queueId"`
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	StoreSize       int32             `json:"storeSize"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	BornTimestamp   int64             `json:"bornTimestamp"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	SysFlag         int32             `json:"sysFlag"`
	Flag            int32             `json:"flag"`
	BodyCRC         int32             `json:"bodyCrc"`
	Properties      map[string]string `json:"properties"`
	Body            *string           `json:"body,omitempty"`       // the body as text, when it is UTF-8
	BodyBase64      string            `json:"bodyBase64,omitempty"` // else the body's bytes
	bodyBytes       int
}

// decodeMessages splits a pull or query body into its records.
func decodeMessages(body []byte) ([]messageView, error) {
	var out []messageView
	for at := 0; at < len(body); {
		rec, err := codec.DecodeRecord(body[at:], false)
		if err != nil {
			return nil, fmt.Errorf("record %d at byte %d of the answer: %w", len(out), at, err)
		}
		mv, err := newMessageView(&rec)
		if err != nil {
			return nil, err
		}
		out = append(out, mv)
		at += int(rec.TotalSize)
	}
	return out, nil
}

func newMessageView(rec *codec.Record) (messageView, error) {
	props := codec.DecodeProperties(rec.Properties)
	if props == nil {
		props = map[string]string{}
	}
	mv := messageView{
		OffsetMsgID: codec.OffsetMsgID(rec.StoreHost, rec.PhysicalOffset), Topic: string(rec.Topic),
		Tags: props[codec.PropertyTags], Keys: props[codec.PropertyKeys],
		QueueID: rec.QueueID, QueueOffset: rec.QueueOffset, CommitLogOffset: rec.PhysicalOffset, StoreSize: rec.TotalSize,
		ReconsumeTimes: rec.ReconsumeTimes, BornTimestamp: rec.BornTimestamp, StoreTimestamp: rec.StoreTimestamp,
		BornHost: rec.BornHost.String(), StoreHost: rec.StoreHost.String(), SysFlag: rec.SysFlag, Flag: rec.Flag,
		BodyCRC: rec.BodyCRC, Properties: props,
	}
	mv.MsgID = props[codec.PropertyUniqClientMessageIDKey]
	if mv.MsgID == "" {
		mv.MsgID = mv.OffsetMsgID
	}
	body := rec.Body
	if _, compressed := codec.CompressionOf(rec.SysFlag); compressed {
		var err error
		if body, err = codec.Decompress(rec.SysFlag, body, maxBodyBytes); err != nil {
			return mv, fmt.Errorf("message %s: body: %w", mv.MsgID, err)
		}
	}
	mv.bodyBytes = len(body)
	if utf8.Valid(body) {
		s := string(body)
		mv.Body = &s
	} else {
		mv.BodyBase64 = base64.StdEncoding.EncodeToString(body)
	}
	return mv, nil
}

// javaNull renders an absent string as Java prints a null one.
func javaNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// bodyText is the body as printed: the text, or a note when it is not UTF-8.
func (m *messageView) bodyText() string {
	if m.Body != nil {
		return *m.Body
	}
	return fmt.Sprintf("<%d bytes, not UTF-8; --output json has them in base64>", m.bodyBytes)
}

// printDetail writes RocketMQ's printMsg layout (queryMsgById and the like), with the body
// inline instead of in a temporary file.
func (a *app) printDetail(ew *errWriter, m *messageView) {
	line := func(k string, v any) { ew.printf("%-20s %v\n", k, v) }
	line("OffsetID:", m.OffsetMsgID)
	line("Topic:", m.Topic)
	line("Tags:", "["+javaNull(m.Tags)+"]")
	line("Keys:", "["+javaNull(m.Keys)+"]")
	line("Queue ID:", m.QueueID)
	line("Queue Offset:", m.QueueOffset)
	line("CommitLog Offset:", m.CommitLogOffset)
	line("Reconsume Times:", m.ReconsumeTimes)
	line("Born Timestamp:", a.humanTime(m.BornTimestamp))
	line("Store Timestamp:", a.humanTime(m.StoreTimestamp))
	line("Born Host:", m.BornHost)
	line("Store Host:", m.StoreHost)
	line("System Flag:", m.SysFlag)
	line("Properties:", javaMapText(m.Properties))
	line("Message Body:", m.bodyText())
}

// summary renders a message on one line, in the spirit of Java's MessageExt.toString that
// RocketMQ's printMsg and consumeMessage print.
func (m *messageView) summary() string {
	return fmt.Sprintf("MessageExt [queueId=%d, storeSize=%d, queueOffset=%d, sysFlag=%d, bornTimestamp=%d, bornHost=/%s, "+
		"storeTimestamp=%d, storeHost=/%s, msgId=%s, commitLogOffset=%d, bodyCRC=%d, reconsumeTimes=%d, "+
		"topic=%s, flag=%d, properties=%s]",
		m.QueueID, m.StoreSize, m.QueueOffset, m.SysFlag, m.BornTimestamp, m.BornHost, m.StoreTimestamp, m.StoreHost,
		m.OffsetMsgID, m.CommitLogOffset, m.BodyCRC, m.ReconsumeTimes, m.Topic, m.Flag, javaMapText(m.Properties))
}

type messagesResult struct {
	Messages []messageView `json:"messages"`
	app      *app
}

func (r *messagesResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for i := range r.Messages {
		if i > 0 {
			ew.printf("\n")
		}
		r.app.printDetail(ew, &r.Messages[i])
	}
	return ew.err
}

// viewByOffsetID reads one message by its offset id from the broker the id names.
func (a *app) viewByOffsetID(topic, id string) (*messageView, error) {
	host, offset, err := codec.DecodeOffsetMsgID(id)
	if err != nil {
		return nil, err
	}
	addr := host.String()
	resp, err := a.askBroker(addr, codec.RequestViewMessageByID, &codec.ViewMessageByIDRequestHeader{Offset: offset, Topic: topic}, nil,
		fmt.Sprintf("message %s", id))
	if err != nil {
		return nil, err
	}
	msgs, err := decodeMessages(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("message %s from broker %s: %w", id, addr, err)
	}
	if len(msgs) == 0 {
		return nil, fmt.Errorf("broker %s answered message %s with no record", addr, id)
	}
	return &msgs[0], nil
}

// queryIndex asks every master of a topic for the messages of a key (or unique key), oldest
// first.
func (a *app) queryIndex(topic, cluster, key string, unique bool, maxNum int32, begin, end int64) ([]messageView, error) {
	masters, err := a.topicMasters(topic, cluster)
	if err != nil {
		return nil, err
	}
	what := fmt.Sprintf("key %q in topic %q", key, topic)
	if unique {
		what = fmt.Sprintf("unique key %q in topic %q", key, topic)
	}
	var out []messageView
	for _, m := range masters {
		h := &codec.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: maxNum, BeginTimestamp: begin, EndTimestamp: end,
			UniqueKeyQuery: unique}
		resp, err := a.askBroker(m.Addr, codec.RequestQueryMessage, h, nil, what, codec.ResponseSuccess, codec.ResponseQueryNotFound)
		if err != nil {
			return nil, err
		}
		if resp.Code != int32(codec.ResponseSuccess) {
			continue
		}
		msgs, err := decodeMessages(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("%s from broker %s: %w", what, m.Addr, err)
		}
		for _, mv := range msgs {
			// The index is a hash table: a different key may share the slot.
			if mv.Topic != topic || (unique && mv.MsgID != key) || (!unique && !slices.Contains(strings.Fields(mv.Keys), key)) {
				continue
			}
			out = append(out, mv)
		}
	}
	slices.SortStableFunc(out, func(x, y messageView) int {
		return cmp.Or(cmp.Compare(x.StoreTimestamp, y.StoreTimestamp), cmp.Compare(x.CommitLogOffset, y.CommitLogOffset))
	})
	return out, nil
}

// queueRef is one queue of a topic on one master.
type queueRef struct {
	codec.MessageQueue
	Addr string
}

func (q queueRef) String() string {
	return fmt.Sprintf("MessageQueue [topic=%s, brokerName=%s, queueId=%d]", q.Topic, q.BrokerName, q.QueueID)
}

// topicQueues lists a topic's read queues (write queues when write is set) on its masters
// (brokerName restricts them to one broker name), by broker name then queue id.
func (a *app) topicQueues(topic, brokerName string, write bool) ([]queueRef, error) {
	rd, err := a.topicRoute(topic)
	if err != nil {
		return nil, err
	}
	return routeQueues(rd, topic, brokerName, write)
}

// routeQueues lists the read (or write) queues of a route's masters as queues of topic, as
// topicQueues does.
func routeQueues(rd *codec.TopicRouteData, topic, brokerName string, write bool) ([]queueRef, error) {
	addrs := map[string]string{}
	for _, m := range routeMasters(rd) {
		addrs[m.Name] = m.Addr
	}
	var out []queueRef
	for _, qd := range rd.QueueDatas {
		addr, ok := addrs[qd.BrokerName]
		if !ok || (brokerName != "" && qd.BrokerName != brokerName) {
			continue
		}
		n := qd.ReadQueueNums
		if write {
			n = qd.WriteQueueNums
		}
		for q := int32(0); q < n; q++ {
			out = append(out, queueRef{MessageQueue: codec.MessageQueue{Topic: topic, BrokerName: qd.BrokerName, QueueID: q}, Addr: addr})
		}
	}
	if len(out) == 0 {
		if brokerName != "" {
			return nil, fmt.Errorf("topic %q has no queue on a master named %q (route brokers: %s)", topic, brokerName,
				strings.Join(slices.Sorted(maps.Keys(addrs)), ", "))
		}
		return nil, fmt.Errorf("topic %q has no queue on any master", topic)
	}
	slices.SortFunc(out, func(x, y queueRef) int {
		return compareQueues(x.MessageQueue, y.MessageQueue)
	})
	return out, nil
}

// queueOffset asks a queue's min or max offset.
func (a *app) queueOffset(q queueRef, max bool) (int64, error) {
	var resp *codec.RemotingCommand
	var err error
	what := fmt.Sprintf("topic %q queue %d", q.Topic, q.QueueID)
	if max {
		resp, err = a.askBroker(q.Addr, codec.RequestGetMaxOffset,
			&codec.GetMaxOffsetRequestHeader{Topic: q.Topic, QueueID: q.QueueID, Committed: true}, nil, what)
	} else {
		resp, err = a.askBroker(q.Addr, codec.RequestGetMinOffset, &codec.GetMinOffsetRequestHeader{Topic: q.Topic, QueueID: q.QueueID}, nil, what)
	}
	if err != nil {
		return 0, err
	}
	var h codec.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("offset answer of broker %s for %s: %w", q.Addr, what, err)
	}
	return h.Offset, nil
}

// searchOffset asks for a queue's first offset stored at or after ts.
func (a *app) searchOffset(q queueRef, ts int64) (int64, error) {
	what := fmt.Sprintf("topic %q queue %d", q.Topic, q.QueueID)
	resp, err := a.askBroker(q.Addr, codec.RequestSearchOffsetByTimestamp,
		&codec.SearchOffsetRequestHeader{Topic: q.Topic, QueueID: q.QueueID, Timestamp: ts}, nil, what)
	if err != nil {
		return 0, err
	}
	var h codec.OffsetResponseHeader
	if err := h.Decode(resp.ExtFields); err != nil {
		return 0, fmt.Errorf("offset answer of broker %s for %s: %w", q.Addr, what, err)
	}
	return h.Offset, nil
}

// pullBatch is one pull's outcome.
type pullBatch struct {
	messages   []messageView
	nextOffset int64
	status     string // FOUND, NO_NEW_MSG, NO_MATCHED_MSG, OFFSET_ILLEGAL (PullStatus names)
	code       codec.ResponseCode
	remark     string
}

// pull reads up to maxNums messages of a queue from offset, without long polling and
// without committing an offset.
func (a *app) pull(q queueRef, group, subExpression string, offset int64, maxNums int32) (*pullBatch, error) {
	h := &codec.PullMessageRequestHeader{ConsumerGroup: group, Topic: q.Topic, QueueID: q.QueueID, QueueOffset: offset,
		MaxMsgNums: maxNums, SysFlag: codec.PullSysFlagSubscription, CommitOffset: 0, Subscription: subExpression,
		ExpressionType: codec.ExpressionTypeTag}
	resp, err := a.askBroker(q.Addr, codec.RequestPullMessage, h, nil, fmt.Sprintf("topic %q queue %d offset %d", q.Topic, q.QueueID, offset),
		codec.ResponseSuccess, codec.ResponsePullNotFound, codec.ResponsePullRetryImmediately, codec.ResponsePullOffsetMoved)
	if err != nil {
		return nil, err
	}
	var rh codec.PullMessageResponseHeader
	if err := rh.Decode(resp.ExtFields); err != nil {
		return nil, fmt.Errorf("pull answer of broker %s: %w", q.Addr, err)
	}
	b := &pullBatch{nextOffset: rh.NextBeginOffset, code: codec.ResponseCode(resp.Code), remark: strings.TrimSpace(resp.Remark)}
	switch codec.ResponseCode(resp.Code) {
	case codec.ResponseSuccess:
		b.status = "FOUND"
		if b.messages, err = decodeMessages(resp.Body); err != nil {
			return nil, fmt.Errorf("pull answer of broker %s: %w", q.Addr, err)
		}
	case codec.ResponsePullNotFound:
		b.status = "NO_NEW_MSG"
	case codec.ResponsePullRetryImmediately:
		b.status = "NO_MATCHED_MSG"
	default:
		b.status = "OFFSET_ILLEGAL"
	}
	return b, nil
}
