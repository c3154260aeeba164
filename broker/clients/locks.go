package clients

import (
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// DefaultLockMaxLiveTime is how long a queue lock lives without renewal
// (rocketmq.broker.rebalance.lockMaxLiveTime, 60 s; clients renew every 20 s).
const DefaultLockMaxLiveTime = 60 * time.Second

// lockQueueKey is one queue of a group's lock table. The broker name is not part of the
// key: a broker only holds locks for its own queues.
type lockQueueKey struct {
	topic   string
	queueID int32
}

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// RebalanceLockManager holds orderly consumers' queue locks (LOCK_BATCH_MQ /
// UNLOCK_BATCH_MQ): per group and queue, the client id that owns it and when it last
// renewed. A lock not renewed within maxLiveTime is free for any client of the group.
// Safe for concurrent use; memory only.
type RebalanceLockManager struct {
	clock       func() time.Time
	maxLiveTime time.Duration

	mu    sync.Mutex
	table map[string]map[lockQueueKey]*lockEntry // group → queue → owner
}

func NewRebalanceLockManager(clock func() time.Time, maxLiveTime time.Duration) *RebalanceLockManager {
	return &RebalanceLockManager{clock: clock, maxLiveTime: maxLiveTime, table: map[string]map[lockQueueKey]*lockEntry{}}
}

// TryLockBatch locks (or renews) each queue for clientID and returns the queues the client
// now holds, in request order. A queue held by another client of the group is skipped
// unless that client's lock expired.
func (m *RebalanceLockManager) TryLockBatch(group string, mqs []codec.MessageQueue, clientID string) []codec.MessageQueue {
	now := m.clock()
	locked := make([]codec.MessageQueue, 0, len(mqs))
	m.mu.Lock()
	defer m.mu.Unlock()
	queues, ok := m.table[group]
	if !ok {
		queues = map[lockQueueKey]*lockEntry{}
		m.table[group] = queues
	}
	for _, mq := range mqs {
		key := lockQueueKey{mq.Topic, mq.QueueID}
		e, held := queues[key]
		switch {
		case !held:
			queues[key] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID:
			e.lastUpdate = now
		case now.Sub(e.lastUpdate) > m.maxLiveTime:
			e.clientID, e.lastUpdate = clientID, now
		default:
			continue
		}
		locked = append(locked, mq)
	}
	return locked
}

// UnlockBatch releases the queues clientID holds; queues held by others are left alone.
func (m *RebalanceLockManager) UnlockBatch(group string, mqs []codec.MessageQueue, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	queues := m.table[group]
	for _, mq := range mqs {
		key := lockQueueKey{mq.Topic, mq.QueueID}
		if e, ok := queues[key]; ok && e.clientID == clientID {
			delete(queues, key)
		}
	}
	if len(queues) == 0 {
		delete(m.table, group)
	}
}

// IsLockedByOther reports whether a live lock on the queue belongs to a client other than
// clientID (the send-back path asks whether a group still consumes orderly).
func (m *RebalanceLockManager) IsLockedByOther(group, topic string, queueID int32, clientID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.table[group][lockQueueKey{topic, queueID}]
	return ok && e.clientID != clientID && m.clock().Sub(e.lastUpdate) <= m.maxLiveTime
}

// HasLiveLocks reports whether any queue of group has an unexpired lock.
func (m *RebalanceLockManager) HasLiveLocks(group string) bool {
	now := m.clock()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.table[group] {
		if now.Sub(e.lastUpdate) <= m.maxLiveTime {
			return true
		}
	}
	return false
}

// RemoveExpired forgets every lock not renewed within maxLiveTime, and groups left without
// locks, and returns how many locks it forgot. An expired lock is free already: forgetting it
// changes no answer, but keeps a client that locks made-up groups and topics from growing the
// table for as long as the broker runs. The broker calls it with its client housekeeping.
func (m *RebalanceLockManager) RemoveExpired() int {
	now := m.clock()
	n := 0
	m.mu.Lock()
	defer m.mu.Unlock()
	for group, queues := range m.table {
		for key, e := range queues {
			if now.Sub(e.lastUpdate) > m.maxLiveTime {
				delete(queues, key)
				n++
			}
		}
		if len(queues) == 0 {
			delete(m.table, group)
		}
	}
	return n
}

// groupCount is the number of groups in the table (tests).
func (m *RebalanceLockManager) groupCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.table)
}
