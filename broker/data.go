package broker

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/broker/delay"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/readplane"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/broker/sendplane"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/store"
)

// The data plane: the send plane (package sendplane: send, batch, retry and DLQ,
// request-reply, END_TRANSACTION and the transaction check service), delayed delivery
// (package delay, the schedule service) and the read plane (package readplane: pull with long
// polling, query and view, queue offsets and times). The broker builds the planes here and
// reaches them through b.send and b.read.
//
// Where each request runs is in routes.go. Delayed delivery (package delay), the transaction
// check service (sendplane) and the read plane's long-polling hold service run on their
// own goroutines.
//
// Every processor answers through its request's Reply (package remoting).

// hotPullThreshold is RAM × ratio / 100; with RAM unknown it assumes 1 GiB: the hot part of
// the CommitLog (hotPullThreshold), read on the event loop. It stays in the broker because
// the send plane (send-back, END_TRANSACTION) uses it as much as the read plane (pulls): both
// get it as Settings.HotMaxBehindBytes.
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
		Store:         meteredStore{MessageStore: b.store, stats: b.metrics.flows, pulls: true, now: b.clock},
		Topics:        b.topics,
		Groups:        b.subscriptions,
		Offsets:       b.offsets,
		Subscriptions: b.consumers,
		Pool:          poolSubmitter{b.pullPool},
		Live:          b.live,
		Settings: readplane.Settings{
			BrokerIP:           b.storeHost.Addr().String(),
			LongPollingEnable:  b.cfg.LongPollingEnable,
			ShortPollingTime:   b.cfg.ShortPollingTimeMills,
			IsSlave:            b.cfg.IsSlave(),
			DefaultQueryMaxNum: b.cfg.DefaultQueryMaxNum,
			HotMaxBehindBytes:  hotPullThreshold(b.ctl.totalMemoryBytes, b.cfg.AccessMessageInMemoryMaxRatio),
		},
		Registerer: reg,
		HoldFull:   b.metrics.busy.WithLabelValues("pull_hold_full"),
		Clock:      b.clock,
		Logger:     b.logger,
	})
}

// newSendPlane builds the send plane (package sendplane) from the config, the metadata
// tables, the producers, the store and the delay table's size. The SYNC_MASTER wait is made
// later, by initReplication: the plane gets syncMasterWait, which reaches it through
// b.replicas, only on a SYNC_MASTER.
func (b *Broker) newSendPlane(delayLevels int) (*sendplane.Plane, error) {
	interval := b.cfg.TransactionCheckInterval
	if interval <= 0 {
		interval = DefaultConfig().TransactionCheckInterval
		b.logger.Warn("broker: transactionCheckInterval must be > 0; using the default", "interval", interval)
	}
	var replicas sendplane.Replicas
	if b.cfg.IsSyncMaster() {
		replicas = syncMasterWait{b}
	}
	return sendplane.New(sendplane.Deps{
		Store:     meteredStore{MessageStore: b.store, stats: b.metrics.flows},
		Topics:    b.topics,
		Groups:    b.subscriptions,
		Offsets:   b.offsets,
		Producers: b.producers,
		Replicas:  replicas,
		UniqKeys:  codec.NewUniqKeyGenerator(b.storeHost.Addr(), os.Getpid(), rand.Int32()),
		StoreHost: b.storeHost,
		Live:      b.live,
		Settings: sendplane.Settings{
			BrokerIP:                 b.storeHost.Addr().String(),
			BrokerAddr:               b.brokerAddr,
			BrokerName:               b.cfg.BrokerName,
			ClusterName:              b.cfg.BrokerClusterName,
			IsSlave:                  b.cfg.IsSlave(),
			SyncFlush:                b.cfg.FlushDiskType == store.SyncFlush,
			MaxMessageSize:           b.cfg.MaxMessageSize,
			DelayLevels:              delayLevels,
			HotMaxBehindBytes:        hotPullThreshold(b.ctl.totalMemoryBytes, b.cfg.AccessMessageInMemoryMaxRatio),
			CheckTransactionMessage:  b.cfg.CheckTransactionMessage,
			TransactionCheckInterval: interval,
			TransactionTimeOut:       b.cfg.TransactionTimeOut,
			TransactionCheckMax:      b.cfg.TransactionCheckMax,
			FileReservedTime:         b.cfg.FileReservedTime,
		},
		SentBack:       b.metrics.flows.sentBack,
		PCBusy:         b.metrics.busy.WithLabelValues("pc_synchronized"),
		FlushQueueFull: b.metrics.busy.WithLabelValues("flush_queue_full"),
		Clock:          b.clock,
		Logger:         b.logger,
	})
}

// syncMasterWait is the send plane's SYNC_MASTER wait: b.replicas, which initReplication makes
// after the plane is built (and before the broker serves).
type syncMasterWait struct{ b *Broker }

func (w syncMasterWait) Wait(msgEnd int64, done ha.Waiter) error {
	return w.b.replicas.Wait(msgEnd, done)
}

// poolSubmitter is a workerPool as the read plane's readplane.Pool (the long-polling re-run).
type poolSubmitter struct{ p *workerPool }

func (s poolSubmitter) Submit(rc *remoting.Request, fn func(*remoting.Request)) error {
	return s.p.submit(rc, fn)
}

// initDataPlane builds the send plane (b.send), the read plane (b.read) and the schedule
// service, hooks the hold service and the schedule service to the store's arriving listener,
// and adds their services. It runs after initControlPlane (the metadata tables and the client
// managers exist); the read plane registers its collectors on reg.
func (b *Broker) initDataPlane(reg prometheus.Registerer) error {
	levels, err := ParseDelayLevels(b.cfg.MessageDelayLevel)
	if err != nil {
		return fmt.Errorf("%w: key messageDelayLevel: %w", ErrConfig, err)
	}
	// The store writes a SCHEDULE_TOPIC_XXXX entry's delivery time into its tag field,
	// so it needs the level table before the first delayed send.
	b.store.SetDelayLevelTable(levels)
	send, err := b.newSendPlane(len(levels))
	if err != nil {
		return err
	}
	b.send = send

	read, err := b.newReadPlane(reg)
	if err != nil {
		return err
	}
	b.read = read
	b.addService("pull request hold", b.read.Start, b.read.Stop)
	// Delayed delivery (package delay), then the transaction check service (sendplane).
	if err := b.initSchedule(levels); err != nil {
		return err
	}
	b.addGuardedService("transaction check service", b.send.StartTransactions, b.send.StopTransactions)
	b.store.SetArrivingListener(b.onMessageArriving)

	return nil
}

// initSchedule builds the schedule service and adds it to the services; it delivers only on
// a master (a slave's copy of the queue is delivered by its master).
func (b *Broker) initSchedule(delays []time.Duration) error {
	s, err := delay.New(delay.Deps{
		Store:     meteredStore{MessageStore: b.store, stats: b.metrics.flows}, // deliveries count as puts to their topics
		Delays:    delays,
		StoreHost: b.storeHost,
		Clock:     b.clock,
		Path:      filepath.Join(metadata.ConfigDir(b.cfg.StorePathRootDir), metadata.DelayOffsetFileName),
		Logger:    b.logger,
	})
	if err != nil {
		return err
	}
	b.schedule = s
	if !b.cfg.IsSlave() {
		b.addGuardedService("schedule message service", s.Start, s.Stop)
	}
	return nil
}

// onMessageArriving is the store's arriving listener: the long-polling hold service sees
// every append, the schedule service the ones in its topic. Runs on the dispatcher goroutine.
func (b *Broker) onMessageArriving(topic string, queueID int32, logicOffset, tagsCode, storeTimestamp int64,
	properties []byte) {
	b.read.OnMessageArriving(topic, queueID, logicOffset, tagsCode, storeTimestamp, properties)
	if topic == metadata.ScheduleTopic && b.schedule != nil {
		b.schedule.NotifyMessageArriving(queueID, tagsCode)
	}
}
