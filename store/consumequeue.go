package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// Entries that pad a ConsumeQueue before its first real entry, as RocketMQ writes them: (0, MaxInt32, 0).
const paddingEntrySize = math.MaxInt32

// consumeQueue is one topic/queue's index of CommitLog records: RocketMQ's ConsumeQueue. Entry n (the
// message at logical offset n) sits at byte n×20 of the queue; see the package doc for the layout.
//
// Writers: the dispatcher appends (one goroutine); recovery and retention truncate and trim under mu.
// Readers use the mapped files' atomics and reference counts and take no lock.
type consumeQueue struct {
	topic   string
	queueID int32
	mfq     *mappedFileQueue

	// nextQueueOffset is RocketMQ's topicQueueTable entry: the logical offset the next put gets. Changed
	// only under the CommitLog put lock (atomic so that recovery and stats may read it).
	nextQueueOffset atomic.Int64

	mu              sync.Mutex   // serializes the dispatcher's appends with truncation and trimming
	destroyed       bool         // guarded by mu: the topic was deleted; appends are dropped
	maxPhysicOffset atomic.Int64 // end (offset + size) of the last entry's record: re-dispatch skips below
	minLogicOffset  atomic.Int64 // byte position of the first live entry
	entry           [ConsumeQueueEntryBytes]byte
}

func newConsumeQueue(fsys FS, root, topic string, queueID int32, fileSize int64, logger *slog.Logger) *consumeQueue {
	dir := filepath.Join(root, topic, strconv.Itoa(int(queueID)))
	cq := &consumeQueue{topic: topic, queueID: queueID, mfq: newMappedFileQueue(fsys, dir, fileSize, logger)}
	cq.mfq.unpopulateFlushed.Store(true) // the dispatcher appends entries through the mapping
	cq.maxPhysicOffset.Store(-1)
	return cq
}

// maxOffset is the number of entries written: the logical offset of the next message.
func (cq *consumeQueue) maxOffset() int64 {
	return cq.mfq.maxWroteOffset() / ConsumeQueueEntryBytes
}

// minOffset is the first live logical offset.
func (cq *consumeQueue) minOffset() int64 {
	return cq.minLogicOffset.Load() / ConsumeQueueEntryBytes
}

func putEntry(b []byte, phys int64, size int32, tagsCode int64) {
	binary.BigEndian.PutUint64(b, uint64(phys))
	binary.BigEndian.PutUint32(b[8:], uint32(size))
	binary.BigEndian.PutUint64(b[12:], uint64(tagsCode))
}

func readEntry(b []byte) (phys int64, size int32, tagsCode int64) {
	return int64(binary.BigEndian.Uint64(b)), int32(binary.BigEndian.Uint32(b[8:])), int64(binary.BigEndian.Uint64(b[12:]))
}

// entryValid is RocketMQ's recovery test for an entry: a non-negative offset and a positive size.
func entryValid(phys int64, size int32) bool { return phys >= 0 && size > 0 }

// put appends the entry for the record at phys as logical offset queueOffset. Records already present
// (re-dispatch after recovery) are skipped: appended reports whether an entry was written. A gap before
// queueOffset is padded, so logical offsets always match the records' QUEUEOFFSET. Dispatcher only.
func (cq *consumeQueue) put(phys int64, size int32, tagsCode int64, queueOffset int64) (appended bool, err error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if cq.destroyed || phys+int64(size) <= cq.maxPhysicOffset.Load() {
		return false, nil
	}
	want := queueOffset * ConsumeQueueEntryBytes
	fileSize := cq.mfq.fileSize
	for {
		mf := cq.mfq.last()
		if mf == nil || mf.isFull() {
			from := want - want%fileSize
			if mf != nil {
				from = mf.fromOffset + fileSize
				if from > want {
					return false, nil // an older offset than the queue holds: already there
				}
				if want-from >= fileSize {
					from = want - want%fileSize // a gap of whole files: start at the file holding want
				}
			}
			first := mf == nil
			nf, err := cq.mfq.create(from)
			if err != nil {
				return false, err
			}
			if err := cq.mfq.add(nf); err != nil {
				_ = nf.destroy(cq.mfq.fs, true)
				return false, err
			}
			if first {
				// A queue's first entry may come at any logical offset (a queue whose files all went, or a
				// CommitLog replayed from the middle); entries before it are padding, never read.
				cq.minLogicOffset.Store(want)
			}
			mf = nf
		}
		cur := mf.fromOffset + mf.wrote.Load()
		switch {
		case want < cur:
			return false, nil
		case want > cur:
			// Pad up to want (or to the end of this file) with RocketMQ's blank entries.
			pos := mf.wrote.Load()
			end := min(want-mf.fromOffset, fileSize)
			for p := pos; p+ConsumeQueueEntryBytes <= end; p += ConsumeQueueEntryBytes {
				putEntry(mf.data[p:], 0, paddingEntrySize, 0)
			}
			mf.wrote.Store(end)
			continue
		}
		pos := mf.wrote.Load()
		putEntry(mf.data[pos:], phys, size, tagsCode)
		mf.wrote.Store(pos + ConsumeQueueEntryBytes)
		cq.maxPhysicOffset.Store(phys + int64(size))
		return true, nil
	}
}

// entries returns the entries from logical offset offset to the end of the file holding it, with the
// file held (release it), or nil when offset is outside the readable range: RocketMQ's getIndexBuffer.
func (cq *consumeQueue) entries(offset int64) ([]byte, *mappedFile) {
	pos := offset * ConsumeQueueEntryBytes
	if offset < 0 || pos < cq.minLogicOffset.Load() {
		return nil, nil
	}
	mf := cq.mfq.findAndHold(pos)
	if mf == nil {
		return nil, nil
	}
	p, end := pos-mf.fromOffset, mf.readPosition()
	if p >= end {
		mf.release()
		return nil, nil
	}
	return mf.data[p:end:end], mf
}

// entryAt reads one entry.
func (cq *consumeQueue) entryAt(offset int64) (phys int64, size int32, tagsCode int64, ok bool) {
	b, mf := cq.entries(offset)
	if mf == nil {
		return 0, 0, 0, false
	}
	phys, size, tagsCode = readEntry(b)
	mf.release()
	return phys, size, tagsCode, true
}

// recover finds the end of the entries after load: scanning the last three files as RocketMQ does,
// stopping at the first invalid entry, then cutting there (zeroing the rest, deleting files after).
func (cq *consumeQueue) recover() error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	files := cq.mfq.snapshot()
	if len(files) == 0 {
		return nil
	}
	fileSize := cq.mfq.fileSize
	end := files[0].fromOffset
	maxPhys := int64(-1)
	for _, mf := range files[max(0, len(files)-3):] {
		end = mf.fromOffset
		pos := int64(0)
		for ; pos+ConsumeQueueEntryBytes <= fileSize; pos += ConsumeQueueEntryBytes {
			phys, size, _ := readEntry(mf.data[pos:])
			if !entryValid(phys, size) {
				break
			}
			if size != paddingEntrySize {
				maxPhys = phys + int64(size)
			}
		}
		end = mf.fromOffset + pos
		if pos < fileSize {
			break
		}
	}
	// Files before the last three are full by construction.
	if err := cq.mfq.truncateFrom(end); err != nil {
		return err
	}
	if end == files[0].fromOffset && len(cq.mfq.snapshot()) == 0 {
		// Everything went: keep the logical position so the next entry lands where the queue left off.
		cq.minLogicOffset.Store(end)
	}
	cq.maxPhysicOffset.Store(maxPhys)
	return nil
}

// truncateDirty drops entries whose record ends past phyEnd (recovery cut the CommitLog there, or
// replays it from there). Entries are in CommitLog order, so the dirty ones are a suffix: find where it
// starts, newest file first. An entry whose record starts before the previous entry's ends is dirty too:
// an entry straddling two pages of which only the later reached the disk reads back with a zeroed
// CommitLog offset (20-byte entries do straddle 4 KiB pages; never a file start).
func (cq *consumeQueue) truncateDirty(phyEnd int64) error {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	files := cq.mfq.snapshot()
	cut := int64(-1)
	for i := len(files) - 1; i >= 0; i-- {
		mf := files[i]
		w := mf.wrote.Load()
		first := int64(-1)
		prevEnd := int64(-1)
		for pos := int64(0); pos+ConsumeQueueEntryBytes <= w; pos += ConsumeQueueEntryBytes {
			phys, size, _ := readEntry(mf.data[pos:])
			if size == paddingEntrySize {
				continue
			}
			if phys+int64(size) > phyEnd || phys < prevEnd {
				first = pos
				break
			}
			prevEnd = phys + int64(size)
		}
		if first < 0 {
			break // this file is clean, and so is everything before it
		}
		cut = mf.fromOffset + first
		if first > 0 {
			break
		}
	}
	if cut < 0 {
		return nil
	}
	if err := cq.mfq.truncateFrom(cut); err != nil {
		return err
	}
	if len(cq.mfq.snapshot()) == 0 {
		cq.minLogicOffset.Store(cut)
	}
	cq.maxPhysicOffset.Store(cq.lastEntryEnd())
	return nil
}

// lastEntryEnd is the record end of the last real entry, -1 without one. Caller holds mu.
func (cq *consumeQueue) lastEntryEnd() int64 {
	files := cq.mfq.snapshot()
	for i := len(files) - 1; i >= 0; i-- {
		mf := files[i]
		for pos := mf.wrote.Load() - ConsumeQueueEntryBytes; pos >= 0; pos -= ConsumeQueueEntryBytes {
			phys, size, _ := readEntry(mf.data[pos:])
			if size != paddingEntrySize && entryValid(phys, size) {
				return phys + int64(size)
			}
		}
	}
	return -1
}

// correctMinOffset moves the first live entry to the first one whose record is at or past
// commitLogMin: RocketMQ's correctMinOffset.
func (cq *consumeQueue) correctMinOffset(commitLogMin int64) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if pos, ok := cq.livePositionLocked(commitLogMin); ok {
		cq.minLogicOffset.Store(pos)
	}
}

// minOffsetAfter is the logical offset correctMinOffset(commitLogMin) would make the minimum.
func (cq *consumeQueue) minOffsetAfter(commitLogMin int64) int64 {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	if pos, ok := cq.livePositionLocked(commitLogMin); ok {
		return pos / ConsumeQueueEntryBytes
	}
	return cq.minOffset()
}

// livePositionLocked is the byte position of the first entry, from the current minimum on, whose
// record is at or past commitLogMin (the end of the entries when none is); false without files.
// Caller holds mu.
func (cq *consumeQueue) livePositionLocked(commitLogMin int64) (int64, bool) {
	files := cq.mfq.snapshot()
	if len(files) == 0 {
		return 0, false
	}
	start := max(cq.minLogicOffset.Load(), files[0].fromOffset)
	for _, mf := range files {
		w := mf.wrote.Load()
		for pos := max(start-mf.fromOffset, 0); pos+ConsumeQueueEntryBytes <= w; pos += ConsumeQueueEntryBytes {
			phys, size, _ := readEntry(mf.data[pos:])
			if size != paddingEntrySize && phys >= commitLogMin {
				return mf.fromOffset + pos, true
			}
		}
	}
	return cq.mfq.maxWroteOffset(), true
}

// deleteExpired removes the leading files whose last entry's record lies below commitLogMin, never the
// last file: RocketMQ's ConsumeQueue.deleteExpiredFile. Returns the number of files removed.
func (cq *consumeQueue) deleteExpired(commitLogMin int64) (int, error) {
	cq.mu.Lock()
	defer cq.mu.Unlock()
	files := cq.mfq.snapshot()
	n := 0
	for i := 0; i < len(files)-1; i++ {
		mf := files[i]
		w := mf.wrote.Load()
		if w < ConsumeQueueEntryBytes {
			break
		}
		phys, _, _ := readEntry(mf.data[w-ConsumeQueueEntryBytes:])
		if phys >= commitLogMin {
			break
		}
		n++
	}
	if n == 0 {
		return 0, nil
	}
	err := cq.mfq.removeFirst(n)
	if first := cq.mfq.first(); first != nil && cq.minLogicOffset.Load() < first.fromOffset {
		cq.minLogicOffset.Store(first.fromOffset)
	}
	return n, err
}

// flush makes entries durable.
func (cq *consumeQueue) flush(leastPages int) error {
	_, err := cq.mfq.flush(leastPages)
	return err
}

// unflushedFrom is the CommitLog offset of the record behind the first entry not yet durable, or
// math.MaxInt64 when every entry is durable. A flush with leastPages > 0 leaves a queue's newest entries
// in the page cache; the checkpoint must not count their records as dispatched.
func (cq *consumeQueue) unflushedFrom() int64 {
	off := cq.mfq.flushedWhere.Load()
	for {
		mf := cq.mfq.findAndHold(off)
		if mf == nil {
			return math.MaxInt64
		}
		w := mf.wrote.Load() // entries below it are complete
		for pos := off - mf.fromOffset; pos+ConsumeQueueEntryBytes <= w; pos += ConsumeQueueEntryBytes {
			if phys, size, _ := readEntry(mf.data[pos:]); size != paddingEntrySize {
				mf.release()
				return phys
			}
		}
		next := mf.fromOffset + mf.size
		mf.release()
		if w < mf.size {
			return math.MaxInt64
		}
		off = next
	}
}

// offsetByTime binary-searches the store timestamps of the queue's records. lower (upper=false): the
// first logical offset whose message was stored at or after ts, or maxOffset when all are older. upper:
// the last logical offset stored at or before ts, or minOffset when all are newer. Empty queue: 0.
func (cq *consumeQueue) offsetByTime(cl *commitLog, ts int64, upper bool) int64 {
	lo, hi := cq.minOffset(), cq.maxOffset()-1
	if hi < lo {
		return cq.maxOffset()
	}
	storeTime := func(off int64) (int64, bool) {
		phys, size, _, ok := cq.entryAt(off)
		if !ok || size == paddingEntrySize {
			return 0, false
		}
		t := cl.pickupStoreTimestamp(phys, size)
		return t, t >= 0
	}
	// Skip entries whose records are gone (below the CommitLog's minimum).
	for lo <= hi {
		if _, ok := storeTime(lo); ok {
			break
		}
		lo++
	}
	if lo > hi {
		return cq.maxOffset()
	}
	first, last := lo, hi
	if !upper {
		ans := last + 1
		for lo <= hi {
			mid := lo + (hi-lo)/2
			t, ok := storeTime(mid)
			if !ok || t >= ts {
				ans, hi = mid, mid-1
			} else {
				lo = mid + 1
			}
		}
		return ans
	}
	ans := first
	found := false
	for lo <= hi {
		mid := lo + (hi-lo)/2
		t, ok := storeTime(mid)
		if ok && t <= ts {
			ans, found, lo = mid, true, mid+1
		} else {
			hi = mid - 1
		}
	}
	if !found {
		return first
	}
	return ans
}

// consumeQueueTable maps topic → queue id → ConsumeQueue: RocketMQ's consumeQueueTable. Lookups by a
// topic held as bytes do not allocate (the compiler elides the string conversion in a map index).
type consumeQueueTable struct {
	root     string
	fs       FS
	fileSize int64
	logger   *slog.Logger

	mu     sync.RWMutex
	topics map[string]map[int32]*consumeQueue
}

func newConsumeQueueTable(fsys FS, root string, fileSize int64, logger *slog.Logger) *consumeQueueTable {
	return &consumeQueueTable{root: root, fs: fsys, fileSize: fileSize, logger: logger,
		topics: make(map[string]map[int32]*consumeQueue)}
}

func (t *consumeQueueTable) find(topic string, queueID int32) *consumeQueue {
	t.mu.RLock()
	cq := t.topics[topic][queueID]
	t.mu.RUnlock()
	return cq
}

func (t *consumeQueueTable) findBytes(topic []byte, queueID int32) *consumeQueue {
	t.mu.RLock()
	cq := t.topics[string(topic)][queueID]
	t.mu.RUnlock()
	return cq
}

func (t *consumeQueueTable) findOrCreate(topic string, queueID int32) *consumeQueue {
	if cq := t.find(topic, queueID); cq != nil {
		return cq
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	qs := t.topics[topic]
	if qs == nil {
		qs = make(map[int32]*consumeQueue)
		t.topics[topic] = qs
	}
	cq := qs[queueID]
	if cq == nil {
		cq = newConsumeQueue(t.fs, t.root, topic, queueID, t.fileSize, t.logger)
		qs[queueID] = cq
	}
	return cq
}

func (t *consumeQueueTable) findOrCreateBytes(topic []byte, queueID int32) *consumeQueue {
	if cq := t.findBytes(topic, queueID); cq != nil {
		return cq
	}
	return t.findOrCreate(string(topic), queueID)
}

// all returns every queue (a new slice).
func (t *consumeQueueTable) all() []*consumeQueue {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []*consumeQueue
	for _, qs := range t.topics {
		for _, cq := range qs {
			out = append(out, cq)
		}
	}
	return out
}

// load opens every queue directory under root.
func (t *consumeQueueTable) load() error {
	topics, err := t.fs.ReadDir(t.root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: list %s: %w", t.root, err)
	}
	for _, te := range topics {
		if !te.IsDir() {
			continue
		}
		queues, err := t.fs.ReadDir(filepath.Join(t.root, te.Name()))
		if err != nil {
			return fmt.Errorf("store: list %s: %w", te.Name(), err)
		}
		for _, qe := range queues {
			id, err := strconv.ParseInt(qe.Name(), 10, 32)
			if err != nil || !qe.IsDir() {
				continue
			}
			cq := t.findOrCreate(te.Name(), int32(id))
			if err := cq.mfq.load(); err != nil {
				return err
			}
			if first := cq.mfq.first(); first != nil {
				cq.minLogicOffset.Store(first.fromOffset)
			}
		}
	}
	return nil
}

// remove deletes a topic's queues (files and directories).
func (t *consumeQueueTable) remove(topic string) error {
	t.mu.Lock()
	qs := t.topics[topic]
	delete(t.topics, topic)
	t.mu.Unlock()
	var errs []error
	for _, cq := range qs {
		cq.mu.Lock()
		cq.destroyed = true
		errs = append(errs, cq.mfq.destroyAll(true))
		cq.mu.Unlock()
	}
	if err := t.fs.RemoveAll(filepath.Join(t.root, topic)); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeExpired deletes every queue, SCHEDULE_TOPIC_XXXX's aside, whose last entry's record ends
// before commitLogMin (all its records are gone), and a topic left without queues: RocketMQ's
// cleanExpiredConsumerQueue. A queue without an entry is kept. It returns how many queues went.
func (t *consumeQueueTable) removeExpired(commitLogMin int64) (int, error) {
	var expired []*consumeQueue
	for _, cq := range t.all() {
		if cq.topic == ScheduleTopic {
			continue
		}
		cq.mu.Lock()
		end := cq.lastEntryEnd()
		cq.mu.Unlock()
		if end >= 0 && end < commitLogMin {
			expired = append(expired, cq)
		}
	}
	var errs []error
	for _, cq := range expired {
		t.mu.Lock()
		qs := t.topics[cq.topic]
		if qs[cq.queueID] != cq {
			t.mu.Unlock()
			continue // replaced meanwhile
		}
		delete(qs, cq.queueID)
		topicGone := len(qs) == 0
		if topicGone {
			delete(t.topics, cq.topic)
		}
		t.mu.Unlock()
		cq.mu.Lock()
		cq.destroyed = true
		errs = append(errs, cq.mfq.destroyAll(true))
		cq.mu.Unlock()
		dir := filepath.Join(t.root, cq.topic)
		if !topicGone {
			dir = filepath.Join(dir, strconv.Itoa(int(cq.queueID)))
		}
		if err := t.fs.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
		t.logger.Info("store: expired ConsumeQueue deleted", "topic", cq.topic, "queueId", cq.queueID,
			"commitLogMinOffset", commitLogMin)
	}
	return len(expired), errors.Join(errs...)
}

// topicNames lists the topics, sorted.
func (t *consumeQueueTable) topicNames() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.topics))
	for k := range t.topics {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}
