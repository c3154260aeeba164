package store

// A disk that fills up completely (issue 14): nothing stored is deleted unless the operator chose forced
// deletion, no ConsumeQueue entry is lost, and the disk guard does not act on the moment a failing
// preallocation holds every free block.

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// spaceFS models the free space of a file system over real files. DiskUsage reports free bytes out of
// total. A CommitLog file's Allocate behaves like fallocate(2) on a file system without the room: it
// takes every free block and fails with ENOSPC, giving them back when it returns (tmpfs). Armed with
// duringFailure, the next CommitLog allocation fails that way even though statfs showed room (a quota,
// another writer), and calls duringFailure while it holds the blocks: the moment a disk check may read.
type spaceFS struct {
	FS
	total         int64
	free          atomic.Int64
	allocations   atomic.Int64 // Allocate calls on CommitLog files
	duringFailure atomic.Pointer[func()]
}

func newSpaceFS(total, free int64) *spaceFS {
	f := &spaceFS{FS: NewOSFS(nil), total: total}
	f.free.Store(free)
	return f
}

func (f *spaceFS) DiskUsage(string) (DiskUsage, error) {
	return DiskUsage{TotalBytes: uint64(f.total), FreeBytes: uint64(f.free.Load())}, nil
}

func (f *spaceFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	file, err := f.FS.OpenFile(name, flag, perm)
	if err != nil || !isCommitLogPath(name) {
		return file, err
	}
	return &spaceFile{File: file, fs: f}, nil
}

func isCommitLogPath(name string) bool {
	sep := string(filepath.Separator)
	return strings.Contains(name, sep+"commitlog"+sep)
}

type spaceFile struct {
	File
	fs *spaceFS
}

func (sf *spaceFile) Allocate(size int64) error {
	sf.fs.allocations.Add(1)
	hook := sf.fs.duringFailure.Swap(nil)
	if hook == nil && size <= sf.fs.free.Load() {
		return sf.File.Allocate(size)
	}
	free := sf.fs.free.Swap(0)
	if hook != nil {
		(*hook)()
	}
	sf.fs.free.Store(free)
	return &os.PathError{Op: "fallocate", Path: sf.Name(), Err: syscall.ENOSPC}
}

// TestPreallocationThatCannotFitIsNotTried: with less free space than one CommitLog file, the allocator
// does not start a fallocate (which would fill the disk to the last block and, on ext4, keep the blocks
// until the file is removed); puts are refused once no prepared file is left, nothing stored goes, and
// the store accepts puts again by itself once space returns. Before the fix every attempt ran fallocate
// and left the file in the directory for its duration (issue 14: "the fourth CommitLog file could not be
// made", found present).
func TestPreallocationThatCannotFitIsNotTried(t *testing.T) {
	const total = 8 * testFileSize
	fsys := newSpaceFS(total, total/2)
	cfg := testConfig(t.TempDir())
	s := openStarted(t, cfg, Deps{FS: fsys})
	mustPut(t, s, testMessage("T", 0, body(100, "a")))
	waitFor(t, "two standby files", func() bool { return s.commitLog.standbyCount() == standbyFiles })
	files := commitLogFiles(t, cfg.StorePathRootDir)
	require.Len(t, files, 1+standbyFiles)
	allocations := fsys.allocations.Load()

	fsys.free.Store(testFileSize - 1) // 87.5 % used: below the warning level, short of one file
	var refused error
	puts := 1
	for ; refused == nil; puts++ {
		require.Less(t, puts, 1000, "puts must be refused once the prepared files are used up")
		_, refused = s.PutMessage(testMessage("T", 0, body(1000, "b")))
	}
	require.ErrorIs(t, refused, ErrDiskFull)
	require.NotZero(t, s.RunningFlags()&FlagDiskFull)
	require.GreaterOrEqual(t, s.MaxPhyOffset(), int64(2*testFileSize), "refused only after rolling into the last prepared file")
	require.Equal(t, allocations, fsys.allocations.Load(), "a fallocate was started that statfs said cannot fit")
	require.Equal(t, files, commitLogFiles(t, cfg.StorePathRootDir))
	_, err := s.PutMessage(testMessage("T", 0, []byte("refused")))
	require.ErrorIs(t, err, ErrDiskFull)

	fsys.free.Store(total / 2)
	_, err = s.cleanOnce(time.Now())
	require.NoError(t, err)
	waitFor(t, "an allocation succeeding clears the flag", func() bool { return s.RunningFlags() == 0 })
	mustPut(t, s, testMessage("T", 0, body(1000, "c")))
	waitDispatched(t, s)
	require.Zero(t, s.MinPhyOffset())
	require.Len(t, getAll(t, s, "T", 0), puts, "every acknowledged put is readable")
}
