package ha

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
)

// memLog is an in-memory CommitLog of fixed-size files for the HA tests: a master's (Append, ReadReplica)
// and a slave's (AppendReplica). Bytes are kept per file, like mapped files.
type memLog struct {
	fileSize int64
	mu       sync.Mutex
	files    map[int64][]byte // file start → fileSize bytes
	starts   map[int64]bool   // where each Appended record starts
	end      atomic.Int64
	// block, when set, makes AppendReplica wait until it is closed (a stuck slave).
	block chan struct{}
}

func newMemLog(fileSize int64) *memLog {
	return &memLog{fileSize: fileSize, files: map[int64][]byte{}, starts: map[int64]bool{}}
}

func (l *memLog) MaxPhyOffset() int64 { return l.end.Load() }

// MinPhyOffset is the start of the oldest file kept.
func (l *memLog) MinPhyOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := int64(-1)
	for start := range l.files {
		if first < 0 || start < first {
			first = start
		}
	}
	return max(first, 0)
}

// deleteBelow drops the files that end at or below offset, as the master's clean-up does.
func (l *memLog) deleteBelow(offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for start := range l.files {
		if start+l.fileSize <= offset {
			delete(l.files, start)
		}
	}
}
func (l *memLog) FileSize() int64 { return l.fileSize }

func (l *memLog) fileLocked(start int64) []byte {
	f := l.files[start]
	if f == nil {
		f = make([]byte, l.fileSize)
		l.files[start] = f
	}
	return f
}

// Append writes b at the end; like a CommitLog, nothing crosses a file: the rest of a file too small is
// left as padding (zeros) and b starts the next file.
func (l *memLog) Append(b []byte) (offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	off := l.end.Load()
	if int64(len(b)) > l.fileSize {
		panic("record larger than a file")
	}
	if rest := l.fileSize - off%l.fileSize; int64(len(b)) > rest {
		l.fileLocked(off - off%l.fileSize) // the padding stays zero
		off += rest
	}
	f := l.fileLocked(off - off%l.fileSize)
	copy(f[off%l.fileSize:], b)
	l.starts[off] = true
	l.end.Store(off + int64(len(b)))
	return off
}

// IsRecordStart: a file's start, the end, or where Append put a record.
func (l *memLog) IsRecordStart(offset int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.end.Load()
	return offset == end || offset < end && (offset%l.fileSize == 0 || l.starts[offset])
}

func (l *memLog) hasFile(start int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.files[start] != nil
}

// Bytes is a copy of [from, to).
func (l *memLog) Bytes(from, to int64) []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]byte, 0, to-from)
	for off := from; off < to; {
		f := l.files[off-off%l.fileSize]
		n := min(to-off, l.fileSize-off%l.fileSize)
		if f == nil {
			out = append(out, make([]byte, n)...)
		} else {
			out = append(out, f[off%l.fileSize:off%l.fileSize+n]...)
		}
		off += n
	}
	return out
}

func (l *memLog) ReadReplica(offset int64, max int) ([]byte, func()) {
	end := l.end.Load()
	if offset >= end || max <= 0 {
		return nil, nil
	}
	l.mu.Lock()
	f := l.files[offset-offset%l.fileSize]
	l.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	n := min(int64(max), end-offset, l.fileSize-offset%l.fileSize)
	pos := offset % l.fileSize
	return f[pos : pos+n], func() {}
}

func (l *memLog) AppendReplica(offset int64, n int, r io.Reader) error {
	if l.block != nil {
		<-l.block
	}
	end := l.end.Load()
	if end != 0 && offset != end {
		return fmt.Errorf("append at %d, end %d", offset, end)
	}
	pos := offset % l.fileSize
	if pos+int64(n) > l.fileSize {
		return fmt.Errorf("append of %d at %d crosses a file", n, offset)
	}
	l.mu.Lock()
	f := l.fileLocked(offset - pos)
	l.mu.Unlock()
	if _, err := io.ReadFull(r, f[pos:pos+int64(n)]); err != nil {
		return err
	}
	l.end.Store(offset + int64(n))
	return nil
}

// truncate cuts the log at offset (a replica dropping a divergent tail): bytes past it are zeroed and
// later files dropped.
func (l *memLog) truncate(offset int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cutFile := offset - offset%l.fileSize
	for start, f := range l.files {
		switch {
		case start > cutFile:
			delete(l.files, start)
		case start == cutFile:
			clear(f[offset-start:])
		}
	}
	for off := range l.starts {
		if off >= offset {
			delete(l.starts, off)
		}
	}
	l.end.Store(offset)
}
