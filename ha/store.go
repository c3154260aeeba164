package ha

import "io"

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
	// MaxPhyOffset: a view of the mapped file, or of the transient pool buffer for bytes not yet
	// committed, held until release is called. Nothing readable there: nil and a nil release. It never
	// takes the put lock.
	ReadReplica(offset int64, max int) (data []byte, release func())
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
