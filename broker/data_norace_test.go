//go:build !race

package broker

// raceEnabled: the race detector allocates on its own, so allocation tests skip.
const raceEnabled = false
