package store

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/flush"
)

// TestRuntimeSaysWhatRuns: Runtime reports the backend in use, the append mode and the file
// sizes the store was opened with.
func TestRuntimeSaysWhatRuns(t *testing.T) {
	dir := t.TempDir()
	s := openStarted(t, testConfig(dir), Deps{})
	require.Equal(t, Runtime{FlushBackend: flush.KindMsync, PreallocatedFiles: 2,
		IndexFileBytes: 40 + 128*4 + 512*20, CommitLogDir: filepath.Join(dir, "commitlog"),
		ConsumeQueueDir: filepath.Join(dir, "consumequeue"), IndexDir: filepath.Join(dir, "index")}, s.Runtime())
	require.NoError(t, s.Shutdown())

	// The default sizes: a 1 GiB CommitLog file, an IndexFile of 5,000,000 slots and 20,000,000 entries.
	require.EqualValues(t, 420_000_040, indexFileBytes(DefaultConfig("x").MaxHashSlotNum, DefaultConfig("x").MaxIndexNum))

	cfg := testConfig(t.TempDir())
	cfg.TransientStorePoolEnable = true
	cfg.MessageIndexEnable = false
	cfg.FlushBackend = flush.KindFdatasync
	s = openStarted(t, cfg, Deps{})
	r := s.Runtime()
	require.Equal(t, flush.KindFdatasync, r.FlushBackend)
	require.Empty(t, r.FlushFallback)
	require.True(t, r.TransientStorePool)
	require.Equal(t, s.pool.Pinned(), r.Pinned, "pinned when mlock succeeded (transientStorePoolPinned=false allows failing)")
	require.Zero(t, r.IndexFileBytes)
}
