package ha

import (
	"io"
	"syscall"
)

// MasterLog is the master's CommitLog as the transfer reads it. Safe for concurrent use.
type MasterLog interface {
	// MaxPhyOffset is the end of the published (acknowledged) records.
	MaxPhyOffset() int64
	// MinPhyOffset is the start of the oldest CommitLog file still kept: a slave whose offset is below it
	// can never be served.
	MinPhyOffset() int64
	// FileSize is mappedFileSizeCommitLog: no frame crosses a multiple of it.
	FileSize() int64
	// ReadReplica returns up to max bytes of the CommitLog from offset, within one file and below
	// MaxPhyOffset, only bytes a process crash of the master cannot lose (with a transient pool: committed
	// into the file, never the pool buffer's), held until release is called. Nothing readable there: nil and a nil release. It never
	// takes the put lock.
	ReadReplica(offset int64, max int) (data []byte, release func())
	// IsRecordStart reports whether offset is where a slave may resume: a file's start, MaxPhyOffset, or
	// the first byte of a record in between. The server checks a slave's first report with it: resuming
	// anywhere else would splice the master's bytes into the middle of a record the slave holds.
	IsRecordStart(offset int64) bool
}

// FileLog is a MasterLog whose bytes the kernel can send straight from the CommitLog file (sendfile(2)).
// Optional: the server uses it for catch-up frames when the MasterLog has it.
type FileLog interface {
	// ReadReplicaFile is ReadReplica for bytes already in the CommitLog file: descriptor access to the
	// file, the position of offset in it, and how many bytes from there (at most max, within the file,
	// below MaxPhyOffset), held until release. ok is false when offset's bytes are not in the file yet
	// (with the transient pool, ReadReplica commits them first).
	ReadReplicaFile(offset int64, max int) (file syscall.RawConn, pos int64, n int, release func(), ok bool)
}

// SlaveLog is the slave's CommitLog as the HA client writes it. Safe for concurrent use with readers;
// the client is its only writer.
type SlaveLog interface {
	// MaxPhyOffset is the end of the CommitLog's records (what the slave reports).
	MaxPhyOffset() int64
	// AppendReplica reads n bytes from r into the CommitLog at offset, which is MaxPhyOffset (or, in an
	// empty store, any offset: its file is created there), publishing them for dispatch. The bytes need
	// not end on a record boundary; they must not cross a file.
	AppendReplica(offset int64, n int, r io.Reader) error
}

// TailTrimmer is a SlaveLog that can cut a partial record at its end (a master died, or a connection
// broke, in the middle of a frame). Optional: the client calls it before each connection reports its
// offset, so that a master that restarted meanwhile, which cannot know it sent those bytes, finds the
// slave at a record's start instead of refusing it as diverged.
type TailTrimmer interface {
	// TrimPartialRecord cuts the CommitLog back to the end of its last whole record and returns the end
	// before and after (equal when nothing was cut).
	TrimPartialRecord() (from, to int64, err error)
}
