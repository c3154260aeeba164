//go:build unix

package store

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/flush"
)

// NewOSFS returns the operating system's file system. Durable writes (SyncMapped, WriteSync) go through
// backend, the flush package's chosen Backend (io_uring, msync or fdatasync); with a nil backend they are
// plain msync(MS_SYNC) and pwrite + fdatasync calls. Safe for concurrent use.
func NewOSFS(backend flush.Backend) FS { return &osFS{backend: backend} }

type osFS struct{ backend flush.Backend }

func (o *osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	// Fd once: it is stable for the file's life, and calling it later would re-enter the runtime poller.
	return &osFile{f: f, fd: int(f.Fd()), backend: o.backend}, nil
}

func (o *osFS) Remove(name string) error                     { return os.Remove(name) }
func (o *osFS) RemoveAll(path string) error                  { return os.RemoveAll(path) }
func (o *osFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (o *osFS) MkdirAll(path string, perm os.FileMode) error { return os.MkdirAll(path, perm) }
func (o *osFS) ReadDir(name string) ([]os.DirEntry, error)   { return os.ReadDir(name) }
func (o *osFS) Stat(name string) (os.FileInfo, error)        { return os.Stat(name) }

func (o *osFS) SyncDir(name string) error {
	d, err := os.Open(name)
	if err != nil {
		return err
	}
	serr := d.Sync()
	cerr := d.Close()
	if serr != nil {
		return fmt.Errorf("store: sync directory %s: %w", name, serr)
	}
	return cerr
}

func (o *osFS) DiskUsage(path string) (DiskUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return DiskUsage{}, fmt.Errorf("store: statfs %s: %w", path, err)
	}
	bsize := uint64(st.Bsize)
	// Bfree (not Bavail) counts the root-reserved blocks as free, as Java's File.getFreeSpace does.
	return DiskUsage{TotalBytes: uint64(st.Blocks) * bsize, FreeBytes: uint64(st.Bfree) * bsize,
		AvailableBytes: uint64(st.Bavail) * bsize}, nil
}

type lockFile struct{ f *os.File }

func (l lockFile) Close() error { return l.f.Close() } // closing the descriptor drops the flock

func (o *osFS) Lock(name string) (io.Closer, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrStoreLocked, name)
		}
		return nil, fmt.Errorf("store: lock %s: %w", name, err)
	}
	return lockFile{f}, nil
}

type osFile struct {
	f       *os.File
	fd      int
	backend flush.Backend
}

func (f *osFile) Name() string                              { return f.f.Name() }
func (f *osFile) ReadAt(b []byte, off int64) (int, error)   { return f.f.ReadAt(b, off) }
func (f *osFile) WriteAt(b []byte, off int64) (int, error)  { return f.f.WriteAt(b, off) }
func (f *osFile) Truncate(size int64) error                 { return f.f.Truncate(size) }
func (f *osFile) Stat() (os.FileInfo, error)                { return f.f.Stat() }
func (f *osFile) Close() error                              { return f.f.Close() }
func (f *osFile) Allocate(size int64) error                 { return allocate(f.f, f.fd, size) }
func (f *osFile) Populate(b []byte) error                   { return populate(b) }
func (f *osFile) Unpopulate(b []byte) error                 { return unpopulate(b) }
func (f *osFile) AdviseHuge(b []byte, on bool) (int, error) { return adviseHuge(f.fd, b, on) }

// DataExtents returns the stretches of [from, to) that may hold data (holes and never-written extents
// left out).
func (f *osFile) DataExtents(from, to int64) [][2]int64 { return dataExtents(f.fd, from, to) }

// SyscallConn gives the descriptor to the HA transfer's sendfile (ReadReplicaFile).
func (f *osFile) SyscallConn() (syscall.RawConn, error) { return f.f.SyscallConn() }

func (f *osFile) Map(size int) ([]byte, error) {
	b, err := unix.Mmap(f.fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("store: mmap %s (%d bytes): %w", f.f.Name(), size, err)
	}
	return b, nil
}

func (f *osFile) Unmap(b []byte) error { return unix.Munmap(b) }

func (f *osFile) SyncMapped(mapped []byte, off, length int64) error {
	if f.backend != nil {
		return f.backend.SyncMapped(f.fd, mapped, off, length)
	}
	if mapped == nil {
		return f.Sync()
	}
	if length == 0 {
		off, length = 0, int64(len(mapped))
	}
	return f.MsyncRange(mapped, off, length)
}

func (f *osFile) MsyncRange(mapped []byte, off, length int64) error {
	// msync wants a page-aligned start.
	start := off &^ int64(pageSize-1)
	end := min(off+length, int64(len(mapped)))
	if end <= start {
		return nil
	}
	if err := unix.Msync(mapped[start:end], unix.MS_SYNC); err != nil {
		return fmt.Errorf("store: msync %s [%d, %d): %w", f.f.Name(), start, end, err)
	}
	return nil
}

func (f *osFile) WriteSync(buf []byte, bufIndex int, off int64, sync bool) error {
	if f.backend != nil {
		return f.backend.WriteSync(f.fd, buf, bufIndex, off, sync)
	}
	if _, err := f.f.WriteAt(buf, off); err != nil {
		return err
	}
	if sync {
		return f.Sync()
	}
	return nil
}

func (f *osFile) Sync() error {
	if err := datasync(f.fd); err != nil {
		return fmt.Errorf("store: fdatasync %s: %w", f.f.Name(), &os.PathError{Op: "fdatasync", Path: f.f.Name(), Err: err})
	}
	return nil
}

// isNoSpace reports ENOSPC/EDQUOT in any wrapping (flush.ErrNoSpace included).
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, flush.ErrNoSpace)
}
