package store

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// warmRecFS records the MsyncRange calls per file (base name).
type warmRecFS struct {
	FS
	mu    sync.Mutex
	syncs map[string][][2]int64 // file → [off, length] per call
}

func (r *warmRecFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := r.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &warmRecFile{File: f, fs: r}, nil
}

func (r *warmRecFS) syncsOf(path string) [][2]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.syncs[filepath.Base(path)])
}

type warmRecFile struct {
	File
	fs *warmRecFS
}

func (f *warmRecFile) MsyncRange(mapped []byte, off, length int64) error {
	f.fs.mu.Lock()
	f.fs.syncs[filepath.Base(f.Name())] = append(f.fs.syncs[filepath.Base(f.Name())], [2]int64{off, length})
	f.fs.mu.Unlock()
	return f.File.MsyncRange(mapped, off, length)
}

// standbysAt returns the prepared files (not held: the test's store keeps them).
func standbysAt(cl *commitLog) []*mappedFile {
	cl.allocMu.Lock()
	defer cl.allocMu.Unlock()
	return slices.Clone(cl.standbys)
}

// TestWarmMappedFile: with warmMapedFileEnable under SYNC_FLUSH the allocator prepares each next file
// whole: every page populated (MADV_POPULATE_WRITE, or a zero written into each page where the kernel
// lacks it) and synced every flushLeastPagesWhenWarmMapedFile pages, in order. Under ASYNC_FLUSH it never
// syncs (RocketMQ forces the mapping only for SYNC_FLUSH) and warms whole files only where the kernel
// cannot populate (and not with the pool): elsewhere the prefault window populates the pages ahead of the
// writer. Records written across the files read back intact.
func TestWarmMappedFile(t *testing.T) {
	const fileSize = 4 << 20 // the first chunk (prefaultChunk) is half a file
	step := int64(1 << 20)
	for _, pool := range []bool{false, true} {
		for _, flushType := range []FlushDiskType{AsyncFlush, SyncFlush} {
			for _, noPopulate := range []bool{false, true} {
				name := fmt.Sprintf("pool=%t/%s/noPopulate=%t", pool, flushType, noPopulate)
				t.Run(name, func(t *testing.T) {
					cfg := testConfig(t.TempDir())
					cfg.MappedFileSizeCommitLog = fileSize
					cfg.WarmMappedFileEnable = true
					cfg.PrewriteMappedFileEnable = false // warming's own syncs are what this test checks
					cfg.FlushLeastPagesWhenWarmMappedFile = int(step) / pageSize
					cfg.FlushDiskType = flushType
					cfg.TransientStorePoolEnable = pool
					var inner FS = NewOSFS(nil)
					if noPopulate {
						inner = noPopulateFS{inner}
					}
					rec := &warmRecFS{FS: inner, syncs: map[string][][2]int64{}}
					s := openStarted(t, cfg, Deps{FS: rec})
					cl := s.commitLog
					m := testMessage("WarmTopic", 0, body(3000, "w"))
					mustPut(t, s, m)
					// Whole files are warmed for SYNC_FLUSH (whose zeros go to the disk) and where the kernel
					// cannot populate; mmap appends under ASYNC_FLUSH have the prefault window instead.
					warmed := flushType == SyncFlush || (!pool && noPopulate)
					testutil.Eventually(t, "two standby files prepared", func() bool {
						sb := standbysAt(cl)
						return len(sb) == standbyFiles && (!warmed || sb[1].populated.Load() == fileSize)
					})
					// The allocator prepares one file after the other: the first is done.
					first := standbysAt(cl)[0]
					require.Equal(t, int64(fileSize), first.fromOffset)
					var want [][2]int64
					if warmed {
						require.Equal(t, int64(fileSize), first.populated.Load())
						if flushType == SyncFlush {
							for off := int64(0); off < fileSize; off += step {
								want = append(want, [2]int64{off, step})
							}
						}
					} else if !noPopulate {
						require.Equal(t, int64(prefaultChunk), first.populated.Load(), "the first chunk only")
					}
					require.Equal(t, want, rec.syncsOf(first.path), "msync calls while warming %s", first.path)
					if noPopulate {
						require.True(t, cl.prefaultOff.Load())
					}

					var msgs [][]byte
					for i := 0; len(msgs) == 0 || s.MaxPhyOffset() < 2*fileSize+fileSize/2; i++ {
						b := bodyf("%05d-%s", i, body(3000, "w"))
						msgs = append(msgs, b)
						mustPut(t, s, testMessage("WarmTopic", 0, b))
					}
					waitDispatched(t, s)
					got := getAll(t, s, "WarmTopic", 0)
					require.Len(t, got, 1+len(msgs))
					for i, r := range got[1:] {
						require.Equal(t, msgs[i], r.Body, "message %d", i)
					}
				})
			}
		}
	}
}

// TestWarmMappedFileMlock: with warmMappedFileMlock every warmed file is pinned, and unpinned once the
// writer has left it, so at most the current file and the prepared ones stay pinned. A failing mlock
// (RLIMIT_MEMLOCK) is logged once, naming the limit and the amount, and puts go on with unpinned files.
func TestWarmMappedFileMlock(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("mlockFails=%t", fail), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.WarmMappedFileEnable, cfg.WarmMappedFileMlock = true, true
			logger, logs := logtest.Logger()
			s, err := Open(cfg, Deps{Logger: logger})
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Shutdown() })
			cl := s.commitLog
			var (
				mu       sync.Mutex
				pinned   = map[*byte]bool{} // by mapping address: pinned now
				ever     = map[*byte]bool{} // pinned at some point
				everPins int
				unpins   int
				bad      []string // what the callbacks saw wrong (they run on the allocator goroutine)
			)
			cl.pin = func(b []byte) error {
				mu.Lock()
				defer mu.Unlock()
				if len(b) != testFileSize {
					bad = append(bad, fmt.Sprintf("pinned %d bytes, not a whole file", len(b)))
				}
				if fail {
					return unix.EAGAIN
				}
				pinned[unsafe.SliceData(b)], ever[unsafe.SliceData(b)] = true, true
				everPins++
				return nil
			}
			cl.unpin = func(b []byte) error {
				mu.Lock()
				defer mu.Unlock()
				if !pinned[unsafe.SliceData(b)] {
					bad = append(bad, "unpinned a file that is not pinned")
				}
				delete(pinned, unsafe.SliceData(b))
				unpins++
				return nil
			}
			require.NoError(t, s.Start())

			var msgs [][]byte
			for i := 0; s.MaxPhyOffset() < 6*testFileSize; i++ {
				b := bodyf("%04d-%s", i, body(2000, "m"))
				msgs = append(msgs, b)
				mustPut(t, s, testMessage("PinTopic", 0, b))
			}
			files := cl.mfq.snapshot()
			require.GreaterOrEqual(t, len(files), 7)
			testutil.Eventually(t, "standbys", func() bool { return cl.standbyCount() == standbyFiles })
			if fail {
				warns := logs.AtLevel(slog.LevelWarn)
				require.Len(t, warns, 1, "one warning for every failed mlock")
				require.Contains(t, warns[0].Message, "mlock")
				require.NotEmpty(t, logtest.Attr(warns[0], "RLIMIT_MEMLOCK"))
				require.Equal(t, fmt.Sprint(3*testFileSize), logtest.Attr(warns[0], "needBytes"))
				require.Contains(t, logtest.Attr(warns[0], "fix"), "warmMappedFileMlock=false")
				for _, mf := range files {
					require.False(t, mf.pinned.Load(), mf.path)
				}
			} else {
				// Every file but the current one was left: unpinned once the allocator ran after the rolls.
				// A file a late allocator left to the roll (created under the put lock) is not warmed.
				leftPinned := func() (n int) {
					for _, mf := range files[:len(files)-1] {
						if ever[unsafe.SliceData(mf.data)] {
							n++
						}
					}
					return n
				}
				testutil.Eventually(t, "left files unpinned", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return unpins == leftPinned() && everPins+int(cl.syncRolls.Load()) == len(files)+standbyFiles
				})
				mu.Lock()
				require.Greater(t, unpins, 0)
				require.Len(t, pinned, everPins-unpins)
				for _, mf := range files[:len(files)-1] {
					require.False(t, pinned[unsafe.SliceData(mf.data)], mf.path)
					require.False(t, mf.pinned.Load(), mf.path)
				}
				for _, mf := range append(standbysAt(cl), cl.cur) {
					require.Equal(t, ever[unsafe.SliceData(mf.data)], mf.pinned.Load(), mf.path)
				}
				mu.Unlock()
			}
			mu.Lock()
			require.Empty(t, bad)
			mu.Unlock()
			waitDispatched(t, s)
			got := getAll(t, s, "PinTopic", 0)
			require.Len(t, got, len(msgs))
			for i, r := range got {
				require.Equal(t, msgs[i], r.Body, "message %d", i)
			}
		})
	}
}
