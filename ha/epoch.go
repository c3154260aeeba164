package ha

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ringmq/ringmq/internal/fsutil"
)

// The epoch file of controller mode (RocketMQ 5's EpochFileCache, file epochFileCheckpoint beside the
// store's checkpoint): which master epoch wrote which stretch of the CommitLog. Each time a broker
// becomes master it starts a new epoch (the controller's masterEpoch) at its CommitLog's end; a replica
// keeps the entries of the master it follows. Two replicas' CommitLogs are the same up to the consistent
// point (ConsistentPoint): the end of the newest epoch both have with the same start, whichever of them
// holds less of it. A returning replica truncates its CommitLog there and follows the master from it.
//
// The file is RocketMQ's CheckpointFile format, so that its tools read it: the number of entries on the
// first line, then one "epoch-startOffset" line per entry, oldest first. It is written whole, atomically.

// EpochFileName is the epoch file's name in the store's root directory (RocketMQ 5's).
const EpochFileName = "epochFileCheckpoint"

// EpochEntry is one master epoch and the CommitLog offset where its first record was (to be) written.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// ErrEpochFile: the epoch file does not parse, or an entry does not follow the one before it.
var ErrEpochFile = errors.New("ha: bad epoch file")

// EpochFile is the epoch entries of one broker, kept in memory and in a file. Safe for concurrent use.
type EpochFile struct {
	path string // "" keeps the entries in memory only
	mu   sync.Mutex
	list []EpochEntry // epochs and start offsets strictly increasing
}

// OpenEpochFile reads path (a missing file is no entries). path "" gives an EpochFile kept in memory.
func OpenEpochFile(path string) (*EpochFile, error) {
	f := &EpochFile{path: path}
	if path == "" {
		return f, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ha: read epoch file: %w", err)
	}
	if f.list, err = ParseEpochEntries(data); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// ParseEpochEntries reads RocketMQ's epoch file format (count line, then "epoch-startOffset" lines) and
// checks that epochs and start offsets strictly increase.
func ParseEpochEntries(data []byte) ([]EpochEntry, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	if !sc.Scan() {
		return nil, fmt.Errorf("%w: no count line", ErrEpochFile)
	}
	count, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	if err != nil || count < 0 {
		return nil, fmt.Errorf("%w: count line %q", ErrEpochFile, sc.Text())
	}
	var list []EpochEntry
	for line := 2; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		epoch, start, ok := strings.Cut(text, "-")
		e, err1 := strconv.ParseInt(epoch, 10, 32)
		s, err2 := strconv.ParseInt(start, 10, 64)
		if !ok || err1 != nil || err2 != nil || e < 0 || s < 0 {
			return nil, fmt.Errorf("%w: line %d: %q, want epoch-startOffset", ErrEpochFile, line, text)
		}
		list = append(list, EpochEntry{Epoch: int32(e), StartOffset: s})
		if err := checkFollows(list, len(list)-1); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrEpochFile, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEpochFile, err)
	}
	if len(list) != count {
		return nil, fmt.Errorf("%w: the count line says %d entries, the file has %d", ErrEpochFile, count, len(list))
	}
	return list, nil
}

// FormatEpochEntries writes entries in RocketMQ's epoch file format.
func FormatEpochEntries(list []EpochEntry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n", len(list))
	for _, e := range list {
		fmt.Fprintf(&b, "%d-%d\n", e.Epoch, e.StartOffset)
	}
	return b.Bytes()
}

// Entries returns a copy of the entries, oldest first.
func (f *EpochFile) Entries() []EpochEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.list)
}

// Last returns the newest entry; ok is false when there is none.
func (f *EpochFile) Last() (e EpochEntry, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.list) == 0 {
		return EpochEntry{}, false
	}
	return f.list[len(f.list)-1], true
}

// Append starts epoch e.Epoch at e.StartOffset, a broker becoming master (its CommitLog's end). The epoch
// must be newer than the last one and the offset not older. An epoch that wrote nothing (the last entry
// starts at the same offset) is replaced: it describes no bytes.
func (f *EpochFile) Append(e EpochEntry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := slices.Clone(f.list)
	if n := len(list); n > 0 {
		last := list[n-1]
		if e.Epoch <= last.Epoch || e.StartOffset < last.StartOffset {
			return fmt.Errorf("%w: epoch %d at %d does not follow epoch %d at %d", ErrEpochFile,
				e.Epoch, e.StartOffset, last.Epoch, last.StartOffset)
		}
		if e.StartOffset == last.StartOffset {
			list = list[:n-1]
		}
	}
	return f.storeLocked(append(list, e))
}

// checkFollows reports whether entry i of list follows entry i-1: a newer epoch, not an older start.
func checkFollows(list []EpochEntry, i int) error {
	if i > 0 && (list[i].Epoch <= list[i-1].Epoch || list[i].StartOffset < list[i-1].StartOffset) {
		return fmt.Errorf("entry %d-%d does not follow %d-%d",
			list[i].Epoch, list[i].StartOffset, list[i-1].Epoch, list[i-1].StartOffset)
	}
	return nil
}

// Reset replaces every entry (a replica adopting its master's after the handshake).
func (f *EpochFile) Reset(list []EpochEntry) error {
	for i := range list {
		if err := checkFollows(list, i); err != nil {
			return fmt.Errorf("%w: %w", ErrEpochFile, err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.storeLocked(slices.Clone(list))
}

// storeLocked writes list to the file, then keeps it. Caller holds f.mu.
func (f *EpochFile) storeLocked(list []EpochEntry) error {
	if f.path != "" {
		if err := fsutil.WriteFileAtomic(f.path, FormatEpochEntries(list), nil); err != nil {
			return fmt.Errorf("ha: write epoch file: %w", err)
		}
	}
	f.list = list
	return nil
}

// ConsistentPoint is the CommitLog offset up to which two replicas hold the same records, given each
// one's epoch entries and CommitLog end: the newest epoch both have with the same start offset ends, for
// each, at the next entry's start or at its CommitLog's end; the point is the lower of the two ends
// (RocketMQ 5's EpochFileCache.findConsistentPoint). Entries that start at or past a replica's end
// describe none of its bytes and are left out (a replica that took its master's entries and had not
// caught up when it stopped). ok is false when they share no epoch: nothing is known to be common.
func ConsistentPoint(a []EpochEntry, aEnd int64, b []EpochEntry, bEnd int64) (point int64, ok bool) {
	a, b = clipEntries(a, aEnd), clipEntries(b, bEnd)
	for i := len(a) - 1; i >= 0; i-- {
		j := slices.IndexFunc(b, func(e EpochEntry) bool { return e.Epoch == a[i].Epoch })
		if j < 0 || b[j].StartOffset != a[i].StartOffset {
			continue
		}
		return min(entryEnd(a, i, aEnd), entryEnd(b, j, bEnd)), true
	}
	return 0, false
}

// clipEntries leaves out the entries that start at or past end.
func clipEntries(list []EpochEntry, end int64) []EpochEntry {
	n := len(list)
	for n > 0 && list[n-1].StartOffset >= end {
		n--
	}
	return list[:n]
}

// entryEnd is where entry i of list ends: the next entry's start, or end for the last.
func entryEnd(list []EpochEntry, i int, end int64) int64 {
	if i+1 < len(list) {
		return min(list[i+1].StartOffset, end)
	}
	return end
}
