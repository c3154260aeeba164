//go:build linux

package transientpool

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// TestRealMlockFailure makes the kernel refuse mlock: RLIMIT_MEMLOCK is lowered to 64 KiB and, because the
// test may run as root, CAP_IPC_LOCK is dropped from the effective set of one locked OS thread (capabilities
// are per thread; the thread exits with its goroutine, so the rest of the process keeps its capabilities).
func TestRealMlockFailure(t *testing.T) {
	var old unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_MEMLOCK, &old))
	small := unix.Rlimit{Cur: 64 << 10, Max: old.Max}
	if old.Max != unix.RLIM_INFINITY && old.Max < small.Cur {
		small.Cur = old.Max
	}
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_MEMLOCK, &small))
	t.Cleanup(func() { require.NoError(t, unix.Setrlimit(unix.RLIMIT_MEMLOCK, &old)) })

	type result struct {
		err     error
		skipped string
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with this goroutine
		if err := dropIPCLock(); err != nil {
			done <- result{skipped: "cannot drop CAP_IPC_LOCK: " + err.Error()}
			return
		}
		cfg := Config{Buffers: 2, BufferBytes: 1 << 20, Pinned: true}
		p, err := New(cfg, nil)
		if err == nil {
			done <- result{skipped: "mlock of 2 MiB succeeded despite a 64 KiB RLIMIT_MEMLOCK"}
			_ = p.Close()
			return
		}
		done <- result{err: err}
	}()
	r := <-done
	if r.skipped != "" {
		t.Skip(r.skipped)
	}
	require.ErrorIs(t, r.err, ErrMemlock)
	require.ErrorIs(t, r.err, unix.ENOMEM)
	require.Contains(t, r.err.Error(), "at least 2097152 bytes")
	require.Contains(t, r.err.Error(), "soft 65536 bytes")
	t.Logf("operator sees: %v", r.err)
}

func dropIPCLock() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	data[unix.CAP_IPC_LOCK/32].Effective &^= 1 << (unix.CAP_IPC_LOCK % 32)
	return unix.Capset(&hdr, &data[0])
}

func TestBuffersAreOffHeapAndPinned(t *testing.T) {
	before := lockedKiB(t)
	p, err := New(Config{Buffers: 2, BufferBytes: 1 << 20, Pinned: true}, nil)
	if err != nil {
		t.Skipf("cannot pin 2 MiB here: %v", err)
	}
	require.True(t, p.Pinned())
	require.GreaterOrEqual(t, lockedKiB(t)-before, 2048, "VmLck grows by the pool size")
	for _, b := range p.FixedBuffers() {
		require.Zero(t, uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(unix.Getpagesize()), "mmap'd buffers are page aligned")
	}
	require.NoError(t, p.Close())
	require.Less(t, lockedKiB(t)-before, 2048, "Close unpins")
}

// lockedKiB reads VmLck (memory locked by this process) from /proc/self/status.
func lockedKiB(t *testing.T) int {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmLck:"); ok {
			n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no VmLck line in /proc/self/status")
	return 0
}
