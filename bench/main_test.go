package bench

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
)

// TestMain also lets the test binary stand in for mqbroker: the suite tests start it as
// a broker process with MQBENCH_FAKE_BROKER=1, and for `mqbench null-server` with
// MQBENCH_TEST_NULL_SERVER=1 (see suite_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(fakeBrokerEnv) == "1" {
		os.Exit(fakeBrokerMain(os.Args[1:]))
	}
	if os.Getenv(nullServerEnv) == "1" {
		os.Exit(nullServerMain(os.Args[1:]))
	}
	// The Go client runs in a driver process (goclienttest), whose binary this removes.
	goclienttest.VerifyTestMain(m,
		// gnet (the null server's second engine) starts its ants worker pool, and the pool's
		// janitor goroutines, in package init; they live for the whole process.
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
