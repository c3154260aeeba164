//go:build linux

package flush

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ringmq/ringmq/transientpool"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"golang.org/x/sys/unix"
)

const parityFileBytes = 64 << 10

// openReal opens a backend of kind on this kernel with a small pool registered. For io_uring it
// skips the test when the kernel refuses (Open's fallback would otherwise test fdatasync twice).
func openReal(t *testing.T, kind Kind) (Backend, *transientpool.Pool) {
	return openRealPool(t, kind, "")
}

// openRealPool is openReal with the pool's buffers as files under poolDir (transientpool.Config.Dir;
// "" for anonymous memory).
func openRealPool(t *testing.T, kind Kind, poolDir string) (Backend, *transientpool.Pool) {
	t.Helper()
	pool, err := transientpool.New(transientpool.Config{Buffers: 2, BufferBytes: parityFileBytes, Pinned: false,
		Dir: poolDir, Identity: t.Name()}, nil)
	require.NoError(t, err)
	if poolDir != "" {
		require.True(t, pool.FileBacked(), "the pool's buffers are files on tmpfs")
	}
	h := &logtest.Recorder{}
	b, err := Open(kind, pool, slog.New(h))
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = b.Close() // a test may have closed it already
		require.NoError(t, pool.Close())
	})
	if b.Kind() != kind {
		t.Skipf("%s unavailable here: %v", kind, h.All())
	}
	require.Empty(t, h.AtLevel(slog.LevelWarn), "no fallback and no registration failure on this kernel")
	return b, pool
}

// parityScript drives a backend through every way the store uses one, and returns the file it produced.
// The same bytes must come out of every backend.
func parityScript(t *testing.T, b Backend, pool *transientpool.Pool) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "00000000000000000000")
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer file.Close()
	require.NoError(t, file.Truncate(parityFileBytes))
	fd := int(file.Fd())
	mapped, err := unix.Mmap(fd, 0, parityFileBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { require.NoError(t, unix.Munmap(mapped)) }()

	// 1. A heap buffer, written and synced in one call (SYNC_FLUSH without the pool).
	require.NoError(t, b.WriteSync(fd, pattern(1000, 1), -1, 0, true))

	// 2. Transient pool: records appended into the pinned buffer, committed without sync (the commit
	//    service), then a durable write of the next range (group commit with the pool).
	buf, ok := pool.Borrow()
	require.True(t, ok)
	defer pool.Return(buf)
	copy(buf.Bytes()[4096:], pattern(3000, 2))
	require.NoError(t, b.WriteSync(fd, buf.Bytes()[4096:5596], buf.Index(), 4096, false))
	require.NoError(t, b.WriteSync(fd, buf.Bytes()[5596:7096], buf.Index(), 5596, true))

	// 3. Mapped file: appends straight into the mapping, then SyncMapped of the dirty range.
	copy(mapped[8000:], pattern(1000, 3))
	require.NoError(t, b.SyncMapped(fd, mapped, 8000, 1000))
	copy(mapped[20000:], pattern(5000, 4))
	require.NoError(t, b.SyncMapped(fd, mapped, 20000, 5000))

	// 4. A write spanning many pages, synced separately; then a whole-file sync with nothing left to do.
	require.NoError(t, b.WriteSync(fd, pattern(30000, 5), -1, 30000, false))
	require.NoError(t, b.SyncMapped(fd, mapped, 30000, 30000))
	require.NoError(t, b.SyncMapped(fd, mapped, 0, 0))
	require.NoError(t, b.WriteSync(fd, nil, -1, 0, true))

	got, err := os.ReadFile(path)
	require.NoError(t, err)
	return got
}

func expectedParityFile() []byte {
	want := make([]byte, parityFileBytes)
	copy(want[0:], pattern(1000, 1))
	copy(want[4096:], pattern(3000, 2))
	copy(want[8000:], pattern(1000, 3))
	copy(want[20000:], pattern(5000, 4))
	copy(want[30000:], pattern(30000, 5))
	return want
}

func TestBackendParity(t *testing.T) {
	want := expectedParityFile()
	files := map[Kind][]byte{}
	for _, kind := range []Kind{KindFdatasync, KindMsync, KindIOUring} {
		t.Run(kind.String(), func(t *testing.T) {
			b, pool := openReal(t, kind)
			got := parityScript(t, b, pool)
			require.True(t, bytes.Equal(want, got), "%s produced different bytes", kind)
			files[kind] = got
			require.NoError(t, b.Close())
			require.ErrorIs(t, b.Close(), ErrClosed)
		})
	}
	require.NotEmpty(t, files[KindFdatasync])
	for kind, got := range files {
		require.Equal(t, files[KindFdatasync], got, "%s differs from fdatasync", kind)
	}
}

// TestNoSpaceMapping writes to /dev/full, which answers every write with ENOSPC.
// TestBackendParityFileBackedPool: the pool's buffers as shared mappings of files on tmpfs
// (transientStorePoolDir) register with io_uring as fixed buffers like anonymous ones, and every
// backend writes the same bytes from them.
func TestBackendParityFileBackedPool(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "ringmq-flush-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(dir)) })
	want := expectedParityFile()
	for _, kind := range []Kind{KindFdatasync, KindIOUring} {
		t.Run(kind.String(), func(t *testing.T) {
			b, pool := openRealPool(t, kind, dir)
			require.True(t, bytes.Equal(want, parityScript(t, b, pool)), "%s produced different bytes", kind)
			require.NoError(t, b.Close())
		})
	}
}

func TestNoSpaceMapping(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	for _, kind := range []Kind{KindFdatasync, KindMsync, KindIOUring} {
		t.Run(kind.String(), func(t *testing.T) {
			b, _ := openReal(t, kind)
			err := b.WriteSync(int(full.Fd()), []byte("no room"), -1, 0, false)
			require.ErrorIs(t, err, ErrNoSpace)
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.NotErrorIs(t, err, ErrIO)
			require.Contains(t, err.Error(), "/dev/full", "the error names the file")
		})
	}
}

// TestIOURingRealKernel runs the io_uring path against this kernel: fixed-buffer write linked to an
// fdatasync, plain write, and a buffer larger than one page crossing the end of a pool slice.
func TestIOURingRealKernel(t *testing.T) {
	b, pool := openReal(t, KindIOUring)
	file := tempFile(t, parityFileBytes)
	fd := int(file.Fd())
	buf, ok := pool.Borrow()
	require.True(t, ok)
	defer pool.Return(buf)
	data := pattern(parityFileBytes, 9)
	copy(buf.Bytes(), data)

	require.NoError(t, b.WriteSync(fd, buf.Bytes(), buf.Index(), 0, true))
	require.NoError(t, b.WriteSync(fd, []byte("heap"), -1, 10, true))
	copy(data[10:], "heap")
	got := make([]byte, parityFileBytes)
	_, err := file.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, data, got)

	// A slice from the other registered buffer under the wrong index is refused, not written.
	other, ok := pool.Borrow()
	require.True(t, ok)
	defer pool.Return(other)
	require.ErrorIs(t, b.WriteSync(fd, other.Bytes()[:10], buf.Index(), 0, true), ErrInvalidArgument)
}

func TestSystemRingProbe(t *testing.T) {
	r, err := newSystemRing(ringEntries)
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	var res [1]int32
	require.NoError(t, r.run([]ringOp{{kind: opNop}}, res[:]))
	require.Zero(t, res[0])
	require.NoError(t, r.close())
}

func TestMsyncArguments(t *testing.T) {
	b := newMsyncBackend()
	file := tempFile(t, 8192)
	fd := int(file.Fd())
	mapped, err := unix.Mmap(fd, 0, 8192, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { require.NoError(t, unix.Munmap(mapped)) }()

	require.ErrorIs(t, b.SyncMapped(fd, mapped, 8000, 1000), ErrInvalidArgument)
	require.ErrorIs(t, b.SyncMapped(fd, mapped, -1, 10), ErrInvalidArgument)
	err = b.SyncMapped(fd, mapped[1:], 0, 10)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "page-aligned")
	require.NoError(t, b.SyncMapped(fd, mapped, 4097, 10), "an unaligned range start is rounded down to its page")
	require.NoError(t, b.SyncMapped(fd, nil, 0, 0), "no mapping: fdatasync")
	require.ErrorIs(t, b.WriteSync(fd, nil, -1, -5, false), ErrInvalidArgument)
	require.NoError(t, b.Close())
	require.ErrorIs(t, b.SyncMapped(fd, mapped, 0, 10), ErrClosed)

	f := newFdatasyncBackend()
	require.ErrorIs(t, f.SyncMapped(fd, mapped, 0, 9000), ErrInvalidArgument)
	require.NoError(t, f.Close())
	require.ErrorIs(t, f.WriteSync(fd, nil, -1, 0, true), ErrClosed)
}

func TestFdatasyncBadFileIsUnexpected(t *testing.T) {
	b := newFdatasyncBackend()
	err := b.WriteSync(-1, []byte("x"), -1, 0, false)
	require.ErrorIs(t, err, ErrUnexpected)
	require.ErrorIs(t, err, syscall.EBADF)
	err = b.SyncMapped(-1, nil, 0, 0)
	require.ErrorIs(t, err, ErrUnexpected)
	require.ErrorIs(t, err, syscall.EBADF)
}

// TestIOURingReusedSlotsStartClean mixes one- and two-entry submissions (three entries per round) so that every submission queue
// slot is used by a write after it held an fsync. giouring's prepare helpers leave the previous entry's
// op flags in place; an fsync's IORING_FSYNC_DATASYNC read as a write's RWF_HIPRI fails it with EINVAL
// unless each entry is cleared first.
func TestIOURingReusedSlotsStartClean(t *testing.T) {
	b, _ := openReal(t, KindIOUring)
	file := tempFile(t, parityFileBytes)
	fd := int(file.Fd())
	for i := 0; i < 4*ringEntries; i++ {
		require.NoError(t, b.SyncMapped(fd, nil, 0, 0), "round %d", i)
		require.NoError(t, b.WriteSync(fd, pattern(100, byte(i)), -1, int64(i*100), true), "round %d", i)
	}
	for i := 0; i < 4*ringEntries; i++ {
		require.NoError(t, b.WriteSync(fd, pattern(100, byte(i)), -1, int64(i*100), false), "round %d", i)
	}
}
