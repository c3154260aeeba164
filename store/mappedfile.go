package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/transientpool"
)

// fileNameDigits is the width of CommitLog and ConsumeQueue file names (the start offset, zero-padded).
const fileNameDigits = 20

func offsetFileName(offset int64) string {
	s := strconv.FormatInt(offset, 10)
	if len(s) >= fileNameDigits {
		return s
	}
	return "00000000000000000000"[:fileNameDigits-len(s)] + s
}

func parseOffsetFileName(name string) (int64, bool) {
	if len(name) != fileNameDigits {
		return 0, false
	}
	v, err := strconv.ParseInt(name, 10, 64)
	return v, err == nil && v >= 0
}

// mappedFile is one fixed-size file mapped shared into memory: RocketMQ's MappedFile.
//
// Positions (bytes from the file start), each only ever growing except on recovery truncation:
//
//	flushed <= committed <= wrote <= size
//
// wrote advances when a record or entry is complete (its bytes are written before the store, so a reader
// that loads wrote sees them); committed is what readers may read — equal to wrote for files appended in
// the mapping, and the part moved out of the transient buffer otherwise; flushed is what is durable.
//
// Reference counting (RocketMQ's ReferenceResource): the owning queue holds one reference from creation;
// every reader holds one more between hold and release. destroy drops the owner's reference; the mapping
// is unmapped and the descriptor closed when the count reaches zero, never under a reader.
type mappedFile struct {
	file       File
	path       string
	fromOffset int64
	size       int64
	data       []byte // the mapping, size bytes
	logger     *slog.Logger

	// transient is set once, at the roll that makes the file current (before other goroutines can find
	// it): appends go into writeBuffer. Pulls and the dispatcher see committed bytes only; a read by
	// physical offset (readPublished) also sees what is published but not yet committed, from
	// writeBuffer, holding it (bufferRefs) so that it is not handed back to the pool under the reader.
	transient   bool
	writeBuffer *transientpool.Buffer // set once; its bytes are valid while bufferRefs > 0
	pool        bufferPool
	// bufferRefs counts the holders of writeBuffer: the file itself until the buffer is fully committed
	// (or the file is released), plus each reader of a record still in it. The last one returns the
	// buffer to the pool; after that no one can hold it again.
	bufferRefs    atomic.Int64
	bufferDropped atomic.Bool // the file's own reference on writeBuffer is gone
	// publishedMark is writeBuffer's header word for the published end when the buffer is a file that
	// outlives the process (transientpool file.go), nil otherwise: raised with wrote, it tells the next
	// start which of the buffer's bytes were acknowledged (poolrestore.go). Set once, with writeBuffer.
	publishedMark *atomic.Int64

	wrote          atomic.Int64
	committed      atomic.Int64
	flushed        atomic.Int64
	storeTimestamp atomic.Int64 // store time (ms) of the last record appended (checkpoint timestamps)
	populated      atomic.Int64 // bytes from the start pre-faulted: warmed when made, or by the prefaulter (CommitLog)
	pinned         atomic.Bool  // mlocked by warming (warmMappedFileMlock) until the writer leaves the file
	// prewritten is how many bytes from the start the allocator has written with zeros and synced
	// (prewrite.go). prewriteEnded is set when no zero may be written into the file any more (it became
	// current, or pre-writing it failed); prewriteMu is held while a piece of zeros is written, so the roll
	// can wait for it (endPrewrite).
	prewritten    atomic.Int64
	prewriteEnded atomic.Bool
	prewriteMu    sync.Mutex
	created       bool // openMappedFile made the file (it was empty): only such a file may be pre-written
	// hugeAdvised: the mapping is advised for huge pages (adviseHuge) until the writer is two files past
	// it (commitLog.unadviseCold). unmapGranule, set with it before the file is shared, is the huge page
	// size, so that flushes unmap whole huge pages only (0: the page size).
	hugeAdvised  atomic.Bool
	unmapGranule int64

	refs      atomic.Int64
	destroyed atomic.Bool
}

// bufferPool is the part of *transientpool.Pool the store uses.
type bufferPool interface {
	Borrow() (*transientpool.Buffer, bool)
	Return(*transientpool.Buffer)
	Available() int
}

// openMappedFile opens (creating when absent) and maps the file at path. A new or short file is allocated
// to size first, and only when the file system has the free space for it (checkRoom). The caller owns the
// returned file's single reference.
func openMappedFile(fsys FS, path string, fromOffset, size int64, logger *slog.Logger) (*mappedFile, error) {
	if err := checkRoom(fsys, path, size); err != nil {
		return nil, err
	}
	f, err := fsys.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	st, err := f.Stat()
	if err == nil && st.Size() < size {
		err = f.Allocate(size)
		if err == nil {
			// Make the size (and for a new file its name) durable now, off the hot path, so a crash never
			// leaves a short file behind records that were synced through the mapping.
			err = f.Sync()
		}
		if err == nil && st.Size() == 0 {
			err = fsys.SyncDir(filepath.Dir(path))
		}
	}
	if err == nil && st.Size() > size {
		err = fmt.Errorf("store: %s is %d bytes, larger than the configured file size %d", path, st.Size(), size)
	}
	if err != nil {
		_ = f.Close()
		if st != nil && st.Size() == 0 {
			// Created here (or empty anyway): a file that could not be allocated (ENOSPC) must not
			// stay behind, holding whatever blocks fallocate got and making the next Open allocate
			// it again on a disk that may still be full.
			_ = fsys.Remove(path)
		}
		return nil, fmt.Errorf("store: size %s: %w", path, err)
	}
	data, err := f.Map(int(size))
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	mf := &mappedFile{file: f, path: path, fromOffset: fromOffset, size: size, data: data, logger: logger,
		created: st.Size() == 0}
	mf.refs.Store(1)
	return mf, nil
}

// checkRoom fails with an ENOSPC-class error (flush.ErrNoSpace), without creating anything, when the file
// at path would need more blocks to reach size than the file system has free. A fallocate that cannot
// fit does not fail at once: it takes every free block first (tmpfs gives them back when it fails; ext4
// and xfs keep them until the file is removed), so for that moment the disk is completely full. Every
// other writer then meets ENOSPC (the checkpoint, a ConsumeQueue file), and the disk guard, sampling
// it, read 100 % on a file system 83 % used (issue 14). The allocator retries after every retention
// pass while the disk is short: each retry did that again, and left the file briefly in the directory.
// When the usage is unknown, the allocation is tried.
func checkRoom(fsys FS, path string, size int64) error {
	st, err := fsys.Stat(path)
	switch {
	case err == nil && st.Size() >= size:
		return nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil // OpenFile reports it
	}
	need := size
	if err == nil {
		need -= st.Size()
	}
	usage, err := fsys.DiskUsage(filepath.Dir(path))
	if err != nil || usage.FreeBytes >= uint64(need) {
		return nil
	}
	return fmt.Errorf("store: size %s: %d bytes needed, %d free: %w", path, need, usage.FreeBytes, flush.ErrNoSpace)
}

// useTransientBuffer switches a fresh file to appending into a pool buffer, and names the file in the
// buffer's header (a file-backed buffer's, for the next start's recovery). Memory stores only.
func (mf *mappedFile) useTransientBuffer(pool bufferPool, buf *transientpool.Buffer) {
	buf.Claim(mf.fromOffset)
	mf.transient, mf.pool, mf.writeBuffer = true, pool, buf
	mf.publishedMark = buf.PublishedMark()
	mf.bufferRefs.Store(1)
}

// markPublished raises the buffer header's published end to end (a file-backed pool buffer's only).
func (mf *mappedFile) markPublished(end int64) {
	if m := mf.publishedMark; m != nil {
		storeMax(m, end)
	}
}

// holdBuffer takes a reader reference on writeBuffer; false once the buffer went back to the pool (the
// whole file is committed then: read the mapping).
func (mf *mappedFile) holdBuffer() bool {
	if !mf.transient {
		return false
	}
	for {
		r := mf.bufferRefs.Load()
		if r <= 0 {
			return false
		}
		if mf.bufferRefs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// releaseBuffer drops a reference on writeBuffer; the last one returns it to the pool.
func (mf *mappedFile) releaseBuffer() {
	r := mf.bufferRefs.Add(-1)
	if r < 0 {
		panic("store: transient buffer released more often than held: " + mf.path)
	}
	if r == 0 {
		mf.pool.Return(mf.writeBuffer)
	}
}

// publishedView is where the file's published bytes [0, need) can be read, need <= wrote: the mapping
// when the committed position covers them, else the transient pool buffer, held until release (unless it
// went back to the pool meanwhile: then the whole file is committed and the mapping has them). release
// also drops the caller's reference on the file. Read by physical offset and by the HA transfer.
func (mf *mappedFile) publishedView(need int64) (b []byte, release func()) {
	if b, fromBuffer := mf.view(need); fromBuffer {
		return b, mf.releaseWithBuffer
	}
	return mf.data, mf.release
}

// view is publishedView without a release func (no allocation): fromBuffer says the pool buffer is
// held (mf.releaseBuffer when done). The caller holds the file.
func (mf *mappedFile) view(need int64) (b []byte, fromBuffer bool) {
	if need <= mf.readPosition() || !mf.holdBuffer() {
		return mf.data, false
	}
	return mf.writeBuffer.Bytes()[:mf.size], true
}

// releaseWithBuffer drops a reader's references on writeBuffer and on the file.
func (mf *mappedFile) releaseWithBuffer() {
	mf.releaseBuffer()
	mf.release()
}

// dropBuffer drops the file's own reference on writeBuffer, once.
func (mf *mappedFile) dropBuffer() {
	if mf.transient && mf.bufferDropped.CompareAndSwap(false, true) {
		mf.releaseBuffer()
	}
}

// appendTarget is where appends go: the pool buffer or the mapping. Caller is the single appender.
func (mf *mappedFile) appendTarget() []byte {
	if mf.transient {
		return mf.writeBuffer.Bytes()[:mf.size]
	}
	return mf.data
}

// readPosition is the end of what readers may read.
func (mf *mappedFile) readPosition() int64 {
	if mf.transient {
		return mf.committed.Load()
	}
	return mf.wrote.Load()
}

func (mf *mappedFile) isFull() bool { return mf.wrote.Load() == mf.size }

// hold takes a reader reference; false when the file is being destroyed.
func (mf *mappedFile) hold() bool {
	for {
		r := mf.refs.Load()
		if r <= 0 || mf.destroyed.Load() {
			return false
		}
		if mf.refs.CompareAndSwap(r, r+1) {
			return true
		}
	}
}

// release drops a reference; the last one unmaps and closes.
func (mf *mappedFile) release() {
	r := mf.refs.Add(-1)
	if r > 0 {
		return
	}
	if r < 0 {
		panic("store: mappedFile released more often than held: " + mf.path)
	}
	if err := mf.file.Unmap(mf.data); err != nil {
		mf.logger.Error("store: munmap failed", "file", mf.path, "error", err)
	}
	if err := mf.file.Close(); err != nil {
		mf.logger.Error("store: close failed", "file", mf.path, "error", err)
	}
	mf.dropBuffer()
}

// destroy drops the owner's reference; with remove the file is unlinked at once (a mapping outlives its
// name, so readers still holding it keep reading). Idempotent.
func (mf *mappedFile) destroy(fsys FS, remove bool) error {
	if !mf.destroyed.CompareAndSwap(false, true) {
		return nil
	}
	var err error
	if remove {
		if rerr := fsys.Remove(mf.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = fmt.Errorf("store: remove %s: %w", mf.path, rerr)
		}
	}
	mf.release()
	return err
}

// ableTo reports whether [done, target) is worth a flush or commit: leastPages whole pages, or anything
// once the file is full or leastPages is 0.
func (mf *mappedFile) ableTo(done, target int64, leastPages int) bool {
	if target <= done {
		return false
	}
	if target == mf.size || leastPages <= 0 {
		return true
	}
	return target/int64(pageSize)-done/int64(pageSize) >= int64(leastPages)
}

// commit moves [committed, wrote) from the transient buffer into the file (without sync), and returns the
// buffer to the pool once the file is full and committed. Caller serializes commits and flushes.
func (mf *mappedFile) commit(leastPages int) error {
	if !mf.transient {
		return nil
	}
	committed, wrote := mf.committed.Load(), mf.wrote.Load()
	if !mf.ableTo(committed, wrote, leastPages) {
		return nil
	}
	buf := mf.writeBuffer.Bytes()
	if err := mf.file.WriteSync(buf[committed:wrote], mf.writeBuffer.Index(), committed, false); err != nil {
		return fmt.Errorf("store: commit %s [%d, %d): %w", mf.path, committed, wrote, err)
	}
	mf.committed.Store(wrote)
	return nil
}

// flush makes [flushed, readPosition) durable when ableTo says so. Caller serializes commits and flushes.
func (mf *mappedFile) flush(leastPages int) error { return mf.flushPages(leastPages, nil) }

// flushPages is flush; while unpopulate is set (a file appended through its mapping) the whole pages it
// makes durable are unmapped from the process first (File.Unpopulate). Writeback write-protects each
// dirty page it writes, and a page still mapped writable costs a TLB flush on every CPU the process
// runs on, page by page (ext4: mpage_map_and_submit_buffers → folio_mkclean); unmapped first, the whole
// range costs one. The last page, while it is still being appended to, stays mapped. An access
// afterwards maps the page again; its content never changes. A refusal (an mlocked mapping,
// warmMappedFileMlock; a kernel or platform without it) clears unpopulate for good: only the sync below
// matters for durability.
func (mf *mappedFile) flushPages(leastPages int, unpopulate *atomic.Bool) error {
	target, flushed := mf.readPosition(), mf.flushed.Load()
	if !mf.ableTo(flushed, target, leastPages) {
		return nil
	}
	var err error
	if mf.transient {
		err = mf.file.Sync()
	} else {
		if unpopulate != nil && unpopulate.Load() && mf.unpopulateWritten(flushed, target) != nil {
			unpopulate.Store(false)
		}
		err = mf.file.SyncMapped(mf.data, flushed, target-flushed)
	}
	if err != nil {
		return fmt.Errorf("store: flush %s [%d, %d): %w", mf.path, flushed, target, err)
	}
	mf.flushed.Store(target)
	return nil
}

// adviseHuge advises the mapping of a CommitLog file appended through it for huge pages (File.AdviseHuge),
// before the file is shared. Where the page cache keeps large folios (ext4, xfs) the prefaulter then
// populates 2 MiB folios mapped whole, and the put's copy, the dispatcher and readers touch one
// page-table entry per 2 MiB instead of 512. The copy into small pages cost 0.7 µs per 1 KiB record on
// the machine of BENCHMARKS.md (a VM whose guest page tables are shadowed by the host: each new small
// page's first touch is a trip to the hypervisor); 0.3 µs with huge pages (BENCHMARKS.md). Without
// support, or in a file smaller than a huge page, nothing changes.
func (mf *mappedFile) adviseHuge() {
	if mf.size < 2<<20 { // a huge page is 2 MiB or more
		return
	}
	if size, err := mf.file.AdviseHuge(mf.data, true); err == nil && int64(size) <= mf.size {
		mf.unmapGranule = int64(size)
		mf.hugeAdvised.Store(true)
	}
}

// unpopulateWritten unmaps the whole pages of [from, to), to being where appends go on (the page it lies in
// stays mapped unless to is the file's end): the part of a file flushPages (or the IndexFile's flush) is
// about to sync and that is not written again. In a mapping advised for huge pages the pages are huge
// ones: unmapping part of one would split its mapping into small pages for the rest of it.
func (mf *mappedFile) unpopulateWritten(from, to int64) error {
	granule := max(int64(pageSize), mf.unmapGranule)
	start := from &^ (granule - 1)
	if to < mf.size {
		to &^= granule - 1
	}
	if to <= start {
		return nil
	}
	return mf.file.Unpopulate(mf.data[start:to])
}

// commitAndSync moves and syncs everything appended in one durable write (io_uring: WRITE_FIXED linked to
// fdatasync). Transient files only. Caller serializes commits and flushes.
func (mf *mappedFile) commitAndSync() error {
	committed, wrote := mf.committed.Load(), mf.wrote.Load()
	if wrote == committed {
		return mf.flush(0)
	}
	buf := mf.writeBuffer.Bytes()
	if err := mf.file.WriteSync(buf[committed:wrote], mf.writeBuffer.Index(), committed, true); err != nil {
		return fmt.Errorf("store: commit+sync %s [%d, %d): %w", mf.path, committed, wrote, err)
	}
	mf.committed.Store(wrote)
	mf.flushed.Store(wrote)
	return nil
}

// releaseBufferIfDone hands the transient buffer back once the whole file is committed (later, when a
// reader still holds it).
func (mf *mappedFile) releaseBufferIfDone() {
	if mf.transient && mf.committed.Load() == mf.size {
		mf.dropBuffer()
	}
}

// setPositions resets every position to pos (recovery).
func (mf *mappedFile) setPositions(pos int64) {
	mf.wrote.Store(pos)
	mf.committed.Store(pos)
	mf.flushed.Store(pos)
}

// zeroFrom clears [pos, size), so bytes of a torn or truncated tail can never be read back as records or
// entries after a later crash. Where the file system says which stretches hold data (DataExtents), only
// those are read: the never-written rest of a 1 GiB CommitLog file reads as zeros anyway, and reading it
// through the mapping faulted in every page (0.4-1.2 s of a broker's start, and of a role change in
// controller mode).
func (mf *mappedFile) zeroFrom(pos int64) bool {
	ext, ok := mf.file.(interface {
		DataExtents(from, to int64) [][2]int64
	})
	if !ok {
		return clearNonZero(mf.data[pos:])
	}
	changed := false
	for _, e := range ext.DataExtents(pos, mf.size) {
		if clearNonZero(mf.data[e[0]:e[1]]) {
			changed = true
		}
	}
	return changed
}

// clearNonZero zeroes b chunk by chunk, writing only chunks that are not zero already: never-written
// (sparse or unwritten) pages of a mapping are then only read, not dirtied.
func clearNonZero(b []byte) (changed bool) {
	const chunk = 64 << 10
	var zero [chunk]byte
	for off := 0; off < len(b); {
		end := min(off+chunk, len(b))
		if !bytes.Equal(b[off:end], zero[:end-off]) {
			clear(b[off:end])
			changed = true
		}
		off = end
	}
	return changed
}

// touchPages dirties one byte per page, to fault a mapping in where MADV_POPULATE_WRITE is missing.
func touchPages(b []byte) {
	for i := 0; i < len(b); i += pageSize {
		b[i] = 0
	}
}
