// Package testutil holds the one way tests wait for a condition: poll it against a deadline,
// never sleep a fixed time and hope. Every package's tests use it instead of a waitFor of
// their own or testify's require.Eventually.
//
// It imports nothing but the standard library, so that the internal tests of any package
// (codec and store included) can use it without an import cycle. The remoting test client,
// which needs codec, is internal/remotingtest.
//
// The condition runs on the caller's goroutine, between short sleeps that grow from 50 µs to
// 10 ms: it may use require and read what the test goroutine owns, and a condition that is
// true at once costs no sleep at all.
package testutil

import (
	"os"
	"testing"
	"time"
)

// WaitTimeout is how long Eventually waits: generous, for a cold -race run on a machine of
// two shared cores. A test that passes never waits that long; one that fails says what it
// waited for.
const WaitTimeout = 30 * time.Second

const (
	firstPause = 50 * time.Microsecond
	maxPause   = 10 * time.Millisecond
)

// Eventually waits until cond returns true, for up to WaitTimeout; then it fails the test
// with t.Fatalf, naming what ("timed out after 30s waiting for <what>"). Call it from the
// test's goroutine (t.Fatalf ends that goroutine).
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyWithin(t, WaitTimeout, what, cond)
}

// EventuallyWithin is Eventually with its own timeout, for the waits that legitimately take
// longer than WaitTimeout (a broker child's recovery, a slow file system under -race).
func EventuallyWithin(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// Poll waits until cond returns true or timeout passes, and reports whether cond held. It
// fails nothing: it is for goroutines other than the test's, and for callers that assert on
// their own (a last error, a count) once the wait is over.
func Poll(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	pause := firstPause
	for !cond() {
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(pause) // polling a condition against a deadline
		pause = min(2*pause, maxPause)
	}
	return true
}

// SecondPassEnv is set by make test's second pass (without -race), which is there for what skips under
// the race detector (allocation counts). A test with no such part ran whole in the first pass.
const SecondPassEnv = "RINGMQ_SECOND_PASS"

// SkipInSecondPass skips t in make test's second pass: its every assertion ran in the race pass, and
// running its processes and loads again without the detector adds minutes and checks nothing new.
// Outside make test (the variable unset) it runs as always.
func SkipInSecondPass(t testing.TB) {
	t.Helper()
	if os.Getenv(SecondPassEnv) != "" {
		t.Skip("ran in make test's race pass")
	}
}
