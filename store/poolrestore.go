package store

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/transientpool"
)

// Restoring the transient pool's bytes after a process crash.
//
// With transientStorePoolEnable a put lands in the current CommitLog file's pool buffer, and under
// ASYNC_FLUSH it is acknowledged there; the commit service writes it into the file up to
// commitIntervalCommitLog later. With the buffers as files on tmpfs (transientStorePoolDir) those bytes
// outlive a killed process, and each buffer's header names its CommitLog file and the end of what its
// puts published. Abnormal recovery, once it has found where the CommitLog's records end, continues the
// log from the buffers: from that end, in the buffer of the file holding it, every record up to the
// published end must decode (magic, sizes, body CRC) and say it lies at its offset (PHYSICALOFFSET), and
// the buffer must hold the same bytes as the file just below the end (so it is this log's buffer, not
// one of a store since replaced); the good records are written into the file. A blank record that ends
// the file leads on to the next file's buffer. Whatever follows the published end (puts the crash cut
// short, never acknowledged) or fails a check is dropped and counted.

// poolRestoreStats is what recovery took from the pool's files (logged, and in the recovered line).
type poolRestoreStats struct {
	files, messages, bytes int64
	droppedMessages        int64 // whole records past the published end (never acknowledged)
	droppedBytes           int64 // bytes in buffers past what was restored, up to their published end or the drop
}

// poolRestoreChunk is how much of a buffer is read and checked at a time.
const poolRestoreChunk = 8 << 20

// restoreFromPool writes the acknowledged records the pool's leftover buffers hold past end (the end of
// the records in the CommitLog files) into the files and returns the new end. Recovery only.
func (s *Store) restoreFromPool(end int64) (int64, error) {
	ls := s.leftovers
	if ls == nil || len(ls.Buffers) == 0 {
		return end, nil
	}
	st := &s.poolRestore
	q := s.commitLog.mfq
	used := make(map[*transientpool.Leftover]bool)
	off := end
	for {
		mf := q.find(off)
		if mf == nil {
			break
		}
		pos := off - mf.fromOffset
		var l *transientpool.Leftover
		for _, c := range ls.Buffers {
			if c.Owner == mf.fromOffset && c.Published > pos && (l == nil || c.Published > l.Published) {
				l = c
			}
		}
		if l == nil {
			break
		}
		used[l] = true
		restored, full, err := s.restoreFile(mf, l, pos)
		if err != nil {
			return end, err
		}
		if restored > 0 {
			st.files++
		}
		if !full {
			break
		}
		off = mf.fromOffset + mf.size
	}
	for _, l := range ls.Buffers {
		if !used[l] && l.Owner >= end-end%s.cfg.MappedFileSizeCommitLog && l.Owner+l.Published > end {
			// A buffer past the restored log (its file's predecessor did not end in the buffers).
			s.logger.Warn("store: a transient pool buffer does not continue the CommitLog; its bytes are dropped",
				"file", l.Path, "commitLogFile", offsetFileName(l.Owner), "publishedBytes", l.Published, "end", end)
			st.droppedBytes += l.Published
		}
	}
	if st.bytes == 0 {
		if st.droppedBytes > 0 {
			s.logger.Warn("store: restored nothing from the transient pool's files", "dir", ls.Dir,
				"droppedBytes", st.droppedBytes, "droppedMessages", st.droppedMessages)
		}
		return end, nil
	}
	newEnd, err := s.scanCommitLog(end, true, -1)
	if err != nil {
		return end, err
	}
	// Published: under ASYNC_FLUSH acknowledged; under SYNC_FLUSH some may still have waited for their
	// sync (a killed process keeps those in the page cache just the same without the pool).
	attrs := []any{"dir", ls.Dir, "messages", st.messages, "bytes", st.bytes, "files", st.files,
		"from", end, "to", newEnd}
	if st.droppedBytes > 0 || st.droppedMessages > 0 {
		s.logger.Warn("store: restored published messages from the transient pool's files; dropped the rest",
			append(attrs, "droppedMessages", st.droppedMessages, "droppedBytes", st.droppedBytes)...)
	} else {
		s.logger.Info("store: restored published messages from the transient pool's files", attrs...)
	}
	return newEnd, nil
}

// restoreFile writes the good records of l from pos (where the file's records end) up to l's published
// end into mf. full: the restored records end the file (a blank record fills it). Recovery only.
func (s *Store) restoreFile(mf *mappedFile, l *transientpool.Leftover, pos int64) (restored int64, full bool, err error) {
	st := &s.poolRestore
	published := min(l.Published, mf.size)
	// The buffer must hold this file's bytes below pos: one page of them is compared.
	if pos > 0 {
		from := max(0, pos-int64(pageSize))
		got := make([]byte, pos-from)
		if _, err := l.ReadAt(got, from); err != nil && !errors.Is(err, io.EOF) {
			return 0, false, fmt.Errorf("store: read %s: %w", l.Path, err)
		}
		if !bytes.Equal(got, mf.data[from:pos]) {
			s.logger.Warn("store: a transient pool buffer does not hold the bytes of the CommitLog file it names; not restored",
				"file", l.Path, "commitLogFile", mf.path, "position", pos)
			st.droppedBytes += published - pos
			return 0, false, nil
		}
	}
	chunk := make([]byte, max(poolRestoreChunk, s.cfg.maxRecordBytes()))
	for pos < published {
		n := min(int64(len(chunk)), published-pos)
		b := chunk[:n]
		if _, err := l.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return restored, false, fmt.Errorf("store: read %s: %w", l.Path, err)
		}
		good, msgs, blank, bad := s.checkRecords(mf, b, pos)
		if good == 0 && !blank && bad == nil { // chunks hold a largest record: this one crosses published
			bad = fmt.Errorf("a record at %d crosses the published end %d", pos, published)
		}
		if good > 0 {
			if _, err := mf.file.WriteAt(b[:good], pos); err != nil {
				return restored, false, fmt.Errorf("store: write %d restored bytes at %d of %s: %w", good, pos, mf.path, err)
			}
			pos += good
			restored += good
			st.bytes += good
			st.messages += msgs
		}
		if blank {
			return restored, true, nil
		}
		if bad != nil {
			s.logger.Warn("store: a transient pool buffer holds a bad record below its published end; dropped from there",
				"file", l.Path, "commitLogFile", mf.path, "position", pos, "publishedEnd", published, "reason", bad)
			st.droppedBytes += published - pos
			return restored, false, nil
		}
	}
	// Past the published end: puts the crash cut short, or whole ones not yet published; none was
	// acknowledged. Count the whole ones.
	if rest := min(int64(len(chunk)), mf.size-pos); rest > 0 {
		b := chunk[:rest]
		if n, _ := l.ReadAt(b, pos); n > 0 {
			_, msgs, _, _ := s.checkRecords(mf, b[:n], pos)
			st.droppedMessages += msgs
		}
	}
	return restored, false, nil
}

// checkRecords walks the records of b, which holds mf's bytes from pos, and returns the length of the
// good ones from its start and their count (blank records not counted); blank when a good blank record
// ends the file there; bad is why the walk stopped before the end of b, nil when b ends inside a record
// (the next chunk has it) or exactly after one.
func (s *Store) checkRecords(mf *mappedFile, b []byte, pos int64) (good, msgs int64, blank bool, bad error) {
	for good < int64(len(b)) {
		rest := b[good:]
		at := pos + good
		size, magic, ok := codec.PeekRecordHeader(rest)
		switch {
		case !ok:
			return good, msgs, false, nil
		case magic == codec.BlankMagicCode:
			if int64(size) != mf.size-at {
				return good, msgs, false, fmt.Errorf("blank record of %d bytes with %d left in the file", size, mf.size-at)
			}
			if int64(size) > int64(len(rest)) {
				return good, msgs, false, nil
			}
			return good + int64(size), msgs, true, nil
		case size <= 0 || int64(size) > mf.size-at:
			return good, msgs, false, fmt.Errorf("record size %d", size)
		case int64(size) > int64(len(rest)):
			return good, msgs, false, nil
		}
		rec, err := codec.DecodeRecord(rest[:size], true)
		switch {
		case err != nil:
			return good, msgs, false, err
		case rec.PhysicalOffset != mf.fromOffset+at:
			return good, msgs, false, fmt.Errorf("record says PHYSICALOFFSET %d, lies at %d", rec.PhysicalOffset, mf.fromOffset+at)
		}
		good += int64(size)
		msgs++
	}
	return good, msgs, false, nil
}

// settleLeftovers, after recovery, makes sure no later start restores the leftovers again: marked free
// when the pool now uses their directory, else the directory goes. A failure only warns: every
// restore checks what it takes.
func (s *Store) settleLeftovers() {
	ls := s.leftovers
	if ls == nil {
		return
	}
	s.leftovers = nil
	var err error
	if s.pool != nil && s.pool.Dir() == ls.Dir {
		err = ls.Release()
	}
	err = errors.Join(err, ls.Close())
	if s.pool == nil || s.pool.Dir() != ls.Dir {
		err = errors.Join(err, transientpool.RemoveDir(ls.Dir))
	}
	if err != nil {
		s.logger.Warn("store: clearing the transient pool's leftover files failed", "dir", ls.Dir, "error", err)
	}
}
