package store

import (
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/testutil"
)

// TestPrefaulterKeepsWindowAhead: in mapping mode the prefaulter keeps at least half a window of pages
// populated ahead of the write position, across rolls; near a file's end that includes the next file's
// first window, which the allocator populated (otherwise every put there would wake the prefaulter).
func TestPrefaulterKeepsWindowAhead(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.MappedFileSizeCommitLog = 1 << 20 // window 256 KiB
	s := openStarted(t, cfg, Deps{})
	cl := s.commitLog
	require.Equal(t, int64(256<<10), cl.prefaultWindow)
	m := testMessage("PrefaultTopic", 0, body(4000, "p"))
	var res PutResult
	for step := 0; step < 40; step++ { // 40 × 200 KiB: 7 rolls
		for i := 0; i < 50; i++ {
			res = mustPut(t, s, m)
		}
		head := res.WroteOffset + int64(res.WroteBytes)
		want := head + cl.prefaultWindow/2 // into the next file near the end: its first window counts
		testutil.Eventually(t, fmt.Sprintf("pages populated to %d at step %d", want, step), func() bool {
			return cl.prefaultTo.Load() >= want
		})
	}
	require.Greater(t, res.WroteOffset, 7*cfg.MappedFileSizeCommitLog)
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
// attempt and puts go on (faulting pages in during their copies, as RocketMQ does); with warming on, the
// allocator writes a zero into every page of each next file before the file can become current.
func TestPrefaultUnsupportedKernel(t *testing.T) {
	for _, warm := range []bool{false, true} {
		t.Run(fmt.Sprintf("warm=%t", warm), func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.MappedFileSizeCommitLog = 1 << 20
			cfg.WarmMappedFileEnable = warm
			s := openStarted(t, cfg, Deps{FS: noPopulateFS{NewOSFS(nil)}})
			var last PutResult
			for i := 0; i < 600; i++ { // 2.4 MiB: rolls into files prepared after the first failure
				last = mustPut(t, s, testMessage("PrefaultTopic", 0, bodyf("%04d-%s", i, body(4000, "p"))))
			}
			require.True(t, s.commitLog.prefaultOff.Load())
			// The prefaulter did nothing; with warming, the rolls into touched files published them as
			// populated.
			wantPrefaulted := int64(0)
			if warm {
				cur := s.commitLog.mfq.last()
				wantPrefaulted = cur.fromOffset + cur.size
				require.Equal(t, cur.size, cur.populated.Load())
			}
			require.Equal(t, wantPrefaulted, s.commitLog.prefaultTo.Load())
			waitDispatched(t, s)
			got := getAll(t, s, "PrefaultTopic", 0)
			require.Len(t, got, 600)
			for i, r := range got {
				require.Equal(t, bodyf("%04d-%s", i, body(4000, "p")), r.Body)
			}
			require.Equal(t, last.WroteOffset, got[599].PhysicalOffset)
		})
	}
}
