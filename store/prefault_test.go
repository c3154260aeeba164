package store

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPutsNeverOutrunPrefaultedPages: in mapping mode every put's bytes lie below prefaultTo when it
// returns (the put populated them before taking the lock if the prefaulter was late), across rolls, so
// the copy under the put lock never takes a page fault on a fresh page.
func TestPutsNeverOutrunPrefaultedPages(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 1 << 20 // window 256 KiB, chunks clipped to the file end
	s := openStarted(t, cfg, Deps{})
	cl := s.commitLog
	require.Equal(t, int64(256<<10), cl.prefaultWindow)
	m := testMessage("PrefaultTopic", 0, body(4000, "p"))
	var rolls int
	file := int64(-1)
	for i := 0; i < 2000; i++ { // ~8 MiB: 7 rolls
		res := mustPut(t, s, m)
		end := res.WroteOffset + int64(res.WroteBytes)
		require.GreaterOrEqualf(t, cl.prefaultTo.Load(), end, "put %d at %d", i, res.WroteOffset)
		if f := res.WroteOffset / cfg.MappedFileSizeCommitLog; f != file {
			rolls++
			file = f
		}
	}
	require.GreaterOrEqual(t, rolls, 7)
	require.False(t, cl.prefaultOff.Load())
}

// noPopulateFS is the OS file system on a kernel without MADV_POPULATE_WRITE.
type noPopulateFS struct{ FS }
type noPopulateFile struct{ File }

func (fs noPopulateFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	f, err := fs.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return noPopulateFile{f}, nil
}

func (noPopulateFile) Populate([]byte) error { return errors.ErrUnsupported }

// TestPrefaultUnsupportedKernel: without MADV_POPULATE_WRITE the store stops prefaulting after the first
// attempt and puts go on (faulting pages in under the lock, as RocketMQ does).
func TestPrefaultUnsupportedKernel(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 1 << 20
	s := openStarted(t, cfg, Deps{FS: noPopulateFS{NewOSFS(nil)}})
	m := testMessage("PrefaultTopic", 0, body(4000, "p"))
	var last PutResult
	for i := 0; i < 600; i++ {
		last = mustPut(t, s, m)
	}
	require.True(t, s.commitLog.prefaultOff.Load())
	require.Equal(t, int64(0), s.commitLog.prefaultTo.Load())
	waitDispatched(t, s)
	got := getAll(t, s, "PrefaultTopic", 0)
	require.Len(t, got, 600)
	require.Equal(t, last.WroteOffset, got[599].PhysicalOffset)
}
