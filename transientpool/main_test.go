package transientpool

import (
	"testing"

	"go.uber.org/goleak"
)

// The pool starts no goroutines, but its tests do (concurrent borrowers, the thread that drops
// CAP_IPC_LOCK): make sure none outlives its test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
