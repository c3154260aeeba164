//go:build linux

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkReplicaWriteNewPages writes 512 MiB into a new preallocated file the way a slave catching up
// does (AppendReplica), while a reader follows the written end through the file's mapping (the
// dispatcher): in writes of several sizes, and, for contrast, copying into the mapping after
// MADV_POPULATE_WRITE in 2 MiB chunks (the prefaulter's unit, which AppendReplica used to rely on). Each op
// waits 3 s first (untimed), so that the memory freed by the last one has gone back to the host (free page
// reporting) and every op writes into new memory, as a catch-up does. Point TMPDIR at the store's file
// system.
//
//	go test ./store/ -run '^$' -bench ReplicaWriteNewPages -benchtime 1x -count 3
func BenchmarkReplicaWriteNewPages(b *testing.B) {
	const size = 512 << 20
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(i)
	}
	// run sets up a new file and its mapping, then times write(f, m, published) while a reader touches
	// every page below published through the mapping.
	run := func(b *testing.B, write func(f *os.File, m []byte, published *atomic.Int64)) {
		b.SetBytes(size)
		for range b.N {
			b.StopTimer()
			time.Sleep(3 * time.Second)
			path := filepath.Join(b.TempDir(), "f")
			f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
				b.Skip("fallocate:", err)
			}
			m, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
			if err != nil {
				b.Fatal(err)
			}
			var published atomic.Int64
			readerDone := make(chan int)
			go func() {
				sum := 0
				for off := int64(0); off < size; {
					if p := published.Load(); off < p {
						for ; off < p; off += int64(pageSize) {
							sum += int(m[off])
						}
					} else {
						time.Sleep(10 * time.Microsecond)
					}
				}
				readerDone <- sum
			}()
			b.StartTimer()
			write(f, m, &published)
			b.StopTimer()
			<-readerDone
			_ = unix.Munmap(m)
			_ = f.Close()
			_ = os.Remove(path)
			b.StartTimer()
		}
	}
	for _, w := range []int{replicaWriteChunk, 64 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("pwrite-%dKiB", w>>10), func(b *testing.B) {
			run(b, func(f *os.File, _ []byte, published *atomic.Int64) {
				for off := 0; off < size; off += len(src) {
					for c := off; c < off+len(src); c += w {
						if _, err := f.WriteAt(src[:w], int64(c)); err != nil {
							b.Fatal(err)
						}
					}
					published.Store(int64(off + len(src)))
				}
			})
		})
	}
	b.Run("populate-2MiB+copy", func(b *testing.B) {
		run(b, func(_ *os.File, m []byte, published *atomic.Int64) {
			for off := 0; off < size; off += prefaultChunk {
				if err := populate(m[off : off+prefaultChunk]); err != nil {
					b.Skip("populate:", err)
				}
				for c := off; c < off+prefaultChunk; c += len(src) {
					copy(m[c:], src)
					published.Store(int64(c + len(src)))
				}
			}
		})
	})
}
