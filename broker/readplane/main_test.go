package readplane

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: every plane (its hold goroutine),
// pool task and store a test starts must be stopped by its cleanup. gnet (imported through
// netio for its Conn) starts its ants worker pool's janitors in package init; they live for
// the whole process.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
