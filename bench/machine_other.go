//go:build !linux

package bench

// kernelRelease is unknown off Linux (the broker runs on Linux only).
func kernelRelease() string { return "" }
