package store

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
		"storePathRootDir":        func(c *Config) { c.StorePathRootDir = "" },
		"mappedFileSizeCommitLog": func(c *Config) { c.MappedFileSizeCommitLog = 1000 },
		"maxMessageSize":          func(c *Config) { c.MaxMessageSize = 2 << 30 },
		"flushIntervalCommitLog":  func(c *Config) { c.FlushIntervalCommitLog = 0 },
		"syncFlushTimeout":        func(c *Config) { c.SyncFlushTimeout = -time.Second },
		"deleteWhen":              func(c *Config) { c.DeleteWhen = "25" },
		"fileReservedTime":        func(c *Config) { c.FileReservedTime = 0 },
		"maxHashSlotNum":          func(c *Config) { c.MaxHashSlotNum = 0 },
		"storeHost":               func(c *Config) { c.StoreHost = netip.AddrPort{} },
		"transientStorePoolSize":  func(c *Config) { c.TransientStorePoolEnable, c.TransientStorePoolSize = true, 0 },
	} {
		c := DefaultConfig("/data")
		mutate(&c)
		err := c.Validate()
		require.ErrorIs(t, err, ErrConfig, key)
		require.Contains(t, err.Error(), key)
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
