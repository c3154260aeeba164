//go:build linux

package broker

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"fmt"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// TestFaultDiskFullTmpfs fills a real file system: a 40 MiB tmpfs mounted for the test (root
// only; skipped with the reason otherwise). CommitLog files are 8 MiB, so the store starts
// with 24 MiB (the current file and the two prepared after it).
//
//  1. A filler file takes the disk above 90 %: sends are refused (SERVICE_NOT_AVAILABLE,
//     "disk full"), everything stored reads back, and sends resume by themselves once the
//     filler is deleted.
//  2. A smaller filler leaves room for the files in use but not for the next one: the put
//     that rolls into the first prepared file succeeds; the file after the second is never
//     started (statfs says it cannot fit: a fallocate that cannot fit fills the disk to the
//     last block while it runs), and sends are refused once no prepared file is left, until
//     the filler goes. A restart while the disk is still full starts, serves what is stored
//     and refuses sends from the first one.
//  3. Above every disk ratio (forced deletion's 85 % included) no stored file is deleted:
//     cleanFileForciblyEnable is off by default (issue 14: a reading of 100 % taken while a
//     fallocate was failing deleted the oldest CommitLog file, stored and acknowledged).
//
// Every wait is on an answer or a state, never on time: the disk check runs every 20 ms and
// each refusal or acceptance it causes is polled for.
func TestFaultDiskFullTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("mounts a file system")
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	require.NoError(t, os.Mkdir(mnt, 0o755))
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size=40m"); err != nil {
		t.Skipf("cannot mount a tmpfs (needs root / CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	dir := filepath.Join(mnt, "store")
	rb := startRelBroker(t, func(c *Config) {
		faultBrokerConfig(dir, "SYNC_FLUSH")(c)
		c.MappedFileSizeCommitLog = 8 << 20
	}, nil)
	c := remotingtest.Dial(t, rb.addr)
	relCreateTopic(t, c, "TmpfsT", 2)
	s := &faultSender{t: t, c: c, st: rb.st, topic: "TmpfsT"}
	for range 20 {
		require.Equal(t, int32(codec.ResponseSuccess), s.send(1000).Code)
	}
	filler := filepath.Join(mnt, "filler")
	fill := func(bytes int64) {
		t.Helper()
		f, err := os.Create(filler)
		require.NoError(t, err)
		defer f.Close()
		require.NoError(t, unix.Fallocate(int(f.Fd()), 0, 0, bytes))
	}
	// commitLogFiles waits until the CommitLog directory holds n files with all their blocks: the
	// fillers below are sized for the files the allocator makes in the background (the current one
	// and up to two prepared ones, as many as fit). A file has its name before its fallocate has
	// run, so its name alone says nothing about the space it takes.
	commitLogFiles := func(n int) {
		t.Helper()
		testutil.Eventually(t, fmt.Sprintf("%d allocated CommitLog files", n), func() bool {
			entries, err := os.ReadDir(filepath.Join(dir, "commitlog"))
			if err != nil {
				return false
			}
			files := 0
			for _, e := range entries {
				var st unix.Stat_t
				if len(e.Name()) == 20 && unix.Stat(filepath.Join(dir, "commitlog", e.Name()), &st) == nil &&
					st.Blocks*512 >= 8<<20 {
					files++
				}
			}
			return files >= n
		})
	}
	usedPercent := func() float64 {
		var st unix.Statfs_t
		require.NoError(t, unix.Statfs(mnt, &st))
		return float64(st.Blocks-st.Bfree) * 100 / float64(st.Blocks)
	}

	// 1. Above diskSpaceWarningLevelRatio. The store holds 24 MiB of CommitLog files: the current one
	// and the two the allocator keeps ready.
	commitLogFiles(3)
	fill(12 << 20)
	require.Greater(t, usedPercent(), 90.0)
	requireDiskFullAnswer(t, s.sendUntil(codec.ResponseServiceNotAvailable, 1000))
	s.verify()
	require.NoError(t, os.Remove(filler))
	s.sendUntil(codec.ResponseSuccess, 1000)
	s.verify()

	// 2. ENOSPC for the next CommitLog file.
	commitLogFiles(3)
	fill(9 << 20)
	require.Less(t, usedPercent(), 85.0, "below the forced-deletion ratio: no stored file may go")
	resp := s.sendUntil(codec.ResponseServiceNotAvailable, 60<<10)
	requireDiskFullAnswer(t, resp)
	_, err := os.Stat(filepath.Join(dir, "commitlog", "00000000000025165824"))
	require.True(t, errors.Is(err, os.ErrNotExist), "the fourth CommitLog file could not be made: %v", err)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(mnt, &st))
	require.Less(t, int64(st.Bfree)*int64(st.Bsize), int64(8<<20), "no room for another 8 MiB file")
	require.Zero(t, rb.st.MinPhyOffset(), "a stored CommitLog file was deleted")
	s.verify()
	// A restart while the disk is still full: the broker starts, serves what it has, refuses sends
	// (its first standby file cannot be made, which Start learns before the port opens).
	c.Close()
	require.NoError(t, rb.close())
	rb, err = openRelBroker(t, rb.cfg, nil)
	require.NoError(t, err, "restart on a full disk")
	c = remotingtest.Dial(t, rb.addr)
	s.c, s.st = c, rb.st
	s.verify()
	requireDiskFullAnswer(t, s.send(60<<10))
	require.NoError(t, os.Remove(filler))
	s.sendUntil(codec.ResponseSuccess, 1000)
	s.verify()

	// 3. Above every ratio with several CommitLog files stored: the pass that refuses sends is the
	// one that would delete them forcibly; the pass that accepts sends again comes after it. The
	// store holds four 8 MiB files by now (a fifth does not fit beside them).
	commitLogFiles(4)
	fill(6 << 20)
	require.Greater(t, usedPercent(), 90.0)
	requireDiskFullAnswer(t, s.sendUntil(codec.ResponseServiceNotAvailable, 1000))
	require.NoError(t, os.Remove(filler))
	s.sendUntil(codec.ResponseSuccess, 1000)
	require.Zero(t, rb.st.MinPhyOffset(), "a stored CommitLog file was deleted")
	n := s.verify()
	t.Logf("tmpfs disk full: %d messages acknowledged, %d records read back; ratio and ENOSPC refusals cleared without a restart", len(s.acks), n)
}
