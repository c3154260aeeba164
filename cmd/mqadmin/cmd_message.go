package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ringmq/ringmq/codec"
)

// Message commands: queryMsgById, queryMsgByKey, queryMsgByOffset, queryMsgByUniqueKey,
// sendMessage, consumeMessage, printMsg.

// errNotSupported refuses queryMsgById's resend through a producer (-s, -u), which mqadmin does
// not do.
func errNotSupported(flags string) error {
	return usageError("%s: resending a message through a producer is not supported by this mqadmin", flags)
}

// checkCharset accepts the body formats mqadmin can print: UTF-8 only.
func checkCharset(flag, name string) error {
	if name != "" && !strings.EqualFold(name, "UTF-8") && !strings.EqualFold(name, "UTF8") {
		return usageError("-%s %q: only UTF-8 bodies can be printed", flag, name)
	}
	return nil
}

func (a *app) queryMsgByIDCommand() *cobra.Command {
	var topic, ids, group, clientID, unitName, format, cluster string
	var resend boolArg
	cmd := &cobra.Command{
		Use:   "queryMsgById",
		Short: "Query Message by Id.",
		Long: "Query Message by Id: an offset message id (the broker's address and CommitLog offset), else the\n" +
			"producer's message id (UNIQ_KEY), looked up in the topic's index. -i takes a comma-separated list.",
		RunE: func(*cobra.Command, []string) error {
			if err := checkCharset("f", format); err != nil {
				return err
			}
			var list []string
			for _, id := range strings.Split(ids, ",") {
				if id = strings.TrimSpace(id); id != "" {
					list = append(list, id)
				}
			}
			if group != "" && clientID != "" {
				return a.pushMessages(group, clientID, topic, cluster, list)
			}
			if resend.set || unitName != "" {
				return errNotSupported("-s/-u")
			}
			res := &messagesResult{Messages: []messageView{}, app: a}
			for _, id := range list {
				m, err := a.queryByID(topic, cluster, id)
				if err != nil {
					return err
				}
				res.Messages = append(res.Messages, *m)
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.StringVarP(&ids, "msgId", "i", "", "Message Id")
	f.StringVarP(&group, "consumerGroup", "g", "", "consumer group name; with -d, the client consumes the messages once more")
	f.StringVarP(&clientID, "clientId", "d", "", "The consumer's client id")
	f.VarP(&resend, "sendMessage", "s", "resend message (not supported)")
	f.StringVarP(&unitName, "unitName", "u", "", "unit name (not supported)")
	f.StringVarP(&format, "bodyFormat", "f", "", "print message body by the specified format (UTF-8)")
	f.StringVarP(&cluster, "cluster", "c", "", "Cluster name")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("msgId")
	return cmd
}

// queryByID reads a message by offset id, falling back to the unique-key index as RocketMQ's
// viewMessage does when the id is not an offset id or its broker does not have it.
func (a *app) queryByID(topic, cluster, id string) (*messageView, error) {
	m, err := a.viewByOffsetID(topic, id)
	if err == nil {
		return m, nil
	}
	msgs, qerr := a.queryIndex(topic, cluster, id, true, 32, 0, math.MaxInt64)
	if qerr == nil && len(msgs) > 0 {
		return &msgs[0], nil
	}
	if errors.Is(err, codec.ErrMessageID) {
		err = nil // not an offset id: only the index lookup counts
	}
	return nil, errors.Join(fmt.Errorf("message %q not found in topic %q", id, topic), err, qerr)
}

type keyRow struct {
	MsgID       string `json:"msgId"`
	QueueID     int32  `json:"queueId"`
	QueueOffset int64  `json:"queueOffset"`
}

type keyResult struct {
	Messages []keyRow `json:"messages"`
}

func (r *keyResult) text(w io.Writer) error {
	t := newTable(w, "#Message ID", "#QID", "#Offset")
	for _, m := range r.Messages {
		t.row(m.MsgID, m.QueueID, m.QueueOffset)
	}
	return t.flush()
}

func (a *app) queryMsgByKeyCommand() *cobra.Command {
	var topic, key, cluster string
	var begin, end int64
	var maxNum int32
	cmd := &cobra.Command{
		Use:   "queryMsgByKey",
		Short: "Query Message by Key.",
		RunE: func(*cobra.Command, []string) error {
			if maxNum <= 0 {
				return usageError("-m %d: must be positive", maxNum)
			}
			msgs, err := a.queryIndex(topic, cluster, key, false, maxNum, begin, end)
			if err != nil {
				return err
			}
			res := &keyResult{Messages: []keyRow{}}
			for _, m := range msgs {
				res.Messages = append(res.Messages, keyRow{MsgID: m.MsgID, QueueID: m.QueueID, QueueOffset: m.QueueOffset})
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "Topic name")
	f.StringVarP(&key, "msgKey", "k", "", "Message Key")
	f.Int64VarP(&begin, "beginTimestamp", "b", 0, "Begin timestamp(ms)")
	f.Int64VarP(&end, "endTimestamp", "e", math.MaxInt64, "End timestamp(ms)")
	f.Int32VarP(&maxNum, "maxNum", "m", 64, "The maximum number of messages returned by the query")
	f.StringVarP(&cluster, "cluster", "c", "", "Cluster name")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("msgKey")
	return cmd
}

func (a *app) queryMsgByOffsetCommand() *cobra.Command {
	var topic, brokerName, format string
	var queueID int32
	var offset int64
	cmd := &cobra.Command{
		Use:   "queryMsgByOffset",
		Short: "Query Message by offset.",
		RunE: func(*cobra.Command, []string) error {
			if err := checkCharset("f", format); err != nil {
				return err
			}
			q, err := a.oneQueue(topic, brokerName, queueID, false)
			if err != nil {
				return err
			}
			b, err := a.pull(q, toolsConsumerGroup, "*", offset, 1)
			if err != nil {
				return err
			}
			if len(b.messages) == 0 {
				return fmt.Errorf("no message at offset %d of %s: broker %s answered %s (%d): %s (%s, next offset %d)",
					offset, q, q.Addr, b.code, int32(b.code), b.remark, b.status, b.nextOffset)
			}
			return a.emit(&messagesResult{Messages: b.messages[:1], app: a})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.StringVarP(&brokerName, "brokerName", "b", "", "Broker Name")
	f.Int32VarP(&queueID, "queueId", "i", 0, "Queue Id")
	f.Int64VarP(&offset, "offset", "o", 0, "Queue Offset")
	f.StringVarP(&format, "bodyFormat", "f", "", "print message body by the specified format (UTF-8)")
	for _, name := range []string{"topic", "brokerName", "queueId", "offset"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

// oneQueue finds one read (or write) queue of a topic on the master of a broker name.
func (a *app) oneQueue(topic, brokerName string, queueID int32, write bool) (queueRef, error) {
	qs, err := a.topicQueues(topic, brokerName, write)
	if err != nil {
		return queueRef{}, err
	}
	return queueOf(qs, topic, brokerName, queueID)
}

// queueOf finds queue queueID of a broker name among qs.
func queueOf(qs []queueRef, topic, brokerName string, queueID int32) (queueRef, error) {
	for _, q := range qs {
		if q.QueueID == queueID {
			return q, nil
		}
	}
	return queueRef{}, fmt.Errorf("topic %q has no queue %d on broker %q (it has %d)", topic, queueID, brokerName, len(qs))
}

func (a *app) queryMsgByUniqueKeyCommand() *cobra.Command {
	var id, group, clientID, topic, cluster string
	var showAll bool
	cmd := &cobra.Command{
		Use:   "queryMsgByUniqueKey",
		Short: "Query Message by Unique key.",
		RunE: func(*cobra.Command, []string) error {
			if group != "" && clientID != "" {
				return a.pushMessages(group, clientID, topic, cluster, []string{id})
			}
			msgs, err := a.queryIndex(topic, cluster, id, true, 32, 0, math.MaxInt64)
			if err != nil {
				return err
			}
			if len(msgs) == 0 {
				return fmt.Errorf("message with unique key %q not found in topic %q", id, topic)
			}
			if !showAll {
				msgs = msgs[:1]
			}
			return a.emit(&messagesResult{Messages: msgs, app: a})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&id, "msgId", "i", "", "Message Id")
	f.StringVarP(&group, "consumerGroup", "g", "", "consumer group name; with -d, the client consumes the message once more")
	f.StringVarP(&clientID, "clientId", "d", "", "The consumer's client id")
	f.StringVarP(&topic, "topic", "t", "", "The topic of msg")
	f.BoolVarP(&showAll, "showAll", "a", false, "Print all message, the limit is 32")
	f.StringVarP(&cluster, "cluster", "c", "", "Cluster name")
	_ = cmd.MarkFlagRequired("msgId")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

type sendResult struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	SendStatus  string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueOffset int64  `json:"queueOffset"`
}

func (r *sendResult) text(w io.Writer) error {
	t := newTable(w, "#Broker Name", "#QID", "#Send Result", "#MsgId")
	t.row(r.BrokerName, r.QueueID, r.SendStatus, r.MsgID)
	return t.flush()
}

// sendStatusOf maps a send's response code to RocketMQ's SendStatus ("" when it failed).
func sendStatusOf(code codec.ResponseCode) string {
	switch code {
	case codec.ResponseSuccess:
		return "SEND_OK"
	case codec.ResponseFlushDiskTimeout:
		return "FLUSH_DISK_TIMEOUT"
	case codec.ResponseFlushSlaveTimeout:
		return "FLUSH_SLAVE_TIMEOUT"
	case codec.ResponseSlaveNotAvailable:
		return "SLAVE_NOT_AVAILABLE"
	}
	return ""
}

// localIP is the address a UNIQ_KEY carries: the first non-loopback IPv4 address, else
// loopback.
func localIP() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, ad := range addrs {
			if pfx, err := netip.ParsePrefix(ad.String()); err == nil && pfx.Addr().Is4() && !pfx.Addr().IsLoopback() {
				return pfx.Addr()
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}

// defaultTopic is the topic whose route a producer sends a new topic's first messages through
// (RocketMQ's TopicValidator.AUTO_CREATE_TOPIC_KEY_TOPIC): a broker with autoCreateTopicEnable
// holds it, and creates a topic on send from it.
const defaultTopic = "TBW102"

// producerDefaultTopicQueueNums is the queue count a producer asks for a topic created on send
// (Java's DefaultMQProducer.defaultTopicQueueNums default, which mqadmin's producer keeps); the
// broker gives min(this, its defaultTopicQueueNums).
const producerDefaultTopicQueueNums = 4

// publishQueues are the write queues a producer sends a topic's messages to (brokerName restricts
// them to one broker name). A topic the name servers have no route for goes, as with RocketMQ's
// producer, through the default topic's route: every master whose TBW102 queues are writeable and
// inheritable (it allows creating topics on send) gets min(producerDefaultTopicQueueNums, its
// TBW102 read queues) queues, and the send's defaultTopic and defaultTopicQueueNums let the broker
// create the topic. viaDefault says the default route was taken.
func (a *app) publishQueues(topic, brokerName string) (qs []queueRef, viaDefault bool, err error) {
	qs, err = a.topicQueues(topic, brokerName, true)
	if !isTopicNotExist(err) || topic == defaultTopic {
		return qs, false, err
	}
	notExist := err
	rd, err := a.topicRoute(defaultTopic)
	if isTopicNotExist(err) {
		return nil, false, fmt.Errorf("%w; no broker creates topics on send either (the default topic %s has no route: "+
			"autoCreateTopicEnable=false on every broker): create the topic with updateTopic", notExist, defaultTopic)
	}
	if err != nil {
		return nil, false, err
	}
	inheritable := rd.QueueDatas[:0]
	for _, qd := range rd.QueueDatas {
		if qd.Perm&permWrite != 0 && qd.Perm&permInherit != 0 {
			qd.ReadQueueNums = min(producerDefaultTopicQueueNums, qd.ReadQueueNums)
			qd.WriteQueueNums = qd.ReadQueueNums
			inheritable = append(inheritable, qd)
		}
	}
	if len(inheritable) == 0 {
		return nil, false, fmt.Errorf("%w; no broker creates topics on send either (no master's %s queues are writeable "+
			"and inheritable): create the topic with updateTopic", notExist, defaultTopic)
	}
	rd.QueueDatas = inheritable
	if qs, err = routeQueues(rd, topic, brokerName, true); err != nil {
		return nil, false, fmt.Errorf("%w; sending through the default topic %s: %w", notExist, defaultTopic, err)
	}
	return qs, true, nil
}

func (a *app) sendMessageCommand() *cobra.Command {
	var topic, body, keys, tags, brokerName string
	var queueID int32
	var trace boolArg
	cmd := &cobra.Command{
		Use:   "sendMessage",
		Short: "Send a message.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if trace.value {
				return usageError("-m true: message traces are not supported by this mqadmin")
			}
			if cmd.Flags().Changed("qid") && brokerName == "" {
				return usageError("-i (qid) needs -b (broker)")
			}
			qs, viaDefault, err := a.publishQueues(topic, brokerName)
			if err != nil {
				return err
			}
			q := qs[int(a.now().UnixNano()%int64(len(qs)))] // any queue, as a producer's random start picks
			if cmd.Flags().Changed("qid") {
				if q, err = queueOf(qs, topic, brokerName, queueID); err != nil {
					return err
				}
			}
			now := a.now()
			uniq := string(codec.NewUniqKeyGenerator(localIP(), os.Getpid(), int32(now.UnixNano())).Append(nil, now))
			props := map[string]string{codec.PropertyUniqClientMessageIDKey: uniq, codec.PropertyWaitStoreMsgOK: "true"}
			if keys != "" {
				props[codec.PropertyKeys] = keys
			}
			if tags != "" {
				props[codec.PropertyTags] = tags
			}
			h := &codec.SendMessageRequestHeader{ProducerGroup: "PID_MQADMIN", Topic: topic, DefaultTopic: defaultTopic,
				DefaultTopicQueueNums: producerDefaultTopicQueueNums, QueueID: q.QueueID, BornTimestamp: now.UnixMilli(),
				Properties: string(codec.EncodeProperties(props)), BrokerName: q.BrokerName}
			ext := map[string]string{}
			h.EncodeV2(ext)
			req := codec.NewRequest(codec.RequestSendMessageV2, ext, []byte(body))
			resp, err := a.ask("broker "+q.Addr, q.Addr, req, fmt.Sprintf("a message to %s", q),
				[]codec.ResponseCode{codec.ResponseSuccess, codec.ResponseFlushDiskTimeout, codec.ResponseFlushSlaveTimeout, codec.ResponseSlaveNotAvailable})
			if viaDefault && isTopicNotExist(err) {
				return fmt.Errorf("%w (the topic has no route and broker %s did not create it on send: "+
					"autoCreateTopicEnable=false there; create the topic with updateTopic)", err, q.BrokerName)
			}
			if err != nil {
				return err
			}
			var rh codec.SendMessageResponseHeader
			if err := rh.Decode(resp.ExtFields); err != nil {
				return fmt.Errorf("send answer of broker %s: %w", q.Addr, err)
			}
			return a.emit(&sendResult{BrokerName: q.BrokerName, QueueID: rh.QueueID, SendStatus: sendStatusOf(codec.ResponseCode(resp.Code)),
				MsgID: uniq, OffsetMsgID: rh.MsgID, QueueOffset: rh.QueueOffset})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "Topic name")
	f.StringVarP(&body, "body", "p", "", "UTF-8 string format of the message body")
	f.StringVarP(&keys, "key", "k", "", "Message keys")
	f.StringVarP(&tags, "tags", "c", "", "Message tags")
	f.StringVarP(&brokerName, "broker", "b", "", "Send message to target broker")
	f.Int32VarP(&queueID, "qid", "i", 0, "Send message to target queue")
	f.VarP(&trace, "msgTraceEnable", "m", "Message Trace Enable (not supported)")
	_ = cmd.MarkFlagRequired("topic")
	_ = cmd.MarkFlagRequired("body")
	return cmd
}

// queueMessages is what consumeMessage and printMsg read of one queue.
type queueMessages struct {
	BrokerName string        `json:"brokerName"`
	QueueID    int32         `json:"queueId"`
	MinOffset  int64         `json:"minOffset"`
	MaxOffset  int64         `json:"maxOffset"`
	Messages   []messageView `json:"messages"`
	Status     string        `json:"status"` // how the read ended: the last pull's PullStatus
	lines      []string      // text lines, in order, RocketMQ's way
}

type queuesResult struct {
	Queues    []queueMessages `json:"queues"`
	separator bool
}

func (r *queuesResult) text(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, q := range r.Queues {
		for _, l := range q.lines {
			ew.printf("%s\n", l)
		}
		if r.separator {
			ew.printf("--------------------------------------------------------\n")
		}
	}
	return ew.err
}

// messageLine is RocketMQ's printMessage line for one message.
func messageLine(m *messageView, printBody bool) string {
	body := "NOT PRINT BODY"
	if printBody {
		body = m.bodyText()
	}
	return fmt.Sprintf("MSGID: %s %s BODY: %s", m.MsgID, m.summary(), body)
}

// readQueue pulls a queue's messages in [from, to) into qm, up to limit of them, with the
// text lines RocketMQ prints per pull; tags filters by tag ("" or "*": all).
func (a *app) readQueue(q queueRef, group, subExpression string, from, to int64, limit int64, printBody bool, qm *queueMessages) error {
	tags := map[string]bool{}
	if s := strings.TrimSpace(subExpression); s != "" && s != "*" {
		for _, t := range strings.Split(s, "||") {
			tags[strings.TrimSpace(t)] = true
		}
	}
	for offset := from; offset < to && int64(len(qm.Messages)) < limit; {
		want := min(to-offset, limit-int64(len(qm.Messages)), 32)
		b, err := a.pull(q, group, subExpression, offset, int32(want))
		if err != nil {
			return err
		}
		qm.Status = b.status
		switch b.status {
		case "FOUND":
			for i := range b.messages {
				m := &b.messages[i]
				if len(tags) > 0 && !tags[m.Tags] {
					continue // the broker filters by tag hash; equal hashes of other tags end here
				}
				if int64(len(qm.Messages)) < limit {
					qm.Messages = append(qm.Messages, *m)
					qm.lines = append(qm.lines, messageLine(m, printBody))
				}
			}
		case "NO_MATCHED_MSG":
			qm.lines = append(qm.lines, fmt.Sprintf("%s no matched msg. status=%s, offset=%d", q, b.status, b.nextOffset))
		default:
			qm.lines = append(qm.lines, fmt.Sprintf("%s print msg finished. status=%s, offset=%d", q, b.status, b.nextOffset))
			return nil
		}
		if b.nextOffset <= offset {
			return fmt.Errorf("broker %s did not move past offset %d of %s", q.Addr, offset, q)
		}
		offset = b.nextOffset
	}
	return nil
}

// queueRange is a queue's [min, max) offsets, narrowed by store times when given.
func (a *app) queueRange(q queueRef, begin, end int64) (int64, int64, error) {
	lo, err := a.queueOffset(q, false)
	if err != nil {
		return 0, 0, err
	}
	hi, err := a.queueOffset(q, true)
	if err != nil {
		return 0, 0, err
	}
	if begin > 0 {
		if lo, err = a.searchOffset(q, begin); err != nil {
			return 0, 0, err
		}
	}
	if end > 0 {
		if hi, err = a.searchOffset(q, end); err != nil {
			return 0, 0, err
		}
	}
	return lo, hi, nil
}

func (a *app) consumeMessageCommand() *cobra.Command {
	var topic, brokerName, group string
	var queueID int32
	var offset, begin, end, count int64
	cmd := &cobra.Command{
		Use:   "consumeMessage",
		Short: "Consume message.",
		Long: "Consume message: print up to -c messages of a topic, or of one queue (-b and -i) from an offset (-o),\n" +
			"optionally within store times (-s, -e, ms). Nothing is committed.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if count <= 0 {
				return usageError("-c %d: must be positive", count)
			}
			if f.Changed("queueId") != (brokerName != "") {
				return usageError("-b (brokerName) and -i (queueId) go together")
			}
			if f.Changed("offset") && brokerName == "" {
				return usageError("-o (offset) needs -b (brokerName) and -i (queueId)")
			}
			var qs []queueRef
			if brokerName != "" {
				q, err := a.oneQueue(topic, brokerName, queueID, false)
				if err != nil {
					return err
				}
				qs = []queueRef{q}
			} else {
				var err error
				if qs, err = a.topicQueues(topic, "", false); err != nil {
					return err
				}
			}
			res := &queuesResult{Queues: []queueMessages{}}
			left := count
			for _, q := range qs {
				if left == 0 {
					break
				}
				lo, hi, err := a.queueRange(q, begin, end)
				if err != nil {
					return err
				}
				qm := queueMessages{BrokerName: q.BrokerName, QueueID: q.QueueID, MinOffset: lo, MaxOffset: hi, Messages: []messageView{}}
				if f.Changed("offset") {
					if offset >= hi {
						qm.lines = append(qm.lines, fmt.Sprintf("%s no matched msg, offset=%d", q, offset))
						res.Queues = append(res.Queues, qm)
						continue
					}
					qm.MinOffset = max(lo, offset)
				}
				if err := a.readQueue(q, group, "*", qm.MinOffset, hi, left, true, &qm); err != nil {
					return err
				}
				left -= int64(len(qm.Messages))
				res.Queues = append(res.Queues, qm)
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "Topic name")
	f.StringVarP(&brokerName, "brokerName", "b", "", "Broker name")
	f.Int32VarP(&queueID, "queueId", "i", 0, "Queue Id")
	f.Int64VarP(&offset, "offset", "o", 0, "Queue offset")
	f.StringVarP(&group, "consumerGroup", "g", toolsConsumerGroup, "Consumer group name")
	f.Int64VarP(&begin, "beginTimestamp", "s", 0, "Begin timestamp (ms)")
	f.Int64VarP(&end, "endTimestamp", "e", 0, "End timestamp (ms)")
	f.Int64VarP(&count, "MessageNumber", "c", 128, "Number of message to be consumed")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}

func (a *app) printMsgCommand() *cobra.Command {
	var topic, charset, subExpression, beginText, endText, lmqParent string
	printBody := boolArg{value: true}
	cmd := &cobra.Command{
		Use:   "printMsg",
		Short: "Print Message Detail.",
		RunE: func(*cobra.Command, []string) error {
			if err := checkCharset("c", charset); err != nil {
				return err
			}
			if lmqParent != "" {
				return usageError("-l: light message queues are not supported by this mqadmin")
			}
			var begin, end int64
			var err error
			if beginText != "" {
				if begin, err = a.parseTimestamp("b", beginText); err != nil {
					return err
				}
			}
			if endText != "" {
				if end, err = a.parseTimestamp("e", endText); err != nil {
					return err
				}
			}
			qs, err := a.topicQueues(topic, "", false)
			if err != nil {
				return err
			}
			res := &queuesResult{Queues: []queueMessages{}, separator: true}
			for _, q := range qs {
				lo, hi, err := a.queueRange(q, begin, end)
				if err != nil {
					return err
				}
				qm := queueMessages{BrokerName: q.BrokerName, QueueID: q.QueueID, MinOffset: lo, MaxOffset: hi, Messages: []messageView{},
					lines: []string{fmt.Sprintf("minOffset=%d, maxOffset=%d, %s", lo, hi, q)}}
				if err := a.readQueue(q, toolsConsumerGroup, subExpression, lo, hi, math.MaxInt64, printBody.value, &qm); err != nil {
					return err
				}
				res.Queues = append(res.Queues, qm)
			}
			return a.emit(res)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name")
	f.StringVarP(&charset, "charsetName", "c", "UTF-8", "CharsetName (UTF-8 only)")
	f.StringVarP(&subExpression, "subExpression", "s", "*", "Subscribe Expression(eg: TagA || TagB)")
	f.StringVarP(&beginText, "beginTimestamp", "b", "", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	f.StringVarP(&endText, "endTimestamp", "e", "", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	f.VarP(&printBody, "printBody", "d", "print body")
	f.StringVarP(&lmqParent, "lmqParentTopic", "l", "", "Lmq parent topic (not supported)")
	_ = cmd.MarkFlagRequired("topic")
	return cmd
}
