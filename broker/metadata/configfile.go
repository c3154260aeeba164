package metadata

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ringmq/ringmq/internal/fsutil"
)

// Config files under <storePathRootDir>/config (PROTOCOL.md §7.6).
//
// Writing (configFile.persist), so that a crash at any point leaves a readable file:
//
//  1. write <file>.tmp, fsync it, close it (Close errors count: they can report a failed
//     write-back);
//  2. keep the current <file> as <file>.bak: hard-link it to <file>.bak.tmp and rename
//     that over <file>.bak (the main file never disappears), or, where links do not
//     work, rename <file> to <file>.bak (a crash before step 3 then leaves only the .bak,
//     which load falls back to);
//  3. rename <file>.tmp over <file> and fsync the directory so both renames are durable.
//
// Reading (LoadConfigFile): <file>; when it is missing, empty or does not decode, <file>.bak
// (RocketMQ's ConfigManager.load/loadBak). Neither present is a fresh start; a damaged file
// with no usable .bak is an error: starting with an empty table would silently forget
// topics, groups or offsets.

// Config file names (RocketMQ's BrokerPathConfigHelper).
const (
	TopicsFileName            = "topics.json"
	SubscriptionGroupFileName = "subscriptionGroup.json"
	ConsumerOffsetFileName    = "consumerOffset.json"
	DelayOffsetFileName       = "delayOffset.json"
)

// ErrConfigFile wraps failures to read or write a config file; the message names the file.
var ErrConfigFile = errors.New("broker: config file")

// ConfigDir is <storePathRootDir>/config.
func ConfigDir(storePathRootDir string) string { return filepath.Join(storePathRootDir, "config") }

// configFile is one JSON file a manager persists. persist may be called from any goroutine;
// writes of one file are serialized. markDirty/takeDirty let event-loop code request a write
// that a background goroutine performs (see controlFlusher in control.go).
type configFile struct {
	path   string
	encode func() ([]byte, error) // snapshot of the manager, pretty-printed
	logger *slog.Logger

	mu    sync.Mutex  // serializes writers of this file
	dirty atomic.Bool // a change is waiting for the flusher
	kick  chan struct{}
	// observe, if set, is told the outcome of every write (metrics). Set before use.
	observe func(err error)
}

func newConfigFile(path string, encode func() ([]byte, error), logger *slog.Logger) *configFile {
	return &configFile{path: path, encode: encode, logger: logger, kick: make(chan struct{}, 1)}
}

// markDirty records that the manager changed and wakes the flusher. Never blocks.
func (f *configFile) markDirty() {
	f.dirty.Store(true)
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// persistIfDirty writes the file when a change is pending.
func (f *configFile) persistIfDirty() error {
	if !f.dirty.Load() {
		return nil
	}
	return f.persist()
}

// persist encodes the manager and writes the file now. A failed write leaves the change
// pending (dirty) so that the next flush retries it.
func (f *configFile) persist() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Clear before encoding: a change racing with this write marks it dirty again and
	// is written by the next call.
	f.dirty.Store(false)
	data, err := f.encode()
	if err == nil {
		err = WriteConfigFile(f.path, data)
	}
	if f.observe != nil {
		f.observe(err)
	}
	if err != nil {
		f.dirty.Store(true)
		return err
	}
	return nil
}

// WriteConfigFile replaces path with data atomically, keeping the previous version as
// path.bak (see the file comment).
func WriteConfigFile(path string, data []byte) error {
	if err := fsutil.WriteFileAtomic(path, data, func() error {
		if err := keepBackup(path); err != nil {
			return fmt.Errorf("keep .bak: %w", err)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrConfigFile, path, err)
	}
	return nil
}

// keepBackup makes the current path (if any) the new path.bak.
func keepBackup(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	bak := path + ".bak"
	bakTmp := bak + ".tmp"
	_ = os.Remove(bakTmp)
	if err := os.Link(path, bakTmp); err == nil {
		return os.Rename(bakTmp, bak)
	}
	// No hard links here (some file systems): move the file; load falls back to .bak
	// if we crash before the new file is renamed into place.
	return os.Rename(path, bak)
}

// LoadConfigFile reads path (or its .bak) and hands the bytes to decode. It returns which
// file was used ("" for a fresh start: neither file exists, or they are empty, as RocketMQ
// treats them). A file that exists but cannot be read or decoded, with no usable .bak, is
// an error. decode must leave its target untouched when it fails, since the .bak is tried
// next.
func LoadConfigFile(path string, decode func([]byte) error, logger *slog.Logger) (string, error) {
	var damaged, empty []error
	for _, name := range []string{path, path + ".bak"} {
		data, err := os.ReadFile(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			damaged = append(damaged, fmt.Errorf("%s: %w", name, err))
			continue
		case len(bytes.TrimSpace(data)) == 0:
			empty = append(empty, fmt.Errorf("%s: empty", name))
			continue
		}
		if err := decode(data); err != nil {
			damaged = append(damaged, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if name != path {
			logger.Warn("broker: config file unusable, loaded its backup", "file", path, "backup", name,
				"problems", errors.Join(append(damaged, empty...)...))
		}
		return name, nil
	}
	if len(damaged) > 0 {
		return "", fmt.Errorf("%w: %w", ErrConfigFile, errors.Join(append(damaged, empty...)...))
	}
	if len(empty) > 0 {
		logger.Warn("broker: config file empty, starting with defaults", "file", path)
	}
	return "", nil
}
