package sendplane

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/round"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// Send: SEND_MESSAGE (10, full header keys), SEND_MESSAGE_V2 (310, letter keys) and
// SEND_BATCH_MESSAGE (320, letter keys, body PROTOCOL.md §5.6), all inline on the event
// loop: the put copies the record into mapped memory under the store's put lock and makes
// no syscall. Under SYNC_FLUSH the answer comes from the group commit's callback
// (store.WaitDurable), so the loop never waits for the disk.
//
// Checks, in the Java broker's order (AbstractSendMessageProcessor.msgCheck, 4.9):
//
//	header decodes                        else SYSTEM_ERROR "the custom field <k> is null"
//	broker writable (brokerPermission)    else NO_PERMISSION (Java checks it for order topics
//	                                      only and relies on the name server hiding the
//	                                      broker's write queues; ringmq refuses every send)
//	topic name valid                      else SYSTEM_ERROR (4.9; 5.x says INVALID_PARAMETER)
//	topic not a system topic fed by the
//	broker itself (schedule, half, ...)   else NO_PERMISSION
//	topic exists or auto-created          else TOPIC_NOT_EXIST
//	topic writable                        else NO_PERMISSION (ringmq: Java checks it only on
//	                                      send-back; the name server hides such queues)
//	queueId < max(read, write) queues     else SYSTEM_ERROR (4.9; 5.x INVALID_PARAMETER). The Go
//	                                      producer retries on SYSTEM_ERROR with the next queue,
//	                                      so 4.9's code is the friendlier one.
//	body non-empty, ≤ maxMessageSize,
//	properties ≤ 32767 bytes              else MESSAGE_ILLEGAL, answered at once on the same
//	                                      connection
//	properties well formed                else MESSAGE_ILLEGAL "the properties are malformed: <what,
//	(codec.ValidateProperties; a batch's   where>" (Java parses and re-encodes them, dropping what
//	header and each item)                  it cannot read; ringmq refuses, but drops a pair with an
//	                                      empty value as Java does: Java clients send those)
//
// What the stored record gets (as Apache RocketMQ does): the born host is the connection's
// peer, the store host brokerIP1:listenPort; the sysFlag keeps only bits a client may set
// (compression, transaction type, MULTI_TAGS) — codec derives the host bits — plus
// MULTI_TAGS when the topic's filter type is MULTI_TAG; the properties lose WAIT (it only
// steers this request), gain UNIQ_KEY when the client sent none (Java layout, from the
// broker's address) and CLUSTER.
//
// Redirections applied before the put, as in the Java broker:
//   - %RETRY%<group> with reconsumeTimes ≥ the group's (or the header's) maxReconsumeTimes
//     goes to %DLQ%<group> queue 0, without delay.
//   - TRAN_MSG=true (or a PREPARED sysFlag) stores a half message: topic
//     RMQ_SYS_TRANS_HALF_TOPIC queue 0, REAL_TOPIC/REAL_QID/__transactionId__ added,
//     transaction bits cleared. END_TRANSACTION and the check-back service
//     (transaction.go, this package) turn halves into deliveries.
//   - DELAY > 0 (transaction type NOT or COMMIT): stored in SCHEDULE_TOPIC_XXXX queue
//     level−1 (level clamped to messageDelayLevel's size) with REAL_TOPIC/REAL_QID; the
//     schedule service (broker/delay) delivers it to the real topic when due.
//
// The response header is the Java broker's: msgId (offsetMsgId; a batch's ids joined
// with ','), queueId (the queue the producer addressed or was given), queueOffset (first
// logical offset in the queue actually written), transactionId (UNIQ_KEY), MSG_REGION and
// TRACE_ON. FLUSH_DISK_TIMEOUT (10) means stored but not yet durable and carries the same
// header.

// sendSysFlagClientMask is the sysFlag bits a producer may set: compression (bit 0 and
// the type bits), MULTI_TAGS and the transaction type. The host bits are derived from the
// real addresses by codec; the 5.x inner-batch bits describe a record layout ringmq does
// not store.
const sendSysFlagClientMask = codec.SysFlagCompressed | codec.SysFlagMultiTags |
	codec.SysFlagTransactionMask | codec.SysFlagCompressionMask

// propertiesBytesLimit is PROPERTIESLEN's int16 limit.
const propertiesBytesLimit = codec.MaxPropertiesBytes

// Remarks the Java broker gives.
const (
	remarkPCBusy              = "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
	remarkServiceNotAvailable = "service not available now. It may be caused by one of the following reasons: " +
		"the broker's disk is full, messages are put to the slave, message store has been shut down, etc."
	remarkCreateMappedFileFailed = "create mapped file failed, server is busy or broken."
	remarkFlushQueueFull         = "[PCBUSY_CLEAN_QUEUE]broker busy, group commit queue full, start flow control for a while"
)

// notAllowedSendTopics are topics only the broker itself writes (TopicValidator
// NOT_ALLOWED_SEND_TOPIC_SET).
var notAllowedSendTopics = map[string]bool{
	metadata.ScheduleTopic:          true,
	metadata.TransHalfTopic:         true,
	metadata.TransOpHalfTopic:       true,
	metadata.TransCheckMaxTimeTopic: true,
	metadata.SelfTestTopic:          true,
	metadata.OffsetMovedEventTopic:  true,
}

// dlqQueueNums is DLQ_NUMS_PER_GROUP.
const dlqQueueNums = 1

// sendRequest is one send in flight, pooled: it holds the decoded header, the message (or
// batch) handed to the store, the re-encoded properties, the result and the response
// buffer, so that a send allocates nothing of its own. It returns to the pool when netio
// is done with the response (done), which for SYNC_FLUSH is after the durability callback
// (durable) wrote it.
type sendRequest struct {
	p      *Plane
	to     remoting.Reply
	header codec.SendMessageRequestHeader

	msg        codec.Message
	batch      store.BatchPut
	props      []byte // a single message's properties; a batch's batch-level properties
	arena      []byte // a batch's per-item properties, back to back
	itemBounds []int  // arena end of each batch item's properties
	uniqKey    []byte // the UNIQ_KEY answered as transactionId
	msgIDs     []byte // the answered msgId text
	queueID    int32  // answered queueId
	isBatch    bool
	result     store.PutResult

	resp       []byte                    // response frame
	done       func()                    // = release, bound once
	durable    func(error, *round.Round) // = onDurable, bound once
	replicated ha.RoundWaiterFunc        // = onReplicated, bound once

	// The durability and replica waits of one put run side by side; the last to finish answers.
	waits       atomic.Int32
	flushCode   codec.ResponseCode // the flush wait's outcome (SUCCESS when there was none)
	flushRemark string
	flushStored bool               // flushCode is a "stored, but" answer (false: SYSTEM_BUSY, not stored)
	replicaCode codec.ResponseCode // the replica wait's outcome (SUCCESS when there was none)
}

func newSendRequest(p *Plane) *sendRequest {
	r := &sendRequest{p: p}
	r.done = r.release
	r.durable = r.onDurable
	r.replicated = r.onReplicated
	return r
}

// maxPooledSendBytes keeps buffers grown by unusual requests (huge batches) out of the pool.
const maxPooledSendBytes = 256 << 10

func (r *sendRequest) release() {
	r.to = remoting.Reply{}
	r.header = codec.SendMessageRequestHeader{}
	r.msg = codec.Message{}
	clear(r.batch.Messages)
	r.batch.Messages = r.batch.Messages[:0]
	r.batch.PhysicalOffsets = r.batch.PhysicalOffsets[:0]
	r.itemBounds = r.itemBounds[:0]
	r.props, r.arena, r.uniqKey, r.resp = r.props[:0], r.arena[:0], r.uniqKey[:0], r.resp[:0]
	r.msgIDs, r.isBatch, r.result, r.queueID = r.msgIDs[:0], false, store.PutResult{}, 0
	if cap(r.arena) > maxPooledSendBytes || cap(r.resp) > maxPooledSendBytes || cap(r.msgIDs) > maxPooledSendBytes ||
		cap(r.batch.Messages) > 4096 || cap(r.props) > maxPooledSendBytes {
		return // let the GC have it
	}
	r.p.sendRequests.Put(r)
}

// ProcessSendMessage serves 10, 310 and 320 on the event loop.
func (p *Plane) ProcessSendMessage(rc *remoting.Request) {
	r := p.sendRequests.Get().(*sendRequest)
	r.to = rc.Reply
	cmd := rc.Cmd
	if err := r.header.DecodeFrom(cmd, cmd.Code != int32(codec.RequestSendMessage)); err != nil {
		r.answer(codec.ResponseSystemError, remoting.HeaderErrorRemark(err), false)
		return
	}
	tc, code, remark := p.checkSend(rc, &r.header)
	if code != codec.ResponseSuccess {
		r.answer(code, remark, true)
		return
	}
	r.queueID = r.header.QueueID
	if r.queueID < 0 {
		if tc.WriteQueueNums <= 0 {
			r.answer(codec.ResponseNoPermission, fmt.Sprintf("the topic[%s] has no write queue", tc.TopicName), true)
			return
		}
		// Java: ThreadLocalRandom.nextInt(99999999) % writeQueueNums.
		r.queueID = rand.Int32N(tc.WriteQueueNums)
	}
	if cmd.Code == int32(codec.RequestSendBatchMessage) || r.header.Batch {
		r.isBatch = true
		code, remark = p.prepareBatch(r, rc, &tc)
	} else {
		code, remark = p.prepareMessage(r, rc, &tc)
	}
	if code != codec.ResponseSuccess {
		r.answer(code, remark, true)
		return
	}
	p.put(r)
}

// checkSend is the Java broker's msgCheck, plus the topic permission check. It returns the
// topic's config, auto-creating the topic when allowed.
func (p *Plane) checkSend(rc *remoting.Request, h *codec.SendMessageRequestHeader) (codec.TopicConfig, codec.ResponseCode, string) {
	if !metadata.IsWriteable(p.live.BrokerPermission.Load()) {
		return codec.TopicConfig{}, codec.ResponseNoPermission,
			"the broker[" + p.set.BrokerIP + "] sending message is forbidden"
	}
	if remark := metadata.ValidateTopicName(h.Topic); remark != "" {
		return codec.TopicConfig{}, codec.ResponseSystemError, remark
	}
	if notAllowedSendTopics[h.Topic] {
		return codec.TopicConfig{}, codec.ResponseNoPermission, "Sending message to topic[" + h.Topic + "] is forbidden."
	}
	tc, ok := p.topics.Get(h.Topic)
	if !ok && !p.set.IsSlave { // a slave's topics come from its master only
		if group, retry := strings.CutPrefix(h.Topic, metadata.RetryGroupTopicPrefix); retry {
			// The group before its retry topic, as a heartbeat creates them: a send that the
			// group's check refuses later (prepareMessage) must not leave the topic behind.
			if _, err := p.groups.FindOrCreate(group); err != nil {
				return codec.TopicConfig{}, codec.ResponseSubscriptionGroupNotExist,
					metadata.Remark("subscription group not exist, "+group, err)
			}
		}
		var topicSysFlag int32
		if h.UnitMode {
			if strings.HasPrefix(h.Topic, metadata.RetryGroupTopicPrefix) {
				topicSysFlag = metadata.TopicSysFlagUnitSub
			} else {
				topicSysFlag = metadata.TopicSysFlagUnit
			}
		}
		tc, ok = p.topics.CreateInSendMessage(h.Topic, h.DefaultTopic, h.DefaultTopicQueueNums, topicSysFlag)
		if !ok && strings.HasPrefix(h.Topic, metadata.RetryGroupTopicPrefix) {
			var err error
			tc, err = p.topics.CreateInSendMessageBack(h.Topic, 1, metadata.PermRead|metadata.PermWrite, topicSysFlag)
			if err != nil {
				return tc, codec.ResponseTopicNotExist, metadata.Remark("topic["+h.Topic+"] not exist, apply first please!", err)
			}
			ok = true
		}
	}
	if !ok {
		return tc, codec.ResponseTopicNotExist, "topic[" + h.Topic + "] not exist, apply first please!"
	}
	if !metadata.IsWriteable(tc.Perm) {
		return tc, codec.ResponseNoPermission, "the topic[" + h.Topic + "] sending message is forbidden"
	}
	if limit := max(tc.WriteQueueNums, tc.ReadQueueNums); h.QueueID >= limit {
		return tc, codec.ResponseSystemError, fmt.Sprintf(
			"request queueId[%d] is illegal, TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%d] Producer: %s",
			h.QueueID, tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, rc.Conn.RemoteAddr())
	}
	return tc, codec.ResponseSuccess, ""
}

// messageIllegalRemark is the Java broker's MESSAGE_ILLEGAL remark.
func (p *Plane) messageIllegalRemark() string {
	return "the message is illegal, maybe msg body or properties length not matched. msg body length limit " +
		strconv.Itoa(p.set.MaxMessageSize) + "B, msg properties length limit 32KB."
}

// bornHost is the connection's peer, IPv4-mapped addresses unmapped so that the record
// takes the 4-byte form.
func bornHost(rc *remoting.Request) netip.AddrPort {
	ap := rc.Conn.RemoteAddr()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// stringBytes views s as bytes without copying; the result must not be modified.
func stringBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// prepareMessage builds the single message of a 10/310 send in r.msg.
func (p *Plane) prepareMessage(r *sendRequest, rc *remoting.Request, tc *codec.TopicConfig) (codec.ResponseCode, string) {
	h := &r.header
	body := rc.Cmd.Body
	if len(body) == 0 {
		return codec.ResponseMessageIllegal, "the message body is empty"
	}
	if len(body) > p.set.MaxMessageSize || len(h.Properties) > propertiesBytesLimit {
		return codec.ResponseMessageIllegal, p.messageIllegalRemark()
	}
	// Checked before anything reads them. A copy (pairs with empty values dropped) goes to
	// the arena, which a single message does not otherwise use.
	clientProps, err := ClientProperties(r.arena[:0], stringBytes(h.Properties))
	if err != nil {
		return codec.ResponseMessageIllegal, malformedPropertiesRemark("properties", err)
	}
	topic, queueID := h.Topic, r.queueID
	sysFlag := h.SysFlag & sendSysFlagClientMask

	// Retry topic past its reconsume limit → the group's DLQ (handleRetryAndDLQ).
	toDLQ := false
	if group, ok := strings.CutPrefix(topic, metadata.RetryGroupTopicPrefix); ok {
		gc, err := p.groups.FindOrCreate(group)
		if err != nil {
			return codec.ResponseSubscriptionGroupNotExist, metadata.Remark("subscription group not exist, "+group, err)
		}
		maxReconsume := gc.RetryMaxTimes
		if rc.Cmd.Version >= mqVersionV349 && h.MaxReconsumeTimes.Set {
			maxReconsume = h.MaxReconsumeTimes.Value
		}
		if h.ReconsumeTimes >= maxReconsume {
			toDLQ = true
			topic = metadata.DLQTopic(group)
			queueID = 0
			dlq, err := p.topics.CreateInSendMessageBack(topic, dlqQueueNums, metadata.PermRead|metadata.PermWrite, 0)
			if err != nil {
				return codec.ResponseSystemError, metadata.Remark("topic["+topic+"] not exist", err)
			}
			*tc = dlq
		}
	}
	if tc.TopicFilterType == codec.TopicFilterMultiTag {
		sysFlag |= codec.SysFlagMultiTags
	}

	// Transaction half message?
	half := false
	if v, ok := codec.LookupProperty(clientProps, codec.PropertyTransactionPrepared); ok && bytes.EqualFold(v, []byte("true")) {
		half = true
	}
	if codec.TransactionType(sysFlag) == codec.SysFlagTransactionPrepare {
		half = true
	}
	delayLevel := 0
	if !toDLQ {
		if v, ok := codec.LookupProperty(clientProps, codec.PropertyDelayTimeLevel); ok {
			n, ok := codec.ParseDecimal(v)
			if !ok {
				return codec.ResponseMessageIllegal, "the DELAY property is not a number: " + strconv.Quote(string(v))
			}
			delayLevel = n
		}
	}
	// For clients before 4.6.1 a retried transactional message carried TRAN_MSG and a delay.
	if half && h.ReconsumeTimes > 0 && delayLevel > 0 {
		half = false
	}
	if half && p.live.RejectTransactionMessage.Load() {
		return codec.ResponseNoPermission, "the broker[" + p.set.BrokerIP + "] sending transaction message is forbidden"
	}
	delayed := false
	if !half {
		t := codec.TransactionType(sysFlag)
		delayed = delayLevel > 0 && (t == codec.SysFlagTransactionNot || t == codec.SysFlagTransactionCommit)
		if delayed {
			delayLevel = p.clampDelayLevel(delayLevel)
		}
	}

	// Properties: the client's minus WAIT (and DELAY when it is dropped or rewritten),
	// then UNIQ_KEY if missing, CLUSTER, and the redirection's keys. A delayed message keeps
	// WAIT: RocketMQ 4.9.8 leaves it out of a stored message to save bytes, but rebuilds a
	// delayed one's properties from the whole map (CommitLog.asyncPutMessage), WAIT included,
	// and the delivered copy keeps them (broker/delay).
	prop := copyProperties(r.props[:0], clientProps, !delayed, toDLQ || delayed)
	if v, ok := codec.LookupProperty(clientProps, codec.PropertyUniqClientMessageIDKey); ok && len(v) > 0 {
		r.uniqKey = append(r.uniqKey[:0], v...)
	} else {
		r.uniqKey = p.uniqKeys.Append(r.uniqKey[:0], p.clock())
		prop = appendPropertyBytes(prop, codec.PropertyUniqClientMessageIDKey, r.uniqKey)
	}
	prop = codec.AppendProperty(prop, codec.PropertyCluster, p.set.ClusterName)
	switch {
	case half:
		prop = codec.AppendProperty(prop, codec.PropertyRealTopic, topic)
		prop = appendPropertyInt(prop, codec.PropertyRealQueueID, int64(queueID))
		prop = appendPropertyBytes(prop, codec.PropertyTransactionID, r.uniqKey)
		sysFlag = codec.ResetTransactionType(sysFlag, codec.SysFlagTransactionNot)
		topic, queueID = metadata.TransHalfTopic, 0
	case delayed:
		prop, queueID = AppendScheduleProperties(prop, delayLevel, topic, queueID)
		topic = metadata.ScheduleTopic
	}
	r.props = prop
	if len(prop) > propertiesBytesLimit {
		return codec.ResponseMessageIllegal, p.messageIllegalRemark()
	}
	r.msg = codec.Message{
		Topic:          topic,
		QueueID:        queueID,
		Flag:           h.Flag,
		SysFlag:        sysFlag,
		BornTimestamp:  h.BornTimestamp,
		BornHost:       bornHost(rc),
		StoreHost:      p.storeHost,
		ReconsumeTimes: h.ReconsumeTimes,
		Body:           body,
		Properties:     prop,
	}
	return codec.ResponseSuccess, ""
}

// mqVersionV349 is MQVersion V3_4_9: from it on the broker honours maxReconsumeTimes from
// the send header.
const mqVersionV349 = 121

// prepareBatch builds the records of a 320 send in r.batch. Each item keeps its own flag,
// body and properties and gets the batch-level properties (the header's plus CLUSTER)
// appended, as RocketMQ 4.9 does; items get no UNIQ_KEY of the broker's (Java clients put
// one in every item, the Go client none, PROTOCOL.md §5.6).
func (p *Plane) prepareBatch(r *sendRequest, rc *remoting.Request, tc *codec.TopicConfig) (codec.ResponseCode, string) {
	h := &r.header
	body := rc.Cmd.Body
	switch {
	case len(h.Topic) > codec.V1MaxTopicBytes:
		return codec.ResponseMessageIllegal, "message topic length too long " + strconv.Itoa(len(h.Topic))
	case strings.HasPrefix(h.Topic, metadata.RetryGroupTopicPrefix):
		return codec.ResponseMessageIllegal, "batch request does not support retry group " + h.Topic
	case codec.TransactionType(h.SysFlag) != codec.SysFlagTransactionNot:
		return codec.ResponseMessageIllegal, "batch message does not support transaction"
	case len(body) == 0:
		return codec.ResponseMessageIllegal, "the batch body is empty"
	case len(body) > p.set.MaxMessageSize || len(h.Properties) > propertiesBytesLimit:
		return codec.ResponseMessageIllegal, p.messageIllegalRemark()
	}
	headerProps, err := ClientProperties(nil, stringBytes(h.Properties))
	if err != nil {
		return codec.ResponseMessageIllegal, malformedPropertiesRemark("properties", err)
	}
	if v, ok := codec.LookupProperty(headerProps, codec.PropertyDelayTimeLevel); ok && !bytes.Equal(v, []byte("0")) {
		return codec.ResponseMessageIllegal, "batch message does not support delay level"
	}
	sysFlag := h.SysFlag & sendSysFlagClientMask
	if tc.TopicFilterType == codec.TopicFilterMultiTag {
		sysFlag |= codec.SysFlagMultiTags
	}
	if v, ok := codec.LookupProperty(headerProps, codec.PropertyUniqClientMessageIDKey); ok {
		r.uniqKey = append(r.uniqKey[:0], v...)
	}
	batchProps := append(r.props[:0], headerProps...)
	if len(batchProps) > 0 && batchProps[len(batchProps)-1] != codec.PropertySeparator {
		batchProps = append(batchProps, codec.PropertySeparator)
	}
	batchProps = codec.AppendProperty(batchProps, codec.PropertyCluster, p.set.ClusterName)
	r.props = batchProps

	arena := r.arena[:0]
	bounds := r.itemBounds[:0]
	reader := codec.NewBatchReader(body)
	n := 0
	for {
		item, ok, err := reader.Next()
		if err != nil {
			return codec.ResponseMessageIllegal, "bad batch body: " + err.Error()
		}
		if !ok {
			break
		}
		start := len(arena)
		if err := codec.ValidateProperties(item.Properties); err == nil {
			arena = append(arena, item.Properties...)
			if len(item.Properties) > 0 && item.Properties[len(item.Properties)-1] != codec.PropertySeparator {
				arena = append(arena, codec.PropertySeparator)
			}
		} else if arena, err = dropEmptyValues(arena, item.Properties, err); err != nil {
			return codec.ResponseMessageIllegal, malformedPropertiesRemark(
				"properties of batch item "+strconv.Itoa(n+1), err)
		}
		arena = append(arena, batchProps...)
		if len(arena)-start > propertiesBytesLimit {
			return codec.ResponseMessageIllegal, p.messageIllegalRemark()
		}
		bounds = append(bounds, len(arena))
		r.batch.Messages = append(r.batch.Messages, codec.Message{
			Topic:          h.Topic,
			QueueID:        r.queueID,
			Flag:           item.Flag,
			SysFlag:        sysFlag,
			BornTimestamp:  h.BornTimestamp,
			ReconsumeTimes: h.ReconsumeTimes,
			Body:           item.Body,
		})
		n++
	}
	if n == 0 {
		return codec.ResponseMessageIllegal, "the batch body holds no message"
	}
	// The arena is complete: now its slices stay put.
	born := bornHost(rc)
	start := 0
	for i := range r.batch.Messages {
		m := &r.batch.Messages[i]
		m.Properties = arena[start:bounds[i]:bounds[i]]
		m.BornHost = born
		m.StoreHost = p.storeHost
		start = bounds[i]
	}
	r.arena, r.itemBounds = arena, bounds
	return codec.ResponseSuccess, ""
}

// ClientProperties checks a producer's properties (PROTOCOL.md §5.4) before anything reads
// them. Well-formed properties come back as they are, without a copy. Pairs with an empty
// value are dropped, into a copy appended to scratch (see dropEmptyValues). Anything else
// malformed fails with the *codec.PropertiesError naming the first bad piece.
func ClientProperties(scratch, props []byte) ([]byte, error) {
	err := codec.ValidateProperties(props)
	if err == nil {
		return props, nil
	}
	return dropEmptyValues(scratch, props, err)
}

// dropEmptyValues follows a failed codec.ValidateProperties(props) (err): when the defect is
// a pair with an empty value, props without such pairs are appended to dst, as Apache
// RocketMQ drops them when it parses and re-encodes a sent message — Java clients send them
// (Message.setKeys with an empty collection sends "KEYS 0x01 0x02"), and refusing them would
// fail sends that Apache RocketMQ takes. Any other defect is returned (dst unchanged): Java
// silently drops those pieces too, but no client writes them, and the readers of a stored
// record disagree on some of them (see codec.ValidateProperties).
func dropEmptyValues(dst, props []byte, err error) ([]byte, error) {
	var pe *codec.PropertiesError
	if !errors.As(err, &pe) || pe.Problem != codec.PropertiesEmptyValue {
		return dst, err
	}
	return codec.AppendPropertiesDroppingEmptyValues(dst, props)
}

// malformedPropertiesRemark is the MESSAGE_ILLEGAL remark for a properties error, e.g.
// "the properties of batch item 2 are malformed: codec: properties: piece 1 at byte 0 has no
// name" (items and pieces count from 1, bytes from 0).
func malformedPropertiesRemark(field string, err error) string {
	var pe *codec.PropertiesError
	if errors.As(err, &pe) {
		err = pe // without the store's wrapping
	}
	return "the " + field + " are malformed: " + err.Error()
}

// copyProperties appends the client's properties without WAIT when dropWait and without
// DELAY when dropDelay, ending with a separator so that more pairs can follow. The common
// case — neither dropped key present — is one copy.
func copyProperties(dst, props []byte, dropWait, dropDelay bool) []byte {
	if (!dropWait || !bytes.Contains(props, []byte(codec.PropertyWaitStoreMsgOK+"\x01"))) &&
		(!dropDelay || !bytes.Contains(props, []byte(codec.PropertyDelayTimeLevel+"\x01"))) {
		dst = append(dst, props...)
		if len(props) > 0 && props[len(props)-1] != codec.PropertySeparator {
			dst = append(dst, codec.PropertySeparator)
		}
		return dst
	}
	switch {
	case dropWait && dropDelay:
		return codec.AppendPropertiesWithout(dst, props, codec.PropertyWaitStoreMsgOK, codec.PropertyDelayTimeLevel)
	case dropWait:
		return codec.AppendPropertiesWithout(dst, props, codec.PropertyWaitStoreMsgOK)
	}
	return codec.AppendPropertiesWithout(dst, props, codec.PropertyDelayTimeLevel)
}

func appendPropertyBytes(dst []byte, key string, value []byte) []byte {
	if len(value) == 0 {
		return dst
	}
	dst = append(dst, key...)
	dst = append(dst, codec.NameValueSeparator)
	dst = append(dst, value...)
	return append(dst, codec.PropertySeparator)
}

func appendPropertyInt(dst []byte, key string, v int64) []byte {
	dst = append(dst, key...)
	dst = append(dst, codec.NameValueSeparator)
	dst = strconv.AppendInt(dst, v, 10)
	return append(dst, codec.PropertySeparator)
}

// waitStoreMsgOK is Message.isWaitStoreMsgOK: absent or "true" (any case).
func waitStoreMsgOK(props string) bool {
	v, ok := codec.LookupProperty(stringBytes(props), codec.PropertyWaitStoreMsgOK)
	return !ok || bytes.EqualFold(v, []byte("true"))
}

// put stores the prepared message or batch and answers, now or (SYNC_FLUSH) from the
// durability callback.
func (p *Plane) put(r *sendRequest) {
	if p.store.IsOSPageCacheBusy() {
		p.pcBusy.Inc()
		r.answer(codec.ResponseSystemBusy, remarkPCBusy, true)
		return
	}
	waitOK := waitStoreMsgOK(r.header.Properties)
	wait := p.set.SyncFlush && waitOK
	replicate := p.replicas != nil && waitOK // SYNC_MASTER: ASYNC_MASTER never waits
	cg := p.groupOf(r.to.Conn())
	grouped := cg != nil && !r.isBatch && len(r.msg.Body) <= maxGroupedBody
	if cg != nil && !grouped {
		p.putBatch(cg) // the sends grouped before this one first: a connection's sends keep their order
	}
	// A send that waits for the disk has its place among the group commit's waiters reserved before it
	// is stored: SYSTEM_BUSY must mean "not stored", as RocketMQ's fast failure does (a producer
	// retries it), also when several event loops fill the last places at once.
	if wait && !p.store.ReserveWait() {
		p.flushQueueFull.Inc()
		r.answer(codec.ResponseSystemBusy, remarkFlushQueueFull, true)
		return
	}
	if grouped {
		p.putGrouped(cg, r, wait, replicate)
		return
	}
	var res store.PutResult
	var err error
	if r.isBatch {
		res, err = p.store.PutMessages(&r.batch)
		for i := range r.batch.Messages {
			r.batch.Messages[i].Body = nil // views into the connection's read buffer
		}
	} else {
		res, err = p.store.PutMessage(&r.msg)
		r.msg.Body = nil
	}
	p.stored(r, res, err, wait, replicate)
}

// stored answers a put's outcome, now or (SYNC_FLUSH, SYNC_MASTER) from the wait callbacks. wait: the
// put waits for the disk, and its place among the group commit's waiters is reserved (ReserveWait).
func (p *Plane) stored(r *sendRequest, res store.PutResult, err error, wait, replicate bool) {
	code, remark := p.putOutcome(res, err)
	if code != codec.ResponseSuccess {
		if wait {
			p.store.ReleaseWait()
		}
		r.answer(code, remark, true)
		return
	}
	r.result = res
	if !wait && !replicate {
		r.answerStored(nil, codec.ResponseSuccess, "")
		return
	}
	// The callbacks record their outcome; the last one answers. Either may run right here (already
	// durable, no slave, a full queue) or on its group commit's goroutine.
	r.flushCode, r.flushRemark, r.flushStored, r.replicaCode = codec.ResponseSuccess, "", true, codec.ResponseSuccess
	r.waits.Store(int32(btoi(wait) + btoi(replicate)))
	if replicate {
		if err := p.replicas.Wait(res.EndOffset(), r.replicated); err != nil {
			r.onReplicated(err, nil)
		}
	}
	if wait {
		p.store.WaitDurableReserved(res.EndOffset(), r.durable)
	}
}

// A connection's single sends of one read pass are stored together when the pass ends (PassEnd): one
// reservation under the put lock, one copy and one publication for all of them, and under SYNC_FLUSH
// without the transient pool one pwrite, where each would take its own (BENCHMARKS.md, "One put per read
// pass"). connGroup is the connection's state for it, kept in its context from its first pass end on (so
// sends wait for a pass end only where one is known to come); sendBatch holds the pass's sends while it
// runs, taken from a pool so that idle connections hold no buffer. Both are used only on the
// connection's event loop.
type connGroup struct {
	cur *sendBatch // the current pass's sends; nil when none
}

type sendBatch struct {
	g     store.PutGroup
	reqs  []*sendRequest
	waits []sendWaits
}

// sendWaits are what a stored send waits for before its answer.
type sendWaits struct{ durable, replicated bool }

// Bounds of one batch: a pass that brings more stores what it has gathered and starts again, so a
// batch's buffer stays small.
const (
	maxBatchSends = 256
	maxBatchBytes = 256 << 10
)

// maxGroupedBody: a larger message is stored on its own (after the group before it), as a put encodes
// it into the store's pooled buffer, so a batch's buffer never grows by more than this and a pass of
// large messages allocates nothing per message.
const maxGroupedBody = 64 << 10

// groupOf is c's group state: nil with grouping off, and before c's first pass ended.
func (p *Plane) groupOf(c netio.Conn) *connGroup {
	if !p.grouping {
		return nil
	}
	g, _ := c.Context().(*connGroup)
	return g
}

// putGrouped adds a single-message send to its connection's batch: checked and encoded now (the
// message's body is a view into the read buffer), stored with the pass's other sends at its end. wait:
// its place among the group commit's waiters is reserved.
func (p *Plane) putGrouped(cg *connGroup, r *sendRequest, wait, replicate bool) {
	if cg.cur == nil {
		cg.cur = p.batches.Get().(*sendBatch)
	}
	b := cg.cur
	st, err := p.store.AddToGroup(&b.g, &r.msg)
	r.msg.Body = nil
	if st != store.PutOK {
		p.stored(r, store.PutResult{Status: st}, err, wait, replicate) // refused: answered, its place given back
		return
	}
	b.reqs = append(b.reqs, r)
	b.waits = append(b.waits, sendWaits{durable: wait, replicated: replicate})
	if len(b.reqs) >= maxBatchSends || b.g.Bytes() >= maxBatchBytes {
		p.putBatch(cg)
	}
}

// putBatch stores the connection's batched sends with one put and answers each as its own put would
// be, then gives the batch back to the pool.
func (p *Plane) putBatch(cg *connGroup) {
	b := cg.cur
	if b == nil {
		return
	}
	cg.cur = nil
	if len(b.reqs) > 0 {
		err := p.store.PutGroup(&b.g)
		for i, r := range b.reqs {
			res := b.g.Results[i]
			var rerr error
			if res.Status != store.PutOK {
				rerr = err
			}
			p.stored(r, res, rerr, b.waits[i].durable, b.waits[i].replicated)
		}
	}
	clear(b.reqs)
	b.reqs = b.reqs[:0]
	b.waits = b.waits[:0]
	b.g.Reset()
	p.batches.Put(b)
}

// PassEnd is called when a read pass of c ends (netio.PassEnder), on c's event loop: the pass's grouped
// sends are stored, before the loop writes the answers. With grouping on (the file store) a
// connection's sends group from its second pass on.
func (p *Plane) PassEnd(c netio.Conn) {
	if !p.grouping {
		return
	}
	cg := p.groupOf(c)
	if cg == nil {
		c.SetContext(&connGroup{})
		return
	}
	p.putBatch(cg)
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// putOutcome maps a put's status to the response code and remark (SendMessageProcessor
// handlePutMessageResult). SUCCESS means the message is stored. The error only explains a
// failed status in the remark; an error beside PUT_OK (a broken store) is UNKNOWN_ERROR, never
// a success.
func (p *Plane) putOutcome(res store.PutResult, err error) (codec.ResponseCode, string) {
	switch res.Status {
	case store.PutOK:
		if err == nil {
			return codec.ResponseSuccess, ""
		}
	case store.MessageIllegal, store.PropertiesSizeExceeded:
		if errors.Is(err, codec.ErrMalformedProperties) {
			// The store's own check (the send paths check a client's properties first): a record
			// re-encoded by the broker, e.g. a send-back of a record an older broker stored.
			return codec.ResponseMessageIllegal, malformedPropertiesRemark("properties", err)
		}
		return codec.ResponseMessageIllegal, p.messageIllegalRemark()
	case store.OSPageCacheBusy:
		p.pcBusy.Inc()
		return codec.ResponseSystemBusy, remarkPCBusy
	case store.CreateMappedFileFailed:
		return codec.ResponseSystemError, remarkCreateMappedFileFailed
	case store.ServiceNotAvailable:
		if err == nil {
			return codec.ResponseServiceNotAvailable, remarkServiceNotAvailable
		}
		return codec.ResponseServiceNotAvailable, remarkServiceNotAvailable + " (" + err.Error() + ")"
	}
	if err == nil {
		return codec.ResponseSystemError, "UNKNOWN_ERROR"
	}
	return codec.ResponseSystemError, "UNKNOWN_ERROR: " + err.Error()
}

// onDurable is the SYNC_FLUSH callback: the message is stored; err says whether it is
// durable. It runs on the group commit's goroutine (or inline in WaitDurable) and only
// queues the response.
//
// rd is the round of the group commit's batch it completes with (nil when alone): the answer joins it,
// so that the answers of one sync are written once per connection (netio.RoundWriter).
func (r *sendRequest) onDurable(err error, rd *round.Round) {
	switch {
	case err == nil:
	case errors.Is(err, store.ErrFlushQueueFull):
		r.p.flushQueueFull.Inc()
		r.flushCode, r.flushRemark, r.flushStored = codec.ResponseSystemBusy, remarkFlushQueueFull, false
	case errors.Is(err, store.ErrFlushTimeout):
		r.flushCode = codec.ResponseFlushDiskTimeout
	default:
		// Stored in the page cache, not known durable (I/O error, shutdown): the Java
		// broker's flushOK=false answer, with the reason.
		r.flushCode, r.flushRemark = codec.ResponseFlushDiskTimeout, "flush failed: "+err.Error()
	}
	r.waitDone(rd)
}

// onReplicated is the SYNC_MASTER callback (ha.Replicas.Wait): a slave acknowledged the message's
// end, or SLAVE_NOT_AVAILABLE / FLUSH_SLAVE_TIMEOUT. In every case the message is stored. rd is the
// round of the acknowledgement that completed it with others (nil when alone).
func (r *sendRequest) onReplicated(err error, rd *round.Round) {
	switch {
	case err == nil:
	case errors.Is(err, ha.ErrSlaveNotAvailable):
		r.replicaCode = codec.ResponseSlaveNotAvailable
	default: // ha.ErrSlaveTimeout, a full or closed queue: not known replicated
		r.replicaCode = codec.ResponseFlushSlaveTimeout
	}
	r.waitDone(rd)
}

// waitDone answers once both waits of a put have finished (the atomic orders their writes before the
// answer), in rd when the last to finish brought one. A replica failure overrides a flush failure, as
// RocketMQ's handlePutMessageResult does.
func (r *sendRequest) waitDone(rd *round.Round) {
	if r.waits.Add(-1) != 0 {
		return
	}
	switch {
	case r.replicaCode != codec.ResponseSuccess:
		r.answerStored(rd, r.replicaCode, "")
	case !r.flushStored:
		r.answer(r.flushCode, r.flushRemark, true)
	default:
		r.answerStored(rd, r.flushCode, r.flushRemark)
	}
}

// answerStored writes the full send response for a stored message or batch, in round rd (nil: none).
// code is SUCCESS unless a wait (durability, replica) said otherwise: FLUSH_DISK_TIMEOUT,
// FLUSH_SLAVE_TIMEOUT, SLAVE_NOT_AVAILABLE.
func (r *sendRequest) answerStored(rd *round.Round, code codec.ResponseCode, remark string) {
	p := r.p
	ids := r.msgIDs[:0] // the offsetMsgId of each record
	if r.isBatch {
		for i, off := range r.batch.PhysicalOffsets {
			if i > 0 {
				ids = append(ids, ',')
			}
			ids = codec.AppendOffsetMsgID(ids, p.storeHost, off)
		}
	} else {
		ids = codec.AppendOffsetMsgID(ids, p.storeHost, r.result.WroteOffset)
	}
	r.msgIDs = ids
	fields := [...]codec.Field{
		codec.StrField("MSG_REGION", defaultRegionID),
		codec.StrField("TRACE_ON", traceOnText),
		codec.BytesField("msgId", ids),
		codec.NumField("queueId", int64(r.queueID)),
		codec.NumField("queueOffset", r.result.QueueOffset),
		codec.BytesField("transactionId", r.uniqKey),
	}
	n := len(fields)
	if len(r.uniqKey) == 0 {
		n-- // transactionId is left out when empty, as a null field is
	}
	r.write(rd, code, remark, fields[:n])
}

// answer writes a response without the send header (errors). withRegion adds MSG_REGION
// and TRACE_ON, which the Java broker puts on every send response once the header parsed.
func (r *sendRequest) answer(code codec.ResponseCode, remark string, withRegion bool) {
	if !withRegion {
		r.write(nil, code, remark, nil)
		return
	}
	fields := [...]codec.Field{codec.StrField("MSG_REGION", defaultRegionID), codec.StrField("TRACE_ON", traceOnText)}
	r.write(nil, code, remark, fields[:])
}

// write answers in round rd (nil: none).
func (r *sendRequest) write(rd *round.Round, code codec.ResponseCode, remark string, fields []codec.Field) {
	to := r.to // r may be back in its pool once Send returns
	to.SendIn(rd, &r.resp, code, remark, fields, nil, r.done)
}
