package namesrv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// versionV3_0_11 is the first broker version whose REGISTER_BROKER body is a
// RegisterBrokerBody; older brokers send a bare TopicConfigSerializeWrapper (§1.5).
const versionV3_0_11 = 37

// processor is the name server's netio.Handler: it dispatches requests by code (Java
// DefaultRequestProcessor + ClientRequestProcessor). Every method runs on the event loop of
// the request's connection and returns without blocking: short in-memory work is done
// there; broker registrations and KV changes are validated there and handed to their
// workers (see the package doc, "Threads"), which answer later.
type processor struct {
	n *Namesrv
}

var _ netio.Handler = (*processor)(nil)

// OnOpen does nothing: a connection means nothing until it registers a broker.
func (p *processor) OnOpen(netio.Conn) {}

// OnClose drops the brokers that registered over c (Java BrokerHousekeepingService).
func (p *processor) OnClose(c netio.Conn, _ error) {
	if p.n.routes.onChannelClose(c) > 0 {
		p.n.updateGauges()
	}
	if p.n.ext != nil {
		p.n.ext.OnClose(c)
	}
}

// OnRequest answers one request; cmd is valid only during the call, so everything kept
// (strings of ExtFields, decoded bodies) is a copy.
func (p *processor) OnRequest(c netio.Conn, req *codec.RemotingCommand) {
	code := codec.RequestCode(req.Code)
	if p.n.ext != nil && p.toExtension(c, req, code) {
		return
	}
	p.n.metrics.request(code)
	resp := p.handle(c, req, code)
	if resp == nil || req.IsOneway() {
		return // answered later by a worker, or a oneway request
	}
	if err := c.WriteCommand(resp); err != nil {
		p.n.logger.Debug("namesrv: response not written", "code", code, "remote", c.RemoteAddr(), "err", err)
	}
}

// toExtension offers req to the embedded controller and reports whether it answered. A
// BROKER_HEARTBEAT with a brokerId (a broker in controller mode) refreshes the route table's
// entry here and is answered there; one without (a broker heartbeating to its name servers)
// stays here.
func (p *processor) toExtension(c netio.Conn, req *codec.RemotingCommand, code codec.RequestCode) bool {
	if code == codec.RequestBrokerHeartbeat {
		if _, ok := req.ExtFields["brokerId"]; !ok {
			return false
		}
		if addr, ok := req.ExtFields["brokerAddr"]; ok {
			p.n.routes.refreshBroker(req.ExtFields["clusterName"], addr)
		}
	}
	return p.n.ext.OnRequest(c, req)
}

// handle builds the response to req, or returns nil when another goroutine answers.
func (p *processor) handle(c netio.Conn, req *codec.RemotingCommand, code codec.RequestCode) *codec.RemotingCommand {
	switch code {
	case codec.RequestRegisterBroker:
		return p.registerBroker(c, req)
	case codec.RequestUnregisterBroker:
		return p.unregisterBroker(c, req)
	case codec.RequestGetRouteInfoByTopic:
		return p.getRouteInfoByTopic(req)
	case codec.RequestGetBrokerClusterInfo:
		return p.getBrokerClusterInfo(req)
	case codec.RequestGetAllTopicListFromNameServer:
		return p.getAllTopicList(req)
	case codec.RequestDeleteTopicInNamesrv:
		return p.deleteTopicInNamesrv(req)
	case codec.RequestPutKVConfig, codec.RequestDeleteKVConfig:
		return p.changeKVConfig(c, req, code)
	case codec.RequestGetKVConfig:
		return p.getKVConfig(req)
	case codec.RequestGetKVListByNamespace:
		return p.getKVListByNamespace(req)
	case codec.RequestGetTopicsByCluster:
		return p.getTopicsByCluster(req)
	case codec.RequestGetSystemTopicListFromNS:
		return p.getSystemTopicList(req)
	case codec.RequestQueryDataVersion:
		return p.queryDataVersion(req)
	case codec.RequestWipeWritePermOfBroker, codec.RequestAddWritePermOfBroker:
		return p.changeWritePerm(req, code)
	case codec.RequestRegisterTopicInNamesrv:
		return p.registerTopic(req)
	case codec.RequestBrokerHeartbeat:
		return p.brokerHeartbeat(req)
	default:
		return codec.NewResponse(req, codec.ResponseRequestCodeNotSupported,
			" request type "+strconv.Itoa(int(req.Code))+" not supported")
	}
}

// systemError answers SYSTEM_ERROR with err's text (Java answers a request whose header or
// body cannot be decoded that way).
func systemError(req *codec.RemotingCommand, err error) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.ResponseSystemError, err.Error())
}

func success(req *codec.RemotingCommand) *codec.RemotingCommand {
	return codec.NewResponse(req, codec.ResponseSuccess, "")
}

// requiredExt reads header keys Java marks @CFNotNull, for headers codec has no type for.
func requiredExt(req *codec.RemotingCommand, header string, keys ...string) ([]string, error) {
	values := make([]string, len(keys))
	for i, k := range keys {
		v, ok := req.ExtFields[k]
		if !ok {
			return nil, &codec.FieldError{Header: header, Field: k, Err: codec.ErrMissingField}
		}
		values[i] = v
	}
	return values, nil
}

// replyTo is what a worker needs to answer a request after OnRequest returned: the
// connection and the request header fields a response is built from (the command itself is
// only valid during OnRequest).
type replyTo struct {
	conn netio.Conn
	req  codec.RemotingCommand // Code, Opaque, Version, Flag, SerializeType; no ext, no body
}

func newReplyTo(c netio.Conn, req *codec.RemotingCommand) replyTo {
	return replyTo{conn: c, req: codec.RemotingCommand{
		Code: req.Code, Opaque: req.Opaque, Version: req.Version, Flag: req.Flag, SerializeType: req.SerializeType,
	}}
}

// send writes resp unless the request was oneway. It returns the write's error.
func (r *replyTo) send(resp *codec.RemotingCommand) error {
	if r.req.IsOneway() {
		return nil
	}
	return r.conn.WriteCommand(resp)
}

// connGone reports whether a write error means the connection is closed or closing.
func connGone(err error) bool {
	return errors.Is(err, netio.ErrConnClosed) || errors.Is(err, netio.ErrServerStopped) ||
		errors.Is(err, netio.ErrOutboundFull)
}

// registerBroker validates the header and the body's checksum on the loop and hands the
// body (copied) to the broker worker.
func (p *processor) registerBroker(c netio.Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.RegisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	if h.BodyCrc32 != 0 && codec.RegisterBrokerBodyCRC32(req.Body) != h.BodyCrc32 {
		p.n.logger.Warn("namesrv: register body crc32 mismatch", "remote", c.RemoteAddr(), "brokerAddr", h.BrokerAddr)
		return codec.NewResponse(req, codec.ResponseSystemError, "crc32 not match")
	}
	rt := newReplyTo(c, req)
	body := bytes.Clone(req.Body)
	if !p.n.brokerWorker.Submit(func() { p.applyRegistration(&rt, &h, body) }) {
		return codec.NewResponse(req, codec.ResponseSystemBusy,
			"[REJECTREQUEST]system busy, too many broker registrations pending")
	}
	return nil
}

// applyRegistration runs on the broker worker: decode the body, apply it, answer. If the
// answer cannot be written because the connection is gone, the registration is undone:
// the connection's OnClose may already have run, and a broker must not outlive the
// connection it registered over.
func (p *processor) applyRegistration(rt *replyTo, h *codec.RegisterBrokerRequestHeader, body []byte) {
	resp := p.register(rt, h, body)
	if err := rt.send(resp); err != nil {
		if connGone(err) && codec.ResponseCode(resp.Code) == codec.ResponseSuccess {
			p.n.routes.onChannelClose(rt.conn)
			p.n.updateGauges()
		}
		p.n.logger.Debug("namesrv: register response not written", "brokerAddr", h.BrokerAddr, "err", err)
	}
}

// register decodes and applies one registration and builds its response.
func (p *processor) register(rt *replyTo, h *codec.RegisterBrokerRequestHeader, body []byte) *codec.RemotingCommand {
	req := &rt.req
	reg := &brokerRegistration{
		clusterName:  h.ClusterName,
		brokerAddr:   h.BrokerAddr,
		brokerName:   h.BrokerName,
		brokerID:     h.BrokerID,
		haServerAddr: h.HAServerAddr,
		zoneName:     h.ZoneName,
		channel:      rt.conn,
	}
	if h.HeartbeatTimeoutMillis.Set {
		reg.heartbeatTimeout = time.Duration(h.HeartbeatTimeoutMillis.Value) * time.Millisecond
	}
	if h.EnableActingMaster.Set {
		v := h.EnableActingMaster.Value
		reg.enableActingMaster = &v
	}
	switch {
	case len(body) == 0:
		// No body: an empty table at dataVersion zero (Java does the same).
		reg.topics.TopicConfigTable = map[string]codec.TopicConfig{}
		reg.filterServerList = []string{}
	case req.Version >= versionV3_0_11:
		decoded, err := codec.DecodeRegisterBrokerBody(body, h.Compressed, req.Version)
		if err != nil {
			return systemError(req, fmt.Errorf("Failed to decode RegisterBrokerBody: %w", err))
		}
		reg.topics = decoded.TopicConfigSerializeWrapper
		reg.filterServerList = decoded.FilterServerList
	default:
		wrapper, err := codec.DecodeTopicConfigSerializeWrapper(body)
		if err != nil {
			return systemError(req, err)
		}
		reg.topics = *wrapper
	}

	result, err := p.n.routes.registerBroker(reg)
	if err != nil {
		return systemError(req, err)
	}
	p.n.metrics.registrations.Inc()
	p.n.updateGauges()

	resp := success(req)
	resp.ExtFields = make(map[string]string, 2)
	rh := codec.RegisterBrokerResponseHeader{HAServerAddr: result.haServerAddr, MasterAddr: result.masterAddr}
	rh.Encode(resp.ExtFields)
	if p.n.cfg.ReturnOrderTopicConfigToBroker {
		if entries, ok := p.n.kv.list(namespaceOrderTopicConfig); ok {
			kvBody, err := (&codec.KVTable{Table: entries}).Encode()
			if err != nil {
				return systemError(req, err)
			}
			resp.Body = kvBody
		}
	}
	return resp
}

// unregisterBroker goes through the broker worker too, so that it is applied after the
// broker's registrations that arrived before it.
func (p *processor) unregisterBroker(c netio.Conn, req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.UnregisterBrokerRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	rt := newReplyTo(c, req)
	task := func() {
		if p.n.routes.unregisterBroker(h.ClusterName, h.BrokerAddr, h.BrokerName) {
			p.n.logger.Info("namesrv: broker unregistered", "cluster", h.ClusterName, "brokerName", h.BrokerName,
				"brokerId", h.BrokerID, "brokerAddr", h.BrokerAddr)
		}
		p.n.updateGauges()
		if err := rt.send(success(&rt.req)); err != nil {
			p.n.logger.Debug("namesrv: unregister response not written", "brokerAddr", h.BrokerAddr, "err", err)
		}
	}
	if !p.n.brokerWorker.Submit(task) {
		return codec.NewResponse(req, codec.ResponseSystemBusy,
			"[REJECTREQUEST]system busy, too many broker registrations pending")
	}
	return nil
}

func (p *processor) getRouteInfoByTopic(req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.GetRouteInfoRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	if p.n.cfg.NeedWaitForService && time.Since(p.n.startedAt) < p.n.cfg.WaitForService {
		return codec.NewResponse(req, codec.ResponseSystemError, "name server not ready")
	}
	rd, ok := p.n.routes.pickupTopicRouteData(h.Topic)
	if !ok {
		return codec.NewResponse(req, codec.ResponseTopicNotExist,
			"No topic route info in name server for the topic: "+h.Topic)
	}
	if p.n.cfg.OrderMessageEnable {
		rd.OrderTopicConf, _ = p.n.kv.get(namespaceOrderTopicConfig, h.Topic)
	}
	body, err := codec.EncodeTopicRouteData(rd, codec.RouteWantsStandardJSON(req.Version, h.AcceptStandardJSONOnly))
	if err != nil {
		return systemError(req, err)
	}
	resp := success(req)
	resp.Body = body
	return resp
}

// getBrokerClusterInfo answers the cluster table. Java writes bare brokerAddrs keys to
// everyone here; quoting them for clients ≥ 4.9.4 (as routes do) is read the same by
// fastjson and keeps the body valid JSON for other tools.
func (p *processor) getBrokerClusterInfo(req *codec.RemotingCommand) *codec.RemotingCommand {
	resp := success(req)
	resp.Body = codec.EncodeClusterInfo(p.n.routes.clusterInfo(), codec.RouteWantsStandardJSON(req.Version, false))
	return resp
}

// topicListResponse answers a TopicList body.
func topicListResponse(req *codec.RemotingCommand, list *codec.TopicList) *codec.RemotingCommand {
	body, err := list.Encode()
	if err != nil {
		return systemError(req, err)
	}
	resp := success(req)
	resp.Body = body
	return resp
}

func (p *processor) getAllTopicList(req *codec.RemotingCommand) *codec.RemotingCommand {
	if !p.n.cfg.EnableAllTopicList {
		return codec.NewResponse(req, codec.ResponseSystemError, "disable")
	}
	return topicListResponse(req, &codec.TopicList{TopicList: p.n.routes.allTopics()})
}

func (p *processor) getTopicsByCluster(req *codec.RemotingCommand) *codec.RemotingCommand {
	if !p.n.cfg.EnableTopicList {
		return codec.NewResponse(req, codec.ResponseSystemError, "disable")
	}
	v, err := requiredExt(req, "GetTopicsByClusterRequestHeader", "cluster")
	if err != nil {
		return systemError(req, err)
	}
	return topicListResponse(req, &codec.TopicList{TopicList: p.n.routes.topicsByCluster(v[0])})
}

func (p *processor) getSystemTopicList(req *codec.RemotingCommand) *codec.RemotingCommand {
	topics, addr := p.n.routes.systemTopics()
	return topicListResponse(req, &codec.TopicList{TopicList: topics, BrokerAddr: addr})
}

func (p *processor) deleteTopicInNamesrv(req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.DeleteTopicFromNamesrvRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	if p.n.routes.deleteTopic(h.Topic, h.ClusterName) {
		p.n.logger.Info("namesrv: topic deleted", "topic", h.Topic, "cluster", h.ClusterName)
		p.n.updateGauges()
	}
	return success(req)
}

func (p *processor) getKVConfig(req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.GetKVConfigRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return systemError(req, err)
	}
	value, ok := p.n.kv.get(h.Namespace, h.Key)
	if !ok {
		return codec.NewResponse(req, codec.ResponseQueryNotFound,
			"No config item, Namespace: "+h.Namespace+" Key: "+h.Key)
	}
	resp := success(req)
	resp.SetExt("value", value)
	return resp
}

func (p *processor) getKVListByNamespace(req *codec.RemotingCommand) *codec.RemotingCommand {
	v, err := requiredExt(req, "GetKVListByNamespaceRequestHeader", "namespace")
	if err != nil {
		return systemError(req, err)
	}
	entries, ok := p.n.kv.list(v[0])
	if !ok {
		return codec.NewResponse(req, codec.ResponseQueryNotFound, "No config item, Namespace: "+v[0])
	}
	body, err := (&codec.KVTable{Table: entries}).Encode()
	if err != nil {
		return systemError(req, err)
	}
	resp := success(req)
	resp.Body = body
	return resp
}

// changeKVConfig validates a PUT/DELETE_KV_CONFIG on the loop and hands it to the KV
// worker, which applies it, persists the file and answers.
func (p *processor) changeKVConfig(c netio.Conn, req *codec.RemotingCommand, code codec.RequestCode) *codec.RemotingCommand {
	var namespace, key, value string
	if code == codec.RequestPutKVConfig {
		var h codec.PutKVConfigRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return systemError(req, err)
		}
		namespace, key, value = h.Namespace, h.Key, h.Value
	} else {
		var h codec.DeleteKVConfigRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return systemError(req, err)
		}
		namespace, key = h.Namespace, h.Key
	}
	rt := newReplyTo(c, req)
	task := func() {
		var err error
		if code == codec.RequestPutKVConfig {
			err = p.n.kv.put(namespace, key, value)
		} else {
			err = p.n.kv.delete(namespace, key)
		}
		p.n.logger.Info("namesrv: kv config changed", "op", code, "namespace", namespace, "key", key)
		resp := success(&rt.req)
		if err != nil {
			p.n.logger.Error("namesrv: kv config not persisted", "path", p.n.cfg.KVConfigPath, "err", err)
			resp = systemError(&rt.req, err)
		}
		if werr := rt.send(resp); werr != nil {
			p.n.logger.Debug("namesrv: kv response not written", "err", werr)
		}
	}
	if !p.n.kvWorker.Submit(task) {
		return codec.NewResponse(req, codec.ResponseSystemBusy,
			"[REJECTREQUEST]system busy, too many KV config changes pending")
	}
	return nil
}

func (p *processor) queryDataVersion(req *codec.RemotingCommand) *codec.RemotingCommand {
	v, err := requiredExt(req, "QueryDataVersionRequestHeader", "brokerName", "brokerAddr", "brokerId")
	if err != nil {
		return systemError(req, err)
	}
	cluster := req.ExtFields["clusterName"] // optional in Java's header
	var dv codec.DataVersion
	if err := json.Unmarshal(req.Body, &dv); err != nil {
		return systemError(req, fmt.Errorf("QueryDataVersion: body is not a DataVersion: %w", err))
	}
	changed, registered := p.n.routes.queryDataVersion(cluster, v[1], dv)
	resp := success(req)
	resp.SetExt("changed", strconv.FormatBool(changed))
	if registered != nil {
		body, err := json.Marshal(registered)
		if err != nil {
			return systemError(req, err)
		}
		resp.Body = body
	}
	return resp
}

func (p *processor) changeWritePerm(req *codec.RemotingCommand, code codec.RequestCode) *codec.RemotingCommand {
	v, err := requiredExt(req, "WritePermOfBrokerRequestHeader", "brokerName")
	if err != nil {
		return systemError(req, err)
	}
	resp := success(req)
	if code == codec.RequestWipeWritePermOfBroker {
		n := p.n.routes.wipeWritePerm(v[0])
		resp.SetExt("wipeTopicCount", strconv.Itoa(n))
		p.n.logger.Info("namesrv: write permission wiped", "brokerName", v[0], "topics", n)
	} else {
		n := p.n.routes.addWritePerm(v[0])
		resp.SetExt("addTopicCount", strconv.Itoa(n))
		p.n.logger.Info("namesrv: write permission added", "brokerName", v[0], "topics", n)
	}
	return resp
}

func (p *processor) registerTopic(req *codec.RemotingCommand) *codec.RemotingCommand {
	v, err := requiredExt(req, "RegisterTopicRequestHeader", "topic")
	if err != nil {
		return systemError(req, err)
	}
	if len(req.Body) > 0 {
		rd, err := codec.DecodeTopicRouteData(req.Body)
		if err != nil {
			return systemError(req, err)
		}
		if !p.n.routes.registerTopic(v[0], rd.QueueDatas) {
			p.n.logger.Warn("namesrv: register topic names an unknown broker, ignored", "topic", v[0])
		}
		p.n.updateGauges()
	}
	return success(req)
}

func (p *processor) brokerHeartbeat(req *codec.RemotingCommand) *codec.RemotingCommand {
	v, err := requiredExt(req, "BrokerHeartbeatRequestHeader", "brokerAddr", "brokerName")
	if err != nil {
		return systemError(req, err)
	}
	p.n.routes.refreshBroker(req.ExtFields["clusterName"], v[0])
	return success(req)
}
