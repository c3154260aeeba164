package broker

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/readplane"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// The data plane: send (send.go), delayed delivery (delay.go), retry and DLQ (sendback.go),
// transactions (transaction.go), request-reply (reply.go); and the read plane (package
// readplane: pull with long polling, query and view, queue offsets and times), which the
// broker builds here and reaches through b.read.
//
// Where each request runs is in routes.go. Delayed delivery (delay.go), the transaction
// check service (transaction.go) and the read plane's long-polling hold service run on their
// own goroutines.
//
// Every processor answers through its request's Reply (respond.go).

// Response field values the Java broker adds to every send response (BrokerConfig
// regionId and traceOn defaults).
const (
	defaultRegionID = "DefaultRegion"
	traceOnText     = "true"
)

// dataPlane holds the send plane's pools and settings derived from the config once.
// Safe for concurrent use.
type dataPlane struct {
	sendRequests sync.Pool // *sendRequest

	syncFlush      bool
	maxMessageSize int
	clusterName    string
	brokerIP       string // brokerIP1 as text, for remarks
	maxDelayLevel  int
	// hotPullMaxBehindBytes is the hot part of the CommitLog (hotPullThreshold): a record at
	// most this far behind its end is read on the event loop. Send-back and END_TRANSACTION
	// use it (isHotOffset), and the read plane gets the same value for pulls
	// (readplane.Settings.HotMaxBehindBytes).
	hotPullMaxBehindBytes int64
}

func newDataPlane(b *Broker, delayLevels int) *dataPlane {
	d := &dataPlane{
		syncFlush:      b.cfg.FlushDiskType == store.SyncFlush,
		maxMessageSize: b.cfg.MaxMessageSize,
		clusterName:    b.cfg.BrokerClusterName,
		brokerIP:       b.storeHost.Addr().String(),
		maxDelayLevel:  delayLevels,
	}
	d.hotPullMaxBehindBytes = hotPullThreshold(b.ctl.totalMemoryBytes, b.cfg.AccessMessageInMemoryMaxRatio)
	d.sendRequests.New = func() any { return newSendRequest(b) }
	return d
}

// hotPullThreshold is RAM × ratio / 100; with RAM unknown it assumes 1 GiB. It stays in the
// broker because the send plane (isHotOffset) uses it as much as the read plane.
func hotPullThreshold(totalRAMBytes int64, ratioPercent int) int64 {
	if totalRAMBytes <= 0 {
		totalRAMBytes = 1 << 30
	}
	return totalRAMBytes / 100 * int64(ratioPercent)
}

// newReadPlane builds the read plane (package readplane) from the config, the metadata
// tables, the consumers' subscriptions, the store and the pull pool.
func (b *Broker) newReadPlane(reg prometheus.Registerer) (*readplane.Plane, error) {
	return readplane.New(readplane.Deps{
		Store:         b.store,
		Topics:        b.topics,
		Groups:        b.subscriptions,
		Offsets:       b.offsets,
		Subscriptions: b.consumers,
		Pool:          poolSubmitter{b.pullPool},
		Settings: readplane.Settings{
			BrokerPermission:   int32(b.cfg.BrokerPermission),
			BrokerIP:           b.data.brokerIP,
			LongPollingEnable:  b.cfg.LongPollingEnable,
			ShortPollingTime:   b.cfg.ShortPollingTimeMills,
			SlaveReadEnable:    b.cfg.SlaveReadEnable,
			IsSlave:            b.cfg.IsSlave(),
			OffsetCheckInSlave: b.cfg.OffsetCheckInSlave,
			DefaultQueryMaxNum: b.cfg.DefaultQueryMaxNum,
			HotMaxBehindBytes:  b.data.hotPullMaxBehindBytes,
		},
		Registerer: reg,
		HoldFull:   b.metrics.busy.WithLabelValues("pull_hold_full"),
		Clock:      b.clock,
		Logger:     b.logger,
	})
}

// poolSubmitter is a workerPool as the read plane's readplane.Pool (the long-polling re-run).
type poolSubmitter struct{ p *workerPool }

func (s poolSubmitter) Submit(rc *remoting.Request, fn func(*remoting.Request)) error {
	return s.p.submit(rc, fn)
}

// initDataPlane sets up the send plane, builds the read plane (b.read) and hooks its
// long-polling hold service to the store's arriving listener, and adds their services. It
// runs after initControlPlane (the metadata tables and the consumer manager exist); the read
// plane registers its collectors on reg.
func (b *Broker) initDataPlane(reg prometheus.Registerer) error {
	levels, err := ParseDelayLevels(b.cfg.MessageDelayLevel)
	if err != nil {
		return fmt.Errorf("%w: key messageDelayLevel: %w", ErrConfig, err)
	}
	// The store writes a SCHEDULE_TOPIC_XXXX entry's delivery time into its tag field,
	// so it needs the level table before the first delayed send.
	b.store.SetDelayLevelTable(levels)
	b.data = newDataPlane(b, len(levels))
	b.uniqKeys = codec.NewUniqKeyGenerator(b.storeHost.Addr(), os.Getpid(), rand.Int32())

	read, err := b.newReadPlane(reg)
	if err != nil {
		return err
	}
	b.read = read
	b.addService("pull request hold", b.read.Start, b.read.Stop)
	// Delayed delivery, send-back, transactions and request-reply (delay.go, sendback.go,
	// transaction.go, reply.go).
	if err := b.initSchedule(levels); err != nil {
		return err
	}
	if err := b.initTransactions(); err != nil {
		return err
	}
	b.store.SetArrivingListener(b.onMessageArriving)

	return nil
}
