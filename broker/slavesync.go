package broker

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// SlaveSynchronize: a slave's metadata sync from its master (PROTOCOL.md §13.4).
//
// On a slave only, a goroutine runs one round slaveSyncInitialDelay (3 s) after Start and
// then every slaveSyncInterval (10 s), as RocketMQ 4.9's BrokerController schedules it. A
// round needs the master's remoting address from the last registration round in which a
// name server answered (masterAddr of REGISTER_BROKER's response; an answer without one
// clears it); it is skipped while that is empty or this broker's own address. haMasterAddress
// plays no part: like RocketMQ, the sync follows the learnt masterAddr only.
//
// A round makes four plain requests with no header, each bounded by slaveSyncCallTimeout:
//
//	GET_ALL_TOPIC_CONFIG (21)              master's fast port (listenPort − 2) → replace the
//	                                       topic table + topics.json if the dataVersion differs
//	GET_ALL_CONSUMER_OFFSET (43)           → merge over the local offsets + consumerOffset.json
//	GET_ALL_DELAY_OFFSET (45)              → delayOffset.json as it is, and the schedule
//	                                       offsets this broker reports
//	GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) → replace the groups + subscriptionGroup.json if
//	                                       the dataVersion differs
//
// Topics come from the master's fast port, as a Java slave fetches them, unless this
// broker's own fastListenPort is 0 (a cluster runs its brokers with the same setting). When
// nothing answers there (a ringmq master with the fast port off), the master's listenPort is
// asked in the same round; RocketMQ has no such fallback, its masters always listen there. A failed step (no answer, or
// an answer other than SUCCESS, which a Java master gives for an empty table) is logged and
// the next step runs.

// SlaveSynchronize's schedule and call timeout (RocketMQ 4.9: BrokerController.
// handleSlaveSynchronize, BrokerOuterAPI's 3 s timeouts; no config keys).
const (
	slaveSyncInitialDelay = 3 * time.Second
	slaveSyncInterval     = 10 * time.Second
	slaveSyncCallTimeout  = 3 * time.Second
)

// slaveSync runs SlaveSynchronize. setMasterAddr and syncAll are safe for concurrent use;
// start and shutdown are called once each by the broker's lifecycle.
type slaveSync struct {
	b            *Broker
	client       *netio.Client
	logger       *slog.Logger
	initialDelay time.Duration
	interval     time.Duration

	stop chan struct{}
	done chan struct{}

	mu         sync.Mutex
	masterAddr string // from the last answered registration round; "" = none

	round sync.Mutex // one round at a time (the loop, tests calling syncAll)
}

// durationOr is v, or def when v is not positive.
func durationOr(v, def time.Duration) time.Duration {
	if v <= 0 {
		return def
	}
	return v
}

func newSlaveSync(b *Broker) (*slaveSync, error) {
	client, err := netio.NewClient(netio.DefaultClientConfig(), b.logger)
	if err != nil {
		return nil, err
	}
	return &slaveSync{
		b: b, client: client, logger: b.logger,
		initialDelay: durationOr(b.cfg.slaveSyncInitialDelay, slaveSyncInitialDelay),
		interval:     durationOr(b.cfg.slaveSyncInterval, slaveSyncInterval),
		stop:         make(chan struct{}), done: make(chan struct{}),
	}, nil
}

// setMasterAddr records the master's remoting address from a registration round ("" clears it).
func (s *slaveSync) setMasterAddr(addr string) {
	s.mu.Lock()
	s.masterAddr = addr
	s.mu.Unlock()
}

func (s *slaveSync) currentMasterAddr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.masterAddr
}

func (s *slaveSync) start() error {
	go s.run()
	return nil
}

// shutdown stops the loop (cancelling a round under way) and closes the client.
func (s *slaveSync) shutdown(context.Context) error {
	close(s.stop)
	<-s.done
	return s.client.Close()
}

func (s *slaveSync) run() {
	defer close(s.done)
	timer := time.NewTimer(s.initialDelay)
	defer timer.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // a round under way ends at shutdown, not after its timeouts
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-s.stop:
			return
		case <-timer.C:
		}
		s.syncAll(ctx)
		timer.Reset(s.interval)
	}
}

// syncAll runs one round (see the file comment). It returns whether a master was asked.
func (s *slaveSync) syncAll(ctx context.Context) bool {
	s.round.Lock()
	defer s.round.Unlock()
	master := s.currentMasterAddr()
	if master == "" || master == s.b.brokerAddr {
		return false
	}
	s.syncTopics(ctx, master)
	s.syncConsumerOffsets(ctx, master)
	s.syncDelayOffsets(ctx, master)
	s.syncSubscriptionGroups(ctx, master)
	return true
}

// call sends one header-less request and returns the body of a SUCCESS answer. An answer
// with another code is logged and returns ok=false; no answer at all returns the error, which
// the caller logs (warn) unless the round was cancelled.
func (s *slaveSync) call(ctx context.Context, addr string, code codec.RequestCode) (body []byte, ok bool, err error) {
	cctx, cancel := context.WithTimeout(ctx, slaveSyncCallTimeout)
	defer cancel()
	resp, err := s.client.Invoke(cctx, addr, codec.NewRequest(code, nil, nil))
	if err != nil {
		return nil, false, err
	}
	if resp.Code != int32(codec.ResponseSuccess) {
		// A Java master answers SYSTEM_ERROR for an empty table ("No topic in this broker").
		s.logger.Info("broker: metadata sync: master answered no table", "master", addr, "request", code.String(),
			"code", resp.Code, "remark", resp.Remark)
		return nil, false, nil
	}
	return resp.Body, true, nil
}

// callLogged is call with a transport failure logged.
func (s *slaveSync) callLogged(ctx context.Context, addr string, code codec.RequestCode) ([]byte, bool) {
	body, ok, err := s.call(ctx, addr, code)
	if err != nil && ctx.Err() == nil {
		s.logger.Warn("broker: metadata sync from master failed", "master", addr, "request", code.String(), "err", err)
	}
	return body, ok
}

// topicsAddr is where the topics come from: the master's fast port (listenPort − 2, as
// RocketMQ's MixAll.brokerVIPChannel computes it) unless this broker's fast port is off.
func (s *slaveSync) topicsAddr(master string) string {
	if s.b.cfg.FastListenPort == 0 {
		return master
	}
	host, portText, err := net.SplitHostPort(master)
	port, perr := strconv.Atoi(portText)
	if err != nil || perr != nil || port-2 < 1 {
		return master
	}
	return net.JoinHostPort(host, strconv.Itoa(port-2))
}

func (s *slaveSync) syncTopics(ctx context.Context, master string) {
	addr := s.topicsAddr(master)
	var body []byte
	var ok bool
	if addr != master {
		var err error
		body, ok, err = s.call(ctx, addr, codec.RequestGetAllTopicConfig)
		if err != nil && ctx.Err() == nil {
			// Nothing answers there (a ringmq master with fastListenPort=0): ask listenPort.
			s.logger.Debug("broker: metadata sync: master's fast port did not answer; asking its listenPort",
				"fastAddr", addr, "err", err)
			addr = master
		}
	}
	if addr == master {
		body, ok = s.callLogged(ctx, addr, codec.RequestGetAllTopicConfig)
	}
	if !ok {
		return
	}
	w, err := codec.DecodeTopicConfigSerializeWrapper(body)
	if err == nil {
		_, err = s.b.topics.ReplaceFromMaster(w)
	}
	s.logStep(err, "topics", addr)
}

func (s *slaveSync) syncConsumerOffsets(ctx context.Context, master string) {
	body, ok := s.callLogged(ctx, master, codec.RequestGetAllConsumerOffset)
	if !ok {
		return
	}
	w, err := codec.DecodeConsumerOffsetSerializeWrapper(body)
	if err == nil {
		err = s.b.offsets.MergeFromMaster(w)
	}
	s.logStep(err, "consumer offsets", master)
}

func (s *slaveSync) syncDelayOffsets(ctx context.Context, master string) {
	body, ok := s.callLogged(ctx, master, codec.RequestGetAllDelayOffset)
	if !ok {
		return
	}
	var err error
	if s.b.schedule != nil {
		err = s.b.schedule.ReplaceFromMaster(body)
	} else {
		err = fmt.Errorf("no schedule service")
	}
	s.logStep(err, "delay offsets", master)
}

func (s *slaveSync) syncSubscriptionGroups(ctx context.Context, master string) {
	body, ok := s.callLogged(ctx, master, codec.RequestGetAllSubscriptionGroupConfig)
	if !ok {
		return
	}
	w, err := codec.DecodeSubscriptionGroupWrapper(body)
	if err == nil {
		_, err = s.b.subscriptions.ReplaceFromMaster(w)
	}
	s.logStep(err, "subscription groups", master)
}

func (s *slaveSync) logStep(err error, what, addr string) {
	if err != nil {
		s.logger.Warn("broker: metadata sync: applying the master's table failed", "table", what, "master", addr, "err", err)
	}
}
