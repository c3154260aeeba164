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
	"github.com/ringmq/ringmq/internal/conf"
)

// Config configures a Store. Start from DefaultConfig.
//
// It is a settings struct (internal/conf): each field a broker.conf key sets carries the key
// (RocketMQ's MessageStoreConfig name) in its prop tag, its default in its default tag, and
// the meaning --help prints in its help tag. The broker's Config embeds this struct, so a key
// sets the field here directly. Every default is written once, as the default tag next to
// its field (fields no file sets too); a field without one defaults to its zero value.
type Config struct {
	// StorePathRootDir holds every store file. Required. DefaultConfig takes it as its argument.
	StorePathRootDir string `prop:"storePathRootDir" group:"store" default:"./data" help:"directory of every store file (and of the broker's config/ files)"`
	// The paths below are derived from StorePathRootDir when empty (commitLogDir, ...).
	StorePathCommitLog    string `prop:"storePathCommitLog" group:"store" help:"CommitLog directory; empty: <storePathRootDir>/commitlog"`
	StorePathConsumeQueue string `prop:"storePathConsumeQueue" group:"store" help:"ConsumeQueue directory; empty: <storePathRootDir>/consumequeue"`
	StorePathIndex        string `prop:"storePathIndex" group:"store" help:"IndexFile directory; empty: <storePathRootDir>/index"`
	StoreCheckpoint       string `prop:"storeCheckpoint" group:"store" help:"checkpoint file; empty: <storePathRootDir>/checkpoint"`
	AbortFile             string `prop:"abortFile" group:"store" help:"file present while the store is open; found at start it means a crash, and recovery checks more; empty: <storePathRootDir>/abort"`

	// MappedFileSizeCommitLog (alias mapedFileSizeCommitLog): bytes per CommitLog file. Must be a
	// multiple of the OS page size and hold a largest record plus 8 bytes.
	MappedFileSizeCommitLog int64 `prop:"mappedFileSizeCommitLog" group:"store" allowed:"a multiple of the page size, at least 4096" default:"1073741824" help:"bytes per CommitLog file"`
	// MappedFileSizeConsumeQueue (alias mapedFileSizeConsumeQueue): bytes per ConsumeQueue file,
	// 300,000 entries of 20 bytes. Rounded down to a multiple of 20 by Validate.
	MappedFileSizeConsumeQueue int64 `prop:"mappedFileSizeConsumeQueue" group:"store" allowed:"20 or more" default:"6000000" help:"bytes per ConsumeQueue file (20 bytes an entry)"`
	// MaxMessageSize: largest body. A record may be 64 KiB larger.
	MaxMessageSize int `prop:"maxMessageSize" group:"store" allowed:"1 or more, at most mappedFileSizeCommitLog - 64 KiB" default:"4194304" help:"largest message body a send may carry (bytes)"`

	FlushDiskType FlushDiskType `prop:"flushDiskType" group:"flush" default:"ASYNC_FLUSH" help:"ASYNC_FLUSH answers a send once written and flushes every flushIntervalCommitLog; SYNC_FLUSH answers once the message is on disk (group commit)"`
	// FlushBackend: zero picks by mode (see DefaultFlushBackend): msync for mmap'ed appends,
	// fdatasync for the transient pool. A ringmq key.
	FlushBackend           FlushBackend  `prop:"flushBackend" group:"flush" help:"how CommitLog bytes are made durable; empty: msync for mapped appends, fdatasync with transientStorePoolEnable (ringmq)"`
	FlushIntervalCommitLog time.Duration `prop:"flushIntervalCommitLog" group:"flush" allowed:"1 or more" unit:"ms" default:"500" help:"ASYNC_FLUSH: how often the CommitLog is flushed"`
	// FlushCommitLogLeastPages: 4 KiB pages dirty before an async flush.
	FlushCommitLogLeastPages       int           `prop:"flushCommitLogLeastPages" group:"flush" allowed:"0 or more" default:"4" help:"ASYNC_FLUSH: dirty 4 KiB pages a periodic flush waits for"`
	FlushCommitLogThoroughInterval time.Duration `prop:"flushCommitLogThoroughInterval" group:"flush" allowed:"1 or more" unit:"ms" default:"10000" help:"flush the CommitLog at least this often, whatever flushCommitLogLeastPages says"`
	// The transient pool's commits (pooled bytes written to the file).
	CommitIntervalCommitLog         time.Duration `prop:"commitIntervalCommitLog" group:"flush" allowed:"1 or more" unit:"ms" default:"200" help:"transientStorePoolEnable: how often pooled bytes are written to the CommitLog file"`
	CommitCommitLogLeastPages       int           `prop:"commitCommitLogLeastPages" group:"flush" allowed:"0 or more" default:"4" help:"transientStorePoolEnable: pages a periodic commit waits for"`
	CommitCommitLogThoroughInterval time.Duration `prop:"commitCommitLogThoroughInterval" group:"flush" allowed:"1 or more" unit:"ms" default:"200" help:"commit pooled bytes at least this often, whatever commitCommitLogLeastPages says"`
	// FlushIntervalConsumeQueue is also the IndexFile flush and the checkpoint period.
	FlushIntervalConsumeQueue         time.Duration `prop:"flushIntervalConsumeQueue" group:"flush" allowed:"1 or more" unit:"ms" default:"1000" help:"how often ConsumeQueues, IndexFiles and the checkpoint are flushed"`
	FlushConsumeQueueLeastPages       int           `prop:"flushConsumeQueueLeastPages" group:"flush" allowed:"0 or more" default:"2" help:"dirty ConsumeQueue pages a periodic flush waits for"`
	FlushConsumeQueueThoroughInterval time.Duration `prop:"flushConsumeQueueThoroughInterval" group:"flush" allowed:"1 or more" unit:"ms" default:"60000" help:"flush ConsumeQueues at least this often, whatever flushConsumeQueueLeastPages says"`
	SyncFlushTimeout                  time.Duration `prop:"syncFlushTimeout" group:"flush" allowed:"1 or more" unit:"ms" default:"5000" help:"SYNC_FLUSH: how long a send waits for its flush before FLUSH_DISK_TIMEOUT"`
	// SyncFlushIdleInterval: under SYNC_FLUSH, how often the whole CommitLog is flushed while no waiter is
	// queued, for messages sent without waiting for the store; RocketMQ's GroupCommitService value (no
	// broker key: RocketMQ has none). FlushIntervalCommitLog applies to ASYNC_FLUSH.
	SyncFlushIdleInterval time.Duration `default:"10" unit:"ms"`

	// TransientStorePoolEnable: append into pinned buffers, commit to the file.
	// Off on a slave, as in RocketMQ: replicated bytes go straight to the file (AppendReplica).
	TransientStorePoolEnable bool `prop:"transientStorePoolEnable" group:"store" help:"append into a pool of pinned buffers and commit them to the CommitLog file (off on a slave)"`

	// Slave (brokerRole=SLAVE, set by the broker): puts are refused (ErrSlave); the CommitLog grows only
	// through AppendReplica, at the master's offsets, and the dispatcher waits for a record whose bytes
	// have not all arrived instead of calling it corrupt.
	Slave bool
	// TruncateCommitLog and TruncateCommitLogTo (set by the broker in controller mode, never read from
	// broker.conf): recovery cuts the CommitLog at TruncateCommitLogTo, a record boundary or file start,
	// with the ConsumeQueue and IndexFile entries past it, and writes a checkpoint: the divergent tail a
	// returning replica holds that the new master's CommitLog does not (never acknowledged: a SYNC send
	// is acknowledged only once every in-sync replica holds it). Nothing happens when the recovered
	// CommitLog ends at or before it.
	TruncateCommitLog   bool
	TruncateCommitLogTo int64
	// TrimPartialRecord (set by the broker in controller mode when a replica opens its store as the
	// new master): recovery cuts a record the CommitLog holds only the first bytes of — what a slave
	// keeps when its master died mid-frame, never acknowledged — so that the master's first put starts
	// at a record boundary. A slave's store (Slave) always cuts it.
	TrimPartialRecord bool
	// TransientStorePoolSize: buffers in the pool.
	TransientStorePoolSize int `prop:"transientStorePoolSize" group:"store" allowed:"1 or more" default:"5" help:"buffers in the transient store pool, each mappedFileSizeCommitLog bytes"`
	// TransientStorePoolPinned (ringmq): require mlock.
	TransientStorePoolPinned bool `prop:"transientStorePoolPinned" group:"store" default:"true" help:"the pool's buffers must be pinned with mlock; false: run unpinned, with one warning, when mlock fails (ringmq)"`
	// TransientStorePoolDir (ringmq): a directory on tmpfs under which the pool's buffers are files
	// mapped shared (transientpool.DirFor: one subdirectory per CommitLog directory), so that the bytes a
	// process appended and acknowledged but had not committed yet survive its crash and the next start
	// writes them into the CommitLog. When it is missing, not tmpfs or too small, the buffers are
	// anonymous memory (one warning). "off": anonymous memory, no warning.
	TransientStorePoolDir string `prop:"transientStorePoolDir" group:"store" default:"/dev/shm" help:"tmpfs directory for the transient pool's buffer files, so acknowledged messages not yet committed survive a crash of the process (not of the machine); off: anonymous memory, which such a crash loses (ringmq)"`
	// WarmMappedFileEnable: under SYNC_FLUSH the allocator warms each new CommitLog
	// file whole before the writer reaches it: every page populated for writing (MADV_POPULATE_WRITE;
	// without it, a zero written into each page) and the zeros synced to the disk, so later syncs of the
	// file write data only. Under ASYNC_FLUSH the prefault window already populates the pages ahead of
	// the writer, so whole files are warmed only with WarmMappedFileMlock or without MADV_POPULATE_WRITE
	// (never with the transient pool, whose appends do not touch the mapping).
	WarmMappedFileEnable bool `prop:"warmMapedFileEnable" group:"store" help:"populate (and under SYNC_FLUSH sync) each new CommitLog file before it is written"`
	// FlushLeastPagesWhenWarmMappedFile: under SYNC_FLUSH, warming syncs the file every this many pages
	// (16 MiB of 4 KiB pages).
	FlushLeastPagesWhenWarmMappedFile int `prop:"flushLeastPagesWhenWarmMapedFile" group:"store" allowed:"1 or more" default:"4096" help:"warmMapedFileEnable under SYNC_FLUSH: sync the warmed file every this many pages"`
	// WarmMappedFileMlock (ringmq): pin each warmed file with mlock until the writer leaves it, as
	// RocketMQ's warming does. A failed mlock (RLIMIT_MEMLOCK) logs one warning naming the limit and
	// leaves the file unpinned.
	WarmMappedFileMlock bool `prop:"warmMappedFileMlock" group:"store" help:"pin each warmed CommitLog file with mlock while it is written, as RocketMQ does (ringmq)"`
	// PrewriteMappedFileEnable (ringmq): under SYNC_FLUSH the allocator writes the zeros of each prepared
	// CommitLog file with large writes and fdatasyncs them before the writer reaches the file
	// (prewrite.go), so fallocate's unwritten extents become written ones and the group commit's
	// fdatasyncs write data only, with no extent conversion to journal: a 4 KiB write + fdatasync took
	// p50 114 µs on a pre-written file here against 244 µs on a fallocated, never-written one. It uses
	// no disk space beyond the prepared files, which are allocated anyway. Nothing to gain under
	// ASYNC_FLUSH, where nobody waits for a sync: there it does nothing.
	PrewriteMappedFileEnable bool `prop:"prewriteMappedFileEnable" group:"flush" default:"true" help:"SYNC_FLUSH: write and sync the zeros of each prepared CommitLog file before it is used, so durable writes need no extent conversion (ringmq)"`
	// PrewriteMappedFileDutyPercent (ringmq): the share of the time pre-writing may keep the disk busy.
	// After each chunk (a write and its fdatasync) it leaves the disk to the group commit for
	// 100/duty − 1 times as long as the chunk took, so a slow (busy) disk slows the pre-writing too.
	PrewriteMappedFileDutyPercent int `prop:"prewriteMappedFileDutyPercent" group:"flush" allowed:"1..100" default:"25" help:"prewriteMappedFileEnable: the share of time (1..100 %) pre-writing may keep the disk busy; it pauses after each chunk accordingly (ringmq)"`

	// UseReentrantLockWhenPutMessage: true = mutex, false = spin.
	UseReentrantLockWhenPutMessage bool `prop:"useReentrantLockWhenPutMessage" group:"store" default:"true" help:"the put lock is a mutex; false: a spin lock"`
	// OSPageCacheBusyTimeout: a put holding the lock longer makes IsOSPageCacheBusy true.
	OSPageCacheBusyTimeout time.Duration `prop:"osPageCacheBusyTimeOutMills" group:"limits" allowed:"1 or more" unit:"ms" default:"1000" help:"a put holding the put lock longer means the page cache is busy: sends are refused with SYSTEM_BUSY"`
	// PutLockWarnThreshold: time in the put lock logged as a warning ([NOTIFYME]).
	PutLockWarnThreshold time.Duration `default:"500" unit:"ms"`

	// FileReservedTime (hours in broker.conf): CommitLog file age before deletion.
	FileReservedTime time.Duration `prop:"fileReservedTime" group:"store" allowed:"1 or more" unit:"h" default:"72" help:"CommitLog files older than this are deleted at deleteWhen"`
	// DeleteWhen: hours of day, ';'-separated, when expired files are deleted.
	DeleteWhen string `prop:"deleteWhen" group:"store" allowed:"hours 0..23 separated by ';'" default:"04" help:"hours of the day when expired files are deleted"`
	// DiskMaxUsedSpaceRatio: % used above which expired files go at once, clamped to 10..95 as
	// RocketMQ does.
	DiskMaxUsedSpaceRatio int `prop:"diskMaxUsedSpaceRatio" group:"store" allowed:"10..95" default:"75" help:"disk use (%) above which expired files are deleted at once, not at deleteWhen"`
	// DiskSpaceCleanForciblyRatio (rocketmq.broker.diskSpaceCleanForciblyRatio): % used above which the
	// oldest files go even if not expired, when CleanFileForciblyEnable is set.
	DiskSpaceCleanForciblyRatio int `default:"85"`
	// CleanFileForciblyEnable: above DiskSpaceCleanForciblyRatio, delete the
	// oldest CommitLog files before fileReservedTime, acknowledged and unconsumed messages included,
	// logged at ERROR with the files and what each consumer group loses. Default false, unlike RocketMQ
	// (true): without it a full disk refuses puts and keeps everything stored (README "When the disk
	// fills up").
	CleanFileForciblyEnable bool `prop:"cleanFileForciblyEnable" group:"store" help:"above 85% disk use, delete the oldest CommitLog files before fileReservedTime, unconsumed messages included (RocketMQ's default is true)"`
	// DiskSpaceWarningLevelRatio (rocketmq.broker.diskSpaceWarningLevelRatio): % used above which puts are
	// refused (ErrDiskFull).
	DiskSpaceWarningLevelRatio int `default:"90"`
	// CleanResourceInterval: retention and disk-guard period.
	CleanResourceInterval time.Duration `prop:"cleanResourceInterval" group:"store" allowed:"1 or more" unit:"ms" default:"10000" help:"how often retention and the disk-space checks run"`
	// DeleteFilesBatchMax: files deleted per retention pass (RocketMQ DELETE_FILES_BATCH_MAX).
	DeleteFilesBatchMax int `default:"10"`

	// CheckCRCOnRecover: verify body CRCs when scanning on recovery.
	CheckCRCOnRecover bool `prop:"checkCRCOnRecover" group:"store" default:"true" help:"check every message body's CRC when recovering the CommitLog"`

	// MessageIndexEnable: build the IndexFile.
	MessageIndexEnable bool `prop:"messageIndexEnable" group:"store" default:"true" help:"build IndexFiles (queries by message key and id)"`
	MaxHashSlotNum     int  `prop:"maxHashSlotNum" group:"store" allowed:"1..268435456" default:"5000000" help:"hash slots per IndexFile"`
	MaxIndexNum        int  `prop:"maxIndexNum" group:"store" allowed:"2..268435456" default:"20000000" help:"entries per IndexFile"`
	// MaxMsgsNumBatch (RocketMQ's maxMsgsNumBatch, not a broker key here): cap on QueryMessage results.
	MaxMsgsNumBatch int `default:"64"`

	// StoreHost is the broker address written as STOREHOST into every record; the broker sets it
	// to brokerIP1:listenPort.
	StoreHost netip.AddrPort `default:"127.0.0.1:10911"`

	// AccessMessageInMemoryMaxRatio: % of RAM behind the CommitLog end counted as "in memory" for pull
	// batch limits.
	AccessMessageInMemoryMaxRatio     int `prop:"accessMessageInMemoryMaxRatio" group:"limits" allowed:"0..100" default:"40" help:"messages within this % of RAM behind the CommitLog end count as in memory (pull batch limits)"`
	MaxTransferBytesOnMessageInMemory int `prop:"maxTransferBytesOnMessageInMemory" group:"limits" allowed:"1 or more" default:"262144" help:"bytes a pull returns at most when its messages are in memory"`
	MaxTransferCountOnMessageInMemory int `prop:"maxTransferCountOnMessageInMemory" group:"limits" allowed:"1 or more" default:"32" help:"messages a pull returns at most when they are in memory"`
	MaxTransferBytesOnMessageInDisk   int `prop:"maxTransferBytesOnMessageInDisk" group:"limits" allowed:"1 or more" default:"65536" help:"bytes a pull returns at most when its messages are on disk only"`
	MaxTransferCountOnMessageInDisk   int `prop:"maxTransferCountOnMessageInDisk" group:"limits" allowed:"1 or more" default:"8" help:"messages a pull returns at most when they are on disk only"`
}

// Defaults (PROTOCOL.md §11) other packages size things by; they equal the default tags above
// (TestDefaultConfigMatchesConstants).
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

// DefaultConfig returns the defaults (RocketMQ's, from the default tags) with root as
// storePathRootDir.
func DefaultConfig(root string) Config {
	var c Config
	conf.SetDefaults(&c)
	c.StorePathRootDir = root
	return c
}

// configError names the key, its value and what is allowed (a *conf.ValueError wrapped with
// ErrConfig). The broker's Validate rewrites the value as the file writes it (500 for a
// duration of 500ms).
func configError(key string, v any, want string) error {
	return fmt.Errorf("%w: %w", ErrConfig, &conf.ValueError{Key: key, Value: fmt.Sprint(v), Allowed: want})
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
	case c.PrewriteMappedFileEnable && (c.PrewriteMappedFileDutyPercent < 1 || c.PrewriteMappedFileDutyPercent > 100):
		return configError("prewriteMappedFileDutyPercent", c.PrewriteMappedFileDutyPercent, "1..100")
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

// defaultPoolDir is transientStorePoolDir's default: the tmpfs every Linux system mounts.
const defaultPoolDir = "/dev/shm"

// poolDir is the parent directory of the transient pool's files, "" for anonymous buffers.
func (c *Config) poolDir() string {
	if c.TransientStorePoolDir == "off" {
		return ""
	}
	return c.TransientStorePoolDir // "" too: anonymous
}

// leftoverPoolDir is where recovery looks for buffer files a crashed process left: poolDir, or the
// default when the pool is now configured off.
func (c *Config) leftoverPoolDir() string {
	if d := c.poolDir(); d != "" {
		return d
	}
	return defaultPoolDir
}

// poolIdentity names this store's CommitLog to the pool's files: its absolute directory.
func (c *Config) poolIdentity() string {
	dir := c.commitLogDir()
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return dir
}

// CommitLogDir is where the CommitLog's files are: storePathCommitLog, else
// <storePathRootDir>/commitlog.
func (c *Config) CommitLogDir() string { return c.commitLogDir() }

// ConsumeQueueDir is where the ConsumeQueues are: storePathConsumeQueue, else
// <storePathRootDir>/consumequeue.
func (c *Config) ConsumeQueueDir() string { return c.consumeQueueDir() }

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
			return hours, configError("deleteWhen", s, `hours 0..23 separated by ';' (e.g. "04")`)
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

// flushDiskTypeNames are the flushDiskType spellings, indexed by FlushDiskType.
var flushDiskTypeNames = []string{"ASYNC_FLUSH", "SYNC_FLUSH"}

// EnumValues lists the flushDiskType spellings (conf.Enum).
func (FlushDiskType) EnumValues() []string { return append([]string(nil), flushDiskTypeNames...) }

// MarshalText returns RocketMQ's spelling.
func (t FlushDiskType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// UnmarshalText reads flushDiskType as RocketMQ does (FlushDiskType.valueOf): exactly
// ASYNC_FLUSH or SYNC_FLUSH. ParseFlushDiskType is the lenient reader.
func (t *FlushDiskType) UnmarshalText(text []byte) error {
	i, err := conf.ParseEnum(string(text), flushDiskTypeNames...)
	if err != nil {
		return err
	}
	*t = FlushDiskType(i)
	return nil
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
