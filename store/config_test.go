package store

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/conf"
)

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig("/data")
	require.NoError(t, c.Validate())
	require.Equal(t, int64(6_000_000), c.MappedFileSizeConsumeQueue)

	c.MappedFileSizeConsumeQueue = 1001
	c.DiskMaxUsedSpaceRatio = 99
	require.NoError(t, c.Validate())
	require.Equal(t, int64(1000), c.MappedFileSizeConsumeQueue, "rounded down to whole entries")
	require.Equal(t, 95, c.DiskMaxUsedSpaceRatio, "clamped like RocketMQ")

	for key, mutate := range map[string]func(*Config){
		"storePathRootDir":              func(c *Config) { c.StorePathRootDir = "" },
		"mappedFileSizeCommitLog":       func(c *Config) { c.MappedFileSizeCommitLog = 1000 },
		"maxMessageSize":                func(c *Config) { c.MaxMessageSize = 2 << 30 },
		"flushIntervalCommitLog":        func(c *Config) { c.FlushIntervalCommitLog = 0 },
		"syncFlushTimeout":              func(c *Config) { c.SyncFlushTimeout = -time.Second },
		"deleteWhen":                    func(c *Config) { c.DeleteWhen = "25" },
		"fileReservedTime":              func(c *Config) { c.FileReservedTime = 0 },
		"maxHashSlotNum":                func(c *Config) { c.MaxHashSlotNum = 0 },
		"storeHost":                     func(c *Config) { c.StoreHost = netip.AddrPort{} },
		"transientStorePoolSize":        func(c *Config) { c.TransientStorePoolEnable, c.TransientStorePoolSize = true, 0 },
		"prewriteMappedFileDutyPercent": func(c *Config) { c.PrewriteMappedFileDutyPercent = 101 },
	} {
		c := DefaultConfig("/data")
		mutate(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrConfig, key)
		var ve *conf.ValueError
		require.ErrorAs(t, err, &ve, key)
		require.Equal(t, key, ve.Key)
		require.NotEmpty(t, ve.Allowed, key)
	}

	d, err := ParseFlushDiskType(" sync_flush ")
	require.NoError(t, err)
	require.Equal(t, SyncFlush, d)
	require.Equal(t, "SYNC_FLUSH", d.String())
	_, err = ParseFlushDiskType("fast")
	require.ErrorIs(t, err, ErrConfig)
	require.Equal(t, "CREATE_MAPEDFILE_FAILED", CreateMappedFileFailed.String())
	require.Equal(t, "OFFSET_FOUND_NULL", OffsetFoundNull.String())
	require.Equal(t, "NOT_WRITEABLE|DISK_FULL", (FlagDiskFull | FlagNotWriteable).String())
	require.Equal(t, "OK", RunningFlags(0).String())
}

// TestDefaultConfigValues: the default tags give what DefaultConfig wrote field by field before
// the defaults moved next to their fields (issue 15 item 4), and the exported constants agree.
func TestDefaultConfigValues(t *testing.T) {
	want := Config{
		StorePathRootDir:                  "/r",
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
		TransientStorePoolDir:             "/dev/shm",
		FlushLeastPagesWhenWarmMappedFile: 4096,
		PrewriteMappedFileEnable:          true,
		PrewriteMappedFileDutyPercent:     25,
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
	require.Equal(t, want, DefaultConfig("/r"))
	require.EqualValues(t, 1<<30, DefaultMappedFileSizeCommitLog)
	require.EqualValues(t, 6_000_000, DefaultMappedFileSizeConsumeQueue)
	require.EqualValues(t, 4<<20, DefaultMaxMessageSize)
}

// TestConfigKeys: the store's settings are read by their RocketMQ names, enums by their exact
// spelling, and a bad enum value is refused with the allowed ones.
func TestConfigKeys(t *testing.T) {
	c := DefaultConfig("/r")
	for key, value := range map[string]string{"flushDiskType": "SYNC_FLUSH", "flushBackend": "fdatasync",
		"fileReservedTime": "48", "osPageCacheBusyTimeOutMills": "250", "warmMapedFileEnable": "true"} {
		found, err := conf.Set(&c, key, value)
		require.True(t, found, key)
		require.NoError(t, err, key)
		got, _ := conf.Get(&c, key)
		require.Equal(t, value, got, key)
	}
	require.Equal(t, SyncFlush, c.FlushDiskType)
	require.Equal(t, flush.KindFdatasync, c.FlushBackend)
	require.Equal(t, 48*time.Hour, c.FileReservedTime)
	require.Equal(t, 250*time.Millisecond, c.OSPageCacheBusyTimeout)
	require.True(t, c.WarmMappedFileEnable)

	_, err := conf.Set(&c, "flushDiskType", "sync_flush")
	require.EqualError(t, err, `key flushDiskType = "sync_flush"; allowed: ASYNC_FLUSH or SYNC_FLUSH`)
	_, err = conf.Set(&c, "flushBackend", "io_uring")
	require.EqualError(t, err, `key flushBackend = "io_uring"; allowed: iouring, msync or fdatasync`)
	found, err := conf.Set(&c, "flushBackend", "")
	require.True(t, found)
	require.NoError(t, err)
	v, _ := conf.Get(&c, "flushBackend")
	require.Empty(t, v, "no backend chosen")

	k, ok := conf.Lookup(&c, "flushDiskType")
	require.True(t, ok)
	require.Equal(t, []string{"ASYNC_FLUSH", "SYNC_FLUSH"}, k.Values)
	for _, key := range conf.Keys(Config{}) {
		require.NotEmpty(t, key.Help, "%s has no help", key.Name)
	}
	_, ok = conf.Lookup(&c, "syncFlushIdleInterval")
	require.False(t, ok, "not a broker.conf key")
}
