package metadata

import (
	"fmt"
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

// Topic permission bits (RocketMQ PermName), used in TopicConfig.Perm, QueueData.Perm and
// brokerPermission.
const (
	PermPriority int32 = 8
	PermRead     int32 = 4
	PermWrite    int32 = 2
	PermInherit  int32 = 1
)

// IsReadable reports whether perm allows reading (pull, consume).
func IsReadable(perm int32) bool { return perm&PermRead != 0 }

// IsWriteable reports whether perm allows writing (send).
func IsWriteable(perm int32) bool { return perm&PermWrite != 0 }

// IsInherited reports whether a topic may serve as a template for auto-created topics.
func IsInherited(perm int32) bool { return perm&PermInherit != 0 }

// Topic sys-flag bits (RocketMQ TopicSysFlag).
const (
	TopicSysFlagUnit    int32 = 1
	TopicSysFlagUnitSub int32 = 2
)

// Names of built-in topics and group-topic prefixes (RocketMQ TopicValidator, MixAll).
const (
	AutoCreateTopicKeyTopic    = "TBW102"
	ScheduleTopic              = "SCHEDULE_TOPIC_XXXX"
	BenchmarkTopic             = "BenchmarkTest"
	SelfTestTopic              = "SELF_TEST_TOPIC"
	OffsetMovedEventTopic      = "OFFSET_MOVED_EVENT"
	TransHalfTopic             = "RMQ_SYS_TRANS_HALF_TOPIC"
	TransOpHalfTopic           = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
	TransCheckMaxTimeTopic     = "TRANS_CHECK_MAX_TIME_TOPIC"
	DefaultTraceTopic          = "RMQ_SYS_TRACE_TOPIC"
	ReplyTopicSuffix           = "_REPLY_TOPIC" // <cluster>_REPLY_TOPIC
	SystemTopicPrefix          = "rmq_sys_"
	RetryGroupTopicPrefix      = "%RETRY%"
	DLQGroupTopicPrefix        = "%DLQ%"
	scheduleTopicQueueNums     = 18
	benchmarkTopicQueueNums    = 1024
	topicNameMaxLength         = 127
	RetryOrDLQTopicNameMaxLen  = 255
	TopicNameAllowedCharacters = "^[%|a-zA-Z0-9_-]+$"
)

// RetryTopic is a consumer group's retry topic, %RETRY%<group>.
func RetryTopic(group string) string { return RetryGroupTopicPrefix + group }

// DLQTopic is a consumer group's dead-letter topic, %DLQ%<group>.
func DLQTopic(group string) string { return DLQGroupTopicPrefix + group }

// validTopicOrGroupChar reports whether c may appear in a topic or group name.
func validTopicOrGroupChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '%' || c == '|' || c == '_' || c == '-'
}

// ValidateTopicName checks a topic name as RocketMQ's TopicValidator does and returns the
// Java broker's remark for the first problem, or "" when the name is valid. Retry and DLQ
// topics may be up to 255 characters, others 127.
func ValidateTopicName(topic string) string {
	if strings.TrimSpace(topic) == "" {
		return "The specified topic is blank."
	}
	for i := 0; i < len(topic); i++ {
		if !validTopicOrGroupChar(topic[i]) {
			return fmt.Sprintf("The specified topic[%s] contains illegal characters, allowing only %s",
				topic, TopicNameAllowedCharacters)
		}
	}
	limit := topicNameMaxLength
	if strings.HasPrefix(topic, RetryGroupTopicPrefix) || strings.HasPrefix(topic, DLQGroupTopicPrefix) {
		limit = RetryOrDLQTopicNameMaxLen
	}
	if len(topic) > limit {
		return "The specified topic is longer than topic max length."
	}
	return ""
}

// ValidGroupName reports whether a consumer group name is acceptable (RocketMQ: at most 255
// characters of the topic character set).
func ValidGroupName(group string) bool {
	if group == "" || len(group) > RetryOrDLQTopicNameMaxLen {
		return false
	}
	for i := 0; i < len(group); i++ {
		if !validTopicOrGroupChar(group[i]) {
			return false
		}
	}
	return true
}

// topicState is one immutable version of the topic table. Readers load it without locks;
// writers replace it whole (copy on write): topics change rarely, and Get runs on every send
// and pull.
type topicState struct {
	table       map[string]codec.TopicConfig
	version     codec.DataVersion
	groupTopics int // retry and dead-letter topics in table (autoCreateRetryTopicLimit)
}

// newTopicState counts table's group topics.
func newTopicState(table map[string]codec.TopicConfig, version codec.DataVersion) *topicState {
	st := &topicState{table: table, version: version}
	for name := range table {
		if IsGroupTopic(name) {
			st.groupTopics++
		}
	}
	return st
}

// TopicOptions are the broker settings the topic table depends on (brokerClusterName,
// brokerName, autoCreateTopicEnable, defaultTopicQueueNums, clusterTopicEnable,
// brokerTopicEnable, traceTopicEnable, msgTraceTopicName).
type TopicOptions struct {
	ClusterName           string
	BrokerName            string
	AutoCreateTopicEnable bool
	DefaultTopicQueueNums int32
	ClusterTopicEnable    bool
	BrokerTopicEnable     bool
	TraceTopicEnable      bool
	TraceTopicName        string
}

// TopicConfigManager holds topics.json: every topic this broker serves, with its queue
// counts and permissions, and the table's DataVersion (which name servers and slaves compare).
// It starts with RocketMQ's built-in topics; the file's entries override them.
//
// Safe for concurrent use. Get never blocks (it reads an immutable snapshot). Changes made on
// an event loop (CreateInSendMessage, CreateInSendMessageBack) are written to disk by the
// broker's background flusher; Update and Delete write before they return.
//
// TopicConfig values returned share their Attributes map with the table: treat them as
// read-only.
type TopicConfigManager struct {
	opts     TopicOptions
	clock    func() time.Time
	logger   *slog.Logger
	file     *configFile
	onChange func() // asks for a registration with the name servers; nil in unit tests

	system map[string]bool // built-in topic names; fixed at construction
	// autoCreate is autoCreateTopicEnable, which changes at run time
	// (SetAutoCreateTopicEnable); opts.AutoCreateTopicEnable is its value at start.
	autoCreate atomic.Bool
	// groupTopicLimit is autoCreateRetryTopicLimit (0: none): retry and dead-letter topics are
	// created implicitly only while the table holds fewer of them.
	groupTopicLimit atomic.Int64
	observe         AutoCreateObserver // nil: nobody is told

	mu    sync.Mutex // serializes writers
	state atomic.Pointer[topicState]
}

// SetOnChange sets what a change of the table asks for (a registration with the name
// servers). Call before the table is shared.
func (m *TopicConfigManager) SetOnChange(fn func()) { m.onChange = fn }

// NewTopicConfigManager builds the table with the built-in topics; Load reads the file.
func NewTopicConfigManager(opts TopicOptions, storePathRootDir string, clock func() time.Time,
	logger *slog.Logger) *TopicConfigManager {
	m := &TopicConfigManager{opts: opts, clock: clock, logger: logger, system: map[string]bool{}}
	m.autoCreate.Store(opts.AutoCreateTopicEnable)
	m.file = newConfigFile(filepath.Join(ConfigDir(storePathRootDir), TopicsFileName), m.encodeFile, logger)
	table := map[string]codec.TopicConfig{}
	add := func(tc codec.TopicConfig) {
		table[tc.TopicName] = tc
		m.system[tc.TopicName] = true
	}
	withQueues := func(name string, queues int32) codec.TopicConfig {
		tc := codec.NewTopicConfig(name)
		tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
		return tc
	}
	// The same built-ins, with the same settings, as RocketMQ's TopicConfigManager.
	add(withQueues(SelfTestTopic, 1))
	if opts.AutoCreateTopicEnable {
		add(autoCreateTemplate(opts.DefaultTopicQueueNums))
	}
	add(withQueues(BenchmarkTopic, benchmarkTopicQueueNums))
	{
		tc := codec.NewTopicConfig(opts.ClusterName)
		tc.Perm = PermInherit
		if opts.ClusterTopicEnable {
			tc.Perm |= PermRead | PermWrite
		}
		add(tc)
	}
	{
		tc := withQueues(opts.BrokerName, 1)
		tc.Perm = PermInherit
		if opts.BrokerTopicEnable {
			tc.Perm |= PermRead | PermWrite
		}
		add(tc)
	}
	add(withQueues(OffsetMovedEventTopic, 1))
	add(withQueues(ScheduleTopic, scheduleTopicQueueNums))
	if opts.TraceTopicEnable && opts.TraceTopicName != "" {
		add(withQueues(opts.TraceTopicName, 1))
	}
	add(withQueues(opts.ClusterName+ReplyTopicSuffix, 1))
	// RMQ_SYS_TRANS_HALF_TOPIC is listed (RocketMQ creates it when its check service first looks
	// for half messages); RMQ_SYS_TRANS_OP_HALF_TOPIC is not: RocketMQ writes its op records to
	// the store without a topic config, so the name servers, topicList and GET_ALL_TOPIC_CONFIG
	// never show it. Its queue is read and written through the store alone (sendplane).
	add(withQueues(TransHalfTopic, 1))
	m.state.Store(newTopicState(table, codec.DataVersion{Timestamp: clock().UnixMilli()}))
	return m
}

// Load merges topics.json (or its .bak) over the built-in topics and takes its DataVersion.
// Call before the broker serves requests.
func (m *TopicConfigManager) Load() error {
	_, err := LoadConfigFile(m.file.path, func(data []byte) error {
		w, err := codec.DecodeTopicConfigSerializeWrapper(data)
		if err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		old := m.state.Load()
		table := maps.Clone(old.table)
		for name, tc := range w.TopicConfigTable {
			if name == TransOpHalfTopic {
				continue // written by an older ringmq: RocketMQ keeps no config for it
			}
			if tc.TopicName == "" {
				tc.TopicName = name
			}
			table[name] = tc
		}
		m.state.Store(newTopicState(table, w.DataVersion))
		return nil
	}, m.logger)
	return err
}

// encodeFile is topics.json's content: the whole table, pretty-printed as Java writes it.
func (m *TopicConfigManager) encodeFile() ([]byte, error) {
	w := m.Snapshot()
	return w.Encode(true)
}

// Persist writes topics.json now.
func (m *TopicConfigManager) Persist() error { return m.file.persist() }

// Get returns the topic's config. It does not block or allocate.
func (m *TopicConfigManager) Get(topic string) (codec.TopicConfig, bool) {
	tc, ok := m.state.Load().table[topic]
	return tc, ok
}

// Contains reports whether the topic exists.
func (m *TopicConfigManager) Contains(topic string) bool {
	_, ok := m.state.Load().table[topic]
	return ok
}

// staticSystemTopics are RocketMQ's TopicValidator.SYSTEM_TOPIC_SET before any broker adds to it.
var staticSystemTopics = []string{AutoCreateTopicKeyTopic, ScheduleTopic, BenchmarkTopic, TransHalfTopic,
	DefaultTraceTopic, TransOpHalfTopic, TransCheckMaxTimeTopic, SelfTestTopic, OffsetMovedEventTopic}

// SystemTopics lists the system topics as RocketMQ's TopicValidator.getSystemTopicSet does on a
// broker (GET_SYSTEM_TOPIC_LIST_FROM_BROKER): its static set plus the broker's built-in topics
// (the cluster, broker, reply and trace topics among them), sorted.
func (m *TopicConfigManager) SystemTopics() []string {
	out := slices.Concat(staticSystemTopics, slices.Collect(maps.Keys(m.system)))
	slices.Sort(out)
	return slices.Compact(out)
}

// IsSystemTopic reports whether topic is one of the broker's built-in topics (including the
// cluster, broker and reply topics of this broker) or carries the rmq_sys_ prefix. Such
// topics cannot be created or deleted through the admin API.
func (m *TopicConfigManager) IsSystemTopic(topic string) bool {
	return slices.Contains(staticSystemTopics, topic) || m.system[topic] || strings.HasPrefix(topic, SystemTopicPrefix)
}

// DataVersion returns the table's current version.
func (m *TopicConfigManager) DataVersion() codec.DataVersion { return m.state.Load().version }

// Snapshot returns the table and its version as a wrapper (topics.json, the
// GET_ALL_TOPIC_CONFIG body, the register body). The map is a copy; its TopicConfig
// values share Attributes maps with the table, which are never modified in place.
func (m *TopicConfigManager) Snapshot() *codec.TopicConfigSerializeWrapper {
	st := m.state.Load()
	return &codec.TopicConfigSerializeWrapper{DataVersion: st.version, TopicConfigTable: maps.Clone(st.table)}
}

// TopicNames returns the names of all topics, sorted.
func (m *TopicConfigManager) TopicNames() []string {
	return slices.Sorted(maps.Keys(m.state.Load().table))
}

// nextVersion returns v advanced by one change (RocketMQ DataVersion.nextVersion).
func (m *TopicConfigManager) nextVersion(v codec.DataVersion) codec.DataVersion {
	v.Counter++
	v.Timestamp = m.clock().UnixMilli()
	return v
}

// autoCreateTemplate is TBW102 as RocketMQ's TopicConfigManager creates it: the template
// producers' auto-created topics inherit from.
func autoCreateTemplate(queues int32) codec.TopicConfig {
	tc := codec.NewTopicConfig(AutoCreateTopicKeyTopic)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	tc.Perm = PermInherit | PermRead | PermWrite
	return tc
}

// SetAutoCreateTopicEnable changes autoCreateTopicEnable while the broker runs
// (UPDATE_BROKER_CONFIG). Off stops auto-creation on the next send and leaves TBW102 in the
// table, as RocketMQ does; on adds TBW102 when the table lacks it (a start with the key off
// never made it), written in the background, and asks for a registration so that producers
// find its route. Safe for concurrent use; never blocks on disk.
func (m *TopicConfigManager) SetAutoCreateTopicEnable(on bool) {
	if m.autoCreate.Swap(on) == on || !on {
		return
	}
	m.mu.Lock()
	if _, ok := m.Get(AutoCreateTopicKeyTopic); ok {
		m.mu.Unlock()
		return
	}
	m.put(autoCreateTemplate(m.opts.DefaultTopicQueueNums))
	m.mu.Unlock()
	m.logger.Info("broker: topic created: autoCreateTopicEnable turned on", "topic", AutoCreateTopicKeyTopic)
	m.file.markDirty()
	m.changed()
}

// NextVersion advances the table's DataVersion without changing a topic. Name servers keep
// the topics of a registration whose DataVersion they already have, so the broker calls it
// when brokerPermission changes (it masks every registered perm), as RocketMQ's
// updateBrokerConfig does. The new version is written in the background.
func (m *TopicConfigManager) NextVersion() {
	m.mu.Lock()
	old := m.state.Load()
	m.state.Store(&topicState{table: old.table, version: m.nextVersion(old.version), groupTopics: old.groupTopics})
	m.mu.Unlock()
	m.file.markDirty()
}

// put installs tc in a new table version. Caller holds m.mu.
func (m *TopicConfigManager) put(tc codec.TopicConfig) {
	old := m.state.Load()
	table := maps.Clone(old.table)
	_, existed := table[tc.TopicName]
	table[tc.TopicName] = tc
	st := &topicState{table: table, version: m.nextVersion(old.version), groupTopics: old.groupTopics}
	if !existed && IsGroupTopic(tc.TopicName) {
		st.groupTopics++
	}
	m.state.Store(st)
}

// SetAutoCreateRetryTopicLimit sets autoCreateRetryTopicLimit (≤ 0: no limit). Safe for
// concurrent use.
func (m *TopicConfigManager) SetAutoCreateRetryTopicLimit(limit int) {
	m.groupTopicLimit.Store(int64(max(limit, 0)))
}

// SetAutoCreateObserver sets who is told about implicit creations and refusals of retry and
// dead-letter topics. Call before the table is shared.
func (m *TopicConfigManager) SetAutoCreateObserver(fn AutoCreateObserver) { m.observe = fn }

// GroupTopicCount returns the number of retry and dead-letter topics (what
// autoCreateRetryTopicLimit is compared with).
func (m *TopicConfigManager) GroupTopicCount() int { return m.state.Load().groupTopics }

// refuseGroupTopic returns the refusal of an implicit creation of topic, or nil when topic is
// not a group topic or the limit allows one more. Caller holds m.mu.
func (m *TopicConfigManager) refuseGroupTopic(topic string) *LimitError {
	limit := int(m.groupTopicLimit.Load())
	if limit <= 0 || !IsGroupTopic(topic) || m.state.Load().groupTopics < limit {
		return nil
	}
	return &LimitError{Kind: groupTopicKind(topic), Name: topic, Limit: limit, Key: AutoCreateRetryTopicLimitKey}
}

// refused logs and reports a refusal made by refuseGroupTopic.
func (m *TopicConfigManager) refused(e *LimitError) {
	m.logger.Warn("broker: retry topic not created: limit reached", "topic", e.Name, "limit", e.Limit, "key", e.Key)
	m.observed(e.Kind, false)
}

func (m *TopicConfigManager) observed(kind string, created bool) {
	if m.observe != nil {
		m.observe(kind, created)
	}
}

func (m *TopicConfigManager) changed() {
	if m.onChange != nil {
		m.onChange()
	}
}

// CreateInSendMessage auto-creates an unknown topic on send (PROTOCOL.md §10): the
// template defaultTopic must exist with PERM_INHERIT, queues = min(clientQueueNums,
// template writeQueueNums), perm = template perm without INHERIT. Persists and
// triggers a registration with the name servers. ok=false: not allowed (the caller
// answers TOPIC_NOT_EXIST).
//
// With autoCreateTopicEnable=false the TBW102 template never allows it, even when an old
// topics.json still holds TBW102 with INHERIT (RocketMQ strips the bit at that point).
// Runs inline on event loops: the file is written in the background.
func (m *TopicConfigManager) CreateInSendMessage(topic, defaultTopic string, clientQueueNums, topicSysFlag int32) (tc codec.TopicConfig, ok bool) {
	if tc, ok := m.Get(topic); ok {
		return tc, true
	}
	if ValidateTopicName(topic) != "" {
		return codec.TopicConfig{}, false
	}
	m.mu.Lock()
	if tc, ok := m.Get(topic); ok { // created meanwhile
		m.mu.Unlock()
		return tc, true
	}
	template, ok := m.Get(defaultTopic)
	inherit := ok && IsInherited(template.Perm) &&
		(defaultTopic != AutoCreateTopicKeyTopic || m.autoCreate.Load())
	if !inherit {
		m.mu.Unlock()
		m.logger.Debug("broker: topic not auto-created: template missing or not inheritable",
			"topic", topic, "defaultTopic", defaultTopic, "templateExists", ok)
		return codec.TopicConfig{}, false
	}
	if refusal := m.refuseGroupTopic(topic); refusal != nil {
		m.mu.Unlock()
		m.refused(refusal)
		return codec.TopicConfig{}, false
	}
	queues := max(min(clientQueueNums, template.WriteQueueNums), 0)
	tc = codec.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = queues, queues
	tc.Perm = template.Perm &^ PermInherit
	tc.TopicSysFlag = topicSysFlag
	tc.TopicFilterType = template.TopicFilterType
	m.put(tc)
	m.mu.Unlock()
	m.logger.Info("broker: topic auto-created on send", "topic", topic, "defaultTopic", defaultTopic,
		"queues", queues, "perm", tc.Perm)
	m.file.markDirty()
	m.changed()
	if IsGroupTopic(topic) {
		m.observed(groupTopicKind(topic), true)
	}
	return tc, true
}

// CreateInSendMessageBack creates (or returns) a retry / DLQ topic with the given
// queue count and perm. Like CreateInSendMessage it persists in the background and triggers
// a registration; it runs inline on event loops (heartbeats, send-back). A retry or
// dead-letter topic past autoCreateRetryTopicLimit is not created: the error is a *LimitError.
func (m *TopicConfigManager) CreateInSendMessageBack(topic string, queueNums, perm, topicSysFlag int32) (codec.TopicConfig, error) {
	if tc, ok := m.Get(topic); ok {
		return tc, nil
	}
	m.mu.Lock()
	if tc, ok := m.Get(topic); ok {
		m.mu.Unlock()
		return tc, nil
	}
	if refusal := m.refuseGroupTopic(topic); refusal != nil {
		m.mu.Unlock()
		m.refused(refusal)
		return codec.TopicConfig{}, refusal
	}
	tc := codec.NewTopicConfig(topic)
	tc.ReadQueueNums, tc.WriteQueueNums = queueNums, queueNums
	tc.Perm = perm
	tc.TopicSysFlag = topicSysFlag
	m.put(tc)
	m.mu.Unlock()
	m.logger.Info("broker: topic created", "topic", topic, "queues", queueNums, "perm", perm)
	m.file.markDirty()
	m.changed()
	if IsGroupTopic(topic) {
		m.observed(groupTopicKind(topic), true)
	}
	return tc, nil
}

// Update creates or replaces a topic (UPDATE_AND_CREATE_TOPIC) and writes topics.json
// before returning. It blocks on disk: call it from a pool, not an event loop.
func (m *TopicConfigManager) Update(tc codec.TopicConfig) error {
	if tc.Attributes == nil {
		tc.Attributes = map[string]string{}
	}
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = codec.TopicFilterSingleTag
	}
	m.mu.Lock()
	_, existed := m.Get(tc.TopicName)
	m.put(tc)
	m.mu.Unlock()
	m.logger.Info("broker: topic updated", "topic", tc.TopicName, "created", !existed,
		"readQueueNums", tc.ReadQueueNums, "writeQueueNums", tc.WriteQueueNums, "perm", tc.Perm)
	err := m.file.persist()
	m.changed()
	return err
}

// Delete removes a topic and writes topics.json before returning; false when the topic did
// not exist (nothing written). It blocks on disk: call it from a pool.
func (m *TopicConfigManager) Delete(topic string) (bool, error) {
	m.mu.Lock()
	old := m.state.Load()
	if _, ok := old.table[topic]; !ok {
		m.mu.Unlock()
		return false, nil
	}
	table := maps.Clone(old.table)
	delete(table, topic)
	st := &topicState{table: table, version: m.nextVersion(old.version), groupTopics: old.groupTopics}
	if IsGroupTopic(topic) {
		st.groupTopics--
	}
	m.state.Store(st)
	m.mu.Unlock()
	m.logger.Info("broker: topic deleted", "topic", topic)
	err := m.file.persist()
	m.changed()
	return true, err
}

// ReplaceFromMaster is a slave's topic sync (PROTOCOL.md §13.4): when the master's DataVersion
// differs from this table's, the whole table becomes the master's, with its DataVersion, and
// topics.json is written before returning; replaced says whether that happened. Unlike a
// local change it asks for no registration round, as in RocketMQ: name servers take topics
// from masters only, and the slave's next periodic round carries the new table anyway. It
// blocks on disk: call it off the event loops.
func (m *TopicConfigManager) ReplaceFromMaster(w *codec.TopicConfigSerializeWrapper) (replaced bool, err error) {
	table := make(map[string]codec.TopicConfig, len(w.TopicConfigTable))
	for name, tc := range w.TopicConfigTable {
		if tc.TopicName == "" {
			tc.TopicName = name
		}
		table[name] = tc
	}
	m.mu.Lock()
	if m.state.Load().version == w.DataVersion {
		m.mu.Unlock()
		return false, nil
	}
	m.state.Store(newTopicState(table, w.DataVersion))
	m.mu.Unlock()
	m.logger.Info("broker: topics replaced by the master's", "topics", len(table),
		"dataVersionCounter", w.DataVersion.Counter, "dataVersionTimestamp", w.DataVersion.Timestamp)
	return true, m.file.persist()
}
