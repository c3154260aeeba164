package broker

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// Answering requests: one API.
//
// Every processor answers through its request's Reply handle (RequestContext.Reply), the
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
	serializeType codec.SerializeType
	out           *responder
}

// responder holds what every Reply shares: the pooled frames and the error counter.
type responder struct {
	frames      sync.Pool // *outFrame
	replyErrors prometheus.Counter
	logger      *slog.Logger
}

func newResponder(replyErrors prometheus.Counter, logger *slog.Logger) *responder {
	r := &responder{replyErrors: replyErrors, logger: logger}
	r.frames.New = func() any {
		f := &outFrame{pool: &r.frames}
		f.done = f.finish
		return f
	}
	return r
}

// Reply is the Reply for cmd received on conn.
func (r *responder) replyTo(conn netio.Conn, cmd *codec.RemotingCommand) Reply {
	return Reply{conn: conn, opaque: cmd.Opaque, serializeType: cmd.SerializeType, out: r}
}

// frame takes a pooled frame; Reply.Frame (or f.done) gives it back.
func (r *responder) frame() *outFrame { return r.frames.Get().(*outFrame) }

// Answer writes a response without a body; fields may be in any order.
func (r Reply) Answer(code codec.ResponseCode, remark string, fields ...codec.Field) {
	f := r.out.frame()
	r.Send(&f.buf, code, remark, fields, nil, f.done)
}

// OK answers SUCCESS without a remark, fields or body.
func (r Reply) OK() { r.Answer(codec.ResponseSuccess, "") }

// Body answers SUCCESS with body, which must not change until it is written.
func (r Reply) Body(body []byte) {
	f := r.out.frame()
	f.bodies = append(f.bodies, body)
	r.Send(&f.buf, codec.ResponseSuccess, "", nil, f.bodies, f.done)
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
func (r Reply) Frame(f *outFrame, code codec.ResponseCode, remark string, fields []codec.Field, bodies [][]byte) {
	r.Send(&f.buf, code, remark, fields, bodies, f.done)
}

// Send encodes the response header into *buf (reusing its storage; *buf is updated before
// the write, so an owner that pools itself in release finds its grown buffer there) and
// writes it followed by bodies. release (may be nil) is called exactly once, when netio is
// done with *buf and bodies, also when encoding or writing fails. A header that cannot be
// encoded is logged and answered SYSTEM_ERROR instead.
func (r Reply) Send(buf *[]byte, code codec.ResponseCode, remark string, fields []codec.Field, bodies [][]byte,
	release func()) {
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
	if err := r.conn.WriteFrame(out, bodies, release); err != nil {
		r.out.replyErrors.Inc()
	}
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
