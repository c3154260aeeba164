package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/workqueue"
	"github.com/ringmq/ringmq/netio"
)

const (
	// workerCount requests wait for raft commits at once; workQueueLength more may queue
	// (then SYSTEM_BUSY). A commit takes a round trip to a majority, a few milliseconds.
	workerCount     = 4
	workQueueLength = 4096
	// notifyTimeout bounds sending one NOTIFY_BROKER_ROLE_CHANGED (Java: 3 s).
	notifyTimeout = 3 * time.Second
)

// Codes lists the request codes a controller answers; a name server that embeds one routes
// them to OnRequest (BROKER_HEARTBEAT too, after its own bookkeeping).
var Codes = []codec.RequestCode{
	codec.RequestControllerAlterSyncStateSet,
	codec.RequestControllerElectMaster,
	codec.RequestControllerRegisterBroker,
	codec.RequestControllerGetReplicaInfo,
	codec.RequestControllerGetMetadataInfo,
	codec.RequestControllerGetSyncStateData,
	codec.RequestUpdateControllerConfig,
	codec.RequestGetControllerConfig,
	codec.RequestCleanBrokerData,
	codec.RequestControllerGetNextBrokerID,
	codec.RequestControllerApplyBrokerID,
	codec.RequestBrokerHeartbeat,
}

// workers is a workqueue shared by workerCount goroutines.
type workers struct {
	*workqueue.Queue
	n int
}

func newWorkers(n, capacity int) *workers { return &workers{Queue: workqueue.New(capacity), n: n} }

// run runs the goroutines and returns when the queue is closed and drained.
func (w *workers) run() {
	done := make(chan struct{}, w.n)
	for range w.n {
		go func() {
			w.Run()
			done <- struct{}{}
		}()
	}
	for range w.n {
		<-done
	}
}

func (w *workers) close() { w.Close() }

// serverHandler serves a standalone controller's port.
type serverHandler struct{ c *Controller }

func (h serverHandler) OnOpen(netio.Conn) {}

func (h serverHandler) OnRequest(conn netio.Conn, req *codec.RemotingCommand) {
	if h.c.OnRequest(conn, req) || req.IsOneway() {
		return
	}
	resp := codec.NewResponse(req, codec.ResponseRequestCodeNotSupported,
		" request type "+strconv.Itoa(int(req.Code))+" not supported")
	_ = conn.WriteCommand(resp)
}

func (h serverHandler) OnClose(conn netio.Conn, _ error) { h.c.OnClose(conn) }

// OnRequest answers a controller request and reports true, or reports false for any other
// code. It runs on the network event loop that read req and never blocks: heartbeats,
// metadata and config reads are answered there; everything that needs the raft leader goes
// to the request workers (full: SYSTEM_BUSY at once).
func (c *Controller) OnRequest(conn netio.Conn, req *codec.RemotingCommand) bool {
	code := codec.RequestCode(req.Code)
	if !slices.Contains(Codes, code) {
		return false
	}
	c.metrics.requests.WithLabelValues(code.String()).Inc()
	var resp *codec.RemotingCommand
	switch code {
	case codec.RequestBrokerHeartbeat:
		resp = c.brokerHeartbeat(conn, req)
	case codec.RequestControllerGetMetadataInfo:
		resp = c.metadata(req)
	case codec.RequestGetControllerConfig:
		resp = c.getConfig(req)
	case codec.RequestUpdateControllerConfig:
		resp = c.updateConfig(req)
	default:
		copied := copyRequest(req)
		if !c.work.Submit(func() { reply(conn, copied, c.handle(copied)) }) {
			resp = codec.NewResponse(req, codec.ResponseSystemBusy,
				"[OVERLOAD]controller request queue is full, or the controller is shutting down")
		}
	}
	if resp != nil {
		reply(conn, req, resp)
	}
	return true
}

// OnClose forgets the replicas whose heartbeats came on conn and, when one of them was a
// group's master, elects a new one at once (Java onBrokerChannelClose): a killed master's
// connection closes long before its heartbeats time out.
func (c *Controller) OnClose(conn netio.Conn) {
	gone := c.hb.onClose(conn)
	if c.state.Load() != stateStarted {
		return // shutting down: the connections close because this controller closes them
	}
	for _, k := range gone {
		g, ok := c.fsm.Group(k.brokerName)
		if !ok || g.MasterBrokerID != k.brokerID || !c.IsLeader() {
			continue
		}
		c.logger.Warn("controller: master's connection closed; electing", "clusterName", g.ClusterName,
			"brokerName", g.BrokerName, "masterBrokerId", g.MasterBrokerID)
		name := g.BrokerName
		c.work.Submit(func() { c.electForInactiveMaster(name) })
	}
}

// electForInactiveMaster elects a master for brokerName unless it has a live one, retrying
// ElectMasterMaxRetryCount times on raft errors.
func (c *Controller) electForInactiveMaster(brokerName string) {
	for i := 0; i < c.cfg.ElectMasterMaxRetryCount && c.state.Load() == stateStarted; i++ {
		g, ok := c.fsm.Group(brokerName)
		if !ok || g.HasMaster() && c.hb.isAlive(g.BrokerName, g.MasterBrokerID) {
			return
		}
		_, err := c.electMaster(g.ClusterName, brokerName, noMaster, false)
		if err == nil || errors.Is(err, ErrNotLeader) {
			return
		}
		c.logger.Warn("controller: election failed", "brokerName", brokerName, "attempt", i+1, "err", err)
	}
}

// copyRequest copies what a worker needs of req, which is valid only during OnRequest.
func copyRequest(req *codec.RemotingCommand) *codec.RemotingCommand {
	ext := make(map[string]string, len(req.ExtFields))
	for k, v := range req.ExtFields {
		ext[strings.Clone(k)] = strings.Clone(v)
	}
	return &codec.RemotingCommand{
		Code: req.Code, Opaque: req.Opaque, Version: req.Version, Flag: req.Flag,
		SerializeType: req.SerializeType, Language: req.Language,
		ExtFields: ext, Body: slices.Clone(req.Body),
	}
}

func reply(conn netio.Conn, req, resp *codec.RemotingCommand) {
	if req.IsOneway() || resp == nil {
		return
	}
	_ = conn.WriteCommand(resp)
}

// response builds a response whose header fields h writes (h may be nil).
func response(req *codec.RemotingCommand, code codec.ResponseCode, remark string, h codec.CustomHeader) *codec.RemotingCommand {
	resp := codec.NewResponse(req, code, remark)
	if h != nil {
		if resp.ExtFields == nil {
			resp.ExtFields = map[string]string{}
		}
		h.Encode(resp.ExtFields)
	}
	return resp
}

func badRequest(req *codec.RemotingCommand, err error) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.ResponseControllerInvalidRequest, err.Error())
}

// notLeader answers CONTROLLER_NOT_LEADER with Java's remark and the leader's id and remoting
// address in GetMetaDataResponseHeader's fields, so the caller can retry there.
func (c *Controller) notLeader(req *codec.RemotingCommand) *codec.RemotingCommand {
	id, addr := c.Leader()
	return response(req, codec.ResponseControllerNotLeader, "The controller is not in leader state",
		&codec.GetMetaDataResponseHeader{ControllerLeaderID: id, ControllerLeaderAddress: addr})
}

// handle answers a request that needs the leader, on a worker.
func (c *Controller) handle(req *codec.RemotingCommand) *codec.RemotingCommand {
	if !c.IsLeader() {
		return c.notLeader(req)
	}
	var resp *codec.RemotingCommand
	var err error
	switch codec.RequestCode(req.Code) {
	case codec.RequestControllerGetReplicaInfo, codec.RequestControllerGetSyncStateData,
		codec.RequestControllerGetNextBrokerID, codec.RequestControllerRegisterBroker:
		// Reads answer from this controller's state: first make sure it still leads (a
		// deposed leader cut off from the others would answer from a stale state).
		if err := c.raftPtr.Load().VerifyLeader().Error(); err != nil {
			return c.notLeader(req)
		}
	}
	switch codec.RequestCode(req.Code) {
	case codec.RequestControllerAlterSyncStateSet:
		resp, err = c.alterSyncStateSet(req)
	case codec.RequestControllerElectMaster:
		resp, err = c.electMasterRequest(req)
	case codec.RequestControllerRegisterBroker:
		resp, err = c.registerBroker(req)
	case codec.RequestControllerGetReplicaInfo:
		resp = c.getReplicaInfo(req)
	case codec.RequestControllerGetSyncStateData:
		resp = c.getSyncStateData(req)
	case codec.RequestCleanBrokerData:
		resp, err = c.cleanBrokerData(req)
	case codec.RequestControllerGetNextBrokerID:
		resp = c.getNextBrokerID(req)
	case codec.RequestControllerApplyBrokerID:
		resp, err = c.applyBrokerID(req)
	}
	switch {
	case errors.Is(err, ErrNotLeader):
		return c.notLeader(req)
	case err != nil:
		return codec.NewResponse(req, codec.ResponseSystemError, err.Error())
	}
	return resp
}

// brokerHeartbeat: Java handleBrokerHeartbeat.
func (c *Controller) brokerHeartbeat(conn netio.Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.BrokerHeartbeatRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	if !h.BrokerID.Set {
		return codec.NewResponse(req, codec.ResponseControllerInvalidRequest, "Heart beat with empty brokerId")
	}
	c.hb.onHeartbeat(&h, conn)
	return codec.NewResponse(req, codec.ResponseSuccess, "Heart beat success")
}

// metadata: CONTROLLER_GET_METADATA_INFO, answered by any controller.
func (c *Controller) metadata(req *codec.RemotingCommand) *codec.RemotingCommand {
	id, addr := c.Leader()
	var peers strings.Builder
	for _, p := range c.cfg.Peers {
		peers.WriteString(p.ID + ":" + p.Addr + ";")
	}
	return response(req, codec.ResponseSuccess, "", &codec.GetMetaDataResponseHeader{
		Group: "ringmq-controller", ControllerLeaderID: id, ControllerLeaderAddress: addr,
		IsLeader: c.IsLeader(), Peers: peers.String(),
	})
}

// alterSyncStateSet: CONTROLLER_ALTER_SYNC_STATE_SET from a group's master.
func (c *Controller) alterSyncStateSet(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.AlterSyncStateSetRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err), nil
	}
	set, err := codec.DecodeSyncStateSet(req.Body)
	if err != nil {
		return badRequest(req, err), nil
	}
	cmd := &command{Type: cmdAlterSyncStateSet, BrokerName: h.BrokerName,
		MasterBrokerID: h.MasterBrokerID.Or(noMaster), MasterEpoch: h.MasterEpoch.Or(-1),
		SyncStateSetEpoch: set.SyncStateSetEpoch, SyncStateSet: set.SyncStateSet}
	if g, ok := c.fsm.Group(h.BrokerName); ok {
		cmd.ClusterName = g.ClusterName
		cmd.Alive = c.hb.alive(g.BrokerName, set.SyncStateSet)
	}
	res, err := c.propose(cmd)
	if err != nil {
		return nil, err
	}
	if res.Code != codec.ResponseSuccess {
		return codec.NewResponse(req, res.Code, res.Remark), nil
	}
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.ExtFields = map[string]string{"newSyncStateSetEpoch": strconv.Itoa(int(res.Group.SyncStateSetEpoch))}
	if resp.Body, err = res.Group.syncStateSetBody(); err != nil {
		return nil, err
	}
	c.logger.Info("controller: SyncStateSet changed", "brokerName", h.BrokerName,
		"syncStateSet", formatIDs(res.Group.SyncStateSet), "syncStateSetEpoch", res.Group.SyncStateSetEpoch)
	return resp, nil
}

// electMasterRequest: CONTROLLER_ELECT_MASTER from a broker or mqadmin.
func (c *Controller) electMasterRequest(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ElectMasterRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err), nil
	}
	res, err := c.electMaster(h.ClusterName, h.BrokerName, h.BrokerID, h.DesignateElect)
	if err != nil {
		return nil, err
	}
	if res.Code != codec.ResponseSuccess && res.Code != codec.ResponseControllerMasterStillExist {
		return codec.NewResponse(req, res.Code, res.Remark), nil
	}
	g := res.Group
	resp := response(req, res.Code, res.Remark, &codec.ElectMasterResponseHeader{
		MasterBrokerID: codec.Some(g.MasterBrokerID), MasterAddress: g.MasterAddress(),
		MasterEpoch: codec.Some(g.MasterEpoch), SyncStateSetEpoch: codec.Some(g.SyncStateSetEpoch),
	})
	body := codec.ElectMasterResponseBody{SyncStateSet: g.SyncStateSet}
	if res.Elected {
		body.BrokerMemberGroup = &codec.BrokerMemberGroup{Cluster: g.ClusterName, BrokerName: g.BrokerName,
			BrokerAddrs: g.BrokerAddrs()}
	}
	if resp.Body, err = body.Encode(); err != nil {
		return nil, err
	}
	return resp, nil
}

// electMaster proposes an election for brokerName with the live replicas' last heartbeats
// and, when a new master is elected, counts it, logs it and notifies the group's brokers.
// brokerID -1 means the controller itself asks (its master is gone).
func (c *Controller) electMaster(clusterName, brokerName string, brokerID int64, designate bool) (*Result, error) {
	cmd := &command{Type: cmdElectMaster, ClusterName: clusterName, BrokerName: brokerName, BrokerID: brokerID,
		Designate: designate, Unclean: c.unclean.Load()}
	if g, ok := c.fsm.Group(brokerName); ok {
		cmd.Alive = c.hb.alive(g.BrokerName, g.ReplicaIDs())
	}
	res, err := c.propose(cmd)
	if err != nil {
		return nil, err
	}
	switch {
	case res.Elected:
		c.metrics.elections.WithLabelValues("new_master_elected").Inc()
		g := res.Group
		c.logger.Info("controller: new master elected", "clusterName", g.ClusterName, "brokerName", g.BrokerName,
			"masterBrokerId", g.MasterBrokerID, "masterAddress", g.MasterAddress(), "masterEpoch", g.MasterEpoch,
			"syncStateSet", formatIDs(g.SyncStateSet))
		if c.notify.Load() {
			c.notifyRoleChanged(g)
		}
	case res.Code == codec.ResponseControllerMasterStillExist:
		c.metrics.elections.WithLabelValues("keep_current_master").Inc()
	default:
		c.metrics.elections.WithLabelValues("no_master_elected").Inc()
		c.logger.Warn("controller: no master elected", "brokerName", brokerName, "code", res.Code, "remark", res.Remark)
	}
	return res, nil
}

// notifyRoleChanged sends NOTIFY_BROKER_ROLE_CHANGED (oneway, as Java) to every live replica
// of g, from a goroutine per election (elections are rare and bounded by the groups).
func (c *Controller) notifyRoleChanged(g *Group) {
	hdr := codec.RoleHeader{MasterBrokerID: codec.Some(g.MasterBrokerID), MasterAddress: g.MasterAddress(),
		MasterEpoch: codec.Some(g.MasterEpoch), SyncStateSetEpoch: codec.Some(g.SyncStateSetEpoch)}
	body, err := g.syncStateSetBody()
	if err != nil {
		c.logger.Error("controller: notify: encode", "err", err)
		return
	}
	var addrs []string
	for _, id := range g.ReplicaIDs() {
		if c.hb.isAlive(g.BrokerName, id) {
			addrs = append(addrs, g.Replicas[id].Address)
		}
	}
	if len(addrs) == 0 {
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for _, addr := range addrs {
			ext := map[string]string{}
			hdr.Encode(ext)
			ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
			err := c.client.InvokeOneway(ctx, addr, codec.NewRequest(codec.RequestNotifyBrokerRoleChanged, ext, body))
			cancel()
			if err != nil {
				c.logger.Warn("controller: cannot notify broker of its role", "brokerAddr", addr, "err", err)
			}
		}
	}()
}

// registerBroker: CONTROLLER_REGISTER_BROKER — a replica with an id reports its address and
// learns the master and epochs (Java ReplicasInfoManager.registerBroker).
func (c *Controller) registerBroker(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.RegisterBrokerToControllerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err), nil
	}
	g, ok := c.fsm.Group(h.BrokerName)
	if !ok {
		return codec.NewResponse(req, codec.ResponseControllerBrokerNeedToBeRegistered,
			fmt.Sprintf("Broker-set: %s hasn't been registered in controller", h.BrokerName)), nil
	}
	r, ok := g.Replicas[h.BrokerID]
	if !ok {
		return codec.NewResponse(req, codec.ResponseControllerBrokerNeedToBeRegistered,
			fmt.Sprintf("BrokerId: %d hasn't been registered in broker-set: %s", h.BrokerID, h.BrokerName)), nil
	}
	if r.Address != h.BrokerAddress {
		res, err := c.propose(&command{Type: cmdUpdateAddress, ClusterName: g.ClusterName, BrokerName: h.BrokerName,
			BrokerID: h.BrokerID, Address: h.BrokerAddress})
		if err != nil {
			return nil, err
		}
		if res.Code != codec.ResponseSuccess {
			return codec.NewResponse(req, res.Code, res.Remark), nil
		}
		g = res.Group
	}
	hdr := codec.RoleHeader{ClusterName: g.ClusterName, BrokerName: g.BrokerName}
	if g.HasMaster() && c.hb.isAlive(g.BrokerName, g.MasterBrokerID) {
		hdr.MasterBrokerID = codec.Some(g.MasterBrokerID)
		hdr.MasterAddress = g.MasterAddress()
		hdr.MasterEpoch = codec.Some(g.MasterEpoch)
		hdr.SyncStateSetEpoch = codec.Some(g.SyncStateSetEpoch)
	}
	resp := response(req, codec.ResponseSuccess, "", &hdr)
	var err error
	resp.Body, err = g.syncStateSetBody()
	return resp, err
}

// getReplicaInfo: CONTROLLER_GET_REPLICA_INFO.
func (c *Controller) getReplicaInfo(req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.BrokerNameRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	g, ok := c.fsm.Group(h.BrokerName)
	if !ok {
		return codec.NewResponse(req, codec.ResponseControllerBrokerMetadataNotExist, "Broker metadata is not existed")
	}
	hdr := codec.GetReplicaInfoResponseHeader{MasterEpoch: codec.Some(g.MasterEpoch)}
	if g.HasMaster() {
		hdr.MasterBrokerID = codec.Some(g.MasterBrokerID)
		hdr.MasterAddress = g.MasterAddress()
	}
	resp := response(req, codec.ResponseSuccess, "", &hdr)
	body, err := g.syncStateSetBody()
	if err != nil {
		return codec.NewResponse(req, codec.ResponseSystemError, err.Error())
	}
	resp.Body = body
	return resp
}

// getSyncStateData: CONTROLLER_GET_SYNC_STATE_DATA; the body names the groups.
func (c *Controller) getSyncStateData(req *codec.RemotingCommand) *codec.RemotingCommand {
	names, err := codec.DecodeBrokerNameList(req.Body)
	if err != nil {
		return badRequest(req, err)
	}
	info := codec.BrokerReplicasInfo{ReplicasInfoTable: map[string]codec.ReplicasInfo{}}
	for _, name := range names {
		g, ok := c.fsm.Group(name)
		if !ok {
			continue
		}
		ri := codec.ReplicasInfo{MasterEpoch: g.MasterEpoch, SyncStateSetEpoch: g.SyncStateSetEpoch,
			InSyncReplicas: []codec.ReplicaIdentity{}, NotInSyncReplicas: []codec.ReplicaIdentity{}}
		if g.HasMaster() {
			id := g.MasterBrokerID
			ri.MasterBrokerID, ri.MasterAddress = &id, g.MasterAddress()
		}
		for _, id := range g.ReplicaIDs() {
			r := codec.ReplicaIdentity{BrokerName: g.BrokerName, BrokerID: id, BrokerAddress: g.Replicas[id].Address,
				Alive: c.hb.isAlive(g.BrokerName, id)}
			if g.InSyncStateSet(id) {
				ri.InSyncReplicas = append(ri.InSyncReplicas, r)
			} else {
				ri.NotInSyncReplicas = append(ri.NotInSyncReplicas, r)
			}
		}
		info.ReplicasInfoTable[name] = ri
	}
	body, err := info.Encode()
	if err != nil {
		return codec.NewResponse(req, codec.ResponseSystemError, err.Error())
	}
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.Body = body
	return resp
}

// cleanBrokerData: CLEAN_BROKER_DATA (Java ReplicasInfoManager.cleanBrokerData). Without
// isCleanLivingBroker a group with a master, or a named replica that is alive, is refused.
// The ids are parsed also with isCleanLivingBroker (Java then ignores them and removes the
// whole group).
func (c *Controller) cleanBrokerData(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.CleanControllerBrokerDataRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err), nil
	}
	invalid := func(format string, args ...any) *codec.RemotingCommand {
		return codec.NewResponse(req, codec.ResponseControllerInvalidCleanBrokerMetadata, fmt.Sprintf(format, args...))
	}
	var ids []int64
	for _, s := range strings.Split(h.BrokerControllerIdsToClean, ";") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		id, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return invalid("Please set the option <brokerControllerIdsToClean> according to the format, exception: %v", err), nil
		}
		ids = append(ids, id)
	}
	g, ok := c.fsm.Group(h.BrokerName)
	if !ok {
		return invalid("Broker %s is not existed,clean broker data failure.", h.BrokerName), nil
	}
	if !h.IsCleanLivingBroker {
		if len(ids) == 0 && g.HasMaster() {
			return invalid("Broker %s is still alive, clean up failure", h.BrokerName), nil
		}
		for _, id := range ids {
			if c.hb.isAlive(g.BrokerName, id) {
				return invalid("Broker [%s,  %d] is still alive, clean up failure", h.BrokerName, id), nil
			}
		}
	}
	res, err := c.propose(&command{Type: cmdCleanBrokerData, ClusterName: g.ClusterName, BrokerName: h.BrokerName,
		BrokerIDs: ids})
	if err != nil {
		return nil, err
	}
	if res.Code == codec.ResponseSuccess {
		c.logger.Info("controller: broker metadata cleaned", "brokerName", h.BrokerName, "brokerIds", formatIDs(ids))
	}
	return codec.NewResponse(req, res.Code, res.Remark), nil
}

// getNextBrokerID: CONTROLLER_GET_NEXT_BROKER_ID.
func (c *Controller) getNextBrokerID(req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.BrokerGroupHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err)
	}
	next := firstBrokerID
	if g, ok := c.fsm.Group(h.BrokerName); ok {
		next = g.NextBrokerID
	}
	return response(req, codec.ResponseSuccess, "", &codec.GetNextBrokerIDResponseHeader{
		ClusterName: h.ClusterName, BrokerName: h.BrokerName, NextBrokerID: next})
}

// applyBrokerID: CONTROLLER_APPLY_BROKER_ID; the address is the check code's part before ';'.
func (c *Controller) applyBrokerID(req *codec.RemotingCommand) (*codec.RemotingCommand, error) {
	var h codec.ApplyBrokerIDRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return badRequest(req, err), nil
	}
	addr, _, _ := strings.Cut(h.RegisterCheckCode, ";")
	if addr == "" || h.AppliedBrokerID < firstBrokerID {
		return badRequest(req, fmt.Errorf("ApplyBrokerIdRequestHeader: appliedBrokerId %d and registerCheckCode %q: want an id >= 1 and \"brokerAddr;timestamp\"",
			h.AppliedBrokerID, h.RegisterCheckCode)), nil
	}
	res, err := c.propose(&command{Type: cmdApplyBrokerID, ClusterName: h.ClusterName, BrokerName: h.BrokerName,
		BrokerID: h.AppliedBrokerID, Address: addr, RegisterCheckCode: h.RegisterCheckCode})
	if err != nil {
		return nil, err
	}
	return response(req, res.Code, res.Remark, &codec.BrokerGroupHeader{ClusterName: h.ClusterName, BrokerName: h.BrokerName}), nil
}

// runtimeKeys are the keys UPDATE_CONTROLLER_CONFIG may change, on the controller it is sent
// to (as in Java, each controller has its own config); the change is not written to a file.
var runtimeKeys = map[string]func(c *Controller, v string) error{
	"enableElectUncleanMaster": func(c *Controller, v string) error { return setBool(&c.unclean, v) },
	"notifyBrokerRoleChanged":  func(c *Controller, v string) error { return setBool(&c.notify, v) },
	"controllerHeartBeatTimeoutMills": func(c *Controller, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return errors.New("not a positive whole number of milliseconds")
		}
		c.hbTimeout.Store(int64(time.Duration(n) * time.Millisecond))
		return nil
	},
}

func setBool(b interface{ Store(bool) }, v string) error {
	switch strings.ToLower(v) {
	case "true":
		b.Store(true)
	case "false":
		b.Store(false)
	default:
		return errors.New("not true or false")
	}
	return nil
}

// updateConfig: UPDATE_CONTROLLER_CONFIG; the body is Java properties text. Keys fixed at
// start answer NO_PERMISSION as Java's black list does; an unknown key or a bad value
// changes nothing and is named in the answer.
func (c *Controller) updateConfig(req *codec.RemotingCommand) *codec.RemotingCommand {
	props, err := conf.Parse(req.Body)
	if err != nil {
		return codec.NewResponse(req, codec.ResponseSystemError, "string2Properties error: "+err.Error())
	}
	for _, p := range props {
		if _, ok := runtimeKeys[p.Key]; ok {
			continue
		}
		if _, ok := c.configItems()[p.Key]; ok || p.Key == "configBlackList" || p.Key == "rocketmqHome" {
			return codec.NewResponse(req, codec.ResponseNoPermission, "Can not update config in black list.")
		}
		return codec.NewResponse(req, codec.ResponseInvalidParameter, fmt.Sprintf("unknown controller config key %q", p.Key))
	}
	for _, p := range props {
		old := c.configItems()[p.Key]
		if err := runtimeKeys[p.Key](c, strings.TrimSpace(p.Value)); err != nil {
			return codec.NewResponse(req, codec.ResponseInvalidParameter, fmt.Sprintf("%s=%q: %v", p.Key, p.Value, err))
		}
		c.logger.Info("controller: config changed", "key", p.Key, "old", old, "new", strings.TrimSpace(p.Value))
	}
	return codec.NewResponse(req, codec.ResponseSuccess, "")
}

// configItems is the effective config by key.
func (c *Controller) configItems() map[string]string {
	return map[string]string{
		"controllerSelfId":                c.cfg.SelfID,
		"controllerPeers":                 FormatPeers(c.cfg.Peers),
		"controllerStorePath":             c.cfg.StorePath,
		"enableElectUncleanMaster":        strconv.FormatBool(c.unclean.Load()),
		"notifyBrokerRoleChanged":         strconv.FormatBool(c.notify.Load()),
		"scanNotActiveBrokerInterval":     strconv.FormatInt(c.cfg.ScanNotActiveBrokerInterval.Milliseconds(), 10),
		"controllerHeartBeatTimeoutMills": strconv.FormatInt(time.Duration(c.hbTimeout.Load()).Milliseconds(), 10),
		"electMasterMaxRetryCount":        strconv.Itoa(c.cfg.ElectMasterMaxRetryCount),
	}
}

// getConfig: GET_CONTROLLER_CONFIG; the body is "key=value" lines, sorted.
func (c *Controller) getConfig(req *codec.RemotingCommand) *codec.RemotingCommand {
	items := c.configItems()
	keys := make([]string, 0, len(items))
	for k := range items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + items[k] + "\n")
	}
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.Body = []byte(b.String())
	return resp
}
