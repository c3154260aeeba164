package store

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/transientpool"
)

// The allocator goroutine (RocketMQ's AllocateMappedFileService): it keeps standbyFiles CommitLog files
// prepared after the current one (created, fallocated, mapped, optionally warmed, and under SYNC_FLUSH
// pre-written: prewrite.go), so that a roll only takes the head of the queue.

// standbyCount is how many prepared files wait in the queue.
func (cl *commitLog) standbyCount() int {
	cl.allocMu.Lock()
	defer cl.allocMu.Unlock()
	return len(cl.standbys)
}

// standbyFiles is how many files the allocator keeps ready beyond the current one.
const standbyFiles = 2

// allocateStandby prepares one more file after the last one (mfq's, or the queue's) unless
// standbyFiles are ready or one is being created. Allocator goroutine only (and Start).
func (cl *commitLog) allocateStandby() (made bool, err error) {
	cl.allocMu.Lock()
	if len(cl.standbys) >= standbyFiles || cl.creating >= 0 {
		cl.allocMu.Unlock()
		return false, nil
	}
	var from int64
	if n := len(cl.standbys); n > 0 {
		from = cl.standbys[n-1].fromOffset + cl.standbys[n-1].size
	} else if last := cl.mfq.last(); last != nil {
		from = last.fromOffset + last.size
	} else {
		from = cl.maxOffset.Load() - cl.maxOffset.Load()%cl.cfg.MappedFileSizeCommitLog
	}
	// Whole-file warming is for what the prefault window cannot do: writing the zeros to the disk under
	// SYNC_FLUSH, pinning the file, and kernels without MADV_POPULATE_WRITE. Otherwise (mmap appends under
	// ASYNC_FLUSH) the window populates the same pages at the writer's pace; populating the whole file
	// here, right after the roll, made the puts around rolls slower (p99.9 1.4× steady in
	// BenchmarkPutRoll). With the transient pool appends never touch the mapping, so warming only serves
	// SYNC_FLUSH's durable writes (under ASYNC_FLUSH it cost 30 % of the put rate).
	warm := cl.cfg.WarmMappedFileEnable && (cl.cfg.FlushDiskType == SyncFlush ||
		cl.pool == nil && (cl.cfg.WarmMappedFileMlock || cl.prefaultOff.Load()))
	// Without MADV_POPULATE_WRITE, warming writes a zero into every page (RocketMQ's way): only safe
	// before the file can become current, so it runs before the file joins the queue.
	var touch func(*mappedFile)
	if warm && cl.prefaultOff.Load() {
		touch = func(mf *mappedFile) {
			cl.warm(mf, true, func(b []byte) error { touchPages(b); return nil })
		}
	}
	mf, err := cl.createLocked(from, touch)
	if err != nil {
		cl.allocMu.Unlock()
		return false, err
	}
	mf.hold() // for the warming below, which may overlap the file's first appends
	cl.standbys = append(cl.standbys, mf)
	cl.allocMu.Unlock()
	defer cl.kickPrefaulter() // it stops at the end of the files: the window may reach into this one
	defer mf.release()
	switch {
	case touch != nil:
	case cl.cfg.Slave && !warm:
		// A slave's appends are pwrites (replica.go), not copies into the mapping: populating would only
		// bring large zeroed folios and writable mappings (TLB shootdowns at every flush) for nothing.
	case warm:
		// Outside allocMu and after the file joined the queue: a roll must never wait for the warming,
		// and MADV_POPULATE_WRITE leaves the content alone, so appends may already run in the file.
		cl.warm(mf, true, mf.file.Populate)
	default:
		// The first chunk only, so the put that rolls into the file and those right after it find
		// their pages even when the prefaulter is late (a fault on a fresh page of a preallocated file
		// costs 0.3–6 ms here); the prefaulter populates the rest of its window as the writer nears
		// the file, at the writer's pace. Populating the whole window here, right after the roll that
		// woke the allocator, put a burst of page zeroing next to the roll.
		cl.warm(mf, false, mf.file.Populate)
	}
	return true, nil
}

// warm prepares mf's pages: all of them when whole (warmMapedFileEnable), else the first chunk. fill
// populates a stretch of them for writing (Populate, or touchPages before the file can become current),
// flushLeastPagesWhenWarmMapedFile pages at a time. A whole warming under SYNC_FLUSH also syncs each
// stretch (RocketMQ forces the mapping every so many pages while warming): the zeros reach the disk and
// fallocate's unwritten extents become written ones, so the group commit's syncs of the file write data
// only, with no extent conversion to journal (that doubles the cost of a small write+fdatasync here:
// issue 4's fio figures); with warmMappedFileMlock it pins the file last. On a failure the file stays as
// far as it got: a kernel without MADV_POPULATE_WRITE turns prefaulting off (the next files are touched
// before they join the queue); other errors are logged.
func (cl *commitLog) warm(mf *mappedFile, whole bool, fill func([]byte) error) {
	size, step := min(prefaultChunk, mf.size), int64(0)
	if whole {
		size, step = mf.size, int64(cl.cfg.FlushLeastPagesWhenWarmMappedFile)*int64(pageSize)
	}
	if step <= 0 {
		step = size
	}
	var err error
	for off := int64(0); off < size && err == nil; off += step {
		end := min(off+step, size)
		if err = fill(mf.data[off:end]); err != nil {
			break
		}
		storeMax(&mf.populated, end)
		if whole && cl.cfg.FlushDiskType == SyncFlush && !cl.prewriting() { // else pre-writing syncs the zeros
			err = mf.file.MsyncRange(mf.data, off, end-off)
		}
	}
	switch {
	case err == nil:
		if whole && cl.cfg.WarmMappedFileMlock {
			cl.pinFile(mf)
		}
	case errors.Is(err, errors.ErrUnsupported):
		cl.prefaultOff.Store(true)
	default:
		cl.logger.Warn("store: warming a CommitLog file failed; it is used as far as it got", "file", mf.path,
			"error", err)
	}
}

// pinFile mlocks a warmed file (warmMappedFileMlock) until the writer leaves it (unpinLeft). A failure
// is logged once per store, with what to raise, and leaves the file unpinned.
func (cl *commitLog) pinFile(mf *mappedFile) {
	if err := cl.pin(mf.data); err != nil {
		if !cl.pinWarned.Swap(true) {
			need := (1 + standbyFiles) * mf.size // the current file and the prepared ones
			cl.logger.Warn("store: mlock of a warmed CommitLog file failed; warmed files stay unpinned",
				"file", mf.path, "error", err, "RLIMIT_MEMLOCK", transientpool.MemlockLimit(), "needBytes", need,
				"fix", fmt.Sprintf("allow %d KiB with `ulimit -l`, LimitMEMLOCK=infinity in a systemd unit or "+
					"`docker run --ulimit memlock=-1:-1`; or set warmMappedFileMlock=false", (need+1023)/1024))
		}
		return
	}
	mf.pinned.Store(true)
}

// unpinLeft munlocks the pinned files the writer has left (allocator goroutine, woken by every roll), so
// at most the current file and the prepared ones stay pinned.
func (cl *commitLog) unpinLeft() {
	cl.undoLeft(0, func(mf *mappedFile) *atomic.Bool { return &mf.pinned }, func(mf *mappedFile) {
		if err := cl.unpin(mf.data); err != nil {
			cl.logger.Warn("store: munlock of a CommitLog file failed", "file", mf.path, "error", err)
		}
	})
}

// unadviseCold withdraws the huge page advice (mappedFile.adviseHuge) from the files the writer has left
// two files behind (allocator goroutine, woken by every roll). While a file is recent its readers (the
// dispatcher, consumers keeping up) find its large folios in the page cache and map them whole. Pages
// read back into the page cache later (a consumer far behind, a query by key) come by readahead, which
// under the advice reads two huge pages per fault; without it, the usual window.
//
// The withdrawal maps the file again over its mapping (File.AdviseHuge). Linux clears a file mapping's
// page tables before it sets up the one replacing it, and when that then fails (no memory for the new
// mapping, or a file system shut down after I/O errors) it leaves the range unmapped, not the old mapping:
// a later read of the file would fault and end the process. So a failure is tried once more (mapping over
// the range maps it again), and if that fails too it is logged as an error naming the file.
func (cl *commitLog) unadviseCold() {
	cl.undoLeft(1, func(mf *mappedFile) *atomic.Bool { return &mf.hugeAdvised }, func(mf *mappedFile) {
		_, err := mf.file.AdviseHuge(mf.data, false)
		if err == nil || errors.Is(err, errors.ErrUnsupported) {
			return
		}
		if _, again := mf.file.AdviseHuge(mf.data, false); again != nil {
			cl.logger.Error("store: mapping a CommitLog file again without the huge page advice failed twice; "+
				"its mapping may be gone, and a read of this file would end the process",
				"file", mf.path, "error", err, "retryError", again)
			return
		}
		cl.logger.Warn("store: mapping a CommitLog file again without the huge page advice failed once; the retry mapped it",
			"file", mf.path, "error", err)
	})
}

// undoLeft runs undo once for each CommitLog file that the writer has left more than behind files ago
// (0: every file before the current one) and whose flag is still set, clearing the flag, with the file
// held so that retention cannot unmap it meanwhile.
func (cl *commitLog) undoLeft(behind int64, flag func(*mappedFile) *atomic.Bool, undo func(*mappedFile)) {
	written := cl.maxOffset.Load()
	for _, mf := range cl.mfq.snapshot() {
		if mf.fromOffset+(behind+1)*mf.size > written {
			break
		}
		if f := flag(mf); f.Load() && mf.hold() {
			if f.CompareAndSwap(true, false) {
				undo(mf)
			}
			mf.release()
		}
	}
}

// allocatorLoop keeps standbyFiles files ready: RocketMQ's AllocateMappedFileService.
// It also reports transient pool fallbacks, which the roll only counts (under the put lock).
func (cl *commitLog) allocatorLoop(stop <-chan struct{}) {
	var fallbacksLogged int64
	// Pre-writing goes a chunk per pass, paced by pace (nil while no chunk is due later): rolls' wakes
	// are served between chunks, so creating the next file never waits for pre-writing.
	paceTimer := time.NewTimer(time.Hour)
	paceTimer.Stop()
	defer paceTimer.Stop()
	var pace <-chan time.Time
	for {
		select {
		case <-stop:
			return
		case <-cl.allocWake:
		case <-pace:
			pace = nil
		}
		if cl.cfg.WarmMappedFileMlock {
			cl.unpinLeft()
		}
		cl.unadviseCold()
		if n := cl.poolFallbacks.Load(); n != fallbacksLogged {
			cl.logger.Warn("store: transient store pool exhausted, CommitLog files appending into the mapping",
				"files", n-fallbacksLogged, "total", n)
			fallbacksLogged = n
		}
		for {
			made, err := cl.allocateStandby()
			ready := cl.standbyCount()
			if err != nil {
				cl.logger.Error("store: preallocating a CommitLog file failed", "ready", ready, "error", err)
			}
			// Only a failure that leaves no prepared file counts for the disk guard: while one is ready
			// the next roll still has its file, and puts go on.
			if made || (err != nil && ready == 0) {
				cl.onAllocResult(err)
			}
			if !made {
				break
			}
			select {
			case <-stop:
				return
			default:
			}
		}
		if pace == nil && cl.prewriting() {
			if idle, more := cl.prewriteStep(); more {
				paceTimer.Reset(idle)
				pace = paceTimer.C
			}
		}
	}
}

func (cl *commitLog) wakeAllocator() {
	select {
	case cl.allocWake <- struct{}{}:
	default:
	}
}

// dropStandby deletes the prepared files (shutdown: leave no empty file behind).
func (cl *commitLog) dropStandby() error {
	cl.allocMu.Lock()
	defer cl.allocMu.Unlock()
	return cl.dropStandbysLocked()
}
