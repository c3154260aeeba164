package store

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// zeroFrom leaves only zeros from pos on, whether the bytes past it were written through the mapping
// (dirty pages), with pwrite, or never (holes, fallocated extents), and reads only the stretches the
// file system says hold data.
func TestZeroFromClearsEveryWrittenByte(t *testing.T) {
	const size = 8 << 20
	fsys := NewOSFS(nil)
	mf, err := openMappedFile(fsys, filepath.Join(t.TempDir(), "00000000000000000000"), 0, size, testLogger(t))
	require.NoError(t, err)
	defer func() { require.NoError(t, mf.destroy(fsys, true)) }()

	copy(mf.data[100:], "kept before the cut")
	copy(mf.data[5000:], "through the mapping")          // dirty page cache, past the cut
	copy(mf.data[3<<20+17:], "far, through the mapping") // another stretch, megabytes away
	_, err = mf.file.WriteAt([]byte("with pwrite"), 6<<20+1)
	require.NoError(t, err)
	require.True(t, mf.zeroFrom(4096))
	require.Equal(t, "kept before the cut", string(mf.data[100:119]))
	require.True(t, bytes.Equal(mf.data[4096:], make([]byte, size-4096)), "zeros from the cut on")
	back := make([]byte, size-4096)
	_, err = mf.file.ReadAt(back, 4096)
	require.NoError(t, err)
	require.True(t, bytes.Equal(back, make([]byte, size-4096)), "and the file reads so")
	require.False(t, mf.zeroFrom(4096), "nothing left to clear")
}

// DataExtents names exactly the stretches written into an allocated file: its never-written (fallocated)
// extents and holes are left out, so zeroFrom does not read them.
func TestDataExtentsSkipsNeverWrittenStretches(t *testing.T) {
	const size = 8 << 20
	f, err := NewOSFS(nil).OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o644)
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, f.Allocate(size))
	ext := f.(interface {
		DataExtents(from, to int64) [][2]int64
	})
	require.Empty(t, ext.DataExtents(0, size), "allocated, never written")
	for _, off := range []int64{1 << 20, 6<<20 + 1} {
		_, err := f.WriteAt([]byte("data"), off)
		require.NoError(t, err)
	}
	require.Equal(t, [][2]int64{{1 << 20, 1<<20 + 4096}, {6 << 20, 6<<20 + 4096}}, ext.DataExtents(0, size))
	require.Equal(t, [][2]int64{{6 << 20, 6<<20 + 4096}}, ext.DataExtents(2<<20, size))
	require.Equal(t, [][2]int64{{6 << 20, 6<<20 + 100}}, ext.DataExtents(2<<20, 6<<20+100), "cut at the end asked for")
}
