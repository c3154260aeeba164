package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

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
		b.onMasterLearned = b.learnMaster
		b.addGuardedService("slave synchronize", syncer.start, syncer.shutdown)
		c, err := ha.NewClient(b.cfg.HAClientConfig(), b.store, b.logger)
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
	srv, err := ha.NewServer(b.cfg.HAServerConfig(addr), log, b.logger)
	if err != nil {
		return err
	}
	b.haServer = srv
	if reg := b.ctl.registerer; reg != nil {
		if err := srv.RegisterMetrics(reg); err != nil { // registered by an earlier broker on this registry
			b.logger.Debug("broker: HA metrics not registered", "error", err)
		}
	}
	if b.cfg.IsSyncMaster() {
		r, err := ha.NewReplicas(b.cfg.HAReplicasConfig(), srv, b.ctl.registerer, b.logger)
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
