package metadata

import (
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// Built-in consumer groups (RocketMQ MixAll), present in every broker's table.
const (
	ToolsConsumerGroup     = "TOOLS_CONSUMER"
	FiltersrvConsumerGroup = "FILTERSRV_CONSUMER"
	SelfTestConsumerGroup  = "SELF_TEST_C_GROUP"
	OnsHTTPProxyGroup      = "CID_ONS-HTTP-PROXY"
	OnsAPIPullGroup        = "CID_ONSAPI_PULL"
	OnsAPIPermissionGroup  = "CID_ONSAPI_PERMISSION"
	OnsAPIOwnerGroup       = "CID_ONSAPI_OWNER"
	SysTransCheckGroup     = "CID_RMQ_SYS_TRANS"
	sysConsumerGroupPrefix = "CID_RMQ_SYS_"
)

var builtinGroups = []string{ToolsConsumerGroup, FiltersrvConsumerGroup, SelfTestConsumerGroup,
	OnsHTTPProxyGroup, OnsAPIPullGroup, OnsAPIPermissionGroup, OnsAPIOwnerGroup, SysTransCheckGroup}

// builtinGroup reports whether group is one of the built-in groups, which do not count towards
// autoCreateSubscriptionGroupLimit.
func builtinGroup(group string) bool {
	return slices.Contains(builtinGroups, group)
}

// countUserGroups counts the groups of table that are not built-in.
func countUserGroups(table map[string]codec.SubscriptionGroupConfig) int {
	n := 0
	for name := range table {
		if !builtinGroup(name) {
			n++
		}
	}
	return n
}

// SubscriptionGroupManager holds subscriptionGroup.json: the broker-side settings of every
// consumer group (retry queues, max retries, whether it may consume, whether members are
// told about membership changes...). Safe for concurrent use.
//
// FindOrCreate runs on event loops (heartbeats, pulls, send-backs): a group it creates is
// written to disk by the broker's background flusher. Update and Delete write before they
// return.
type SubscriptionGroupManager struct {
	autoCreate atomic.Bool // autoCreateSubscriptionGroup; changes at run time (SetAutoCreate)
	// autoCreateLimit is autoCreateSubscriptionGroupLimit (0: none): FindOrCreate creates a
	// group only while fewer groups than this, built-ins aside, exist.
	autoCreateLimit atomic.Int64
	observe         AutoCreateObserver // nil: nobody is told
	clock           func() time.Time
	logger          *slog.Logger
	file            *configFile

	mu         sync.RWMutex
	table      map[string]codec.SubscriptionGroupConfig
	userGroups int                         // groups of table that are not built-in
	forbidden  map[string]map[string]int32 // 5.x forbiddenTable, kept as read
	version    codec.DataVersion
}

func NewSubscriptionGroupManager(autoCreate bool, storePathRootDir string, clock func() time.Time,
	logger *slog.Logger) *SubscriptionGroupManager {
	m := &SubscriptionGroupManager{
		clock: clock, logger: logger,
		table:     map[string]codec.SubscriptionGroupConfig{},
		forbidden: map[string]map[string]int32{},
		version:   codec.DataVersion{Timestamp: clock().UnixMilli()},
	}
	m.autoCreate.Store(autoCreate)
	m.file = newConfigFile(filepath.Join(ConfigDir(storePathRootDir), SubscriptionGroupFileName), m.encodeFile, logger)
	// The built-ins RocketMQ's SubscriptionGroupManager creates.
	for _, g := range builtinGroups {
		m.table[g] = codec.NewSubscriptionGroupConfig(g)
	}
	return m
}

// Load merges subscriptionGroup.json (or its .bak) over the built-in groups.
func (m *SubscriptionGroupManager) Load() error {
	_, err := LoadConfigFile(m.file.path, func(data []byte) error {
		w, err := codec.DecodeSubscriptionGroupWrapper(data)
		if err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for name, c := range w.SubscriptionGroupTable {
			if c.GroupName == "" {
				c.GroupName = name
			}
			m.table[name] = c
		}
		m.userGroups = countUserGroups(m.table)
		maps.Copy(m.forbidden, w.ForbiddenTable)
		m.version = w.DataVersion
		return nil
	}, m.logger)
	return err
}

func (m *SubscriptionGroupManager) encodeFile() ([]byte, error) {
	w := m.Snapshot()
	return w.Encode(true)
}

// Persist writes subscriptionGroup.json now.
func (m *SubscriptionGroupManager) Persist() error { return m.file.persist() }

// Get returns the group's config without creating it.
func (m *SubscriptionGroupManager) Get(group string) (codec.SubscriptionGroupConfig, bool) {
	m.mu.RLock()
	c, ok := m.table[group]
	m.mu.RUnlock()
	return c, ok
}

// Contains reports whether the group exists (UPDATE_CONSUMER_OFFSET's check).
func (m *SubscriptionGroupManager) Contains(group string) bool {
	_, ok := m.Get(group)
	return ok
}

// SetAutoCreate changes autoCreateSubscriptionGroup while the broker runs
// (UPDATE_BROKER_CONFIG); FindOrCreate follows it from its next call. Safe for concurrent use.
func (m *SubscriptionGroupManager) SetAutoCreate(on bool) { m.autoCreate.Store(on) }

// SetAutoCreateLimit sets autoCreateSubscriptionGroupLimit (≤ 0: no limit). Safe for
// concurrent use.
func (m *SubscriptionGroupManager) SetAutoCreateLimit(limit int) {
	m.autoCreateLimit.Store(int64(max(limit, 0)))
}

// SetAutoCreateObserver sets who is told about implicit creations and refusals. Call before
// the table is shared.
func (m *SubscriptionGroupManager) SetAutoCreateObserver(fn AutoCreateObserver) { m.observe = fn }

// Count returns the number of groups besides the built-in ones (what
// autoCreateSubscriptionGroupLimit is compared with).
func (m *SubscriptionGroupManager) Count() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.userGroups
}

// FindOrCreate returns the group's config, creating it with defaults when
// autoCreateSubscriptionGroup is on (ErrGroupNotExist otherwise: SUBSCRIPTION_GROUP_NOT_EXIST).
// Groups named CID_RMQ_SYS_* are always created; an invalid group name never is. Past
// autoCreateSubscriptionGroupLimit nothing is created: the error is a *LimitError.
func (m *SubscriptionGroupManager) FindOrCreate(group string) (codec.SubscriptionGroupConfig, error) {
	if c, ok := m.Get(group); ok {
		return c, nil
	}
	if !m.autoCreate.Load() && !strings.HasPrefix(group, sysConsumerGroupPrefix) {
		return codec.SubscriptionGroupConfig{}, ErrGroupNotExist
	}
	if !ValidGroupName(group) {
		return codec.SubscriptionGroupConfig{}, ErrGroupNotExist
	}
	limit := int(m.autoCreateLimit.Load())
	m.mu.Lock()
	c, ok := m.table[group]
	refused := !ok && limit > 0 && m.userGroups >= limit && !builtinGroup(group)
	if !ok && !refused {
		c = codec.NewSubscriptionGroupConfig(group)
		m.table[group] = c
		if !builtinGroup(group) {
			m.userGroups++
		}
		m.version = m.nextVersion(m.version)
	}
	m.mu.Unlock()
	if refused {
		m.logger.Warn("broker: subscription group not auto-created: limit reached", "group", group,
			"limit", limit, "key", AutoCreateSubscriptionGroupLimitKey)
		m.observed(KindSubscriptionGroup, false)
		return codec.SubscriptionGroupConfig{}, &LimitError{Kind: KindSubscriptionGroup, Name: group, Limit: limit,
			Key: AutoCreateSubscriptionGroupLimitKey}
	}
	if !ok {
		m.logger.Info("broker: subscription group auto-created", "group", group)
		m.file.markDirty()
		m.observed(KindSubscriptionGroup, true)
	}
	return c, nil
}

func (m *SubscriptionGroupManager) observed(kind string, created bool) {
	if m.observe != nil {
		m.observe(kind, created)
	}
}

func (m *SubscriptionGroupManager) nextVersion(v codec.DataVersion) codec.DataVersion {
	v.Counter++
	v.Timestamp = m.clock().UnixMilli()
	return v
}

// Update creates or replaces a group (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP) and writes the
// file before returning. It blocks on disk: call it from a pool.
func (m *SubscriptionGroupManager) Update(c codec.SubscriptionGroupConfig) error {
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	m.mu.Lock()
	_, existed := m.table[c.GroupName]
	m.table[c.GroupName] = c
	if !existed && !builtinGroup(c.GroupName) {
		m.userGroups++
	}
	m.version = m.nextVersion(m.version)
	m.mu.Unlock()
	m.logger.Info("broker: subscription group updated", "group", c.GroupName, "created", !existed)
	return m.file.persist()
}

// Delete removes a group and writes the file; false when it did not exist. Blocks on disk.
func (m *SubscriptionGroupManager) Delete(group string) (bool, error) {
	m.mu.Lock()
	_, ok := m.table[group]
	if ok {
		delete(m.table, group)
		delete(m.forbidden, group)
		if !builtinGroup(group) {
			m.userGroups--
		}
		m.version = m.nextVersion(m.version)
	}
	m.mu.Unlock()
	if !ok {
		return false, nil
	}
	m.logger.Info("broker: subscription group deleted", "group", group)
	return true, m.file.persist()
}

// Snapshot returns the table as subscriptionGroup.json / the GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// body. Maps are copies.
func (m *SubscriptionGroupManager) Snapshot() *codec.SubscriptionGroupWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	forbidden := make(map[string]map[string]int32, len(m.forbidden))
	for g, t := range m.forbidden {
		forbidden[g] = maps.Clone(t)
	}
	return &codec.SubscriptionGroupWrapper{
		DataVersion:            m.version,
		ForbiddenTable:         forbidden,
		SubscriptionGroupTable: maps.Clone(m.table),
	}
}

// GroupNames returns every group's name, sorted.
func (m *SubscriptionGroupManager) GroupNames() []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Sorted(maps.Keys(m.table))
}

// DataVersion returns the table's current version.
func (m *SubscriptionGroupManager) DataVersion() codec.DataVersion {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.version
}

// ReplaceFromMaster is a slave's subscription-group sync (PROTOCOL.md §13.4): when the
// master's DataVersion differs from this table's, the whole table (and the 5.x forbidden
// table) becomes the master's, with its DataVersion, and subscriptionGroup.json is written
// before returning; replaced says whether that happened. It blocks on disk.
func (m *SubscriptionGroupManager) ReplaceFromMaster(w *codec.SubscriptionGroupWrapper) (replaced bool, err error) {
	table := make(map[string]codec.SubscriptionGroupConfig, len(w.SubscriptionGroupTable))
	for name, c := range w.SubscriptionGroupTable {
		if c.GroupName == "" {
			c.GroupName = name
		}
		table[name] = c
	}
	forbidden := make(map[string]map[string]int32, len(w.ForbiddenTable))
	for g, t := range w.ForbiddenTable {
		forbidden[g] = maps.Clone(t)
	}
	m.mu.Lock()
	if m.version == w.DataVersion {
		m.mu.Unlock()
		return false, nil
	}
	m.table, m.forbidden, m.version = table, forbidden, w.DataVersion
	m.userGroups = countUserGroups(table)
	n := len(table) // read under the lock: writers change the installed map after Unlock
	m.mu.Unlock()
	m.logger.Info("broker: subscription groups replaced by the master's", "groups", n,
		"dataVersionCounter", w.DataVersion.Counter, "dataVersionTimestamp", w.DataVersion.Timestamp)
	return true, m.file.persist()
}
