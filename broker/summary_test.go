package broker

import (
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/store"
)

// TestStartupSummary: a started broker logs five INFO lines saying where it listens, where it
// stores and with which file sizes, and the flush and append modes in effect.
func TestStartupSummary(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		mutate                      func(*Config)
		flushDiskType, flushBackend string
		mode                        string
	}{
		{"mmap async", nil, "ASYNC_FLUSH", "msync", "mmap"},
		{"pool sync", func(c *Config) {
			c.FlushDiskType = store.SyncFlush
			withTransientPool(c)
		}, "SYNC_FLUSH", "fdatasync", "transientStorePool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb := startTestBroker(t, tc.mutate)
			logger, rec := logtest.Logger()
			tb.b.LogStartupSummary(logger, "127.0.0.1:9106")

			records := rec.All()
			var msgs []string
			for _, r := range records {
				require.Equal(t, slog.LevelInfo, r.Level, r.Message)
				msgs = append(msgs, r.Message)
			}
			require.Equal(t, []string{"broker started", "listening", "store", "flush", "append"}, msgs)
			cfg := tb.b.Config()
			attr := func(i int, key string) string { return logtest.Attr(records[i], key) }

			require.Equal(t, cfg.BrokerName, attr(0, "brokerName"))
			require.Equal(t, "ASYNC_MASTER", attr(0, "brokerRole"))
			require.Contains(t, attr(0, "version"), "(commit ")

			require.Equal(t, tb.b.Addr(), attr(1, "remoting"))
			require.Equal(t, tb.BrokerAddr, attr(1, "advertised"))
			require.Equal(t, "off", attr(1, "fast"), "listenPort 0: no fast port")
			require.Equal(t, "127.0.0.1:"+strconv.Itoa(cfg.HAListenPort), attr(1, "ha"))
			require.Equal(t, tb.b.EmbeddedNamesrv().Addr().String(), attr(1, "namesrv"))
			require.Equal(t, "127.0.0.1:9106", attr(1, "metrics"))
			require.Equal(t, "disabled", attr(1, "tls"))

			require.Equal(t, cfg.StorePathRootDir, attr(2, "path"), "an absolute temp dir already")
			require.Equal(t, strconv.FormatInt(cfg.MappedFileSizeCommitLog, 10), attr(2, "commitLogFileBytes"))
			require.Equal(t, "2", attr(2, "preallocatedCommitLogFiles"))
			require.Equal(t, strconv.FormatInt(cfg.MappedFileSizeConsumeQueue, 10), attr(2, "consumeQueueFileBytes"))
			require.Equal(t, strconv.Itoa(40+cfg.MaxHashSlotNum*4+cfg.MaxIndexNum*20), attr(2, "indexFileBytes"))

			require.Equal(t, tc.flushDiskType, attr(3, "flushDiskType"))
			require.Equal(t, tc.flushBackend, attr(3, "flushBackend"))
			require.Empty(t, attr(3, "fallbackReason"), "the backend asked for (by default) is the one in use")

			require.Equal(t, tc.mode, attr(4, "mode"))
			require.Contains(t, []string{"true", "false"}, attr(4, "pinned"))
			if tc.mode == "transientStorePool" { // whether a process crash keeps what the buffers hold
				if attr(4, "crashSafe") == "true" {
					require.True(t, strings.HasPrefix(attr(4, "files"), "/dev/shm/ringmq-pool-"), attr(4, "files"))
				} else {
					require.Equal(t, "false", attr(4, "crashSafe"))
					require.Equal(t, "anonymous", attr(4, "files"))
				}
			}
		})
	}
}

// TestStartupSummaryNamesTheFlushBackendInUse: with flushBackend=iouring the summary says
// io_uring when the kernel lets this process use it, else fdatasync with what was asked for and
// why it could not be had (seccomp, kernel.io_uring_disabled, an old kernel).
func TestStartupSummaryNamesTheFlushBackendInUse(t *testing.T) {
	tb := startTestBroker(t, func(c *Config) {
		c.FlushDiskType = store.SyncFlush
		c.FlushBackend = store.FlushBackend(0)
		require.NoError(t, c.FlushBackend.UnmarshalText([]byte("iouring")))
	})
	logger, rec := logtest.Logger()
	tb.b.LogStartupSummary(logger, "")
	flush := rec.All()[3]
	require.Equal(t, "flush", flush.Message)
	switch backend := logtest.Attr(flush, "flushBackend"); backend {
	case "iouring":
		require.Empty(t, logtest.Attr(flush, "fallbackReason"))
	case "fdatasync":
		require.Equal(t, "iouring", logtest.Attr(flush, "requested"))
		require.Contains(t, logtest.Attr(flush, "fallbackReason"), "io_uring")
	default:
		t.Fatalf("flushBackend=%s", backend)
	}
	require.Equal(t, "off", logtest.Attr(rec.All()[1], "metrics"))
}
