package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// The lean generator is the yardstick for mqbench's own cost (issue 17): the least a
// client can do to keep W sends in flight on each of C connections. One goroutine per
// connection, the frames encoded once before the run (only a counter in UNIQ_KEY is
// patched per message, so the broker indexes distinct keys as with mqbench), every
// refill written in one write, and a response parsed no further than its length word and
// the first bytes of its JSON header. It measures throughput only: no latency, no
// matching of responses to requests. Comparing its rate with mqbench produce's on the
// same broker and load shows what mqbench's bookkeeping costs the broker.

// LeanResult is the outcome of a lean run.
type LeanResult struct {
	Acked     int64 // successful responses in the measured window
	Errors    int64 // responses whose header is not {"code":0,...}
	Elapsed   time.Duration
	ClientCPU *ClientCPU
}

// MsgsPerSec is the measured throughput.
func (r *LeanResult) MsgsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Acked) / r.Elapsed.Seconds()
}

// SummaryLine is the lean generator's summary, in mqbench's summary-line shape.
func (r *LeanResult) SummaryLine() string {
	return fmt.Sprintf("mqbench: mode=lean msgs=%d secs=%.3f rate=%.1f errors=%d %s",
		r.Acked, r.Elapsed.Seconds(), r.MsgsPerSec(), r.Errors, r.ClientCPU.SummaryFields())
}

// successPrefix starts the JSON header of a SUCCESS response as ringmq (and this
// package's codec) writes it.
var successPrefix = []byte(`{"code":0,`)

// RunLean runs the lean generator with cfg's target, topic, queues, connections, in-flight
// count, message size, warm-up and duration (closed loop; Batch, Rate, Oneway, Tags, Keys
// and Count are not supported).
func RunLean(ctx context.Context, cfg ProducerConfig) (*LeanResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Batch != 1 || cfg.Rate > 0 || cfg.Oneway || cfg.Count > 0 || cfg.Duration <= 0 || len(cfg.Tags) > 0 || cfg.Keys {
		return nil, fmt.Errorf("%w: the lean generator runs closed loop for a Duration, without Batch, Rate, Oneway, Count, Tags or Keys", ErrConfig)
	}
	targets, err := producerTargets(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	d := net.Dialer{Timeout: cfg.DialTimeout}
	conns := make([]net.Conn, 0, cfg.Conns)
	defer func() {
		for _, nc := range conns {
			_ = nc.Close()
		}
	}()
	for i := range cfg.Conns {
		t := targets[i%len(targets)]
		nc, err := d.DialContext(ctx, "tcp", t.Addr)
		if err != nil {
			return nil, fmt.Errorf("bench: dial %s: %w", t.Addr, err)
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		conns = append(conns, nc)
	}
	frames := make([]*leanFrames, 0, cfg.Conns)
	uniq := codec.NewUniqKeyGenerator(localAddr(conns[0]), os.Getpid(), int32(time.Now().UnixNano()))
	for i := range conns {
		f, err := newLeanFrames(&cfg, i, targets[i%len(targets)].Queues, uniq)
		if err != nil {
			return nil, err
		}
		frames = append(frames, f)
	}

	var acked, errs atomic.Int64
	measuring := make(chan struct{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	failures := make([]error, len(conns))
	for i, nc := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			failures[i] = leanConn(nc, frames[i], cfg.Inflight, measuring, stop, cfg.DrainTimeout, &acked, &errs)
		}()
	}
	timer := time.NewTimer(cfg.Warmup)
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	start := time.Now()
	cpuStart := markCPU()
	close(measuring)
	timer.Reset(cfg.Duration)
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	close(stop)
	elapsed := time.Since(start)
	wg.Wait()
	res := &LeanResult{Acked: acked.Load(), Errors: errs.Load(), Elapsed: elapsed}
	res.ClientCPU = clientCPUSince(cpuStart, res.Acked)
	return res, errors.Join(failures...)
}

// leanFrames is one connection's pre-encoded requests: one frame per queue, and where
// each frame's UNIQ_KEY counter digits are.
type leanFrames struct {
	frames  [][]byte
	keyOffs []int // offset of the last leanKeyDigits hex digits of UNIQ_KEY in each frame
	next    int   // next frame (queue) to send
	seq     uint64
}

// leanKeyDigits is how many trailing hex digits of the UNIQ_KEY carry the connection
// (top 16 bits) and its message counter (low 32 bits): keys stay distinct across
// connections.
const leanKeyDigits = 12

func newLeanFrames(cfg *ProducerConfig, connID int, queues []int32, uniq *codec.UniqKeyGenerator) (*leanFrames, error) {
	enc := newEncoder(cfg, connID, uniq)
	lf := &leanFrames{seq: uint64(connID) << 32}
	now := time.Now()
	for _, q := range queues {
		frame, err := enc.appendRequest(nil, 1, q, 1, now)
		if err != nil {
			return nil, fmt.Errorf("bench: encode send: %w", err)
		}
		enc.stamp(frame, now.UnixNano())
		key := enc.keyBuf
		at := bytes.Index(frame, key)
		if at < 0 || len(key) < leanKeyDigits {
			return nil, fmt.Errorf("bench: UNIQ_KEY %q not found in the encoded frame", key)
		}
		lf.frames = append(lf.frames, frame)
		lf.keyOffs = append(lf.keyOffs, at+len(key)-leanKeyDigits)
	}
	return lf, nil
}

// appendNext appends the next frame with a fresh counter in its UNIQ_KEY.
func (lf *leanFrames) appendNext(dst []byte) []byte {
	i := lf.next
	lf.next = (lf.next + 1) % len(lf.frames)
	start := len(dst)
	dst = append(dst, lf.frames[i]...)
	lf.seq++
	const hex = "0123456789ABCDEF"
	digits := dst[start+lf.keyOffs[i] : start+lf.keyOffs[i]+leanKeyDigits]
	v := lf.seq
	for j := leanKeyDigits - 1; j >= 0; j-- {
		digits[j] = hex[v&15]
		v >>= 4
	}
	return dst
}

// leanConn keeps inflight requests outstanding on nc: it writes them all, then for every
// read that completes k responses writes k new requests in one write. After stop it
// sends nothing more and waits (up to drain) for the outstanding responses.
func leanConn(nc net.Conn, lf *leanFrames, inflight int, measuring, stop <-chan struct{}, drain time.Duration, acked, errs *atomic.Int64) error {
	wbuf := make([]byte, 0, inflight*(len(lf.frames[0])+64))
	for range inflight {
		wbuf = lf.appendNext(wbuf)
	}
	if _, err := nc.Write(wbuf); err != nil {
		return fmt.Errorf("bench: lean write: %w", err)
	}
	outstanding := inflight
	rbuf := make([]byte, 256<<10)
	have := 0
	stopped := false
	measured := false
	for outstanding > 0 {
		if !stopped {
			select {
			case <-stop:
				stopped = true
				_ = nc.SetReadDeadline(time.Now().Add(drain))
			default:
			}
		}
		n, err := nc.Read(rbuf[have:])
		if err != nil {
			if stopped {
				return nil // drained as far as the deadline allowed
			}
			return fmt.Errorf("bench: lean read: %w", err)
		}
		have += n
		ok, bad := 0, 0
		pos := 0
		for have-pos >= 8 {
			length := int(binary.BigEndian.Uint32(rbuf[pos:]))
			if length < 4 || length > len(rbuf)-4 {
				return fmt.Errorf("bench: lean read: frame length %d", length)
			}
			if have-pos < 4+length {
				break
			}
			header := rbuf[pos+8 : pos+4+length]
			if bytes.HasPrefix(header, successPrefix) {
				ok++
			} else {
				bad++
			}
			pos += 4 + length
		}
		have = copy(rbuf, rbuf[pos:have])
		done := ok + bad
		outstanding -= done
		if !measured {
			select {
			case <-measuring:
				measured = true
			default:
			}
		}
		if measured && !stopped {
			acked.Add(int64(ok))
			errs.Add(int64(bad))
		}
		if stopped || done == 0 {
			continue
		}
		wbuf = wbuf[:0]
		for range done {
			wbuf = lf.appendNext(wbuf)
		}
		if _, err := nc.Write(wbuf); err != nil {
			return fmt.Errorf("bench: lean write: %w", err)
		}
		outstanding += done
	}
	return nil
}
