package store

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// PutGroup gathers single messages, of any topics and queues, to be stored together by Store.PutGroup:
// one reservation under the put lock (one clock read, one lock statistic), one copy and one
// publication (one wake of the dispatcher and the replicas) for all of them, where PutMessage takes one
// each; under SYNC_FLUSH without the transient pool, where every put is a pwrite system call, one
// pwrite. The broker groups the single sends of one connection's read pass.
//
// Messages are encoded when added (Store.AddToGroup), so the group keeps no reference to them: their
// bodies may change or go once added. A group is reused: after PutGroup, Results and Topic describe the
// messages put until the next message is added, which starts a new group (keeping the capacity, up to
// maxGroupKeptBytes). Not safe for concurrent use.
type PutGroup struct {
	// Results holds each added message's outcome after PutGroup, in the order added: as PutMessage's
	// (QueueOffset, WroteOffset, StoreTimestamp; MsgNum 1).
	Results []PutResult

	buf      []byte          // the encoded records, back to back
	sizes    []int32         // each record's length
	counters []*atomic.Int64 // each record's queue offset counter (nil: takes none)
	topics   []string        // each record's topic, for callers that count per topic
	qoffs    []int64         // scratch: the queue offsets taken
	phys     []int64         // scratch: the physical offsets
	put      bool            // PutGroup ran: the next add starts a new group
}

// maxGroupKeptBytes is the buffer a PutGroup keeps between uses; a larger one is dropped at Reset, so a
// group that once took a few large messages does not hold their room. (The broker's groups stay below
// it: 256 KiB of messages of at most 64 KiB each.)
const maxGroupKeptBytes = 1 << 20

// Len is the number of messages added since the last PutGroup.
func (g *PutGroup) Len() int {
	if g.put {
		return 0
	}
	return len(g.sizes)
}

// Bytes is the encoded size of the messages added since the last PutGroup.
func (g *PutGroup) Bytes() int {
	if g.put {
		return 0
	}
	return len(g.buf)
}

// Topic is the topic of message i (in the order added), also after PutGroup.
func (g *PutGroup) Topic(i int) string { return g.topics[i] }

// Record is message i's encoded record (in the order added), a view into g valid until the next
// message is added or Reset.
func (g *PutGroup) Record(i int) []byte {
	off := 0
	for _, n := range g.sizes[:i] {
		off += int(n)
	}
	return g.buf[off : off+int(g.sizes[i])]
}

// AppendMessage encodes m at the end of g, taking no queue offset counter: for MessageStore
// implementations other than Store (Store.AddToGroup checks m and finds its queue first).
func (g *PutGroup) AppendMessage(m *codec.Message) error {
	return g.add(m, nil)
}

// add encodes m at the end of g, to take its queue offset from counter (nil: none).
func (g *PutGroup) add(m *codec.Message, counter *atomic.Int64) error {
	if g.put {
		g.Reset()
	}
	start := len(g.buf)
	g.buf = append(g.buf, make([]byte, m.EncodedSize())...) // append of make: grows in place
	n, err := m.Encode(g.buf[start:])
	if err != nil {
		g.buf = g.buf[:start]
		return err
	}
	g.buf = g.buf[:start+n]
	g.sizes = append(g.sizes, int32(n))
	g.counters = append(g.counters, counter)
	g.topics = append(g.topics, m.Topic)
	return nil
}

// Reset empties g for reuse (adding to a group that was put does it).
func (g *PutGroup) Reset() {
	g.put = false
	g.Results = g.Results[:0]
	if cap(g.buf) > maxGroupKeptBytes {
		g.buf = nil
	}
	g.buf = g.buf[:0]
	g.sizes = g.sizes[:0]
	clear(g.counters)
	g.counters = g.counters[:0]
	clear(g.topics)
	g.topics = g.topics[:0]
}

// GroupsPuts reports whether PutGroup saves work over one PutMessage per message: always true here (see
// PutGroup; most of all under SYNC_FLUSH without the transient pool, where each put is a pwrite).
func (s *Store) GroupsPuts() bool { return true }

// AddToGroup checks m as PutMessage does and adds it to g, encoded. A message PutMessage would refuse is
// not added: its status and error are returned as PutMessage's would be (a store that cannot take puts
// now is only found by PutGroup). m is not retained. Safe for concurrent use with other groups.
func (s *Store) AddToGroup(g *PutGroup, m *codec.Message) (PutMessageStatus, error) {
	if _, st, err := s.admit(m); err != nil {
		return st, err
	}
	if err := g.add(m, s.queueCounter(m.Topic, m.QueueID, m.SysFlag)); err != nil {
		s.commitLog.putFailTimes.Add(1)
		return MessageIllegal, fmt.Errorf("%w: %w", ErrMessageIllegal, err)
	}
	return PutOK, nil
}

// PutGroup stores every message added to g since the last PutGroup, in the order added, as one
// reservation: consecutive records in the CommitLog, each with the next queue offset of its own queue,
// one store timestamp, one write and one publication. g.Results[i] is message i's outcome; they all
// succeed or all fail alike (a store not writeable, a full disk, a file that could not be created),
// and the error is then returned too. Safe for concurrent use with other groups.
func (s *Store) PutGroup(g *PutGroup) error {
	n := g.Len()
	g.Results = g.Results[:0]
	if n == 0 {
		return nil
	}
	g.put = true
	start := time.Now()
	var res PutResult
	var err error
	if st, cerr := s.checkWriteable(); cerr != nil {
		s.commitLog.putFailTimes.Add(int64(n))
		res, err = PutResult{Status: st}, cerr
	} else {
		g.qoffs = growInt64(g.qoffs, n)
		g.phys = growInt64(g.phys, n)
		res, err = s.commitLog.putRecords(g.buf, n, nil, g.counters, g.qoffs, g.phys)
		if err != nil {
			err = s.putError(err)
		}
	}
	elapsed := time.Since(start).Seconds()
	for i := 0; i < n; i++ {
		r := PutResult{Status: res.Status}
		if err == nil {
			r = PutResult{Status: PutOK, WroteOffset: g.phys[i], WroteBytes: g.sizes[i], QueueOffset: g.qoffs[i],
				MsgNum: 1, StoreTimestamp: res.StoreTimestamp}
		}
		g.Results = append(g.Results, r)
		s.commitLog.putSeconds.Observe(elapsed)
	}
	return err
}

func growInt64(b []int64, n int) []int64 {
	if cap(b) < n {
		return make([]int64, n)
	}
	return b[:n]
}

// MarkPut ends the group after another implementation's PutGroup filled Results: Len is 0 and the next
// message added starts a new group.
func (g *PutGroup) MarkPut() { g.put = true }
