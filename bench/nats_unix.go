//go:build unix

package bench

import "golang.org/x/sys/unix"

// natsStreamMaxBytes is the stream's bound: natscli's default of 1 GB would reject a 12 s
// run at 100k msgs/s of 1 KiB, and a bound above the store's free space is refused up
// front ("insufficient storage resources"), so half the free space, at most 32 GiB.
func natsStreamMaxBytes(storeDir string) int64 {
	const most = 32 << 30
	var st unix.Statfs_t
	if err := unix.Statfs(storeDir, &st); err != nil {
		return 1 << 30
	}
	return min(most, int64(st.Bavail)*int64(st.Bsize)/2)
}
