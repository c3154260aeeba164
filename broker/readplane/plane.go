package readplane

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/filter"
	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// Store is what the read plane reads from the message store; store.MessageStore has it.
type Store interface {
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int,
		filter store.MessageFilter) (*store.GetMessageResult, error)
	LookMessageByOffset(phyOffset int64) (rec []byte, release func(), err error)
	QueryMessage(topic, key string, maxNum int, begin, end int64) (*store.QueryMessageResult, error)
	GetMaxOffsetInQueue(topic string, queueID int32) int64
	GetMinOffsetInQueue(topic string, queueID int32) int64
	GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64, upper bool) int64
	GetEarliestMessageTime(topic string, queueID int32) (int64, error)
	GetCommitLogOffsetInQueue(topic string, queueID int32, consumeQueueOffset int64) int64
	MaxPhyOffset() int64
}

// Topics looks topics up (*metadata.TopicConfigManager).
type Topics interface {
	Get(topic string) (codec.TopicConfig, bool)
}

// Groups finds a subscription group, creating it when autoCreateSubscriptionGroup and its
// limit allow (*metadata.SubscriptionGroupManager).
type Groups interface {
	FindOrCreate(group string) (codec.SubscriptionGroupConfig, error)
}

// Offsets stores a pull's commit offset when it lies within [0, the queue's max offset]
// (*metadata.ConsumerOffsetManager).
type Offsets interface {
	CommitChecked(group, topic string, queueID int32, offset, maxOffset int64) error
}

// Subscriptions are the consumer groups' subscriptions from their heartbeats (the broker's
// ConsumerManager); nil when the group has no subscription to the topic.
type Subscriptions interface {
	FindSubscriptionData(group, topic string) *codec.SubscriptionData
}

// Pool runs a woken pull's second pass (the broker's pull pool). Submit queues fn(req) or
// returns an error at once when the pool is full or closed; req carries the reply for the
// pool's own fast-failure answer.
type Pool interface {
	Submit(req *remoting.Request, fn func(*remoting.Request)) error
}

// Settings are the broker settings the read plane uses, fixed for its lifetime; the ones that
// change at run time (brokerPermission, slaveReadEnable, offsetCheckInSlave,
// enablePropertyFilter) are Deps.Live's.
type Settings struct {
	// BrokerIP is brokerIP1 as text, for the "pulling message is forbidden" remark.
	BrokerIP string
	// LongPollingEnable and ShortPollingTime (shortPollingTimeMills): a SUSPEND pull that
	// finds nothing waits for its own suspend timeout, or ShortPollingTime when long
	// polling is off (which is then also the hold service's sweep period).
	LongPollingEnable bool
	ShortPollingTime  time.Duration
	// IsSlave (brokerRole=SLAVE): no commit offsets stored; with Live.OffsetCheckInSlave false
	// an offset the slave lacks answers PULL_RETRY_IMMEDIATELY instead of PULL_OFFSET_MOVED.
	IsSlave bool
	// DefaultQueryMaxNum caps a query by unique key.
	DefaultQueryMaxNum int
	// HotMaxBehindBytes: a pull whose first entry lies at most this far behind the CommitLog's
	// end runs on the event loop, else on the pull pool (pull.go). The broker computes it
	// (RAM × accessMessageInMemoryMaxRatio / 100) and uses the same bound for send-backs.
	HotMaxBehindBytes int64
}

// Deps are the read plane's collaborators. Store, Topics, Groups, Offsets, Subscriptions, Pool
// and Live are required.
type Deps struct {
	Store         Store
	Topics        Topics
	Groups        Groups
	Offsets       Offsets
	Subscriptions Subscriptions
	Pool          Pool
	Settings      Settings
	// Live holds the keys that change while the broker runs: brokerPermission (pulls need
	// read), slaveReadEnable (answers carry suggestWhichBrokerId), offsetCheckInSlave and
	// enablePropertyFilter (SQL92 subscriptions served).
	Live *live.Settings
	// Registerer receives the plane's collectors (ringmq_broker_pull_runs_total,
	// ringmq_broker_pulls_held). nil = not registered.
	Registerer prometheus.Registerer
	// HoldFull counts pulls answered SYSTEM_BUSY because the hold table is full (the broker's
	// ringmq_broker_system_busy_total{reason="pull_hold_full"}). nil = not counted.
	HoldFull prometheus.Counter
	// Clock, nil = time.Now.
	Clock func() time.Time
	// Logger, nil = discard.
	Logger *slog.Logger
}

// Plane serves the read requests. Safe for concurrent use; the handlers are called by the
// broker's dispatcher (broker/routes.go), Start and Stop once each by its service lifecycle.
type Plane struct {
	store         Store
	topics        Topics
	groups        Groups
	offsets       Offsets
	subscriptions Subscriptions
	pool          Pool
	set           Settings
	live          *live.Settings
	clock         func() time.Time
	logger        *slog.Logger

	pulls   sync.Pool // *pullRequest
	hold    *pullRequestHoldService
	filters *filter.Cache // compiled SQL92 subscriptions

	// Collectors; the counters are resolved once (a labelled look-up per pull would cost a
	// hash and more).
	pullRuns                             *prometheus.CounterVec
	pullsOnLoop, pullsOnPool, pullReruns prometheus.Counter
	pullsHeld                            prometheus.Gauge
	holdFull                             prometheus.Counter
}

// ErrDeps: New was given a nil required dependency.
var ErrDeps = errors.New("readplane: missing dependency")

// New builds the plane and its hold service (not started). It registers the plane's
// collectors on deps.Registerer.
func New(deps Deps) (*Plane, error) {
	if deps.Store == nil || deps.Topics == nil || deps.Groups == nil || deps.Offsets == nil ||
		deps.Subscriptions == nil || deps.Pool == nil || deps.Live == nil {
		return nil, ErrDeps
	}
	p := &Plane{
		store:         deps.Store,
		topics:        deps.Topics,
		groups:        deps.Groups,
		offsets:       deps.Offsets,
		subscriptions: deps.Subscriptions,
		pool:          deps.Pool,
		set:           deps.Settings,
		live:          deps.Live,
		clock:         deps.Clock,
		logger:        deps.Logger,
		holdFull:      deps.HoldFull,
		filters:       filter.NewCache(),
	}
	if p.clock == nil {
		p.clock = time.Now
	}
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	p.pullRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ringmq_broker_pull_runs_total",
		Help: "Pull store reads, by where they ran (loop: event loop, pool: pull pool, rerun: after long polling).",
	}, []string{"where"})
	p.pullsHeld = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "ringmq_broker_pulls_held",
		Help: "Pull requests parked by long polling.",
	})
	if deps.Registerer != nil {
		if err := deps.Registerer.Register(p.pullRuns); err != nil {
			return nil, err
		}
		if err := deps.Registerer.Register(p.pullsHeld); err != nil {
			deps.Registerer.Unregister(p.pullRuns)
			return nil, err
		}
	}
	p.pullsOnLoop = p.pullRuns.WithLabelValues("loop")
	p.pullsOnPool = p.pullRuns.WithLabelValues("pool")
	p.pullReruns = p.pullRuns.WithLabelValues("rerun")
	p.pulls.New = func() any { return newPullRequest(p) }
	p.hold = newPullRequestHoldService(p, defaultHoldConfig(p.set))
	return p, nil
}

// Start starts the long-polling hold service.
func (p *Plane) Start() error { return p.hold.Start() }

// Stop answers every parked pull and stops the hold service; a pull that would park later
// is answered at once. Safe to call more than once.
func (p *Plane) Stop(ctx context.Context) error { return p.hold.Stop(ctx) }

// HeldCount is the number of pulls parked by long polling (including ones not yet in the
// hold table).
func (p *Plane) HeldCount() int { return p.hold.HeldCount() }

// OnMessageArriving is the long-polling part of the store's arriving listener: it runs on
// the store's dispatcher goroutine for every ConsumeQueue append and never blocks.
func (p *Plane) OnMessageArriving(topic string, queueID int32, logicOffset, tagsCode, storeTimestamp int64,
	properties []byte) {
	p.hold.NotifyMessageArriving(topic, queueID, logicOffset, tagsCode, storeTimestamp, properties)
}
