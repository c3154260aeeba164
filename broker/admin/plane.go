package admin

import (
	"context"
	"iter"
	"log/slog"
	"time"

	"github.com/ringmq/ringmq/broker/brokerstats"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/store"
)

// Store is what the admin plane reads from (and deletes in) the message store; a
// store.MessageStore satisfies it.
type Store interface {
	GetMinOffsetInQueue(topic string, queueID int32) int64
	GetMaxOffsetInQueue(topic string, queueID int32) int64
	GetCommitLogOffsetInQueue(topic string, queueID int32, consumeQueueOffset int64) int64
	GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64, upper bool) int64
	LookMessageByOffset(phyOffset int64) (rec []byte, release func(), err error)
	MinPhyOffset() int64
	MaxPhyOffset() int64
	BeginTimeInLock() time.Duration
	Stats() store.Stats
	// DeleteTopics removes topics' ConsumeQueues (DELETE_TOPIC_IN_BROKER).
	DeleteTopics(topics ...string) error
	// QueueTopics lists the topics that have ConsumeQueues (CLEAN_UNUSED_TOPIC).
	QueueTopics() []string
	// CleanExpiredConsumeQueues deletes the ConsumeQueues whose records are all gone
	// (CLEAN_EXPIRED_CONSUMEQUEUE).
	CleanExpiredConsumeQueues() (int, error)
	// DeleteExpiredFilesManually has retention delete expired CommitLog files whatever the hour
	// (DELETE_EXPIRED_COMMITLOG).
	DeleteExpiredFilesManually()
	// ConsumeQueueEntry reads one ConsumeQueue entry (QUERY_CONSUME_QUEUE).
	ConsumeQueueEntry(topic string, queueID int32, offset int64) (store.ConsumeQueueEntry, bool)
}

var _ Store = store.MessageStore(nil)

// Client is one live client connection (RocketMQ's Connection).
type Client struct {
	Addr     string // the connection's remote address, ip:port
	ClientID string
	Language codec.LanguageCode
	Version  int32 // the client's MQVersion ordinal
	// LastUpdate is the client's last heartbeat.
	LastUpdate time.Time
}

// ConsumerConnection is a live consumer group (GET_CONSUMER_CONNECTION_LIST).
type ConsumerConnection struct {
	Members          []Client // sorted by client id
	Subscriptions    map[string]*codec.SubscriptionData
	ConsumeType      codec.ConsumeType
	MessageModel     codec.MessageModel
	ConsumeFromWhere codec.ConsumeFromWhere
}

// Consumers is the registry of live consumers (the broker's heartbeats).
type Consumers interface {
	// Connection is a group's live members and subscriptions; false when unknown.
	Connection(group string) (ConsumerConnection, bool)
	// ConsumerIDs lists a group's live members' client ids; nil when it has none.
	ConsumerIDs(group string) []string
	// GroupsByTopic lists the live groups subscribed to topic.
	GroupsByTopic(topic string) []string
	// FindSubscriptionData is a live group's subscription to topic, nil when none.
	FindSubscriptionData(group, topic string) *codec.SubscriptionData
	// Oneway sends a request, built afresh by newRequest for each, oneway to every live
	// member of group, and returns how many it was written to.
	Oneway(group string, newRequest func() *codec.RemotingCommand) int
	// Members lists a group's live members with their connections, sorted by client id
	// (the relayed requests, relay.go).
	Members(group string) []Member
}

// Producers is the registry of live producers.
type Producers interface {
	// Connections lists a producer group's live members.
	Connections(group string) []Client
	// Groups lists the producer groups with live members, sorted.
	Groups() []string
}

// DelayOffsets is the schedule service's live cursors, in delayOffset.json's form.
type DelayOffsets interface {
	Encode(pretty bool) []byte
}

// Pool is what GET_BROKER_RUNTIME_INFO reports of one of the broker's bounded pools.
type Pool struct {
	Depth    func() int64 // requests queued now; nil: 0
	Capacity int          // how many may queue
	// HeadWait is how long the oldest queued request has waited, 0 when none waits
	// (RocketMQ's headSlowTimeMills); nil: 0.
	HeadWait func() time.Duration
}

func (p Pool) depth() int64 {
	if p.Depth == nil {
		return 0
	}
	return p.Depth()
}

func (p Pool) headWait() time.Duration {
	if p.HeadWait == nil {
		return 0
	}
	return p.HeadWait()
}

// StorePaths are the store's directories, whose file systems GET_BROKER_RUNTIME_INFO reports.
type StorePaths struct {
	Root, CommitLog, ConsumeQueue string
}

// Pools are the broker's pools that GET_BROKER_RUNTIME_INFO reports.
type Pools struct {
	Pull, Query, Admin Pool
}

// Deps is everything the admin plane uses. All are required but Runtime, Clock and Logger.
type Deps struct {
	Topics  *metadata.TopicConfigManager
	Groups  *metadata.SubscriptionGroupManager
	Offsets *metadata.ConsumerOffsetManager
	Store   Store

	Consumers    Consumers
	Producers    Producers
	DelayOffsets DelayOffsets

	// Runtime samples the store counters behind the TPS figures; nil: they read 0.
	Runtime *RuntimeStats
	// Stats are RocketMQ's broker stats windows (VIEW_BROKER_STATS_DATA, consumeTps); nil: none
	// are kept (every item "not exist", every rate 0).
	Stats *brokerstats.Manager
	Pools Pools
	// StorePaths and DiskUsage give the disk figures of GET_BROKER_RUNTIME_INFO (commitLogDiskRatio,
	// consumeQueueDiskRatio, commitLogDirCapacity). DiskUsage nil: statfs (store.NewOSFS).
	StorePaths StorePaths
	DiskUsage  func(path string) (store.DiskUsage, error)

	// BrokerName names the queues of GET_TOPIC_STATS_INFO and GET_CONSUME_STATS.
	BrokerName string
	// BrokerAddr is the address the broker registers (GET_BROKER_CONSUME_STATS's brokerAddr).
	BrokerAddr string
	// IsSlave: topics and subscription groups are refused (SlaveRemark).
	IsSlave bool
	// BootTime is when the broker was built (bootTimestamp, runtime, GET_BROKER_CONFIG's
	// version).
	BootTime time.Time
	// Properties lists every broker setting as key, value, in GET_BROKER_CONFIG's order.
	Properties iter.Seq2[string, string]
	// ConfigVersion is GET_BROKER_CONFIG's version: RocketMQ's DataVersion of the broker's
	// configuration, advanced by every UPDATE_BROKER_CONFIG. nil: counter 0 at BootTime.
	ConfigVersion func() codec.DataVersion
	// UpdateConfig applies UPDATE_BROKER_CONFIG's properties, all or none: nil when they took
	// effect, a *ConfigRefused when they were refused, any other error when the broker could
	// not keep them (nothing changed then either). nil: the request is not supported.
	UpdateConfig func(props []conf.Property) error
	// ClientCallTimeout replaces the timeouts of the calls relayed to clients (RocketMQ's
	// 10 s, and 5 s per client for consumer status; relay.go) when > 0: only tests set it.
	ClientCallTimeout time.Duration
	// WaitRegistration asks for a registration round with the name servers and waits until
	// one that started after the call has ended, or ctx is done.
	WaitRegistration func(ctx context.Context) error

	Clock  func() time.Time // nil: time.Now
	Logger *slog.Logger     // nil: discard
}

// ConfigRefused is UpdateConfig's refusal, its Remark the answer's: NoPermission for a key that
// cannot change while the broker runs (NO_PERMISSION, RocketMQ's answer to a key of its
// configBlackList), else an unknown key or a value a start would refuse (INVALID_PARAMETER).
type ConfigRefused struct {
	NoPermission bool
	Remark       string
}

func (e *ConfigRefused) Error() string { return e.Remark }

// Plane serves the admin requests. Build it with New; its handlers are safe for concurrent
// use.
type Plane struct {
	d Deps
}

// New builds the admin plane.
func New(d Deps) *Plane {
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.DiskUsage == nil {
		d.DiskUsage = store.NewOSFS(nil).DiskUsage
	}
	if d.Stats == nil {
		d.Stats = brokerstats.New()
	}
	if d.Runtime == nil {
		d.Runtime = NewRuntimeStats(func() store.Stats { return d.Store.Stats() }, d.Clock)
	}
	return &Plane{d: d}
}
