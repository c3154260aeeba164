package sendplane

import (
	"context"
	"errors"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/round"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
)

// Store is what the send plane uses of the message store; store.MessageStore has it.
type Store interface {
	PutMessage(m *codec.Message) (store.PutResult, error)
	PutMessages(batch *store.BatchPut) (store.PutResult, error)
	GroupsPuts() bool
	AddToGroup(g *store.PutGroup, m *codec.Message) (store.PutMessageStatus, error)
	PutGroup(g *store.PutGroup) error
	ReserveWait() bool
	WaitDurableReserved(endOffset int64, done func(err error, rd *round.Round))
	ReleaseWait()
	IsOSPageCacheBusy() bool
	LookMessageByOffset(phyOffset int64) (rec []byte, release func(), err error)
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int,
		filter store.MessageFilter) (*store.GetMessageResult, error)
	MaxPhyOffset() int64
}

// Topics looks topics up and creates the ones a send, a send-back or a transaction discard
// may create (*metadata.TopicConfigManager).
type Topics interface {
	Get(topic string) (codec.TopicConfig, bool)
	CreateInSendMessage(topic, defaultTopic string, clientQueueNums, topicSysFlag int32) (codec.TopicConfig, bool)
	CreateInSendMessageBack(topic string, queueNums, perm, topicSysFlag int32) (codec.TopicConfig, error)
}

// Groups finds a subscription group, creating it when autoCreateSubscriptionGroup and its
// limit allow (*metadata.SubscriptionGroupManager): retry limits and retry queues.
type Groups interface {
	FindOrCreate(group string) (codec.SubscriptionGroupConfig, error)
}

// Offsets keeps the transaction service's two cursors as the offsets of the built-in group
// CID_RMQ_SYS_TRANS (*metadata.ConsumerOffsetManager).
type Offsets interface {
	Query(group, topic string, queueID int32) int64
	Commit(group, topic string, queueID int32, offset int64)
}

// Producers are the producers' connections from their heartbeats (*clients.ProducerManager):
// a reply is pushed to its requester by client id, a transaction check goes to a live
// producer of the half's group.
type Producers interface {
	FindConn(clientID string) (netio.Conn, bool)
	AvailableConn(group string) (netio.Conn, bool)
}

// Replicas is the SYNC_MASTER wait (*ha.Replicas): done learns, once, whether a slave
// acknowledged every byte below msgEnd (nil, ha.ErrSlaveNotAvailable, or a timeout or close
// error). It returns an error instead of calling done only when it cannot queue the wait.
// The plane passes a waiter bound once per pooled request, so a wait allocates nothing.
type Replicas interface {
	Wait(msgEnd int64, done ha.Waiter) error
}

// Settings are the broker settings the send plane uses, fixed for its lifetime; the ones that
// change at run time (brokerPermission, rejectTransactionMessage) are Deps.Live's.
type Settings struct {
	// BrokerIP is brokerIP1 as text, for remarks; BrokerAddr is "ip:port" as registered
	// with name servers (a pushed reply's storeHost).
	BrokerIP   string
	BrokerAddr string
	// BrokerName is a transaction check's brokerName.
	BrokerName string
	// ClusterName (brokerClusterName) is stamped on every sent message as CLUSTER.
	ClusterName string
	// IsSlave (brokerRole=SLAVE): no topic auto-creation, send-back and END_TRANSACTION
	// refused, no transaction checks.
	IsSlave bool
	// SyncFlush (flushDiskType=SYNC_FLUSH): a send waits for durability unless WAIT=false.
	SyncFlush bool
	// MaxMessageSize bounds a body (a batch's whole body).
	MaxMessageSize int
	// DelayLevels is the size of the messageDelayLevel table: a delay level is clamped to it.
	DelayLevels int
	// HotMaxBehindBytes: a send-back or END_TRANSACTION whose record lies at most this far
	// behind the CommitLog's end runs on the event loop, else on the query pool. The broker
	// computes it and gives the read plane the same bound for pulls.
	HotMaxBehindBytes int64
	// The transaction check service: checkTransactionMessageEnable, transactionCheckInterval
	// (> 0), transactionTimeOut, transactionCheckMax, and fileReservedTime (a half stored
	// longer ago is retired unchecked).
	CheckTransactionMessage  bool
	TransactionCheckInterval time.Duration
	TransactionTimeOut       time.Duration
	TransactionCheckMax      int
	FileReservedTime         time.Duration
}

// Deps are the send plane's collaborators. Store, Topics, Groups, Offsets, Producers, UniqKeys
// and Live are required.
type Deps struct {
	Store     Store
	Topics    Topics
	Groups    Groups
	Offsets   Offsets
	Producers Producers
	// Replicas is the SYNC_MASTER wait; nil on any other role (no send waits for a slave).
	Replicas Replicas
	// UniqKeys makes the UNIQ_KEY of a message sent without one.
	UniqKeys *codec.UniqKeyGenerator
	// StoreHost (brokerIP1:listenPort) is written into records and offsetMsgIds.
	StoreHost netip.AddrPort
	Settings  Settings
	// Live holds the keys that change while the broker runs: brokerPermission (sends and
	// send-backs need write) and rejectTransactionMessage.
	Live *live.Settings
	// PCBusy and FlushQueueFull count sends answered SYSTEM_BUSY because the page cache is
	// busy or the group commit queue is full (the broker's
	// ringmq_broker_system_busy_total{reason="pc_synchronized"} and {reason="flush_queue_full"}).
	// nil = not counted.
	PCBusy         prometheus.Counter
	FlushQueueFull prometheus.Counter
	// SentBack counts a message a consumer group sent back, by the topic it was first sent to
	// (RocketMQ's SNDBCK_PUT_NUMS, topic@group). nil = not counted.
	SentBack func(group, topic string)
	// Clock, nil = time.Now.
	Clock func() time.Time
	// Logger, nil = discard.
	Logger *slog.Logger
}

// Response field values the Java broker adds to every send response (BrokerConfig
// regionId and traceOn defaults).
const (
	defaultRegionID = "DefaultRegion"
	traceOnText     = "true"
)

// Plane serves the send requests and runs the transaction check service. Safe for concurrent
// use; the handlers are called by the broker's dispatcher (broker/routes.go), StartTransactions
// and StopTransactions once each by its service lifecycle.
type Plane struct {
	store     Store
	topics    Topics
	groups    Groups
	offsets   Offsets
	producers Producers
	replicas  Replicas
	uniqKeys  *codec.UniqKeyGenerator
	storeHost netip.AddrPort
	set       Settings
	live      *live.Settings
	clock     func() time.Time
	logger    *slog.Logger

	sendRequests sync.Pool // *sendRequest
	tx           *transactionService
	// grouping: the single sends of one connection's read pass are stored together (see connGroup).
	grouping bool
	batches  sync.Pool // *sendBatch

	pcBusy, flushQueueFull prometheus.Counter
	sentBack               func(group, topic string)
}

// ErrDeps: New was given a nil required dependency.
var ErrDeps = errors.New("sendplane: missing dependency")

// New builds the plane and its transaction service (not started); the transaction cursors
// are read from deps.Offsets now.
func New(deps Deps) (*Plane, error) {
	if deps.Store == nil || deps.Topics == nil || deps.Groups == nil || deps.Offsets == nil ||
		deps.Producers == nil || deps.UniqKeys == nil || deps.Live == nil {
		return nil, ErrDeps
	}
	p := &Plane{
		store:          deps.Store,
		topics:         deps.Topics,
		groups:         deps.Groups,
		offsets:        deps.Offsets,
		producers:      deps.Producers,
		replicas:       deps.Replicas,
		uniqKeys:       deps.UniqKeys,
		storeHost:      deps.StoreHost,
		set:            deps.Settings,
		live:           deps.Live,
		clock:          deps.Clock,
		logger:         deps.Logger,
		pcBusy:         deps.PCBusy,
		flushQueueFull: deps.FlushQueueFull,
		sentBack:       deps.SentBack,
	}
	p.grouping = p.store.GroupsPuts()
	p.batches.New = func() any { return new(sendBatch) }
	if p.clock == nil {
		p.clock = time.Now
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	if p.pcBusy == nil {
		p.pcBusy = prometheus.NewCounter(prometheus.CounterOpts{Name: "unregistered"})
	}
	if p.sentBack == nil {
		p.sentBack = func(string, string) {}
	}
	if p.flushQueueFull == nil {
		p.flushQueueFull = prometheus.NewCounter(prometheus.CounterOpts{Name: "unregistered"})
	}
	p.sendRequests.New = func() any { return newSendRequest(p) }
	p.tx = newTransactionService(p)
	return p, nil
}

// StartTransactions reads the transaction op records written since the last saved cursor (so
// END_TRANSACTION knows every retired half before the server accepts one) and, on a master
// with checkTransactionMessageEnable, starts the check service.
func (p *Plane) StartTransactions() error {
	return p.tx.start(p.set.CheckTransactionMessage && !p.set.IsSlave)
}

// StopTransactions stops the check service and hands the transaction cursors to the
// consumer offsets, whose flusher (stopped later) writes them.
func (p *Plane) StopTransactions(ctx context.Context) error { return p.tx.shutdown(ctx) }

// CheckTransactions runs the check service once, now, on the caller's goroutine (tests and
// tools; the service runs it every TransactionCheckInterval).
func (p *Plane) CheckTransactions() { p.tx.checkOnce() }

// TransactionChecks counts CHECK_TRANSACTION_STATE requests sent.
func (p *Plane) TransactionChecks() int64 { return p.tx.Checks() }

// TransactionChecking reports whether the check service's goroutine was started.
func (p *Plane) TransactionChecking() bool { return p.tx.startedGo.Load() }

// TransactionHalfOffset is the half queue cursor H: every half below it is retired.
func (p *Plane) TransactionHalfOffset() int64 {
	p.tx.mu.Lock()
	defer p.tx.mu.Unlock()
	return p.tx.mu.halfOffset
}

// Settings are the settings the plane was built with.
func (p *Plane) Settings() Settings { return p.set }

// clampDelayLevel caps a delay level at the table's last level.
func (p *Plane) clampDelayLevel(level int) int { return min(level, p.set.DelayLevels) }

// AppendScheduleProperties appends what a message delayed at level (already clamped to the
// table) carries in SCHEDULE_TOPIC_XXXX — DELAY, REAL_TOPIC, REAL_QID — and returns the
// schedule queue it goes to (level − 1). p must end with a separator (or be empty). The
// plane writes such records (delayed sends, retries, delayed commits); the broker's schedule
// service delivers them.
func AppendScheduleProperties(p []byte, level int, realTopic string, realQueueID int32) ([]byte, int32) {
	p = appendPropertyInt(p, codec.PropertyDelayTimeLevel, int64(level))
	p = codec.AppendProperty(p, codec.PropertyRealTopic, realTopic)
	p = appendPropertyInt(p, codec.PropertyRealQueueID, int64(realQueueID))
	return p, int32(level - 1)
}
