package store

import (
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
	FlushBackend FlushBackend
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
	// Off on a slave, as in RocketMQ: replicated bytes go straight into the mapping.
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
func DefaultFlushBackend(transientStorePool bool) FlushBackend {
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

// FlushBackend is how the CommitLog makes bytes durable (flushBackend): iouring, msync or fdatasync.
type FlushBackend = flush.Kind

// ParseFlushBackend reads iouring (or io_uring), msync or fdatasync (case-insensitive).
func ParseFlushBackend(s string) (FlushBackend, error) {
	k, err := flush.ParseKind(s)
	if err != nil {
		return 0, fmt.Errorf("%w: flushBackend=%q, want iouring, msync or fdatasync", ErrConfig, s)
	}
	return k, nil
}
