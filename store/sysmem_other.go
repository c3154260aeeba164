//go:build !linux

package store

// totalPhysicalMemory is unknown here: 0 makes every pull count as "in memory".
func totalPhysicalMemory() int64 { return 0 }
