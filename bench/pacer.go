package bench

import (
	"math"
	"time"
)

// The open loop's pacer (issue 17 item 1). Message k of a rate run (counted over all
// connections, k = i×conns + connection) is due at k/rate. One goroutine, the pacer, wakes
// up at most once per tick and sends, on every connection, everything due by then: one
// write per connection per wake-up. The connections keep their reader goroutines; their
// writer goroutines only drain once the pacer is done.
//
// Why this shape, measured on the 2-vCPU VM the benchmarks run on (docs/benchmarks/history.md,
// "A cheap open loop"; 20k msgs/s of 1 KiB over 4 connections):
//
//   - System calls and wake-ups, not encoding, are the open loop's cost: each write, each
//     read of a response and each wake of a sleeping thread costs microseconds of kernel
//     and scheduler time here, in all 25–30 µs of client CPU per write with its
//     response. A writer goroutine per connection, sleeping on a timer until each message
//     was due, made ≈ 14k writes, 22k reads, 17k context switches and 11k futex calls a
//     second; the pacer, one goroutine for all connections, wakes at most once per tick
//     whatever the rate and the number of connections, writes each connection at most
//     once per wake-up, and made 110–120 futex calls a second (200 µs tick).
//   - Go's timers cannot tick in sub-millisecond steps on an idle process: the runtime
//     sleeps in epoll_wait, whose timeout is in whole milliseconds, so time.Sleep(200µs),
//     a Timer and a Ticker all wake after ≈ 1.1 ms (p50) here, and a pacer on them bunches
//     a millisecond of messages (p50 0.9–1.3 ms at 20k msgs/s). The pacer sleeps with
//     clock_nanosleep to an absolute deadline instead (preciseSleeper): late by the
//     kernel's timer slack (50 µs) plus scheduling. A timerfd read through the netpoller
//     kept the p50 as low but handed the pacer between threads on every tick (7–12k
//     futex calls a second, more CPU than clock_nanosleep). Waits longer than a few
//     milliseconds start on a Go timer, so a stopped run is not held by a sleeping thread.
//   - GOMAXPROCS=1 does not help: a thread asleep in clock_nanosleep holds the only P, so
//     the runtime hands it to another thread for the readers on every tick (8k futex calls
//     a second, more CPU). The default GOMAXPROCS stays; there is no --procs flag.
//   - The tick sets the CPU per message, because it sets how many messages share a write
//     and its response: at 20k msgs/s over 4 connections each connection has a message
//     due every 200 µs: a 200 µs tick sends about one message per connection per wake-up
//     (≈ 15 µs of client CPU per message, 25 for the old writers), 500 µs about 2.5
//     (≈ 9.5 µs), 1 ms about 5 (≈ 6 µs). The cost in latency: a message due just after a
//     wake-up is sent at the next one, at most one tick later (half a tick on average)
//     plus the wake-up's lateness, and its latency — measured from the intended time —
//     includes that wait (it shows as latency minus service time). The default, 200 µs,
//     keeps the added wait (≤ 200 µs plus lateness) under issue 17's p99 target of 300 µs;
//     --tick trades latency for CPU.
//
// Every message is due at its intended time and sent at the first wake-up at or after
// it, so the offered rate is exact over the run (⌈rate × duration⌉ messages) however late
// the pacer wakes: a late wake-up sends more at once, and the wait counts in the latency.
// The only thing that holds a due message back is a connection without a free slot (W
// requests unanswered); it goes out at the first wake-up after a slot is back, its
// latency again counted from its intended time. When the run ends, due messages still
// without a slot are not sent (and not counted), as before.

// DefaultTick is the open loop's default pacing tick.
const DefaultTick = 200 * time.Microsecond

// paceLane is one connection as the pacer sees it.
type paceLane interface {
	// sendDue sends every message of the lane intended at or before now and before the
	// end of the run, as far as free slots allow, and returns the intended time of the
	// lane's next message, or math.MaxInt64 when the lane has nothing more to send.
	sendDue(now int64) (next int64)
}

// pacer wakes up at most once per tick and lets every lane send what is due. Not safe
// for concurrent use: run it on one goroutine.
type pacer struct {
	tickNs int64
	lanes  []paceLane
	next   []int64 // per lane: its next intended time (math.MaxInt64: done)
	// now reads the run clock; sleepUntil blocks until the run clock reaches untilNs and
	// returns false if the run was stopped first. Tests pass a fake clock.
	now        func() int64
	sleepUntil func(untilNs int64) bool
}

func newPacer(tick time.Duration, lanes []paceLane, now func() int64, sleepUntil func(int64) bool) *pacer {
	next := make([]int64, len(lanes))
	return &pacer{tickNs: max(int64(tick), 1), lanes: lanes, next: next, now: now, sleepUntil: sleepUntil}
}

// run paces until every lane is done or sleepUntil reports a stop.
func (p *pacer) run() {
	for {
		wake := p.now()
		next := p.pass(wake)
		if next == math.MaxInt64 {
			return
		}
		// At most one wake-up per tick: a message due sooner waits for the tick (at most
		// one tick, counted in its latency); none due within the tick, sleep until one is.
		if !p.sleepUntil(max(next, wake+p.tickNs)) {
			return
		}
	}
}

// pass lets every lane that has something due by now send it, and returns the earliest
// next intended time over the lanes (math.MaxInt64: all done). Each lane reads the clock
// anew, so a lane written after a slow write also sends what became due meanwhile.
func (p *pacer) pass(now int64) int64 {
	next := int64(math.MaxInt64)
	for i, l := range p.lanes {
		if p.next[i] <= now {
			if i > 0 {
				now = p.now()
			}
			p.next[i] = l.sendDue(now)
		}
		next = min(next, p.next[i])
	}
	return next
}

// schedule is one connection's open-loop timetable: its i-th message is message
// k = i×conns + connID of the run, due at start + k×(1e9/rate) ns on the run clock. The
// connections' messages interleave (one connection's next message is due 1/rate after
// the previous connection's) instead of bunching. Not safe for concurrent use.
type schedule struct {
	startNs    int64
	intervalNs float64 // 1e9 / rate of the whole run
	k          int64   // the run-wide index of the next message
	conns      int64
}

func newSchedule(rate float64, connID, conns int, startNs int64) *schedule {
	return &schedule{startNs: startNs, intervalNs: 1e9 / rate, k: int64(connID), conns: int64(conns)}
}

// due is the intended time of the next message.
func (s *schedule) due() int64 { return s.startNs + int64(float64(s.k)*s.intervalNs) }

// advance moves to the next message.
func (s *schedule) advance() { s.k += s.conns }

// maxTick bounds Tick: a longer tick bunches a second's worth of messages into one write.
const maxTick = 100 * time.Millisecond

// coarseSleepNs: a wait longer than this starts on a Go timer (which can be stopped, and
// is late by about a millisecond) and ends in the precise sleep.
const coarseSleepNs = int64(3 * time.Millisecond)

// pace runs the open loop's pacer over lanes until every lane is done or the run stops.
// After a stop it makes one last pass, so messages that were due by then and have a slot
// still go out.
func (r *produceRun) pace(lanes []paceLane) {
	runPacer(r.clk, r.stop, r.p.cfg.Tick, lanes)
}

// runPacer paces lanes on clk (tick 0: DefaultTick) until every lane is done or stop is
// closed, then makes one last pass.
func runPacer(clk clock, stop <-chan struct{}, tick time.Duration, lanes []paceLane) {
	if tick == 0 {
		tick = DefaultTick
	}
	precise := newPreciseSleeper(clk)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	sleepUntil := func(untilNs int64) bool {
		for {
			select {
			case <-stop:
				return false
			default:
			}
			wait := untilNs - clk.now()
			if wait <= 0 {
				return true
			}
			if wait <= coarseSleepNs {
				precise.sleep(clk, untilNs)
				continue // check stop once more
			}
			timer.Reset(time.Duration(wait - coarseSleepNs + int64(time.Millisecond)))
			select {
			case <-timer.C:
			case <-stop:
				return false
			}
		}
	}
	p := newPacer(tick, lanes, clk.now, sleepUntil)
	p.run()
	p.pass(clk.now())
}

// sleepPortable sleeps until the run clock reaches untilNs with the Go runtime's timers.
func sleepPortable(clk clock, untilNs int64) {
	if d := untilNs - clk.now(); d > 0 {
		time.Sleep(time.Duration(d))
	}
}
