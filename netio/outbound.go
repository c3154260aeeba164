package netio

import "github.com/ringmq/ringmq/codec"

// outbound is a batch of frames waiting to be written to one connection, in order. Encoded
// commands and copied frame headers are appended back to back in buf; WriteFrame bodies stay
// in the caller's memory and are referenced as external segments, so a batch becomes one
// vectored write: the buf ranges and external slices interleaved as they were queued.
//
// Every connection has two: one that writers append to (under the connection's mutex) and
// one the flusher writes out without holding the mutex; they swap at each flush. Both keep
// their capacity, so a connection in its steady state allocates nothing per frame.
// Not safe for concurrent use.
type outbound struct {
	buf      []byte    // encoded frames and copied headers
	segs     []segment // write order
	releases []func()  // WriteFrame callbacks, called once the batch is written or dropped
	bytes    int       // total bytes queued (buf plus external segments)
	frames   int       // frames queued, for the frames-sent counter
	iov      [][]byte  // scratch for vectors()
}

// segment is buf[start:end] when ext is nil, else ext.
type segment struct {
	ext        []byte
	start, end int
}

// maxRetainedBufBytes: a batch buffer grown beyond this by one large response is dropped
// after the flush instead of being kept for the life of the connection.
const maxRetainedBufBytes = 1 << 20

// appendCommand encodes cmd at the end of the batch. On error nothing is queued.
func (o *outbound) appendCommand(cmd *codec.RemotingCommand) error {
	start := len(o.buf)
	buf, err := cmd.AppendFrame(o.buf)
	if err != nil {
		o.buf = buf[:start]
		return err
	}
	o.buf = buf
	o.addBufRange(start, len(buf))
	o.frames++
	return nil
}

// appendFrame queues a copy of header followed by references to bodies; release is kept
// to be called by done().
func (o *outbound) appendFrame(header []byte, bodies [][]byte, release func()) {
	start := len(o.buf)
	o.buf = append(o.buf, header...)
	o.addBufRange(start, len(o.buf))
	for _, b := range bodies {
		if len(b) > 0 {
			o.segs = append(o.segs, segment{ext: b})
			o.bytes += len(b)
		}
	}
	if release != nil {
		o.releases = append(o.releases, release)
	}
	o.frames++
}

// truncate drops everything queued after a mark taken with mark(): used to take back a
// frame that would overflow the connection's limit. Only buf-only frames are taken back.
func (o *outbound) mark() (bufLen, segs, bytes, frames int) {
	return len(o.buf), len(o.segs), o.bytes, o.frames
}

func (o *outbound) truncate(bufLen, segs, bytes, frames int) {
	o.buf, o.segs, o.bytes, o.frames = o.buf[:bufLen], o.segs[:segs], bytes, frames
	if segs > 0 && o.segs[segs-1].ext == nil {
		o.segs[segs-1].end = min(o.segs[segs-1].end, bufLen)
	}
}

// addBufRange records buf[start:end], merging with the previous segment when it ends where
// this one starts (consecutive commands become one vector element).
func (o *outbound) addBufRange(start, end int) {
	o.bytes += end - start
	if n := len(o.segs); n > 0 && o.segs[n-1].ext == nil && o.segs[n-1].end == start {
		o.segs[n-1].end = end
		return
	}
	o.segs = append(o.segs, segment{start: start, end: end})
}

// empty reports whether nothing is queued (no bytes and no callbacks).
func (o *outbound) empty() bool { return len(o.segs) == 0 && len(o.releases) == 0 }

// vectors returns the batch as write vectors, valid until the next change to o.
func (o *outbound) vectors() [][]byte {
	iov := o.iov[:0]
	for _, s := range o.segs {
		if s.ext != nil {
			iov = append(iov, s.ext)
		} else {
			iov = append(iov, o.buf[s.start:s.end])
		}
	}
	o.iov = iov
	return iov
}

// done calls the batch's release callbacks and empties it for reuse. Call it once the bytes
// were written or copied, or when the batch is dropped because the connection closed.
func (o *outbound) done() {
	for i, release := range o.releases {
		o.releases[i] = nil
		release()
	}
	o.releases = o.releases[:0]
	clear(o.segs) // drop references to external memory (mapped files)
	o.segs = o.segs[:0]
	clear(o.iov)
	o.iov = o.iov[:0]
	if cap(o.buf) > maxRetainedBufBytes {
		o.buf = nil
	} else {
		o.buf = o.buf[:0]
	}
	o.bytes, o.frames = 0, 0
}

// consume drops the first n bytes, which a direct write took (connCore.EndRound); the frames and
// their releases stay, to be counted and released when the rest is written.
func (o *outbound) consume(n int) {
	o.bytes -= n
	i := 0
	for ; i < len(o.segs) && n > 0; i++ {
		s := &o.segs[i]
		l := len(s.ext)
		if s.ext == nil {
			l = s.end - s.start
		}
		if n < l {
			if s.ext != nil {
				s.ext = s.ext[n:]
			} else {
				s.start += n
			}
			break
		}
		n -= l
	}
	m := copy(o.segs, o.segs[i:])
	clear(o.segs[m:])
	o.segs = o.segs[:m]
}
