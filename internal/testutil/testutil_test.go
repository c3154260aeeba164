package testutil

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeT records Fatalf instead of ending the goroutine.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) { f.failed = fmt.Sprintf(format, args...) }

func TestPollTrueAtOnce(t *testing.T) {
	calls := 0
	if !Poll(time.Hour, func() bool { calls++; return true }) {
		t.Fatal("Poll reported false for a condition that holds")
	}
	if calls != 1 {
		t.Fatalf("cond called %d times, want 1", calls)
	}
}

func TestPollWaitsForTheCondition(t *testing.T) {
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	if !Poll(WaitTimeout, func() bool { return n.Load() == 3 }) {
		t.Fatal("Poll gave up on a condition that became true")
	}
}

func TestPollGivesUp(t *testing.T) {
	calls := 0
	if Poll(0, func() bool { calls++; return false }) {
		t.Fatal("Poll reported true for a condition that never holds")
	}
	if calls != 1 {
		t.Fatalf("cond called %d times with a zero timeout, want 1", calls)
	}
}

func TestEventuallyNamesWhatItWaitedFor(t *testing.T) {
	f := &fakeT{}
	EventuallyWithin(f, time.Millisecond, "the answer", func() bool { return false })
	if !strings.Contains(f.failed, "waiting for the answer") || !strings.Contains(f.failed, "1ms") {
		t.Fatalf("failure message %q", f.failed)
	}
	f = &fakeT{}
	Eventually(f, "nothing", func() bool { return true })
	if f.failed != "" {
		t.Fatalf("failed on a condition that holds: %q", f.failed)
	}
}
