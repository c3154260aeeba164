package broker

import (
	"cmp"
	"log/slog"
	"path/filepath"

	"github.com/ringmq/ringmq/internal/version"
	"github.com/ringmq/ringmq/store"
)

// LogStartupSummary logs, once and at INFO, what a started broker runs with: where it listens,
// where it stores, and the flush and append modes really in effect (the io_uring backend may
// have fallen back to fdatasync, the transient pool may be unpinned). metricsAddr is the
// address of the metrics endpoint the command started, "" for none. An operator reading the
// first lines of the log learns what the configuration amounted to without reading it.
//
// Five lines: "broker started" (version, name, role), "listening", "store" (path and file
// sizes), "flush", "append".
func (b *Broker) LogStartupSummary(logger *slog.Logger, metricsAddr string) {
	c := &b.cfg
	logger.Info("broker started", "version", version.Get().String(), "brokerName", c.BrokerName,
		"brokerClusterName", c.BrokerClusterName, "brokerRole", c.BrokerRole.String(), "brokerId", c.BrokerID)

	ha := "off"
	if b.haServer != nil {
		ha = b.haServer.Addr().String()
	}
	namesrv := "off"
	if b.ctl.embedded != nil && b.ctl.embedded.Addr() != nil {
		namesrv = b.ctl.embedded.Addr().String()
	}
	logger.Info("listening", "remoting", b.Addr(), "advertised", b.BrokerAddr(), "fast", cmp.Or(b.FastAddr(), "off"),
		"ha", ha, "namesrv", namesrv, "metrics", cmp.Or(metricsAddr, "off"), "tls", c.EffectiveTLSMode(),
		"acl", c.AclEnable)

	root := c.StorePathRootDir
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	rt, ok := b.store.(interface{ Runtime() store.Runtime })
	if !ok { // a store given in Deps (tests): nothing more to say
		logger.Info("store", "path", root, "impl", "Deps.Store")
		return
	}
	r := rt.Runtime()
	logger.Info("store", "path", root, "commitLogFileBytes", c.MappedFileSizeCommitLog,
		"preallocatedCommitLogFiles", r.PreallocatedFiles, "consumeQueueFileBytes", c.MappedFileSizeConsumeQueue,
		"indexFileBytes", r.IndexFileBytes, "fileReservedHours", int(c.FileReservedTime.Hours()))

	flush := []any{"flushDiskType", c.FlushDiskType.String(), "flushBackend", r.FlushBackend.String()}
	if r.FlushFallback != "" {
		flush = append(flush, "requested", c.FlushBackend.String(), "fallbackReason", r.FlushFallback)
	}
	if c.FlushDiskType == store.SyncFlush {
		flush = append(flush, "syncFlushTimeout", c.SyncFlushTimeout.String())
	} else {
		flush = append(flush, "flushIntervalCommitLog", c.FlushIntervalCommitLog.String())
	}
	logger.Info("flush", flush...)

	if r.TransientStorePool {
		// crashSafe: the buffers are files on tmpfs, so a crash of the process loses nothing acknowledged.
		logger.Info("append", "mode", "transientStorePool", "buffers", c.TransientStorePoolSize,
			"bufferBytes", c.MappedFileSizeCommitLog, "pinned", r.Pinned,
			"crashSafe", r.TransientStorePoolDir != "", "files", cmp.Or(r.TransientStorePoolDir, "anonymous"))
	} else {
		logger.Info("append", "mode", "mmap", "warmMapedFileEnable", c.WarmMappedFileEnable, "pinned", r.Pinned)
	}
}
