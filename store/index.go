package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// IndexFile layout (PROTOCOL.md §7.4), big-endian:
//
//	header, 40 bytes:
//	  0 beginTimestamp int64   8 endTimestamp int64   16 beginPhyOffset int64   24 endPhyOffset int64
//	  32 hashSlotCount int32   36 indexCount int32 (starts at 1: entry 0 is never used)
//	slots, slotNum × 4 bytes at 40: newest entry number of the slot's chain, 0 = empty
//	entries, indexNum × 20 bytes at 40 + slotNum×4:
//	  0 keyHash int32   4 phyOffset int64   12 timeDiff int32 (s since beginTimestamp)   16 prevIndex int32
//
// keyHash = |Java hashCode("topic#key")| (Integer.MIN_VALUE → 0); slot = keyHash mod slotNum. Keys are
// topic#UNIQ_KEY and topic#<each space-separated word of KEYS>.
const (
	indexHeaderBytes = 40
	indexSlotBytes   = 4
	indexEntryBytes  = 20
	indexKeySep      = '#'
	indexNameLayout  = "20060102150405"
)

// indexFile is one IndexFile. The dispatcher writes; queries read concurrently. A query loads indexCount
// (atomic) before reading slots and entries, and ignores slot values beyond it, so it never follows an
// entry that is not complete.
type indexFile struct {
	mf       *mappedFile
	slotNum  int
	indexNum int

	beginTimestamp atomic.Int64
	endTimestamp   atomic.Int64
	beginPhyOffset atomic.Int64
	endPhyOffset   atomic.Int64
	hashSlotCount  atomic.Int32
	indexCount     atomic.Int32

	// syncedCount is the entry count the last flush made durable (indexService.flush, under the store's
	// checkpointMu), 0 before any.
	syncedCount int32
}

func indexFileBytes(slotNum, indexNum int) int64 {
	return indexHeaderBytes + int64(slotNum)*indexSlotBytes + int64(indexNum)*indexEntryBytes
}

func (f *indexFile) loadHeader() {
	h := f.mf.data
	be := binary.BigEndian
	f.beginTimestamp.Store(int64(be.Uint64(h[0:])))
	f.endTimestamp.Store(int64(be.Uint64(h[8:])))
	f.beginPhyOffset.Store(int64(be.Uint64(h[16:])))
	f.endPhyOffset.Store(int64(be.Uint64(h[24:])))
	f.hashSlotCount.Store(int32(be.Uint32(h[32:])))
	n := int32(be.Uint32(h[36:]))
	if n <= 0 {
		n = 1
	}
	// A damaged header must not send readers or writers past the file.
	f.indexCount.Store(min(n, int32(f.indexNum)))
}

func (f *indexFile) storeHeader() {
	h := f.mf.data
	be := binary.BigEndian
	be.PutUint64(h[0:], uint64(f.beginTimestamp.Load()))
	be.PutUint64(h[8:], uint64(f.endTimestamp.Load()))
	be.PutUint64(h[16:], uint64(f.beginPhyOffset.Load()))
	be.PutUint64(h[24:], uint64(f.endPhyOffset.Load()))
	be.PutUint32(h[32:], uint32(f.hashSlotCount.Load()))
	be.PutUint32(h[36:], uint32(f.indexCount.Load()))
}

func (f *indexFile) isFull() bool { return int(f.indexCount.Load()) >= f.indexNum }

// indexKeyHash is RocketMQ's IndexFile.indexKeyHashMethod.
func indexKeyHash(key []byte) int32 {
	h := codec.JavaHashCodeBytes(key)
	if h < 0 {
		h = -h // Integer.MIN_VALUE stays negative, as Math.abs leaves it
	}
	if h < 0 {
		h = 0
	}
	return h
}

func (f *indexFile) slotPos(keyHash int32) int {
	return indexHeaderBytes + int(keyHash)%f.slotNum*indexSlotBytes
}

func (f *indexFile) entryPos(n int32) int {
	return indexHeaderBytes + f.slotNum*indexSlotBytes + int(n)*indexEntryBytes
}

// putKey adds one key. false when the file is full. Dispatcher only.
func (f *indexFile) putKey(key []byte, phyOffset, storeTimestamp int64) bool {
	count := f.indexCount.Load()
	if int(count) >= f.indexNum {
		return false
	}
	be := binary.BigEndian
	d := f.mf.data
	keyHash := indexKeyHash(key)
	slot := f.slotPos(keyHash)
	slotValue := int32(be.Uint32(d[slot:]))
	if slotValue <= 0 || slotValue >= count {
		slotValue = 0
	}
	begin := f.beginTimestamp.Load()
	timeDiff := (storeTimestamp - begin) / 1000
	switch {
	case begin <= 0:
		timeDiff = 0
	case timeDiff > math.MaxInt32:
		timeDiff = math.MaxInt32
	case timeDiff < 0:
		timeDiff = 0
	}
	e := f.entryPos(count)
	be.PutUint32(d[e:], uint32(keyHash))
	be.PutUint64(d[e+4:], uint64(phyOffset))
	be.PutUint32(d[e+12:], uint32(int32(timeDiff)))
	be.PutUint32(d[e+16:], uint32(slotValue))
	be.PutUint32(d[slot:], uint32(count))
	if count <= 1 {
		f.beginPhyOffset.Store(phyOffset)
		f.beginTimestamp.Store(storeTimestamp)
	}
	if slotValue == 0 {
		f.hashSlotCount.Add(1)
	}
	f.endPhyOffset.Store(phyOffset)
	f.endTimestamp.Store(storeTimestamp)
	f.indexCount.Store(count + 1) // publishes the entry to queries
	f.storeHeader()
	return true
}

// isTimeMatched is RocketMQ's IndexFile.isTimeMatched.
func (f *indexFile) isTimeMatched(begin, end int64) bool {
	bt, et := f.beginTimestamp.Load(), f.endTimestamp.Load()
	return (begin < bt && end > et) || (begin >= bt && begin <= et) || (end >= bt && end <= et)
}

// selectPhyOffsets walks key's chain, newest first, appending offsets of entries with the key's hash
// stored within [begin, end] until out holds maxNum: RocketMQ's IndexFile.selectPhyOffset.
func (f *indexFile) selectPhyOffsets(out []int64, key []byte, maxNum int, begin, end int64) []int64 {
	count := f.indexCount.Load()
	if count <= 1 {
		return out
	}
	be := binary.BigEndian
	d := f.mf.data
	keyHash := indexKeyHash(key)
	next := int32(be.Uint32(d[f.slotPos(keyHash):]))
	if next <= 0 || next >= count {
		return out
	}
	beginTs := f.beginTimestamp.Load()
	for steps := int32(0); len(out) < maxNum && steps < count; steps++ {
		e := f.entryPos(next)
		hashRead := int32(be.Uint32(d[e:]))
		phyRead := int64(be.Uint64(d[e+4:]))
		timeDiff := int64(int32(be.Uint32(d[e+12:])))
		prev := int32(be.Uint32(d[e+16:]))
		if timeDiff < 0 {
			break
		}
		timeRead := beginTs + timeDiff*1000
		if hashRead == keyHash && timeRead >= begin && timeRead <= end {
			out = append(out, phyRead)
		}
		if prev <= 0 || prev >= count || prev == next || timeRead < begin {
			break
		}
		next = prev
	}
	return out
}

// indexService owns the IndexFiles: RocketMQ's IndexService. Appends come from the dispatcher only;
// queries and retention take mu.
type indexService struct {
	dir      string
	fs       FS
	slotNum  int
	indexNum int
	logger   *slog.Logger
	clock    func() time.Time

	mu    sync.RWMutex
	files []*indexFile // oldest first

	// lastIndexed is the physical offset of the newest record indexed (-1: none); records at or below
	// it are skipped when the dispatcher replays after recovery. Dispatcher only.
	lastIndexed int64
	keyBuf      []byte // dispatcher only
}

func newIndexService(fsys FS, dir string, slotNum, indexNum int, clock func() time.Time, logger *slog.Logger) *indexService {
	return &indexService{dir: dir, fs: fsys, slotNum: slotNum, indexNum: indexNum, clock: clock, logger: logger,
		lastIndexed: -1, keyBuf: make([]byte, 0, 512)}
}

func (s *indexService) fileBytes() int64 { return indexFileBytes(s.slotNum, s.indexNum) }

// load opens the IndexFiles of the directory, oldest first (names sort by time).
func (s *indexService) load() error {
	entries, err := s.fs.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: list %s: %w", s.dir, err)
	}
	size := s.fileBytes()
	for _, e := range entries {
		if e.IsDir() || len(e.Name()) != len(indexNameLayout)+3 {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		st, err := s.fs.Stat(path)
		if err != nil {
			return err
		}
		if st.Size() == 0 {
			// Killed between creating the file and sizing it: nothing was ever indexed in it (entries go
			// in only once it is sized and mapped), and dispatch re-indexes from the checkpoint.
			s.logger.Warn("store: removing an IndexFile a crash left empty", "file", path)
			if err := s.fs.Remove(path); err != nil {
				return fmt.Errorf("store: remove %s: %w", path, err)
			}
			continue
		}
		if st.Size() != size {
			return fmt.Errorf("%w: %s is %d bytes, maxHashSlotNum/maxIndexNum make %d", ErrConfig, path, st.Size(), size)
		}
		mf, err := openMappedFile(s.fs, path, 0, size, s.logger)
		if err != nil {
			return err
		}
		f := &indexFile{mf: mf, slotNum: s.slotNum, indexNum: s.indexNum}
		f.loadHeader()
		mf.setPositions(size)
		s.files = append(s.files, f)
	}
	s.resetLastIndexed()
	return nil
}

func (s *indexService) resetLastIndexed() {
	s.lastIndexed = -1
	for i := len(s.files) - 1; i >= 0; i-- {
		if s.files[i].indexCount.Load() > 1 {
			s.lastIndexed = s.files[i].endPhyOffset.Load()
			return
		}
	}
}

// fileID is the file's name as a number (yyyyMMddHHmmssSSS), which the checkpoint records.
func (f *indexFile) fileID() int64 {
	id, _ := parseIndexFileID(filepath.Base(f.mf.path))
	return id
}

func parseIndexFileID(name string) (int64, bool) {
	if len(name) != len(indexNameLayout)+3 {
		return 0, false
	}
	var id int64
	for _, c := range []byte(name) {
		if c < '0' || c > '9' {
			return 0, false
		}
		id = id*10 + int64(c-'0')
	}
	return id, true
}

// current reports the newest file's id and entry count (for the checkpoint); 0, 0 without files.
func (s *indexService) current() (fileID int64, count int32) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if n := len(s.files); n > 0 {
		return s.files[n-1].fileID(), s.files[n-1].indexCount.Load()
	}
	return 0, 0
}

// recoverAbnormal makes the IndexFiles consistent after a crash that may have lost pages of them.
//
// A full file was flushed when the next one was created, so it is intact. The file that was current at
// the last checkpoint had its first count entries flushed by it; later entries and their slot updates
// may be torn. It is cut back to those entries: the slot table is rebuilt from them (a sequential pass),
// and the header set from the last one; the dispatcher's replay from the checkpoint re-indexes the rest.
// Files created after the checkpoint are deleted. Without a ringmq checkpoint (a store written by
// Apache RocketMQ), RocketMQ's rule applies: files updated after indexMsgTimestamp are deleted.
func (s *indexService) recoverAbnormal(ck checkpointData) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	drop := func() {
		f := s.files[len(s.files)-1]
		s.logger.Warn("store: dropping IndexFile written after the last checkpoint", "file", f.mf.path)
		errs = append(errs, f.mf.destroy(s.fs, true))
		s.files = s.files[:len(s.files)-1]
	}
	if !ck.Valid {
		for len(s.files) > 0 && s.files[len(s.files)-1].endTimestamp.Load() > ck.IndexMsgTimestamp {
			drop()
		}
		s.resetLastIndexed()
		return errors.Join(errs...)
	}
	for len(s.files) > 0 {
		f := s.files[len(s.files)-1]
		id := f.fileID()
		if id > ck.IndexFileID || ck.IndexFileID == 0 {
			drop()
			continue
		}
		if id == ck.IndexFileID {
			f.rebuild(max(ck.IndexCount, 1))
		}
		break
	}
	s.resetLastIndexed()
	return errors.Join(errs...)
}

// rebuild cuts the file back to its first count entries (1 = none) and rebuilds slots and header from
// them. Recovery only.
func (f *indexFile) rebuild(count int32) {
	if int(count) > f.indexNum {
		count = int32(f.indexNum)
	}
	be := binary.BigEndian
	d := f.mf.data
	clearNonZero(d[indexHeaderBytes : indexHeaderBytes+f.slotNum*indexSlotBytes])
	var used int32
	for n := int32(1); n < count; n++ {
		e := f.entryPos(n)
		keyHash := int32(be.Uint32(d[e:]))
		slot := f.slotPos(keyHash)
		if be.Uint32(d[slot:]) == 0 {
			used++
		}
		be.PutUint32(d[slot:], uint32(n))
	}
	// Entries past count are dead; clear them so a later crash cannot show them again.
	clearNonZero(d[f.entryPos(count):f.entryPos(int32(f.indexNum))])
	f.indexCount.Store(count)
	f.hashSlotCount.Store(used)
	if count > 1 {
		e := f.entryPos(count - 1)
		f.endPhyOffset.Store(int64(be.Uint64(d[e+4:])))
		f.endTimestamp.Store(f.beginTimestamp.Load() + int64(int32(be.Uint32(d[e+12:])))*1000)
	}
	f.storeHeader()
}

// truncateDirty drops the entries of records at or past phyEnd, where recovery cut the CommitLog: an
// IndexFile flushed by a checkpoint may hold entries of records the CommitLog had not made durable yet
// (ASYNC_FLUSH, or a SYNC_FLUSH sync in flight). Left in place, lastIndexed would lie past the cut and
// the replay would not index the records that later land at those offsets, and the entries would name
// offsets that now hold other records. A file's entries are in CommitLog order. Recovery only.
func (s *indexService) truncateDirty(phyEnd int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	be := binary.BigEndian
	for len(s.files) > 0 {
		f := s.files[len(s.files)-1]
		count := f.indexCount.Load()
		if count <= 1 && len(s.files) > 1 && s.files[len(s.files)-2].endPhyOffset.Load() >= phyEnd {
			// An empty newest file (the IndexFile rolled just before the checkpoint read the count)
			// says nothing of the file before it, whose last entries lie past the cut.
			s.logger.Warn("store: dropping an empty IndexFile to cut the one before it", "file", f.mf.path,
				"commitLogEnd", phyEnd)
			errs = append(errs, f.mf.destroy(s.fs, true))
			s.files = s.files[:len(s.files)-1]
			continue
		}
		if count <= 1 || f.endPhyOffset.Load() < phyEnd {
			break
		}
		n := count
		for n > 1 && int64(be.Uint64(f.mf.data[f.entryPos(n-1)+4:])) >= phyEnd {
			n--
		}
		if n == 1 && len(s.files) > 1 {
			s.logger.Warn("store: dropping IndexFile of records past the recovered CommitLog end", "file", f.mf.path,
				"commitLogEnd", phyEnd)
			errs = append(errs, f.mf.destroy(s.fs, true))
			s.files = s.files[:len(s.files)-1]
			continue
		}
		s.logger.Warn("store: cutting IndexFile entries of records past the recovered CommitLog end", "file", f.mf.path,
			"entries", count-n, "commitLogEnd", phyEnd)
		f.rebuild(n)
		break
	}
	s.resetLastIndexed()
	return errors.Join(errs...)
}

// lastFile returns the file to append to, creating one when there is none or the last is full.
// Dispatcher only.
func (s *indexService) lastFile() (*indexFile, error) {
	s.mu.RLock()
	var last *indexFile
	if n := len(s.files); n > 0 {
		last = s.files[n-1]
	}
	s.mu.RUnlock()
	if last != nil && !last.isFull() {
		return last, nil
	}
	if err := s.fs.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	now := s.clock()
	var path string
	for i := 0; ; i++ {
		t := now.Add(time.Duration(i) * time.Millisecond)
		path = filepath.Join(s.dir, t.Format(indexNameLayout)+fmt.Sprintf("%03d", t.Nanosecond()/1e6))
		if _, err := s.fs.Stat(path); errors.Is(err, os.ErrNotExist) {
			break
		}
	}
	mf, err := openMappedFile(s.fs, path, 0, s.fileBytes(), s.logger)
	if err != nil {
		return nil, err
	}
	f := &indexFile{mf: mf, slotNum: s.slotNum, indexNum: s.indexNum}
	f.indexCount.Store(1)
	if last != nil {
		// A new file starts where the previous ended (RocketMQ's constructor arguments).
		f.beginPhyOffset.Store(last.endPhyOffset.Load())
		f.endPhyOffset.Store(last.endPhyOffset.Load())
		f.beginTimestamp.Store(last.endTimestamp.Load())
		f.endTimestamp.Store(last.endTimestamp.Load())
		// The full file will not change again: make it durable now.
		if err := last.mf.flush(0); err != nil {
			s.logger.Error("store: flushing a full IndexFile failed", "file", last.mf.path, "error", err)
		}
	}
	f.storeHeader()
	s.mu.Lock()
	s.files = append(s.files, f)
	s.mu.Unlock()
	return f, nil
}

// build indexes one dispatched record: its UNIQ_KEY and each KEYS word (uniq and keys are those property
// values). Rollback records are not indexed; prepared ones are. Dispatcher only.
func (s *indexService) build(rec *codec.Record, phys int64, uniq, keys []byte) error {
	if phys <= s.lastIndexed {
		return nil
	}
	if codec.TransactionType(rec.SysFlag) == codec.SysFlagTransactionRollback {
		return nil
	}
	if len(uniq) > 0 {
		if err := s.putKey(rec.Topic, uniq, phys, rec.StoreTimestamp); err != nil {
			return err
		}
	}
	for len(keys) > 0 {
		var word []byte
		if i := bytes.IndexByte(keys, ' '); i >= 0 {
			word, keys = keys[:i], keys[i+1:]
		} else {
			word, keys = keys, nil
		}
		if len(word) == 0 {
			continue
		}
		if err := s.putKey(rec.Topic, word, phys, rec.StoreTimestamp); err != nil {
			return err
		}
	}
	s.lastIndexed = phys
	return nil
}

func (s *indexService) putKey(topic, key []byte, phys, storeTs int64) error {
	s.keyBuf = append(append(append(s.keyBuf[:0], topic...), indexKeySep), key...)
	for range 2 { // a full file gives way to a new one once
		f, err := s.lastFile()
		if err != nil {
			return err
		}
		if f.putKey(s.keyBuf, phys, storeTs) {
			return nil
		}
	}
	return fmt.Errorf("store: IndexFile refused a key after a roll")
}

// query returns physical offsets of records indexed under topic#key within [begin, end] (ms), newest
// first, at most maxNum, plus the newest file's last update: RocketMQ's IndexService.queryOffset.
func (s *indexService) query(topic, key string, maxNum int, begin, end int64) (offsets []int64, lastTs, lastPhy int64) {
	k := make([]byte, 0, len(topic)+1+len(key))
	k = append(append(append(k, topic...), indexKeySep), key...)
	s.mu.RLock()
	files := append([]*indexFile(nil), s.files...)
	s.mu.RUnlock()
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		if !f.mf.hold() {
			continue
		}
		if i == len(files)-1 {
			lastTs, lastPhy = f.endTimestamp.Load(), f.endPhyOffset.Load()
		}
		if f.isTimeMatched(begin, end) {
			offsets = f.selectPhyOffsets(offsets, k, maxNum, begin, end)
		}
		bt := f.beginTimestamp.Load()
		f.mf.release()
		if bt < begin || len(offsets) >= maxNum {
			break
		}
	}
	return offsets, lastTs, lastPhy
}

// flush makes the files durable: with whole, every dirty page (the thorough flush, shutdown). Otherwise
// the file being appended to gets only what recovery after a crash reads of it (recoverAbnormal rebuilds
// the slot table from the entries the checkpoint counts, and takes beginTimestamp from the header): the
// header's page and the entries added since the last flush. The slot table is written at random, so
// each flush of it write-protected up to all its pages, and the next put of a key into each took a write
// fault; it is left to the thorough flush and the kernel's writeback. The entries' whole pages, which
// are not written again, are unmapped before their sync, as mappedFile.flushPages does. Caller holds the
// store's checkpointMu.
func (s *indexService) flush(whole bool) error {
	s.mu.RLock()
	files := append([]*indexFile(nil), s.files...)
	s.mu.RUnlock()
	var errs []error
	for i, f := range files {
		if !f.mf.hold() {
			continue
		}
		errs = append(errs, f.flush(whole || i < len(files)-1 || f.isFull()))
		f.mf.release()
	}
	return errors.Join(errs...)
}

// flush syncs the file whole, or its header page and the entries added since the last flush (see
// indexService.flush). Caller holds a reference and the store's checkpointMu.
func (f *indexFile) flush(whole bool) error {
	count := f.indexCount.Load()
	var err error
	switch {
	case whole:
		err = f.mf.file.SyncMapped(f.mf.data, 0, 0)
	case count > f.syncedCount:
		from, to := int64(f.entryPos(max(f.syncedCount, 1))), int64(f.entryPos(count))
		_ = f.mf.unpopulateWritten(from, to) // its refusal only costs the TLB flushes
		err = errors.Join(f.mf.file.SyncMapped(f.mf.data, 0, int64(pageSize)), f.mf.file.SyncMapped(f.mf.data, from, to-from))
	}
	if err == nil {
		f.syncedCount = count
	}
	return err
}

// deleteExpired removes the oldest files whose last record lies below commitLogMin, never the last.
func (s *indexService) deleteExpired(commitLogMin int64) error {
	s.mu.Lock()
	var gone []*indexFile
	for len(s.files) > 1 && s.files[0].endPhyOffset.Load() < commitLogMin {
		gone = append(gone, s.files[0])
		s.files = s.files[1:]
	}
	s.mu.Unlock()
	var errs []error
	for _, f := range gone {
		errs = append(errs, f.mf.destroy(s.fs, true))
	}
	return errors.Join(errs...)
}

func (s *indexService) close() error {
	s.mu.Lock()
	files := s.files
	s.files = nil
	s.mu.Unlock()
	var errs []error
	for _, f := range files {
		errs = append(errs, f.mf.destroy(s.fs, false))
	}
	return errors.Join(errs...)
}
