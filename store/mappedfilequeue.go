package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
)

// mappedFileQueue is an ordered run of equal-size mapped files named by their start offset: RocketMQ's
// MappedFileQueue. Readers load an immutable snapshot of the file list without locking (copy on write);
// changes (append, delete, truncate) take mu and publish a new snapshot. Each file's positions are its own
// atomics; the queue's owner (the put lock holder for the CommitLog, the dispatcher for ConsumeQueues)
// is the only appender.
type mappedFileQueue struct {
	dir      string
	fileSize int64
	fs       FS
	logger   *slog.Logger

	mu    sync.Mutex // serializes changes to files
	files atomic.Pointer[[]*mappedFile]

	// flushMu serializes flush and commit calls (interval flusher, group commit, shutdown).
	flushMu        sync.Mutex
	flushedWhere   atomic.Int64 // queue offset up to which bytes are durable
	committedWhere atomic.Int64 // queue offset up to which transient bytes reached the file
	// unpopulateFlushed: the files are appended through their mappings, and flush unmaps the pages it
	// makes durable (mappedFile.flushPages), until the kernel refuses once. Set by the owner before the
	// queue is used.
	unpopulateFlushed atomic.Bool
	// adviseHuge: files readied for appends (prepareForAppends) are advised for huge pages. Set by the
	// owner before the queue is used.
	adviseHuge bool
}

func newMappedFileQueue(fsys FS, dir string, fileSize int64, logger *slog.Logger) *mappedFileQueue {
	q := &mappedFileQueue{dir: dir, fileSize: fileSize, fs: fsys, logger: logger}
	empty := []*mappedFile{}
	q.files.Store(&empty)
	return q
}

// snapshot returns the current files; the slice must not be modified.
func (q *mappedFileQueue) snapshot() []*mappedFile { return *q.files.Load() }

// load opens every file of the directory in order. Positions are set to full; recovery corrects the tail.
// A gap between files or a file of the wrong size is an error, except a short last file (a crash right
// after creation), which is extended.
func (q *mappedFileQueue) load() error {
	entries, err := q.fs.ReadDir(q.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: list %s: %w", q.dir, err)
	}
	var files []*mappedFile
	fail := func(err error) error {
		for _, mf := range files {
			_ = mf.destroy(q.fs, false)
		}
		return err
	}
	for _, e := range entries {
		from, ok := parseOffsetFileName(e.Name())
		if !ok || e.IsDir() {
			continue // tmp files and foreign names are not ours to judge
		}
		if from%q.fileSize != 0 {
			return fail(fmt.Errorf("%w: %s: start offset %d is not a multiple of the file size %d",
				ErrCorruption, filepath.Join(q.dir, e.Name()), from, q.fileSize))
		}
		if n := len(files); n > 0 && files[n-1].fromOffset+q.fileSize != from {
			return fail(fmt.Errorf("%w: %s: gap after %s", ErrCorruption, e.Name(), files[n-1].path))
		}
		mf, err := openMappedFile(q.fs, filepath.Join(q.dir, e.Name()), from, q.fileSize, q.logger)
		if err != nil {
			return fail(err)
		}
		mf.setPositions(q.fileSize)
		files = append(files, mf)
	}
	if files == nil {
		files = []*mappedFile{}
	}
	q.files.Store(&files)
	return nil
}

func (q *mappedFileQueue) first() *mappedFile {
	fs := q.snapshot()
	if len(fs) == 0 {
		return nil
	}
	return fs[0]
}

func (q *mappedFileQueue) last() *mappedFile {
	fs := q.snapshot()
	if len(fs) == 0 {
		return nil
	}
	return fs[len(fs)-1]
}

// find returns the file holding offset, without a reference, or nil.
func (q *mappedFileQueue) find(offset int64) *mappedFile {
	fs := q.snapshot()
	if len(fs) == 0 || offset < fs[0].fromOffset {
		return nil
	}
	i := (offset - fs[0].fromOffset) / q.fileSize
	if i < int64(len(fs)) {
		if mf := fs[i]; mf.fromOffset <= offset && offset < mf.fromOffset+q.fileSize {
			return mf
		}
	}
	return nil
}

// findAndHold returns the file holding offset with a reader reference taken, or nil.
func (q *mappedFileQueue) findAndHold(offset int64) *mappedFile {
	for range 3 { // a concurrent delete may swap the list between load and hold
		mf := q.find(offset)
		if mf == nil {
			return nil
		}
		if mf.hold() {
			return mf
		}
	}
	return nil
}

// minOffset is the first file's start, or -1 without files.
func (q *mappedFileQueue) minOffset() int64 {
	if mf := q.first(); mf != nil {
		return mf.fromOffset
	}
	return -1
}

// maxReadOffset is the end of what readers may read.
func (q *mappedFileQueue) maxReadOffset() int64 {
	if mf := q.last(); mf != nil {
		return mf.fromOffset + mf.readPosition()
	}
	return 0
}

// maxWroteOffset is the end of what was appended.
func (q *mappedFileQueue) maxWroteOffset() int64 {
	if mf := q.last(); mf != nil {
		return mf.fromOffset + mf.wrote.Load()
	}
	return 0
}

// create opens a new file starting at from (not added to the queue).
func (q *mappedFileQueue) create(from int64) (*mappedFile, error) {
	if err := q.fs.MkdirAll(q.dir, 0o755); err != nil {
		return nil, fmt.Errorf("store: mkdir %s: %w", q.dir, err)
	}
	mf, err := openMappedFile(q.fs, filepath.Join(q.dir, offsetFileName(from)), from, q.fileSize, q.logger)
	if err == nil {
		q.prepareForAppends(mf)
	}
	return mf, err
}

// prepareForAppends readies mf, a new file or the one recovery found appends continue in, for appends
// through its mapping: the huge page advice, where the owner asked for it (adviseHuge).
func (q *mappedFileQueue) prepareForAppends(mf *mappedFile) {
	if q.adviseHuge {
		mf.adviseHuge()
	}
}

// add appends mf to the queue. It must start where the last file ends (or anywhere in an empty queue).
func (q *mappedFileQueue) add(mf *mappedFile) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	old := q.snapshot()
	if n := len(old); n > 0 && old[n-1].fromOffset+q.fileSize != mf.fromOffset {
		return fmt.Errorf("store: %s does not follow %s", mf.path, old[n-1].path)
	}
	next := make([]*mappedFile, len(old), len(old)+1)
	copy(next, old)
	next = append(next, mf)
	q.files.Store(&next)
	return nil
}

// removeFirst drops the first n files from the list and destroys them (unlinking the files).
func (q *mappedFileQueue) removeFirst(n int) error {
	q.mu.Lock()
	old := q.snapshot()
	n = min(n, len(old))
	gone := old[:n]
	next := slices.Clone(old[n:])
	q.files.Store(&next)
	q.mu.Unlock()
	var errs []error
	for _, mf := range gone {
		errs = append(errs, mf.destroy(q.fs, true))
	}
	return errors.Join(errs...)
}

// truncateFrom cuts the queue at offset: the file holding it keeps [from, offset) and is zeroed after it,
// later files are deleted. Positions are set to the cut. Recovery only (no concurrent appender).
func (q *mappedFileQueue) truncateFrom(offset int64) error {
	q.mu.Lock()
	old := q.snapshot()
	var keep, gone, cut []*mappedFile
	for _, mf := range old {
		end := mf.fromOffset + q.fileSize
		switch {
		case end <= offset:
			keep = append(keep, mf)
		case mf.fromOffset < offset || (mf.fromOffset == offset && offset > 0 && len(keep) == 0):
			// The file holding the cut (or, for a cut at a file start, that file when it is the first).
			pos := offset - mf.fromOffset
			mf.setPositions(pos)
			if mf.zeroFrom(pos) {
				// The zeros must reach the disk too, or a later crash could bring the cut bytes back.
				cut = append(cut, mf)
			}
			keep = append(keep, mf)
		default:
			gone = append(gone, mf)
		}
	}
	if keep == nil {
		keep = []*mappedFile{}
	}
	q.files.Store(&keep)
	q.mu.Unlock()
	var errs []error
	for _, mf := range cut {
		pos := mf.wrote.Load()
		errs = append(errs, mf.file.SyncMapped(mf.data, pos, mf.size-pos))
	}
	for _, mf := range gone {
		errs = append(errs, mf.destroy(q.fs, true))
	}
	if q.flushedWhere.Load() > offset {
		q.flushedWhere.Store(offset)
	}
	if q.committedWhere.Load() > offset {
		q.committedWhere.Store(offset)
	}
	return errors.Join(errs...)
}

// flush makes appended bytes durable, file by file from flushedWhere: RocketMQ's MappedFileQueue.flush.
// leastPages 0 flushes everything readable. It returns the new durable offset.
func (q *mappedFileQueue) flush(leastPages int) (int64, error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	return q.flushLocked(leastPages)
}

func (q *mappedFileQueue) flushLocked(leastPages int) (int64, error) {
	for {
		where := q.flushedWhere.Load()
		mf := q.findAndHold(where)
		if mf == nil {
			// flushedWhere may sit below the first file after retention, or at the very end.
			if first := q.first(); first != nil && where < first.fromOffset {
				q.flushedWhere.Store(first.fromOffset)
				continue
			}
			return where, nil
		}
		err := mf.flushPages(leastPages, &q.unpopulateFlushed)
		flushed := mf.fromOffset + mf.flushed.Load()
		full := mf.flushed.Load() == q.fileSize
		mf.release()
		if err != nil {
			return where, err
		}
		q.flushedWhere.Store(flushed)
		if !full || flushed == where {
			return flushed, nil
		}
		// A full file is done: go on with the next, so one call covers a roll.
	}
}

// commit moves transient bytes into the files from committedWhere on. Returns the new committed offset.
func (q *mappedFileQueue) commit(leastPages int) (int64, error) {
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	return q.commitLocked(leastPages)
}

func (q *mappedFileQueue) commitLocked(leastPages int) (int64, error) {
	for {
		where := q.committedWhere.Load()
		mf := q.findAndHold(where)
		if mf == nil {
			if first := q.first(); first != nil && where < first.fromOffset {
				q.committedWhere.Store(first.fromOffset)
				continue
			}
			return where, nil
		}
		var err error
		if mf.transient {
			err = mf.commit(leastPages)
		} else if w := mf.wrote.Load(); w > mf.committed.Load() {
			mf.committed.Store(w)
		}
		committed := mf.fromOffset + mf.committed.Load()
		full := mf.committed.Load() == q.fileSize
		if full {
			mf.releaseBufferIfDone()
		}
		mf.release()
		if err != nil {
			return where, err
		}
		q.committedWhere.Store(committed)
		if !full || committed == where {
			return committed, nil
		}
	}
}

// destroyAll unmaps every file (deleting them with remove). Shutdown and topic deletion.
func (q *mappedFileQueue) destroyAll(remove bool) error {
	q.mu.Lock()
	old := q.snapshot()
	empty := []*mappedFile{}
	q.files.Store(&empty)
	q.mu.Unlock()
	var errs []error
	for _, mf := range old {
		errs = append(errs, mf.destroy(q.fs, remove))
	}
	return errors.Join(errs...)
}
