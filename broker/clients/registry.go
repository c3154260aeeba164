package clients

import (
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/netio"
)

// Client registries: which producers and consumers are connected, learnt from heartbeats
// (HEART_BEAT 34) and forgotten on UNREGISTER_CLIENT (35), when their connection closes,
// or when no heartbeat came for channelExpiredTimeout (120 s; clients beat every 30 s).
//
// A client is keyed by its client id (ip@pid or ip@instanceName) within a group: a client
// that reconnects replaces its old connection instead of appearing twice. Removal by
// connection (close, expiry) only removes entries that still point at that connection.

// ClientChannelInfo is one client of a group as its last heartbeat described it.
type ClientChannelInfo struct {
	Conn       netio.Conn
	ClientID   string
	Language   codec.LanguageCode
	Version    int32 // the client's MQVersion ordinal
	LastUpdate time.Time
}

// consumerGroupInfo is one consumer group's live state. Guarded by ConsumerManager.mu.
type consumerGroupInfo struct {
	members          map[string]ClientChannelInfo       // by client id
	subscriptions    map[string]*codec.SubscriptionData // by topic; a stored value is never modified
	consumeType      codec.ConsumeType
	messageModel     codec.MessageModel
	consumeFromWhere codec.ConsumeFromWhere
	lastUpdate       time.Time
}

// ConsumerGroupSnapshot is a copy of one consumer group's state (GET_CONSUMER_CONNECTION_LIST).
type ConsumerGroupSnapshot struct {
	Members          []ClientChannelInfo // sorted by client id
	Subscriptions    map[string]*codec.SubscriptionData
	ConsumeType      codec.ConsumeType
	MessageModel     codec.MessageModel
	ConsumeFromWhere codec.ConsumeFromWhere
}

// ConsumerManager tracks consumer groups from heartbeats: members (client id →
// connection), subscriptions, message model. Safe for concurrent use; no method blocks on
// I/O (notifications are queued on the members' connections).
type ConsumerManager struct {
	clock  func() time.Time
	expiry time.Duration
	logger *slog.Logger
	// notify is told about every group whose members or subscriptions changed, with the
	// group's remaining members; the broker sends NOTIFY_CONSUMER_IDS_CHANGED from it.
	// Called without locks held. nil: nobody is told.
	notify func(group string, members []netio.Conn)

	mu     sync.RWMutex
	groups map[string]*consumerGroupInfo
}

// NewConsumerManager drops members silent for expiry (ScanExpired); notify may be nil.
func NewConsumerManager(clock func() time.Time, expiry time.Duration, logger *slog.Logger,
	notify func(group string, members []netio.Conn)) *ConsumerManager {
	return &ConsumerManager{clock: clock, expiry: expiry, logger: logger, notify: notify,
		groups: map[string]*consumerGroupInfo{}}
}

// groupChange is a notification to send once the lock is released.
type groupChange struct {
	group   string
	members []netio.Conn
}

func (m *ConsumerManager) fire(changes []groupChange) {
	if m.notify == nil {
		return
	}
	for _, c := range changes {
		m.notify(c.group, c.members)
	}
}

// memberConns lists a group's connections. Caller holds m.mu.
func memberConns(g *consumerGroupInfo) []netio.Conn {
	conns := make([]netio.Conn, 0, len(g.members))
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		conns = append(conns, g.members[id].Conn)
	}
	return conns
}

// Register records a consumer heartbeat for group: the member, its consume settings and its
// subscriptions. It reports whether the member set or the subscribed topics changed (a new
// member, a topic added or dropped); when they did, the group's members are notified.
//
// Subscriptions follow RocketMQ's ConsumerGroupInfo.updateSubscription: a new topic is added,
// a known topic is replaced only by a higher subVersion, topics absent from the heartbeat are
// dropped. Stored subscriptions carry Java tag hash codes recomputed from tagsSet.
func (m *ConsumerManager) Register(group string, ch ClientChannelInfo, data *codec.ConsumerData) bool {
	now := m.clock()
	ch.LastUpdate = now
	m.mu.Lock()
	g, ok := m.groups[group]
	if !ok {
		g = &consumerGroupInfo{members: map[string]ClientChannelInfo{}, subscriptions: map[string]*codec.SubscriptionData{}}
		m.groups[group] = g
	}
	g.consumeType, g.messageModel, g.consumeFromWhere = data.ConsumeType, data.MessageModel, data.ConsumeFromWhere
	g.lastUpdate = now
	_, known := g.members[ch.ClientID]
	g.members[ch.ClientID] = ch
	changed := !known

	seen := make(map[string]bool, len(data.SubscriptionDataSet))
	for i := range data.SubscriptionDataSet {
		sub := data.SubscriptionDataSet[i]
		seen[sub.Topic] = true
		old, exists := g.subscriptions[sub.Topic]
		if exists && sub.SubVersion <= old.SubVersion {
			continue
		}
		stored := sub
		stored.TagsSet = slices.Clone(sub.TagsSet)
		stored.CodeSet = sub.JavaTagCodes()
		g.subscriptions[sub.Topic] = &stored
		if !exists {
			changed = true
		}
	}
	for topic := range g.subscriptions {
		if !seen[topic] {
			delete(g.subscriptions, topic)
			changed = true
		}
	}
	var changes []groupChange
	if changed {
		changes = append(changes, groupChange{group, memberConns(g)})
	}
	m.mu.Unlock()
	if !known {
		m.logger.Info("broker: consumer registered", "group", group, "clientId", ch.ClientID,
			"addr", ch.Conn.RemoteAddr().String())
	}
	m.fire(changes)
	return changed
}

// Unregister removes a group's member (UNREGISTER_CLIENT) if it is registered on conn, and
// notifies the remaining members. It reports whether a member was removed.
func (m *ConsumerManager) Unregister(group, clientID string, conn netio.Conn) bool {
	m.mu.Lock()
	g, ok := m.groups[group]
	var changes []groupChange
	removed := false
	if ok {
		if ch, ok := g.members[clientID]; ok && ch.Conn.ID() == conn.ID() {
			delete(g.members, clientID)
			removed = true
			changes = m.afterRemoval(group, g, changes)
		}
	}
	m.mu.Unlock()
	if removed {
		m.logger.Info("broker: consumer unregistered", "group", group, "clientId", clientID)
	}
	m.fire(changes)
	return removed
}

// afterRemoval drops an empty group or queues a notification to its remaining members.
// Caller holds m.mu.
func (m *ConsumerManager) afterRemoval(group string, g *consumerGroupInfo, changes []groupChange) []groupChange {
	if len(g.members) == 0 {
		delete(m.groups, group)
		return changes
	}
	return append(changes, groupChange{group, memberConns(g)})
}

// OnConnClosed removes every member registered on conn and notifies their groups.
func (m *ConsumerManager) OnConnClosed(conn netio.Conn) {
	m.removeMembers(func(ch ClientChannelInfo) bool { return ch.Conn.ID() == conn.ID() }, "connection closed")
}

// ScanExpired removes members whose last heartbeat is older than the expiry, notifies
// their groups, and returns their connections (the caller closes them, as RocketMQ does).
func (m *ConsumerManager) ScanExpired() []netio.Conn {
	deadline := m.clock().Add(-m.expiry)
	return m.removeMembers(func(ch ClientChannelInfo) bool { return ch.LastUpdate.Before(deadline) }, "heartbeat expired")
}

func (m *ConsumerManager) removeMembers(match func(ClientChannelInfo) bool, why string) []netio.Conn {
	var changes []groupChange
	var gone []netio.Conn
	type removal struct{ group, clientID string }
	var removals []removal
	m.mu.Lock()
	for group, g := range m.groups {
		n := len(g.members)
		for id, ch := range g.members {
			if match(ch) {
				delete(g.members, id)
				gone = append(gone, ch.Conn)
				removals = append(removals, removal{group, id})
			}
		}
		if len(g.members) != n {
			changes = m.afterRemoval(group, g, changes)
		}
	}
	m.mu.Unlock()
	for _, r := range removals {
		m.logger.Info("broker: consumer removed", "group", r.group, "clientId", r.clientID, "reason", why)
	}
	m.fire(changes)
	return gone
}

// FindSubscriptionData returns the subscription a group's heartbeat declared for topic,
// or nil. Its JavaTagCodes are recomputed from tagsSet (the Go client's codeSet is
// hashed over UTF-8, PROTOCOL.md §4.3): CodeSet holds Java's codes. The value is shared:
// do not modify it.
func (m *ConsumerManager) FindSubscriptionData(group, topic string) *codec.SubscriptionData {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if g, ok := m.groups[group]; ok {
		return g.subscriptions[topic]
	}
	return nil
}

// ConsumerIDs returns the client ids of a group's live members, sorted; nil when the group
// has none.
func (m *ConsumerManager) ConsumerIDs(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[group]
	if !ok || len(g.members) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(g.members))
}

// Group returns a copy of a group's state, or false when it has no members.
func (m *ConsumerManager) Group(group string) (ConsumerGroupSnapshot, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	g, ok := m.groups[group]
	if !ok {
		return ConsumerGroupSnapshot{}, false
	}
	s := ConsumerGroupSnapshot{
		Subscriptions:    maps.Clone(g.subscriptions),
		ConsumeType:      g.consumeType,
		MessageModel:     g.messageModel,
		ConsumeFromWhere: g.consumeFromWhere,
	}
	for _, id := range slices.Sorted(maps.Keys(g.members)) {
		s.Members = append(s.Members, g.members[id])
	}
	return s, true
}

// GroupsByTopic returns the groups with a live subscription to topic, sorted.
func (m *ConsumerManager) GroupsByTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for name, g := range m.groups {
		if _, ok := g.subscriptions[topic]; ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ProducerManager tracks producer groups from heartbeats (for transaction check-back
// and request-reply). Safe for concurrent use.
type ProducerManager struct {
	clock  func() time.Time
	expiry time.Duration
	logger *slog.Logger

	mu     sync.RWMutex
	groups map[string]map[string]ClientChannelInfo // group → client id → channel
}

func NewProducerManager(clock func() time.Time, expiry time.Duration, logger *slog.Logger) *ProducerManager {
	return &ProducerManager{clock: clock, expiry: expiry, logger: logger, groups: map[string]map[string]ClientChannelInfo{}}
}

// Register records a producer heartbeat for group.
func (m *ProducerManager) Register(group string, ch ClientChannelInfo) {
	ch.LastUpdate = m.clock()
	m.mu.Lock()
	members, ok := m.groups[group]
	if !ok {
		members = map[string]ClientChannelInfo{}
		m.groups[group] = members
	}
	_, known := members[ch.ClientID]
	members[ch.ClientID] = ch
	m.mu.Unlock()
	if !known {
		m.logger.Info("broker: producer registered", "group", group, "clientId", ch.ClientID,
			"addr", ch.Conn.RemoteAddr().String())
	}
}

// Unregister removes a group's producer if it is registered on conn.
func (m *ProducerManager) Unregister(group, clientID string, conn netio.Conn) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	members := m.groups[group]
	if ch, ok := members[clientID]; ok && ch.Conn.ID() == conn.ID() {
		delete(members, clientID)
		if len(members) == 0 {
			delete(m.groups, group)
		}
		return true
	}
	return false
}

// OnConnClosed removes every producer registered on conn.
func (m *ProducerManager) OnConnClosed(conn netio.Conn) {
	m.removeWhere(func(ch ClientChannelInfo) bool { return ch.Conn.ID() == conn.ID() })
}

// ScanExpired removes producers without a heartbeat for the expiry and returns their
// connections for the caller to close.
func (m *ProducerManager) ScanExpired() []netio.Conn {
	deadline := m.clock().Add(-m.expiry)
	return m.removeWhere(func(ch ClientChannelInfo) bool { return ch.LastUpdate.Before(deadline) })
}

func (m *ProducerManager) removeWhere(match func(ClientChannelInfo) bool) []netio.Conn {
	var gone []netio.Conn
	m.mu.Lock()
	defer m.mu.Unlock()
	for group, members := range m.groups {
		for id, ch := range members {
			if match(ch) {
				delete(members, id)
				gone = append(gone, ch.Conn)
			}
		}
		if len(members) == 0 {
			delete(m.groups, group)
		}
	}
	return gone
}

// FindConn returns the connection of the producer with this client id in any group
// (request-reply: the REPLY_TO_CLIENT property names it).
func (m *ProducerManager) FindConn(clientID string) (netio.Conn, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, members := range m.groups {
		if ch, ok := members[clientID]; ok {
			return ch.Conn, true
		}
	}
	return nil, false
}

// AvailableConn returns the connection of the group's producer that sent the latest
// heartbeat (transaction check-back goes to one live producer of the group).
func (m *ProducerManager) AvailableConn(group string) (netio.Conn, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var best ClientChannelInfo
	found := false
	for _, ch := range m.groups[group] {
		if !found || ch.LastUpdate.After(best.LastUpdate) {
			best, found = ch, true
		}
	}
	return best.Conn, found
}

// Groups returns the producer groups with live members, sorted.
func (m *ProducerManager) Groups() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]string, 0, len(m.groups))
	for name, members := range m.groups {
		if len(members) > 0 {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// Members returns a copy of a producer group's members sorted by client id (nil when none).
func (m *ProducerManager) Members(group string) []ClientChannelInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	members := m.groups[group]
	if len(members) == 0 {
		return nil
	}
	out := make([]ClientChannelInfo, 0, len(members))
	for _, id := range slices.Sorted(maps.Keys(members)) {
		out = append(out, members[id])
	}
	return out
}

// AddConnIDs adds the ID of every connection a consumer is registered on to ids (metrics: connections
// by role).
func (m *ConsumerManager) AddConnIDs(ids map[uint64]struct{}) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, g := range m.groups {
		for _, ch := range g.members {
			ids[ch.Conn.ID()] = struct{}{}
		}
	}
}

// AddConnIDs adds the ID of every connection a producer is registered on to ids (metrics: connections
// by role).
func (m *ProducerManager) AddConnIDs(ids map[uint64]struct{}) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, members := range m.groups {
		for _, ch := range members {
			ids[ch.Conn.ID()] = struct{}{}
		}
	}
}
