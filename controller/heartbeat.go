package controller

import (
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// brokerKey identifies one replica. Java's BrokerIdentityInfo also holds the cluster name;
// the groups are keyed by broker name alone (as the FSM keys them), so a heartbeat that
// leaves clusterName out still counts.
type brokerKey struct {
	brokerName string
	brokerID   int64
}

// liveInfo is what the last heartbeats of one replica said (Java BrokerLiveInfo).
type liveInfo struct {
	clusterName      string
	address          string
	lastUpdate       time.Time
	timeout          time.Duration
	conn             netio.Conn // the connection the last heartbeat came on; may be nil
	epoch            int32
	maxOffset        int64
	confirmOffset    int64
	electionPriority int32
}

// heartbeats is Java's DefaultBrokerHeartbeatManager: the replicas' liveness, kept in memory
// on every controller (only the leader's matters: brokers heartbeat to the leader). A
// replica is alive while its last heartbeat is younger than its timeout (the heartbeat's
// heartbeatTimeoutMills, else the configured default). Safe for concurrent use.
type heartbeats struct {
	now            func() time.Time
	defaultTimeout func() time.Duration

	mu   sync.Mutex
	live map[brokerKey]*liveInfo
}

func newHeartbeats(now func() time.Time, defaultTimeout func() time.Duration) *heartbeats {
	return &heartbeats{now: now, defaultTimeout: defaultTimeout, live: map[brokerKey]*liveInfo{}}
}

// onHeartbeat records a heartbeat. As in Java, the epoch and offsets only move forward: a
// heartbeat with a lower epoch, or the same epoch and a lower offset, refreshes liveness
// only.
func (h *heartbeats) onHeartbeat(hdr *codec.BrokerHeartbeatRequestHeader, c netio.Conn) {
	key := brokerKey{hdr.BrokerName, hdr.BrokerID.Value}
	timeout := h.defaultTimeout()
	if hdr.HeartbeatTimeoutMills.Set && hdr.HeartbeatTimeoutMills.Value > 0 {
		timeout = time.Duration(hdr.HeartbeatTimeoutMills.Value) * time.Millisecond
	}
	epoch := hdr.Epoch.Or(-1)
	maxOffset := hdr.MaxOffset.Or(-1)
	priority := hdr.ElectionPriority.Or(1<<31 - 1)
	now := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	prev, ok := h.live[key]
	if !ok {
		h.live[key] = &liveInfo{clusterName: hdr.ClusterName, address: hdr.BrokerAddr, lastUpdate: now, timeout: timeout, conn: c,
			epoch: epoch, maxOffset: maxOffset, confirmOffset: hdr.ConfirmOffset.Or(-1), electionPriority: priority}
		return
	}
	prev.address, prev.lastUpdate, prev.timeout, prev.conn, prev.electionPriority = hdr.BrokerAddr, now, timeout, c, priority
	if epoch > prev.epoch || epoch == prev.epoch && maxOffset > prev.maxOffset {
		prev.epoch, prev.maxOffset, prev.confirmOffset = epoch, maxOffset, hdr.ConfirmOffset.Or(-1)
	}
}

// isAlive reports whether the replica's last heartbeat is within its timeout.
func (h *heartbeats) isAlive(brokerName string, id int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	info, ok := h.live[brokerKey{brokerName, id}]
	return ok && !h.now().After(info.lastUpdate.Add(info.timeout))
}

// alive returns the live replicas among ids with what they last reported, for an election
// or a SyncStateSet change.
func (h *heartbeats) alive(brokerName string, ids []int64) []Candidate {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	var out []Candidate
	for _, id := range ids {
		info, ok := h.live[brokerKey{brokerName, id}]
		if ok && !now.After(info.lastUpdate.Add(info.timeout)) {
			out = append(out, Candidate{BrokerID: id, Epoch: info.epoch, MaxOffset: info.maxOffset,
				ElectionPriority: info.electionPriority})
		}
	}
	return out
}

// expire drops the replicas whose heartbeats stopped (Java scanNotActiveBroker) and returns
// them; it closes their connections, as Java does.
func (h *heartbeats) expire() []brokerKey {
	h.mu.Lock()
	now := h.now()
	var gone []brokerKey
	var conns []netio.Conn
	for k, info := range h.live {
		if now.After(info.lastUpdate.Add(info.timeout)) {
			gone = append(gone, k)
			if info.conn != nil {
				conns = append(conns, info.conn)
			}
			delete(h.live, k)
		}
	}
	h.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return gone
}

// onClose drops the replicas whose heartbeats came on c (Java onBrokerChannelClose) and
// returns them.
func (h *heartbeats) onClose(c netio.Conn) []brokerKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	var gone []brokerKey
	for k, info := range h.live {
		if info.conn == c {
			gone = append(gone, k)
			delete(h.live, k)
		}
	}
	return gone
}
