// Package logtest records log/slog output, for tests that assert what was logged (a warning said once, the
// attribute naming a limit). slog has no recording handler of its own.
package logtest

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
)

// Recorder is a slog.Handler that keeps every record. Safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

// Logger returns a logger writing into a new Recorder.
func Logger() (*slog.Logger, *Recorder) {
	r := &Recorder{}
	return slog.New(r), r
}

func (h *Recorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *Recorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}

// WithAttrs and WithGroup return the recorder itself: tests here log without bound attributes.
func (h *Recorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *Recorder) WithGroup(string) slog.Handler      { return h }

// All returns the records so far, oldest first.
func (h *Recorder) All() []slog.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]slog.Record(nil), h.records...)
}

// AtLevel returns the records of one level.
func (h *Recorder) AtLevel(level slog.Level) []slog.Record {
	var out []slog.Record
	for _, r := range h.All() {
		if r.Level == level {
			out = append(out, r)
		}
	}
	return out
}

// Attr returns the string form of a record's attribute, "" when absent.
func Attr(r slog.Record, key string) string {
	var v string
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value.String()
			return false
		}
		return true
	})
	return v
}

// Discard is a logger that drops everything.
func Discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// ForTest writes to the test's output at the level RINGMQ_TEST_LOG names (debug, info;
// otherwise warnings and errors only).
func ForTest(t testing.TB) *slog.Logger {
	level := slog.LevelWarn
	switch os.Getenv("RINGMQ_TEST_LOG") {
	case "debug":
		level = slog.LevelDebug
	case "info":
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: level}))
}
