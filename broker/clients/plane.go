// Package clients is the broker's client plane: the registries of live producers and
// consumers (heartbeats, connection close, expiry), the orderly-consumption queue locks, and
// the requests that maintain them or read consumer offsets — HEART_BEAT (34),
// UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38), LOCK_BATCH_MQ (41),
// UNLOCK_BATCH_MQ (42), QUERY_CONSUMER_OFFSET (14), UPDATE_CONSUMER_OFFSET (15),
// CHECK_CLIENT_CONFIG (46).
//
// All of them run on the event loop (broker/routes.go): they touch memory only; a retry
// topic or subscription group a heartbeat creates is written by the metadata writer.
//
// It depends on the metadata tables (broker/metadata), four read-only store counters
// (Store) and the request/reply types (broker/remoting); the broker wires it and hands
// the registries to the planes that read them (pull, admin, request-reply, transaction
// check-back).
package clients

import (
	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/broker/metadata"
)

// Store is what the offset requests read of the message store; a store.MessageStore
// satisfies it.
type Store interface {
	GetMinOffsetInQueue(topic string, queueID int32) int64
	GetMaxOffsetInQueue(topic string, queueID int32) int64
	GetCommitLogOffsetInQueue(topic string, queueID int32, consumeQueueOffset int64) int64
	MaxPhyOffset() int64
}

// Deps is what the client plane uses; all are required.
type Deps struct {
	Topics  *metadata.TopicConfigManager
	Groups  *metadata.SubscriptionGroupManager
	Offsets *metadata.ConsumerOffsetManager
	Store   Store

	Consumers *ConsumerManager
	Producers *ProducerManager
	Locks     *RebalanceLockManager
	// Live holds the run-time keys; CHECK_CLIENT_CONFIG reads enablePropertyFilter.
	Live *live.Settings

	// TotalMemoryBytes (the machine's RAM; ≤ 0: unknown) and AccessMessageInMemoryMaxRatio
	// (accessMessageInMemoryMaxRatio) decide whether a queue's first message is still in
	// memory (QUERY_CONSUMER_OFFSET).
	TotalMemoryBytes              func() int64
	AccessMessageInMemoryMaxRatio int
}

// Plane serves the client requests; safe for concurrent use.
type Plane struct {
	d Deps
}

// New builds the client plane.
func New(d Deps) *Plane { return &Plane{d: d} }

// RemoveExpiredLocks forgets the orderly-consumption locks nobody renewed
// (RebalanceLockManager.RemoveExpired); the broker's client housekeeping calls it.
func (p *Plane) RemoveExpiredLocks() int { return p.d.Locks.RemoveExpired() }
