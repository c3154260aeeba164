package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// The data plane: send (send.go), pull (pull.go) with long polling (longpoll.go), query
// and view (query.go), queue offsets and times (queueinfo.go), delayed delivery (delay.go),
// retry and DLQ (sendback.go), transactions (transaction.go), request-reply (reply.go).
//
// # Where each request runs
//
//	SEND_MESSAGE 10, SEND_MESSAGE_V2 310,    event loop: the put copies into mapped memory;
//	SEND_BATCH_MESSAGE 320                   SYNC_FLUSH answers from the group-commit callback
//	PULL_MESSAGE 11, LITE_PULL_MESSAGE 361   event loop when the data is hot, else pull pool
//	                                         (pull.go explains the rule); long polling parks
//	                                         the request in the hold service, never a goroutine
//	QUERY_MESSAGE 12, VIEW_MESSAGE_BY_ID 33, query pool (index walks and record reads may
//	SEARCH_OFFSET_BY_TIMESTAMP 29,           fault pages in from disk)
//	GET_EARLIEST_MSG_STORETIME 32
//	GET_MAX_OFFSET 30, GET_MIN_OFFSET 31     event loop (in-memory counters)
//	CONSUMER_SEND_MSG_BACK 36,               event loop when the record named is in the hot
//	END_TRANSACTION 37                       part of the CommitLog, else query pool
//	                                         (sendback.go, transaction.go)
//	SEND_REPLY_MESSAGE 324, _V2 325          event loop; answered when the push to the
//	                                         requester is answered (reply.go)
//
// Delayed delivery (delay.go) and the transaction check service (transaction.go) run on
// their own goroutines.
//
// Processors that go to a pool decode their header on the event loop and hand the pool
// only owned values: netio reuses a connection's command (and its ExtFields map) for the
// next frame as soon as the inline call returns.
//
// # Responses without a map
//
// The hot responses (every send, every pull) are encoded straight into a pooled buffer
// by appendResponseHeader, byte for byte what codec would write for the same command,
// so that answering allocates nothing. Bodies of records (pull, query, view) are slices
// of mapped CommitLog memory written with one vectored write (netio Conn.WriteFrame);
// the store's references on them are released when netio is done with them.

// Response field values the Java broker adds to every send response (BrokerConfig
// regionId and traceOn defaults).
const (
	defaultRegionID = "DefaultRegion"
	traceOnText     = "true"
)

// dataPlane holds the data plane's pools and settings derived from the config once.
// Safe for concurrent use.
type dataPlane struct {
	sendRequests sync.Pool // *sendRequest
	frames       sync.Pool // *outFrame
	pulls        sync.Pool // *pullRequest

	syncFlush      bool
	maxMessageSize int
	clusterName    string
	brokerIP       string // brokerIP1 as text, for remarks
	maxDelayLevel  int
	// hotPullMaxBehindBytes: a pull whose data starts at most this far behind the
	// CommitLog's end runs on the event loop (pull.go).
	hotPullMaxBehindBytes int64

	// Counters resolved once (a labelled look-up per pull would cost a hash and more).
	pullsOnLoop, pullsOnPool, pullReruns prometheus.Counter
}

func newDataPlane(b *Broker, delayLevels int) *dataPlane {
	d := &dataPlane{
		syncFlush:      b.cfg.FlushDiskType == store.SyncFlush,
		maxMessageSize: b.cfg.MaxMessageSize,
		clusterName:    b.cfg.BrokerClusterName,
		brokerIP:       b.storeHost.Addr().String(),
		maxDelayLevel:  delayLevels,
	}
	d.hotPullMaxBehindBytes = hotPullThreshold(totalMemoryBytes(), b.cfg.AccessMessageInMemoryMaxRatio)
	d.pullsOnLoop = b.metrics.pullRuns.WithLabelValues("loop")
	d.pullsOnPool = b.metrics.pullRuns.WithLabelValues("pool")
	d.pullReruns = b.metrics.pullRuns.WithLabelValues("rerun")
	d.sendRequests.New = func() any { return newSendRequest(b) }
	d.frames.New = func() any {
		f := &outFrame{pool: &d.frames}
		f.done = f.finish
		return f
	}
	d.pulls.New = func() any { return newPullRequest(b) }
	return d
}

// initDataPlane registers the data-plane processors (send, batch send, pull, query,
// view, max/min offset, search by timestamp, earliest store time), creates the
// long-polling hold service and hooks it to the store's arriving listener, and adds
// its services. It runs after initControlPlane (the managers exist).
func (b *Broker) initDataPlane() error {
	levels, err := ParseDelayLevels(b.cfg.MessageDelayLevel)
	if err != nil {
		return fmt.Errorf("%w: key messageDelayLevel: %w", ErrConfig, err)
	}
	// The store writes a SCHEDULE_TOPIC_XXXX entry's delivery time into its tag field,
	// so it needs the level table before the first delayed send.
	b.store.SetDelayLevelTable(levels)
	b.data = newDataPlane(b, len(levels))
	b.uniqKeys = codec.NewUniqKeyGenerator(b.storeHost.Addr(), os.Getpid(), rand.Int32())

	b.pullHold = newPullRequestHoldService(b, defaultHoldConfig(b.cfg))
	b.addService("pull request hold", b.pullHold.Start, b.pullHold.Stop)
	// Delayed delivery, send-back, transactions and request-reply (delay.go, sendback.go,
	// transaction.go, reply.go).
	if err := b.initSchedule(levels); err != nil {
		return err
	}
	if err := b.initTransactions(); err != nil {
		return err
	}
	b.store.SetArrivingListener(b.onMessageArriving)

	b.register(codec.RequestSendMessage, nil, b.processSendMessage)
	b.register(codec.RequestSendMessageV2, nil, b.processSendMessage)
	b.register(codec.RequestSendBatchMessage, nil, b.processSendMessage)
	b.register(codec.RequestPullMessage, nil, b.processPullMessage)
	b.register(codec.RequestLitePullMessage, nil, b.processPullMessage)
	b.register(codec.RequestQueryMessage, nil, b.processQueryMessage)
	b.register(codec.RequestViewMessageByID, nil, b.processViewMessageByID)
	b.register(codec.RequestGetMaxOffset, nil, b.processGetMaxOffset)
	b.register(codec.RequestGetMinOffset, nil, b.processGetMinOffset)
	b.register(codec.RequestSearchOffsetByTimestamp, nil, b.processSearchOffsetByTimestamp)
	b.register(codec.RequestGetEarliestMsgStoretime, nil, b.processGetEarliestMsgStoretime)
	b.register(codec.RequestConsumerSendMsgBack, nil, b.processConsumerSendMsgBack)
	b.register(codec.RequestEndTransaction, nil, b.processEndTransaction)
	b.register(codec.RequestSendReplyMessage, nil, b.processSendReplyMessage)
	b.register(codec.RequestSendReplyMessageV2, nil, b.processSendReplyMessage)
	return nil
}

// replyTo is what a response needs of its request after the request's command is gone
// (netio reuses it for the next frame).
type replyTo struct {
	conn          netio.Conn
	opaque        int32
	serializeType codec.SerializeType
}

func replyToOf(rc *RequestContext) replyTo {
	return replyTo{conn: rc.Conn, opaque: rc.Cmd.Opaque, serializeType: rc.Cmd.SerializeType}
}

// requestContext rebuilds a RequestContext for pool submission: the pool's fast-failure
// answer needs the opaque and serialize type, nothing else of the command.
func (t replyTo) requestContext(cmd *codec.RemotingCommand, received time.Time) *RequestContext {
	cmd.Opaque, cmd.SerializeType = t.opaque, t.serializeType
	return &RequestContext{Conn: t.conn, Cmd: cmd, Received: received}
}

// extField is one custom-header field of a response encoded without a map. Exactly one
// of s, b (text) or num (isNum) carries the value; every value travels as a JSON string.
type extField struct {
	key   string
	s     string
	b     []byte
	num   int64
	isNum bool
}

func numField(key string, v int64) extField    { return extField{key: key, num: v, isNum: true} }
func strField(key, v string) extField          { return extField{key: key, s: v} }
func bytesField(key string, v []byte) extField { return extField{key: key, b: v} }

func (f *extField) appendValue(dst []byte) []byte {
	if f.isNum {
		return strconv.AppendInt(dst, f.num, 10)
	}
	dst = append(dst, f.s...)
	return append(dst, f.b...)
}

// jsonPlain reports whether s needs no escaping inside a JSON string: printable ASCII
// without '"' and '\'. Anything else goes through codec's general encoder.
func jsonPlain[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// errFrameTooLarge: header plus body do not fit the int32 frame length.
var errFrameTooLarge = errors.New("broker: response frame too large")

// appendResponseHeader appends the frame of a response to the request described by to —
// length word, header word, header — with the length word counting bodyLen more bytes
// that the caller writes after it (WriteFrame bodies). fields must be sorted by key (the
// order codec writes). For a JSON request whose remark and values need no escaping it
// writes the JSON directly without allocating; otherwise it builds a codec command.
// Both produce identical bytes (data_test.go checks).
func appendResponseHeader(dst []byte, to replyTo, code codec.ResponseCode, remark string,
	fields []extField, bodyLen int) ([]byte, error) {
	if to.serializeType == codec.SerializeJSON && jsonPlain(remark) && fieldsPlainSorted(fields) {
		return appendJSONResponseHeader(dst, to.opaque, code, remark, fields, bodyLen)
	}
	return appendCodecResponseHeader(dst, to, code, remark, fields, bodyLen)
}

func fieldsPlainSorted(fields []extField) bool {
	for i := range fields {
		f := &fields[i]
		if !jsonPlain(f.key) || !jsonPlain(f.s) || !jsonPlain(f.b) {
			return false
		}
		if i > 0 && fields[i-1].key >= f.key {
			return false
		}
	}
	return true
}

// appendJSONResponseHeader writes what codec's JSON header encoder writes for a
// response (language JAVA, version ServerVersion, flag FlagResponse, remark only when
// set, extFields only when there are fields).
func appendJSONResponseHeader(dst []byte, opaque int32, code codec.ResponseCode, remark string,
	fields []extField, bodyLen int) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"language":"JAVA","version":`...)
	dst = strconv.AppendInt(dst, int64(codec.ServerVersion), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(codec.FlagResponse), 10)
	if remark != "" {
		dst = append(dst, `,"remark":"`...)
		dst = append(dst, remark...)
		dst = append(dst, '"')
	}
	if len(fields) > 0 {
		dst = append(dst, `,"extFields":{`...)
		for i := range fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, fields[i].key...)
			dst = append(dst, `":"`...)
			dst = fields[i].appendValue(dst)
			dst = append(dst, '"')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, '}')
	headerLen := len(dst) - start - 8
	frameLen := 4 + int64(headerLen) + int64(bodyLen)
	if frameLen > math.MaxInt32 {
		return dst[:start], errFrameTooLarge
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(frameLen))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(codec.SerializeJSON)<<24|uint32(headerLen))
	return dst, nil
}

// appendCodecResponseHeader is the general path: a codec command with an ExtFields map,
// in the request's serialize type, its length word then extended by bodyLen.
func appendCodecResponseHeader(dst []byte, to replyTo, code codec.ResponseCode, remark string,
	fields []extField, bodyLen int) ([]byte, error) {
	req := codec.RemotingCommand{Opaque: to.opaque, SerializeType: to.serializeType}
	resp := codec.NewResponse(&req, code, remark)
	if len(fields) > 0 {
		resp.ExtFields = make(map[string]string, len(fields))
		for i := range fields {
			resp.ExtFields[fields[i].key] = string(fields[i].appendValue(nil))
		}
	}
	start := len(dst)
	dst, err := resp.AppendFrameHeader(dst)
	if err != nil {
		return dst, err
	}
	frameLen := int64(binary.BigEndian.Uint32(dst[start:])) + int64(bodyLen)
	if frameLen > math.MaxInt32 {
		return dst[:start], errFrameTooLarge
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(frameLen))
	return dst, nil
}

// outFrame is a pooled response in flight: its header buffer and whatever keeps its
// bodies valid (a pull result, a query result, a record reference). done (bound once,
// so passing it allocates nothing) releases them and returns the frame to its pool;
// netio calls it once the bytes are written or copied.
type outFrame struct {
	buf     []byte
	bodies  [][]byte
	get     *store.GetMessageResult
	query   *store.QueryMessageResult
	release func()
	pool    *sync.Pool
	done    func()
}

// maxPooledFrameBytes keeps an unusually large header buffer (a batch's long msgId list)
// out of the pool.
const maxPooledFrameBytes = 64 << 10

func (f *outFrame) finish() {
	if f.get != nil {
		f.get.Release()
		f.get = nil
	}
	if f.query != nil {
		f.query.Release()
		f.query = nil
	}
	if f.release != nil {
		f.release()
		f.release = nil
	}
	clear(f.bodies)
	f.bodies = f.bodies[:0]
	f.buf = f.buf[:0]
	if cap(f.buf) > maxPooledFrameBytes {
		f.buf = nil
	}
	f.pool.Put(f)
}

func (d *dataPlane) getFrame() *outFrame { return d.frames.Get().(*outFrame) }

// writeFrame encodes the response header into f and writes it with bodies (which f
// keeps valid until netio is done with them). f is released in every case.
func (b *Broker) writeFrame(to replyTo, f *outFrame, code codec.ResponseCode, remark string,
	fields []extField, bodies [][]byte) {
	bodyLen := 0
	for _, body := range bodies {
		bodyLen += len(body)
	}
	buf, err := appendResponseHeader(f.buf[:0], to, code, remark, fields, bodyLen)
	if err != nil {
		f.done()
		b.logger.Warn("broker: cannot encode response", "code", code, "err", err)
		b.respond(to, codec.ResponseSystemError, "response encoding failed: "+err.Error(), nil)
		return
	}
	f.buf = buf
	if err := to.conn.WriteFrame(f.buf, bodies, f.done); err != nil {
		b.metrics.replyErrors.Inc()
	}
}

// respond answers a request without a body.
func (b *Broker) respond(to replyTo, code codec.ResponseCode, remark string, fields []extField) {
	b.writeFrame(to, b.data.getFrame(), code, remark, fields, nil)
}

// headerErrorRemark turns a typed-header decode error into the remark the Java broker
// gives (its RemotingCommandException text names the field).
func headerErrorRemark(err error) string {
	var fe *codec.FieldError
	if errors.As(err, &fe) {
		if errors.Is(fe.Err, codec.ErrMissingField) {
			return "the custom field <" + fe.Field + "> is null"
		}
		return "the custom field <" + fe.Field + "> has a bad value: " + strconv.Quote(fe.Value)
	}
	return err.Error()
}
