// Package flush makes CommitLog and ConsumeQueue bytes durable. It decides how and when, never what:
// the store says which file, which range and which offsets; flush does the I/O and the waiting.
//
// # Backends
//
// A Backend moves bytes to stable storage. One is chosen at start by Kind (the broker's flushBackend key):
//
//	iouring    write (WRITE_FIXED from a registered transient-pool buffer, or WRITE) and fdatasync linked in
//	           one io_uring submission (IOSQE_IO_LINK); fdatasync alone for mapped files (IORING_OP_FSYNC)
//	msync      msync(MS_SYNC) of the dirty range of a mapped file; pwrite + fdatasync for buffer writes
//	fdatasync  fdatasync(2) of the file; pwrite + fdatasync for buffer writes
//
// io_uring is probed when Open is asked for it: a ring is set up, the opcodes are checked and a NOP makes a
// round trip. Where io_uring is missing or forbidden (old kernel, seccomp, kernel.io_uring_disabled) Open
// logs exactly one warning naming the reason and returns the fdatasync backend instead. A ring that works
// but cannot register the pool's buffers (RLIMIT_MEMLOCK for unprivileged users, buffers over 1 GiB) keeps
// io_uring and writes with plain WRITE, again with one warning.
//
// Every backend maps every errno on purpose: EINTR and EAGAIN are retried (a bounded number of times),
// ENOSPC/EDQUOT become ErrNoSpace, EIO becomes ErrIO, anything else ErrUnexpected, each wrapped with the
// file's name and offset and with the errno itself (errors.Is(err, unix.EIO) also holds). Short writes are
// resumed; in the io_uring path a short write cancels the linked fdatasync (-ECANCELED) and the remainder
// is resubmitted with a new fdatasync linked to it. A failed sync is never retried and also wraps
// ErrDurability: after a writeback error the kernel may have marked the pages clean, so a second
// fdatasync could succeed without the data being on disk ("fsyncgate"). GroupCommit makes ErrDurability
// and ErrIO sticky. A failed write (ENOSPC before anything reached the page cache) is not: disk full is a
// broker state that clears when space returns.
//
// # Services
//
// Three services, one goroutine-owning type each, mirror RocketMQ's CommitLog services:
//
//	GroupCommit      SYNC_FLUSH (RocketMQ GroupCommitService): waiters (target offset, Waiter) queue up; one
//	                 durable operation covers all of them; waiters complete in offset order, or with
//	                 ErrFlushTimeout after syncFlushTimeout, or with the operation's error.
//	IntervalFlusher  ASYNC_FLUSH (FlushRealTimeService), also used for ConsumeQueues: flush every Interval
//	                 when at least LeastPages are dirty, and fully every ThoroughInterval.
//	CommitService    transient pool (CommitRealTimeService): move appended bytes from the pool buffer into the
//	                 file every 200 ms when at least 4 pages are waiting; readers see only committed bytes.
//
// Threading rule for callbacks: a Waiter's FlushDone runs on the GroupCommit's loop goroutine, never on the
// goroutine that called Submit. It must not block (the broker's completes with an asynchronous network
// write) and must not call GroupCommit.Close; it may call Submit.
//
// Metrics (flush batch size and latency, acks per durable write, bytes, waiter queue depth, timeouts) are
// Prometheus collectors registered on a caller-provided registry; see NewMetrics.
package flush

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/ringmq/ringmq/internal/conf"
)

// Sentinel errors. Check with errors.Is.
var (
	// ErrNoSpace: the device is full (ENOSPC, EDQUOT). A broker state, not a crash: retry when space returns.
	ErrNoSpace = errors.New("flush: no space left on device")
	// ErrIO: the device reported an I/O error (EIO). Final for the file: the data may be lost.
	ErrIO = errors.New("flush: I/O error")
	// ErrDurability: a sync (fdatasync, msync, io_uring fsync) failed, whatever the errno. The bytes it
	// covered may be gone from the disk even if a later sync succeeds, because the kernel may have marked
	// their pages clean ("fsyncgate"): rewrite them from your own copy, or stop. Wrapped beside the
	// errno's class (ErrNoSpace, ErrIO, ErrUnexpected). GroupCommit treats it as final.
	ErrDurability = errors.New("flush: sync failed, unsynced bytes may be lost")
	// ErrUnexpected: an errno this package has no plan for; the errno is wrapped beside it.
	ErrUnexpected = errors.New("flush: unexpected error")
	// ErrInvalidArgument: a caller passed a bad argument; the message names it.
	ErrInvalidArgument = errors.New("flush: invalid argument")
	// ErrClosed: the backend or service is closed.
	ErrClosed = errors.New("flush: closed")
	// ErrQueueFull: GroupCommit already holds its maximum of waiters; answer SYSTEM_BUSY.
	ErrQueueFull = errors.New("flush: group commit waiter queue full")
	// ErrFlushTimeout: the waiter's offset was not durable within syncFlushTimeout; answer FLUSH_DISK_TIMEOUT.
	ErrFlushTimeout = errors.New("flush: not durable within syncFlushTimeout")
	// ErrIOURingUnavailable: io_uring could not be set up or used here (the wrapped error says why).
	ErrIOURingUnavailable = errors.New("flush: io_uring unavailable")
	// ErrConfig: an invalid configuration value; the message names the field.
	ErrConfig = errors.New("flush: invalid config")
)

// Kind names a Backend (the broker's flushBackend key).
type Kind uint8

// Backend kinds.
const (
	KindFdatasync Kind = iota + 1
	KindMsync
	KindIOUring
)

// DefaultKind is the backend that measured best here (bench_linux_test.go, 2 vCPU, ext4 on virtio,
// Linux 6.18; medians of 6 interleaved passes, 1 KiB messages, group commit, transient-pool writes):
//
//	writers   fdatasync (pwrite + fdatasync)   iouring (WRITE_FIXED linked to FSYNC)
//	1           5,046 msgs/s, p50 160 µs          4,410 msgs/s, p50 186 µs
//	64        151,398 msgs/s, p50 374 µs        111,181 msgs/s, p50 360 µs, p99 4.9 ms
//	256       442,773 msgs/s, p50 486 µs        306,009 msgs/s, p50 586 µs
//
// io_uring saves a system call but not the wait, and always runs the fsync on an io-wq worker thread: one
// more thread hand-off per durable operation on a machine with two CPUs. With mapped files (no pool)
// msync and fdatasync were within this machine's noise of each other, io_uring behind both.
const DefaultKind = KindFdatasync

// String returns the flushBackend spelling: "fdatasync", "msync" or "iouring".
func (k Kind) String() string {
	switch k {
	case KindFdatasync:
		return "fdatasync"
	case KindMsync:
		return "msync"
	case KindIOUring:
		return "iouring"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// ParseKind reads a flushBackend value (case-insensitive; "io_uring" is accepted for "iouring").
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "fdatasync":
		return KindFdatasync, nil
	case "msync":
		return KindMsync, nil
	case "iouring", "io_uring":
		return KindIOUring, nil
	}
	return 0, fmt.Errorf("%w: flushBackend=%q, want iouring, msync or fdatasync", ErrConfig, s)
}

// kindNames are the flushBackend spellings broker.conf accepts, in the order --help lists them.
var kindNames = []string{"iouring", "msync", "fdatasync"}

var kindsByName = [...]Kind{KindIOUring, KindMsync, KindFdatasync}

// EnumValues lists the flushBackend spellings (conf.Enum).
func (Kind) EnumValues() []string { return append([]string(nil), kindNames...) }

// MarshalText is the flushBackend spelling; the zero Kind, no choice made (the store then
// picks by append mode), is empty.
func (k Kind) MarshalText() ([]byte, error) {
	if k == 0 {
		return nil, nil
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a flushBackend value as broker.conf has always taken it: exactly
// iouring, msync or fdatasync, or empty for the zero Kind. ParseKind is the lenient reader.
func (k *Kind) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*k = 0
		return nil
	}
	i, err := conf.ParseEnum(string(text), kindNames...)
	if err != nil {
		return err
	}
	*k = kindsByName[i]
	return nil
}

// Backend makes bytes durable. Implementations: fdatasync.go, msync.go, uring.go (+ uring_linux.go).
//
// A Backend is safe for concurrent use. The io_uring backend serializes calls on its one ring (one
// submitter at a time: STYLE.md §4), so services that must overlap their waits (the CommitLog's group
// commit and the ConsumeQueue flusher, say) should each open their own io_uring Backend; the others make
// plain system calls and overlap freely.
type Backend interface {
	// Kind reports which backend this is (after any fallback in Open).
	Kind() Kind
	// SyncMapped makes the range [off, off+length) of the file durable. mapped is the file's shared mapping
	// (from offset 0), or nil when the file is not mapped; the msync backend needs it, the others use fd.
	// length 0 means from off to the end of the file. Backends may sync more than the range (fdatasync
	// syncs the whole file), never less.
	SyncMapped(fd int, mapped []byte, off, length int64) error
	// WriteSync writes buf at file offset off, resuming short writes, and with sync also makes the file's
	// data durable before returning. bufIndex is buf's io_uring fixed-buffer slot (transientpool
	// Buffer.Index) when buf lies inside a buffer of the registrar given to Open, else -1. buf must not
	// change until WriteSync returns.
	WriteSync(fd int, buf []byte, bufIndex int, off int64, sync bool) error
	// Close releases the backend (the ring and its buffer registration). A second Close returns ErrClosed.
	Close() error
}

// BufferRegistrar lists buffers to register with io_uring as fixed buffers, slot i = FixedBuffers()[i].
// *transientpool.Pool implements it. The buffers must stay mapped until the Backend is closed.
type BufferRegistrar interface {
	FixedBuffers() [][]byte
}

// Open returns a Backend of the given kind. For KindIOUring it probes io_uring first and, when that fails,
// logs one warning and returns the fdatasync backend (check Kind on the result). fixed may be nil; it is
// only used by the io_uring backend. logger may be nil.
func Open(kind Kind, fixed BufferRegistrar, logger *slog.Logger) (Backend, error) {
	return openWith(kind, fixed, logger, newSystemRing)
}

// ringFactory sets up an io_uring ring with the given number of entries (newSystemRing, or a test fake).
type ringFactory func(entries uint32) (ring, error)

func openWith(kind Kind, fixed BufferRegistrar, logger *slog.Logger, newRing ringFactory) (Backend, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	switch kind {
	case KindFdatasync:
		return newFdatasyncBackend(), nil
	case KindMsync:
		return newMsyncBackend(), nil
	case KindIOUring:
		b, err := newURingBackend(fixed, logger, newRing)
		if err == nil {
			return b, nil
		}
		// The one line an operator needs: what was asked, why it is not possible, what runs instead.
		logger.Warn("flush: io_uring unavailable, falling back", "flushBackend", KindIOUring.String(),
			"fallback", KindFdatasync.String(), "reason", err.Error())
		return &fallback{Backend: newFdatasyncBackend(), reason: err}, nil
	}
	return nil, fmt.Errorf("%w: flush backend kind %d", ErrConfig, uint8(kind))
}

// fallback is the backend Open returns in place of io_uring: the fdatasync backend, keeping why
// io_uring could not be used for the broker's startup summary.
type fallback struct {
	Backend
	reason error
}

// FallbackReason says why b, returned by Open, is not the kind Open was asked for (io_uring
// unavailable: the error names the cause, e.g. a seccomp filter), or nil when it is that kind.
func FallbackReason(b Backend) error {
	if f, ok := b.(*fallback); ok {
		return f.reason
	}
	return nil
}
