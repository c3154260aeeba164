// Package faultfs is test support: an FS (package vfs) that injects errors and models a machine crash,
// for the store's and the broker's tests. Production code never imports it.
package faultfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ringmq/ringmq/store/vfs"
)

var pageSize = os.Getpagesize()

// FS wraps a vfs.FS (normally store.NewOSFS over a test's temporary directory) to inject errors and to
// model a crash of the machine. Written for ringmq after the ideas of Pebble's vfs/errorfs (rules that fail chosen
// operations on chosen paths) and vfs.NewCrashableMem (a clone holding only what was synced); because the
// store writes through shared mappings, the model works on top of real files: every durable call
// (Sync, SyncMapped, WriteSync with sync) copies the bytes it covers from the file into a shadow image,
// and CrashClone writes out the shadows.
//
// Crash model (a worst case of what ext4 promises):
//   - A file's data, and its size, are durable up to its last Sync/SyncMapped/WriteSync(sync) covering
//     them; SyncMapped covers only its range. Everything else is lost, unless CrashOptions keeps some
//     unsynced pages (pages reach the disk in any order before a crash).
//   - A new file's name becomes durable with its first data sync, or with SyncDir of its directory.
//   - A rename becomes durable with SyncDir of the target's directory; before that the old names remain.
//   - Removals are durable at once (the store never depends on an unlink being undone).
//   - Files that existed before the FS first opened them count as durable as they were.
//
// Safe for concurrent use.
type FS struct {
	inner vfs.FS

	// persistMu makes each durable call's read of the file and its copy into the image one step: two
	// syncs of one file running at once (the pre-writer's fdatasync of the whole file and the group
	// commit's SyncMapped of the records) could otherwise copy in the opposite order to their reads, the
	// older snapshot (zeros) landing over the newer one (records) that a send was acknowledged on. A real
	// sync never makes older content durable after newer.
	persistMu sync.Mutex

	mu      sync.Mutex
	rules   []*faultRule
	usage   func(path string) (vfs.DiskUsage, error)
	current map[string]*faultNode // name → file as the running process sees it
	durable map[string]*faultNode // name → file as a crash would leave it
	touched map[string]bool       // every name this FS has opened, created, renamed or removed
}

var _ vfs.FS = (*FS)(nil)

// Op is a set of operations a fault rule applies to.
type Op uint32

// Operations that can fail.
const (
	// OpOpen: OpenFile of an existing file.
	OpOpen Op = 1 << iota
	// OpCreate: OpenFile that creates a file.
	OpCreate
	// OpWrite: WriteAt and WriteSync.
	OpWrite
	// OpAllocate: Allocate and Truncate.
	OpAllocate
	// OpMap: Map.
	OpMap
	// OpSync: Sync, SyncMapped and the sync of WriteSync.
	OpSync
	// OpRemove: Remove and RemoveAll.
	OpRemove
	// OpRename: Rename.
	OpRename
	// OpSyncDir: SyncDir.
	OpSyncDir
	// OpRead: ReadAt.
	OpRead
	// OpAdvise: AdviseHuge (the advice, and its withdrawal, which maps the file again).
	OpAdvise
)

// Rule fails operations in Ops on paths containing PathContains (all paths when empty) with Err,
// Times times (0 = until removed).
type Rule struct {
	Ops          Op
	PathContains string
	Err          error
	Times        int
}

type faultRule struct {
	Rule
	left int
}

type faultNode struct {
	image []byte // durable bytes; len(image) is the durable size
}

// New wraps inner.
func New(inner vfs.FS) *FS {
	return &FS{
		inner:   inner,
		current: make(map[string]*faultNode),
		durable: make(map[string]*faultNode),
		touched: make(map[string]bool),
	}
}

// Inject adds a rule; the returned func removes it.
func (f *FS) Inject(r Rule) (remove func()) {
	fr := &faultRule{Rule: r, left: r.Times}
	f.mu.Lock()
	f.rules = append(f.rules, fr)
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for i, x := range f.rules {
			if x == fr {
				f.rules = append(f.rules[:i], f.rules[i+1:]...)
				return
			}
		}
	}
}

// ClearFaults removes every rule.
func (f *FS) ClearFaults() {
	f.mu.Lock()
	f.rules = nil
	f.mu.Unlock()
}

// SetDiskUsage replaces DiskUsage's answer (nil restores the inner FS's).
func (f *FS) SetDiskUsage(fn func(path string) (vfs.DiskUsage, error)) {
	f.mu.Lock()
	f.usage = fn
	f.mu.Unlock()
}

var opNames = map[Op]string{OpOpen: "open", OpCreate: "create", OpWrite: "write", OpAllocate: "allocate",
	OpMap: "mmap", OpSync: "sync", OpRemove: "remove", OpRename: "rename", OpSyncDir: "syncdir", OpRead: "read"}

func (f *FS) check(op Op, path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, r := range f.rules {
		if r.Ops&op == 0 || (r.PathContains != "" && !strings.Contains(path, r.PathContains)) {
			continue
		}
		if r.Times > 0 {
			r.left--
			if r.left <= 0 {
				f.rules = append(f.rules[:i], f.rules[i+1:]...)
			}
		}
		return &os.PathError{Op: "injected " + opNames[op], Path: path, Err: r.Err}
	}
	return nil
}

func clean(p string) string { return filepath.Clean(p) }

// OpenFile opens through the inner FS and starts tracking the file.
func (f *FS) OpenFile(name string, flag int, perm os.FileMode) (vfs.File, error) {
	name = clean(name)
	f.mu.Lock()
	node, known := f.current[name]
	f.mu.Unlock()
	exists := known
	if !known {
		if _, err := f.inner.Stat(name); err == nil {
			exists = true
		}
	}
	op := OpOpen
	if !exists {
		op = OpCreate
	}
	if err := f.check(op, name); err != nil {
		return nil, err
	}
	// The open (which may create the file) and its tracking are one step for CrashClone, which holds
	// mu throughout: it must never see a file the maps do not know yet.
	f.mu.Lock()
	defer f.mu.Unlock()
	inner, err := f.inner.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	f.touched[name] = true
	if node = f.current[name]; node == nil {
		node = &faultNode{}
		if exists {
			// A file from before: durable as it is on disk.
			img, err := readAll(inner)
			if err != nil {
				_ = inner.Close()
				return nil, err
			}
			node.image = img
			f.durable[name] = node
		}
		f.current[name] = node
	}
	return &faultFile{fs: f, inner: inner, node: node, name: name}, nil
}

func readAll(file vfs.File) ([]byte, error) {
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	b := make([]byte, st.Size())
	n, err := file.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// Remove removes the file and its shadow.
func (f *FS) Remove(name string) error {
	name = clean(name)
	if err := f.check(OpRemove, name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.inner.Remove(name); err != nil {
		return err
	}
	delete(f.current, name)
	delete(f.durable, name)
	f.touched[name] = true
	return nil
}

// RemoveAll removes a tree and its shadows.
func (f *FS) RemoveAll(path string) error {
	path = clean(path)
	if err := f.check(OpRemove, path); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.inner.RemoveAll(path); err != nil {
		return err
	}
	prefix := path + string(filepath.Separator)
	for _, m := range []map[string]*faultNode{f.current, f.durable} {
		for k := range m {
			if k == path || strings.HasPrefix(k, prefix) {
				delete(m, k)
				f.touched[k] = true
			}
		}
	}
	f.touched[path] = true
	return nil
}

// Rename renames; the new name is durable only after SyncDir.
func (f *FS) Rename(oldpath, newpath string) error {
	oldpath, newpath = clean(oldpath), clean(newpath)
	if err := f.check(OpRename, newpath); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.inner.Rename(oldpath, newpath); err != nil {
		return err
	}
	if n, ok := f.current[oldpath]; ok {
		f.current[newpath] = n
		delete(f.current, oldpath)
	}
	f.touched[oldpath], f.touched[newpath] = true, true
	return nil
}

// MkdirAll passes through (directories are assumed durable).
func (f *FS) MkdirAll(path string, perm os.FileMode) error { return f.inner.MkdirAll(path, perm) }

// ReadDir passes through.
func (f *FS) ReadDir(name string) ([]os.DirEntry, error) { return f.inner.ReadDir(name) }

// Stat passes through.
func (f *FS) Stat(name string) (os.FileInfo, error) { return f.inner.Stat(name) }

// Lock passes through.
func (f *FS) Lock(name string) (io.Closer, error) { return f.inner.Lock(name) }

// SyncDir makes the directory's current names durable.
func (f *FS) SyncDir(name string) error {
	name = clean(name)
	if err := f.check(OpSyncDir, name); err != nil {
		return err
	}
	if err := f.inner.SyncDir(name); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := range f.durable {
		if filepath.Dir(k) == name {
			delete(f.durable, k)
		}
	}
	for k, n := range f.current {
		if filepath.Dir(k) == name {
			f.durable[k] = n
		}
	}
	return nil
}

// DiskUsage answers from SetDiskUsage's function when set.
func (f *FS) DiskUsage(path string) (vfs.DiskUsage, error) {
	f.mu.Lock()
	fn := f.usage
	f.mu.Unlock()
	if fn != nil {
		return fn(path)
	}
	return f.inner.DiskUsage(path)
}

// persist copies [off, off+length) of the file (length < 0: all of it) into the node's image and makes
// the file's name durable.
func (f *FS) persist(ff *faultFile, off, length int64) error {
	f.persistMu.Lock()
	defer f.persistMu.Unlock()
	st, err := ff.inner.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if length < 0 {
		off, length = 0, size
	}
	end := min(off+length, size)
	var buf []byte
	if end > off {
		buf = make([]byte, end-off)
		if _, err := ff.inner.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	n := ff.node
	// fdatasync makes the size durable too.
	if int64(len(n.image)) < size {
		n.image = append(n.image, make([]byte, size-int64(len(n.image)))...)
	} else {
		n.image = n.image[:size]
	}
	if end > off {
		copy(n.image[off:end], buf)
	}
	if cur, ok := f.current[ff.name]; ok && cur == n {
		if _, ok := f.durable[ff.name]; !ok {
			f.durable[ff.name] = n
		}
	}
	return nil
}

// CrashOptions tune CrashClone.
type CrashOptions struct {
	// KeepUnsyncedPage, when set, is asked for every unsynced page (pageSize bytes at pageOffset) that
	// differs from the durable image; true keeps the page's current content, as if the kernel had written
	// it back before the crash. nil keeps none. It is called while CrashClone holds the FS: it must not
	// use the FS.
	KeepUnsyncedPage func(path string, pageOffset int64) bool
}

// CrashClone writes into dst what a crash at this moment would leave of the tree under src: files as the
// crash model says, untouched files as they are. dst must be empty or absent. The running store is not
// affected; open a new store on dst to test recovery.
//
// The store may keep running during the clone. The moment of the crash is the whole call: it holds mu
// throughout, so no open, sync, rename or removal through this FS happens inside it, and what it reads
// of current files (unsynced pages kept, untouched files) is from that moment, never a later state
// (a checkpoint written after the crash, say, must not appear in the clone).
func (f *FS) CrashClone(src, dst string, opts CrashOptions) error {
	src, dst = clean(src), clean(dst)
	f.mu.Lock()
	defer f.mu.Unlock()
	durable := make(map[string][]byte)
	names := make(map[string]*faultNode)
	for k, n := range f.durable {
		if k == src || strings.HasPrefix(k, src+string(filepath.Separator)) {
			durable[k] = bytes.Clone(n.image)
			names[k] = n
		}
	}
	touched := make(map[string]bool, len(f.touched))
	for k := range f.touched {
		touched[k] = true
	}
	currentName := make(map[*faultNode]string)
	for k, n := range f.current {
		currentName[n] = k
	}

	write := func(rel string, data []byte) error {
		p := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o644)
	}
	for k, img := range durable {
		rel, err := filepath.Rel(src, k)
		if err != nil {
			return err
		}
		if opts.KeepUnsyncedPage != nil {
			if cur, ok := currentName[names[k]]; ok {
				if now, err := os.ReadFile(cur); err == nil {
					img = mergeUnsynced(k, img, now, opts.KeepUnsyncedPage)
				}
			}
		}
		if err := write(rel, img); err != nil {
			return err
		}
	}
	// Files the FS never touched are durable as they are.
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, rerr := filepath.Rel(src, p)
		if rerr != nil {
			return rerr
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if touched[p] {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("store: crash clone %s: %w", p, err)
		}
		return write(rel, data)
	})
}

func mergeUnsynced(path string, img, now []byte, keep func(string, int64) bool) []byte {
	out := img
	for off := 0; off < len(now); off += pageSize {
		end := min(off+pageSize, len(now))
		var old []byte
		if off < len(img) {
			old = img[off:min(end, len(img))]
		}
		if bytes.Equal(old, now[off:end]) || !keep(path, int64(off)) {
			continue
		}
		if len(out) < end {
			out = append(out, make([]byte, end-len(out))...)
		}
		copy(out[off:end], now[off:end])
	}
	return out
}

type faultFile struct {
	fs    *FS
	inner vfs.File
	node  *faultNode
	name  string
}

func (ff *faultFile) Name() string { return ff.inner.Name() }

func (ff *faultFile) ReadAt(b []byte, off int64) (int, error) {
	if err := ff.fs.check(OpRead, ff.name); err != nil {
		return 0, err
	}
	return ff.inner.ReadAt(b, off)
}

func (ff *faultFile) WriteAt(b []byte, off int64) (int, error) {
	if err := ff.fs.check(OpWrite, ff.name); err != nil {
		return 0, err
	}
	return ff.inner.WriteAt(b, off)
}

func (ff *faultFile) Truncate(size int64) error {
	if err := ff.fs.check(OpAllocate, ff.name); err != nil {
		return err
	}
	return ff.inner.Truncate(size)
}

func (ff *faultFile) Allocate(size int64) error {
	if err := ff.fs.check(OpAllocate, ff.name); err != nil {
		return err
	}
	return ff.inner.Allocate(size)
}

func (ff *faultFile) Stat() (os.FileInfo, error) { return ff.inner.Stat() }

func (ff *faultFile) Map(size int) ([]byte, error) {
	if err := ff.fs.check(OpMap, ff.name); err != nil {
		return nil, err
	}
	return ff.inner.Map(size)
}

func (ff *faultFile) Unmap(b []byte) error      { return ff.inner.Unmap(b) }
func (ff *faultFile) Populate(b []byte) error   { return ff.inner.Populate(b) }
func (ff *faultFile) Unpopulate(b []byte) error { return ff.inner.Unpopulate(b) }

func (ff *faultFile) AdviseHuge(b []byte, on bool) (int, error) {
	if err := ff.fs.check(OpAdvise, ff.name); err != nil {
		return 0, err
	}
	return ff.inner.AdviseHuge(b, on)
}

func (ff *faultFile) SyncMapped(mapped []byte, off, length int64) error {
	if err := ff.fs.check(OpSync, ff.name); err != nil {
		return err
	}
	if err := ff.inner.SyncMapped(mapped, off, length); err != nil {
		return err
	}
	if length == 0 {
		length = -1
	}
	return ff.fs.persist(ff, off, length)
}

func (ff *faultFile) MsyncRange(mapped []byte, off, length int64) error {
	if err := ff.fs.check(OpSync, ff.name); err != nil {
		return err
	}
	if err := ff.inner.MsyncRange(mapped, off, length); err != nil {
		return err
	}
	return ff.fs.persist(ff, off, length)
}

func (ff *faultFile) WriteSync(buf []byte, bufIndex int, off int64, sync bool) error {
	if err := ff.fs.check(OpWrite, ff.name); err != nil {
		return err
	}
	if sync {
		if err := ff.fs.check(OpSync, ff.name); err != nil {
			return err
		}
	}
	if err := ff.inner.WriteSync(buf, bufIndex, off, sync); err != nil {
		return err
	}
	if sync {
		return ff.fs.persist(ff, 0, -1)
	}
	return nil
}

func (ff *faultFile) Sync() error {
	if err := ff.fs.check(OpSync, ff.name); err != nil {
		return err
	}
	if err := ff.inner.Sync(); err != nil {
		return err
	}
	return ff.fs.persist(ff, 0, -1)
}

func (ff *faultFile) Close() error { return ff.inner.Close() }
