package broker

import (
	"fmt"

	"github.com/ringmq/ringmq/broker/acl"
	"github.com/ringmq/ringmq/broker/admin"
	"github.com/ringmq/ringmq/broker/clients"
	"github.com/ringmq/ringmq/broker/readplane"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/broker/sendplane"
	"github.com/ringmq/ringmq/codec"
)

// The dispatch table: every request code the broker knows, in one place, with where it
// runs, what runs it and what the ACL requires of it. Adding a request code is one line
// here, its handler and its header type (codec).
//
// Where a request runs:
//
//   - onLoop: on the connection's event loop, for work that touches memory only (sends
//     into the mapped CommitLog, heartbeats, offsets, counters). The handler must not
//     block: a durability wait is a callback (store.WaitDurable), and it answers through
//     its Reply from whichever goroutine finishes the work.
//   - onPool: on a named bounded pool (poolAdmin, poolQuery), for work that can block on
//     disk or take long (admin scans and file writes, index walks). The dispatcher gives
//     the handler a private copy of the command and counts it against requestBudgetBytes.
//   - onLoopThenPool: the handler decodes and checks on the event loop, then either
//     answers there (returns nil) or returns the rest of its work, which the dispatcher
//     queues on the route's pool. Each such handler documents its decision: a pull or a
//     send-back / END_TRANSACTION whose record lies in the hot part of the CommitLog
//     stays on the loop (readplane/pull.go, sendplane/sendback.go); a query, a view by id, a search by time always
//     continues on the pool after decoding on the loop (the header is decoded once, and
//     the pool gets only owned values).
//
// A full pool answers SYSTEM_BUSY at once, and a request that waited longer than its
// pool's limit (waitTimeMillsInPullQueue) answers SYSTEM_BUSY [TIMEOUT_CLEAN_QUEUE]
// instead of running late (RocketMQ's BrokerFastFailure). Handlers never submit
// themselves; the only other pool submission is the long-polling hold service handing a
// woken pull back to poolPull (readplane/longpoll.go, through readplane.Deps.Pool).
var routes = []route{
	// Sends (package sendplane: send.go, reply.go, sendback.go, transaction.go): the put copies
	// into mapped memory; SYNC_FLUSH and SYNC_MASTER answer from the group-commit callbacks.
	{code: codec.RequestSendMessage, where: onLoop, handle: viaSend((*sendplane.Plane).ProcessSendMessage), acl: aclSendTo("topic")},
	{code: codec.RequestSendMessageV2, where: onLoop, handle: viaSend((*sendplane.Plane).ProcessSendMessage), acl: aclSendTo("b")},
	{code: codec.RequestSendBatchMessage, where: onLoop, handle: viaSend((*sendplane.Plane).ProcessSendMessage), acl: aclSendTo("b")},
	{code: codec.RequestSendReplyMessage, where: onLoop, handle: viaSend((*sendplane.Plane).ProcessSendReplyMessage),
		acl: aclSendTo("topic")},
	{code: codec.RequestSendReplyMessageV2, where: onLoop, handle: viaSend((*sendplane.Plane).ProcessSendReplyMessage),
		acl: aclSendTo("b")},
	{code: codec.RequestConsumerSendMsgBack, where: onLoopThenPool, pool: poolQuery,
		split: viaSendSplit((*sendplane.Plane).ProcessConsumerSendMsgBack), acl: aclGroupOnly("group")},
	{code: codec.RequestEndTransaction, where: onLoopThenPool, pool: poolQuery,
		split: viaSendSplit((*sendplane.Plane).ProcessEndTransaction)},

	// Reads (package readplane: pull.go, longpoll.go, query.go, queueinfo.go).
	{code: codec.RequestPullMessage, where: onLoopThenPool, pool: poolPull,
		split: viaReadSplit((*readplane.Plane).ProcessPullMessage), acl: aclTopicThenGroup},
	{code: codec.RequestLitePullMessage, where: onLoopThenPool, pool: poolPull,
		split: viaReadSplit((*readplane.Plane).ProcessPullMessage), acl: aclTopicThenGroup},
	{code: codec.RequestQueryMessage, where: onLoopThenPool, pool: poolQuery,
		split: viaReadSplit((*readplane.Plane).ProcessQueryMessage), acl: aclTopicOnly("topic")},
	{code: codec.RequestViewMessageByID, where: onLoopThenPool, pool: poolQuery,
		split: viaReadSplit((*readplane.Plane).ProcessViewMessageByID)},
	{code: codec.RequestSearchOffsetByTimestamp, where: onLoopThenPool, pool: poolQuery,
		split: viaReadSplit((*readplane.Plane).ProcessSearchOffsetByTimestamp)},
	{code: codec.RequestGetEarliestMsgStoretime, where: onLoopThenPool, pool: poolQuery,
		split: viaReadSplit((*readplane.Plane).ProcessGetEarliestMsgStoretime)},
	{code: codec.RequestGetMaxOffset, where: onLoop, handle: viaRead((*readplane.Plane).ProcessGetMaxOffset)},
	{code: codec.RequestGetMinOffset, where: onLoop, handle: viaRead((*readplane.Plane).ProcessGetMinOffset)},

	// Clients and consumer offsets (broker/clients): memory only; a
	// topic or group they create is written by the metadata writer.
	{code: codec.RequestHeartBeat, where: onLoop, handle: viaClients((*clients.Plane).ProcessHeartbeat), acl: aclHeartbeat},
	{code: codec.RequestUnregisterClient, where: onLoop, handle: viaClients((*clients.Plane).ProcessUnregisterClient),
		acl: aclGroupOnly("consumerGroup")},
	{code: codec.RequestGetConsumerListByGroup, where: onLoop, handle: viaClients((*clients.Plane).ProcessGetConsumerListByGroup),
		acl: aclGroupOnly("consumerGroup")},
	{code: codec.RequestCheckClientConfig, where: onLoop, handle: viaClients((*clients.Plane).ProcessCheckClientConfig)},
	{code: codec.RequestLockBatchMQ, where: onLoop, handle: viaClients((*clients.Plane).ProcessLockBatchMQ)},
	{code: codec.RequestUnlockBatchMQ, where: onLoop, handle: viaClients((*clients.Plane).ProcessUnlockBatchMQ)},
	{code: codec.RequestQueryConsumerOffset, where: onLoop, handle: viaClients((*clients.Plane).ProcessQueryConsumerOffset)},
	{code: codec.RequestUpdateConsumerOffset, where: onLoop, handle: viaClients((*clients.Plane).ProcessUpdateConsumerOffset),
		acl: aclGroupThenTopic},

	// Admin (broker/admin, through viaAdmin): they write config files, walk whole tables,
	// read records from the store, or wait for a registration round (UPDATE_BROKER_CONFIG
	// rewrites broker.conf and, for brokerPermission, waits for one: liveconfig.go).
	{code: codec.RequestUpdateAndCreateTopic, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessUpdateAndCreateTopic), acl: aclAdmin},
	{code: codec.RequestDeleteTopicInBroker, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessDeleteTopicInBroker), acl: aclAdmin},
	{code: codec.RequestGetAllTopicConfig, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetAllTopicConfig)},
	{code: codec.RequestGetTopicConfig, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetTopicConfig)},
	{code: codec.RequestUpdateAndCreateSubscriptionGroup, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessUpdateAndCreateSubscriptionGroup), acl: aclAdmin},
	{code: codec.RequestGetAllSubscriptionGroupConfig, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetAllSubscriptionGroupConfig)},
	{code: codec.RequestDeleteSubscriptionGroup, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessDeleteSubscriptionGroup), acl: aclAdmin},
	{code: codec.RequestGetSubscriptionGroupConfig, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetSubscriptionGroupConfig)},
	{code: codec.RequestGetBrokerRuntimeInfo, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetBrokerRuntimeInfo)},
	{code: codec.RequestGetBrokerConfig, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetBrokerConfig)},
	{code: codec.RequestGetBrokerEpochCache, where: onPool, pool: poolAdmin, handle: (*Broker).getBrokerEpochCache},
	// No ACL: the controller sends it without credentials, and all it does is make the supervisor ask
	// the controller at once.
	{code: codec.RequestNotifyBrokerRoleChanged, where: onLoop, handle: (*Broker).roleChangeNotified},
	{code: codec.RequestUpdateBrokerConfig, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessUpdateBrokerConfig), acl: aclAdmin},
	{code: codec.RequestGetTopicStatsInfo, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetTopicStatsInfo)},
	{code: codec.RequestGetConsumeStats, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetConsumeStats)},
	{code: codec.RequestGetConsumerConnectionList, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetConsumerConnectionList)},
	{code: codec.RequestGetProducerConnectionList, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetProducerConnectionList)},
	{code: codec.RequestGetAllConsumerOffset, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetAllConsumerOffset)},
	{code: codec.RequestGetAllDelayOffset, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetAllDelayOffset)},
	{code: codec.RequestQueryTopicConsumeByWho, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessQueryTopicConsumeByWho)},
	{code: codec.RequestInvokeBrokerToResetOffset, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessInvokeBrokerToResetOffset)},
	{code: codec.RequestCloneGroupOffset, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessCloneGroupOffset)},
	{code: codec.RequestQueryConsumeTimeSpan, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessQueryConsumeTimeSpan)},
	{code: codec.RequestGetAllProducerInfo, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetAllProducerInfo)},
	{code: codec.RequestCleanUnusedTopic, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessCleanUnusedTopic)},
	{code: codec.RequestQueryConsumeQueue, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessQueryConsumeQueue)},
	{code: codec.RequestCleanExpiredConsumeQueue, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessCleanExpiredConsumeQueue)},
	{code: codec.RequestGetSystemTopicListFromBroker, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetSystemTopicListFromBroker)},
	{code: codec.RequestQueryCorrectionOffset, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessQueryCorrectionOffset)},
	{code: codec.RequestGetBrokerConsumeStats, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetBrokerConsumeStats)},
	{code: codec.RequestViewBrokerStatsData, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessViewBrokerStatsData)},
	{code: codec.RequestDeleteExpiredCommitLog, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessDeleteExpiredCommitLog)},
	// Relayed to a consumer's connection (admin/relay.go): the pool's worker sends the call
	// asynchronously and returns; the client's answer completes the request.
	{code: codec.RequestGetConsumerRunningInfo, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessGetConsumerRunningInfo)},
	{code: codec.RequestConsumeMessageDirectly, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessConsumeMessageDirectly)},
	{code: codec.RequestInvokeBrokerToGetConsumerStatus, where: onPool, pool: poolAdmin,
		handle: viaAdmin((*admin.Plane).ProcessInvokeBrokerToGetConsumerStatus)},
	// Reads a record by offset and appends it to the half queue (sendplane/resume.go).
	{code: codec.RequestResumeCheckHalfMessage, where: onPool, pool: poolAdmin,
		handle: viaSend((*sendplane.Plane).ProcessResumeCheckHalfMessage)},

	// The ACL's own admin requests (broker/acl): they rewrite aclFile; admin accounts only.
	{code: codec.RequestUpdateAndCreateACLConfig, where: onPool, pool: poolAdmin,
		handle: viaACL((*acl.Plane).ProcessUpdateAndCreateAccessConfig), acl: aclAdmin},
	{code: codec.RequestDeleteACLConfig, where: onPool, pool: poolAdmin,
		handle: viaACL((*acl.Plane).ProcessDeleteAccessConfig), acl: aclAdmin},
	{code: codec.RequestGetBrokerClusterACLInfo, where: onPool, pool: poolAdmin,
		handle: viaACL((*acl.Plane).ProcessGetBrokerClusterAclInfo), acl: aclAdmin},
	{code: codec.RequestUpdateGlobalWhiteAddrsConfig, where: onPool, pool: poolAdmin,
		handle: viaACL((*acl.Plane).ProcessUpdateGlobalWhiteAddrsConfig), acl: aclAdmin},

	// Not served: answered REQUEST_CODE_NOT_SUPPORTED (" request type N not supported", as a
	// RocketMQ server answers a code it has no processor for), counted under the code's name in
	// ringmq_broker_requests_total and logged at DEBUG with the reason. Together with the rows
	// above, these are every code RocketMQ 4.9.8's broker serves (BrokerController.registerProcessor
	// and AdminBrokerProcessor, its default processor); TestRouteTableCoversJavaBroker checks it.
	// RocketMQ 5.x's static topics: an ACL-enabled broker refuses it to non-admin accounts
	// first, as Java's Permission.ADMIN_CODE (plus 5.x's 513) does.
	{code: requestUpdateAndCreateStaticTopic, acl: aclAdmin, reason: "RocketMQ 5.x static topics (logic queues) are not implemented"},
}

// The adapters below bind a plane's method expression to the table's handler types. The
// table is built once at package initialisation, so each row's closure is made once and a
// request allocates nothing here.

// viaSend routes a request to the send plane (broker/sendplane).
func viaSend(h func(*sendplane.Plane, *remoting.Request)) func(*Broker, *remoting.Request) {
	return func(b *Broker, rc *remoting.Request) { h(b.send, rc) }
}

// viaSendSplit is viaSend for split handlers (onLoopThenPool): the plane returns the pool part.
func viaSendSplit(h func(*sendplane.Plane, *remoting.Request) (rest func())) func(*Broker, *remoting.Request) (rest func()) {
	return func(b *Broker, rc *remoting.Request) (rest func()) { return h(b.send, rc) }
}

// viaRead routes a request to the read plane (broker/readplane).
func viaRead(h func(*readplane.Plane, *remoting.Request)) func(*Broker, *remoting.Request) {
	return func(b *Broker, rc *remoting.Request) { h(b.read, rc) }
}

// viaReadSplit is viaRead for split handlers (onLoopThenPool): the plane returns the pool part.
func viaReadSplit(h func(*readplane.Plane, *remoting.Request) (rest func())) func(*Broker, *remoting.Request) (rest func()) {
	return func(b *Broker, rc *remoting.Request) (rest func()) { return h(b.read, rc) }
}

// viaAdmin routes a request to the admin plane (broker/admin).
func viaAdmin(h func(*admin.Plane, *remoting.Request)) func(*Broker, *remoting.Request) {
	return func(b *Broker, rc *remoting.Request) { h(b.admin, rc) }
}

// viaACL routes a request to the ACL's admin plane (broker/acl).
func viaACL(h func(*acl.Plane, *remoting.Request)) func(*Broker, *remoting.Request) {
	return func(b *Broker, rc *remoting.Request) { h(b.aclAdmin, rc) }
}

// viaClients routes a request to the client plane (broker/clients).
func viaClients(h func(*clients.Plane, *remoting.Request)) func(*Broker, *remoting.Request) {
	return func(b *Broker, rc *remoting.Request) { h(b.clients, rc) }
}

// The ACL rules the rows name (broker/acl).
var (
	aclAdmin          = acl.Admin
	aclHeartbeat      = acl.Heartbeat
	aclTopicThenGroup = acl.TopicThenGroup
	aclGroupThenTopic = acl.GroupThenTopic
	aclSendTo         = acl.SendTo
	aclTopicOnly      = acl.TopicOnly
	aclGroupOnly      = acl.GroupOnly
)

// aclRuleOf is the ACL rule of a request code (its row's); unknown codes get the zero rule.
func aclRuleOf(code int32) acl.Rule {
	if r := routeByCode[code]; r != nil {
		return r.acl
	}
	return acl.Rule{}
}

// requestUpdateAndCreateStaticTopic is RocketMQ 5.x's UPDATE_AND_CREATE_STATIC_TOPIC.
const requestUpdateAndCreateStaticTopic codec.RequestCode = 513

// placement says where a route's handler runs (see above).
type placement uint8

const (
	notServed placement = iota
	onLoop
	onPool
	onLoopThenPool
)

func (p placement) String() string {
	switch p {
	case onLoop:
		return "event loop"
	case onPool:
		return "pool"
	case onLoopThenPool:
		return "event loop, then pool"
	}
	return "not served"
}

// poolName names one of the broker's bounded pools (Broker.pools).
type poolName uint8

const (
	poolNone poolName = iota
	poolPull
	poolQuery
	poolAdmin
	poolCount
)

// route is one row of the table.
type route struct {
	code  codec.RequestCode
	where placement
	pool  poolName
	// handle serves onLoop and onPool routes.
	handle func(b *Broker, rc *remoting.Request)
	// split serves onLoopThenPool routes: it runs on the event loop and returns nil when it
	// has answered, else the rest of the work for the route's pool.
	split func(b *Broker, rc *remoting.Request) (rest func())
	acl   acl.Rule
	// reason says why a notServed route is not served (logged with the refusal).
	reason string
}

// routeByCode indexes routes; read-only after package initialisation.
var routeByCode = func() map[int32]*route {
	m, err := indexRoutes(routes)
	if err != nil {
		panic(err)
	}
	return m
}()

// indexRoutes indexes rs by code and checks each route's placement against its handler and
// pool.
func indexRoutes(rs []route) (map[int32]*route, error) {
	m := make(map[int32]*route, len(rs))
	for i := range rs {
		r := &rs[i]
		if _, dup := m[int32(r.code)]; dup {
			return nil, fmt.Errorf("broker: request code %v routed twice", r.code)
		}
		switch {
		case r.where == notServed && (r.handle != nil || r.split != nil || r.reason == ""),
			r.where != notServed && r.reason != "",
			(r.where == onLoop || r.where == onPool) && (r.handle == nil || r.split != nil),
			r.where == onLoopThenPool && (r.split == nil || r.handle != nil),
			(r.where == onPool || r.where == onLoopThenPool) != (r.pool != poolNone):
			return nil, fmt.Errorf("broker: route for %v: placement %v does not match its handler and pool", r.code, r.where)
		}
		m[int32(r.code)] = r
	}
	return m, nil
}
