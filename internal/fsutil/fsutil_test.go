package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteFileAtomicReplacesAndCreatesDir(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config", "topics.json")
	require.NoError(t, WriteFileAtomic(path, []byte("v1"), nil))
	require.NoError(t, WriteFileAtomic(path, []byte("v2"), nil))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "v2", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temp file left behind")
}

func TestWriteFileAtomicBeforeHookFailureKeepsOldContent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.json")
	require.NoError(t, WriteFileAtomic(path, []byte("old"), nil))
	var sawNew bool
	boom := errors.New("boom")
	err := WriteFileAtomic(path, []byte("new"), func() error {
		// The hook runs before the rename: the target still holds the old content.
		b, _ := os.ReadFile(path)
		sawNew = string(b) == "new"
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.False(t, sawNew)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old", string(got))
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temp file is removed on failure")
}

func TestWriteFileAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o644))
	require.Error(t, WriteFileAtomic(filepath.Join(blocker, "x.json"), []byte("x"), nil), "parent is a file")
	require.Error(t, SyncDir(filepath.Join(dir, "missing")))
}

func TestWriteFileAtomicModeKeepsPermissions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broker.conf")
	require.NoError(t, WriteFileAtomicMode(path, []byte("a=1\n"), 0o600, nil))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "a=1\n", string(got))
}
