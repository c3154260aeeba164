package broker

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// The data plane: send (send.go), pull (pull.go) with long polling (longpoll.go), query
// and view (query.go), queue offsets and times (queueinfo.go), delayed delivery (delay.go),
// retry and DLQ (sendback.go), transactions (transaction.go), request-reply (reply.go).
//
// Where each request runs is in routes.go. Delayed delivery (delay.go) and the transaction
// check service (transaction.go) run on their own goroutines.
//
// Every processor answers through its request's Reply (respond.go).

// Response field values the Java broker adds to every send response (BrokerConfig
// regionId and traceOn defaults).
const (
	defaultRegionID = "DefaultRegion"
	traceOnText     = "true"
)

// dataPlane holds the data plane's pools and settings derived from the config once.
// Safe for concurrent use.
type dataPlane struct {
	sendRequests sync.Pool // *sendRequest
	pulls        sync.Pool // *pullRequest

	syncFlush      bool
	maxMessageSize int
	clusterName    string
	brokerIP       string // brokerIP1 as text, for remarks
	maxDelayLevel  int
	// hotPullMaxBehindBytes: a pull whose data starts at most this far behind the
	// CommitLog's end runs on the event loop (pull.go).
	hotPullMaxBehindBytes int64

	// Counters resolved once (a labelled look-up per pull would cost a hash and more).
	pullsOnLoop, pullsOnPool, pullReruns prometheus.Counter
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
	d.pullsOnLoop = b.metrics.pullRuns.WithLabelValues("loop")
	d.pullsOnPool = b.metrics.pullRuns.WithLabelValues("pool")
	d.pullReruns = b.metrics.pullRuns.WithLabelValues("rerun")
	d.sendRequests.New = func() any { return newSendRequest(b) }
	d.pulls.New = func() any { return newPullRequest(b) }
	return d
}

// hotPullThreshold is RAM × ratio / 100; with RAM unknown it assumes 1 GiB. Pulls and
// send-backs / END_TRANSACTION (isHotOffset) share it.
func hotPullThreshold(totalRAMBytes int64, ratioPercent int) int64 {
	if totalRAMBytes <= 0 {
		totalRAMBytes = 1 << 30
	}
	return totalRAMBytes / 100 * int64(ratioPercent)
}

// initDataPlane registers the data-plane processors (send, batch send, pull, query,
// view, max/min offset, search by timestamp, earliest store time), creates the
// long-polling hold service and hooks it to the store's arriving listener, and adds
// its services. It runs after initControlPlane (the managers exist).
func (b *Broker) initDataPlane() error {
	levels, err := ParseDelayLevels(b.cfg.MessageDelayLevel)
	if err != nil {
		return fmt.Errorf("%w: key messageDelayLevel: %w", ErrConfig, err)
	}
	// The store writes a SCHEDULE_TOPIC_XXXX entry's delivery time into its tag field,
	// so it needs the level table before the first delayed send.
	b.store.SetDelayLevelTable(levels)
	b.data = newDataPlane(b, len(levels))
	b.uniqKeys = codec.NewUniqKeyGenerator(b.storeHost.Addr(), os.Getpid(), rand.Int32())

	b.pullHold = newPullRequestHoldService(b, defaultHoldConfig(b.cfg))
	b.addService("pull request hold", b.pullHold.Start, b.pullHold.Stop)
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
