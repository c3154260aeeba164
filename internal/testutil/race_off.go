//go:build !race

package testutil

// RaceEnabled: the binary runs under the race detector, which allocates on its own (and
// makes sync.Pool drop items), so allocation tests skip.
const RaceEnabled = false
