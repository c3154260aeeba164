package testutil

import (
	"sync"
	"time"
)

// ManualClock is a clock a test moves by hand, for code that takes a func() time.Time.
// Safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock starts at 2023-11-14T22:13:20Z (Unix milliseconds 1,700,000,000,000).
func NewManualClock() *ManualClock {
	return &ManualClock{now: time.UnixMilli(1_700_000_000_000)}
}

// NewManualClockAt starts at t.
func NewManualClockAt(t time.Time) *ManualClock { return &ManualClock{now: t} }

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Now is the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
