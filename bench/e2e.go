package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// An end-to-end run measures how long a message takes from its producer to a consumer:
// one process produces open loop at a fixed rate (the pacer) and pulls the same topic,
// from the queues' ends, with long polling. Producer and consumers read one monotonic
// clock: each body carries its write time on that clock and a sequence number (producer
// connection, count), and a consumer records receipt time minus write time in an
// HdrHistogram beside the producer's send latency. When the producer is done the
// consumers go on until every message written has been received (or DrainTimeout), and
// the sequence numbers say how many were received once, twice, or never.

// E2EConfig configures RunE2E.
type E2EConfig struct {
	// Producer is the open-loop load: Rate > 0, MessageBytes ≥ BodySeqBytes.
	Producer ProducerConfig
	// Consumer pulls the producer's topic; the run sets its Warmup (the producer's),
	// Duration and Count (it ends when everything written is received).
	Consumer ConsumerConfig
	// DrainTimeout bounds the wait, after the producer's end, for the consumers to
	// receive the last messages.
	DrainTimeout time.Duration
}

// Validate reports the first field out of range.
func (c *E2EConfig) Validate() error {
	switch {
	case c.Producer.Rate <= 0:
		return fmt.Errorf("%w: an end-to-end run is open loop: Rate (--rate) must be > 0", ErrConfig)
	case c.Producer.MessageBytes < BodySeqBytes:
		return fmt.Errorf("%w: MessageBytes (--size) %d < %d: the body carries the send time and a sequence number", ErrConfig, c.Producer.MessageBytes, BodySeqBytes)
	case c.Producer.Batch != 1:
		return fmt.Errorf("%w: Batch (--batch) %d: an end-to-end run sends single messages", ErrConfig, c.Producer.Batch)
	case c.DrainTimeout <= 0:
		return fmt.Errorf("%w: DrainTimeout (--drain-timeout) %v <= 0", ErrConfig, c.DrainTimeout)
	}
	ccfg := c.consumerConfig()
	return errors.Join(c.Producer.Validate(), ccfg.Validate())
}

// consumerConfig is the consumer as the run drives it: the producer's warm-up, no count,
// and a duration that only bounds a run whose end never comes (the run cancels it).
func (c *E2EConfig) consumerConfig() ConsumerConfig {
	cc := c.Consumer
	cc.Warmup, cc.Count = c.Producer.Warmup, 0
	cc.Duration = 24 * time.Hour
	return cc
}

// E2EResult is the outcome of an end-to-end run: the producer's result (send latency),
// the consumers' (Latency: end to end) and how the messages matched.
type E2EResult struct {
	Produce *ProduceResult
	Consume *ConsumeResult
	// Written is every message written (warm-up included); Matched the distinct ones
	// received; Missing = Written - Matched; Duplicates the receipts of a message already
	// received; Foreign the receipts carrying a sequence number this run never wrote.
	Written, Matched, Missing, Duplicates, Foreign int64
}

// RunE2E runs an end-to-end measurement (see above).
func RunE2E(ctx context.Context, cfg E2EConfig, logger *slog.Logger, hooks Hooks) (*E2EResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p, prepared, err := prepareMixed(ctx, cfg.Producer, cfg.consumerConfig(), logger, hooks)
	if err != nil {
		return nil, err
	}
	prepared.consume.matches = newE2EMatcher(cfg.Producer.Conns)
	matches := prepared.consume.matches
	pres, cres, err := runTogether(ctx, p, prepared, func(pres *ProduceResult, perr error) bool {
		if perr == nil && pres != nil {
			drain := time.NewTimer(cfg.DrainTimeout)
			defer drain.Stop()
			select {
			case <-matches.expect(pres.Written):
			case <-drain.C:
			case <-ctx.Done():
			}
		}
		return true
	})
	res := &E2EResult{Produce: pres, Consume: cres}
	if pres != nil {
		m := matches.counts()
		res.Written, res.Matched, res.Duplicates, res.Foreign = pres.Written, m.distinct, m.duplicates, m.foreign
		res.Missing = max(res.Written-res.Matched, 0)
	}
	return res, err
}

// e2eLatencyNs is a message's end-to-end latency from its body stamp and its receipt,
// both wall() readings of one clock (so their difference is monotonic time); a stamp
// from another process's clock ahead of this one's reads 0, not a negative latency.
func e2eLatencyNs(stampWallNs, receivedWallNs int64) int64 {
	return max(receivedWallNs-stampWallNs, 0)
}

// e2eMaxSeq bounds the per-connection count a matcher tracks (a bitmap of 512 MiB at
// most; a body claiming more is foreign).
const e2eMaxSeq = 1 << 32

// e2eMatcher records the sequence numbers received: a bitmap per producer connection.
// Safe for concurrent use (the consumer connections' readers share it).
type e2eMatcher struct {
	mu struct {
		sync.Mutex
		seen     [][]uint64 // per producer connection, bit n: message n received
		counts   e2eCounts
		target   int64 // > 0: close done when counts.distinct reaches it
		done     chan struct{}
		doneSent bool
	}
}

type e2eCounts struct {
	distinct, duplicates, foreign int64
}

func newE2EMatcher(conns int) *e2eMatcher {
	m := &e2eMatcher{}
	m.mu.seen = make([][]uint64, conns)
	m.mu.done = make(chan struct{})
	return m
}

// mark records one receipt of seq.
func (m *e2eMatcher) mark(seq uint64) {
	conn, n := seq>>bodySeqConnShift, seq&(1<<bodySeqConnShift-1)
	m.mu.Lock()
	defer m.mu.Unlock()
	if conn >= uint64(len(m.mu.seen)) || n >= e2eMaxSeq {
		m.mu.counts.foreign++
		return
	}
	words := m.mu.seen[conn]
	w := int(n / 64)
	if w >= len(words) {
		// Grow by doubling: a handful of allocations over a run, none per message.
		grown := make([]uint64, max(w+1, 2*len(words), 1024))
		copy(grown, words)
		words = grown
		m.mu.seen[conn] = words
	}
	bit := uint64(1) << (n % 64)
	if words[w]&bit != 0 {
		m.mu.counts.duplicates++
		return
	}
	words[w] |= bit
	m.mu.counts.distinct++
	m.signalLocked()
}

// expect returns a channel closed once written distinct messages have been received.
func (m *e2eMatcher) expect(written int64) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mu.target = written
	m.signalLocked()
	return m.mu.done
}

// signalLocked closes done when the target is reached. Caller holds mu.
func (m *e2eMatcher) signalLocked() {
	if !m.mu.doneSent && m.mu.target > 0 && m.mu.counts.distinct >= m.mu.target {
		m.mu.doneSent = true
		close(m.mu.done)
	}
}

func (m *e2eMatcher) counts() e2eCounts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.mu.counts
}

// E2ESummaryLine is the last line an end-to-end run prints: the matching, then the send
// and end-to-end latency percentiles (µs).
func E2ESummaryLine(rate float64, r *E2EResult) string {
	var send, e2e LatencySummary
	if r.Produce != nil {
		send = r.Produce.Latency
	}
	if r.Consume != nil {
		e2e = r.Consume.Latency
	}
	return fmt.Sprintf("mqbench: mode=e2e rate=%g written=%d matched=%d missing=%d duplicates=%d foreign=%d "+
		"send_p50_us=%.1f send_p90_us=%.1f send_p99_us=%.1f send_p999_us=%.1f send_max_us=%.1f "+
		"e2e_p50_us=%.1f e2e_p90_us=%.1f e2e_p99_us=%.1f e2e_p999_us=%.1f e2e_max_us=%.1f",
		rate, r.Written, r.Matched, r.Missing, r.Duplicates, r.Foreign,
		send.P50Us, send.P90Us, send.P99Us, send.P999Us, send.MaxUs,
		e2e.P50Us, e2e.P90Us, e2e.P99Us, e2e.P999Us, e2e.MaxUs)
}
