// Package store keeps messages in RocketMQ's on-disk layout: the CommitLog, one ConsumeQueue per
// topic/queue, and the IndexFile hash index, with the dispatcher (reput) that builds queues and index from
// the log, the checkpoint, crash recovery, retention and the disk guard.
//
// # Files
//
//	<storePathRootDir>/
//	  commitlog/<20-digit start offset>          mappedFileSizeCommitLog bytes each (1 GiB)
//	  consumequeue/<topic>/<queueId>/<20 digits> mappedFileSizeConsumeQueue bytes each (300,000 × 20 B)
//	  index/<yyyyMMddHHmmssSSS>                   40 B header + slots × 4 B + entries × 20 B
//	  checkpoint                                  4 KiB, see checkpoint.go
//	  abort                                       present while running; left behind by a crash
//	  lock                                        flock held while a Store is open
//
// CommitLog record: PROTOCOL.md §5.1 (package codec holds the layout). Records never span files: when a
// record and 8 more bytes do not fit in what is left of a file, an 8-byte END_OF_FILE blank record (bytes
// left, BLANK magic) is written and the record goes to the start of the next file.
//
// ConsumeQueue entry (PROTOCOL.md §7.2), big-endian, 20 bytes; logical offset = byte position / 20:
//
//	0       8      12           20
//	┌───────┬──────┬────────────┐
//	│ phys  │ size │ tags code  │   tags code: Java hashCode of TAGS (SCHEDULE_TOPIC_XXXX: delivery time)
//	└───────┴──────┴────────────┘
//
// IndexFile (PROTOCOL.md §7.4): see index.go.
//
// # Concurrency
//
// A Store is safe for concurrent use unless a method says otherwise. Puts serialize on one put lock that
// covers only offset assignment, patching the pre-encoded record and copying it into the mapped file; it
// makes no syscall and allocates nothing. One dispatcher goroutine owns every ConsumeQueue and IndexFile
// write. Readers take reference counts on the mapped files they read, so a file being deleted is unmapped
// only when its last reader releases it.
//
// Lock order (outer first; a goroutine holding one may take only those after it):
//
//	Store.lifecycle → Store.checkpointMu → lockStats.snapMu → dispatcher.mu → CommitLog put lock → commitLog.allocMu
//	  → consumeQueue.mu → MappedFileQueue.flushMu → MappedFileQueue.mu
//	consumeQueueTable.mu and indexService.mu are leaves: nothing is taken while holding them.
//
// The dispatcher never takes the put lock; the pull path takes only the read side of
// consumeQueueTable.mu.
package store

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/round"
)

// Sentinel errors. Check with errors.Is.
var (
	// ErrConfig: a Config field is invalid; the message names it.
	ErrConfig = errors.New("store: invalid config")
	// ErrMessageIllegal: the message breaks a limit (body size, topic, record size) or its properties are
	// malformed (then it also wraps a *codec.PropertiesError); status MESSAGE_ILLEGAL.
	ErrMessageIllegal = errors.New("store: message illegal")
	// ErrPropertiesSizeExceeded: encoded properties longer than 32767 bytes; status PROPERTIES_SIZE_EXCEEDED.
	ErrPropertiesSizeExceeded = errors.New("store: properties size exceeded")
	// ErrServiceNotAvailable: the store is shut down, not started, or not writeable; SERVICE_NOT_AVAILABLE.
	ErrServiceNotAvailable = errors.New("store: service not available")
	// ErrDiskFull: the disk is above diskSpaceWarningLevelRatio or a file could not be allocated (ENOSPC).
	// Puts are refused until space returns; the store notices by itself. Status SERVICE_NOT_AVAILABLE.
	ErrDiskFull = errors.New("store: disk full")
	// ErrSlave: a put on a slave's store (RocketMQ: "messages are put to the slave"); its CommitLog
	// grows only by replication.
	ErrSlave = fmt.Errorf("%w: the broker is a slave: messages are put to the master", ErrServiceNotAvailable)
	// ErrCreateMappedFile: the next CommitLog file could not be created; status CREATE_MAPPED_FILE_FAILED.
	ErrCreateMappedFile = errors.New("store: create mapped file failed")
	// ErrOSPageCacheBusy: a put has held the put lock longer than osPageCacheBusyTimeOutMills.
	ErrOSPageCacheBusy = errors.New("store: [PC_SYNCHRONIZED]broker busy")
	// ErrFlushFailed: making bytes durable failed with an I/O error. The store turns read-only: after a
	// failed fsync the kernel may have dropped the dirty pages, so later writes cannot be trusted durable.
	ErrFlushFailed = errors.New("store: flush failed")
	// ErrCorruption: a record or entry in the middle of a file is damaged; the message names file and offset.
	// A damaged tail is not corruption: recovery truncates it.
	ErrCorruption = errors.New("store: corruption")
	// ErrStoreLocked: another process holds the store's lock file.
	ErrStoreLocked = errors.New("store: store directory locked by another process")
	// ErrNotFound: no record at the requested physical offset (deleted or beyond the end).
	ErrNotFound = errors.New("store: not found")
	// ErrClosed: the store is shut down.
	ErrClosed = errors.New("store: closed")
	// ErrFlushTimeout: under SYNC_FLUSH, the bytes were not durable within syncFlushTimeout (WaitDurable;
	// the message is stored: FLUSH_DISK_TIMEOUT). It wraps flush.ErrFlushTimeout.
	ErrFlushTimeout = fmt.Errorf("store: flush disk timeout: %w", flush.ErrFlushTimeout)
	// ErrFlushQueueFull: under SYNC_FLUSH, the group commit already holds its maximum of waiters
	// (WaitDurable; see ReserveWait). It wraps flush.ErrQueueFull.
	ErrFlushQueueFull = fmt.Errorf("store: %w", flush.ErrQueueFull)
)

// PutMessageStatus is RocketMQ's PutMessageStatus.
type PutMessageStatus uint8

// Put statuses, in RocketMQ's order.
const (
	PutOK PutMessageStatus = iota
	FlushDiskTimeout
	FlushSlaveTimeout
	SlaveNotAvailable
	ServiceNotAvailable
	CreateMappedFileFailed
	MessageIllegal
	PropertiesSizeExceeded
	OSPageCacheBusy
	UnknownError
)

var putStatusNames = [...]string{
	PutOK: "PUT_OK", FlushDiskTimeout: "FLUSH_DISK_TIMEOUT", FlushSlaveTimeout: "FLUSH_SLAVE_TIMEOUT",
	SlaveNotAvailable: "SLAVE_NOT_AVAILABLE", ServiceNotAvailable: "SERVICE_NOT_AVAILABLE",
	CreateMappedFileFailed: "CREATE_MAPEDFILE_FAILED", MessageIllegal: "MESSAGE_ILLEGAL",
	PropertiesSizeExceeded: "PROPERTIES_SIZE_EXCEEDED", OSPageCacheBusy: "OS_PAGECACHE_BUSY",
	UnknownError: "UNKNOWN_ERROR",
}

// String returns RocketMQ's spelling (CREATE_MAPEDFILE_FAILED keeps its historical typo).
func (s PutMessageStatus) String() string {
	if int(s) < len(putStatusNames) {
		return putStatusNames[s]
	}
	return "PutMessageStatus(" + strconv.Itoa(int(s)) + ")"
}

// GetMessageStatus is RocketMQ's GetMessageStatus; PROTOCOL.md §9 maps each to a pull response.
type GetMessageStatus uint8

// Get statuses, in RocketMQ's order.
const (
	Found GetMessageStatus = iota
	NoMatchedMessage
	MessageWasRemoving
	OffsetFoundNull
	OffsetOverflowBadly
	OffsetOverflowOne
	OffsetTooSmall
	NoMatchedLogicQueue
	NoMessageInQueue
)

var getStatusNames = [...]string{
	Found: "FOUND", NoMatchedMessage: "NO_MATCHED_MESSAGE", MessageWasRemoving: "MESSAGE_WAS_REMOVING",
	OffsetFoundNull: "OFFSET_FOUND_NULL", OffsetOverflowBadly: "OFFSET_OVERFLOW_BADLY",
	OffsetOverflowOne: "OFFSET_OVERFLOW_ONE", OffsetTooSmall: "OFFSET_TOO_SMALL",
	NoMatchedLogicQueue: "NO_MATCHED_LOGIC_QUEUE", NoMessageInQueue: "NO_MESSAGE_IN_QUEUE",
}

// String returns RocketMQ's spelling.
func (s GetMessageStatus) String() string {
	if int(s) < len(getStatusNames) {
		return getStatusNames[s]
	}
	return "GetMessageStatus(" + strconv.Itoa(int(s)) + ")"
}

// RunningFlags is RocketMQ's RunningFlags bit set. Read it with Store.RunningFlags.
type RunningFlags uint32

// Running flag bits.
const (
	// FlagNotReadable: reads refused (never set by the store itself today).
	FlagNotReadable RunningFlags = 1 << iota
	// FlagNotWriteable: puts refused (shutdown, or a failed flush: see ErrFlushFailed).
	FlagNotWriteable
	// FlagWriteLogicsQueueError: a ConsumeQueue write failed; the dispatcher stopped.
	FlagWriteLogicsQueueError
	// FlagWriteIndexFileError: an IndexFile write failed; indexing stopped.
	FlagWriteIndexFileError
	// FlagDiskFull: disk above diskSpaceWarningLevelRatio or ENOSPC seen; clears itself when space returns.
	FlagDiskFull
)

// String lists the set bits, e.g. "DISK_FULL|NOT_WRITEABLE", or "OK".
func (f RunningFlags) String() string {
	if f == 0 {
		return "OK"
	}
	names := []string{"NOT_READABLE", "NOT_WRITEABLE", "WRITE_LOGICS_QUEUE_ERROR", "WRITE_INDEX_FILE_ERROR", "DISK_FULL"}
	var parts []string
	for i, n := range names {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	return strings.Join(parts, "|")
}

// ConsumeQueueEntry is one ConsumeQueue entry: where its record is in the CommitLog, how long it
// is, and its tag code.
type ConsumeQueueEntry struct {
	PhyOffset int64
	Size      int32
	TagsCode  int64
}

// MessageFilter decides from a ConsumeQueue entry's tag code whether a message matches a subscription.
// nil matches everything. Implementations must be safe for concurrent use and must not allocate.
type MessageFilter interface {
	IsMatchedByConsumeQueue(tagsCode int64) bool
}

// CommitLogFilter is a MessageFilter that also decides on the stored record itself, after
// its ConsumeQueue entry matched (RocketMQ's MessageFilter.isMatchedByCommitLog: SQL92
// subscriptions read the message's properties). record is a view of the stored bytes,
// valid only during the call. GetMessage asks a filter that implements it for every
// record it would return; a record that does not match is skipped like a tag mismatch.
// Implementations must be safe for concurrent use and must not allocate.
type CommitLogFilter interface {
	MessageFilter
	IsMatchedByCommitLog(record []byte) bool
}

// ConsumerOffset is one consumer group's committed offset in one queue: the next logical offset it will
// consume.
type ConsumerOffset struct {
	Group   string
	Topic   string
	QueueID int32
	Offset  int64
}

// ConsumerOffsetsFunc lists the committed consumer offsets. The store calls it (from its retention
// goroutine) only when a forced deletion is about to remove unexpired CommitLog files, to log which
// groups lose messages they have not consumed. It must be safe for concurrent use.
type ConsumerOffsetsFunc func() []ConsumerOffset

// ArrivingListener is called by the dispatcher after a ConsumeQueue entry is appended (long polling).
// properties is a view into mapped memory valid only during the call. It runs on the dispatcher goroutine:
// it must not block and must not call back into Put/Shutdown.
type ArrivingListener func(topic string, queueID int32, logicOffset int64, tagsCode int64, storeTimestamp int64, properties []byte)

// PutResult describes a put's outcome. Status reports every outcome, as RocketMQ's PutMessageResult
// does, and callers decide on it alone: PutOK (stored), or why nothing was stored. The error returned
// beside it is nil exactly when Status is PutOK; otherwise it explains the status (for logs and remarks)
// and wraps its sentinel:
//
//	MessageIllegal           ErrMessageIllegal (with a *codec.PropertiesError for malformed properties)
//	PropertiesSizeExceeded   ErrPropertiesSizeExceeded
//	ServiceNotAvailable      ErrServiceNotAvailable (ErrSlave, ErrFlushFailed) or ErrDiskFull
//	CreateMappedFileFailed   ErrCreateMappedFile (with ErrDiskFull when the disk is full)
//	OSPageCacheBusy          ErrOSPageCacheBusy
//
// A put never reports FlushDiskTimeout, FlushSlaveTimeout or SlaveNotAvailable: those are outcomes of
// the waits after a put (WaitDurable: ErrFlushTimeout; the broker's SYNC_MASTER wait).
type PutResult struct {
	Status PutMessageStatus
	// WroteOffset is the CommitLog offset of the (first) record: the offsetMsgId's offset.
	WroteOffset int64
	// WroteBytes is the bytes written (all records of a batch).
	WroteBytes int32
	// QueueOffset is the (first) logical offset in the topic/queue; 0 for prepared/rollback records.
	QueueOffset int64
	// MsgNum is the number of records written.
	MsgNum int32
	// StoreTimestamp is the store time (ms) of every record written.
	StoreTimestamp int64
}

// EndOffset is the CommitLog offset just past the last written record: what WaitDurable waits for.
func (r PutResult) EndOffset() int64 { return r.WroteOffset + int64(r.WroteBytes) }

// BatchPut is a batch of messages for one topic and queue (SEND_BATCH_MESSAGE). Every message must have
// the batch's Topic and QueueID; they get consecutive queue offsets and one store timestamp.
type BatchPut struct {
	Messages []codec.Message
	// PhysicalOffsets is filled by PutMessages with each record's CommitLog offset, for the batch's
	// comma-joined offsetMsgIds. Its capacity is reused: no allocation when it holds len(Messages).
	PhysicalOffsets []int64
}

// GetMessageResult is a pull's answer. Buffers are slices of mapped CommitLog memory, valid until Release.
// Results are pooled: call Release exactly once, and do not touch the result after it.
type GetMessageResult struct {
	Status          GetMessageStatus
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Buffers holds one stored record per message, in queue order.
	Buffers [][]byte
	// MessageCount is len(Buffers); BufferTotalSize the sum of their lengths.
	MessageCount    int
	BufferTotalSize int
	// SuggestPullingFromSlave: the data read lies more than accessMessageInMemoryMaxRatio of RAM behind
	// the CommitLog end.
	SuggestPullingFromSlave bool

	refs       []*mappedFile // the CommitLog files the Buffers lie in
	bufferRefs []*mappedFile // those whose Buffers lie in their transient pool buffer (not committed yet)
	store      *Store
}

// QueryMessageResult is QUERY_MESSAGE's answer: records whose key matched, newest first. Buffers are
// slices of mapped memory valid until Release; call Release exactly once.
type QueryMessageResult struct {
	Buffers                  [][]byte
	BufferTotalSize          int
	IndexLastUpdateTimestamp int64
	IndexLastUpdatePhyOffset int64

	releases []func() // each record's references (its file, and its pool buffer when not committed)
}

// Release returns the result's file references.
func (r *QueryMessageResult) Release() {
	for _, release := range r.releases {
		release()
	}
	r.releases = nil
	r.Buffers = nil
}

// Stats are counters for GET_BROKER_RUNTIME_INFO and metrics. Safe to read at any time.
type Stats struct {
	PutMessageTimesTotal     int64
	PutMessageSizeTotal      int64
	PutMessageFailedTimes    int64
	GetMessageTimesTotal     int64
	GetMessageTransferredMsg int64
	DispatchBehindBytes      int64
	CommitLogMinOffset       int64
	CommitLogMaxOffset       int64
	CommitLogFlushedOffset   int64
	RunningFlags             RunningFlags
	PutLockMax               time.Duration

	// GetMessageFoundTotal counts the GetMessage calls that found messages (RocketMQ's
	// getMessageTimesTotalFound; the others of GetMessageTimesTotal are its misses).
	GetMessageFoundTotal int64
	// GetMessageTimeMax is the longest GetMessage call since start (getMessageEntireTimeMax).
	GetMessageTimeMax time.Duration
	// CommitLogCommittedOffset is where the transient pool's bytes reached the files; the end of
	// the CommitLog without the pool (remainHowManyDataToCommit, remainHowManyDataToFlush).
	CommitLogCommittedOffset int64
	// TransientPoolAvailable is how many transient pool buffers are free, -1 without the pool
	// (remainTransientStoreBufferNumbs).
	TransientPoolAvailable int
}

// PutLatencyCounts counts the puts since start by whole-put time, as the histogram
// ringmq_store_put_latency_seconds does: [i] took at most PutLatencyBounds[i], the last slot
// counts the slower ones (RocketMQ's putLatency99, putMessageDistributeTime).
type PutLatencyCounts [PutLatencyBuckets + 1]uint64

// PutLatencyBuckets is how many bounded buckets PutLatencyCounts has.
const PutLatencyBuckets = 25

// PutLatencyBounds are the upper bounds of PutLatencyCounts' buckets: 100 ns doubling to ~1.7 s.
var PutLatencyBounds = func() [PutLatencyBuckets]time.Duration {
	var b [PutLatencyBuckets]time.Duration
	for i := range b {
		b[i] = 100 * time.Nanosecond << i
	}
	return b
}()

// MessageStore is what the broker needs from a store: every capability it uses, none reached by type
// assertion. *Store implements it over files; storetest.MemStore is an in-memory fake for broker unit
// tests. Every method is safe for concurrent use.
type MessageStore interface {
	// Start runs the store's services; puts are refused before.
	Start() error
	// Shutdown stops the store once (a second call returns ErrClosed).
	Shutdown() error
	// PutMessage stores one message and assigns its queue offset, physical offset and store time. The
	// outcome is PutResult.Status; the error is nil exactly when it is PutOK (see PutResult).
	PutMessage(m *codec.Message) (PutResult, error)
	// PutMessages stores a batch for one topic/queue with consecutive queue offsets; outcome as
	// PutMessage's.
	PutMessages(batch *BatchPut) (PutResult, error)
	// GroupsPuts reports whether storing several messages with AddToGroup and one PutGroup saves work
	// over a PutMessage each (the file store: one lock, copy and publication for all).
	GroupsPuts() bool
	// AddToGroup checks m as PutMessage does and adds it to g, or returns PutMessage's refusal. m is not
	// retained.
	AddToGroup(g *PutGroup, m *codec.Message) (PutMessageStatus, error)
	// PutGroup stores every message added to g, in order, each as PutMessage would (g.Results[i]),
	// and empties g.
	PutGroup(g *PutGroup) error
	// WaitDurable calls done when every byte below endOffset is durable (SYNC_FLUSH), at once otherwise;
	// ErrFlushTimeout, ErrFlushQueueFull or the flush error when they are not.
	WaitDurable(endOffset int64, done func(error))
	// ReserveWait holds a place in the SYNC_FLUSH waiters' queue for a WaitDurableReserved (or
	// ReleaseWait) to come, or reports false when it is full (so that a send can be refused before it
	// is stored); true under ASYNC_FLUSH.
	ReserveWait() bool
	// WaitDurableReserved is WaitDurable into a place ReserveWait held. done takes part in the round of
	// the group commit's batch it completes with (flush.RoundWaiter), or gets none (nil).
	WaitDurableReserved(endOffset int64, done func(err error, rd *round.Round))
	// ReleaseWait gives back a place ReserveWait held.
	ReleaseWait()
	// GetMessage reads a queue for a pull (PROTOCOL.md §9 statuses); Release the result.
	GetMessage(group, topic string, queueID int32, offset int64, maxMsgNums, maxBytes int, filter MessageFilter) (*GetMessageResult, error)
	// LookMessageByOffset returns the record starting at a CommitLog offset (VIEW_MESSAGE_BY_ID).
	LookMessageByOffset(phyOffset int64) (rec []byte, release func(), err error)
	// QueryMessage finds records by KEYS word or UNIQ_KEY (QUERY_MESSAGE); Release the result.
	QueryMessage(topic, key string, maxNum int, begin, end int64) (*QueryMessageResult, error)
	// GetMaxOffsetInQueue is the next logical offset of a queue.
	GetMaxOffsetInQueue(topic string, queueID int32) int64
	// GetMinOffsetInQueue is the first live logical offset of a queue.
	GetMinOffsetInQueue(topic string, queueID int32) int64
	// GetOffsetInQueueByTime finds a logical offset by store time (SEARCH_OFFSET_BY_TIMESTAMP).
	GetOffsetInQueueByTime(topic string, queueID int32, timestamp int64, upper bool) int64
	// GetEarliestMessageTime is the store time of a queue's first live message.
	GetEarliestMessageTime(topic string, queueID int32) (int64, error)
	// GetCommitLogOffsetInQueue is the CommitLog offset of the message at a logical offset.
	GetCommitLogOffsetInQueue(topic string, queueID int32, consumeQueueOffset int64) int64
	// MaxPhyOffset is the end of the CommitLog.
	MaxPhyOffset() int64
	// MinPhyOffset is the start of the oldest CommitLog file.
	MinPhyOffset() int64
	// DispatchBehindBytes is how far ConsumeQueues trail the CommitLog.
	DispatchBehindBytes() int64
	// SetArrivingListener sets the long-polling hook called for every new ConsumeQueue entry.
	SetArrivingListener(l ArrivingListener)
	// SetDelayLevelTable sets the delay of each level for SCHEDULE_TOPIC_XXXX delivery times.
	SetDelayLevelTable(delays []time.Duration)
	// SetConsumerOffsets gives retention the consumer groups' progress (cleanFileForciblyEnable logs it).
	SetConsumerOffsets(fn ConsumerOffsetsFunc)
	// IsOSPageCacheBusy reports a put holding the put lock past osPageCacheBusyTimeOutMills.
	IsOSPageCacheBusy() bool
	// BeginTimeInLock is how long the current put has held the put lock (0 when free).
	BeginTimeInLock() time.Duration
	// DeleteTopics removes topics' ConsumeQueues and queue offsets.
	DeleteTopics(topics ...string) error
	// QueueTopics lists the topics that have ConsumeQueues, sorted.
	QueueTopics() []string
	// DeleteExpiredFilesManually makes the next retention passes delete the CommitLog files older than
	// fileReservedTime whatever the hour (DELETE_EXPIRED_COMMITLOG).
	DeleteExpiredFilesManually()
	// CleanExpiredConsumeQueues deletes the ConsumeQueues whose last record is before the CommitLog's
	// start (SCHEDULE_TOPIC_XXXX's aside) and returns how many went.
	CleanExpiredConsumeQueues() (int, error)
	// ConsumeQueueEntry reads the ConsumeQueue entry at a queue's logical offset; false when the
	// queue has none there (QUERY_CONSUME_QUEUE).
	ConsumeQueueEntry(topic string, queueID int32, offset int64) (ConsumeQueueEntry, bool)
	// RunningFlags reports DISK_FULL, NOT_WRITEABLE and the other RunningFlags bits.
	RunningFlags() RunningFlags
	// Stats returns counters for GET_BROKER_RUNTIME_INFO.
	Stats() Stats
	// PutLatency counts the puts since start by whole-put time (GET_BROKER_RUNTIME_INFO).
	PutLatency() PutLatencyCounts

	// Replication (package ha, which knows these methods as ha.MasterLog and ha.SlaveLog): a master's
	// HA server reads the CommitLog, a slave's HA client appends the master's bytes at the same offsets.

	// FileSize is mappedFileSizeCommitLog: replication frames never cross a multiple of it.
	FileSize() int64
	// ReadReplica returns up to max published CommitLog bytes from offset, within one file, held until
	// release is called; nothing there yet: nil and a nil release. It never takes the put lock.
	ReadReplica(offset int64, max int) (data []byte, release func())
	// IsRecordStart reports whether a slave may resume at offset: a file's start, the published end, or
	// the first byte of a record. A master checks each slave's first report with it.
	IsRecordStart(offset int64) bool
	// AppendReplica reads n bytes from r into a slave's CommitLog at offset, its end, and publishes them
	// for dispatch; on a master's store it fails (ErrServiceNotAvailable). One caller at a time.
	AppendReplica(offset int64, n int, r io.Reader) error
	// SetPublishListener sets fn to run after every put has published its records (the HA server's
	// wake-up); nil removes it.
	SetPublishListener(fn func())
}
