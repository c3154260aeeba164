//go:build linux

package flush

// SYNC_FLUSH benchmarks: N concurrent writers append 1 KiB messages to a pre-written CommitLog-sized file
// and each waits for its message to be durable before sending the next (one request in flight per
// producer), through GroupCommit and each backend, beside a baseline that makes every message durable on
// its own (pwrite + fdatasync per message, no group commit).
//
// Reported per sub-benchmark: msgs/s, the producer-observed latency p50/p99/p99.9 in µs (put + wait for
// durability), acks/sync (messages acknowledged per durable operation) and the durable operation's own p50.
//
// Run them on a real disk, not tmpfs (b.TempDir follows TMPDIR). This machine's disk stalls for tens to
// hundreds of milliseconds now and then, so run every configuration once per pass, several passes, and
// compare medians:
//
//	go test -c -o /work/flushbench/flush.test ./flush
//	for pass in 1 2 3 4 5 6; do TMPDIR=/work/flushbench /work/flushbench/flush.test -test.run '^$' \
//	  -test.bench SyncFlush -test.benchtime 1s -test.benchmem; done
//
// b.Loop does not fit here: the measured work is spread over N goroutines, so the writers share b.N
// messages through an atomic ticket instead.

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/ringmq/ringmq/transientpool"
	"golang.org/x/sys/unix"
)

const (
	benchMessageBytes = 1024
	benchFileBytes    = 256 << 20 // a multiple of benchMessageBytes: messages never straddle the wrap
)

var benchWriterCounts = []int{1, 16, 64, 256}

// benchFile is a pre-written (allocated, zero-filled and synced) file and its shared mapping, so the
// benchmark measures overwrites, the CommitLog's steady state after preallocation and warming.
type benchFile struct {
	file   *os.File
	mapped []byte
}

func newBenchFile(b *testing.B) *benchFile {
	b.Helper()
	path := filepath.Join(b.TempDir(), "00000000000000000000")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for off := int64(0); off < benchFileBytes; off += int64(len(chunk)) {
		if _, err := f.WriteAt(chunk, off); err != nil {
			b.Fatal(err)
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		b.Fatal(err)
	}
	mapped, err := unix.Mmap(int(f.Fd()), 0, benchFileBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		b.Fatal(err)
	}
	// Map every page in (reading, so nothing becomes dirty), so the first pass does not measure faults.
	var sum byte
	for off := 0; off < benchFileBytes; off += os.Getpagesize() {
		sum += mapped[off]
	}
	if sum != 0 {
		b.Fatal("pre-written file is not zero")
	}
	b.Cleanup(func() {
		_ = unix.Munmap(mapped)
		_ = f.Close()
	})
	return &benchFile{file: f, mapped: mapped}
}

// benchStore is the smallest store that exercises the flush path: a put lock that assigns offsets and
// copies the message (into the mapping, or into the transient-pool buffer), and a DurableFunc that makes
// everything written so far durable with the backend in one call.
type benchStore struct {
	backend Backend
	fd      int
	mapped  []byte
	pool    *transientpool.Buffer // nil: mapped-file mode

	putMu   sync.Mutex
	wrote   atomic.Int64 // logical end of the log
	durable int64        // owned by the syncer goroutine
}

func (s *benchStore) put(msg []byte) int64 {
	s.putMu.Lock()
	off := s.wrote.Load()
	phys := off % benchFileBytes
	if s.pool != nil {
		copy(s.pool.Bytes()[phys:], msg)
	} else {
		copy(s.mapped[phys:], msg)
	}
	end := off + int64(len(msg))
	s.wrote.Store(end)
	s.putMu.Unlock()
	return end
}

func (s *benchStore) makeDurable(target int64) (int64, error) {
	end := s.wrote.Load()
	from := s.durable
	for from < end {
		phys := from % benchFileBytes
		n := min(end-from, benchFileBytes-phys) // at most two pieces: up to the wrap, then from 0
		last := from+n == end
		var err error
		if s.pool != nil {
			err = s.backend.WriteSync(s.fd, s.pool.Bytes()[phys:phys+n], s.pool.Index(), phys, last)
		} else {
			err = s.backend.SyncMapped(s.fd, s.mapped, phys, n)
		}
		if err != nil {
			return s.durable, err
		}
		from += n
	}
	s.durable = end
	return end, nil
}

// benchWaiter is one producer's reusable waiter: no allocation per message.
type benchWaiter struct{ done chan error }

func (w *benchWaiter) FlushDone(err error) { w.done <- err }

// runWriters runs writers goroutines that share b.N messages; each calls send per message and records
// the time send took. It reports msgs/s and latency percentiles.
func runWriters(b *testing.B, writers int, send func(writer int) error) {
	b.Helper()
	hists := make([]*hdrhistogram.Histogram, writers)
	for i := range hists {
		hists[i] = hdrhistogram.New(1, 10_000_000, 3)
	}
	var tickets atomic.Int64
	errs := make([]error, writers) // one slot per writer: taking an error's address would allocate per message
	var wg sync.WaitGroup
	b.ReportAllocs()
	b.ResetTimer()
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tickets.Add(1) <= int64(b.N) {
				start := time.Now()
				if err := send(w); err != nil {
					errs[w] = err
					return
				}
				_ = hists[w].RecordValue(max(time.Since(start).Microseconds(), 1))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	all := hdrhistogram.New(1, 10_000_000, 3)
	for _, h := range hists {
		all.Merge(h)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	b.ReportMetric(float64(all.ValueAtQuantile(50)), "p50-µs")
	b.ReportMetric(float64(all.ValueAtQuantile(99)), "p99-µs")
	b.ReportMetric(float64(all.ValueAtQuantile(99.9)), "p99.9-µs")
}

type benchMode struct {
	kind Kind
	pool bool
}

func (m benchMode) String() string {
	if m.pool {
		return m.kind.String() + "-pool"
	}
	return m.kind.String() + "-mmap"
}

// BenchmarkSyncFlushGroupCommit: group commit over each backend. "-mmap" appends into the file mapping
// and makes it durable with SyncMapped (fdatasync, msync, or io_uring FSYNC); "-pool" appends into a
// pinned transient-pool buffer and makes it durable with WriteSync (pwrite + fdatasync, or io_uring
// WRITE_FIXED linked to FSYNC in one submission).
func BenchmarkSyncFlushGroupCommit(b *testing.B) {
	file := newBenchFile(b)
	pool, err := transientpool.New(transientpool.Config{Buffers: 1, BufferBytes: benchFileBytes, Pinned: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := pool.Close(); err != nil {
			b.Error(err)
		}
	}()
	msg := pattern(benchMessageBytes, 'A')
	modes := []benchMode{
		{KindFdatasync, false}, {KindMsync, false}, {KindIOUring, false},
		{KindFdatasync, true}, {KindIOUring, true},
	}
	for _, mode := range modes {
		for _, writers := range benchWriterCounts {
			b.Run(fmt.Sprintf("%s/writers=%d", mode, writers), func(b *testing.B) {
				backend, err := Open(mode.kind, pool, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer backend.Close()
				if backend.Kind() != mode.kind {
					b.Skipf("%s unavailable here", mode.kind)
				}
				store := &benchStore{backend: backend, fd: int(file.file.Fd()), mapped: file.mapped}
				if mode.pool {
					buf, ok := pool.Borrow()
					if !ok {
						b.Fatal("pool exhausted")
					}
					defer pool.Return(buf)
					store.pool = buf
				}
				metrics, _ := NewMetrics(nil, "bench")
				g, err := NewGroupCommit(DefaultGroupCommitConfig(), 0, store.makeDurable, metrics, nil)
				if err != nil {
					b.Fatal(err)
				}
				waiters := make([]benchWaiter, writers)
				for i := range waiters {
					waiters[i].done = make(chan error, 1)
				}
				runWriters(b, writers, func(w int) error {
					if err := g.Submit(store.put(msg), &waiters[w]); err != nil {
						return err
					}
					return <-waiters[w].done
				})
				if err := g.Close(); err != nil {
					b.Fatal(err)
				}
				snap := metrics.Snapshot()
				b.ReportMetric(snap.AcksPerDurableWrite(), "acks/sync")
				syncLatency := metrics.LatencyHistogram()
				b.ReportMetric(float64(syncLatency.ValueAtQuantile(50)), "sync-p50-µs")
				b.ReportMetric(float64(syncLatency.ValueAtQuantile(99.9)), "sync-p99.9-µs")
				b.ReportMetric(float64(syncLatency.Max()), "sync-max-µs")
			})
		}
	}
}

// BenchmarkSyncFlushPerMessage is the baseline: every message is made durable on its own with pwrite +
// fdatasync before its producer sends the next (no group commit). "concurrent": each producer calls
// fdatasync itself, so calls overlap and the kernel still shares some journal and cache-flush work
// between them. "serialized": one fdatasync at a time, as a single flush thread without batching would.
func BenchmarkSyncFlushPerMessage(b *testing.B) {
	file := newBenchFile(b)
	msg := pattern(benchMessageBytes, 'B')
	backend := newFdatasyncBackend()
	fd := int(file.file.Fd())
	for _, serialized := range []bool{false, true} {
		name := "concurrent"
		if serialized {
			name = "serialized"
		}
		for _, writers := range benchWriterCounts {
			b.Run(fmt.Sprintf("%s/writers=%d", name, writers), func(b *testing.B) {
				var wrote atomic.Int64
				var diskMu sync.Mutex
				runWriters(b, writers, func(int) error {
					off := (wrote.Add(benchMessageBytes) - benchMessageBytes) % benchFileBytes
					if serialized {
						diskMu.Lock()
						defer diskMu.Unlock()
					}
					return backend.WriteSync(fd, msg, -1, off, true)
				})
				b.ReportMetric(1, "acks/sync")
			})
		}
	}
}
