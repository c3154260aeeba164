// Package vfs is the store's file-system seam: the FS and File interfaces through which package store
// opens, sizes, maps, syncs and removes every file. It is its own package, importing nothing of the
// store, so that the fault-injecting FS of package faultfs (test support) can implement it and the
// store's own tests can use that one (Pebble keeps vfs and vfs/errorfs apart the same way). Package store
// re-exports the interfaces (store.FS, store.File, store.DiskUsage) and holds the real implementation,
// store.NewOSFS.
package vfs

import (
	"io"
	"os"
)

// FS is the file-system seam under the store: every file the store touches is opened, sized, mapped,
// synced and removed through it, so tests can inject ENOSPC and EIO or drop what was never synced
// (package faultfs). store.NewOSFS is the real one. Implementations must be safe for concurrent use.
type FS interface {
	// OpenFile opens name like os.OpenFile.
	OpenFile(name string, flag int, perm os.FileMode) (File, error)
	// Remove deletes a file or an empty directory.
	Remove(name string) error
	// RemoveAll deletes a tree.
	RemoveAll(path string) error
	// Rename renames atomically (within one directory on one file system).
	Rename(oldpath, newpath string) error
	// MkdirAll creates a directory and its parents.
	MkdirAll(path string, perm os.FileMode) error
	// ReadDir lists a directory sorted by name.
	ReadDir(name string) ([]os.DirEntry, error)
	// Stat describes a file.
	Stat(name string) (os.FileInfo, error)
	// SyncDir makes the directory's entries (creations, renames, removals) durable.
	SyncDir(name string) error
	// DiskUsage reports the space of the file system holding path.
	DiskUsage(path string) (DiskUsage, error)
	// Lock takes an exclusive advisory lock on the file name (created if absent). It fails with an error
	// wrapping store.ErrStoreLocked when another process holds it. Close the result to unlock.
	Lock(name string) (io.Closer, error)
}

// DiskUsage is the space of one file system.
type DiskUsage struct {
	TotalBytes uint64
	FreeBytes  uint64
	// AvailableBytes is what an unprivileged writer may still use (FreeBytes less the blocks
	// reserved for root: Java's File.getUsableSpace); 0 when unknown.
	AvailableBytes uint64
}

// UsedRatio is the used share in percent (RocketMQ's getDiskPartitionSpaceUsedPercent × 100).
func (d DiskUsage) UsedRatio() float64 {
	if d.TotalBytes == 0 {
		return 0
	}
	return float64(d.TotalBytes-min(d.FreeBytes, d.TotalBytes)) * 100 / float64(d.TotalBytes)
}

// File is an open file of an FS. A File is used by one owner at a time except for the mapping, which
// readers share (the store's reference counts keep it mapped while read).
type File interface {
	Name() string
	io.ReaderAt
	io.WriterAt
	// Truncate sets the size.
	Truncate(size int64) error
	// Allocate reserves disk blocks for [0, size) and sets the size to at least size (fallocate), so writes
	// through a mapping cannot hit SIGBUS on a full disk. Falls back to Truncate where fallocate is missing.
	Allocate(size int64) error
	Stat() (os.FileInfo, error)
	// Map maps [0, size) shared read-write.
	Map(size int) ([]byte, error)
	// Unmap undoes Map; b must be the slice Map returned.
	Unmap(b []byte) error
	// Populate pre-faults the pages of a mapping for writing (MADV_POPULATE_WRITE) without changing
	// their content; errors.ErrUnsupported where the kernel lacks it.
	Populate(b []byte) error
	// Unpopulate drops the page-table entries of b, part of a mapping, and keeps its pages in the page
	// cache with their contents, dirty ones still dirty (MADV_DONTNEED on a shared file mapping): the
	// next access maps them again. errors.ErrUnsupported where the kernel cannot.
	Unpopulate(b []byte) error
	// AdviseHuge with on asks that the page cache fill b, the whole mapping Map returned, with huge
	// folios that the mapping maps whole (MADV_HUGEPAGE: ext4 and xfs on recent Linux), and returns the
	// huge page size; without on it withdraws the advice, back to the kernel's default for the mapping
	// (b stays valid at the same address; cached pages stay as they are). A withdrawal that fails may
	// leave b unmapped (Linux: a failed MAP_FIXED over a file mapping); calling it again maps b anew.
	// errors.ErrUnsupported where the kernel has no such advice. Contents never change.
	AdviseHuge(b []byte, on bool) (hugePageSize int, err error)
	// SyncMapped makes [off, off+length) of the file durable; mapped is the file's mapping from offset 0.
	SyncMapped(mapped []byte, off, length int64) error
	// MsyncRange makes [off, off+length) of mapped, the file's mapping from offset 0, durable with
	// msync(MS_SYNC) whatever the flush backend: for warming, whose syncs must not queue on the backend
	// (the io_uring one runs one call at a time) ahead of the group commit's.
	MsyncRange(mapped []byte, off, length int64) error
	// WriteSync writes buf at off and, with sync, makes the file's data durable. bufIndex is buf's
	// transient-pool (io_uring fixed buffer) slot, or -1.
	WriteSync(buf []byte, bufIndex int, off int64, sync bool) error
	// Sync makes the file's data durable (fdatasync).
	Sync() error
	Close() error
}
