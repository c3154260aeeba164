package bench

import (
	"os"
	"testing"

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
	goclienttest.VerifyTestMain(m)
}
