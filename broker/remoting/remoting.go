// Package remoting is what every request processor of the broker shares: the request as it
// reaches a processor (Request) and the one way to answer it (Reply).
package remoting

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/round"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// Request carries one request to its processor. Cmd (and its Body) is valid only until the
// processor returns when it runs on the event loop; a processor that answers later copies
// what it keeps (processors on a pool get a private copy already) and answers through Reply,
// which stays valid.
type Request struct {
	Conn     netio.Conn
	Cmd      *codec.RemotingCommand
	Received time.Time
	Reply    Reply
}

// NewRequest wraps a request frame received on conn at received.
func (r *Replies) NewRequest(conn netio.Conn, cmd *codec.RemotingCommand, received time.Time) *Request {
	to := r.To(conn, cmd)
	to.received = received
	return &Request{Conn: conn, Cmd: cmd, Received: received, Reply: to}
}

// Detached rebuilds a Request around cmd (which gets the reply's opaque and serialize type)
// for work queued on a pool after the original command is gone: a pool's fast-failure answer
// needs only the Reply.
func (r Reply) Detached(cmd *codec.RemotingCommand, received time.Time) *Request {
	cmd.Opaque, cmd.SerializeType = r.opaque, r.serializeType
	return &Request{Conn: r.conn, Cmd: cmd, Received: received, Reply: r}
}

// Answering requests: one API.
//
// Every processor answers through its request's Reply handle (Request.Reply), the
// same way whether it answers on the event loop, on a pool or later from a callback (a
// flush completion, a long-polling wake-up, a push acknowledged): a Reply is a small value
// that stays valid after netio has reused the request's command for the next frame, so a
// processor copies it, not the command. The header is encoded by codec
// (AppendResponseFrameHeader, no map, no allocation) into a pooled buffer and written with
// the bodies — slices of mapped CommitLog memory for pulls and queries — as one vectored
// write.
//
//	Answer(code, remark, fields...)  a response without a body (errors, most answers)
//	OK()                             SUCCESS, nothing else
//	Body(body) / JSON(v)             SUCCESS with a body (admin and client answers)
//	Frame(f, code, remark, fields, bodies)
//	                                 bodies kept valid by f (a pull or query result)
//	Send(&buf, code, remark, fields, bodies, release)
//	                                 the same for an owner that pools its own buffer
//	                                 (a send in flight)
//
// A failed write means the connection is gone; there is no one left to tell, so it is only
// counted (ringmq_broker_reply_errors_total).

// Reply answers one request. Safe from any goroutine; answer once.
type Reply struct {
	conn          netio.Conn
	opaque        int32
	requestCode   int32     // for the observer (SetObserver)
	received      time.Time // zero when the Reply was made by To
	serializeType codec.SerializeType
	out           *Replies
}

// Replies holds what every Reply shares: the pooled frames and the error counter. One per
// broker; safe for concurrent use.
type Replies struct {
	frames      sync.Pool // *Frame
	replyErrors prometheus.Counter
	logger      *slog.Logger
	observe     Observer // nil: none
}

// Observer is told about every response a Reply writes: the request's code, the response's
// code and when the request was received (zero for a Reply made by To). It runs on the
// answering goroutine, once per response, and must not block or allocate.
type Observer func(requestCode int32, response codec.ResponseCode, received time.Time)

// SetObserver sets the observer of every response (the broker's request metrics). Call before
// any Reply is used.
func (r *Replies) SetObserver(o Observer) { r.observe = o }

// NewReplies counts failed writes in replyErrors and logs encoding failures to logger.
func NewReplies(replyErrors prometheus.Counter, logger *slog.Logger) *Replies {
	r := &Replies{replyErrors: replyErrors, logger: logger}
	r.frames.New = func() any {
		f := &Frame{pool: &r.frames}
		f.done = f.finish
		return f
	}
	return r
}

// To is the Reply for cmd received on conn.
func (r *Replies) To(conn netio.Conn, cmd *codec.RemotingCommand) Reply {
	return Reply{conn: conn, opaque: cmd.Opaque, requestCode: cmd.Code, serializeType: cmd.SerializeType, out: r}
}

// NewFrame takes a pooled frame for a response whose bodies it keeps valid; Reply.Frame
// gives it back once the response is written.
func (r Reply) NewFrame() *Frame { return r.out.frames.Get().(*Frame) }

// Conn is the connection the request came on.
func (r Reply) Conn() netio.Conn { return r.conn }

// Answer writes a response without a body; fields may be in any order.
func (r Reply) Answer(code codec.ResponseCode, remark string, fields ...codec.Field) {
	f := r.NewFrame()
	r.Send(&f.buf, code, remark, fields, nil, f.done)
}

// OK answers SUCCESS without a remark, fields or body.
func (r Reply) OK() { r.Answer(codec.ResponseSuccess, "") }

// Body answers SUCCESS with body, which must not change until it is written.
func (r Reply) Body(body []byte) {
	f := r.NewFrame()
	f.Bodies = append(f.Bodies, body)
	r.Send(&f.buf, codec.ResponseSuccess, "", nil, f.Bodies, f.done)
}

// JSON answers SUCCESS with v encoded by encoding/json, or SYSTEM_ERROR naming why it could
// not be encoded.
func (r Reply) JSON(v any) {
	body, err := json.Marshal(v)
	if err != nil {
		r.Answer(codec.ResponseSystemError, err.Error())
		return
	}
	r.Body(body)
}

// Frame writes a response whose bodies f keeps valid (its result references); f is
// released when netio is done with it, in every case.
func (r Reply) Frame(f *Frame, code codec.ResponseCode, remark string, fields []codec.Field, bodies [][]byte) {
	r.Send(&f.buf, code, remark, fields, bodies, f.done)
}

// Send encodes the response header into *buf (reusing its storage; *buf is updated before
// the write, so an owner that pools itself in release finds its grown buffer there) and
// writes it followed by bodies. release (may be nil) is called exactly once, when netio is
// done with *buf and bodies, also when encoding or writing fails. A header that cannot be
// encoded is logged and answered SYSTEM_ERROR instead.
func (r Reply) Send(buf *[]byte, code codec.ResponseCode, remark string, fields []codec.Field, bodies [][]byte,
	release func()) {
	r.SendIn(nil, buf, code, remark, fields, bodies, release)
}

// SendIn is Send for a goroutine that answers a batch of requests in round rd (nil: none; see
// netio.RoundWriter), such as the group commit's, which ends rd after the batch.
func (r Reply) SendIn(rd *round.Round, buf *[]byte, code codec.ResponseCode, remark string, fields []codec.Field,
	bodies [][]byte, release func()) {
	bodyLen := 0
	for _, body := range bodies {
		bodyLen += len(body)
	}
	out, err := codec.AppendResponseFrameHeader((*buf)[:0], r.opaque, r.serializeType, code, remark, fields, bodyLen)
	if err != nil {
		if release != nil {
			release()
		}
		r.out.logger.Warn("broker: cannot encode response", "code", code, "err", err)
		if code != codec.ResponseSystemError || len(fields) > 0 || len(bodies) > 0 {
			r.Answer(codec.ResponseSystemError, "response encoding failed: "+err.Error())
		}
		return
	}
	*buf = out
	if r.out.observe != nil {
		r.out.observe(r.requestCode, code, r.received)
	}
	if rw, ok := roundWriter(r.conn, rd); ok {
		err = rw.WriteFrameIn(rd, out, bodies, release)
	} else {
		err = r.conn.WriteFrame(out, bodies, release)
	}
	if err != nil {
		r.out.replyErrors.Inc()
	}
}

// roundWriter is c as a netio.RoundWriter when there is a round to write in; without one (every
// answer but a group commit's) it asks nothing of c.
func roundWriter(c netio.Conn, rd *round.Round) (netio.RoundWriter, bool) {
	if rd == nil {
		return nil, false
	}
	rw, ok := c.(netio.RoundWriter)
	return rw, ok
}

// Frame is a pooled response in flight: its header buffer and whatever keeps its bodies
// valid (a pull result, a query result, a record reference), released once netio has
// written or copied the bytes.
type Frame struct {
	Bodies  [][]byte
	Get     *store.GetMessageResult   // released with the frame
	Query   *store.QueryMessageResult // released with the frame
	Release func()                    // called with the frame's release

	buf  []byte
	pool *sync.Pool
	done func() // = finish, bound once so passing it allocates nothing
}

// maxPooledFrameBytes keeps an unusually large header buffer (a batch's long msgId list)
// out of the pool.
const maxPooledFrameBytes = 64 << 10

func (f *Frame) finish() {
	if f.Get != nil {
		f.Get.Release()
		f.Get = nil
	}
	if f.Query != nil {
		f.Query.Release()
		f.Query = nil
	}
	if f.Release != nil {
		f.Release()
		f.Release = nil
	}
	clear(f.Bodies)
	f.Bodies = f.Bodies[:0]
	f.buf = f.buf[:0]
	if cap(f.buf) > maxPooledFrameBytes {
		f.buf = nil
	}
	f.pool.Put(f)
}

// HeaderErrorRemark turns a typed-header decode error into the remark the Java broker
// gives (its RemotingCommandException text names the field).
func HeaderErrorRemark(err error) string {
	var fe *codec.FieldError
	if errors.As(err, &fe) {
		if errors.Is(fe.Err, codec.ErrMissingField) {
			return "the custom field <" + fe.Field + "> is null"
		}
		return "the custom field <" + fe.Field + "> has a bad value: " + strconv.Quote(fe.Value)
	}
	return err.Error()
}
