package delay

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a delivery goroutine (or a store's) running. gnet
// (imported through the test helpers' netio) starts its ants worker pool's janitors in
// package init; they live for the whole process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
