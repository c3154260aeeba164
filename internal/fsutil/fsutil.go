// Package fsutil holds the one way ringmq replaces small metadata files (config JSON,
// KV config, run records) so that a crash leaves either the old or the new content
// (STYLE.md §3): write a temp file in the same directory, fsync it, rename it over the
// target, fsync the directory. Errors from Sync and Close are never dropped.
package fsutil

import (
	"os"
	"path/filepath"
)

// WriteFileAtomic replaces path with data as described in the package doc, creating the
// directory if needed. before, if not nil, runs after the new content is durable in the
// temp file and before the rename (the broker keeps the previous version as .bak there).
// Safe for concurrent use on different paths.
func WriteFileAtomic(path string, data []byte, before func() error) error {
	return WriteFileAtomicMode(path, data, 0o644, before)
}

// WriteFileAtomicMode is WriteFileAtomic with the new file's permission bits, for a file an
// operator owns (broker.conf keeps its mode when the broker rewrites it).
func WriteFileAtomicMode(path string, data []byte, perm os.FileMode, before func() error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name()) // best effort: the write already failed
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return err
	}
	if before != nil {
		if err := before(); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that renames and creations in it survive a crash.
func SyncDir(dir string) (err error) {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := d.Close(); err == nil {
			err = cerr
		}
	}()
	return d.Sync()
}
