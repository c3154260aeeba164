package namesrv

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
)

func TestMain(m *testing.M) {
	// (goclienttest: the Go client runs in a driver process, whose binary this removes.)
	goclienttest.VerifyTestMain(m,
		// gnet starts its ants worker pool (and the pool's janitor goroutines) in package
		// init; they live for the whole process.
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}
