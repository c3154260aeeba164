package faultfs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/vfs/faultfs"
)

func TestCrashModel(t *testing.T) {
	root := t.TempDir()
	ffs := faultfs.New(store.NewOSFS(nil))
	write := func(name, content string, sync bool) {
		f, err := ffs.OpenFile(filepath.Join(root, name), os.O_RDWR|os.O_CREATE, 0o644)
		require.NoError(t, err)
		_, err = f.WriteAt([]byte(content), 0)
		require.NoError(t, err)
		if sync {
			require.NoError(t, f.Sync())
		}
		require.NoError(t, f.Close())
	}
	write("synced", "durable", true)
	write("unsynced", "lost", false)
	write("ckpt.tmp", "new", true)
	require.NoError(t, ffs.Rename(filepath.Join(root, "ckpt.tmp"), filepath.Join(root, "ckpt")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "untouched"), []byte("as is"), 0o644))

	c1 := t.TempDir()
	require.NoError(t, ffs.CrashClone(root, c1, faultfs.CrashOptions{}))
	read := func(dir, name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "<absent>"
		}
		return string(b)
	}
	require.Equal(t, "durable", read(c1, "synced"))
	require.Equal(t, "<absent>", read(c1, "unsynced"))
	require.Equal(t, "new", read(c1, "ckpt.tmp"), "the rename is not durable before SyncDir")
	require.Equal(t, "<absent>", read(c1, "ckpt"))
	require.Equal(t, "as is", read(c1, "untouched"))

	require.NoError(t, ffs.SyncDir(root))
	c2 := t.TempDir()
	require.NoError(t, ffs.CrashClone(root, c2, faultfs.CrashOptions{}))
	require.Equal(t, "new", read(c2, "ckpt"))
	require.Equal(t, "<absent>", read(c2, "ckpt.tmp"))
	require.Equal(t, "", read(c2, "unsynced"), "SyncDir makes the name durable, not the data")

	remove := ffs.Inject(faultfs.Rule{Ops: faultfs.OpSync, PathContains: "synced", Err: syscall.EIO, Times: 1})
	f, err := ffs.OpenFile(filepath.Join(root, "synced"), os.O_RDWR, 0)
	require.NoError(t, err)
	require.ErrorIs(t, f.Sync(), syscall.EIO)
	require.NoError(t, f.Sync(), "Times: 1 fails once")
	require.NoError(t, f.Close())
	remove()
}
