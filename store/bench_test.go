package store

import (
	"runtime"
	"testing"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/flush"
)

// Benchmarks for BENCHMARKS.md. Run:
//
//	GOFLAGS=-ldflags=-checklinkname=0 go test -run '^$' -bench . -benchmem -count 3 ./store/
//
// The put benchmark uses the defaults a broker runs with (ASYNC_FLUSH every 500 ms, index on) except a
// 256 MiB CommitLog file, so a run of a few million messages rolls several files without filling the disk.

func benchConfig(dir string) Config {
	c := DefaultConfig(dir)
	c.MappedFileSizeCommitLog = 256 << 20
	return c
}

func benchMessage() *codec.Message {
	return testMessage("BenchTopic", 0, body(1024, "b"), codec.PropertyTags, "TagA",
		codec.PropertyUniqClientMessageIDKey, "7F0000010001000000000000000000AB")
}

func reportLockTime(b *testing.B, s *Store, start time.Time) {
	elapsed := time.Since(start)
	h := s.LockTimeHistogram()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(h.ValueAtQuantile(50)), "lock-p50-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99)), "lock-p99-ns")
	b.ReportMetric(float64(h.ValueAtQuantile(99.99)), "lock-p99.99-ns")
	b.ReportMetric(float64(h.Max()), "lock-max-ns")
	b.ReportMetric(float64(s.SyncRolls()), "sync-rolls")
}

func BenchmarkPut1KiB(b *testing.B) {
	for _, bc := range []struct {
		name    string
		writers int
		mutate  func(*Config)
	}{
		{"writers=1", 1, nil},
		{"writers=4", 4, nil},
		{"writers=1/spin", 1, func(c *Config) { c.UseReentrantLockWhenPutMessage = false }},
		{"writers=4/spin", 4, func(c *Config) { c.UseReentrantLockWhenPutMessage = false }},
		{"writers=1/warm", 1, func(c *Config) { c.WarmMappedFileEnable = true }},
		{"writers=1/msync", 1, func(c *Config) { c.FlushBackend = flush.KindMsync }},
		{"writers=1/transientpool", 1, func(c *Config) {
			c.TransientStorePoolEnable, c.TransientStorePoolPinned, c.TransientStorePoolSize = true, false, 5
			c.CommitCommitLogLeastPages = 4
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := benchConfig(b.TempDir())
			if bc.mutate != nil {
				bc.mutate(&cfg)
			}
			s := openStarted(b, cfg, Deps{})
			m := benchMessage()
			if _, err := s.PutMessage(m); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(m.EncodedSize()))
			b.ReportAllocs()
			s.ResetLockTime()
			start := time.Now()
			if bc.writers == 1 {
				for b.Loop() {
					if _, err := s.PutMessage(m); err != nil {
						b.Fatal(err)
					}
				}
			} else {
				b.SetParallelism((bc.writers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				b.RunParallel(func(pb *testing.PB) {
					m := benchMessage()
					for pb.Next() {
						if _, err := s.PutMessage(m); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			reportLockTime(b, s, start)
			b.StopTimer()
			waitDispatched(b, s)
		})
	}
}

// BenchmarkGetMessage32 is the pull read path: ConsumeQueue lookup, tag filter, gather of 32 record
// slices of mapped memory, release.
func BenchmarkGetMessage32(b *testing.B) {
	s := openStarted(b, benchConfig(b.TempDir()), Deps{})
	m := benchMessage()
	const n = 1 << 16
	for i := 0; i < n; i++ {
		if _, err := s.PutMessage(m); err != nil {
			b.Fatal(err)
		}
	}
	waitDispatched(b, s)
	var filter MessageFilter = tagFilter{codec.TagsHashCode([]byte("TagA"))}
	b.ReportAllocs()
	off := int64(0)
	start := time.Now()
	for b.Loop() {
		r, err := s.GetMessage("g", "BenchTopic", 0, off, 32, 0, filter)
		if err != nil || r.MessageCount != 32 {
			b.Fatalf("%v %v %d", err, r.Status, r.MessageCount)
		}
		off = (off + 32) % (n - 32)
		r.Release()
	}
	b.ReportMetric(float64(b.N*32)/time.Since(start).Seconds(), "msgs/s")
}
