//go:build !unix

package bench

import "time"

// processCPU is unknown off Unix.
func processCPU() (time.Duration, bool) { return 0, false }

// machineCPUTicks is unknown off Unix.
func machineCPUTicks() (steal, total uint64, ok bool) { return 0, 0, false }
