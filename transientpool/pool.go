// Package transientpool keeps a fixed set of pinned, off-heap write buffers for the CommitLog: RocketMQ's
// TransientStorePool.
//
// With transientStorePoolEnable=true a CommitLog file does not take its appends in the file mapping. The
// store borrows one buffer of the file's size, encodes records into it, and a commit step later moves the
// dirty range into the file (flush.Backend.WriteSync: io_uring WRITE_FIXED from the registered buffer, or
// pwrite); until then readers read the records from the buffer. Appends therefore never fault on file
// pages or wait behind writeback of the page cache. With Config.Dir the buffers are files on tmpfs
// whose bytes outlive a crash of the process (file.go); without, anonymous memory that dies with it.
//
// Memory:
//
//	Buffers × BufferBytes, each buffer its own mapping: with Config.Dir a file on tmpfs mapped MAP_SHARED
//	(file.go: its bytes outlive a crash of the process), else mmap(MAP_ANONYMOUS|MAP_PRIVATE)
//	  ┌──────────── buffer 0 ────────────┐ ┌──────────── buffer 1 ────────────┐
//	  │ mlock'ed, outside the Go heap     │ │ ...                               │  ... N-1
//	  └───────────────────────────────────┘ └───────────────────────────────────┘
//	  Index() 0 = io_uring fixed-buffer slot 0, and so on (FixedBuffers keeps that order).
//
// Every buffer is mapped and locked in New and never grows; Borrow and Return move a preallocated
// *Buffer between a free stack and its owner without allocating. When mlock fails (RLIMIT_MEMLOCK, common in
// containers) New fails with ErrMemlock, whose text names the limit, the amount needed and how to raise it;
// Config.Pinned=false (transientStorePoolPinned=false) accepts unpinned buffers instead, with one warning.
//
// Contract for the caller:
//   - A borrowed buffer belongs to the borrower until Return. Its bytes stay valid until the Pool is closed;
//     Close refuses while any buffer is out, so a mapping is never unmapped under a user.
//   - Returning a buffer twice, or a buffer of another pool, is a programmer error and panics (a broken
//     invariant; see STYLE.md §3). Leaks show up as ErrBuffersBorrowed from Close, never through finalizers.
//   - When the buffers are registered with an io_uring ring (flush.Open with the pool as registrar), close
//     the flush backend before the pool so the ring drops its page references first.
//
// A Pool is safe for concurrent use.
package transientpool

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
)

// Sentinel errors. Check with errors.Is.
var (
	// ErrMemlock reports that the buffers could not be pinned with mlock. The wrapping error names
	// RLIMIT_MEMLOCK, the bytes needed, the current limit and the ways to raise it.
	ErrMemlock = errors.New("transientpool: cannot pin buffers in memory")
	// ErrPinUnsupported reports Pinned=true on a platform where this package cannot mlock.
	ErrPinUnsupported = errors.New("transientpool: pinning buffers is not supported on this platform")
	// ErrBuffersBorrowed is returned by Close while buffers are still borrowed (a leak).
	ErrBuffersBorrowed = errors.New("transientpool: buffers still borrowed")
	// ErrClosed is returned by Close on a pool that is already closed.
	ErrClosed = errors.New("transientpool: pool closed")
	// ErrConfig reports an invalid Config field; the wrapping error names the field.
	ErrConfig = errors.New("transientpool: invalid config")
	// ErrNotOwned reports a pool directory this process must not trust: not a directory of its own user,
	// or writable by others. The pool then runs on anonymous buffers; leftovers there are not read.
	ErrNotOwned = errors.New("transientpool: pool directory not owned by this user")
)

// Limits enforced by Validate.
const (
	// MaxBuffers bounds transientStorePoolSize. io_uring accepts at most 16,384 fixed buffers per ring; far
	// fewer are ever useful, since each buffer is as large as a CommitLog file.
	MaxBuffers = 1024
	// MaxIOURingBufferBytes is the largest buffer the kernel accepts as an io_uring fixed buffer (1 GiB).
	// Larger buffers are allowed; the flush backend then writes from them without the fixed-buffer path.
	MaxIOURingBufferBytes = 1 << 30
)

// Config configures a Pool. The zero value is not valid; start from DefaultConfig.
type Config struct {
	// Buffers is the number of buffers (transientStorePoolSize, default 5).
	Buffers int
	// BufferBytes is the size of each buffer, equal to the CommitLog file size
	// (mappedFileSizeCommitLog, default 1 GiB). It must be a positive multiple of the OS page size.
	BufferBytes int
	// Pinned requires mlock to succeed (transientStorePoolPinned, default true). With false, a failed mlock
	// is logged once and the buffers stay unpinned.
	Pinned bool
	// Dir (transientStorePoolDir), when set, is a directory on a RAM-backed file system (tmpfs: /dev/shm)
	// under which the buffers are files mapped MAP_SHARED (DirFor(Dir, Identity); file.go), so that what
	// a process appended survives its crash. When Dir is missing, not tmpfs or too small, the pool uses
	// anonymous buffers and logs one warning saying what that costs. Empty: anonymous buffers.
	Dir string
	// Identity names the owner of the files (the store's CommitLog directory): pools of other identities
	// never share a directory, and a buffer file is only ever read back by its own identity.
	Identity string
}

// DefaultConfig returns RocketMQ's defaults: 5 pinned buffers of 1 GiB.
func DefaultConfig() Config {
	return Config{Buffers: 5, BufferBytes: 1 << 30, Pinned: true}
}

// TotalBytes is the memory the pool maps (and pins): Buffers × BufferBytes.
func (c Config) TotalBytes() int64 {
	return int64(c.Buffers) * int64(c.BufferBytes)
}

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	pageSize := os.Getpagesize()
	switch {
	case c.Buffers < 1 || c.Buffers > MaxBuffers:
		return fmt.Errorf("%w: transientStorePoolSize (Buffers) = %d, want 1..%d", ErrConfig, c.Buffers, MaxBuffers)
	case c.BufferBytes <= 0:
		return fmt.Errorf("%w: BufferBytes (mappedFileSizeCommitLog) = %d, want > 0", ErrConfig, c.BufferBytes)
	case c.BufferBytes%pageSize != 0:
		return fmt.Errorf("%w: BufferBytes (mappedFileSizeCommitLog) = %d, want a multiple of the page size %d",
			ErrConfig, c.BufferBytes, pageSize)
	}
	return nil
}

// Buffer is one pooled buffer. The *Buffer values are created once by New and reused for the pool's life.
type Buffer struct {
	pool  *Pool
	index int
	bytes []byte
	hdr   header // the file's header page (file-backed buffers), else nil
}

// Bytes returns the whole buffer (BufferBytes long, off the Go heap). Valid until the pool is closed. Writes
// are the borrower's business: the pool does not clear a buffer on Return (RocketMQ neither), and the commit
// step only ever moves bytes the borrower wrote.
func (b *Buffer) Bytes() []byte { return b.bytes }

// Index is the buffer's slot in the pool, which is also its io_uring fixed-buffer index.
func (b *Buffer) Index() int { return b.index }

// Pool is a fixed set of buffers. Safe for concurrent use.
type Pool struct {
	cfg     Config
	logger  *slog.Logger
	mem     memOps
	files   *fileBacking // the buffer files (Config.Dir), nil for anonymous buffers
	pinned  bool         // every buffer is mlock'ed
	buffers []Buffer     // fixed at New; never reallocated
	fixed   [][]byte     // buffers[i].bytes in index order, handed to io_uring registration

	mu struct {
		sync.Mutex
		free     []int  // stack of free indices; capacity Buffers, so pushes never allocate
		borrowed []bool // borrowed[i] while buffers[i] is out: catches double Return
		closed   bool
	}
}

// memOps is the memory system interface: mmap/mlock on Linux, the heap elsewhere, a fake in tests.
type memOps struct {
	// alloc returns size bytes outside the Go heap (page aligned, zeroed).
	alloc func(size int) ([]byte, error)
	free  func(b []byte) error
	// lock pins b in RAM; unlock undoes it.
	lock   func(b []byte) error
	unlock func(b []byte) error
	// memlockLimit reports RLIMIT_MEMLOCK (soft, hard) for the error text; ok=false if unknown.
	memlockLimit func() (soft, hard uint64, ok bool)
	// fsStat says whether a directory is on a RAM-backed file system and its free bytes (Config.Dir).
	fsStat func(path string) (ramBacked bool, freeBytes uint64, err error)
}

// New maps and (when possible) pins cfg.Buffers buffers. It fails with an error wrapping ErrMemlock when
// pinning fails and cfg.Pinned is true. logger may be nil.
func New(cfg Config, logger *slog.Logger) (*Pool, error) {
	return newPool(cfg, logger, systemMemOps())
}

func newPool(cfg Config, logger *slog.Logger, mem memOps) (*Pool, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Pool{
		cfg:     cfg,
		logger:  logger,
		mem:     mem,
		buffers: make([]Buffer, cfg.Buffers),
		fixed:   make([][]byte, cfg.Buffers),
	}
	p.mu.free = make([]int, 0, cfg.Buffers)
	p.mu.borrowed = make([]bool, cfg.Buffers)

	if cfg.Dir != "" {
		stat := mem.fsStat
		if stat == nil {
			stat = ramFSStat
		}
		dir := DirFor(cfg.Dir, cfg.Identity)
		fb, err := openFiles(cfg, dir, stat)
		switch {
		case err == nil:
			p.files = fb
		case errors.Is(err, errFallback):
			logger.Warn("transientpool: buffers are anonymous memory: messages acknowledged under ASYNC_FLUSH "+
				"but not yet committed to the CommitLog (up to commitIntervalCommitLog) are lost if the process "+
				"crashes; to keep them, make transientStorePoolDir a tmpfs directory with room for the pool "+
				"(docker run --shm-size, or a tmpfs mount), or use SYNC_FLUSH",
				"reason", err.Error(), "transientStorePoolDir", cfg.Dir, "neededBytes", cfg.TotalBytes())
		default:
			return nil, err
		}
	}
	for i := range p.buffers {
		if p.files != nil {
			p.buffers[i] = Buffer{pool: p, index: i, bytes: p.files.data[i], hdr: p.files.headers[i]}
			p.fixed[i] = p.files.data[i]
			continue
		}
		b, err := mem.alloc(cfg.BufferBytes)
		if err != nil {
			mapErr := fmt.Errorf("transientpool: map buffer %d of %d (%d bytes): %w", i, cfg.Buffers, cfg.BufferBytes, err)
			return nil, errors.Join(mapErr, p.release(i, false))
		}
		p.buffers[i] = Buffer{pool: p, index: i, bytes: b}
		p.fixed[i] = b
	}
	p.pinned = true
	for i := range p.buffers {
		err := mem.lock(p.buffers[i].bytes)
		if err == nil {
			continue
		}
		// Undo the locks taken so far; either every buffer is pinned or none is, so Close knows what to undo.
		for j := 0; j < i; j++ {
			_ = mem.unlock(p.buffers[j].bytes)
		}
		p.pinned = false
		if cfg.Pinned {
			lockErr := memlockError(cfg, mem, err)
			if errors.Is(err, ErrPinUnsupported) {
				lockErr = fmt.Errorf("%w; set transientStorePoolPinned=false to run with unpinned buffers", err)
			}
			return nil, errors.Join(lockErr, p.release(len(p.buffers), false))
		}
		// One line for the whole pool, not one per buffer.
		p.logger.Warn("transientpool: running with unpinned buffers (transientStorePoolPinned=false)",
			"error", err, "buffers", cfg.Buffers, "neededBytes", cfg.TotalBytes())
		break
	}
	// Push in reverse so Borrow hands out buffer 0 first (predictable, and matches RocketMQ's deque order).
	for i := cfg.Buffers - 1; i >= 0; i-- {
		p.mu.free = append(p.mu.free, i)
	}
	backing := "anonymous"
	if p.files != nil {
		backing = p.files.dir
	}
	p.logger.Info("transientpool: ready", "buffers", cfg.Buffers, "bufferBytes", cfg.BufferBytes, "pinned", p.pinned,
		"files", backing)
	return p, nil
}

// memlockError builds the operator-facing error for a failed mlock.
func memlockError(cfg Config, mem memOps, cause error) error {
	need := cfg.TotalBytes()
	limit := describeMemlockLimit(mem)
	needKiB := (need + 1023) / 1024
	return fmt.Errorf("%w: mlock of %d buffers × %d bytes failed (%w); RLIMIT_MEMLOCK must allow at least %d bytes "+
		"(current limit: %s). Raise it with `ulimit -l %d` (KiB, or `ulimit -l unlimited`) in the shell that starts "+
		"the broker, LimitMEMLOCK=infinity in its systemd unit, or `docker run --ulimit memlock=-1:-1`; "+
		"or set transientStorePoolPinned=false to run with unpinned buffers",
		ErrMemlock, cfg.Buffers, cfg.BufferBytes, cause, need, limit, needKiB)
}

// MemlockLimit describes this process's RLIMIT_MEMLOCK for operator messages ("soft …, hard …", or
// "unknown"), as the pool's own mlock error does; the store's warning for a warmed file it cannot pin
// uses it too.
func MemlockLimit() string { return describeMemlockLimit(systemMemOps()) }

func describeMemlockLimit(mem memOps) string {
	soft, hard, ok := mem.memlockLimit()
	if !ok {
		return "unknown"
	}
	return fmt.Sprintf("soft %s, hard %s", rlimitString(soft), rlimitString(hard))
}

func rlimitString(v uint64) string {
	if v == ^uint64(0) {
		return "unlimited"
	}
	return fmt.Sprintf("%d bytes", v)
}

// release frees the first n mapped buffers (setup failure path, and Close). Buffer files stay.
func (p *Pool) release(n int, unlock bool) error {
	var errs []error
	for i := 0; i < n; i++ {
		b := p.buffers[i].bytes
		if b == nil {
			continue
		}
		if unlock {
			if err := p.mem.unlock(b); err != nil {
				errs = append(errs, fmt.Errorf("transientpool: munlock buffer %d: %w", i, err))
			}
		}
		if p.files == nil {
			if err := p.mem.free(b); err != nil {
				errs = append(errs, fmt.Errorf("transientpool: unmap buffer %d: %w", i, err))
			}
		}
		p.buffers[i].bytes, p.buffers[i].hdr = nil, nil
		p.fixed[i] = nil
	}
	if p.files != nil {
		errs = append(errs, p.files.close())
	}
	return errors.Join(errs...)
}

// Borrow takes a free buffer. ok is false when every buffer is out or the pool is closed (RocketMQ's
// borrowBuffer returning null: the store then uses the file mapping for that file). Never allocates.
func (p *Pool) Borrow() (b *Buffer, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.mu.free)
	if p.mu.closed || n == 0 {
		return nil, false
	}
	i := p.mu.free[n-1]
	p.mu.free = p.mu.free[:n-1]
	p.mu.borrowed[i] = true
	return &p.buffers[i], true
}

// Return gives a borrowed buffer back. Returning a buffer twice, a buffer of another pool, or nil panics:
// each is a bug in the caller's ownership tracking, and continuing would let two files share one buffer.
// Never allocates.
func (p *Pool) Return(b *Buffer) {
	if b == nil || b.pool != p {
		panic("transientpool: Return of a buffer that does not belong to this pool")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.mu.borrowed[b.index] {
		panic(fmt.Sprintf("transientpool: buffer %d returned twice", b.index))
	}
	p.mu.borrowed[b.index] = false
	p.mu.free = append(p.mu.free, b.index)
}

// Available is the number of free buffers (RocketMQ's availableBufferNums). Safe for concurrent use.
func (p *Pool) Available() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return 0
	}
	return len(p.mu.free)
}

// FileBacked reports whether the buffers are files on a RAM-backed file system (their bytes outlive a
// crash of the process), false for anonymous memory (Config.Dir empty, or the fallback).
func (p *Pool) FileBacked() bool { return p.files != nil }

// Dir is the directory of the buffer files, "" for anonymous buffers.
func (p *Pool) Dir() string {
	if p.files == nil {
		return ""
	}
	return p.files.dir
}

// Config returns the configuration the pool was built with.
func (p *Pool) Config() Config { return p.cfg }

// Pinned reports whether the buffers are locked in RAM (false only with Config.Pinned=false after mlock
// failed).
func (p *Pool) Pinned() bool { return p.pinned }

// FixedBuffers returns every buffer in index order, for io_uring buffer registration
// (flush.BufferRegistrar). The slice is the pool's own; callers must not modify it. It must not be used
// after Close.
func (p *Pool) FixedBuffers() [][]byte { return p.fixed }

// Close unpins and unmaps every buffer. It fails with ErrBuffersBorrowed, changing nothing, while any
// buffer is borrowed (the message names them), and with ErrClosed when called twice. Buffer files stay,
// holding what they hold for the next start; after a clean shutdown remove them with RemoveDir(Dir()).
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.closed {
		return ErrClosed
	}
	if out := len(p.buffers) - len(p.mu.free); out > 0 {
		var idx []int
		for i, b := range p.mu.borrowed {
			if b {
				idx = append(idx, i)
			}
		}
		return fmt.Errorf("%w: %d of %d (indices %v)", ErrBuffersBorrowed, out, len(p.buffers), idx)
	}
	p.mu.closed = true
	p.mu.free = p.mu.free[:0]
	return p.release(len(p.buffers), p.pinned)
}
