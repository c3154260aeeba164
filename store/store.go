// Package store keeps messages in RocketMQ's on-disk layout: the CommitLog, one ConsumeQueue per
// topic/queue, and the IndexFile hash index, with the dispatcher (reput) that builds queues and index from
// the log, the checkpoint, crash recovery, retention and the disk guard.
//
// # Files
//
//	<storePathRootDir>/
//	  commitlog/<20-digit start offset>          mappedFileSizeCommitLog bytes each (1 GiB)
//	  consumequeue/<topic>/<queueId>/<20 digits> mappedFileSizeConsumeQueue bytes each (300,000 × 20 B)
//	  index/<yyyyMMddHHmmssSSS>                   40 B header + slots × 4 B + entries × 20 B
//	  checkpoint                                  4 KiB, see checkpoint.go
//	  abort                                       present while running; left behind by a crash
//	  lock                                        flock held while a Store is open
//
// CommitLog record: PROTOCOL.md §5.1 (package codec holds the layout). Records never span files: when a
// record and 8 more bytes do not fit in what is left of a file, an 8-byte END_OF_FILE blank record (bytes
// left, BLANK magic) is written and the record goes to the start of the next file.
//
// ConsumeQueue entry (PROTOCOL.md §7.2), big-endian, 20 bytes; logical offset = byte position / 20:
//
//	0       8      12           20
//	┌───────┬──────┬────────────┐
//	│ phys  │ size │ tags code  │   tags code: Java hashCode of TAGS (SCHEDULE_TOPIC_XXXX: delivery time)
//	└───────┴──────┴────────────┘
//
// IndexFile (PROTOCOL.md §7.4): see index.go.
//
// # Concurrency
//
// A Store is safe for concurrent use unless a method says otherwise. Puts serialize on one put lock that
// covers only offset assignment, patching the pre-encoded record and copying it into the mapped file; it
// makes no syscall and allocates nothing. One dispatcher goroutine owns every ConsumeQueue and IndexFile
// write. Readers take reference counts on the mapped files they read, so a file being deleted is unmapped
// only when its last reader releases it.
//
// Lock order (outer first; a goroutine holding one may take only those after it):
//
//	Store.lifecycle → Store.checkpointMu → lockStats.snapMu → CommitLog put lock → commitLog.allocMu
//	  → consumeQueue.mu → MappedFileQueue.flushMu → MappedFileQueue.mu
//	consumeQueueTable.mu and indexService.mu are leaves: nothing is taken while holding them.
//
// The dispatcher never takes the put lock; the pull path takes only the read side of
// consumeQueueTable.mu.
package store

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/flush"
)

// Sentinel errors. Check with errors.Is.
var (
	// ErrConfig: a Config field is invalid; the message names it.
	ErrConfig = errors.New("store: invalid config")
	// ErrMessageIllegal: the message breaks a limit (body size, topic, record size) or its properties are
	// malformed (then it also wraps a *codec.PropertiesError); status MESSAGE_ILLEGAL.
	ErrMessageIllegal = errors.New("store: message illegal")
	// ErrPropertiesSizeExceeded: encoded properties longer than 32767 bytes; status PROPERTIES_SIZE_EXCEEDED.
	ErrPropertiesSizeExceeded = errors.New("store: properties size exceeded")
	// ErrServiceNotAvailable: the store is shut down, not started, or not writeable; SERVICE_NOT_AVAILABLE.
	ErrServiceNotAvailable = errors.New("store: service not available")
	// ErrDiskFull: the disk is above diskSpaceWarningLevelRatio or a file could not be allocated (ENOSPC).
	// Puts are refused until space returns; the store notices by itself. Status SERVICE_NOT_AVAILABLE.
	ErrDiskFull = errors.New("store: disk full")
	// ErrSlave: a put on a slave's store (RocketMQ: "messages are put to the slave"); its CommitLog
	// grows only by replication.
	ErrSlave = fmt.Errorf("%w: the broker is a slave: messages are put to the master", ErrServiceNotAvailable)
	// ErrCreateMappedFile: the next CommitLog file could not be created; status CREATE_MAPPED_FILE_FAILED.
	ErrCreateMappedFile = errors.New("store: create mapped file failed")
	// ErrOSPageCacheBusy: a put has held the put lock longer than osPageCacheBusyTimeOutMills.
	ErrOSPageCacheBusy = errors.New("store: [PC_SYNCHRONIZED]broker busy")
	// ErrFlushFailed: making bytes durable failed with an I/O error. The store turns read-only: after a
	// failed fsync the kernel may have dropped the dirty pages, so later writes cannot be trusted durable.
	ErrFlushFailed = errors.New("store: flush failed")
	// ErrCorruption: a record or entry in the middle of a file is damaged; the message names file and offset.
	// A damaged tail is not corruption: recovery truncates it.
	ErrCorruption = errors.New("store: corruption")
	// ErrStoreLocked: another process holds the store's lock file.
	ErrStoreLocked = errors.New("store: store directory locked by another process")
	// ErrNotFound: no record at the requested physical offset (deleted or beyond the end).
	ErrNotFound = errors.New("store: not found")
	// ErrClosed: the store is shut down.
	ErrClosed = errors.New("store: closed")
)

// FlushDiskType selects when a put counts as stored (flushDiskType).
type FlushDiskType uint8

// Flush disk types.
const (
	// AsyncFlush replies at once; a flush loop makes bytes durable every flushIntervalCommitLog.
	AsyncFlush FlushDiskType = iota
	// SyncFlush completes a put's WaitDurable only when its bytes are durable (group commit).
	SyncFlush
)

// String returns RocketMQ's spelling.
func (t FlushDiskType) String() string {
	switch t {
	case AsyncFlush:
		return "ASYNC_FLUSH"
	case SyncFlush:
		return "SYNC_FLUSH"
	}
	return "FlushDiskType(" + strconv.Itoa(int(t)) + ")"
}

// ParseFlushDiskType reads ASYNC_FLUSH or SYNC_FLUSH (case-insensitive).
func ParseFlushDiskType(s string) (FlushDiskType, error) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "ASYNC_FLUSH":
		return AsyncFlush, nil
	case "SYNC_FLUSH":
		return SyncFlush, nil
	}
	return 0, fmt.Errorf("%w: flushDiskType=%q, want ASYNC_FLUSH or SYNC_FLUSH", ErrConfig, s)
}

// PutMessageStatus is RocketMQ's PutMessageStatus.
type PutMessageStatus uint8

// Put statuses, in RocketMQ's order.
const (
	PutOK PutMessageStatus = iota
	FlushDiskTimeout
	FlushSlaveTimeout
	SlaveNotAvailable
	ServiceNotAvailable
	CreateMappedFileFailed
	MessageIllegal
	PropertiesSizeExceeded
	OSPageCacheBusy
	UnknownError
)

var putStatusNames = [...]string{
	PutOK: "PUT_OK", FlushDiskTimeout: "FLUSH_DISK_TIMEOUT", FlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT",
	SlaveNotAvailable: "SLAVE_NOT_AVAILABLE", ServiceNotAvailable: "SERVICE_NOT_AVAILABLE",
	CreateMappedFileFailed: "CREATE_MAPEDFILE_FAILED", MessageIllegal: "MESSAGE_ILLEGAL",
	PropertiesSizeExceeded: "PROPERTIES_SIZE_EXCEEDED", OSPageCacheBusy: "OS_PAGECACHE_BUSY",
	UnknownError: "UNKNOWN_ERROR",
}

// String returns RocketMQ's spelling (CREATE_MAPEDFILE_FAILED keeps its historical typo).
func (s PutMessageStatus) String() string {
	if int(s) < len(putStatusNames) {
		return putStatusNames[s]
	}
	return "PutMessageStatus(" + strconv.Itoa(int(s)) + ")"
}

// GetMessageStatus is RocketMQ's GetMessageStatus; PROTOCOL.md §9 maps each to a pull response.
type GetMessageStatus uint8

// Get statuses, in RocketMQ's order.
const (
	Found GetMessageStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

var getStatusNames = [...]string{
	Found: "FOUND", NoMatchedMessage: "NO_MATCHED_MESSAGE", MessageWasRemoving: "MESSAGE_WAS_REMOVING",
	OffsetFoundNull: "OFFSET_FOUND_NULL", OffsetOverflowBadly: "OFFSET_OVERFLOW_BADLY",
	OffsetOverflowOne: "OFFSET_OVERFLOW_ONE", OffsetTooSmall: "OFFSET_TOO_SMALL",
	NoMatchedLogicQueue: "NO_MATCHED_LOGIC_QUEUE", NoMessageInQueue: "NO_MESSAGE_IN_QUEUE",
}

// String returns RocketMQ's spelling.
func (s GetMessageStatus) String() string {
	if int(s) < len(getStatusNames) {
		return getStatusNames[s]
	}
	return "GetMessageStatus(" + strconv.Itoa(int(s)) + ")"
}

// RunningFlags is RocketMQ's RunningFlags bit set. Read it with Store.RunningFlags.
type RunningFlags uint32

// Running flag bits.
const (
	// FlagNotReadable: reads refused (never set by the store itself today).
	FlagNotReadable RunningFlags = 1 << iota
	// FlagNotWriteable: puts refused (shutdown, or a failed flush: see ErrFlushFailed).
	FlagNotWriteable
	// FlagWriteLogicsQueueError: a ConsumeQueue write failed; the dispatcher stopped.
	FlagWriteLogicsQueueError
	// FlagWriteIndexFileError: an IndexFile write failed; indexing stopped.
	FlagWriteIndexFileError
	// FlagDiskFull: disk above diskSpaceWarningLevelRatio or ENOSPC seen; clears itself when space returns.
	FlagDiskFull
)

// String lists the set bits, e.g. "DISK_FULL|NOT_WRITEABLE", or "OK".
func (f RunningFlags) String() string {
	if f == 0 {
		return "OK"
	}
	names := []string{"NOT_READABLE", "NOT_WRITEABLE", "WRITE_LOGICS_QUEUE_ERROR", "WRITE_INDEX_FILE_ERROR", "DISK_FULL"}
	var parts []string
	for i, n := range names {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, "|")
}

// Config configures a Store. Field docs name the broker.conf key. Start from DefaultConfig.
type Config struct {
	// StorePathRootDir (storePathRootDir) holds every store file. Required.
	StorePathRootDir string
	// StorePathCommitLog (storePathCommitLog); empty = <root>/commitlog.
	StorePathCommitLog string
	// StorePathConsumeQueue (storePathConsumeQueue); empty = <root>/consumequeue.
	StorePathConsumeQueue string
	// StorePathIndex (storePathIndex); empty = <root>/index.
	StorePathIndex string
	// StoreCheckpoint (storeCheckpoint); empty = <root>/checkpoint.
	StoreCheckpoint string
	// AbortFile (abortFile); empty = <root>/abort.
	AbortFile string

	// MappedFileSizeCommitLog (mappedFileSizeCommitLog, alias mapedFileSizeCommitLog): bytes per CommitLog
	// file, default 1 GiB. Must be a multiple of the OS page size and hold a largest record plus 8 bytes.
	MappedFileSizeCommitLog int64
	// MappedFileSizeConsumeQueue (mappedFileSizeConsumeQueue, alias mapedFileSizeConsumeQueue): bytes per
	// ConsumeQueue file, default 300,000 × 20. Rounded down to a multiple of 20 by Validate.
	MappedFileSizeConsumeQueue int64
	// MaxMessageSize (maxMessageSize): largest body, default 4 MiB. A record may be 64 KiB larger.
	MaxMessageSize int

	// FlushDiskType (flushDiskType): ASYNC_FLUSH (default) or SYNC_FLUSH.
	FlushDiskType FlushDiskType
	// FlushBackend (flushBackend): iouring, msync or fdatasync. Zero picks by mode (see
	// DefaultFlushBackend): msync for mmap'ed appends, fdatasync for the transient pool.
	FlushBackend flush.Kind
	// FlushIntervalCommitLog (flushIntervalCommitLog): async flush period, default 500 ms.
	FlushIntervalCommitLog time.Duration
	// FlushCommitLogLeastPages (flushCommitLogLeastPages): pages dirty before an async flush, default 4.
	FlushCommitLogLeastPages int
	// FlushCommitLogThoroughInterval (flushCommitLogThoroughInterval): flush regardless of pages, 10 s.
	FlushCommitLogThoroughInterval time.Duration
	// CommitIntervalCommitLog (commitIntervalCommitLog): transient pool commit period, default 200 ms.
	CommitIntervalCommitLog time.Duration
	// CommitCommitLogLeastPages (commitCommitLogLeastPages): pages waiting before a commit, default 4.
	CommitCommitLogLeastPages int
	// CommitCommitLogThoroughInterval (commitCommitLogThoroughInterval): commit regardless, 200 ms.
	CommitCommitLogThoroughInterval time.Duration
	// FlushIntervalConsumeQueue (flushIntervalConsumeQueue): ConsumeQueue/IndexFile flush and checkpoint
	// period, default 1 s.
	FlushIntervalConsumeQueue time.Duration
	// FlushConsumeQueueLeastPages (flushConsumeQueueLeastPages): default 2.
	FlushConsumeQueueLeastPages int
	// FlushConsumeQueueThoroughInterval (flushConsumeQueueThoroughInterval): default 60 s.
	FlushConsumeQueueThoroughInterval time.Duration
	// SyncFlushTimeout (syncFlushTimeout): SYNC_FLUSH wait before FLUSH_DISK_TIMEOUT, default 5 s.
	SyncFlushTimeout time.Duration
	// SyncFlushIdleInterval: under SYNC_FLUSH, how often the whole CommitLog is flushed while no waiter is
	// queued, for messages sent without waiting for the store; default 10 ms, as RocketMQ's
	// GroupCommitService (no broker key: RocketMQ has none). FlushIntervalCommitLog applies to ASYNC_FLUSH.
	SyncFlushIdleInterval time.Duration

	// TransientStorePoolEnable (transientStorePoolEnable): append into pinned buffers, commit to the file.
	// Off on a slave, as in RocketMQ: replicated bytes go straight to the file (AppendReplica).
	TransientStorePoolEnable bool

	// Slave (brokerRole=SLAVE): puts are refused (ErrSlave); the CommitLog grows only through
	// AppendReplica, at the master's offsets, and the dispatcher waits for a record whose bytes have not
	// all arrived instead of calling it corrupt.
	Slave bool
	// TransientStorePoolSize (transientStorePoolSize): buffers in the pool, default 5.
	TransientStorePoolSize int
	// TransientStorePoolPinned (ringmq transientStorePoolPinned): require mlock, default true.
	TransientStorePoolPinned bool
	// WarmMappedFileEnable (warmMapedFileEnable): under SYNC_FLUSH the allocator warms each new CommitLog
	// file whole before the writer reaches it: every page populated for writing (MADV_POPULATE_WRITE;
	// without it, a zero written into each page) and the zeros synced to the disk, so later syncs of the
	// file write data only. Under ASYNC_FLUSH the prefault window already populates the pages ahead of
	// the writer, so whole files are warmed only with WarmMappedFileMlock or without MADV_POPULATE_WRITE
	// (never with the transient pool, whose appends do not touch the mapping). Default false.
	WarmMappedFileEnable bool
	// FlushLeastPagesWhenWarmMappedFile (flushLeastPagesWhenWarmMapedFile): under SYNC_FLUSH, warming
	// syncs the file every this many pages, default 4096 (16 MiB of 4 KiB pages).
	FlushLeastPagesWhenWarmMappedFile int
	// WarmMappedFileMlock (ringmq warmMappedFileMlock): pin each warmed file with mlock until the writer
	// leaves it, as RocketMQ's warming does, default false. A failed mlock (RLIMIT_MEMLOCK) logs one
	// warning naming the limit and leaves the file unpinned.
	WarmMappedFileMlock bool

	// UseReentrantLockWhenPutMessage (useReentrantLockWhenPutMessage): true = mutex (default), false = spin.
	UseReentrantLockWhenPutMessage bool
	// OSPageCacheBusyTimeout (osPageCacheBusyTimeOutMills): a put holding the lock longer makes
	// IsOSPageCacheBusy true, default 1 s.
	OSPageCacheBusyTimeout time.Duration
	// PutLockWarnThreshold: time in the put lock logged as a warning ([NOTIFYME]), default 500 ms.
	PutLockWarnThreshold time.Duration

	// FileReservedTime (fileReservedTime, hours in broker.conf): CommitLog file age before deletion, 72 h.
	FileReservedTime time.Duration
	// DeleteWhen (deleteWhen): hours of day, ';'-separated, when expired files are deleted, default "04".
	DeleteWhen string
	// DiskMaxUsedSpaceRatio (diskMaxUsedSpaceRatio): % used above which expired files go at once, default
	// 75, clamped to 10..95 as RocketMQ does.
	DiskMaxUsedSpaceRatio int
	// DiskSpaceCleanForciblyRatio (rocketmq.broker.diskSpaceCleanForciblyRatio): % used above which the
	// oldest files go even if not expired, default 85, when CleanFileForciblyEnable is set.
	DiskSpaceCleanForciblyRatio int
	// CleanFileForciblyEnable (cleanFileForciblyEnable): above DiskSpaceCleanForciblyRatio, delete the
	// oldest CommitLog files before fileReservedTime, acknowledged and unconsumed messages included,
	// logged at ERROR with the files and what each consumer group loses. Default false, unlike RocketMQ
	// (true): without it a full disk refuses puts and keeps everything stored (README "When the disk
	// fills up").
	CleanFileForciblyEnable bool
	// DiskSpaceWarningLevelRatio (rocketmq.broker.diskSpaceWarningLevelRatio): % used above which puts are
	// refused (ErrDiskFull), default 90.
	DiskSpaceWarningLevelRatio int
	// CleanResourceInterval (cleanResourceInterval): retention and disk-guard period, default 10 s.
	CleanResourceInterval time.Duration
	// DeleteFilesBatchMax: files deleted per retention pass (RocketMQ DELETE_FILES_BATCH_MAX), default 10.
	DeleteFilesBatchMax int

	// CheckCRCOnRecover (checkCRCOnRecover): verify body CRCs when scanning on recovery, default true.
	CheckCRCOnRecover bool

	// MessageIndexEnable (messageIndexEnable): build the IndexFile, default true.
	MessageIndexEnable bool
	// MaxHashSlotNum (maxHashSlotNum): slots per IndexFile, default 5,000,000.
	MaxHashSlotNum int
	// MaxIndexNum (maxIndexNum): entries per IndexFile, default 20,000,000.
	MaxIndexNum int
	// MaxMsgsNumBatch (maxMsgsNumBatch): cap on QueryMessage results, default 64.
	MaxMsgsNumBatch int

	// StoreHost is the broker address written as STOREHOST into every record (brokerIP1:listenPort).
	StoreHost netip.AddrPort

	// AccessMessageInMemoryMaxRatio (accessMessageInMemoryMaxRatio): % of RAM behind the CommitLog end
	// counted as "in memory" for pull batch limits, default 40.
	AccessMessageInMemoryMaxRatio int
	// MaxTransferBytesOnMessageInMemory (maxTransferBytesOnMessageInMemory): default 256 KiB.
	MaxTransferBytesOnMessageInMemory int
	// MaxTransferCountOnMessageInMemory (maxTransferCountOnMessageInMemory): default 32.
	MaxTransferCountOnMessageInMemory int
	// MaxTransferBytesOnMessageInDisk (maxTransferBytesOnMessageInDisk): default 64 KiB.
	MaxTransferBytesOnMessageInDisk int
	// MaxTransferCountOnMessageInDisk (maxTransferCountOnMessageInDisk): default 8.
	MaxTransferCountOnMessageInDisk int
}

// Defaults (PROTOCOL.md §11).
const (
	DefaultMappedFileSizeCommitLog    = 1 << 30
	ConsumeQueueEntryBytes            = 20
	DefaultMappedFileSizeConsumeQueue = 300_000 * ConsumeQueueEntryBytes
	DefaultMaxMessageSize             = 4 << 20
	// RecordSizeReserveBytes is what a record may exceed the body limit by (topic, properties, header).
	RecordSizeReserveBytes = 64 << 10
	// ScheduleTopic is the delay queue's topic; its ConsumeQueue tag field holds the delivery time.
	ScheduleTopic = "SCHEDULE_TOPIC_XXXX"
)

// DefaultConfig returns RocketMQ's defaults with root as storePathRootDir.
func DefaultConfig(root string) Config {
	return Config{
		StorePathRootDir:                  root,
		MappedFileSizeCommitLog:           DefaultMappedFileSizeCommitLog,
		MappedFileSizeConsumeQueue:        DefaultMappedFileSizeConsumeQueue,
		MaxMessageSize:                    DefaultMaxMessageSize,
		FlushDiskType:                     AsyncFlush,
		FlushIntervalCommitLog:            500 * time.Millisecond,
		FlushCommitLogLeastPages:          4,
		FlushCommitLogThoroughInterval:    10 * time.Second,
		CommitIntervalCommitLog:           200 * time.Millisecond,
		CommitCommitLogLeastPages:         4,
		CommitCommitLogThoroughInterval:   200 * time.Millisecond,
		FlushIntervalConsumeQueue:         time.Second,
		FlushConsumeQueueLeastPages:       2,
		FlushConsumeQueueThoroughInterval: 60 * time.Second,
		SyncFlushTimeout:                  5 * time.Second,
		SyncFlushIdleInterval:             10 * time.Millisecond,
		TransientStorePoolSize:            5,
		TransientStorePoolPinned:          true,
		FlushLeastPagesWhenWarmMappedFile: 4096,
		UseReentrantLockWhenPutMessage:    true,
		OSPageCacheBusyTimeout:            time.Second,
		PutLockWarnThreshold:              500 * time.Millisecond,
		FileReservedTime:                  72 * time.Hour,
		DeleteWhen:                        "04",
		DiskMaxUsedSpaceRatio:             75,
		DiskSpaceCleanForciblyRatio:       85,
		DiskSpaceWarningLevelRatio:        90,
		CleanResourceInterval:             10 * time.Second,
		DeleteFilesBatchMax:               10,
		CheckCRCOnRecover:                 true,
		MessageIndexEnable:                true,
		MaxHashSlotNum:                    5_000_000,
		MaxIndexNum:                       20_000_000,
		MaxMsgsNumBatch:                   64,
		StoreHost:                         netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 10911),
		AccessMessageInMemoryMaxRatio:     40,
		MaxTransferBytesOnMessageInMemory: 256 << 10,
		MaxTransferCountOnMessageInMemory: 32,
		MaxTransferBytesOnMessageInDisk:   64 << 10,
		MaxTransferCountOnMessageInDisk:   8,
	}
}

func configError(key string, v any, want string) error {
	return fmt.Errorf("%w: %s = %v, want %s", ErrConfig, key, v, want)
}

// Validate checks every field, names the first bad one by its broker.conf key, and normalizes the ones
// RocketMQ normalizes (ConsumeQueue file size rounded to 20, disk ratio clamped to 10..95).
func (c *Config) Validate() error {
	page := int64(pageSize)
	switch {
	case c.StorePathRootDir == "":
		return configError("storePathRootDir", `""`, "a directory")
	case c.MappedFileSizeCommitLog <= 0 || c.MappedFileSizeCommitLog%page != 0:
		return configError("mappedFileSizeCommitLog", c.MappedFileSizeCommitLog, "a positive multiple of the page size")
	case c.MaxMessageSize <= 0:
		return configError("maxMessageSize", c.MaxMessageSize, "> 0")
	case int64(c.MaxMessageSize)+codec.MinRecordBytes+codec.BlankRecordBytes > c.MappedFileSizeCommitLog:
		return configError("maxMessageSize", c.MaxMessageSize, "a body that fits one CommitLog file")
	case c.MappedFileSizeConsumeQueue < ConsumeQueueEntryBytes:
		return configError("mappedFileSizeConsumeQueue", c.MappedFileSizeConsumeQueue, ">= 20")
	case c.FlushDiskType > SyncFlush:
		return configError("flushDiskType", c.FlushDiskType, "ASYNC_FLUSH or SYNC_FLUSH")
	case c.FlushIntervalCommitLog <= 0:
		return configError("flushIntervalCommitLog", c.FlushIntervalCommitLog, "> 0")
	case c.FlushCommitLogLeastPages < 0:
		return configError("flushCommitLogLeastPages", c.FlushCommitLogLeastPages, ">= 0")
	case c.FlushCommitLogThoroughInterval <= 0:
		return configError("flushCommitLogThoroughInterval", c.FlushCommitLogThoroughInterval, "> 0")
	case c.CommitIntervalCommitLog <= 0:
		return configError("commitIntervalCommitLog", c.CommitIntervalCommitLog, "> 0")
	case c.CommitCommitLogLeastPages < 0:
		return configError("commitCommitLogLeastPages", c.CommitCommitLogLeastPages, ">= 0")
	case c.CommitCommitLogThoroughInterval <= 0:
		return configError("commitCommitLogThoroughInterval", c.CommitCommitLogThoroughInterval, "> 0")
	case c.FlushIntervalConsumeQueue <= 0:
		return configError("flushIntervalConsumeQueue", c.FlushIntervalConsumeQueue, "> 0")
	case c.FlushConsumeQueueLeastPages < 0:
		return configError("flushConsumeQueueLeastPages", c.FlushConsumeQueueLeastPages, ">= 0")
	case c.FlushConsumeQueueThoroughInterval <= 0:
		return configError("flushConsumeQueueThoroughInterval", c.FlushConsumeQueueThoroughInterval, "> 0")
	case c.SyncFlushTimeout <= 0:
		return configError("syncFlushTimeout", c.SyncFlushTimeout, "> 0")
	case c.FlushDiskType == SyncFlush && c.SyncFlushIdleInterval <= 0:
		return configError("syncFlushIdleInterval", c.SyncFlushIdleInterval, "> 0")
	case c.TransientStorePoolEnable && c.TransientStorePoolSize < 1:
		return configError("transientStorePoolSize", c.TransientStorePoolSize, ">= 1")
	case c.WarmMappedFileEnable && c.FlushLeastPagesWhenWarmMappedFile <= 0:
		return configError("flushLeastPagesWhenWarmMapedFile", c.FlushLeastPagesWhenWarmMappedFile, "> 0")
	case c.OSPageCacheBusyTimeout <= 0:
		return configError("osPageCacheBusyTimeOutMills", c.OSPageCacheBusyTimeout, "> 0")
	case c.PutLockWarnThreshold <= 0:
		return configError("putLockWarnThreshold", c.PutLockWarnThreshold, "> 0")
	case c.FileReservedTime <= 0:
		return configError("fileReservedTime", c.FileReservedTime, "> 0")
	case c.CleanResourceInterval <= 0:
		return configError("cleanResourceInterval", c.CleanResourceInterval, "> 0")
	case c.DeleteFilesBatchMax <= 0:
		return configError("deleteFilesBatchMax", c.DeleteFilesBatchMax, "> 0")
	case c.DiskSpaceCleanForciblyRatio < 1 || c.DiskSpaceCleanForciblyRatio > 100:
		return configError("diskSpaceCleanForciblyRatio", c.DiskSpaceCleanForciblyRatio, "1..100")
	case c.DiskSpaceWarningLevelRatio < 1 || c.DiskSpaceWarningLevelRatio > 100:
		return configError("diskSpaceWarningLevelRatio", c.DiskSpaceWarningLevelRatio, "1..100")
	case c.MessageIndexEnable && (c.MaxHashSlotNum <= 0 || c.MaxHashSlotNum > 1<<28):
		return configError("maxHashSlotNum", c.MaxHashSlotNum, "1..268435456")
	case c.MessageIndexEnable && (c.MaxIndexNum <= 1 || c.MaxIndexNum > 1<<28):
		return configError("maxIndexNum", c.MaxIndexNum, "2..268435456")
	case c.MaxMsgsNumBatch <= 0:
		return configError("maxMsgsNumBatch", c.MaxMsgsNumBatch, "> 0")
	case !c.StoreHost.IsValid():
		return configError("storeHost", c.StoreHost, "ip:port")
	case c.AccessMessageInMemoryMaxRatio < 0 || c.AccessMessageInMemoryMaxRatio > 100:
		return configError("accessMessageInMemoryMaxRatio", c.AccessMessageInMemoryMaxRatio, "0..100")
	case c.MaxTransferBytesOnMessageInMemory <= 0 || c.MaxTransferCountOnMessageInMemory <= 0:
		return configError("maxTransferBytesOnMessageInMemory/maxTransferCountOnMessageInMemory",
			c.MaxTransferBytesOnMessageInMemory, "> 0")
	case c.MaxTransferBytesOnMessageInDisk <= 0 || c.MaxTransferCountOnMessageInDisk <= 0:
		return configError("maxTransferBytesOnMessageInDisk/maxTransferCountOnMessageInDisk",
			c.MaxTransferBytesOnMessageInDisk, "> 0")
	}
	if _, err := parseDeleteWhen(c.DeleteWhen); err != nil {
		return err
	}
	if c.FlushBackend == 0 {
		c.FlushBackend = DefaultFlushBackend(c.TransientStorePoolEnable)
	}
	c.MappedFileSizeConsumeQueue -= c.MappedFileSizeConsumeQueue % ConsumeQueueEntryBytes
	// RocketMQ clamps the ratio instead of refusing it (MessageStoreConfig.getDiskMaxUsedSpaceRatio).
	c.DiskMaxUsedSpaceRatio = min(max(c.DiskMaxUsedSpaceRatio, 10), 95)
	return nil
}

// DefaultFlushBackend is the backend that measured best here for each append mode
// (BENCHMARKS.md, flush benchmarks). With the transient pool, durability is pwrite +
// fdatasync (flush.DefaultKind). With mmap'ed appends, fdatasync would also write back
// the zero pages the prefault window dirtied ahead of the writer; written back, they
// are write-protected again and fault a second time in the puts' copies. msync of the
// written range leaves them alone.
func DefaultFlushBackend(transientStorePool bool) flush.Kind {
	if transientStorePool {
		return flush.DefaultKind
	}
	return flush.KindMsync
}

// maxRecordBytes is the largest record a put may write.
func (c *Config) maxRecordBytes() int {
	return int(min(int64(c.MaxMessageSize)+RecordSizeReserveBytes, c.MappedFileSizeCommitLog-codec.BlankRecordBytes))
}

func (c *Config) commitLogDir() string {
	return pathOr(c.StorePathCommitLog, c.StorePathRootDir, "commitlog")
}
func (c *Config) consumeQueueDir() string {
	return pathOr(c.StorePathConsumeQueue, c.StorePathRootDir, "consumequeue")
}
func (c *Config) indexDir() string { return pathOr(c.StorePathIndex, c.StorePathRootDir, "index") }
func (c *Config) checkpointPath() string {
	return pathOr(c.StoreCheckpoint, c.StorePathRootDir, "checkpoint")
}
func (c *Config) abortPath() string { return pathOr(c.AbortFile, c.StorePathRootDir, "abort") }
func (c *Config) lockPath() string  { return filepath.Join(c.StorePathRootDir, "lock") }

func pathOr(explicit, root, name string) string {
	if explicit != "" {
		return explicit
	}
	return filepath.Join(root, name)
}

// parseDeleteWhen reads deleteWhen: hours 0..23 separated by ';'.
func parseDeleteWhen(s string) ([24]bool, error) {
	var hours [24]bool
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		h, err := strconv.Atoi(part)
		if err != nil || h < 0 || h > 23 {
			return hours, configError("deleteWhen", strconv.Quote(s), `hours 0..23 separated by ';' (e.g. "04")`)
		}
		hours[h] = true
	}
	return hours, nil
}

// Deps are the Store's collaborators. Zero values get defaults.
type Deps struct {
	// Logger receives store events (never one line per message). nil = discard.
	Logger *slog.Logger
	// FS is the file system seam. nil = the OS, with Config.FlushBackend for durable writes.
	FS FS
	// Clock gives store timestamps, file ages and retention hours. nil = time.Now.
	Clock func() time.Time
	// Registerer receives the store's Prometheus collectors. nil = none registered.
	Registerer prometheus.Registerer
}

// MessageFilter decides from a ConsumeQueue entry's tag code whether a message matches a subscription.
// nil matches everything. Implementations must be safe for concurrent use and must not allocate.
type MessageFilter interface {
	IsMatchedByConsumeQueue(tagsCode int64) bool
}

// ConsumerOffset is one consumer group's committed offset in one queue: the next logical offset it will
// consume.
type ConsumerOffset struct {
	Group   string
	Topic   string
	QueueID int32
	Offset  int64
}

// ConsumerOffsetsFunc lists the committed consumer offsets. The store calls it (from its retention
// goroutine) only when a forced deletion is about to remove unexpired CommitLog files, to log which
// groups lose messages they have not consumed. It must be safe for concurrent use.
type ConsumerOffsetsFunc func() []ConsumerOffset

// ArrivingListener is called by the dispatcher after a ConsumeQueue entry is appended (long polling).
// properties is a view into mapped memory valid only during the call. It runs on the dispatcher goroutine:
// it must not block and must not call back into Put/Shutdown.
type ArrivingListener func(topic string, queueID int32, logicOffset int64, tagsCode int64, storeTimestamp int64, properties []byte)

// PutResult describes a stored message or batch.
type PutResult struct {
	Status PutMessageStatus
	// WroteOffset is the CommitLog offset of the (first) record: the offsetMsgId's offset.
	WroteOffset int64
	// WroteBytes is the bytes written (all records of a batch).
	WroteBytes int32
	// QueueOffset is the (first) logical offset in the topic/queue; 0 for prepared/rollback records.
	QueueOffset int64
	// MsgNum is the number of records written.
	MsgNum int32
	// StoreTimestamp is the store time (ms) of every record written.
	StoreTimestamp int64
}

// EndOffset is the CommitLog offset just past the last written record: what WaitDurable waits for.
func (r PutResult) EndOffset() int64 { return r.WroteOffset + int64(r.WroteBytes) }

// BatchPut is a batch of messages for one topic and queue (SEND_BATCH_MESSAGE). Every message must have
// the batch's Topic and QueueID; they get consecutive queue offsets and one store timestamp.
type BatchPut struct {
	Messages []codec.Message
	// PhysicalOffsets is filled by PutMessages with each record's CommitLog offset, for the batch's
	// comma-joined offsetMsgIds. Its capacity is reused: no allocation when it holds len(Messages).
	PhysicalOffsets []int64
}

// GetMessageResult is a pull's answer. Buffers are slices of mapped CommitLog memory, valid until Release.
// Results are pooled: call Release exactly once, and do not touch the result after it.
type GetMessageResult struct {
	Status          GetMessageStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Buffers holds one stored record per message, in queue order.
	Buffers [][]byte
	// MessageCount is len(Buffers); BufferTotalSize the sum of their lengths.
	MessageCount    int
	BufferTotalSize int
	// SuggestPullingFromSlave: the data read lies more than accessMessageInMemoryMaxRatio of RAM behind
	// the CommitLog end.
	SuggestPullingFromSlave bool

	refs  []*mappedFile
	store *Store
}

// QueryMessageResult is QUERY_MESSAGE's answer: records whose key matched, newest first. Buffers are
// slices of mapped memory valid until Release; call Release exactly once.
type QueryMessageResult struct {
	Buffers                  [][]byte
	BufferTotalSize          int
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyOffset int64

	refs []*mappedFile
}

// Release returns the result's file references.
func (r *QueryMessageResult) Release() {
	for _, mf := range r.refs {
		mf.release()
	}
	r.refs = nil
	r.Buffers = nil
}

// Stats are counters for GET_BROKER_RUNTIME_INFO and metrics. Safe to read at any time.
type Stats struct {
	PutMessageTimesTotal     int64
	PutMessageSizeTotal      int64
	PutMessageFailedTimes    int64
	GetMessageTimesTotal     int64
	GetMessageTransferredMsg int64
	DispatchBehindBytes      int64
	CommitLogMinOffset       int64
	CommitLogMaxOffset       int64
	CommitLogFlushedOffset   int64
	RunningFlags             RunningFlags
	PutLockMax               time.Duration
}

// MessageStore is what the broker needs from a store. *Store implements it over files; *MemStore is an
// in-memory fake for broker unit tests. Every method is safe for concurrent use.
type MessageStore interface {
	// Start runs the store's services; puts are refused before.
	Start() error
	// Shutdown stops the store once (a second call returns ErrClosed).
	Shutdown() error
	// PutMessage stores one message and assigns its queue offset, physical offset and store time.
	PutMessage(m *codec.Message) (PutResult, error)
	// PutMessages stores a batch for one topic/queue with consecutive queue offsets.
	PutMessages(batch *BatchPut) (PutResult, error)
	// WaitDurable calls done when every byte below endOffset is durable (SYNC_FLUSH), at once otherwise.
	WaitDurable(endOffset int64, done func(error))
	// GetMessage reads a queue for a pull (PROTOCOL.md §9 statuses); Release the result.
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, filter MessageFilter) (*GetMessageResult, error)
	// LookMessageByOffset returns the record starting at a CommitLog offset (VIEW_MESSAGE_BY_ID).
	LookMessageByOffset(phyOffset int64) (rec []byte, release func(), err error)
	// QueryMessage finds records by KEYS word or UNIQ_KEY (QUERY_MESSAGE); Release the result.
	QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryMessageResult, error)
	// GetMaxOffsetInQueue is the next logical offset of a queue.
	GetMaxOffsetInQueue(topic string, queueID int32) int64
	// GetMinOffsetInQueue is the first live logical offset of a queue.
	GetMinOffsetInQueue(topic string, queueID int32) int64
	// GetOffsetInQueueByTime finds a logical offset by store time (SEARCH_OFFSET_BY_TIMESTAMP).
	GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64, upper bool) int64
	// GetEarliestMessageTime is the store time of a queue's first live message.
	GetEarliestMessageTime(topic string, queueID int32) (int64, error)
	// GetCommitLogOffsetInQueue is the CommitLog offset of the message at a logical offset.
	GetCommitLogOffsetInQueue(topic string, queueID int32, consumeQueueOffset int64) int64
	// MaxPhyOffset is the end of the CommitLog.
	MaxPhyOffset() int64
	// MinPhyOffset is the start of the oldest CommitLog file.
	MinPhyOffset() int64
	// DispatchBehindBytes is how far ConsumeQueues trail the CommitLog.
	DispatchBehindBytes() int64
	// SetArrivingListener sets the long-polling hook called for every new ConsumeQueue entry.
	SetArrivingListener(l ArrivingListener)
	// SetDelayLevelTable sets the delay of each level for SCHEDULE_TOPIC_XXXX delivery times.
	SetDelayLevelTable(delays []time.Duration)
	// SetConsumerOffsets gives retention the consumer groups' progress (cleanFileForciblyEnable logs it).
	SetConsumerOffsets(fn ConsumerOffsetsFunc)
	// IsOSPageCacheBusy reports a put holding the put lock past osPageCacheBusyTimeOutMills.
	IsOSPageCacheBusy() bool
	// BeginTimeInLock is how long the current put has held the put lock (0 when free).
	BeginTimeInLock() time.Duration
	// DeleteTopics removes topics' ConsumeQueues and queue offsets.
	DeleteTopics(topics ...string) error
	// RunningFlags reports DISK_FULL, NOT_WRITEABLE and the other RunningFlags bits.
	RunningFlags() RunningFlags
	// Stats returns counters for GET_BROKER_RUNTIME_INFO.
	Stats() Stats
}
