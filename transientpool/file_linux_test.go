//go:build linux

package transientpool

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
)

// shmDir is a directory of the test on /dev/shm (tmpfs), removed at its end.
func shmDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/dev/shm", "ringmq-pool-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	return dir
}

func fileConfig(dir, identity string) Config {
	c := smallConfig(3)
	c.Pinned = false // RLIMIT_MEMLOCK is small for unprivileged test runs
	c.Dir, c.Identity = dir, identity
	return c
}

// TestFileBackedBuffersOutliveThePool: what a borrower claimed and published in a file-backed buffer is
// there for the next process (OpenLeftovers, read without mapping), with its owner and published end;
// a new pool on the same directory keeps it (it maps the files without clearing them); other identities
// see nothing; Release frees the buffers and RemoveDir removes everything.
func TestFileBackedBuffersOutliveThePool(t *testing.T) {
	parent := shmDir(t)
	cfg := fileConfig(parent, "/data/a/commitlog")
	p, err := New(cfg, nil)
	require.NoError(t, err)
	require.True(t, p.FileBacked())
	require.Equal(t, DirFor(parent, cfg.Identity), p.Dir())
	require.Len(t, p.FixedBuffers(), 3)
	require.Len(t, p.FixedBuffers()[0], cfg.BufferBytes)

	b0, _ := p.Borrow()
	b1, _ := p.Borrow()
	b0.Claim(1 << 30)
	copy(b0.Bytes(), "stale bytes of an earlier owner")
	b0.Claim(2 << 30) // a buffer reused: nothing of the new owner published yet
	copy(b0.Bytes(), "records of file 2G")
	b0.PublishedMark().Store(18)
	b1.Claim(3 << 30) // claimed, nothing published: not a leftover
	p.Return(b0)
	p.Return(b1)
	require.NoError(t, p.Close()) // as a crash leaves them: the files stay

	check := func(what string) {
		t.Helper()
		ls, err := OpenLeftovers(parent, cfg.Identity, int64(cfg.BufferBytes))
		require.NoError(t, err, what)
		require.Len(t, ls.Buffers, 1, what)
		l := ls.Buffers[0]
		require.Equal(t, 0, l.Index, what)
		require.Equal(t, int64(2<<30), l.Owner, what)
		require.Equal(t, int64(18), l.Published, what)
		got := make([]byte, 18)
		_, err = l.ReadAt(got, 0)
		require.NoError(t, err)
		require.Equal(t, "records of file 2G", string(got), what)
		require.NoError(t, ls.Close())
	}
	check("after Close")
	p, err = New(cfg, nil) // the next start maps the files again before recovery reads them
	require.NoError(t, err)
	check("with a new pool on the files")

	for what, ls := range map[string]func() (*Leftovers, error){
		"another identity":   func() (*Leftovers, error) { return OpenLeftovers(parent, "/data/b/commitlog", int64(cfg.BufferBytes)) },
		"another file size":  func() (*Leftovers, error) { return OpenLeftovers(parent, cfg.Identity, 2*int64(cfg.BufferBytes)) },
		"no such directory":  func() (*Leftovers, error) { return OpenLeftovers(filepath.Join(parent, "none"), cfg.Identity, 1) },
		"another parent dir": func() (*Leftovers, error) { return OpenLeftovers(t.TempDir(), cfg.Identity, int64(cfg.BufferBytes)) },
	} {
		got, err := ls()
		require.NoError(t, err, what)
		if got != nil {
			require.Empty(t, got.Buffers, what)
		}
	}

	ls, err := OpenLeftovers(parent, cfg.Identity, int64(cfg.BufferBytes))
	require.NoError(t, err)
	require.NoError(t, ls.Release()) // while the pool maps the files: the header is shared
	require.NoError(t, ls.Close())
	require.Equal(t, int64(-1), p.buffers[0].hdr.owner().Load(), "the pool's mapping sees the release")
	ls, err = OpenLeftovers(parent, cfg.Identity, int64(cfg.BufferBytes))
	require.NoError(t, err)
	require.Empty(t, ls.Buffers, "released")
	require.NoError(t, p.Close())
	require.NoError(t, RemoveDir(p.Dir()))
	_, err = os.Stat(DirFor(parent, cfg.Identity))
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestFileBackedDirInUse: a second pool on a directory in use fails (a second broker on the same
// CommitLog directory), changing nothing of the first's files.
func TestFileBackedDirInUse(t *testing.T) {
	parent := shmDir(t)
	cfg := fileConfig(parent, "/data/a/commitlog")
	p, err := New(cfg, nil)
	require.NoError(t, err)
	b, _ := p.Borrow()
	b.Claim(0)
	b.PublishedMark().Store(100)
	_, err = New(cfg, nil)
	require.ErrorIs(t, err, errDirInUse)
	require.Contains(t, err.Error(), "another broker")
	require.Equal(t, int64(100), b.PublishedMark().Load())
	other, err := New(fileConfig(parent, "/data/b/commitlog"), nil) // another store: its own directory
	require.NoError(t, err)
	require.True(t, other.FileBacked())
	require.NotEqual(t, p.Dir(), other.Dir())
	p.Return(b)
	require.NoError(t, p.Close())
	require.NoError(t, other.Close())
}

// TestFileBackedFallback: where the directory cannot hold crash-safe buffers the pool runs on anonymous
// memory and says once, at WARN, what a process crash then costs and how to avoid it.
func TestFileBackedFallback(t *testing.T) {
	for name, tc := range map[string]struct {
		dir    func(t *testing.T) string
		fsStat func(string) (bool, uint64, error)
		reason string
	}{
		"not tmpfs": {dir: func(t *testing.T) string { return t.TempDir() }, reason: "not a tmpfs"},
		"missing":   {dir: func(t *testing.T) string { return filepath.Join(t.TempDir(), "no", "such") }, reason: "no such file"},
		"too small": {dir: shmDir, fsStat: func(string) (bool, uint64, error) { return true, 4096, nil }, reason: "bytes free"},
		// /dev/shm is everyone's: a directory someone else could write is not trusted with messages.
		"writable by others": {dir: func(t *testing.T) string {
			parent := shmDir(t)
			dir := DirFor(parent, "/data/a/commitlog")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, 0o777))
			_, err := OpenLeftovers(parent, "/data/a/commitlog", 4*int64(os.Getpagesize()))
			require.ErrorIs(t, err, ErrNotOwned, "nor are its files read back")
			return parent
		}, reason: "others may write"},
	} {
		t.Run(name, func(t *testing.T) {
			h := &logtest.Recorder{}
			mem := systemMemOps()
			if tc.fsStat != nil {
				mem.fsStat = tc.fsStat
			}
			cfg := fileConfig(tc.dir(t), "/data/a/commitlog")
			p, err := newPool(cfg, slog.New(h), mem)
			require.NoError(t, err)
			require.False(t, p.FileBacked())
			require.Empty(t, p.Dir())
			warns := h.AtLevel(slog.LevelWarn)
			require.Len(t, warns, 1)
			require.Contains(t, warns[0].Message, "lost if the process crashes")
			require.Contains(t, warns[0].Message, "transientStorePoolDir")
			require.Contains(t, logtest.Attr(warns[0], "reason"), tc.reason)
			b, ok := p.Borrow()
			require.True(t, ok)
			b.Claim(0) // anonymous buffers have no header: nothing to record
			require.Nil(t, b.PublishedMark())
			p.Return(b)
			require.NoError(t, p.Close())
		})
	}
}
