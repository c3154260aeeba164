package metadata

import (
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/store"
)

// offsetKey identifies one consumer group's progress in one topic. The file keys it as
// "topic@group"; in memory a struct key avoids building that string on every commit.
type offsetKey struct{ topic, group string }

// ConsumerOffsetManager holds consumerOffset.json: for every (topic, group) the next queue
// offset the group will consume, per queue. Commits only change memory; the broker writes
// the file every flushConsumerOffsetInterval and at shutdown, as RocketMQ does (a crash
// loses at most one interval, and clients re-commit every 5 s anyway).
// Safe for concurrent use; Commit and Query do not block on I/O.
type ConsumerOffsetManager struct {
	logger  *slog.Logger
	file    *configFile
	refused func(reason string) // SetRefusalObserver; nil: nobody is told

	mu    sync.RWMutex
	table map[offsetKey]map[int32]int64
}

func NewConsumerOffsetManager(storePathRootDir string, logger *slog.Logger) *ConsumerOffsetManager {
	m := &ConsumerOffsetManager{logger: logger, table: map[offsetKey]map[int32]int64{}}
	m.file = newConfigFile(filepath.Join(ConfigDir(storePathRootDir), ConsumerOffsetFileName), m.encodeFile, logger)
	return m
}

// Load reads consumerOffset.json (or its .bak). Keys without '@' are skipped.
func (m *ConsumerOffsetManager) Load() error {
	_, err := LoadConfigFile(m.file.path, func(data []byte) error {
		w, err := codec.DecodeConsumerOffsetSerializeWrapper(data)
		if err != nil {
			return err
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		for key, queues := range w.OffsetTable {
			topic, group, ok := strings.Cut(key, "@")
			if !ok {
				m.logger.Warn("broker: consumerOffset.json: key without '@' skipped", "key", key)
				continue
			}
			m.table[offsetKey{topic, group}] = maps.Clone(queues)
		}
		return nil
	}, m.logger)
	return err
}

func (m *ConsumerOffsetManager) encodeFile() ([]byte, error) { return m.Snapshot().Encode(true), nil }

// Persist writes consumerOffset.json now (bare numeric queue keys, as Java writes them).
func (m *ConsumerOffsetManager) Persist() error { return m.file.persist() }

// Commit stores a group's offset for one queue. It does not allocate once the
// group/topic/queue entry exists (it runs on every pull with COMMIT_OFFSET).
func (m *ConsumerOffsetManager) Commit(group, topic string, queueID int32, offset int64) {
	k := offsetKey{topic, group}
	m.mu.Lock()
	queues, ok := m.table[k]
	if !ok {
		queues = map[int32]int64{}
		m.table[k] = queues
	}
	queues[queueID] = offset
	m.mu.Unlock()
	m.file.dirty.Store(true)
}

// Reasons a client's commit is refused (SetRefusalObserver's reason; metric label values).
const (
	RefusedOffsetUnknownQueue = "offset_unknown_queue"
	RefusedOffsetNegative     = "offset_negative"
	RefusedOffsetPastMax      = "offset_past_max"
)

// OffsetError is a client's commit refused: the queue does not exist, or the offset is not
// within [0, the queue's max offset].
type OffsetError struct {
	Reason    string // RefusedOffset*
	Topic     string
	QueueID   int32
	Offset    int64
	QueueNums int32 // RefusedOffsetUnknownQueue: the topic's queue count
	MaxOffset int64 // otherwise: the queue's max offset
}

func (e *OffsetError) Error() string {
	if e.Reason == RefusedOffsetUnknownQueue {
		return fmt.Sprintf("queueId[%d] is illegal, topic:[%s] has %d queues", e.QueueID, e.Topic, e.QueueNums)
	}
	return fmt.Sprintf("offset is illegal, key:%s@%d, commit:%d, store:0~%d", e.Topic, e.QueueID, e.Offset, e.MaxOffset)
}

// SetRefusalObserver sets who is told about every commit CheckQueue or CommitChecked refuses,
// with its reason. Call before the table is shared; fn must not block.
func (m *ConsumerOffsetManager) SetRefusalObserver(fn func(reason string)) { m.refused = fn }

func (m *ConsumerOffsetManager) refuse(e *OffsetError) error {
	if m.refused != nil {
		m.refused(e.Reason)
	}
	return e
}

// CheckQueue returns nil when tc has the queue queueID (below its read and write queue
// counts, as a send checks it), else the refusal of a commit to it.
func (m *ConsumerOffsetManager) CheckQueue(tc codec.TopicConfig, queueID int32) error {
	if n := max(tc.ReadQueueNums, tc.WriteQueueNums); queueID < 0 || queueID >= n {
		return m.refuse(&OffsetError{Reason: RefusedOffsetUnknownQueue, Topic: tc.TopicName, QueueID: queueID,
			Offset: -1, QueueNums: n})
	}
	return nil
}

// CommitChecked is Commit of a client's offset for a queue that exists (CheckQueue), whose
// max offset is maxOffset: an offset below 0 or past maxOffset is refused and not stored.
// RocketMQ 4.9 stores any value; a negative offset then reads as "none stored" and one past
// the end as a lag below zero. Like Commit it does not allocate when it stores.
func (m *ConsumerOffsetManager) CommitChecked(group, topic string, queueID int32, offset, maxOffset int64) error {
	switch {
	case offset < 0:
		return m.refuse(&OffsetError{Reason: RefusedOffsetNegative, Topic: topic, QueueID: queueID, Offset: offset,
			MaxOffset: maxOffset})
	case offset > maxOffset:
		return m.refuse(&OffsetError{Reason: RefusedOffsetPastMax, Topic: topic, QueueID: queueID, Offset: offset,
			MaxOffset: maxOffset})
	}
	m.Commit(group, topic, queueID, offset)
	return nil
}

// Query returns the stored offset, or -1 when the group has none for that queue.
func (m *ConsumerOffsetManager) Query(group, topic string, queueID int32) int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if off, ok := m.table[offsetKey{topic, group}][queueID]; ok {
		return off
	}
	return -1
}

// QueryAll returns a copy of a group's offsets in a topic (nil when none).
func (m *ConsumerOffsetManager) QueryAll(group, topic string) map[int32]int64 {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return maps.Clone(m.table[offsetKey{topic, group}])
}

// GroupsByTopic returns the groups with offsets in topic, sorted.
func (m *ConsumerOffsetManager) GroupsByTopic(topic string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.table {
		if k.topic == topic {
			out = append(out, k.group)
		}
	}
	slices.Sort(out)
	return out
}

// TopicsByGroup returns the topics a group has offsets in, sorted.
func (m *ConsumerOffsetManager) TopicsByGroup(group string) []string {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.table {
		if k.group == group {
			out = append(out, k.topic)
		}
	}
	slices.Sort(out)
	return out
}

// CloneOffset replaces destGroup's offsets in topic with a copy of srcGroup's, as RocketMQ's
// cloneOffset does; it reports false (and changes nothing) when srcGroup has none there.
func (m *ConsumerOffsetManager) CloneOffset(srcGroup, destGroup, topic string) bool {
	m.mu.Lock()
	src, ok := m.table[offsetKey{topic, srcGroup}]
	if ok {
		m.table[offsetKey{topic, destGroup}] = maps.Clone(src)
	}
	m.mu.Unlock()
	if ok {
		m.file.dirty.Store(true)
	}
	return ok
}

// RemoveTopic forgets every group's offsets in topic (the topic was deleted).
func (m *ConsumerOffsetManager) RemoveTopic(topic string) int {
	return m.removeWhere(func(k offsetKey) bool { return k.topic == topic })
}

// RemoveGroup forgets a group's offsets in every topic (the group was deleted).
func (m *ConsumerOffsetManager) RemoveGroup(group string) int {
	return m.removeWhere(func(k offsetKey) bool { return k.group == group })
}

func (m *ConsumerOffsetManager) removeWhere(match func(offsetKey) bool) int {
	m.mu.Lock()
	n := 0
	for k := range m.table {
		if match(k) {
			delete(m.table, k)
			n++
		}
	}
	m.mu.Unlock()
	if n > 0 {
		m.file.dirty.Store(true)
	}
	return n
}

// All lists every committed offset (store.ConsumerOffsetsFunc: forced deletion reports with it).
func (m *ConsumerOffsetManager) All() []store.ConsumerOffset {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []store.ConsumerOffset
	for k, queues := range m.table {
		for q, off := range queues {
			out = append(out, store.ConsumerOffset{Group: k.group, Topic: k.topic, QueueID: q, Offset: off})
		}
	}
	return out
}

// Snapshot returns the table as consumerOffset.json / the GET_ALL_CONSUMER_OFFSET body
// (4.x form: no dataVersion). The maps are copies.
func (m *ConsumerOffsetManager) Snapshot() *codec.ConsumerOffsetSerializeWrapper {
	m.mu.RLock()
	defer m.mu.RUnlock()
	table := make(map[string]map[int32]int64, len(m.table))
	for k, queues := range m.table {
		table[k.topic+"@"+k.group] = maps.Clone(queues)
	}
	return &codec.ConsumerOffsetSerializeWrapper{OffsetTable: table}
}

// MergeFromMaster is a slave's consumer-offset sync (PROTOCOL.md §13.4): every "topic@group"
// entry of the master's table replaces the local one whole (RocketMQ's putAll), entries the
// master lacks stay, and consumerOffset.json is written before returning. Keys without '@'
// are skipped. It blocks on disk.
func (m *ConsumerOffsetManager) MergeFromMaster(w *codec.ConsumerOffsetSerializeWrapper) error {
	entries := make(map[offsetKey]map[int32]int64, len(w.OffsetTable))
	for key, queues := range w.OffsetTable {
		topic, group, ok := strings.Cut(key, "@")
		if !ok {
			m.logger.Warn("broker: master's consumer offsets: key without '@' skipped", "key", key)
			continue
		}
		q := make(map[int32]int64, len(queues)) // never nil: Commit writes into it
		maps.Copy(q, queues)
		entries[offsetKey{topic, group}] = q
	}
	m.mu.Lock()
	maps.Copy(m.table, entries)
	m.mu.Unlock()
	return m.file.persist()
}
