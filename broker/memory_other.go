//go:build !linux

package broker

// totalMemoryBytes is unknown off Linux; hotPullThreshold then assumes 1 GiB of RAM.
func totalMemoryBytes() int64 { return 0 }
