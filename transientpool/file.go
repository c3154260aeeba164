package transientpool

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"
)

// File-backed buffers (Config.Dir): each buffer is a file on a RAM-backed file system (tmpfs), mapped
// MAP_SHARED. Stores into a shared mapping of a tmpfs file live in the file's pages, not the process's,
// so the bytes a killed process appended (and acknowledged under ASYNC_FLUSH) outlive it, as the page
// cache of a CommitLog file does. They do not outlive the machine. The store's next start reads them
// back (Leftovers) and writes the acknowledged records into the CommitLog.
//
// Directory: <Config.Dir>/ringmq-pool-<16 hex digits of SHA-256(Config.Identity)>, so stores with other
// identities (CommitLog directories) never share files:
//
//	lock          flock'ed while a pool uses the directory
//	store         the identity, for an operator wondering whose directory this is
//	buffer-000    header page + BufferBytes of buffer, one file per buffer
//
// Header (the file's first page; native byte order: the file never leaves the machine):
//
//	 0  magic "RMQPOOL1"   8  version (uint32)   12  buffer index (uint32)
//	16  BufferBytes (int64)   24  identity hash (16 bytes)   40  data offset (int64) = page size
//	48  owner (int64): the start offset of the CommitLog file whose appends the buffer holds, -1 = none
//	64  published (int64): bytes from the buffer's start that the owner's puts have published
//	    (acknowledged); only these are ever restored
//
// Claim (at the roll that gives the buffer to a file) sets owner to -1, published to 0, then owner to
// the file; the store raises published as it publishes records; Return sets owner to -1. Stale bytes of
// a buffer's earlier owner therefore never lie below published under the new owner's name (and the
// store checks every record it restores anyway).

const (
	fileMagic      = "RMQPOOL1"
	fileVersion    = 1
	hdrIndex       = 12
	hdrBufferBytes = 16
	hdrIdentity    = 24
	hdrDataOffset  = 40
	hdrOwner       = 48
	hdrPublished   = 64
	hdrUsedBytes   = 72
	dirPrefix      = "ringmq-pool-"
	lockFileName   = "lock"
	storeFileName  = "store"
)

// DirFor is the directory under parent that a pool for identity uses (Config.Dir, Config.Identity).
func DirFor(parent, identity string) string {
	id := identityHash(identity)
	return filepath.Join(parent, dirPrefix+hex.EncodeToString(id[:8]))
}

func identityHash(identity string) [16]byte {
	sum := sha256.Sum256([]byte(identity))
	var h [16]byte
	copy(h[:], sum[:16])
	return h
}

func bufferFileName(i int) string { return fmt.Sprintf("buffer-%03d", i) }

func parseBufferFileName(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "buffer-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}

// fileBacking is the buffer files of a pool with Config.Dir: their mappings (header page + buffer),
// headers, buffer slices, and the directory's lock.
type fileBacking struct {
	dir      string
	lock     *os.File
	files    []*os.File
	mappings [][]byte
	headers  []header
	data     [][]byte
}

// header is a view of a buffer file's header page inside its shared mapping.
type header []byte

func (h header) owner() *atomic.Int64     { return (*atomic.Int64)(unsafe.Pointer(&h[hdrOwner])) }
func (h header) published() *atomic.Int64 { return (*atomic.Int64)(unsafe.Pointer(&h[hdrPublished])) }

// matches reports whether h is a header of this identity, buffer size and data offset.
func (h header) matches(id [16]byte, bufferBytes, dataOffset int64) bool {
	return len(h) >= hdrUsedBytes && string(h[:8]) == fileMagic &&
		binary.NativeEndian.Uint32(h[8:]) == fileVersion &&
		int64(binary.NativeEndian.Uint64(h[hdrBufferBytes:])) == bufferBytes &&
		[16]byte(h[hdrIdentity:hdrIdentity+16]) == id &&
		int64(binary.NativeEndian.Uint64(h[hdrDataOffset:])) == dataOffset
}

// init writes a fresh header: no owner.
func (h header) init(index int, id [16]byte, bufferBytes, dataOffset int64) {
	clear(h[:hdrUsedBytes])
	copy(h, fileMagic)
	binary.NativeEndian.PutUint32(h[8:], fileVersion)
	binary.NativeEndian.PutUint32(h[hdrIndex:], uint32(index))
	binary.NativeEndian.PutUint64(h[hdrBufferBytes:], uint64(bufferBytes))
	copy(h[hdrIdentity:], id[:])
	binary.NativeEndian.PutUint64(h[hdrDataOffset:], uint64(dataOffset))
	h.published().Store(0)
	h.owner().Store(-1)
}

// Claim records that the buffer now holds the appends of the CommitLog file starting at owner, with
// nothing published yet. Memory stores only (it runs under the store's put lock); a no-op for an
// anonymous buffer.
func (b *Buffer) Claim(owner int64) {
	if b.hdr == nil {
		return
	}
	b.hdr.owner().Store(-1)
	b.hdr.published().Store(0)
	b.hdr.owner().Store(owner)
}

// PublishedMark is the header word the borrower raises to the end of the bytes it has published (and may
// acknowledge); the next start restores bytes below it only. nil for an anonymous buffer, whose bytes
// die with the process.
func (b *Buffer) PublishedMark() *atomic.Int64 {
	if b.hdr == nil {
		return nil
	}
	return b.hdr.published()
}

// Leftover is a buffer file that a process which did not shut down cleanly left holding appends: Owner
// is the start offset of their CommitLog file, Published the end of the published bytes in the buffer.
type Leftover struct {
	Path       string
	Index      int
	Owner      int64
	Published  int64
	dataOffset int64
	f          *os.File
}

// ReadAt reads buffer bytes at off (a position in the CommitLog file).
func (l *Leftover) ReadAt(p []byte, off int64) (int, error) {
	return l.f.ReadAt(p, l.dataOffset+off)
}

// Leftovers are the owned buffers of one pool directory, read without mapping them (so a store opened
// without the pool, or with a smaller one, still finds them).
type Leftovers struct {
	Dir     string
	Buffers []*Leftover
}

// OpenLeftovers reads the headers of the buffer files in DirFor(parent, identity) and returns those that
// hold appends of a CommitLog of bufferBytes files: files of another identity or size, and free
// buffers, are left out. A missing directory is no error (nil, nil); one another user could have
// prepared is (ErrNotOwned), and none of its files is read. Close the result.
func OpenLeftovers(parent, identity string, bufferBytes int64) (*Leftovers, error) {
	dir := DirFor(parent, identity)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transientpool: list %s: %w", dir, err)
	}
	if err := checkDirOwner(dir); err != nil {
		return nil, err
	}
	id := identityHash(identity)
	ls := &Leftovers{Dir: dir}
	hdr := make(header, hdrUsedBytes)
	for _, e := range entries {
		idx, ok := parseBufferFileName(e.Name())
		if !ok || e.IsDir() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			_ = ls.Close()
			return nil, fmt.Errorf("transientpool: open %s: %w", path, err)
		}
		if _, err := f.ReadAt(hdr, 0); err != nil && !errors.Is(err, io.EOF) {
			_ = f.Close()
			_ = ls.Close()
			return nil, fmt.Errorf("transientpool: read header of %s: %w", path, err)
		}
		dataOffset := int64(binary.NativeEndian.Uint64(hdr[hdrDataOffset:]))
		owner := int64(binary.NativeEndian.Uint64(hdr[hdrOwner:]))
		published := int64(binary.NativeEndian.Uint64(hdr[hdrPublished:]))
		st, serr := f.Stat()
		if serr != nil || !hdr.matches(id, bufferBytes, dataOffset) || dataOffset <= 0 || owner < 0 ||
			published <= 0 || published > bufferBytes || st.Size() < dataOffset+published {
			_ = f.Close()
			continue
		}
		ls.Buffers = append(ls.Buffers, &Leftover{Path: path, Index: idx, Owner: owner, Published: published,
			dataOffset: dataOffset, f: f})
	}
	return ls, nil
}

// Close closes the files (they stay on disk).
func (ls *Leftovers) Close() error {
	var errs []error
	for _, l := range ls.Buffers {
		if l.f != nil {
			errs = append(errs, l.f.Close())
			l.f = nil
		}
	}
	return errors.Join(errs...)
}

// Release marks every leftover free, so that no later start restores its bytes again (the store calls
// it once they are in the CommitLog, or judged not to belong there). The pool may be using the files:
// the header word is written through the file, which shares its page with the pool's mapping.
func (ls *Leftovers) Release() error {
	var errs []error
	var none [8]byte
	binary.NativeEndian.PutUint64(none[:], uint64(1<<64-1)) // -1
	for _, l := range ls.Buffers {
		f, err := os.OpenFile(l.Path, os.O_WRONLY, 0)
		if err != nil {
			errs = append(errs, fmt.Errorf("transientpool: release %s: %w", l.Path, err))
			continue
		}
		if _, err := f.WriteAt(none[:], hdrOwner); err != nil {
			errs = append(errs, fmt.Errorf("transientpool: release %s: %w", l.Path, err))
		}
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// RemoveDir deletes a pool directory with its files: after a clean shutdown, or once the leftovers of a
// store that no longer uses the directory are dealt with.
func RemoveDir(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("transientpool: remove %s: %w", dir, err)
	}
	return nil
}
