//go:build !unix

package bench

// natsStreamMaxBytes is 1 GiB where the free space cannot be read (natscli's default).
func natsStreamMaxBytes(string) int64 { return 1 << 30 }
