package namesrv

import (
	"cmp"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// Permission bits of a queue (PROTOCOL §10, Java PermName).
const (
	permRead  int32 = 4
	permWrite int32 = 2
)

// masterID is the broker id of a master (Java MixAll.MASTER_ID).
const masterID int64 = 0

// brokerChannel is what the route table needs of the connection a broker registered over:
// its identity, to drop the broker when exactly that connection closes, and Close, to cut
// an expired broker off. netio.Conn satisfies it.
type brokerChannel interface {
	ID() uint64
	Close() error
}

// brokerAddrKey identifies a live broker: its cluster and remoting address (Java
// BrokerAddrInfo).
type brokerAddrKey struct {
	cluster string
	addr    string
}

// brokerLiveInfo is what the name server knows about one registered address.
type brokerLiveInfo struct {
	lastUpdate       time.Time
	heartbeatTimeout time.Duration
	dataVersion      codec.DataVersion
	channel          brokerChannel // nil when registered without a connection (tests)
	haServerAddr     string
}

// brokerEntry is one broker name (a master and its slaves): the mutable form of
// codec.BrokerData.
type brokerEntry struct {
	cluster            string
	name               string
	addrs              map[int64]string // broker id → "ip:port"
	enableActingMaster bool
	zoneName           string
}

// snapshot copies e into the wire form.
func (e *brokerEntry) snapshot() codec.BrokerData {
	return codec.BrokerData{
		BrokerAddrs:        maps.Clone(e.addrs),
		BrokerName:         e.name,
		Cluster:            e.cluster,
		EnableActingMaster: e.enableActingMaster,
		ZoneName:           e.zoneName,
	}
}

// brokerRegistration is one REGISTER_BROKER request, decoded.
type brokerRegistration struct {
	clusterName  string
	brokerAddr   string
	brokerName   string
	brokerID     int64
	haServerAddr string
	zoneName     string
	// heartbeatTimeout overrides the default expiry for this address; 0 = default.
	heartbeatTimeout time.Duration
	// enableActingMaster is nil for an "old" broker that does not send the field.
	enableActingMaster *bool
	topics             codec.TopicConfigSerializeWrapper
	// filterServerList is nil when the request carried none (the table is left alone).
	filterServerList []string
	channel          brokerChannel
}

// registerResult is what a registering slave learns about its master.
type registerResult struct {
	masterAddr   string // the master's remoting address, "" when there is no live master
	haServerAddr string // the master's HA address, "" likewise
}

// routeInfoManager is the name server's broker and topic registry (Java RouteInfoManager).
//
// All tables sit behind one RWMutex: registrations, unregistrations, expiry and admin
// changes take it for writing, route and listing reads for reading, and every read copies
// what it returns, so no caller ever holds a reference into the tables. Work under the lock
// is in-memory map work only: no I/O, no logging of per-request detail beyond broker
// arrival and departure, and connections of expired brokers are closed after unlocking.
//
// Safe for concurrent use.
type routeInfoManager struct {
	logger         *slog.Logger
	now            func() time.Time
	defaultTimeout time.Duration // heartbeat timeout when a registration names none

	mu sync.RWMutex
	// topicQueueTable: topic → broker name → queue data.
	topicQueueTable map[string]map[string]codec.QueueData
	// brokerAddrTable: broker name → its addresses by id.
	brokerAddrTable map[string]*brokerEntry
	// clusterAddrTable: cluster → broker names.
	clusterAddrTable map[string]map[string]struct{}
	// brokerLiveTable: every registered address and when it was last heard from.
	brokerLiveTable map[brokerAddrKey]*brokerLiveInfo
	// filterServerTable: filter servers a broker reported (always empty with 4.x+ brokers).
	filterServerTable map[brokerAddrKey][]string
}

func newRouteInfoManager(logger *slog.Logger, now func() time.Time, defaultTimeout time.Duration) *routeInfoManager {
	return &routeInfoManager{
		logger:            logger,
		now:               now,
		defaultTimeout:    defaultTimeout,
		topicQueueTable:   make(map[string]map[string]codec.QueueData),
		brokerAddrTable:   make(map[string]*brokerEntry),
		clusterAddrTable:  make(map[string]map[string]struct{}),
		brokerLiveTable:   make(map[brokerAddrKey]*brokerLiveInfo),
		filterServerTable: make(map[brokerAddrKey][]string),
	}
}

// registerBroker records a broker's registration (PROTOCOL §10, §13.1):
//
//   - the broker name joins its cluster; the address is stored under its id, and removed
//     from any other id of the same broker name first (a slave re-registered as master);
//   - if another address already holds this id and that broker's stateVersion is newer,
//     the registration is ignored (5.x controller mode; 4.x brokers send 0);
//   - a first registration of this id that carries exactly one topic is refused
//     (errRegisterFirstSingleTopic): Java 5.x brokers send single-topic registrations only
//     after a full one, and accepting it would record a dataVersion that hides the rest of
//     the broker's topics;
//   - a master (id 0), or the "prime slave" of a 5.x broker name without a live master (the
//     lowest id, only for brokers that send enableActingMaster), creates or refreshes the
//     queue data of every topic it lists — unless its dataVersion equals the one last
//     registered from this address and the topic already lists this broker name, in which
//     case only the timestamp is refreshed;
//   - a slave learns the address and HA address of its master, while the master is live.
func (m *routeInfoManager) registerBroker(reg *brokerRegistration) (registerResult, error) {
	var result registerResult
	timeout := reg.heartbeatTimeout
	if timeout <= 0 {
		timeout = m.defaultTimeout
	}
	liveKey := brokerAddrKey{reg.clusterName, reg.brokerAddr}
	dataVersion := reg.topics.DataVersion

	m.mu.Lock()
	defer m.mu.Unlock()

	entry := m.brokerAddrTable[reg.brokerName]
	if entry != nil {
		if oldAddr, ok := entry.addrs[reg.brokerID]; ok && oldAddr != reg.brokerAddr {
			old := m.brokerLiveTable[brokerAddrKey{reg.clusterName, oldAddr}]
			if old != nil && old.dataVersion.StateVersion > dataVersion.StateVersion {
				m.logger.Warn("namesrv: registration conflicts with a newer broker under the same id, ignored",
					"cluster", reg.clusterName, "brokerName", reg.brokerName, "brokerId", reg.brokerID,
					"oldAddr", oldAddr, "oldStateVersion", old.dataVersion.StateVersion,
					"newAddr", reg.brokerAddr, "newStateVersion", dataVersion.StateVersion)
				delete(m.brokerLiveTable, liveKey)
				return result, nil
			}
		}
	}
	if len(reg.topics.TopicConfigTable) == 1 && (entry == nil || !hasKey(entry.addrs, reg.brokerID)) {
		return result, errRegisterFirstSingleTopic
	}

	names := m.clusterAddrTable[reg.clusterName]
	if names == nil {
		names = make(map[string]struct{})
		m.clusterAddrTable[reg.clusterName] = names
	}
	names[reg.brokerName] = struct{}{}

	registerFirst := false
	if entry == nil {
		registerFirst = true
		entry = &brokerEntry{cluster: reg.clusterName, name: reg.brokerName, addrs: make(map[int64]string)}
		m.brokerAddrTable[reg.brokerName] = entry
	}
	oldVersionBroker := reg.enableActingMaster == nil
	entry.enableActingMaster = !oldVersionBroker && *reg.enableActingMaster
	entry.zoneName = reg.zoneName

	// One ip:port appears once per broker name: drop it from any other id first.
	maps.DeleteFunc(entry.addrs, func(id int64, addr string) bool {
		return addr == reg.brokerAddr && id != reg.brokerID
	})
	oldAddr := entry.addrs[reg.brokerID]
	entry.addrs[reg.brokerID] = reg.brokerAddr
	registerFirst = registerFirst || oldAddr == ""

	isMaster := reg.brokerID == masterID
	isPrimeSlave := !oldVersionBroker && !isMaster && reg.brokerID == minKey(entry.addrs)
	if isMaster || isPrimeSlave {
		prev := m.brokerLiveTable[liveKey]
		brokerChanged := prev == nil || prev.dataVersion != dataVersion
		for _, topic := range sortedKeys(reg.topics.TopicConfigTable) {
			tc := reg.topics.TopicConfigTable[topic]
			if !registerFirst && !brokerChanged && hasKey(m.topicQueueTable[topic], reg.brokerName) {
				continue
			}
			perm := tc.Perm
			if isPrimeSlave && entry.enableActingMaster {
				perm &^= permWrite // an acting master serves reads only
			}
			m.putQueueDataLocked(topic, codec.QueueData{
				BrokerName:     reg.brokerName,
				Perm:           perm,
				ReadQueueNums:  tc.ReadQueueNums,
				TopicSysFlag:   tc.TopicSysFlag,
				WriteQueueNums: tc.WriteQueueNums,
			})
		}
	}

	if _, known := m.brokerLiveTable[liveKey]; !known {
		m.logger.Info("namesrv: broker registered", "cluster", reg.clusterName, "brokerName", reg.brokerName,
			"brokerId", reg.brokerID, "brokerAddr", reg.brokerAddr, "haServerAddr", reg.haServerAddr)
	}
	m.brokerLiveTable[liveKey] = &brokerLiveInfo{
		lastUpdate:       m.now(),
		heartbeatTimeout: timeout,
		dataVersion:      dataVersion,
		channel:          reg.channel,
		haServerAddr:     reg.haServerAddr,
	}
	if reg.filterServerList != nil {
		if len(reg.filterServerList) == 0 {
			delete(m.filterServerTable, liveKey)
		} else {
			m.filterServerTable[liveKey] = slices.Clone(reg.filterServerList)
		}
	}

	if !isMaster {
		if masterAddr, ok := entry.addrs[masterID]; ok {
			if master := m.brokerLiveTable[brokerAddrKey{reg.clusterName, masterAddr}]; master != nil {
				result.masterAddr = masterAddr
				result.haServerAddr = master.haServerAddr
			}
		}
	}
	return result, nil
}

// putQueueDataLocked stores one broker's queue data for a topic. Caller holds mu.
func (m *routeInfoManager) putQueueDataLocked(topic string, qd codec.QueueData) {
	byBroker := m.topicQueueTable[topic]
	if byBroker == nil {
		byBroker = make(map[string]codec.QueueData)
		m.topicQueueTable[topic] = byBroker
	}
	byBroker[qd.BrokerName] = qd
}

// unregisterBroker removes one address (UNREGISTER_BROKER, or a broker found dead): its
// live entry and filter servers, its place in the broker name's address map and, when no
// address is left, the broker name itself, its queue data, emptied topics and an emptied
// cluster. It reports whether the address was registered.
func (m *routeInfoManager) unregisterBroker(cluster, addr, brokerName string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unregisterLocked(cluster, addr, brokerName)
}

// unregisterLocked is unregisterBroker with mu held for writing.
func (m *routeInfoManager) unregisterLocked(cluster, addr, brokerName string) bool {
	key := brokerAddrKey{cluster, addr}
	_, wasLive := m.brokerLiveTable[key]
	delete(m.brokerLiveTable, key)
	delete(m.filterServerTable, key)

	entry := m.brokerAddrTable[brokerName]
	if entry == nil {
		return wasLive
	}
	maps.DeleteFunc(entry.addrs, func(_ int64, a string) bool { return a == addr })
	if len(entry.addrs) > 0 {
		// Queue data stays while a slave is left: consumers can still read from it.
		return wasLive
	}
	delete(m.brokerAddrTable, brokerName)
	if names := m.clusterAddrTable[cluster]; names != nil {
		delete(names, brokerName)
		if len(names) == 0 {
			delete(m.clusterAddrTable, cluster)
		}
	}
	for topic, byBroker := range m.topicQueueTable {
		delete(byBroker, brokerName)
		if len(byBroker) == 0 {
			delete(m.topicQueueTable, topic)
		}
	}
	m.logger.Info("namesrv: broker name removed", "cluster", cluster, "brokerName", brokerName)
	return true
}

// brokerNamesOfLocked lists the broker names of key's cluster that list key's address
// (Java setupUnRegisterRequest takes the first; an address re-registered under a new broker
// name is listed under both until the old name is cleaned up). Caller holds mu.
func (m *routeInfoManager) brokerNamesOfLocked(key brokerAddrKey) []string {
	var names []string
	for name, entry := range m.brokerAddrTable {
		if entry.cluster != key.cluster {
			continue
		}
		for _, a := range entry.addrs {
			if a == key.addr {
				names = append(names, name)
				break
			}
		}
	}
	return names
}

// dropLocked removes a live address found dead (expired or its connection closed) from its
// tables and from every broker name of its cluster that lists it. Caller holds mu for
// writing.
func (m *routeInfoManager) dropLocked(key brokerAddrKey) {
	delete(m.brokerLiveTable, key)
	delete(m.filterServerTable, key)
	for _, name := range m.brokerNamesOfLocked(key) {
		m.unregisterLocked(key.cluster, key.addr, name)
	}
}

// onChannelClose drops every broker address that registered over the connection ch: a
// broker whose connection closed is gone at once (it reconnects and registers again).
// A connection that registered nothing, or was since replaced by a newer registration of
// the same address over another connection, drops nothing. It returns how many addresses
// were dropped.
func (m *routeInfoManager) onChannelClose(ch brokerChannel) int {
	id := ch.ID()
	m.mu.Lock()
	defer m.mu.Unlock()
	dropped := 0
	for key, live := range m.brokerLiveTable {
		if live.channel == nil || live.channel.ID() != id {
			continue
		}
		m.logger.Info("namesrv: broker connection closed, broker removed", "cluster", key.cluster, "brokerAddr", key.addr)
		m.dropLocked(key)
		dropped++
	}
	return dropped
}

// scanNotActiveBrokers drops every address not re-registered within its heartbeat timeout
// and closes its connection. It returns how many were dropped.
func (m *routeInfoManager) scanNotActiveBrokers() int {
	now := m.now()
	var toClose []brokerChannel
	dropped := 0
	m.mu.Lock()
	for key, live := range m.brokerLiveTable {
		if !live.lastUpdate.Add(live.heartbeatTimeout).Before(now) {
			continue
		}
		m.logger.Warn("namesrv: broker expired", "cluster", key.cluster, "brokerAddr", key.addr,
			"heartbeatTimeout", live.heartbeatTimeout, "lastUpdate", live.lastUpdate)
		if live.channel != nil {
			toClose = append(toClose, live.channel)
		}
		m.dropLocked(key)
		dropped++
	}
	m.mu.Unlock()
	// Closing outside the lock: the close callback (onChannelClose) takes it again, and by
	// then finds nothing left to drop for these connections.
	for _, ch := range toClose {
		_ = ch.Close() // only fails when already closed
	}
	return dropped
}

// refreshBroker marks an address as heard from now (BROKER_HEARTBEAT, QUERY_DATA_VERSION).
func (m *routeInfoManager) refreshBroker(cluster, addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if live := m.brokerLiveTable[brokerAddrKey{cluster, addr}]; live != nil {
		live.lastUpdate = m.now()
	}
}

// queryDataVersion compares a broker's topic dataVersion with the one last registered from
// its address (QUERY_DATA_VERSION), refreshes the address's timestamp, and returns whether
// they differ and the registered version (nil when the address is unknown).
func (m *routeInfoManager) queryDataVersion(cluster, addr string, dv codec.DataVersion) (bool, *codec.DataVersion) {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := m.brokerLiveTable[brokerAddrKey{cluster, addr}]
	if live == nil {
		return true, nil
	}
	changed := live.dataVersion != dv
	live.lastUpdate = m.now()
	registered := live.dataVersion
	return changed, &registered
}

// pickupTopicRouteData builds a topic's route (PROTOCOL §10): the queue data of every
// broker name serving it and the addresses of those broker names, both sorted by broker
// name, plus filter servers. ok is false when either part is empty (TOPIC_NOT_EXIST).
func (m *routeInfoManager) pickupTopicRouteData(topic string) (rd *codec.TopicRouteData, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	byBroker := m.topicQueueTable[topic]
	if len(byBroker) == 0 {
		return nil, false
	}
	rd = &codec.TopicRouteData{
		FilterServerTable: map[string][]string{},
		QueueDatas:        make([]codec.QueueData, 0, len(byBroker)),
		BrokerDatas:       make([]codec.BrokerData, 0, len(byBroker)),
	}
	for _, name := range sortedKeys(byBroker) {
		rd.QueueDatas = append(rd.QueueDatas, byBroker[name])
		entry := m.brokerAddrTable[name]
		if entry == nil {
			continue
		}
		rd.BrokerDatas = append(rd.BrokerDatas, entry.snapshot())
		if len(m.filterServerTable) == 0 {
			continue
		}
		for _, addr := range entry.addrs {
			if list, ok := m.filterServerTable[brokerAddrKey{entry.cluster, addr}]; ok {
				rd.FilterServerTable[addr] = slices.Clone(list)
			}
		}
	}
	if len(rd.BrokerDatas) == 0 {
		return nil, false
	}
	return rd, true
}

// clusterInfo copies the broker and cluster tables (GET_BROKER_CLUSTER_INFO).
func (m *routeInfoManager) clusterInfo() *codec.ClusterInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	ci := &codec.ClusterInfo{
		BrokerAddrTable:  make(map[string]codec.BrokerData, len(m.brokerAddrTable)),
		ClusterAddrTable: make(map[string][]string, len(m.clusterAddrTable)),
	}
	for name, entry := range m.brokerAddrTable {
		ci.BrokerAddrTable[name] = entry.snapshot()
	}
	for cluster, names := range m.clusterAddrTable {
		ci.ClusterAddrTable[cluster] = sortedKeys(names)
	}
	return ci
}

// allTopics lists every topic with a route, sorted (GET_ALL_TOPIC_LIST_FROM_NAMESERVER).
func (m *routeInfoManager) allTopics() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return sortedKeys(m.topicQueueTable)
}

// topicsByCluster lists, sorted, the topics served by any broker name of cluster
// (GET_TOPICS_BY_CLUSTER); an unknown cluster has none.
func (m *routeInfoManager) topicsByCluster(cluster string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := m.clusterAddrTable[cluster]
	var topics []string
	for topic, byBroker := range m.topicQueueTable {
		for name := range byBroker {
			if _, ok := names[name]; ok {
				topics = append(topics, topic)
				break
			}
		}
	}
	slices.Sort(topics)
	return topics
}

// systemTopics lists the cluster names and broker names (which are also topics on a
// broker with clusterTopicEnable/brokerTopicEnable), sorted and without duplicates, and one
// broker address to query them at: the lowest id of the first broker name
// (GET_SYSTEM_TOPIC_LIST_FROM_NS).
func (m *routeInfoManager) systemTopics() (topics []string, brokerAddr string) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	set := make(map[string]struct{})
	for cluster, names := range m.clusterAddrTable {
		set[cluster] = struct{}{}
		for name := range names {
			set[name] = struct{}{}
		}
	}
	for _, name := range sortedKeys(m.brokerAddrTable) {
		if addrs := m.brokerAddrTable[name].addrs; len(addrs) > 0 {
			brokerAddr = addrs[minKey(addrs)]
			break
		}
	}
	return sortedKeys(set), brokerAddr
}

// deleteTopic removes a topic's route (DELETE_TOPIC_IN_NAMESRV): entirely when cluster is
// empty, else only the queue data of that cluster's broker names (the topic goes when none
// is left). It reports whether anything was removed.
func (m *routeInfoManager) deleteTopic(topic, cluster string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	byBroker, ok := m.topicQueueTable[topic]
	if !ok {
		return false
	}
	if cluster == "" {
		delete(m.topicQueueTable, topic)
		return true
	}
	removed := false
	for name := range m.clusterAddrTable[cluster] {
		if _, ok := byBroker[name]; ok {
			delete(byBroker, name)
			removed = true
		}
	}
	if len(byBroker) == 0 {
		delete(m.topicQueueTable, topic)
	}
	return removed
}

// registerTopic adds queue data for a topic on known broker names
// (REGISTER_TOPIC_IN_NAMESRV). If any broker name is not registered nothing is changed and
// it returns false (Java logs and ignores the request).
func (m *routeInfoManager) registerTopic(topic string, queueDatas []codec.QueueData) bool {
	if len(queueDatas) == 0 {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, qd := range queueDatas {
		if _, ok := m.brokerAddrTable[qd.BrokerName]; !ok {
			return false
		}
	}
	for _, qd := range queueDatas {
		m.putQueueDataLocked(topic, qd)
	}
	return true
}

// wipeWritePerm clears the write permission of every topic on brokerName
// (WIPE_WRITE_PERM_OF_BROKER, used to drain a broker before maintenance); addWritePerm sets
// read+write again (ADD_WRITE_PERM_OF_BROKER). Both return the number of topics touched.
// The change lasts until the broker's next registration with a new dataVersion.
func (m *routeInfoManager) wipeWritePerm(brokerName string) int {
	return m.changePerm(brokerName, func(perm int32) int32 { return perm &^ permWrite })
}

func (m *routeInfoManager) addWritePerm(brokerName string) int {
	return m.changePerm(brokerName, func(int32) int32 { return permRead | permWrite })
}

func (m *routeInfoManager) changePerm(brokerName string, change func(int32) int32) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, byBroker := range m.topicQueueTable {
		qd, ok := byBroker[brokerName]
		if !ok {
			continue
		}
		qd.Perm = change(qd.Perm)
		byBroker[brokerName] = qd
		n++
	}
	return n
}

// counts returns the numbers of live broker addresses and topics (for metrics and logs).
func (m *routeInfoManager) counts() (brokers, topics int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.brokerLiveTable), len(m.topicQueueTable)
}

// sortedKeys returns a map's keys in ascending order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// minKey returns the smallest key of a non-empty map (0 for an empty one).
func minKey[V any](m map[int64]V) int64 {
	first := true
	var lowest int64
	for k := range m {
		if first || k < lowest {
			lowest, first = k, false
		}
	}
	return lowest
}

func hasKey[K comparable, V any](m map[K]V, k K) bool {
	_, ok := m[k]
	return ok
}
