package bench

import (
	"bytes"
	"strconv"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// encoder builds send frames; writer-owned.
type encoder struct {
	cfg      *ProducerConfig
	cmd      codec.RemotingCommand
	hdr      codec.SendMessageRequestHeader
	body     []byte // the template body (stamp patched per message in the frame buffer)
	batch    []byte // batch body under construction
	props    []byte
	keyBuf   []byte
	seq      int64
	connID   int
	uniq     *codec.UniqKeyGenerator
	lastMs   int64
	bodyOffs []int // offsets of message bodies in the frame buffer, for stamping
	written  int64 // messages stamped so far: the next one's sequence number

	// Single messages without tags or keys (the usual load) are sent from a frame
	// encoded once per queue, with the opaque, bornTimestamp and UNIQ_KEY patched in
	// place: no header map, no JSON encoding, no allocation per message.
	templated bool
	templates []frameTemplate
}

// frameTemplate is one queue's encoded SEND_MESSAGE_V2 frame and where its per-message
// fields are.
type frameTemplate struct {
	queue    int32
	frame    []byte
	opaqueAt int // opaqueDigits digits
	bornAt   int // bornDigits digits
	keyAt    int // the UNIQ_KEY (keyLen bytes)
	keyLen   int
	bodyAt   int
}

// Placeholders the templates are encoded with, found again in the frame by value: each
// has exactly the width every real value has (opaques are ≥ opaqueBase; millisecond
// timestamps have 13 digits from 2001 to 2286).
const (
	opaqueDigits      = 10
	bornDigits        = 13
	placeholderOpaque = 1987654321
	placeholderBornMs = 1234567890123
)

func newEncoder(cfg *ProducerConfig, connID int, uniq *codec.UniqKeyGenerator) *encoder {
	e := &encoder{cfg: cfg, connID: connID, uniq: uniq, body: make([]byte, cfg.MessageBytes)}
	e.templated = cfg.Batch == 1 && len(cfg.Tags) == 0 && !cfg.Keys
	fillBody(e.body)
	code := codec.RequestSendMessageV2
	if cfg.Batch > 1 {
		code = codec.RequestSendBatchMessage
	}
	flag := int32(0)
	if cfg.Oneway {
		flag = codec.FlagOneway
	}
	e.cmd = codec.RemotingCommand{
		Code: int32(code), Language: codec.LanguageJava, Version: clientVersion, Flag: flag,
		ExtFields: make(map[string]string, 16), SerializeType: codec.SerializeJSON,
	}
	// A topic the broker auto-creates on the first send gets this many queues (capped by
	// TBW102's): the queues this run sends to.
	autoQueues := cfg.Queues
	if autoQueues == 0 {
		autoQueues = defaultQueues
	}
	e.hdr = codec.SendMessageRequestHeader{
		ProducerGroup:         cfg.ProducerGroup,
		Topic:                 cfg.Topic,
		DefaultTopic:          autoCreateTemplateTopic,
		DefaultTopicQueueNums: int32(autoQueues),
		Batch:                 cfg.Batch > 1,
	}
	return e
}

// appendProperties appends one message's properties: UNIQ_KEY (as the Java client sets
// it), TAGS and KEYS when asked.
func (e *encoder) appendProperties(dst []byte, now time.Time) []byte {
	e.keyBuf = e.uniq.Append(e.keyBuf[:0], now)
	dst = append(dst, codec.PropertyUniqClientMessageIDKey...)
	dst = append(dst, codec.NameValueSeparator)
	dst = append(dst, e.keyBuf...)
	dst = append(dst, codec.PropertySeparator)
	if len(e.cfg.Tags) > 0 {
		dst = codec.AppendProperty(dst, codec.PropertyTags, e.cfg.Tags[int(e.seq%int64(len(e.cfg.Tags)))])
	}
	if e.cfg.Keys {
		dst = append(dst, codec.PropertyKeys...)
		dst = append(dst, codec.NameValueSeparator)
		dst = append(dst, "mqbench-"...)
		dst = strconv.AppendInt(dst, int64(e.connID), 10)
		dst = append(dst, '-')
		dst = strconv.AppendInt(dst, e.seq, 10)
		dst = append(dst, codec.PropertySeparator)
	}
	e.seq++
	return dst
}

// appendRequest appends one send request of msgs messages for queue with the given
// opaque to buf, and notes where the message bodies are.
func (e *encoder) appendRequest(buf []byte, opaque, queue int32, msgs int, now time.Time) ([]byte, error) {
	if e.templated && msgs == 1 && opaque >= opaqueBase {
		if t := e.template(queue); t != nil {
			return e.appendFromTemplate(buf, t, opaque, now), nil
		}
	}
	return e.encodeRequest(buf, opaque, queue, msgs, now, now.UnixMilli())
}

// template returns queue's frame template, encoding it on first use; nil when the frame
// cannot be templated (a placeholder not found exactly once), and then the queue is
// encoded in full every time.
func (e *encoder) template(queue int32) *frameTemplate {
	for i := range e.templates {
		if e.templates[i].queue == queue {
			if e.templates[i].frame == nil {
				return nil
			}
			return &e.templates[i]
		}
	}
	t := frameTemplate{queue: queue}
	offs := e.bodyOffs
	e.bodyOffs = nil
	frame, err := e.encodeRequest(nil, placeholderOpaque, queue, 1, time.Now(), placeholderBornMs)
	bodyOffs := e.bodyOffs
	e.bodyOffs = offs
	key := e.keyBuf
	find := func(needle []byte) int {
		if len(needle) == 0 || bytes.Count(frame, needle) != 1 {
			return -1
		}
		return bytes.Index(frame, needle)
	}
	t.opaqueAt = find(strconv.AppendInt(nil, placeholderOpaque, 10))
	t.bornAt = find(strconv.AppendInt(nil, placeholderBornMs, 10))
	t.keyAt, t.keyLen = find(key), len(key)
	if err == nil && t.opaqueAt >= 0 && t.bornAt >= 0 && t.keyAt >= 0 && len(bodyOffs) == 1 {
		t.frame, t.bodyAt = frame, bodyOffs[0]
	}
	e.templates = append(e.templates, t)
	if t.frame == nil {
		return nil
	}
	return &e.templates[len(e.templates)-1]
}

// appendFromTemplate appends t's frame with this message's opaque, bornTimestamp and a
// new UNIQ_KEY.
func (e *encoder) appendFromTemplate(buf []byte, t *frameTemplate, opaque int32, now time.Time) []byte {
	start := len(buf)
	buf = append(buf, t.frame...)
	putDigits(buf[start+t.opaqueAt:start+t.opaqueAt+opaqueDigits], uint64(opaque))
	putDigits(buf[start+t.bornAt:start+t.bornAt+bornDigits], uint64(now.UnixMilli()))
	e.keyBuf = e.uniq.Append(e.keyBuf[:0], now)
	if len(e.keyBuf) == t.keyLen { // always: keys have a fixed width for one IP family
		copy(buf[start+t.keyAt:], e.keyBuf)
	}
	e.seq++
	e.bodyOffs = append(e.bodyOffs, start+t.bodyAt)
	return buf
}

// putDigits writes v in decimal into dst, zero-padded on the left to len(dst) digits.
func putDigits(dst []byte, v uint64) {
	for i := len(dst) - 1; i >= 0; i-- {
		dst[i] = byte('0' + v%10)
		v /= 10
	}
}

// encodeRequest is appendRequest without a template: the header encoded in full.
func (e *encoder) encodeRequest(buf []byte, opaque, queue int32, msgs int, now time.Time, bornMs int64) ([]byte, error) {
	e.hdr.QueueID = queue
	e.hdr.BornTimestamp = bornMs
	var itemBodyOffs [64]int
	offs := itemBodyOffs[:0]
	if e.cfg.Batch > 1 {
		e.batch = e.batch[:0]
		for range msgs {
			e.props = e.appendProperties(e.props[:0], now)
			offs = append(offs, len(e.batch)+20) // TOTALSIZE, MAGICCODE, BODYCRC, FLAG, BODYLEN
			e.batch = codec.AppendBatchItem(e.batch, 0, e.body, e.props)
		}
		e.hdr.Properties = ""
		e.cmd.Body = e.batch
	} else {
		e.props = e.appendProperties(e.props[:0], now)
		e.hdr.Properties = string(e.props)
		offs = append(offs, 0)
		e.cmd.Body = e.body
	}
	e.hdr.EncodeV2(e.cmd.ExtFields)
	e.cmd.Opaque = opaque
	start := len(buf)
	buf, err := e.cmd.AppendFrame(buf)
	if err != nil {
		return buf[:start], err
	}
	bodyStart := len(buf) - len(e.cmd.Body)
	for _, o := range offs {
		e.bodyOffs = append(e.bodyOffs, bodyStart+o)
	}
	return buf, nil
}

// stamp writes the send time into every message body in buf, and each its sequence
// number (connection id and count) when the bodies have room.
func (e *encoder) stamp(buf []byte, unixNanos int64) {
	e.stampRange(buf, 0, len(e.bodyOffs), unixNanos)
}

// stampRange stamps the bodies from..to-1 of buf (in the order they were appended) with
// one send time and the next sequence numbers.
func (e *encoder) stampRange(buf []byte, from, to int, unixNanos int64) {
	if e.cfg.MessageBytes < BodyStampBytes {
		e.written += int64(to - from)
		return
	}
	for _, o := range e.bodyOffs[from:to] {
		stampBody(buf[o:o+BodyStampBytes], unixNanos)
		if e.cfg.MessageBytes >= BodySeqBytes {
			stampBodySeq(buf[o:o+BodySeqBytes], bodySeq(e.connID, e.written))
		}
		e.written++
	}
}
