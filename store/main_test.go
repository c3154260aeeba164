package store

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// testPoolDirEnv passes the tests' transient pool directory to child processes (crash tests).
const testPoolDirEnv = "RINGMQ_TEST_POOL_DIR"

// testPoolDir is where the tests' transient pools keep their buffer files (transientStorePoolDir): a
// directory of this run on /dev/shm, removed at the end, so that stores a test leaves crashed leave
// nothing behind; "off" (anonymous buffers) where /dev/shm is missing.
var testPoolDir = "off"

func TestMain(m *testing.M) {
	remove := false
	if d := os.Getenv(testPoolDirEnv); d != "" {
		testPoolDir = d // a child process of a crash test: the parent's directory
	} else if d, err := os.MkdirTemp("/dev/shm", "ringmq-store-test-"); err == nil {
		testPoolDir, remove = d, true
		_ = os.Setenv(testPoolDirEnv, d)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if remove {
			_ = os.RemoveAll(testPoolDir)
		}
		os.Exit(code)
	}))
}
