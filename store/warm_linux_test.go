package store

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/internal/testutil"
)

// fsIocFiemap is FS_IOC_FIEMAP (_IOWR('f', 11, struct fiemap)); x/sys/unix has neither the request nor
// the structs, so unwrittenBytes lays them out by hand (linux/fiemap.h).
const (
	fsIocFiemap           = 0xC020660B
	fiemapHeaderBytes     = 32
	fiemapExtentBytes     = 56
	fiemapExtentLast      = 0x1
	fiemapExtentUnwritten = 0x800
)

// unwrittenBytes sums the file's extents that are allocated but unwritten (fallocate's), as the file
// system reports them without syncing first. ok=false when the file system has no FIEMAP.
func unwrittenBytes(t testing.TB, path string) (n int64, ok bool) {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	const perCall = 256
	buf := make([]byte, fiemapHeaderBytes+perCall*fiemapExtentBytes)
	for start := uint64(0); ; {
		clear(buf)
		binary.NativeEndian.PutUint64(buf[0:], start)
		binary.NativeEndian.PutUint64(buf[8:], ^uint64(0)-start) // to the end
		binary.NativeEndian.PutUint32(buf[24:], perCall)         // fm_extent_count
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), fsIocFiemap,
			uintptr(unsafe.Pointer(unsafe.SliceData(buf)))); errno != 0 {
			return 0, false
		}
		mapped := binary.NativeEndian.Uint32(buf[20:])
		if mapped == 0 {
			return n, true
		}
		for i := range mapped {
			e := buf[fiemapHeaderBytes+int(i)*fiemapExtentBytes:]
			logical, length := binary.NativeEndian.Uint64(e[0:]), binary.NativeEndian.Uint64(e[16:])
			flags := binary.NativeEndian.Uint32(e[40:])
			if flags&fiemapExtentUnwritten != 0 {
				n += int64(length)
			}
			if flags&fiemapExtentLast != 0 {
				return n, true
			}
			start = logical + length
		}
	}
}

// TestWarmWritesTheZerosUnderSyncFlush: on the real file system, a file warmed under SYNC_FLUSH has no
// unwritten extent left (the zeros are on the disk: the group commit's syncs of it write data only) and
// all its pages are in the page cache; so has a pre-written one (prewriteMappedFileEnable, in both append
// modes); a file neither warmed nor pre-written keeps fallocate's unwritten extents (the control, which
// also shows the file system reports them at all).
func TestWarmWritesTheZerosUnderSyncFlush(t *testing.T) {
	const fileSize = 4 << 20
	for _, v := range []struct {
		name                 string
		warm, pool, prewrite bool
	}{
		{"unwarmed", false, false, false}, {"warm", true, false, false}, {"warm-pool", true, true, false},
		{"prewrite", false, false, true}, {"prewrite-pool", false, true, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.MappedFileSizeCommitLog = fileSize
			cfg.FlushDiskType = SyncFlush
			cfg.WarmMappedFileEnable = v.warm
			cfg.PrewriteMappedFileEnable = v.prewrite
			cfg.PrewriteMappedFileDutyPercent = 100
			cfg.FlushLeastPagesWhenWarmMappedFile = (1 << 20) / pageSize
			cfg.TransientStorePoolEnable = v.pool
			s := openStarted(t, cfg, Deps{})
			cl := s.commitLog
			mustPut(t, s, testMessage("WarmTopic", 0, body(1000, "z")))
			want := int64(fileSize)
			if !v.warm {
				want = prefaultChunk
			}
			testutil.Eventually(t, "two standby files prepared", func() bool {
				sb := standbysAt(cl)
				return len(sb) == standbyFiles && sb[1].populated.Load() == want &&
					(!v.prewrite || sb[1].prewritten.Load() == fileSize)
			})
			first := standbysAt(cl)[0] // done: the allocator prepares one file after the other
			unwritten, ok := unwrittenBytes(t, first.path)
			if !ok {
				t.Skipf("no FIEMAP on the file system of %s", first.path)
			}
			if v.prewrite {
				require.Zero(t, unwritten, "unwritten bytes left in %s", first.path)
				// The two prepared files whole, plus whatever of the first file the allocator wrote before
				// the first put made it current.
				require.GreaterOrEqual(t, cl.prewrittenBytes.Load(), int64(standbyFiles*fileSize))
				require.Less(t, cl.prewrittenBytes.Load(), int64((standbyFiles+1)*fileSize))
				return
			}
			if !v.warm {
				if unwritten == 0 {
					t.Skipf("the file system of %s reports no unwritten extents after fallocate", first.path)
				}
				require.Equal(t, int64(fileSize), unwritten, "fallocate's extents, none written")
				return
			}
			require.Zero(t, unwritten, "unwritten bytes left in %s", first.path)
			// Synced, the pages are clean: memory pressure may drop a few (see mostOf).
			require.GreaterOrEqual(t, residentPages(t, first.data), mostOf(fileSize/pageSize), "resident pages of %s", first.path)
		})
	}
}
