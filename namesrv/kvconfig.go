package namesrv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"sync"

	"github.com/ringmq/ringmq/internal/fsutil"
)

// namespaceOrderTopicConfig is the KV namespace holding per-topic order configuration
// ("brokerA:4;brokerB:4"), read into routes when OrderMessageEnable is set and returned to
// registering brokers (Java NamesrvUtil.NAMESPACE_ORDER_TOPIC_CONFIG).
const namespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// kvConfig is the name server's namespace → key → value store (Java KVConfigManager),
// persisted to a JSON file in Java's format:
//
//	{"configTable":{"ORDER_TOPIC_CONFIG":{"TopicA":"broker-a:4"}}}
//
// Reads are served from memory; every change rewrites the whole file atomically (temp
// file, fsync, rename, fsync of the directory), so a crash leaves the old or the new file,
// never a torn one. With an empty path it lives in memory only.
//
// Safe for concurrent use. Changes are meant to come from one goroutine (the KV worker),
// which keeps file writes in the order of the changes.
type kvConfig struct {
	path string

	mu    sync.RWMutex
	table map[string]map[string]string
}

// kvConfigFile is the file's JSON shape (Java KVConfigSerializeWrapper).
type kvConfigFile struct {
	ConfigTable map[string]map[string]string `json:"configTable"`
}

// loadKVConfig reads path if it exists (a missing file is an empty table; an unreadable or
// malformed one is an error naming the file).
func loadKVConfig(path string) (*kvConfig, error) {
	kv := &kvConfig{path: path, table: make(map[string]map[string]string)}
	if path == "" {
		return kv, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return kv, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKVConfig, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return kv, nil
	}
	var file kvConfigFile
	if err := json.Unmarshal(data, &file); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKVConfig, path, err)
	}
	for ns, entries := range file.ConfigTable {
		if entries != nil {
			kv.table[ns] = entries
		}
	}
	return kv, nil
}

// get returns one value.
func (kv *kvConfig) get(namespace, key string) (string, bool) {
	kv.mu.RLock()
	defer kv.mu.RUnlock()
	v, ok := kv.table[namespace][key]
	return v, ok
}

// list returns a copy of one namespace (ok false when the namespace does not exist).
func (kv *kvConfig) list(namespace string) (map[string]string, bool) {
	kv.mu.RLock()
	defer kv.mu.RUnlock()
	entries, ok := kv.table[namespace]
	if !ok {
		return nil, false
	}
	return maps.Clone(entries), true
}

// put sets one value and persists the table. The change is kept in memory even when
// persisting fails (the next successful write carries it); the error says the file is
// behind.
func (kv *kvConfig) put(namespace, key, value string) error {
	kv.mu.Lock()
	entries := kv.table[namespace]
	if entries == nil {
		entries = make(map[string]string)
		kv.table[namespace] = entries
	}
	entries[key] = value
	kv.mu.Unlock()
	return kv.persist()
}

// delete removes one value (a missing one is not an error) and persists the table. Like
// Java, an emptied namespace stays (as {}).
func (kv *kvConfig) delete(namespace, key string) error {
	kv.mu.Lock()
	delete(kv.table[namespace], key)
	kv.mu.Unlock()
	return kv.persist()
}

// persist writes the whole table to the file (no-op without a path).
func (kv *kvConfig) persist() error {
	if kv.path == "" {
		return nil
	}
	kv.mu.RLock()
	data, err := json.Marshal(kvConfigFile{ConfigTable: kv.table})
	kv.mu.RUnlock()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrKVConfig, err)
	}
	if err := fsutil.WriteFileAtomic(kv.path, data, nil); err != nil {
		return fmt.Errorf("%w: %w", ErrKVConfig, err)
	}
	return nil
}
