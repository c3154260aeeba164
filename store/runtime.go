package store

import "github.com/ringmq/ringmq/flush"

// Runtime is what an opened store really runs with where that can differ from its Config, and
// the sizes its files take: the broker's startup summary says it once, so an operator learns
// at start that io_uring fell back to fdatasync or that the pool is not pinned.
type Runtime struct {
	// FlushBackend is the backend in use (after a fallback); 0 when the store was opened on a
	// Deps.FS (tests).
	FlushBackend flush.Kind
	// FlushFallback says why FlushBackend is not Config.FlushBackend, "" when it is.
	FlushFallback string
	// TransientStorePool: appends go into the pool's buffers and are committed to the file;
	// otherwise they are copied into the file's mapping.
	TransientStorePool bool
	// TransientStorePoolDir is the directory of the pool's buffer files on tmpfs, whose bytes survive a
	// crash of the process; "" when the buffers are anonymous memory (transientStorePoolDir=off, or the
	// directory was missing, not tmpfs or too small: then a process crash loses what was acknowledged
	// but not committed).
	TransientStorePoolDir string
	// Pinned: the pool's buffers are locked in RAM (mlock). Without the pool: whether warmed
	// CommitLog files are pinned while written (warmMapedFileEnable with warmMappedFileMlock).
	Pinned bool
	// PreallocatedFiles is how many CommitLog files the allocator keeps ready beyond the one
	// being written (each mappedFileSizeCommitLog bytes on disk, fallocated).
	PreallocatedFiles int
	// IndexFileBytes is the size of one IndexFile (0 with messageIndexEnable=false).
	IndexFileBytes int64
	// The directories, resolved from storePathRootDir.
	CommitLogDir, ConsumeQueueDir, IndexDir string
}

// Runtime returns what the store runs with. Safe for concurrent use; valid from Open.
func (s *Store) Runtime() Runtime {
	r := Runtime{TransientStorePool: s.pool != nil, PreallocatedFiles: standbyFiles,
		CommitLogDir: s.cfg.commitLogDir(), ConsumeQueueDir: s.cfg.consumeQueueDir(), IndexDir: s.cfg.indexDir()}
	if s.backend != nil {
		r.FlushBackend = s.backend.Kind()
		if err := flush.FallbackReason(s.backend); err != nil {
			r.FlushFallback = err.Error()
		}
	}
	if s.pool != nil {
		r.Pinned = s.pool.Pinned()
		r.TransientStorePoolDir = s.pool.Dir()
	} else {
		r.Pinned = s.cfg.WarmMappedFileEnable && s.cfg.WarmMappedFileMlock
	}
	if s.index != nil {
		r.IndexFileBytes = indexFileBytes(s.cfg.MaxHashSlotNum, s.cfg.MaxIndexNum)
	}
	return r
}
