//go:build linux

package transientpool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ramFSStat reports whether path is on a RAM-backed file system (tmpfs or ramfs) and how many bytes it
// has free for an unprivileged writer.
func ramFSStat(path string) (ramBacked bool, freeBytes uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false, 0, err
	}
	return st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC, st.Bavail * uint64(st.Bsize), nil
}

// checkDirOwner refuses a pool directory that another user could have prepared or can change: /dev/shm
// is writable by everyone, and the directory's name follows from the store's path, so a local user
// could create it first and plant buffer files for recovery to write into the CommitLog.
func checkDirOwner(dir string) error {
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%w: %s is not a directory", ErrNotOwned, dir)
	case int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%w: %s belongs to uid %d, not to this process's %d", ErrNotOwned, dir, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%w: others may write into %s (mode %o)", ErrNotOwned, dir, st.Mode&0o777)
	}
	return nil
}

// errFallback marks a reason to use anonymous buffers instead of files (the pool still works; what a
// process crash keeps differs). Other errors from openFiles stop New.
var errFallback = errors.New("transientpool: file-backed buffers unavailable")

// errDirInUse: another process holds the directory's lock.
var errDirInUse = errors.New("transientpool: pool directory in use by another process")

// openFiles opens (creating when absent) and maps cfg.Buffers buffer files in dir, keeping what existing
// files of the same identity and size hold (their headers say what a crashed process left). Errors
// wrapping errFallback mean "use anonymous buffers"; errDirInUse stops New.
func openFiles(cfg Config, dir string, stat func(string) (bool, uint64, error)) (*fileBacking, error) {
	parent := filepath.Dir(dir)
	ram, free, err := stat(parent)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %s: %w", errFallback, parent, err)
	case !ram:
		return nil, fmt.Errorf("%w: %s is not a tmpfs (RAM-backed) file system", errFallback, parent)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("%w: %w", errFallback, err)
	}
	if err := checkDirOwner(dir); err != nil {
		return nil, fmt.Errorf("%w: %w", errFallback, err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errFallback, err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s (another broker with the same CommitLog directory?)", errDirInUse, dir)
		}
		return nil, fmt.Errorf("%w: flock %s: %w", errFallback, dir, err)
	}
	fb := &fileBacking{dir: dir, lock: lock}
	dataOffset := int64(os.Getpagesize())
	fileBytes := dataOffset + int64(cfg.BufferBytes)
	// Room: every buffer file whole, less what the files already there hold.
	need := uint64(cfg.Buffers) * uint64(fileBytes)
	for i := 0; i < cfg.Buffers; i++ {
		var st unix.Stat_t
		if unix.Stat(filepath.Join(dir, bufferFileName(i)), &st) == nil {
			need -= min(need, uint64(st.Blocks)*512)
		}
	}
	if free < need {
		_ = fb.close()
		return nil, fmt.Errorf("%w: %s has %d bytes free, the pool needs %d more", errFallback, parent, free, need)
	}
	_ = os.WriteFile(filepath.Join(dir, storeFileName), []byte(cfg.Identity+"\n"), 0o600)
	id := identityHash(cfg.Identity)
	for i := 0; i < cfg.Buffers; i++ {
		if err := fb.open(i, id, dataOffset, int64(cfg.BufferBytes)); err != nil {
			_ = fb.close()
			return nil, fmt.Errorf("%w: %w", errFallback, err)
		}
	}
	return fb, nil
}

// open maps buffer file i, sized and allocated (tmpfs pages reserved now: a store into a shared
// mapping of a tmpfs file with no page to give would raise SIGBUS later), its header kept when it is
// this pool's.
func (fb *fileBacking) open(i int, id [16]byte, dataOffset, bufferBytes int64) error {
	path := filepath.Join(fb.dir, bufferFileName(i))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	size := dataOffset + bufferBytes
	if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
		_ = f.Close()
		return fmt.Errorf("fallocate %s (%d bytes): %w", path, size, err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("mmap %s: %w", path, err)
	}
	_ = unix.Madvise(m[dataOffset:], unix.MADV_HUGEPAGE) // best effort, as for anonymous buffers
	h := header(m[:dataOffset])
	if !h.matches(id, bufferBytes, dataOffset) {
		h.init(i, id, bufferBytes, dataOffset)
	}
	fb.files = append(fb.files, f)
	fb.mappings = append(fb.mappings, m)
	fb.headers = append(fb.headers, h)
	fb.data = append(fb.data, m[dataOffset:size:size])
	return nil
}

// close unmaps and closes every file and releases the lock; the files stay.
func (fb *fileBacking) close() error {
	var errs []error
	for i, m := range fb.mappings {
		if err := unix.Munmap(m); err != nil {
			errs = append(errs, fmt.Errorf("transientpool: munmap %s: %w", fb.files[i].Name(), err))
		}
		errs = append(errs, fb.files[i].Close())
	}
	fb.mappings, fb.files, fb.headers, fb.data = nil, nil, nil, nil
	if fb.lock != nil {
		errs = append(errs, fb.lock.Close()) // closing the descriptor drops the flock
		fb.lock = nil
	}
	return errors.Join(errs...)
}
