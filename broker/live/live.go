// Package live holds the broker keys that UPDATE_BROKER_CONFIG changes while the broker runs
// and that the planes read on their request paths: one atomic per key, shared by every reader,
// so a send or a pull reads one with a single atomic load (no lock, no allocation) and sees a
// change on its next request. The broker is the only writer (broker/liveconfig.go, which also
// lists the keys that change at run time through other owners: autoCreateTopicEnable and
// autoCreateSubscriptionGroup are the metadata tables').
package live

import "sync/atomic"

// Settings are the run-time keys. Safe for concurrent use; the zero value is every key off
// (brokerPermission 0), so the broker stores each key's configured value before it serves.
type Settings struct {
	// BrokerPermission is brokerPermission (metadata.PermRead 4 | metadata.PermWrite 2): sends
	// and send-backs need write, pulls need read; the registration with the name servers masks
	// every topic's perm with it.
	BrokerPermission atomic.Int32
	// SlaveReadEnable: pull answers carry suggestWhichBrokerId (slaveReadEnable).
	SlaveReadEnable atomic.Bool
	// OffsetCheckInSlave: a slave answers PULL_OFFSET_MOVED for an offset it lacks
	// (offsetCheckInSlave).
	OffsetCheckInSlave atomic.Bool
	// RejectTransactionMessage refuses half messages (rejectTransactionMessage).
	RejectTransactionMessage atomic.Bool
	// NotifyConsumerIdsChanged: consumers are told when their group changes
	// (notifyConsumerIdsChangedEnable).
	NotifyConsumerIdsChanged atomic.Bool
	// EnablePropertyFilter: SQL92 subscriptions are served (enablePropertyFilter); off, their
	// pulls and CHECK_CLIENT_CONFIG are refused as RocketMQ refuses them.
	EnablePropertyFilter atomic.Bool
}
