//go:build !linux

package bench

import "time"

// pidCPU needs /proc: unknown elsewhere.
func pidCPU(int) (time.Duration, bool) { return 0, false }
