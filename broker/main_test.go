package broker

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
)

// TestMain checks that no test leaves a goroutine behind: every broker, name server,
// client and pool a test starts must be shut down by its cleanup. The ignored functions
// are process-wide goroutines started by package init, not by any test. (The Go client runs
// in a driver process of its own, goclienttest, whose binary VerifyTestMain removes.)
func TestMain(m *testing.M) {
	goclienttest.VerifyTestMain(m,
		// gnet starts its ants worker pool (and the pool's janitor goroutines) in package
		// init; they live for the whole process.
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
