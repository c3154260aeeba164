package ha

import (
	"math"
	"slices"
	"time"
)

// In controller mode a SYNC send is acknowledged once every replica of the SyncStateSet holds it
// (RocketMQ 5 with allAckInSyncStateSet), so that whichever of them the controller elects next has every
// acknowledged message. The master's server tracks each replica's acknowledged offset by brokerId (from
// the epoch handshake), and its acknowledged offset (AckedOffset, what Replicas waits on) is the lowest
// of the in-sync replicas' — or, with no replica in sync, every byte (the master alone: Replicas decides
// with minInSyncReplicas whether that may acknowledge a send).
//
// The set itself belongs to the controller: the broker asks it to shrink the set (a replica fell behind
// or went away) or expand it (a replica caught up), and applies the answer with SetSyncStateSet. Applying
// a shrink only after the controller has it keeps the guarantee: a replica leaves the set, and stops
// holding back acknowledgements, only once it can no longer be elected. A replica joins only once it
// holds everything acknowledged so far (ReplicaStates tells the broker which have caught up), so the
// acknowledged offset of a replica in the set never moves back.

// ReplicaState is what the master knows of one replica (controller mode).
type ReplicaState struct {
	BrokerID  int64
	Addr      string // the connection's remote address; "" when not connected
	AckOffset int64  // the highest offset it reported
	// CaughtUpAt is the last time a report of its reached the master's CommitLog end of that moment.
	CaughtUpAt time.Time
}

// SetSyncStateSet sets the replicas (brokerIds, the master's own left out) whose acknowledgements a
// SYNC send waits for; controller mode only. Call it with what the controller accepted.
func (s *Server) SetSyncStateSet(ids []int64) {
	set := slices.Clone(ids)
	s.mu.Lock() // recomputeAck reads the set under s.mu: none computes with the old set after this
	s.syncSet.Store(&set)
	s.mu.Unlock()
	s.recomputeAck()
}

// SyncStateSet returns the replicas (brokerIds, the master's left out) set by SetSyncStateSet.
func (s *Server) SyncStateSet() []int64 {
	if p := s.syncSet.Load(); p != nil {
		return slices.Clone(*p)
	}
	return nil
}

// ReplicaStates returns every replica that has connected since this server started (controller mode),
// by brokerId.
func (s *Server) ReplicaStates() []ReplicaState {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ReplicaState, 0, len(s.mu.replicas))
	for _, r := range s.mu.replicas {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b ReplicaState) int { return int(a.BrokerID - b.BrokerID) })
	return out
}

// replicaReport records a report from a controller-mode replica and moves the acknowledged offset.
func (s *Server) replicaReport(c *masterConn, off int64) {
	now := time.Now()
	end := s.log.MaxPhyOffset()
	s.mu.Lock()
	r := s.mu.replicas[c.brokerID]
	if r == nil {
		r = &ReplicaState{BrokerID: c.brokerID}
		s.mu.replicas[c.brokerID] = r
	}
	r.Addr = c.remote
	r.AckOffset = off
	if off >= end {
		r.CaughtUpAt = now
	}
	s.mu.Unlock()
	s.recomputeAck()
}

// replicaGone marks a controller-mode replica's connection closed.
func (s *Server) replicaGone(c *masterConn) {
	s.mu.Lock()
	if r := s.mu.replicas[c.brokerID]; r != nil && r.Addr == c.remote {
		r.Addr = ""
	}
	s.mu.Unlock()
}

// recomputeAck sets the acknowledged offset to the lowest of the in-sync replicas' (every byte when
// the set is empty) and tells the listener when it rose. Unlike 4.x mode's it may move back: a replica
// that joins the set holds back acknowledgements until it has reported that far, and an empty set,
// whose every byte counts as acknowledged, is no promise once a replica joins it.
func (s *Server) recomputeAck() {
	s.mu.Lock()
	p := s.syncSet.Load()
	if p == nil {
		s.mu.Unlock()
		return
	}
	low := int64(math.MaxInt64)
	for _, id := range *p {
		r := s.mu.replicas[id]
		if r == nil {
			low = 0
			break
		}
		low = min(low, r.AckOffset)
	}
	rose := low > s.acked.Swap(low)
	s.mu.Unlock()
	if fn := s.onAck.Load(); rose && fn != nil {
		(*fn)()
	}
}
