package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ringmq/ringmq/codec"
)

// commitLog is the append-only message log: RocketMQ's CommitLog.
//
// A put encodes its record (CRC included) into a pooled buffer before taking the put lock. Under the lock
// it only reads the clock and reserves the file position and queue offsets; after it, it patches those
// into the record, copies it into the current file (or its transient buffer) and publishes the new
// positions in reservation order. When the record and an 8-byte blank do not fit, the roll (under the
// lock) waits for the puts still copying, ends the file with the blank, and makes the preallocated standby
// file current: a pointer swap plus publishing the new file list. The allocator goroutine then prepares
// the next standby (create, fallocate, mmap, optionally warm) outside the lock. If it is late, the put
// creates the file itself under the lock (counted in Stats as a synchronous roll).
type commitLog struct {
	cfg          *Config
	mfq          *mappedFileQueue
	logger       *slog.Logger
	clock        func() time.Time // nil = the monotonic start time's wall clock
	pool         bufferPool       // transient pool, nil when appending into the mapping
	writeThrough bool             // appends go into the file with pwrite, not the mapping (newCommitLog)

	putLock sync.Locker
	// putSeconds is the Prometheus view of whole-put latency (registered by Store.registerMetrics;
	// observed outside the lock). Put-lock time is stats' (lockTimeCollector).
	putSeconds prometheus.Histogram
	cur        *mappedFile // guarded by putLock: the file appended to; nil before the first put
	closed     bool        // guarded by putLock: set by Shutdown; later puts are refused
	stats      *lockStats

	// maxOffset is the end of appended records (published after the bytes, in order), for the dispatcher
	// in mmap mode and for WaitDurable targets. reservedEnd is the end of the space reserved by puts,
	// written under putLock; between the two are puts still copying. They sit on cache lines of their
	// own: the lock holder writes one while the last copier writes the other.
	_           [64]byte
	maxOffset   atomic.Int64
	_           [56]byte
	reservedEnd atomic.Int64
	_           [56]byte
	// pubSeq is the sequence number of the oldest reservation not yet published; nextSeq (guarded by
	// putLock) the next one to hand out. pubRing holds the reservations in between.
	pubSeq  atomic.Int64
	_       [56]byte
	nextSeq int64
	pubRing *[pubRingSize]pubSlot
	// pubWake is closed (and replaced) by a publication while pubParked puts wait in awaitPublished.
	pubWake    atomic.Pointer[chan struct{}]
	pubParked  atomic.Int32
	beforeCopy func(seq int64) // tests: runs between a put's reservation and its copy
	// stallMark is the stall clock's last sighting: maxOffset as a checker last saw it with puts in
	// flight, and when (ns since stats.base). Checkers keep it (stalled), so publishing costs nothing.
	stallOffset atomic.Int64
	stallSince  atomic.Int64

	// The allocator keeps standbyFiles files prepared after the last one in mfq (RocketMQ's
	// AllocateMappedFileService makes the next and the one after it). allocMu guards the queue and the
	// creation marker and is never held across I/O: a roll takes the head of the queue, or — the
	// allocator late by two files — waits for the creation in progress, or creates the file itself.
	// creating is the offset of the file being created (by the allocator or a roll), -1 when none;
	// createDone is closed when that creation ends. Lock order: putLock → allocMu.
	allocMu    sync.Mutex
	standbys   []*mappedFile
	creating   int64
	createDone chan struct{}
	allocWake  chan struct{}

	// Prefault window (mapping mode): the prefaulter goroutine keeps the pages ahead of the write
	// position faulted in writable (MADV_POPULATE_WRITE), so a put's copy does not stop for the folio
	// allocation and zeroing a fault on a fresh file page costs (~125 µs per 2 MiB folio here). prefaultTo
	// is the CommitLog offset up to which pages are populated; a put that comes within half a window of
	// it wakes the prefaulter. A put that outruns it faults the pages in during its copy, which runs
	// outside the put lock. Near a file's end the window reaches into the next, prepared file (the
	// allocator populates only its first chunk), so the populating goes on at the writer's pace across a
	// roll instead of in a burst next to it. The prefaulter is not the allocator: creating the next file
	// (fallocate, fsyncs) takes milliseconds, right after a roll, when the window has to move most.
	prefaultTo     atomic.Int64
	prefaultWindow int64
	prefaultOff    atomic.Bool // the kernel cannot populate: stop trying
	prefaultWake   chan struct{}
	onAppend       func() // wakes the dispatcher; called outside the lock
	// onPublish, when set, runs after every put has published its records (the HA server's Notify).
	onPublish atomic.Pointer[func()]

	syncRolls atomic.Int64 // rolls that had to create the file under the lock
	// Pre-writing (prewrite.go): bytes of prepared files written with zeros and synced, and files that
	// became current before they were done. prewriteZeros is the allocator's source of zeros.
	prewrittenBytes atomic.Int64
	prewriteLate    atomic.Int64
	prewriteZeros   []byte
	poolFallbacks   atomic.Int64 // files that got no transient pool buffer and append into the mapping
	putTimes        atomic.Int64
	putBytes        atomic.Int64
	putFailTimes    atomic.Int64
	allocFailed     atomic.Bool // the last attempt to create a file failed (for the disk guard)
	// onAllocResult learns the outcome of every allocator attempt (the disk guard); allocator goroutine.
	onAllocResult func(err error)
	// pin and unpin lock and unlock a warmed file's pages (pinMemory, unpinMemory; tests swap them).
	pin, unpin func([]byte) error
	pinWarned  atomic.Bool // the one mlock failure warning was logged

	replicaBuf []byte // a slave's AppendReplica: large frames pass through it to the file (replica.go)

	smallBuffers sync.Pool // *encodeBuffer of smallEncodeBytes
	largeBuffers sync.Pool // *encodeBuffer of cfg.maxRecordBytes()
}

const smallEncodeBytes = 64 << 10

// prefaultWindowMax is how far ahead of the writer pages are kept populated (a quarter of the file when
// files are smaller); prefaultChunk is the unit populated at a time, one large folio on ext4.
const (
	prefaultWindowMax = 32 << 20
	prefaultChunk     = 2 << 20
)

type encodeBuffer struct{ b []byte }

// putLatencyBuckets: 100 ns doubling to ~1.7 s, so both the ~200 ns lock time of a
// healthy put and RocketMQ's 500 ms warning fall inside the range.
var putLatencyBuckets = prometheus.ExponentialBuckets(100e-9, 2, PutLatencyBuckets) // PutLatencyBounds in seconds

func newCommitLog(cfg *Config, fsys FS, logger *slog.Logger, clock func() time.Time, pool bufferPool) *commitLog {
	cl := &commitLog{
		cfg:    cfg,
		mfq:    newMappedFileQueue(fsys, cfg.commitLogDir(), cfg.MappedFileSizeCommitLog, logger),
		logger: logger,
		clock:  clock,
		pool:   pool,
		stats:  newLockStats(),
		putSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ringmq_store_put_latency_seconds",
			Help:    "Time of a whole put (checks, encode, lock, copy); excludes waiting for durability.",
			Buckets: putLatencyBuckets,
		}),
		pubRing:      new([pubRingSize]pubSlot),
		allocWake:    make(chan struct{}, 1),
		prefaultWake: make(chan struct{}, 1),
		onAppend:     func() {},
	}
	wake := make(chan struct{})
	cl.pubWake.Store(&wake)
	// SYNC_FLUSH without the pool writes records with pwrite, not through the mapping: every sync
	// cleans and write-protects the file's tail page, so the next copy into the mapping took a write
	// fault (ext4's page_mkwrite) per sync round, and those faults cost more than the syscall
	// (4 × 16, interleaved rounds on a loaded machine: 13–16k against 9–11k msgs/s).
	cl.writeThrough = cfg.FlushDiskType == SyncFlush && pool == nil
	// Puts append through the mapping unless they write through or go to the slave's pwrite
	// (replica.go); files with pool buffers are synced with fdatasync, which flushPages leaves alone.
	cl.mfq.unpopulateFlushed.Store(!cl.writeThrough && !cfg.Slave)
	cl.mfq.adviseHuge = !cl.writeThrough && !cfg.Slave
	cl.onAllocResult = func(error) {}
	cl.pin, cl.unpin = pinMemory, unpinMemory
	cl.stallOffset.Store(-1) // no sighting yet
	cl.creating = -1
	if cfg.UseReentrantLockWhenPutMessage {
		cl.putLock = &sync.Mutex{}
	} else {
		cl.putLock = &spinLock{}
	}
	cl.prefaultWindow = min(prefaultWindowMax, cfg.MappedFileSizeCommitLog/4) &^ int64(pageSize-1)
	large := cfg.maxRecordBytes()
	cl.smallBuffers.New = func() any { return &encodeBuffer{b: make([]byte, smallEncodeBytes)} }
	cl.largeBuffers.New = func() any { return &encodeBuffer{b: make([]byte, large)} }
	return cl
}

func (cl *commitLog) getBuffer(size int) (*encodeBuffer, *sync.Pool) {
	p := &cl.largeBuffers
	if size <= smallEncodeBytes {
		p = &cl.smallBuffers
	}
	return p.Get().(*encodeBuffer), p
}

// readableEnd is the end of what the dispatcher and readers may read: the published records, in every
// append mode. With the transient pool the part not yet committed is read from the pool buffer
// (readRecord, mappedFile.publishedView), so a consumer sees a message as soon as it is acknowledged,
// not a commit interval later. Replication reads committed bytes only (replica.go).
func (cl *commitLog) readableEnd() int64 { return cl.maxOffset.Load() }

// put appends one or more encoded records (consecutive in recs, n of them). They get consecutive queue
// offsets from counter (unless it is nil) and one store timestamp. offsets, when not nil, receives each
// record's physical offset. putRecords with each instead of counter (a group, PutGroup): record i takes
// one queue offset from each[i] (none when nil), written to qoffs[i].
//
// The put lock covers only the reservation: the clock, the file position and the queue offsets. The
// records are patched and copied into the file after it is released, and published (mf.wrote, maxOffset)
// in reservation order. A writer descheduled in the middle of its copy — the most common long stall on
// a shared two-core machine — then delays only the publication of the puts behind it, not their
// reservations and copies, and the lock is held for tens of nanoseconds instead of the length of a copy.
func (cl *commitLog) put(recs []byte, n int, counter *atomic.Int64, offsets []int64) (PutResult, error) {
	return cl.putRecords(recs, n, counter, nil, nil, offsets)
}

func (cl *commitLog) putRecords(recs []byte, n int, counter *atomic.Int64, each []*atomic.Int64, qoffs []int64,
	offsets []int64) (PutResult, error) {
	total := int64(len(recs))
	cl.wakePrefaulter(total)
	cl.putLock.Lock()
	if cl.closed {
		cl.putLock.Unlock()
		cl.putFailTimes.Add(1)
		return PutResult{Status: ServiceNotAvailable}, ErrServiceNotAvailable
	}
	start := time.Now()
	cl.stats.enter(start)
	storeTs := start.UnixMilli()
	if cl.clock != nil {
		storeTs = cl.clock().UnixMilli()
	}
	mf, pos, qoff, seq, err := cl.reserveLocked(total, n, counter)
	if err == nil {
		for i, c := range each { // a group: one queue offset per record, from its own queue
			qoffs[i] = 0
			if c != nil {
				qoffs[i] = c.Load()
				c.Store(qoffs[i] + 1)
			}
		}
	}
	elapsed := cl.stats.exit(start)
	cl.putLock.Unlock()

	if err != nil {
		cl.putFailTimes.Add(1)
		return PutResult{Status: CreateMappedFileFailed}, err
	}
	if cl.beforeCopy != nil {
		cl.beforeCopy(seq)
	}
	phys := mf.fromOffset + pos
	off := 0
	for i := 0; i < n; i++ {
		size := int(binary.BigEndian.Uint32(recs[off:]))
		q := qoff
		if each != nil {
			q = qoffs[i]
		} else if counter != nil {
			q += int64(i)
		}
		codec.PatchRecord(recs[off:off+size], q, phys+int64(off), storeTs)
		if offsets != nil {
			offsets[i] = phys + int64(off)
		}
		off += size
	}
	cl.copyRecords(mf, pos, recs)
	cl.publish(seq, mf, pos+total, storeTs)

	cl.putTimes.Add(int64(n))
	cl.putBytes.Add(total)
	cl.onAppend()
	if fn := cl.onPublish.Load(); fn != nil {
		(*fn)()
	}
	if elapsed > cl.cfg.PutLockWarnThreshold {
		// RocketMQ's "[NOTIFYME]putMessage in lock cost time(ms)=..." with the body size.
		cl.logger.Warn("store: [NOTIFYME]putMessage in lock cost time", "elapsed", elapsed,
			"bodyLength", total, "records", n)
	}
	return PutResult{Status: PutOK, WroteOffset: phys, WroteBytes: int32(total), QueueOffset: qoff,
		MsgNum: int32(n), StoreTimestamp: storeTs}, nil
}

// reserveLocked is the critical section: it takes total bytes at the end of the current file (rolling
// first when they and an 8-byte blank do not fit), n queue offsets from counter, and the next publication
// sequence number. Caller holds putLock. No allocation, no syscall (unless the allocator is late and the
// next file must be created here).
func (cl *commitLog) reserveLocked(total int64, n int, counter *atomic.Int64) (mf *mappedFile, pos, qoff, seq int64, err error) {
	mf = cl.cur
	end := cl.reservedEnd.Load()
	if mf == nil || mf.fromOffset+mf.size-end < total+codec.BlankRecordBytes {
		if mf, err = cl.rollLocked(); err != nil {
			return nil, 0, 0, 0, err
		}
		end = mf.fromOffset
	}
	seq = cl.nextSeq
	if seq-cl.pubSeq.Load() >= pubRingSize { // a ring's worth of puts in flight: wait for a slot
		waitUntil(func() bool { return seq-cl.pubSeq.Load() < pubRingSize })
	}
	cl.nextSeq++
	cl.reservedEnd.Store(end + total)
	if counter != nil {
		qoff = counter.Load()
		counter.Store(qoff + int64(n))
	}
	return mf, end - mf.fromOffset, qoff, seq, nil
}

// pubSlot is one put between its reservation and its publication.
type pubSlot struct {
	done atomic.Int64 // seq+1 once the put has copied its records
	mf   *mappedFile  // written before done; read after it
	end  int64        // the reservation's end in mf
	ts   int64        // its store timestamp
	_    [32]byte     // a cache line each: neighbours are written by different puts
}

// pubRingSize bounds the puts between reservation and publication (far more than there are cores).
const pubRingSize = 1024

// publish marks reservation seq (ending at end in mf) copied, publishes every copied reservation in
// order from the oldest unpublished one, and returns once its own is published. Whichever put finds the
// oldest reservation copied publishes it and the copied ones behind it, so a put that finishes its copy
// early does not wait for the puts before it to be scheduled again, only for their copies.
//
// A put is answered only once published: then every record before it is whole in the file (or the pool
// buffer), so a process crash right after the answer cannot cut the log in front of it. The wait is
// awaitPublished's: a short spin, a few yields, then parked until a publication wakes it. Yielding until
// the earlier put ran again cost more than the copy on two cores (37 yields per message under
// SYNC_FLUSH at 4 × 16).
func (cl *commitLog) publish(seq int64, mf *mappedFile, end, storeTs int64) {
	sl := &cl.pubRing[seq%pubRingSize]
	sl.mf, sl.end, sl.ts = mf, end, storeTs
	sl.done.Store(seq + 1)
	cl.awaitPublished(mf.fromOffset + end)
}

// copyRecords copies a reservation's records to pos in mf: into the pool buffer, the mapping, or (with
// writeThrough) the file. A pwrite that fails (it should not: the file is allocated) falls back to the
// mapping, so the put still completes and the next sync reports the error.
func (cl *commitLog) copyRecords(mf *mappedFile, pos int64, recs []byte) {
	if cl.writeThrough && !mf.transient {
		if _, err := mf.file.WriteAt(recs, pos); err == nil {
			return
		}
	}
	copy(mf.appendTarget()[pos:], recs)
}

// publishCopied advances the published positions (mf.wrote, mf.storeTimestamp, maxOffset) over the
// copied reservations at the head of the ring. Several puts may run it at once: each claims one
// reservation by moving pubSeq past it (after reading its slot, which is reusable from then on), and the
// positions only move forward, so every value a reader sees ends at a complete record.
func (cl *commitLog) publishCopied() {
	for {
		p := cl.pubSeq.Load()
		sl := &cl.pubRing[p%pubRingSize]
		if sl.done.Load() != p+1 {
			return
		}
		mf, end, ts := sl.mf, sl.end, sl.ts
		if !cl.pubSeq.CompareAndSwap(p, p+1) {
			continue
		}
		storeMax(&mf.storeTimestamp, ts)
		storeMax(&mf.wrote, end)
		mf.markPublished(end) // before maxOffset: whatever a put acknowledges, the next start restores
		storeMax(&cl.maxOffset, mf.fromOffset+end)
		cl.wakeParked()
	}
}

// drainLocked waits until every reserved put has published. Caller holds putLock (so no new
// reservation can start, and reservedEnd stays put); the puts in flight publish without it.
func (cl *commitLog) drainLocked() { cl.awaitPublished(cl.reservedEnd.Load()) }

// awaitPublished returns once maxOffset reaches target: the puts before it finish their copies, and
// whichever finishes last publishes them all. It spins briefly (the copy is most likely running on the
// other core and done within a microsecond), yields a few times, and then parks until a publication
// wakes it, so that a put stuck behind a descheduled or faulting one gives its processor away instead of
// spinning for it.
func (cl *commitLog) awaitPublished(target int64) {
	for i := 0; ; i++ {
		cl.publishCopied()
		if cl.maxOffset.Load() >= target {
			return
		}
		switch {
		case i < awaitSpins:
		case i < awaitSpins+awaitYields:
			runtime.Gosched()
		default:
			wake := cl.pubWake.Load()
			cl.pubParked.Add(1)
			// Announced first, checked second: a publication after the check sees pubParked and closes
			// wake; one before it is seen here.
			cl.publishCopied()
			if cl.maxOffset.Load() < target {
				<-*wake
			}
			cl.pubParked.Add(-1)
		}
	}
}

// awaitSpins and awaitYields bound the busy part of awaitPublished.
const (
	awaitSpins  = 256
	awaitYields = 8
)

// wakeParked wakes every put parked in awaitPublished (a new channel for the next ones; only when some
// are parked, so the common case allocates nothing).
func (cl *commitLog) wakeParked() {
	if cl.pubParked.Load() == 0 {
		return
	}
	next := make(chan struct{})
	close(*cl.pubWake.Swap(&next))
}

// waitUntil spins on cond, briefly (the put it waits for is most likely copying on the other core and
// done within a microsecond), then yielding the processor between checks.
func waitUntil(cond func() bool) {
	for i := 0; !cond(); i++ {
		if i >= 256 {
			runtime.Gosched()
		}
	}
}

// stalled is how long puts have been in flight without maxOffset moving: a copy stuck on the page
// cache, which RocketMQ sees as a long time in its put lock. 0 when nothing is in flight. The first
// caller to see a new maxOffset with puts in flight starts the clock.
func (cl *commitLog) stalled() time.Duration {
	published := cl.maxOffset.Load()
	if cl.reservedEnd.Load() <= published {
		return 0
	}
	now := time.Since(cl.stats.base)
	if cl.stallOffset.Load() != published {
		cl.stallSince.Store(int64(now))
		cl.stallOffset.Store(published)
		return 0
	}
	return now - time.Duration(cl.stallSince.Load())
}

// rollLocked ends the current file with a blank record and makes the next file current. Caller holds
// putLock.
func (cl *commitLog) rollLocked() (*mappedFile, error) {
	cl.drainLocked()
	old := cl.cur
	from := cl.maxOffset.Load()
	if old != nil {
		from = old.fromOffset + old.size
	} else if rem := from % cl.cfg.MappedFileSizeCommitLog; rem != 0 {
		// Only after recovery at an exact file end is cur nil with data behind it.
		from += cl.cfg.MappedFileSizeCommitLog - rem
	}
	next, err := cl.takeStandbyLocked(from)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if left := old.size - old.wrote.Load(); left > 0 {
			codec.PutBlankRecord(old.appendTarget()[old.wrote.Load():], int(left))
			old.wrote.Store(old.size)
			old.markPublished(old.size)
		}
	}
	cl.cur = next
	cl.maxOffset.Store(next.fromOffset)
	cl.reservedEnd.Store(next.fromOffset)
	if p := next.populated.Load(); p > 0 {
		storeMax(&cl.prefaultTo, next.fromOffset+p)
	}
	cl.wakeAllocator()
	return next, nil
}

// takeStandbyLocked returns the file at from, added to mfq: the head of the standby queue, else the
// file the allocator is creating (waited for), else one created here (a synchronous roll). With the
// transient pool it gets a pool buffer now, so prepared files do not hold buffers while they wait.
// Caller holds putLock.
func (cl *commitLog) takeStandbyLocked(from int64) (*mappedFile, error) {
	cl.allocMu.Lock()
	var next *mappedFile
	for next == nil {
		if len(cl.standbys) > 0 {
			next = cl.standbys[0]
			cl.standbys = slices.Delete(cl.standbys, 0, 1)
			if next.fromOffset != from { // stale after recovery or retention: never used
				_ = next.destroy(cl.mfq.fs, true)
				next = nil
				cl.dropStandbysLocked()
			}
			continue
		}
		if cl.creating >= 0 { // the allocator is making a file (with an empty queue, this one)
			done := cl.createDone
			cl.allocMu.Unlock()
			<-done
			cl.allocMu.Lock()
			continue
		}
		cl.syncRolls.Add(1)
		mf, err := cl.createLocked(from, nil)
		if err != nil {
			cl.allocMu.Unlock()
			return nil, fmt.Errorf("%w: %w", ErrCreateMappedFile, err)
		}
		next = mf
	}
	cl.endPrewrite(next, true) // waits for a piece of zeros in progress: none may land on a record
	if cl.pool != nil {
		if buf, ok := cl.pool.Borrow(); ok {
			next.useTransientBuffer(cl.pool, buf)
		} else {
			// RocketMQ falls back to the mapping too; the file is then read and flushed as a mapped one.
			// Counted here, logged by the allocator: a log write under the put lock took 60–230 µs.
			cl.poolFallbacks.Add(1)
		}
	}
	err := cl.mfq.add(next)
	cl.allocMu.Unlock()
	if err != nil {
		_ = next.destroy(cl.mfq.fs, true)
		return nil, fmt.Errorf("%w: %w", ErrCreateMappedFile, err)
	}
	return next, nil
}

// createLocked creates the CommitLog file at from, then runs prepare on it (unless nil), with allocMu
// released during both, marking the creation so nobody else creates a file meanwhile. Caller holds
// allocMu and checked that nobody is creating; it holds it again on return.
func (cl *commitLog) createLocked(from int64, prepare func(*mappedFile)) (*mappedFile, error) {
	cl.creating, cl.createDone = from, make(chan struct{})
	cl.allocMu.Unlock()
	mf, err := cl.mfq.create(from)
	if err == nil && prepare != nil {
		prepare(mf)
	}
	cl.allocMu.Lock()
	cl.creating = -1
	close(cl.createDone)
	cl.allocFailed.Store(err != nil)
	return mf, err
}

// dropStandbysLocked deletes the prepared files. Caller holds allocMu.
func (cl *commitLog) dropStandbysLocked() error {
	var errs []error
	for _, sb := range cl.standbys {
		cl.endPrewrite(sb, false)
		errs = append(errs, sb.destroy(cl.mfq.fs, true))
	}
	cl.standbys = cl.standbys[:0]
	return errors.Join(errs...)
}

// standbyAndHold returns the prepared file that holds offset, held, or nil; and whether its appends will
// go to a transient pool buffer. A prepared file gets a buffer at its roll if one is free then: rolls are
// the only borrowers once the store runs, so a buffer free now is still free at the roll.
func (cl *commitLog) standbyAndHold(offset int64) (mf *mappedFile, toPoolBuffer bool) {
	cl.allocMu.Lock()
	defer cl.allocMu.Unlock()
	for _, sb := range cl.standbys {
		if sb.fromOffset <= offset && offset < sb.fromOffset+sb.size && sb.hold() {
			return sb, cl.pool != nil && cl.pool.Available() > 0
		}
	}
	return nil, false
}

// wakePrefaulter wakes the prefaulter when a put of total bytes brings the write position within half a
// window of the populated end. The common case is two atomic loads.
func (cl *commitLog) wakePrefaulter(total int64) {
	if cl.prefaultOff.Load() || cl.maxOffset.Load()+total+cl.prefaultWindow/2 <= cl.prefaultTo.Load() {
		return
	}
	cl.kickPrefaulter()
}

// kickPrefaulter wakes the prefaulter unless a wake is pending.
func (cl *commitLog) kickPrefaulter() {
	select {
	case cl.prefaultWake <- struct{}{}:
	default:
	}
}

// prefault (prefaulter goroutine only) populates the CommitLog's pages from prefaultTo, or the write
// position if ahead, up to want, a chunk per madvise call, publishing prefaultTo after each. Near a file's
// end the window reaches into the next, prepared file, whose first pages are populated here at the pace
// of the writer, not in one burst when the file is made. It stops where no file is prepared yet. Only
// MADV_POPULATE_WRITE is safe here (it leaves content alone): touching pages by writing could race with
// a put.
func (cl *commitLog) prefault(want int64) {
	if cl.prefaultOff.Load() || cl.cfg.Slave || cl.writeThrough { // a slave appends with pwrite (replica.go)
		return // the kernel cannot populate; warming touches whole files before they join the queue
	}
	from := max(cl.prefaultTo.Load(), cl.maxOffset.Load()) &^ int64(pageSize-1)
	want = (want + int64(pageSize) - 1) &^ int64(pageSize-1) // populated prefixes stay whole pages
	for from < want {
		mf := cl.mfq.findAndHold(from)
		toPoolBuffer := mf != nil && mf.transient
		if mf == nil {
			if mf, toPoolBuffer = cl.standbyAndHold(from); mf == nil {
				return // the allocator is late: it wakes the prefaulter when the file is ready
			}
		}
		end := min(want, mf.fromOffset+mf.size)
		var err error
		switch done := mf.fromOffset + mf.populated.Load(); {
		case toPoolBuffer: // appends go to the buffer: nothing to populate
		case from < done: // populated already: the allocator's first chunk, or a warmed file
			end = min(end, done)
		default:
			end = min(end, from+prefaultChunk)
			if err = mf.file.Populate(mf.data[from-mf.fromOffset : end-mf.fromOffset]); err == nil {
				storeMax(&mf.populated, end-mf.fromOffset)
			}
		}
		mf.release()
		if errors.Is(err, errors.ErrUnsupported) {
			cl.prefaultOff.Store(true)
			return
		}
		if err != nil {
			cl.logger.Warn("store: prefaulting the CommitLog failed", "error", err)
			return
		}
		storeMax(&cl.prefaultTo, end)
		from = end
	}
}

// prefaultLoop keeps the window ahead of the writer populated. With the transient pool it has work only
// when the pool ran out and a file fell back to the mapping (prefault skips files with a pool buffer).
func (cl *commitLog) prefaultLoop(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case <-cl.prefaultWake:
		}
		cl.prefault(cl.maxOffset.Load() + cl.prefaultWindow)
	}
}

// storeMax raises v to x unless it is already higher.
func storeMax(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if cur >= x || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// flush is the ASYNC_FLUSH step (interval flusher): RocketMQ's FlushRealTimeService body.
func (cl *commitLog) flush(leastPages int) error {
	_, err := cl.mfq.flush(leastPages)
	return err
}

// commit is the transient pool step (commit service): RocketMQ's CommitRealTimeService body.
func (cl *commitLog) commit(leastPages int) error {
	if cl.pool == nil {
		return nil
	}
	before := cl.mfq.committedWhere.Load()
	after, err := cl.mfq.commit(leastPages)
	if after > before {
		cl.onAppend() // committed bytes are what the dispatcher may read
	}
	return err
}

// durable makes everything appended so far durable, which covers target, and returns the durable offset:
// the group commit's one operation per batch of waiters.
func (cl *commitLog) durable(target int64) (int64, error) {
	q := cl.mfq
	q.flushMu.Lock()
	defer q.flushMu.Unlock()
	if cl.pool == nil {
		return q.flushLocked(0)
	}
	// Transient pool: one write+fdatasync per file (io_uring links them), then readers may see the bytes.
	for {
		where := q.flushedWhere.Load()
		if where >= target {
			return where, nil
		}
		mf := q.findAndHold(where)
		if mf == nil {
			return where, nil
		}
		var err error
		if mf.transient {
			err = mf.commitAndSync()
		} else {
			if w := mf.wrote.Load(); w > mf.committed.Load() {
				mf.committed.Store(w)
			}
			err = mf.flushPages(0, &q.unpopulateFlushed) // the pool had no buffer for it: appended in the mapping
		}
		flushed := mf.fromOffset + mf.flushed.Load()
		full := mf.flushed.Load() == q.fileSize
		if full {
			mf.releaseBufferIfDone()
		}
		mf.release()
		if err != nil {
			return where, err
		}
		if c := q.committedWhere.Load(); flushed > c {
			q.committedWhere.Store(flushed)
			cl.onAppend()
		}
		q.flushedWhere.Store(flushed)
		if !full {
			return flushed, nil
		}
	}
}

// minOffset is the first file's start (RocketMQ getMinOffset), 0 without files.
func (cl *commitLog) minOffset() int64 {
	if mf := cl.mfq.first(); mf != nil {
		return mf.fromOffset
	}
	return 0
}

// readRecord returns the published record at phys (size < 0: as long as its TOTALSIZE says), holding
// its file. With the transient pool a record not committed yet is read from the file's pool buffer,
// held too (fromBuffer): release it with mf.releaseBuffer before mf.release. nil when no published
// record of that size starts there.
func (cl *commitLog) readRecord(phys int64, size int32) (rec []byte, mf *mappedFile, fromBuffer bool) {
	published := cl.maxOffset.Load()
	if phys < 0 || phys >= published {
		return nil, nil, false
	}
	mf = cl.mfq.findAndHold(phys)
	if mf == nil {
		return nil, nil, false
	}
	pos := phys - mf.fromOffset
	if rec = recordAt(mf.data, pos, mf.readPosition(), size); rec != nil {
		return rec, mf, false
	}
	wrote := min(mf.wrote.Load(), published-mf.fromOffset)
	if mf.holdBuffer() {
		if rec = recordAt(mf.writeBuffer.Bytes()[:mf.size], pos, wrote, size); rec != nil {
			return rec, mf, true
		}
		mf.releaseBuffer()
	} else if rec = recordAt(mf.data, pos, min(wrote, mf.readPosition()), size); rec != nil {
		return rec, mf, false // the buffer went back to the pool meanwhile: the file has every byte
	}
	mf.release()
	return nil, nil, false
}

// readSized is readRecord with the release to call when done with the record.
func (cl *commitLog) readSized(phys int64, size int32) ([]byte, func()) {
	rec, mf, fromBuffer := cl.readRecord(phys, size)
	switch {
	case mf == nil:
		return nil, nil
	case fromBuffer:
		return rec, mf.releaseWithBuffer
	}
	return rec, mf.release
}

// readPublished is readSized by physical offset alone: reads by physical offset (END_TRANSACTION of a
// half just written, view by id, send-back).
func (cl *commitLog) readPublished(phys int64) ([]byte, func()) { return cl.readSized(phys, -1) }

// recordAt is the record at pos of b, whose first end bytes are readable, size bytes long (size < 0: as
// its TOTALSIZE says); nil when it does not fit there.
func recordAt(b []byte, pos, end int64, size int32) []byte {
	if size < 0 {
		if end-pos < 4 {
			return nil
		}
		size = int32(binary.BigEndian.Uint32(b[pos:]))
	}
	if size <= 0 || pos+int64(size) > end {
		return nil
	}
	return b[pos : pos+int64(size) : pos+int64(size)]
}

// pickupStoreTimestamp reads the store time of the record at phys, -1 when unreadable.
func (cl *commitLog) pickupStoreTimestamp(phys int64, size int32) int64 {
	rec, release := cl.readSized(phys, size)
	if release == nil {
		return -1
	}
	defer release()
	if len(rec) < codec.MinRecordBytes {
		return -1
	}
	sysFlag := int32(binary.BigEndian.Uint32(rec[36:]))
	return int64(binary.BigEndian.Uint64(rec[codec.StoreTimestampOffset(sysFlag):]))
}

// rollNextFile is the start of the file after the one holding offset.
func (cl *commitLog) rollNextFile(offset int64) int64 {
	size := cl.cfg.MappedFileSizeCommitLog
	return offset + size - offset%size
}
