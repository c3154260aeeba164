package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// Sentinel errors. Check them with errors.Is; the wrapping error names the field or peer.
var (
	// ErrConfig: a configuration field is out of range; the error names the field.
	ErrConfig = errors.New("bench: bad configuration")
	// ErrNoRoute: no writable (producer) or readable (consumer) queue was found for the
	// topic, neither from the name server nor from the flags.
	ErrNoRoute = errors.New("bench: no route")
	// ErrResponse: a control request (route, topic creation, offsets) got an error
	// response; the error carries the code and remark.
	ErrResponse = errors.New("bench: error response")
	// ErrAllConnsFailed: every connection of a run failed before the run ended.
	ErrAllConnsFailed = errors.New("bench: all connections failed")
	// ErrMetrics: the broker's /metrics could not be fetched or parsed.
	ErrMetrics = errors.New("bench: broker metrics")
	// ErrBroker: the suite could not start, reach or stop a broker process.
	ErrBroker = errors.New("bench: broker process")
)

// Local error names for requests that got no response; they are counted with the
// broker's response codes in Result.ErrorsByCode.
const (
	// ErrorConnectionLost: the connection failed while the request was in flight (or the
	// write of the request failed).
	ErrorConnectionLost = "CONNECTION_LOST"
	// ErrorTimeout: no response before the drain timeout at the end of the run.
	ErrorTimeout = "TIMEOUT"
)

// errorName is how a response code is named in ErrorsByCode: "SYSTEM_BUSY(2)".
func errorName(code int32) string {
	return fmt.Sprintf("%s(%d)", codec.ResponseCode(code), code)
}

// BodyStampBytes is the smallest body that carries the send-time stamp (see the package
// doc).
const BodyStampBytes = 16

// BodySeqBytes is the smallest body that also carries a sequence number: the producer
// connection and the message's count on it (bytes 16..23), so that an end-to-end run can
// match every message it sent with what its consumers received.
const BodySeqBytes = 24

// bodyMarker marks a stamped body; bodySeqMarker a stamped body with a sequence number.
var (
	bodyMarker    = [8]byte{'m', 'q', 'b', 'e', 'n', 'c', 'h', '1'}
	bodySeqMarker = [8]byte{'m', 'q', 'b', 'e', 'n', 'c', 'h', '2'}
)

// fillBody fills body with the marker and a filler pattern (the stamp itself is written
// just before each write by stampBody). Bodies shorter than BodyStampBytes get filler only.
func fillBody(body []byte) {
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	switch {
	case len(body) >= BodySeqBytes:
		copy(body[8:16], bodySeqMarker[:])
	case len(body) >= BodyStampBytes:
		copy(body[8:16], bodyMarker[:])
	}
}

// bodySeqConnShift: a sequence number is the connection id above this bit and the
// message's count on the connection below it.
const bodySeqConnShift = 40

// bodySeq is the sequence number of message n of producer connection conn.
func bodySeq(conn int, n int64) uint64 { return uint64(conn)<<bodySeqConnShift | uint64(n) }

// stampBodySeq writes the sequence number into a body made by fillBody.
func stampBodySeq(body []byte, seq uint64) {
	if len(body) >= BodySeqBytes {
		binary.BigEndian.PutUint64(body[16:], seq)
	}
}

// BodySeq returns the sequence number a body carries, and false when it carries none.
func BodySeq(body []byte) (uint64, bool) {
	if len(body) < BodySeqBytes || [8]byte(body[8:16]) != bodySeqMarker {
		return 0, false
	}
	return binary.BigEndian.Uint64(body[16:]), true
}

// stampBody writes the send time into a body made by fillBody.
func stampBody(body []byte, unixNanos int64) {
	if len(body) >= BodyStampBytes {
		binary.BigEndian.PutUint64(body, uint64(unixNanos))
	}
}

// BodyStamp returns the send time a stamped body carries, and false when the body
// carries none (too short, or no marker).
func BodyStamp(body []byte) (unixNanos int64, ok bool) {
	if len(body) < BodyStampBytes {
		return 0, false
	}
	if m := [8]byte(body[8:16]); m != bodyMarker && m != bodySeqMarker {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(body)), true
}

// clock is a run's monotonic clock: nanoseconds since the run began. Safe for concurrent
// use. A body stamp is wall(now()): the wall time of the clock's start plus a monotonic
// reading, so that another process can still compare it with its own wall clock; a
// consumer in the same process that reads on the same clock value gets, by the
// difference of two wall() values, exactly the monotonic time between them, however the
// wall clock is set meanwhile.
type clock struct{ base time.Time }

func newClock() clock { return clock{base: time.Now()} }

// now reads the monotonic clock (time.Since uses the monotonic reading).
func (c clock) now() int64 { return int64(time.Since(c.base)) }

// wall converts a run-clock reading to wall-clock Unix nanoseconds.
func (c clock) wall(ns int64) int64 { return c.base.UnixNano() + ns }
