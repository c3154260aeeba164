//go:build linux

package flush

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"golang.org/x/sys/unix"
)

// fakeRing is a scripted io_uring: it performs writes with pwrite and fsyncs with fdatasync against real
// files, but each run can be told to write only part of a buffer or to answer with an errno, which a real
// kernel will not do on cue. Link semantics follow the kernel's: a write that completes short or fails
// cancels the op linked to it with -ECANCELED.
type fakeRing struct {
	plans       []fakePlan // one per run call; runs past the end behave normally
	runs        [][]ringOp // every op submitted, per run (buf replaced by its length)
	registered  [][]byte
	registerErr error
	enterErr    error
	closed      bool
}

type fakePlan struct {
	writeLimit int           // > 0: write at most this many bytes
	writeZero  bool          // the write returns 0
	writeErrno syscall.Errno // the write fails with this errno
	fsyncErrno syscall.Errno // the fsync fails with this errno
}

// fakeOp is what a test asserts about a submitted op.
type fakeOp struct {
	kind     opKind
	off      uint64
	length   int
	bufIndex uint16
	link     bool
}

func (f *fakeRing) registerBuffers(bufs [][]byte) error {
	if f.registerErr != nil {
		return f.registerErr
	}
	f.registered = bufs
	return nil
}

func (f *fakeRing) close() error {
	f.closed = true
	return nil
}

func (f *fakeRing) run(ops []ringOp, res []int32) error {
	if f.enterErr != nil {
		return f.enterErr
	}
	var plan fakePlan
	if n := len(f.runs); n < len(f.plans) {
		plan = f.plans[n]
	}
	recorded := make([]ringOp, len(ops))
	copy(recorded, ops)
	f.runs = append(f.runs, recorded)
	cancelNext := false
	for i, op := range ops {
		if cancelNext {
			res[i] = -int32(syscall.ECANCELED)
			cancelNext = op.link
			continue
		}
		switch op.kind {
		case opNop:
			res[i] = 0
		case opWrite, opWriteFixed:
			switch {
			case plan.writeErrno != 0:
				res[i] = -int32(plan.writeErrno)
			case plan.writeZero:
				res[i] = 0
			default:
				buf := op.buf
				if plan.writeLimit > 0 && plan.writeLimit < len(buf) {
					buf = buf[:plan.writeLimit]
				}
				n, err := unix.Pwrite(op.fd, buf, int64(op.off))
				if err != nil {
					res[i] = -int32(err.(syscall.Errno))
				} else {
					res[i] = int32(n)
				}
			}
			cancelNext = op.link && int(res[i]) != len(op.buf)
		case opFsync:
			res[i] = 0
			if plan.fsyncErrno != 0 {
				res[i] = -int32(plan.fsyncErrno)
			} else if err := unix.Fdatasync(op.fd); err != nil {
				res[i] = -int32(err.(syscall.Errno))
			}
			cancelNext = op.link && res[i] < 0
		}
	}
	return nil
}

func (f *fakeRing) submitted() [][]fakeOp {
	out := make([][]fakeOp, len(f.runs))
	for i, run := range f.runs {
		for _, op := range run {
			out[i] = append(out[i], fakeOp{op.kind, op.off, len(op.buf), op.bufIndex, op.link})
		}
	}
	return out
}

// fixedBufs is a BufferRegistrar over plain slices (the fake ring never hands them to a kernel).
type fixedBufs [][]byte

func (f fixedBufs) FixedBuffers() [][]byte { return f }

func newFakeBackend(t *testing.T, f *fakeRing, fixed BufferRegistrar) (*uringBackend, *logtest.Recorder) {
	t.Helper()
	h := &logtest.Recorder{}
	b, err := openWith(KindIOUring, fixed, slog.New(h), func(uint32) (ring, error) { return f, nil })
	require.NoError(t, err)
	require.Equal(t, KindIOUring, b.Kind())
	return b.(*uringBackend), h
}

func tempFile(t *testing.T, size int) *os.File {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "00000000000000000000"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(int64(size)))
	t.Cleanup(func() { _ = f.Close() })
	return f
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i%251)
	}
	return b
}

func TestURingShortWriteResubmitsRemainderAndFsync(t *testing.T) {
	f := &fakeRing{plans: []fakePlan{{writeLimit: 300}, {writeLimit: 200}}}
	b, _ := newFakeBackend(t, f, nil)
	file := tempFile(t, 8192)
	data := pattern(1000, 7)

	require.NoError(t, b.WriteSync(int(file.Fd()), data, -1, 4096, true))

	require.Equal(t, [][]fakeOp{
		{{opWrite, 4096, 1000, 0, true}, {opFsync, 0, 0, 0, false}}, // short: 300 written, fsync cancelled
		{{opWrite, 4396, 700, 0, true}, {opFsync, 0, 0, 0, false}},  // short again: 200 written
		{{opWrite, 4596, 500, 0, true}, {opFsync, 0, 0, 0, false}},  // the rest, and the fsync runs
	}, f.submitted())
	got := make([]byte, 1000)
	_, err := file.ReadAt(got, 4096)
	require.NoError(t, err)
	require.Equal(t, data, got)
}

func TestURingRetriesInterruptedOps(t *testing.T) {
	f := &fakeRing{plans: []fakePlan{
		{writeErrno: syscall.EINTR},               // nothing written, fsync cancelled: both again
		{writeLimit: 10, fsyncErrno: syscall.EIO}, // short write: the fsync is cancelled before its EIO matters
		{fsyncErrno: syscall.EAGAIN},              // write completes, fsync must be retried alone
		{},                                        // fsync alone
	}}
	b, _ := newFakeBackend(t, f, nil)
	file := tempFile(t, 4096)
	data := pattern(64, 1)

	require.NoError(t, b.WriteSync(int(file.Fd()), data, -1, 0, true))
	require.Equal(t, [][]fakeOp{
		{{opWrite, 0, 64, 0, true}, {opFsync, 0, 0, 0, false}},
		{{opWrite, 0, 64, 0, true}, {opFsync, 0, 0, 0, false}},
		{{opWrite, 10, 54, 0, true}, {opFsync, 0, 0, 0, false}},
		{{opFsync, 0, 0, 0, false}},
	}, f.submitted())
	got := make([]byte, 64)
	_, err := file.ReadAt(got, 0)
	require.NoError(t, err)
	require.Equal(t, data, got)
}

func TestURingErrnoMapping(t *testing.T) {
	for name, tc := range map[string]struct {
		plan       fakePlan
		class      error
		notClass   []error
		errno      syscall.Errno
		durability bool // a failed sync: the bytes may be lost
	}{
		"write ENOSPC":               {fakePlan{writeErrno: syscall.ENOSPC}, ErrNoSpace, []error{ErrIO, ErrUnexpected}, syscall.ENOSPC, false},
		"write EDQUOT":               {fakePlan{writeErrno: syscall.EDQUOT}, ErrNoSpace, []error{ErrIO}, syscall.EDQUOT, false},
		"write EIO":                  {fakePlan{writeErrno: syscall.EIO}, ErrIO, []error{ErrNoSpace, ErrUnexpected}, syscall.EIO, false},
		"fsync EIO is never retried": {fakePlan{fsyncErrno: syscall.EIO}, ErrIO, []error{ErrNoSpace}, syscall.EIO, true},
		"fsync ENOSPC":               {fakePlan{fsyncErrno: syscall.ENOSPC}, ErrNoSpace, []error{ErrIO}, syscall.ENOSPC, true},
		"fsync EROFS":                {fakePlan{fsyncErrno: syscall.EROFS}, ErrUnexpected, []error{ErrIO, ErrNoSpace}, syscall.EROFS, true},
		"write EBADF":                {fakePlan{writeErrno: syscall.EBADF}, ErrUnexpected, []error{ErrNoSpace, ErrIO}, syscall.EBADF, false},
		"write EINVAL":               {fakePlan{writeErrno: syscall.EINVAL}, ErrUnexpected, []error{ErrNoSpace, ErrIO}, syscall.EINVAL, false},
	} {
		t.Run(name, func(t *testing.T) {
			f := &fakeRing{plans: []fakePlan{tc.plan}}
			b, _ := newFakeBackend(t, f, nil)
			file := tempFile(t, 4096)
			err := b.WriteSync(int(file.Fd()), pattern(100, 0), -1, 0, true)
			require.ErrorIs(t, err, tc.class)
			require.ErrorIs(t, err, tc.errno, "the errno stays inspectable")
			for _, other := range tc.notClass {
				require.NotErrorIs(t, err, other)
			}
			if tc.durability {
				require.ErrorIs(t, err, ErrDurability)
			} else {
				require.NotErrorIs(t, err, ErrDurability)
			}
			require.Contains(t, err.Error(), file.Name(), "the error names the file")
			require.Len(t, f.runs, 1, "no retry")
		})
	}
}

func TestURingNoProgressIsBounded(t *testing.T) {
	plans := make([]fakePlan, maxRetries+5)
	for i := range plans {
		plans[i] = fakePlan{writeZero: true}
	}
	f := &fakeRing{plans: plans}
	b, _ := newFakeBackend(t, f, nil)
	file := tempFile(t, 4096)
	err := b.WriteSync(int(file.Fd()), pattern(10, 0), -1, 0, false)
	require.ErrorIs(t, err, ErrUnexpected)
	require.Contains(t, err.Error(), "no progress")
	require.Len(t, f.runs, maxRetries)
}

func TestURingEnterFailure(t *testing.T) {
	f := &fakeRing{enterErr: syscall.EBADF}
	b, _ := newFakeBackend(t, f, nil)
	file := tempFile(t, 4096)
	err := b.WriteSync(int(file.Fd()), pattern(10, 0), -1, 0, true)
	require.ErrorIs(t, err, ErrUnexpected)
	require.ErrorIs(t, err, syscall.EBADF)
	require.Contains(t, err.Error(), "io_uring_enter")
	err = b.SyncMapped(int(file.Fd()), nil, 0, 0)
	require.ErrorIs(t, err, ErrUnexpected)
}

func TestURingFixedBufferSelection(t *testing.T) {
	pool := fixedBufs{make([]byte, 8192), make([]byte, 8192)}
	f := &fakeRing{}
	b, h := newFakeBackend(t, f, pool)
	require.Len(t, f.registered, 2, "the registrar's buffers are registered at open")
	require.Empty(t, h.All())
	file := tempFile(t, 16384)
	fd := int(file.Fd())
	copy(pool[1][100:], "fixed")

	require.NoError(t, b.WriteSync(fd, pool[1][100:105], 1, 100, false))
	require.NoError(t, b.WriteSync(fd, []byte("heap!"), -1, 200, false))
	require.Equal(t, [][]fakeOp{{{opWriteFixed, 100, 5, 1, false}}, {{opWrite, 200, 5, 0, false}}}, f.submitted())

	err := b.WriteSync(fd, pool[1][100:105], 0, 100, false)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "not inside fixed buffer 0")
	err = b.WriteSync(fd, pool[1][100:105], 2, 100, false)
	require.ErrorIs(t, err, ErrInvalidArgument)
	require.Contains(t, err.Error(), "bufIndex 2")
	require.ErrorIs(t, b.WriteSync(fd, nil, 0, -1, false), ErrInvalidArgument)

	got := make([]byte, 5)
	_, err = file.ReadAt(got, 100)
	require.NoError(t, err)
	require.Equal(t, "fixed", string(got))

	require.NoError(t, b.Close())
	require.True(t, f.closed)
	require.ErrorIs(t, b.Close(), ErrClosed)
	require.ErrorIs(t, b.WriteSync(fd, []byte("x"), -1, 0, false), ErrClosed)
	require.ErrorIs(t, b.SyncMapped(fd, nil, 0, 0), ErrClosed)
}

func TestURingRegistrationFailureKeepsIOURing(t *testing.T) {
	pool := fixedBufs{make([]byte, 4096)}
	f := &fakeRing{registerErr: errors.New("IORING_REGISTER_BUFFERS: cannot allocate memory")}
	b, h := newFakeBackend(t, f, pool)
	warns := h.AtLevel(slog.LevelWarn)
	require.Len(t, warns, 1)
	require.Contains(t, logtest.Attr(warns[0], "reason"), "cannot allocate memory")
	file := tempFile(t, 4096)
	require.NoError(t, b.WriteSync(int(file.Fd()), pool[0][:10], 0, 0, true))
	require.Equal(t, opWrite, f.submitted()[0][0].kind, "plain WRITE when the buffer is not registered")
	require.NoError(t, b.Close())
}

func TestURingSyncMappedRange(t *testing.T) {
	f := &fakeRing{plans: []fakePlan{{fsyncErrno: syscall.EINTR}}}
	b, _ := newFakeBackend(t, f, nil)
	file := tempFile(t, 4096)
	require.NoError(t, b.SyncMapped(int(file.Fd()), nil, 512, 1024))
	require.Equal(t, [][]fakeOp{{{opFsync, 512, 0, 0, false}}, {{opFsync, 512, 0, 0, false}}}, f.submitted())
	require.Equal(t, uint32(1024), f.runs[0][0].length)
	require.ErrorIs(t, b.SyncMapped(int(file.Fd()), nil, -1, 0), ErrInvalidArgument)
	require.ErrorIs(t, b.SyncMapped(int(file.Fd()), make([]byte, 100), 50, 51), ErrInvalidArgument)
}

func TestOpenFallsBackWithOneLogLine(t *testing.T) {
	h := &logtest.Recorder{}
	setupFailed := errors.New("io_uring_setup: operation not permitted (kernel.io_uring_disabled=2)")
	b, err := openWith(KindIOUring, fixedBufs{make([]byte, 4096)}, slog.New(h),
		func(uint32) (ring, error) { return nil, setupFailed })
	require.NoError(t, err)
	require.Equal(t, KindFdatasync, b.Kind())
	records := h.All()
	require.Len(t, records, 1, "exactly one log line")
	require.Equal(t, slog.LevelWarn, records[0].Level)
	require.Contains(t, records[0].Message, "falling back")
	require.Contains(t, logtest.Attr(records[0], "reason"), "kernel.io_uring_disabled=2")
	require.Equal(t, "fdatasync", logtest.Attr(records[0], "fallback"))
	require.ErrorIs(t, FallbackReason(b), setupFailed, "the reason is kept for the startup summary")
	require.NoError(t, FallbackReason(newFdatasyncBackend()))

	// The fallback works.
	file := tempFile(t, 4096)
	require.NoError(t, b.WriteSync(int(file.Fd()), []byte("ok"), -1, 0, true))
	require.NoError(t, b.Close())
}

func TestKindParsing(t *testing.T) {
	for s, k := range map[string]Kind{"iouring": KindIOUring, "io_uring": KindIOUring, "MSYNC": KindMsync, " fdatasync ": KindFdatasync} {
		got, err := ParseKind(s)
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
	for _, k := range []Kind{KindFdatasync, KindMsync, KindIOUring} {
		got, err := ParseKind(k.String())
		require.NoError(t, err)
		require.Equal(t, k, got)
	}
	_, err := ParseKind("fsync")
	require.ErrorIs(t, err, ErrConfig)
	require.Contains(t, err.Error(), "flushBackend")
	_, err = Open(Kind(9), nil, nil)
	require.ErrorIs(t, err, ErrConfig)
	require.Equal(t, "Kind(9)", Kind(9).String())
}
