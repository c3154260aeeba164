// Package round lets the goroutine that completes a batch of waiters (the group commit's syncer, its
// loop) defer work that many of them share to the end of the batch: a connection that several answers of
// the batch go to is written once, after the last, by the completing goroutine, instead of waking its
// event loop at the first (netio's WriteFrameIn).
package round

// An Ender has work deferred to the end of a round.
type Ender interface {
	EndRound()
}

// A Round collects the Enders of one batch of completions. It belongs to the goroutine that completes
// the batch: that goroutine hands it to each waiter and calls End after the last one. A nil *Round is no
// round: work is done at once. The zero value is ready to use, and a Round is reused batch after batch.
type Round struct {
	enders []Ender
}

// Defer adds e, whose EndRound End will call. The caller makes sure e is added once per round (netio
// marks a connection as deferred under its own lock).
func (r *Round) Defer(e Ender) { r.enders = append(r.enders, e) }

// End calls EndRound on every Ender deferred since the last End, in the order they were added, and
// empties the round. An Ender deferred while End runs is ended in the same call.
func (r *Round) End() {
	for i := 0; i < len(r.enders); i++ {
		e := r.enders[i]
		r.enders[i] = nil
		e.EndRound()
	}
	r.enders = r.enders[:0]
}

// Len is how many Enders wait for End.
func (r *Round) Len() int { return len(r.enders) }
