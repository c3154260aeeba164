//go:build !race

package main

// raceEnabled: the driver was built with -race, which goclienttest refuses (the driver exists
// to keep the client out of the race detector).
const raceEnabled = false
