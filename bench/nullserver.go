package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ringmq/ringmq/codec"
)

// The null server is the limit of the suite: a RocketMQ-protocol server that answers every
// send SEND_OK at once and stores nothing, so what a broker costs beyond it is the cost of
// being a broker. It speaks the remoting framing (PROTOCOL §1: length word, header word,
// header, body) and answers what a producer needs:
//
//   - SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320): SUCCESS with a
//     SendMessageResponseHeader (msgId an offsetMsgId of this server and a byte counter,
//     queueId as asked, queueOffset counting up per queue id over all topics, MSG_REGION,
//     TRACE_ON), or nothing for a oneway request;
//   - GET_ROUTEINFO_BY_TOPIC (105): a route naming this server as the master of every
//     topic, with the queue count UPDATE_AND_CREATE_TOPIC gave it (NullServerConfig.Queues
//     for any other topic, TBW102 included);
//   - UPDATE_AND_CREATE_TOPIC (17), HEART_BEAT (34), UNREGISTER_CLIENT (35): SUCCESS;
//   - anything else: REQUEST_CODE_NOT_SUPPORTED, as a broker answers a code it lacks.
//
// Cost per message is the point, so a connection is one goroutine that does one read and
// one write per batch of frames: it reads whatever is available, answers every complete
// frame into one output buffer and writes it at once. A JSON send header is scanned for
// code, opaque, flag and queueId without decoding (no map, no strings), and the answer is
// appended from a pre-rendered prefix with the numbers patched in: no allocation per
// message. Other requests, and headers in the ROCKETMQ serialization or an unusual shape,
// go through the full codec decoder. A malformed frame closes its connection only.

// NullServerConfig configures StartNullServer.
type NullServerConfig struct {
	// Listen is the TCP address to listen on ("127.0.0.1:0" picks a port).
	Listen string
	// Advertise is the address routes name (default: the listener's, with 127.0.0.1 for an
	// unspecified IP).
	Advertise string
	// Queues is the queue count of a topic UPDATE_AND_CREATE_TOPIC did not size.
	Queues int
	// BrokerName and Cluster appear in routes.
	BrokerName string
	Cluster    string
	// MaxFrameBytes caps a frame (<= 0: codec.DefaultMaxFrameBytes, what a producer may send).
	MaxFrameBytes int
	// Engine is NullEngineGoroutine (a goroutine per connection) or NullEngineGnet.
	Engine string
}

// DefaultNullServerConfig listens on a free loopback port with 8 queues per topic.
func DefaultNullServerConfig() NullServerConfig {
	return NullServerConfig{Listen: "127.0.0.1:0", Queues: 8, BrokerName: "null-broker", Cluster: "NullCluster", Engine: NullEngineGoroutine}
}

// Validate reports the first field out of range.
func (c *NullServerConfig) Validate() error {
	switch {
	case c.Listen == "":
		return fmt.Errorf("%w: Listen (--listen) is empty", ErrConfig)
	case c.Queues < 1 || c.Queues > nullQueueSlots:
		return fmt.Errorf("%w: Queues (--queues) %d not in [1, %d]", ErrConfig, c.Queues, nullQueueSlots)
	case c.BrokerName == "" || c.Cluster == "":
		return fmt.Errorf("%w: BrokerName (--broker-name) and Cluster (--cluster) must be set", ErrConfig)
	case c.Engine != NullEngineGoroutine && c.Engine != NullEngineGnet:
		return fmt.Errorf("%w: Engine (--engine) %q is not %s or %s", ErrConfig, c.Engine, NullEngineGoroutine, NullEngineGnet)
	}
	return nil
}

// nullQueueSlots bounds the queue ids with their own offset counter; higher ids share
// the last slot.
const nullQueueSlots = 1024

// nullReadBytes is a connection's read buffer; a bigger frame grows it for as long as it
// is being read.
const nullReadBytes = 64 << 10

// NullServer is a running null server. Its methods are safe for concurrent use.
type NullServer struct {
	cfg       NullServerConfig
	log       *slog.Logger
	ln        net.Listener // goroutine engine
	gn        *nullGnet    // gnet engine
	addr      string
	storeHost netip.AddrPort
	// prefix is a send response's JSON header up to the opaque value.
	prefix []byte

	offsets  [nullQueueSlots]atomic.Int64
	physical atomic.Int64 // bytes "stored": the msgId's CommitLog offset

	mu struct {
		sync.Mutex
		topics map[string]int32 // topic → queues, from UPDATE_AND_CREATE_TOPIC
		conns  map[net.Conn]struct{}
		closed bool
	}
	wg sync.WaitGroup
}

// StartNullServer listens and serves until Close. logger may be nil (discard).
func StartNullServer(cfg NullServerConfig, logger *slog.Logger) (*NullServer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Engine == NullEngineGnet {
		gn, err := startNullGnet(cfg)
		if err != nil {
			return nil, err
		}
		s, err := newNullServer(cfg, logger, gn.addr)
		if err != nil {
			return nil, errors.Join(err, gn.stop())
		}
		s.gn, gn.s = gn, s
		close(gn.ready)
		return s, nil
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("bench: null server: %w", err)
	}
	s, err := newNullServer(cfg, logger, ln.Addr().(*net.TCPAddr).AddrPort())
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	s.ln = ln
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// newNullServer is the server's state without a listener (tests and the fuzz target
// drive connections directly).
func newNullServer(cfg NullServerConfig, logger *slog.Logger, listen netip.AddrPort) (*NullServer, error) {
	if cfg.MaxFrameBytes <= 0 {
		cfg.MaxFrameBytes = codec.DefaultMaxFrameBytes
	}
	adv := cfg.Advertise
	if adv == "" {
		ip := listen.Addr().Unmap()
		if ip.IsUnspecified() {
			ip = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		adv = netip.AddrPortFrom(ip, listen.Port()).String()
	}
	host, err := netip.ParseAddrPort(adv)
	if err != nil {
		return nil, fmt.Errorf("%w: Advertise (--advertise) %q: %w", ErrConfig, adv, err)
	}
	s := &NullServer{cfg: cfg, log: logger, addr: adv, storeHost: host}
	s.prefix = fmt.Appendf(nil, `{"code":%d,"language":"JAVA","version":%d,"opaque":`, codec.ResponseSuccess, codec.ServerVersion())
	s.mu.topics = map[string]int32{}
	s.mu.conns = map[net.Conn]struct{}{}
	return s, nil
}

// Addr is the address routes name (host:port).
func (s *NullServer) Addr() string { return s.addr }

// Close stops accepting, closes every connection and waits for their goroutines.
func (s *NullServer) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.closed = true
	for nc := range s.mu.conns {
		_ = nc.Close()
	}
	s.mu.Unlock()
	if s.gn != nil {
		return s.gn.stop()
	}
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

func (s *NullServer) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // closed
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.mu.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.serveConn(nc)
			s.mu.Lock()
			delete(s.mu.conns, nc)
			s.mu.Unlock()
		}()
	}
}

// serveConn is one connection's loop: read what is there, answer every complete frame
// into one buffer, write it, keep the partial tail for the next read.
func (s *NullServer) serveConn(nc net.Conn) {
	defer nc.Close()
	c := nullConn{s: s, in: make([]byte, nullReadBytes), out: make([]byte, 0, nullReadBytes)}
	for {
		n, err := nc.Read(c.in[c.n:])
		c.n += n
		if n > 0 {
			ferr := c.consume()
			if len(c.out) > 0 {
				if _, werr := nc.Write(c.out); werr != nil {
					return
				}
				c.out = c.out[:0]
			}
			if ferr != nil {
				s.log.Warn("null server: closing a connection after a malformed frame", "remote", nc.RemoteAddr().String(), "err", ferr)
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// nullConn is one connection's buffers; owned by its goroutine.
type nullConn struct {
	s   *NullServer
	in  []byte // read buffer; in[:n] holds unanswered bytes
	n   int
	out []byte // answers of the current batch
}

// consume answers every complete frame of in[:n] into out and moves the partial tail to
// the front, growing in when the next frame is bigger than it. A framing or decoding
// error means the stream cannot go on: the caller closes the connection (after writing
// the answers before it).
func (c *nullConn) consume() error {
	buf := c.in[:c.n]
	off := 0
	defer func() { c.n = copy(c.in, buf[off:]) }()
	for {
		size, err := codec.CutFrame(buf[off:], c.s.cfg.MaxFrameBytes)
		if err != nil {
			return err
		}
		if size == 0 {
			break
		}
		if c.out, err = c.s.answer(c.out, buf[off+4:off+size]); err != nil {
			return err
		}
		off += size
	}
	rest := len(buf) - off
	switch {
	case rest >= 4:
		// CutFrame has checked the length word against MaxFrameBytes.
		if total := int(binary.BigEndian.Uint32(buf[off:])) + 4; total > len(c.in) {
			grown := make([]byte, total)
			copy(grown, buf[off:])
			c.in, buf, off = grown, grown[:rest], 0
		}
	case rest == 0 && len(c.in) > nullReadBytes:
		c.in = make([]byte, nullReadBytes) // the big frame is answered: give its buffer back
	}
	return nil
}

// answer appends the answer to one frame (payload: after the length word) to out.
func (s *NullServer) answer(out, payload []byte) ([]byte, error) {
	hw := binary.BigEndian.Uint32(payload)
	headerLen := int(hw & 0xFFFFFF)
	header, body := payload[4:4+headerLen], payload[4+headerLen:]
	if codec.SerializeType(hw>>24) == codec.SerializeJSON {
		if r, ok := scanNullRequest(header); ok && isSend(r.code) {
			if r.flag&codec.FlagResponse != 0 {
				return out, nil
			}
			return s.answerSend(out, r, body, true), nil
		}
	}
	cmd, err := codec.DecodeCommand(payload)
	if err != nil {
		return out, err
	}
	return s.answerDecoded(out, cmd)
}

func isSend(code int32) bool {
	switch codec.RequestCode(code) {
	case codec.RequestSendMessage, codec.RequestSendMessageV2, codec.RequestSendBatchMessage:
		return true
	}
	return false
}

// nullRequest is what the null server reads of a send's header.
type nullRequest struct {
	code, opaque, flag int32
	queueID            int32 // -1 when absent or negative (the broker picks: queue 0)
}

// answerSend takes the send's queue offsets and appends its SEND_OK (nothing for a
// oneway request). json says the request's header was JSON, so the answer can be
// rendered from the template; otherwise it goes through the codec.
func (s *NullServer) answerSend(out []byte, r nullRequest, body []byte, json bool) []byte {
	msgs := 1
	if codec.RequestCode(r.code) == codec.RequestSendBatchMessage {
		if msgs = countBatchItems(body); msgs == 0 {
			return s.appendError(out, r, codec.ResponseMessageIllegal, "the batch body holds no well-formed message")
		}
	}
	queue := max(r.queueID, 0)
	slot := min(int(queue), nullQueueSlots-1)
	offset := s.offsets[slot].Add(int64(msgs)) - int64(msgs)
	phys := s.physical.Add(int64(len(body))) - int64(len(body))
	if r.flag&codec.FlagOneway != 0 {
		return out
	}
	if !json {
		ids := s.appendMsgIDs(nil, r.code, body, phys)
		resp := &codec.RemotingCommand{Code: int32(codec.ResponseSuccess), Language: codec.LanguageJava, Version: codec.ServerVersion(),
			Opaque: r.opaque, Flag: codec.FlagResponse, SerializeType: codec.SerializeRocketMQ, ExtFields: map[string]string{}}
		h := codec.SendMessageResponseHeader{MsgID: string(ids), QueueID: queue, QueueOffset: offset, MsgRegion: nullMsgRegion, TraceOn: codec.Some(true)}
		h.Encode(resp.ExtFields)
		return appendFrameOrDrop(out, resp)
	}
	// The header in codec's JSON layout (sorted extFields keys), so that a response here
	// and one from the full encoder are the same bytes.
	start := len(out)
	out = append(out, 0, 0, 0, 0, 0, 0, 0, 0)
	out = append(out, s.prefix...)
	out = strconv.AppendInt(out, int64(r.opaque), 10)
	out = append(out, `,"flag":1,"extFields":{"MSG_REGION":"`+nullMsgRegion+`","TRACE_ON":"true","msgId":"`...)
	out = s.appendMsgIDs(out, r.code, body, phys)
	out = append(out, `","queueId":"`...)
	out = strconv.AppendInt(out, int64(queue), 10)
	out = append(out, `","queueOffset":"`...)
	out = strconv.AppendInt(out, offset, 10)
	out = append(out, `"}}`...)
	headerLen := len(out) - start - 8
	binary.BigEndian.PutUint32(out[start:], uint32(4+headerLen))
	binary.BigEndian.PutUint32(out[start+4:], uint32(codec.SerializeJSON)<<24|uint32(headerLen))
	return out
}

// nullMsgRegion is the MSG_REGION a broker reports by default.
const nullMsgRegion = "DefaultRegion"

// appendMsgIDs appends the offsetMsgId of each message of the send, comma-separated for a
// batch (as a broker answers one), the first at CommitLog offset phys.
func (s *NullServer) appendMsgIDs(out []byte, code int32, body []byte, phys int64) []byte {
	if codec.RequestCode(code) != codec.RequestSendBatchMessage {
		return codec.AppendOffsetMsgID(out, s.storeHost, phys)
	}
	for i := 0; len(body) >= 4; i++ {
		size := int(binary.BigEndian.Uint32(body))
		if size < batchItemMinBytes || size > len(body) {
			break
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = codec.AppendOffsetMsgID(out, s.storeHost, phys)
		phys += int64(size)
		body = body[size:]
	}
	return out
}

// batchItemMinBytes is the smallest batch item: TOTALSIZE, MAGICCODE, BODYCRC, FLAG,
// BODYLEN and PROPERTIESLEN (PROTOCOL §5.6).
const batchItemMinBytes = 4 + 4 + 4 + 4 + 4 + 2

// countBatchItems counts the well-formed items at the start of a batch body by their
// TOTALSIZE words (the null server stores nothing, so it looks no deeper).
func countBatchItems(body []byte) int {
	n := 0
	for len(body) >= 4 {
		size := int(binary.BigEndian.Uint32(body))
		if size < batchItemMinBytes || size > len(body) {
			break
		}
		n++
		body = body[size:]
	}
	return n
}

// answerDecoded answers a fully decoded request: sends in another serialization or shape,
// and every control request.
func (s *NullServer) answerDecoded(out []byte, cmd *codec.RemotingCommand) ([]byte, error) {
	if cmd.IsResponse() {
		return out, nil
	}
	r := nullRequest{code: cmd.Code, opaque: cmd.Opaque, flag: cmd.Flag, queueID: -1}
	if isSend(cmd.Code) {
		key := "queueId"
		if codec.RequestCode(cmd.Code) != codec.RequestSendMessage {
			key = "e"
		}
		if v, err := strconv.ParseInt(cmd.ExtFields[key], 10, 32); err == nil {
			r.queueID = int32(v)
		}
		return s.answerSend(out, r, cmd.Body, cmd.SerializeType == codec.SerializeJSON), nil
	}
	if cmd.Flag&codec.FlagOneway != 0 {
		return out, nil
	}
	resp := codec.NewResponse(cmd, codec.ResponseSuccess, "")
	switch codec.RequestCode(cmd.Code) {
	case codec.RequestGetRouteInfoByTopic:
		var h codec.GetRouteInfoRequestHeader
		if err := h.Decode(cmd.ExtFields); err != nil {
			return s.appendError(out, r, codec.ResponseSystemError, err.Error()), nil
		}
		body, err := codec.EncodeTopicRouteData(s.route(h.Topic), codec.RouteWantsStandardJSON(cmd.Version, h.AcceptStandardJSONOnly))
		if err != nil {
			return s.appendError(out, r, codec.ResponseSystemError, err.Error()), nil
		}
		resp.Body = body
	case codec.RequestUpdateAndCreateTopic:
		var h codec.UpdateAndCreateTopicRequestHeader
		if err := h.Decode(cmd.ExtFields); err != nil {
			return s.appendError(out, r, codec.ResponseSystemError, err.Error()), nil
		}
		queues := max(h.WriteQueueNums, h.ReadQueueNums)
		if queues < 1 || queues > nullQueueSlots {
			return s.appendError(out, r, codec.ResponseSystemError, fmt.Sprintf("writeQueueNums %d not in [1, %d]", h.WriteQueueNums, nullQueueSlots)), nil
		}
		s.mu.Lock()
		s.mu.topics[h.Topic] = queues
		s.mu.Unlock()
	case codec.RequestHeartBeat, codec.RequestUnregisterClient:
	default:
		// The remark a broker gives for a code it has no processor for.
		return s.appendError(out, r, codec.ResponseRequestCodeNotSupported, fmt.Sprintf(" request type %d not supported", cmd.Code)), nil
	}
	return appendFrameOrDrop(out, resp), nil
}

// appendError appends an error answer (JSON header) to the request r.
func (s *NullServer) appendError(out []byte, r nullRequest, code codec.ResponseCode, remark string) []byte {
	if r.flag&codec.FlagOneway != 0 {
		return out
	}
	resp := codec.NewResponse(&codec.RemotingCommand{Opaque: r.opaque, SerializeType: codec.SerializeJSON}, code, remark)
	return appendFrameOrDrop(out, resp)
}

// appendFrameOrDrop appends resp's frame; a response the codec cannot encode (a header
// past 16 MiB: not one the null server builds) is dropped, leaving out as it was.
func appendFrameOrDrop(out []byte, resp *codec.RemotingCommand) []byte {
	out, _ = resp.AppendFrame(out)
	return out
}

// route is the null server's route for topic: itself, the master of every topic.
func (s *NullServer) route(topic string) *codec.TopicRouteData {
	s.mu.Lock()
	queues, ok := s.mu.topics[topic]
	s.mu.Unlock()
	if !ok {
		queues = int32(s.cfg.Queues)
	}
	return &codec.TopicRouteData{
		BrokerDatas: []codec.BrokerData{{BrokerAddrs: map[int64]string{0: s.addr}, BrokerName: s.cfg.BrokerName, Cluster: s.cfg.Cluster}},
		QueueDatas: []codec.QueueData{{BrokerName: s.cfg.BrokerName, Perm: permRead | permWrite,
			ReadQueueNums: queues, WriteQueueNums: queues}},
		FilterServerTable: map[string][]string{},
	}
}

// scanNullRequest reads code, opaque, flag and the queue id (extFields "queueId" or the
// V2 header's "e") of a JSON header without decoding it: the peekResponse scanner, one
// level deeper. ok is false when the header is not in the plain shape (the caller then
// decodes it in full, which also reports what is wrong).
func scanNullRequest(header []byte) (r nullRequest, ok bool) {
	r.queueID = -1
	s := peekScanner{b: header}
	var seen uint8
	s.space()
	if !s.byte('{') {
		return r, false
	}
	for first := true; ; first = false {
		s.space()
		if first && s.byte('}') {
			return r, false
		}
		key, good := s.key()
		if !good {
			return r, false
		}
		s.space()
		if !s.byte(':') {
			return r, false
		}
		s.space()
		switch string(key) {
		case "code":
			r.code, good = s.int32()
			seen |= 1
		case "opaque":
			r.opaque, good = s.int32()
			seen |= 2
		case "flag":
			r.flag, good = s.int32()
		case "extFields":
			good = s.extQueueID(&r.queueID)
		default:
			good = s.skipValue()
		}
		if !good {
			return r, false
		}
		s.space()
		if s.byte(',') {
			continue
		}
		if !s.byte('}') {
			return r, false
		}
		break
	}
	s.space()
	return r, seen == 3 && s.i == len(s.b)
}

// extQueueID scans an extFields object (or null) for "queueId" or "e", whose value is a
// decimal string; a negative id leaves -1 (the broker picks the queue).
func (s *peekScanner) extQueueID(queueID *int32) bool {
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	if !s.byte('{') {
		return false
	}
	s.space()
	if s.byte('}') {
		return true
	}
	for {
		s.space()
		key, good := s.key()
		if !good {
			return false
		}
		s.space()
		if !s.byte(':') {
			return false
		}
		s.space()
		if k := string(key); k == "queueId" || k == "e" {
			if !s.byte('"') {
				return false
			}
			v, good := s.int32()
			if !good || !s.byte('"') {
				return false
			}
			*queueID = max(v, -1)
		} else if !s.skipValue() {
			return false
		}
		s.space()
		if s.byte(',') {
			continue
		}
		return s.byte('}')
	}
}
