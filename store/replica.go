package store

import (
	"fmt"
	"io"
	"sync/atomic"
	"syscall"
)

// The store's side of master-slave replication (package ha): a master reads its CommitLog for the
// transfer, a slave appends the master's bytes at the same offsets. Both satisfy ha's small interfaces
// (ha.MasterLog, ha.SlaveLog) without either package importing the other.

// FileSize is mappedFileSizeCommitLog: replication frames never cross a multiple of it.
func (s *Store) FileSize() int64 { return s.cfg.MappedFileSizeCommitLog }

// SetPublishListener sets fn to run after every put has published its records (outside the put lock);
// the HA server's Notify, so that idle transfers wake at once. nil removes it.
func (s *Store) SetPublishListener(fn func()) {
	if fn == nil {
		s.commitLog.onPublish.Store(nil)
		return
	}
	s.commitLog.onPublish.Store(&fn)
}

// ReadReplica returns up to max CommitLog bytes from offset for a slave: within the file holding offset,
// below the published end, and only bytes that are in the CommitLog file (the mapping shares its page
// cache pages), held until release. Nothing there yet: nil, nil. It never takes the put lock. Safe for
// concurrent use.
//
// With the transient pool, published bytes wait in the pool buffer until the commit service moves them
// into the file; a process crash loses them there. A slave must never hold bytes its master can lose that
// way (the master would come back shorter than its slave, and resume it mid-record once new writes pass
// its offset), so the replica is served committed bytes only, as RocketMQ's master does. To keep a
// SYNC_MASTER's answer from waiting for the commit interval, a read that finds its bytes published but
// not committed commits them itself first (one write into the file, no sync: the page cache survives a
// process crash as the slave's copy does).
func (s *Store) ReadReplica(offset int64, max int) ([]byte, func()) {
	b, release, uncommitted := s.readReplica(offset, max)
	if !uncommitted {
		return b, release
	}
	if _, err := s.commitCommitLog(0); err != nil {
		return nil, nil // onFlushError has reacted; the transfer looks again later
	}
	b, release, _ = s.readReplica(offset, max)
	return b, release
}

// readReplica is ReadReplica without the commit: uncommitted is set when bytes from offset are published
// but still only in the transient pool buffer.
func (s *Store) readReplica(offset int64, max int) (b []byte, release func(), uncommitted bool) {
	cl := s.commitLog
	published := cl.maxOffset.Load()
	if max <= 0 || offset < 0 || offset >= published {
		return nil, nil, false
	}
	mf := cl.mfq.findAndHold(offset)
	if mf == nil {
		return nil, nil, false
	}
	pos := offset - mf.fromOffset
	// Never past the published end read above: publishCopied moves mf.wrote before maxOffset, so wrote
	// alone could run ahead of MaxPhyOffset for a moment, and a slave reporting such an offset is taken
	// for one ahead of its master (and refused).
	limit := min(published-mf.fromOffset, pos+int64(max))
	end := min(mf.readPosition(), limit)
	if end <= pos {
		uncommitted = min(mf.wrote.Load(), limit) > pos
		mf.release()
		return nil, nil, uncommitted
	}
	return mf.data[pos:end:end], mf.release, false
}

// IsRecordStart reports whether a slave may resume at offset: the start of a CommitLog file, the end of
// the published records, or the first byte of a record in between (found by walking the records of
// offset's file from its start; a master checks this once per slave connection). False past the
// published end, in a file no longer kept, or where the walk meets bytes that are not a record. Safe for
// concurrent use; it never takes the put lock.
func (s *Store) IsRecordStart(offset int64) bool {
	cl := s.commitLog
	published := cl.maxOffset.Load()
	switch {
	case offset < 0 || offset > published:
		return false
	case offset == published:
		return true
	}
	mf := cl.mfq.findAndHold(offset)
	if mf == nil {
		return false
	}
	target := offset - mf.fromOffset
	if target == 0 {
		mf.release()
		return true
	}
	end := min(mf.wrote.Load(), published-mf.fromOffset)
	b, release := mf.publishedView(end)
	defer release()
	return recordStartIn(b, target, end)
}

// ReadReplicaFile is ReadReplica for bytes already in the CommitLog file, for the kernel to send
// (sendfile): the file's descriptor access, the position of offset in it and how many bytes from there
// (at most max, within the file, below the published end), held until release. ok is false when the
// first byte is not in the file yet (with the transient pool, bytes wait in the pool buffer until
// committed: ReadReplica has them), or the file has no descriptor (a test file system). It never takes
// the put lock. Safe for concurrent use.
func (s *Store) ReadReplicaFile(offset int64, max int) (file syscall.RawConn, pos int64, n int, release func(), ok bool) {
	cl := s.commitLog
	published := cl.maxOffset.Load()
	if max <= 0 || offset < 0 || offset >= published {
		return nil, 0, 0, nil, false
	}
	mf := cl.mfq.findAndHold(offset)
	if mf == nil {
		return nil, 0, 0, nil, false
	}
	sc, isOS := mf.file.(interface {
		SyscallConn() (syscall.RawConn, error)
	})
	pos = offset - mf.fromOffset
	// readPosition: what is in the file (the mapping shares its pages), committed bytes with the pool.
	end := min(mf.readPosition(), published-mf.fromOffset, pos+int64(max))
	if !isOS || end <= pos {
		mf.release()
		return nil, 0, 0, nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		mf.release()
		return nil, 0, 0, nil, false
	}
	return rc, pos, int(end - pos), mf.release, true
}

// AppendReplica reads n bytes from r into the CommitLog at offset and publishes them for the dispatcher:
// a slave's HA client appending the master's bytes at the master's offsets. offset must be the CommitLog's
// end; an empty store takes any offset at a file boundary (a new slave starts at the master's last file).
// The bytes need not end on a record boundary, but must stay inside one file. One caller at a time (the
// HA client); concurrent readers see only published bytes.
//
// The bytes go to the file with pwrite, not through the mapping (readers still read the mapping: it
// shows the same page-cache pages): read from r replicaReadChunk at a time, written replicaWriteChunk at a
// time, each read chunk published once written. Copying into the mapping needed its pages populated ahead
// (MADV_POPULATE_WRITE by the prefaulter), which zeroes large folios the copy then overwrites, maps them
// writable (so every flush write-protects them again, with a TLB shootdown each) and lets a reader's fault
// start readahead past the end, zeroing more; a slave catching up spent more CPU on that than on the copy.
func (s *Store) AppendReplica(offset int64, n int, r io.Reader) error {
	if !s.cfg.Slave {
		return fmt.Errorf("%w: AppendReplica on a master's store", ErrServiceNotAvailable)
	}
	if s.state.Load() != stateStarted {
		return ErrServiceNotAvailable
	}
	cl := s.commitLog
	size := s.cfg.MappedFileSizeCommitLog
	cl.putLock.Lock()
	end := cl.maxOffset.Load()
	if offset != end {
		if cl.mfq.last() != nil || offset%size != 0 {
			cl.putLock.Unlock()
			return fmt.Errorf("store: replica bytes at %d, but the CommitLog ends at %d", offset, end)
		}
		// An empty store starts where the master's transfer starts.
		cl.maxOffset.Store(offset)
		cl.reservedEnd.Store(offset)
		s.dispatcher.reputFrom.Store(offset)
	}
	mf := cl.cur
	if mf == nil || offset >= mf.fromOffset+mf.size {
		var err error
		if mf, err = cl.rollLocked(); err != nil {
			cl.putLock.Unlock()
			return err
		}
	}
	cl.putLock.Unlock()
	pos := offset - mf.fromOffset
	if n < 0 || pos+int64(n) > mf.size {
		return fmt.Errorf("store: %d replica bytes at %d cross the end of CommitLog file %s", n, offset, mf.path)
	}
	if cl.replicaBuf == nil {
		cl.replicaBuf = make([]byte, replicaReadChunk)
	}
	for done := 0; done < n; {
		chunk := cl.replicaBuf[:min(n-done, replicaReadChunk)]
		if _, err := io.ReadFull(r, chunk); err != nil {
			return err
		}
		for len(chunk) > 0 {
			w := chunk[:min(len(chunk), replicaWriteChunk)]
			if _, err := mf.file.WriteAt(w, pos+int64(done)); err != nil {
				return fmt.Errorf("store: write %d replica bytes at %d to %s: %w", len(w), offset+int64(done), mf.path, err)
			}
			done += len(w)
			chunk = chunk[len(w):]
		}
		cl.publishReplica(mf, pos+int64(done))
	}
	return nil
}

// AppendReplica reads from the connection replicaReadChunk bytes at a time and writes replicaWriteChunk
// at a time. The write size matters: the page cache takes folios of about a write's size, and large
// folios written while the dispatcher reads the file through its mapping were slow on the machine of
// issue 16 (a 2 vCPU VM): BenchmarkReplicaWriteNewPages, 512 MiB into new pages with a mapping reader,
// 3 runs: 16 KiB writes 1.4-2.5 GB/s, 1 MiB writes 0.13-0.43 GB/s, populate + copy 0.19-0.42 GB/s; and a
// 1 GiB catch-up, 3 interleaved rounds: 0.43-0.58 GB/s with 16 KiB writes, 0.10-0.15 GB/s with 1 MiB ones.
const (
	replicaReadChunk  = 1 << 20
	replicaWriteChunk = 16 << 10
)

// publishReplica makes mf's bytes up to wrote (a position in mf) readable and wakes the dispatcher.
func (cl *commitLog) publishReplica(mf *mappedFile, wrote int64) {
	added := wrote - mf.wrote.Load()
	mf.wrote.Store(wrote)
	cl.reservedEnd.Store(mf.fromOffset + wrote)
	cl.maxOffset.Store(mf.fromOffset + wrote)
	cl.putBytes.Add(added)
	cl.onAppend()
}

// TrimPartialRecord cuts a slave's CommitLog back to the end of its last whole record when it ends inside
// one (its master died, or the connection broke, mid-frame), and returns the end before and after. The
// HA client calls it before each connection reports its offset, as recovery does at every start: a master
// that restarted meanwhile cannot know it sent those bytes and refuses a slave reporting an offset inside
// a record as diverged (ha.Server), while from the record's start it resumes the slave. Without this a
// running slave needed a restart.
//
// The cut bytes were never dispatched (the dispatcher waits for a record's last byte). They are zeroed and
// the zeros synced, so that a crash cannot bring them back behind the records the master sends next; the
// dispatcher is held off meanwhile, so that it never reads them half zeroed. Not concurrent with
// AppendReplica (the HA client is the only caller of both).
func (s *Store) TrimPartialRecord() (from, to int64, err error) {
	if !s.cfg.Slave {
		return 0, 0, fmt.Errorf("%w: TrimPartialRecord on a master's store", ErrServiceNotAvailable)
	}
	if s.state.Load() != stateStarted {
		return 0, 0, ErrServiceNotAvailable
	}
	cl, d := s.commitLog, s.dispatcher
	d.mu.Lock()
	defer d.mu.Unlock()
	cl.putLock.Lock()
	defer cl.putLock.Unlock()
	end := cl.maxOffset.Load()
	mf := cl.cur
	if mf == nil || end <= mf.fromOffset || end > mf.fromOffset+mf.size {
		return end, end, nil // no byte in the current file, and a record never crosses into it
	}
	// Records before the current file are whole, and so are those before the dispatcher's position: walk
	// the current file's records from the later of the two (it cannot go away: the put lock is held).
	whole := s.wholeRecordsEnd(max(d.reputFrom.Load(), mf.fromOffset), end)
	if whole >= end {
		return end, end, nil
	}
	pos, limit := whole-mf.fromOffset, end-mf.fromOffset
	q := cl.mfq
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	// Unpublish first (no reader reads past maxOffset), then clear and sync what was cut.
	cl.maxOffset.Store(whole)
	cl.reservedEnd.Store(whole)
	cl.putBytes.Add(whole - end)
	mf.wrote.Store(pos)
	for _, p := range []*atomic.Int64{&mf.committed, &mf.flushed} {
		if p.Load() > pos {
			p.Store(pos)
		}
	}
	for _, p := range []*atomic.Int64{&q.committedWhere, &q.flushedWhere} {
		if p.Load() > whole {
			p.Store(whole)
		}
	}
	s.logger.Warn("store: cutting the partial record at the CommitLog's end before reporting to the master "+
		"(a replica's, never acknowledged)", "from", end, "to", whole, "bytes", end-whole)
	if clearNonZero(mf.data[pos:limit]) {
		if err := mf.file.SyncMapped(mf.data, pos, limit-pos); err != nil {
			return end, whole, fmt.Errorf("store: sync the cut tail of %s: %w", mf.path, err)
		}
	}
	return end, whole, nil
}
