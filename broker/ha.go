package broker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"

	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/store"
)

// Replication wiring (package ha, PROTOCOL.md §13): a master listens on haListenPort and streams its
// CommitLog to slaves, a SYNC_MASTER also waits for a slave's acknowledgement before answering a send
// (broker/sendplane); a slave follows its master's CommitLog through an HA client. Every store.MessageStore
// is both of ha's small interfaces.
var (
	_ ha.MasterLog = store.MessageStore(nil)
	_ ha.SlaveLog  = store.MessageStore(nil)
)

// Controlled is a replica's part in controller mode, decided by the controller and carried out by the
// supervisor (broker/controlled), which also sets the role keys of the Config it builds the broker with
// (brokerRole, brokerId, haMasterAddress).
type Controlled struct {
	// BrokerID is this replica's id at the controller (the HA handshake names it).
	BrokerID int64
	// Epochs is the replica's epoch file: a master's HA server answers handshakes from it; a slave's
	// HA client sends it and takes its master's.
	Epochs *ha.EpochFile
	// SyncStateSet is, for a master, the replicas in sync (brokerIds, its own left out) the
	// controller last accepted; a SYNC send waits for each of them.
	SyncStateSet []int64
	// MinInSyncReplicas (minInSyncReplicas): a master refuses SYNC sends while fewer replicas, itself
	// included, are in sync.
	MinInSyncReplicas int
	// OnTruncate runs, on a slave, when its master says its CommitLog has a tail to drop: the
	// supervisor stops this broker and opens the store again truncated there.
	OnTruncate func(offset int64)
	// OnRoleNotified runs (on an event loop: it must not block) when the controller sends
	// NOTIFY_BROKER_ROLE_CHANGED after an election: the supervisor looks at the group's new role at
	// once instead of at its next heartbeat.
	OnRoleNotified func()
	// MasterAddr is, on a slave, the master's remoting address as the controller names it: the
	// metadata sync (topics, groups, offsets) follows it from the start, and every
	// controlledSyncInterval, instead of waiting for the name servers to name it.
	MasterAddr string
}

// controlledSyncInterval is how often a controller-mode slave copies its master's metadata: a topic
// created shortly before a failover must be on the replica that takes over (RocketMQ's 10 s would lose
// those of the last 10 s).
const controlledSyncInterval = 2 * time.Second

// ResolveBrokerAddr is the "ip:port" a broker built from cfg registers (brokerIP1, or the host's
// address, and listenPort, which must be set): what controller mode's supervisor registers with the
// controller before it builds the broker.
func ResolveBrokerAddr(cfg Config) (string, error) {
	if cfg.ListenPort == 0 {
		return "", fmt.Errorf("%w: key listenPort: controller mode needs a fixed port", ErrConfig)
	}
	host, err := resolveBrokerIP(cfg.BrokerIP1)
	if err != nil {
		return "", err
	}
	return net.JoinHostPort(host.String(), strconv.Itoa(cfg.ListenPort)), nil
}

// CommitLogMaxOffset is the end of the store's CommitLog (controller heartbeats report it).
func (b *Broker) CommitLogMaxOffset() int64 { return b.store.MaxPhyOffset() }

// getBrokerEpochCache answers GET_BROKER_EPOCH_CACHE (mqadmin getBrokerEpoch): the epoch file of a
// broker in controller mode, each entry with its end (the next one's start; Long.MAX_VALUE for the
// last, as RocketMQ 5 shows it), and the CommitLog's end. Outside controller mode RocketMQ 4's answer.
func (b *Broker) getBrokerEpochCache(rc *remoting.Request) {
	ctl := b.controlled
	if ctl == nil {
		rc.Reply.Answer(codec.ResponseRequestCodeNotSupported, " request type 1007 not supported: this broker is not in controller mode (enableControllerMode)")
		return
	}
	list := ctl.Epochs.Entries()
	body := codec.EpochEntryCache{ClusterName: b.cfg.BrokerClusterName, BrokerName: b.cfg.BrokerName,
		BrokerID: ctl.BrokerID, MaxOffset: b.store.MaxPhyOffset(), EpochList: make([]codec.EpochEntry, len(list))}
	for i, e := range list {
		end := int64(math.MaxInt64)
		if i+1 < len(list) {
			end = list[i+1].StartOffset
		}
		body.EpochList[i] = codec.EpochEntry{Epoch: e.Epoch, StartOffset: e.StartOffset, EndOffset: end}
	}
	rc.Reply.JSON(&body)
}

// roleChangeNotified takes the controller's NOTIFY_BROKER_ROLE_CHANGED (oneway, as RocketMQ 5 sends
// it): in controller mode it wakes the supervisor; elsewhere RocketMQ 4's answer.
func (b *Broker) roleChangeNotified(rc *remoting.Request) {
	ctl := b.controlled
	if ctl == nil || ctl.OnRoleNotified == nil {
		if !rc.Cmd.IsOneway() {
			rc.Reply.Answer(codec.ResponseRequestCodeNotSupported, " request type 1008 not supported: this broker is not in controller mode (enableControllerMode)")
		}
		return
	}
	ctl.OnRoleNotified()
	if !rc.Cmd.IsOneway() {
		rc.Reply.OK()
	}
}

// HAServer is a master's HA server (nil on a slave): controller mode's supervisor reads its replicas'
// states and applies the SyncStateSet the controller accepted.
func (b *Broker) HAServer() *ha.Server { return b.haServer }

// initReplication builds the HA server (masters) or client (slaves) as services. Called from New after
// the data plane, before the remoting server.
func (b *Broker) initReplication() error {
	if b.cfg.IsSlave() {
		// Metadata sync (slavesync.go) follows the master's remoting address, whatever the store.
		syncer, err := newSlaveSync(b)
		if err != nil {
			return err
		}
		b.slaveSync = syncer
		if ctl := b.controlled; ctl != nil {
			// The controller names the master: follow it now, not the name servers' next answer.
			syncer.setMasterAddr(ctl.MasterAddr)
			syncer.initialDelay, syncer.interval = 0, controlledSyncInterval
		} else {
			b.onMasterLearned = b.learnMaster
		}
		b.addGuardedService("slave synchronize", syncer.start, syncer.shutdown)
		ccfg := b.cfg.HAClientConfig()
		if ctl := b.controlled; ctl != nil {
			ccfg.Handshake = &ha.ClientHandshake{BrokerID: ctl.BrokerID, Epochs: ctl.Epochs, OnTruncate: ctl.OnTruncate}
		}
		c, err := ha.NewClient(ccfg, b.store, b.logger)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
		b.haClient = c
		b.addService("ha client", func() error { c.Start(); return nil }, func(context.Context) error {
			return ignoreClosed(c.Close())
		})
		return nil
	}
	log := b.store
	addr := net.JoinHostPort(b.bindHost(), strconv.Itoa(b.cfg.HAListenPort))
	scfg := b.cfg.HAServerConfig(addr)
	if ctl := b.controlled; ctl != nil {
		scfg.Epochs = ctl.Epochs
	}
	srv, err := ha.NewServer(scfg, log, b.logger)
	if err != nil {
		return err
	}
	if ctl := b.controlled; ctl != nil {
		srv.SetSyncStateSet(ctl.SyncStateSet)
	}
	b.haServer = srv
	if reg := b.ctl.registerer; reg != nil {
		if err := srv.RegisterMetrics(reg); err != nil { // registered by an earlier broker on this registry
			b.logger.Debug("broker: HA metrics not registered", "error", err)
		}
	}
	if b.cfg.IsSyncMaster() {
		rcfg := b.cfg.HAReplicasConfig()
		if ctl := b.controlled; ctl != nil {
			rcfg.MinInSyncReplicas = max(ctl.MinInSyncReplicas, 1)
		}
		r, err := ha.NewReplicas(rcfg, srv, b.ctl.registerer, b.logger)
		if err != nil {
			_ = srv.Close()
			return err
		}
		b.replicas = r
	}
	b.addService("ha server", func() error {
		log.SetPublishListener(srv.Notify)
		srv.Start()
		return nil
	}, func(context.Context) error {
		log.SetPublishListener(nil)
		var err error
		if b.replicas != nil {
			err = ignoreClosed(b.replicas.Close())
		}
		if cerr := ignoreClosed(srv.Close()); err == nil {
			err = cerr
		}
		return err
	})
	return nil
}

// closeReplication releases what initReplication made, for a New that fails after it.
func (b *Broker) closeReplication() {
	if b.replicas != nil {
		_ = b.replicas.Close()
	}
	if b.haServer != nil {
		_ = b.haServer.Close()
	}
}

// ignoreClosed drops ha.ErrClosed: a second Close at shutdown is not a failure.
func ignoreClosed(err error) error {
	if errors.Is(err, ha.ErrClosed) {
		return nil
	}
	return err
}

// learnMaster takes the master's addresses from a slave's register responses (PROTOCOL.md
// §13.1): masterAddr for the metadata sync (also when empty: RocketMQ clears it), and, without
// haMasterAddress, haServerAddr for the HA client, which connects there from its next connect on.
func (b *Broker) learnMaster(masterAddr, haServerAddr string) {
	if b.slaveSync != nil {
		b.slaveSync.setMasterAddr(masterAddr)
	}
	if b.haClient == nil || b.cfg.HAMasterAddress != "" || haServerAddr == "" {
		return
	}
	b.haClient.SetMasterAddr(haServerAddr)
}
