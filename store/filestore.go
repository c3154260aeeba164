package store

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/round"
	"github.com/ringmq/ringmq/transientpool"
)

// Store is the file-backed MessageStore: RocketMQ's DefaultMessageStore. Open recovers it, Start runs its
// services, Shutdown stops them in order. Every method is safe for concurrent use.
type Store struct {
	cfg    Config
	logger *slog.Logger
	fs     FS
	clock  func() time.Time

	backend flush.Backend       // owned; nil when Deps.FS was given
	pool    *transientpool.Pool // owned; nil without transientStorePoolEnable
	// leftovers are the pool buffer files a crashed process left (recovery restores their acknowledged
	// bytes); nil when there were none. Open closes them.
	leftovers   *transientpool.Leftovers
	poolRestore poolRestoreStats      // what recovery took from them
	lockFile    io.Closer             // flock on <root>/lock
	reg         prometheus.Registerer // may be nil

	commitLog  *commitLog
	queues     *consumeQueueTable
	index      *indexService // nil when messageIndexEnable=false
	dispatcher *dispatcher
	flags      flagSet

	// Forced deletion (retention.go). forciblyKept is set while the disk is above
	// diskSpaceCleanForciblyRatio with cleanFileForciblyEnable=false (one warning per episode).
	forciblyKept atomic.Bool
	// manualDeletes counts the retention passes left that delete expired files whatever the hour
	// (DeleteExpiredFilesManually).
	manualDeletes      atomic.Int32
	forcedDeletedFiles atomic.Int64 // CommitLog files deleted before fileReservedTime
	consumerOffsets    atomic.Pointer[ConsumerOffsetsFunc]

	deleteHours    [24]bool
	totalMemory    int64
	diskFullRatio  atomic.Bool // set by the disk check
	lastExitOK     bool
	state          atomic.Int32 // stateOpened → stateStarted → stateShutdown
	lifecycle      sync.Mutex   // Start and Shutdown
	stop           chan struct{}
	wg             sync.WaitGroup
	groupCommit    *flush.GroupCommit
	commitFlusher  *flush.IntervalFlusher
	logicsFlusher  *flush.IntervalFlusher
	commitService  *flush.CommitService
	checkpointMu   sync.Mutex // one checkpoint write at a time
	lastCheckpoint checkpointData

	getTimes        atomic.Int64
	getFound        atomic.Int64
	getMaxNanos     atomic.Int64
	transferredMsgs atomic.Int64
	results         sync.Pool // *GetMessageResult
}

const (
	stateOpened int32 = iota
	stateStarted
	stateShutdown
)

// flagSet is RunningFlags behind an atomic.
type flagSet struct{ v atomic.Uint32 }

func (f *flagSet) load() RunningFlags { return RunningFlags(f.v.Load()) }

func (f *flagSet) set(b RunningFlags) {
	for {
		old := f.v.Load()
		if RunningFlags(old)&b == b || f.v.CompareAndSwap(old, old|uint32(b)) {
			return
		}
	}
}

func (f *flagSet) clear(b RunningFlags) {
	for {
		old := f.v.Load()
		if RunningFlags(old)&b == 0 || f.v.CompareAndSwap(old, old&^uint32(b)) {
			return
		}
	}
}

var _ MessageStore = (*Store)(nil)

// Open opens (creating when absent) the store under cfg.StorePathRootDir and recovers it: normally after
// a clean shutdown (trusting the checkpoint), abnormally after a crash (re-scanning the CommitLog from the
// checkpoint, truncating a torn tail, rebuilding ConsumeQueue and IndexFile entries). The store accepts
// puts after Start.
func Open(cfg Config, deps Deps) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hours, _ := parseDeleteWhen(cfg.DeleteWhen)
	s := &Store{cfg: cfg, logger: deps.Logger, fs: deps.FS, clock: deps.Clock, reg: deps.Registerer,
		deleteHours: hours, totalMemory: totalPhysicalMemory()}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	ok := false
	defer func() {
		if !ok {
			s.closeResources()
		}
	}()
	// The store's lock first: a second broker on the same store must be refused before it touches
	// anything, the transient pool's buffer files of the first included.
	lockFS := s.fs
	if lockFS == nil {
		lockFS = NewOSFS(nil) // the flush backend is opened later, with the pool's buffers registered
	}
	if err := lockFS.MkdirAll(cfg.StorePathRootDir, 0o755); err != nil {
		return nil, fmt.Errorf("store: create %s: %w", cfg.StorePathRootDir, err)
	}
	lock, err := lockFS.Lock(cfg.lockPath())
	if err != nil {
		return nil, err
	}
	s.lockFile = lock
	if cfg.TransientStorePoolEnable && !cfg.Slave {
		p, err := transientpool.New(transientpool.Config{Buffers: cfg.TransientStorePoolSize,
			BufferBytes: int(cfg.MappedFileSizeCommitLog), Pinned: cfg.TransientStorePoolPinned,
			Dir: cfg.poolDir(), Identity: cfg.poolIdentity()}, s.logger)
		if err != nil {
			return nil, fmt.Errorf("store: transient store pool: %w", err)
		}
		s.pool = p
	}
	if s.fs == nil {
		var registrar flush.BufferRegistrar
		if s.pool != nil {
			registrar = s.pool
		}
		b, err := flush.Open(cfg.FlushBackend, registrar, s.logger)
		if err != nil {
			return nil, fmt.Errorf("store: flush backend: %w", err)
		}
		s.backend = b
		s.fs = NewOSFS(b)
	}

	var clock func() time.Time
	if deps.Clock != nil {
		clock = deps.Clock
	}
	var pool bufferPool
	if s.pool != nil {
		pool = s.pool
	}
	s.commitLog = newCommitLog(&s.cfg, s.fs, s.logger, clock, pool)
	s.queues = newConsumeQueueTable(s.fs, cfg.consumeQueueDir(), cfg.MappedFileSizeConsumeQueue, s.logger)
	if cfg.MessageIndexEnable {
		s.index = newIndexService(s.fs, cfg.indexDir(), cfg.MaxHashSlotNum, cfg.MaxIndexNum, s.clock, s.logger)
	}
	s.dispatcher = newDispatcher(s)
	s.results.New = func() any { return &GetMessageResult{store: s} }

	if err := s.commitLog.mfq.load(); err != nil {
		return nil, err
	}
	if err := s.queues.load(); err != nil {
		return nil, err
	}
	if s.index != nil {
		if err := s.index.load(); err != nil {
			return nil, err
		}
	}
	ck, err := readCheckpoint(s.fs, cfg.checkpointPath())
	if err != nil {
		return nil, err
	}
	_, statErr := s.fs.Stat(cfg.abortPath())
	s.lastExitOK = errors.Is(statErr, os.ErrNotExist)
	// The abort marker goes down before recovery changes anything: a crash during recovery must lead to
	// another abnormal recovery.
	if err := s.createAbortFile(); err != nil {
		return nil, err
	}
	// Buffer files of the transient pool a crashed process left, also when the pool is now off.
	ls, err := transientpool.OpenLeftovers(cfg.leftoverPoolDir(), cfg.poolIdentity(), cfg.MappedFileSizeCommitLog)
	switch {
	case errors.Is(err, transientpool.ErrNotOwned):
		s.logger.Warn("store: not reading the transient pool's files left by a crash: the directory is not this user's own",
			"error", err)
	case err != nil:
		return nil, fmt.Errorf("store: %w", err)
	}
	s.leftovers = ls
	if err := s.recover(s.lastExitOK, ck); err != nil {
		return nil, err
	}
	s.settleLeftovers()
	if err := s.registerMetrics(); err != nil {
		return nil, err
	}
	ok = true
	return s, nil
}

func (s *Store) createAbortFile() error {
	f, err := s.fs.OpenFile(s.cfg.abortPath(), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("store: create abort file: %w", err)
	}
	_, werr := f.WriteAt([]byte(fmt.Sprint(os.Getpid())), 0) // 5.x writes the PID
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = s.fs.SyncDir(filepath.Dir(s.cfg.abortPath()))
	}
	if werr != nil {
		return fmt.Errorf("store: create abort file: %w", werr)
	}
	return nil
}

// LastExitOK reports whether the previous run shut down cleanly (no abort file at Open).
func (s *Store) LastExitOK() bool { return s.lastExitOK }

// Start runs the services: file allocator, dispatcher, flush/commit services, ConsumeQueue flush with the
// checkpoint, retention. Puts are accepted from here on.
func (s *Store) Start() error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.state.Load() != stateOpened {
		return fmt.Errorf("%w: Start after Start or Shutdown", ErrServiceNotAvailable)
	}
	cl := s.commitLog
	s.stop = make(chan struct{})
	// The group commit has waiters; the interval flushers and the commit service do not, and
	// register no waiter series (every registered series moves: METRICS.md).
	metrics := func(service string) *flush.Metrics {
		newMetrics := flush.NewIntervalMetrics
		if service == "commitlog_sync" {
			newMetrics = flush.NewMetrics
		}
		m, err := newMetrics(s.reg, service)
		if err != nil {
			s.logger.Warn("store: flush metrics not registered", "service", service, "error", err)
			m, _ = newMetrics(nil, service)
		}
		return m
	}
	var err error
	if s.cfg.FlushDiskType == SyncFlush {
		gc := flush.DefaultGroupCommitConfig()
		gc.SyncFlushTimeout = s.cfg.SyncFlushTimeout
		gc.TimeoutErr = ErrFlushTimeout
		s.groupCommit, err = flush.NewGroupCommit(gc, cl.mfq.flushedWhere.Load(), s.durable,
			metrics("commitlog_sync"), s.logger)
		if err != nil {
			return err
		}
	}
	// The CommitLog's interval flusher: RocketMQ's FlushRealTimeService under ASYNC_FLUSH. Under
	// SYNC_FLUSH it is the idle branch of RocketMQ's GroupCommitService instead: every
	// SyncFlushIdleInterval, while no waiter is queued, everything is flushed, so messages sent without
	// waiting for the store (waitStoreMsgOK=false) become durable soon too; with waiters queued, the group
	// commit is about to flush anyway.
	flushCfg := flush.IntervalConfig{Interval: s.cfg.FlushIntervalCommitLog, LeastPages: s.cfg.FlushCommitLogLeastPages,
		ThoroughInterval: s.cfg.FlushCommitLogThoroughInterval}
	flushFn := s.flushCommitLog
	if gc := s.groupCommit; gc != nil {
		flushCfg.Interval, flushCfg.LeastPages = s.cfg.SyncFlushIdleInterval, 0
		flushCfg.ThoroughInterval = max(flushCfg.ThoroughInterval, flushCfg.Interval)
		flushFn = func(int) (int64, error) {
			if gc.QueueDepth() > 0 {
				return 0, nil
			}
			return s.flushCommitLog(0)
		}
	}
	s.commitFlusher, err = flush.NewIntervalFlusher("commitlog", flushCfg, flushFn, metrics("commitlog_async"), s.logger)
	if err != nil {
		return errors.Join(err, s.closeGroupCommit())
	}
	s.logicsFlusher, err = flush.NewIntervalFlusher("consumequeue", flush.IntervalConfig{
		Interval: s.cfg.FlushIntervalConsumeQueue, LeastPages: s.cfg.FlushConsumeQueueLeastPages,
		ThoroughInterval: s.cfg.FlushConsumeQueueThoroughInterval,
	}, s.flushLogicsAndCheckpoint, metrics("consumequeue"), s.logger)
	if err != nil {
		return errors.Join(err, s.commitFlusher.Close(), s.closeGroupCommit())
	}
	if s.pool != nil {
		// Committed bytes wake the flusher that makes them durable: under ASYNC_FLUSH the interval
		// flusher (RocketMQ's CommitRealTimeService wakes FlushRealTimeService). Under SYNC_FLUSH that is
		// the group commit, which its waiters wake; waking the interval flusher too put an fdatasync of
		// its own beside nearly every group commit (≈ 600 a second at 4 × 16 through the broker), each
		// holding the file's flush lock while the waiters queued behind it.
		onCommitted := func(int64) { s.commitFlusher.Wake() }
		if s.cfg.FlushDiskType == SyncFlush {
			onCommitted = func(int64) {}
		}
		s.commitService, err = flush.NewCommitService("commitlog", flush.IntervalConfig{
			Interval: s.cfg.CommitIntervalCommitLog, LeastPages: s.cfg.CommitCommitLogLeastPages,
			ThoroughInterval: s.cfg.CommitCommitLogThoroughInterval,
		}, s.commitCommitLog, onCommitted, metrics("commitlog_commit"), s.logger)
		if err != nil {
			return errors.Join(err, s.commitFlusher.Close(), s.logicsFlusher.Close(), s.closeGroupCommit())
		}
		// With the pool, a put wakes the dispatcher (it reads published records, from the pool buffer
		// while they are not committed) and the commit service. Under SYNC_FLUSH the commit service not
		// while group commit waiters are queued: the group commit's next durable write commits the
		// file's appended bytes anyway (commitAndSync), and each wake was a goroutine switch plus a
		// pwrite taking the flush lock between the syncer's operations (13 % of the broker's scheduler
		// delay at 4 × 16, issue 17). A put without a waiter at the end of a burst is then committed by
		// the commit service's interval (commitIntervalCommitLog) at the latest.
		wakeCommit, dispatch := s.commitService.Wake, s.dispatcher.signal
		cl.onAppend = func() { dispatch(); wakeCommit() }
		if gc := s.groupCommit; gc != nil {
			cl.onAppend = func() {
				dispatch()
				if gc.QueueDepth() == 0 {
					wakeCommit()
				}
			}
		}
	} else {
		cl.onAppend = s.dispatcher.signal
	}
	cl.onAllocResult = func(err error) {
		switch {
		case err != nil && isNoSpace(err):
			s.flags.set(FlagDiskFull)
		case err == nil && !s.diskFullRatio.Load() && s.flags.load()&FlagDiskFull != 0:
			s.flags.clear(FlagDiskFull)
			s.logger.Info("store: disk space back, accepting puts")
		}
	}
	// The first standby file is made here, so even the first put finds its file ready.
	_, allocErr := cl.allocateStandby()
	if allocErr != nil {
		s.logger.Warn("store: preallocating the CommitLog file failed; the first put will retry", "error", allocErr)
	}
	cl.onAllocResult(allocErr)
	s.wg.Add(4)
	go func() { defer s.wg.Done(); cl.allocatorLoop(s.stop) }()
	go func() { defer s.wg.Done(); cl.prefaultLoop(s.stop) }()
	go func() { defer s.wg.Done(); s.dispatcher.loop(s.stop) }()
	go func() { defer s.wg.Done(); s.retentionLoop(s.stop) }()
	cl.allocWake <- struct{}{}
	cl.prefaultWake <- struct{}{}
	s.state.Store(stateStarted)
	return nil
}

// closeGroupCommit closes the group commit of a Start that failed after making it.
func (s *Store) closeGroupCommit() error {
	if s.groupCommit == nil {
		return nil
	}
	err := s.groupCommit.Close()
	s.groupCommit = nil
	return err
}

func (s *Store) flushCommitLog(leastPages int) (int64, error) {
	q := s.commitLog.mfq
	before := q.flushedWhere.Load()
	after, err := q.flush(leastPages)
	if err != nil {
		s.onFlushError(err)
	}
	return max(after-before, 0), err
}

// Flush makes appended CommitLog bytes durable when at least leastPages pages are dirty (0: all of
// them): the ASYNC_FLUSH service's step, which Start already runs every flushIntervalCommitLog.
func (s *Store) Flush(leastPages int) error {
	_, err := s.flushCommitLog(leastPages)
	return err
}

// Durable makes every CommitLog byte appended so far durable, which covers target, in one operation per
// file and returns the durable offset: the group commit's DurableFunc.
func (s *Store) Durable(target int64) (int64, error) { return s.durable(target) }

// Commit moves transient-pool bytes into the CommitLog files when at least leastPages pages wait (0: all):
// the commit service's step. A no-op without the transient pool.
func (s *Store) Commit(leastPages int) error {
	_, err := s.commitCommitLog(leastPages)
	return err
}

// durable is the group commit's one durable operation per batch of waiters (see commitLog.durable).
func (s *Store) durable(target int64) (int64, error) {
	committed := s.commitLog.mfq.committedWhere.Load()
	off, err := s.commitLog.durable(target)
	if s.commitLog.mfq.committedWhere.Load() > committed {
		// With the transient pool the durable write commits too, and committed bytes are what the
		// dispatcher reads: wake it (the commit service it would otherwise wait for finds nothing new).
		s.dispatcher.signal()
	}
	if err != nil {
		s.onFlushError(err)
	}
	return off, err
}

func (s *Store) commitCommitLog(leastPages int) (int64, error) {
	before := s.commitLog.mfq.committedWhere.Load()
	err := s.commitLog.commit(leastPages)
	after := s.commitLog.mfq.committedWhere.Load()
	if after > before {
		s.dispatcher.signal()
	}
	if err != nil {
		s.onFlushError(err)
	}
	return max(after-before, 0), err
}

// onFlushError reacts to a failed durable write: disk full is a state that clears itself; an I/O error
// makes the store read-only (fsyncgate: the kernel may have dropped the dirty pages).
func (s *Store) onFlushError(err error) {
	if isNoSpace(err) {
		s.flags.set(FlagDiskFull)
		return
	}
	if s.flags.load()&FlagNotWriteable == 0 {
		s.logger.Error("store: flush failed, refusing further puts until restart", "error", err)
	}
	s.flags.set(FlagNotWriteable)
}

// Shutdown stops the store once, in order: refuse puts, stop the services, dispatch what is left, make
// everything durable, write the checkpoint, unmap, remove the abort file. When a final flush fails the
// abort file stays, so the next Open recovers abnormally. A second call returns ErrClosed.
func (s *Store) Shutdown() error {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	prev := s.state.Swap(stateShutdown)
	if prev == stateShutdown {
		return ErrClosed
	}
	cl := s.commitLog
	cl.putLock.Lock()
	cl.closed = true // puts that reach the lock from now on are refused
	cl.drainLocked() // and the ones past it have published
	cl.putLock.Unlock()

	var errs []error
	if prev == stateStarted {
		close(s.stop)
		s.wg.Wait()
		if s.commitService != nil {
			errs = append(errs, s.commitService.Close())
		}
		errs = append(errs, s.commitFlusher.Close())
		if s.groupCommit != nil {
			errs = append(errs, s.groupCommit.Close())
		}
	}
	// The dispatcher goroutine is gone: this goroutine owns its step now.
	errs = append(errs, s.commitLog.commit(0))
	_, ferr := cl.mfq.flush(0)
	errs = append(errs, ferr)
	errs = append(errs, s.dispatcher.reput())
	if prev == stateStarted {
		errs = append(errs, s.logicsFlusher.Close()) // its last run flushes and writes the checkpoint
	} else {
		_, err := s.flushLogicsAndCheckpoint(0)
		errs = append(errs, err)
	}
	errs = append(errs, cl.dropStandby())
	clean := errors.Join(errs...) == nil
	if clean {
		if err := s.fs.Remove(s.cfg.abortPath()); err != nil {
			errs = append(errs, fmt.Errorf("store: remove abort file: %w", err))
		} else {
			errs = append(errs, s.fs.SyncDir(filepath.Dir(s.cfg.abortPath())))
		}
	} else {
		s.logger.Error("store: shutdown was not clean; the next start recovers abnormally", "error", errors.Join(errs...))
	}
	poolDir := ""
	if clean && s.pool != nil {
		poolDir = s.pool.Dir() // everything is in the CommitLog: the buffer files go
	}
	errs = append(errs, s.closeResources())
	if poolDir != "" {
		errs = append(errs, transientpool.RemoveDir(poolDir))
	}
	return errors.Join(errs...)
}

// closeResources unmaps and closes everything Open created (also on a failed Open).
func (s *Store) closeResources() error {
	var errs []error
	if s.commitLog != nil {
		errs = append(errs, s.commitLog.dropStandby(), s.commitLog.mfq.destroyAll(false))
	}
	if s.leftovers != nil {
		errs = append(errs, s.leftovers.Close())
		s.leftovers = nil
	}
	if s.queues != nil {
		for _, cq := range s.queues.all() {
			errs = append(errs, cq.mfq.destroyAll(false))
		}
	}
	if s.index != nil {
		errs = append(errs, s.index.close())
	}
	if s.backend != nil {
		errs = append(errs, s.backend.Close())
		s.backend = nil
	}
	if s.pool != nil {
		errs = append(errs, s.pool.Close())
		s.pool = nil
	}
	if s.lockFile != nil {
		errs = append(errs, s.lockFile.Close())
		s.lockFile = nil
	}
	return errors.Join(errs...)
}

// flushLogicsAndCheckpoint flushes every ConsumeQueue and the IndexFiles, then writes the checkpoint
// with the offsets that flush made safe. It is the ConsumeQueue flusher's work function.
func (s *Store) flushLogicsAndCheckpoint(leastPages int) (int64, error) {
	s.checkpointMu.Lock()
	defer s.checkpointMu.Unlock()
	// Read the offsets before flushing: everything they cover was written before they were read.
	logics := s.dispatcher.reputFrom.Load()
	logicsTs := s.dispatcher.lastStoreTs.Load()
	phys := s.commitLog.mfq.flushedWhere.Load()
	physTs := s.flushedStoreTimestamp(phys)
	var indexID int64
	var indexCount int32
	if s.index != nil {
		indexID, indexCount = s.index.current()
	}
	var n int64
	var errs []error
	for _, cq := range s.queues.all() {
		before := cq.mfq.flushedWhere.Load()
		if err := cq.flush(leastPages); err != nil {
			errs = append(errs, err)
		}
		n += max(cq.mfq.flushedWhere.Load()-before, 0)
		// With leastPages > 0 a queue may keep entries for records below logics unflushed: the
		// checkpoint must not promise them, or a power cut loses entries the replay starts after.
		logics = min(logics, cq.unflushedFrom())
	}
	if s.index != nil {
		errs = append(errs, s.index.flush(leastPages <= 0))
	}
	if err := errors.Join(errs...); err != nil {
		if isNoSpace(err) {
			s.flags.set(FlagDiskFull)
		}
		return n, err
	}
	ck := checkpointData{
		PhysicMsgTimestamp: physTs, LogicsMsgTimestamp: logicsTs, IndexMsgTimestamp: logicsTs,
		MasterFlushedOffset: phys, Valid: true, PhysicFlushedOffset: phys, LogicsOffset: logics,
		IndexFileID: indexID, IndexCount: indexCount,
	}
	if leastPages > 0 && ck == s.lastCheckpoint {
		return n, nil
	}
	if err := writeCheckpoint(s.fs, s.cfg.checkpointPath(), ck); err != nil {
		return n, err
	}
	s.lastCheckpoint = ck
	return n, nil
}

// flushedStoreTimestamp is the store time of the last record below phys (physicMsgTimestamp).
func (s *Store) flushedStoreTimestamp(phys int64) int64 {
	mf := s.commitLog.mfq.findAndHold(max(phys-1, 0))
	if mf == nil {
		return s.lastCheckpoint.PhysicMsgTimestamp
	}
	defer mf.release()
	if phys == mf.fromOffset+mf.wrote.Load() {
		return mf.storeTimestamp.Load()
	}
	return s.lastCheckpoint.PhysicMsgTimestamp
}

// checkWriteable is the put gate outside the lock.
func (s *Store) checkWriteable() (PutMessageStatus, error) {
	if s.state.Load() != stateStarted {
		return ServiceNotAvailable, ErrServiceNotAvailable
	}
	if s.cfg.Slave {
		return ServiceNotAvailable, ErrSlave
	}
	if f := s.flags.load(); f != 0 {
		if f&FlagDiskFull != 0 {
			return ServiceNotAvailable, ErrDiskFull
		}
		if f&FlagNotWriteable != 0 {
			return ServiceNotAvailable, fmt.Errorf("%w: %w", ErrServiceNotAvailable, ErrFlushFailed)
		}
	}
	if s.IsOSPageCacheBusy() {
		return OSPageCacheBusy, ErrOSPageCacheBusy
	}
	return PutOK, nil
}

func (s *Store) checkMessage(m *codec.Message) (PutMessageStatus, error) {
	return s.cfg.CheckMessage(m)
}

// CheckMessage validates what the record format and maxMessageSize limit, and the properties: a
// record whose properties do not parse is never written, whoever builds it (PROTOCOL.md §5.4; the
// broker checks a client's properties before, to answer with a precise remark). A put runs it before
// the put lock; another MessageStore (storetest.MemStore) runs it too, so that both refuse the same
// messages. It returns PutOK and nil, or the put's status and error (see PutResult), and allocates
// nothing unless it fails. Safe for concurrent use.
func (cfg *Config) CheckMessage(m *codec.Message) (PutMessageStatus, error) {
	switch {
	case m.Body == nil:
		return MessageIllegal, fmt.Errorf("%w: body is null", ErrMessageIllegal)
	case len(m.Body) > cfg.MaxMessageSize:
		return MessageIllegal, fmt.Errorf("%w: body %d bytes > maxMessageSize %d", ErrMessageIllegal, len(m.Body), cfg.MaxMessageSize)
	case len(m.Topic) == 0 || len(m.Topic) > codec.MaxTopicBytes:
		return MessageIllegal, fmt.Errorf("%w: topic length %d", ErrMessageIllegal, len(m.Topic))
	case len(m.Topic) > codec.V1MaxTopicBytes && !strings.HasPrefix(m.Topic, "%RETRY%") && !strings.HasPrefix(m.Topic, "%DLQ%"):
		return MessageIllegal, fmt.Errorf("%w: topic length %d > 127", ErrMessageIllegal, len(m.Topic))
	case len(m.Properties) > codec.MaxPropertiesBytes:
		return PropertiesSizeExceeded, fmt.Errorf("%w: %d bytes", ErrPropertiesSizeExceeded, len(m.Properties))
	case !m.BornHost.IsValid():
		return MessageIllegal, fmt.Errorf("%w: born host invalid", ErrMessageIllegal)
	case m.QueueID < 0:
		return MessageIllegal, fmt.Errorf("%w: queueId %d", ErrMessageIllegal, m.QueueID)
	}
	if err := codec.ValidateProperties(m.Properties); err != nil {
		return MessageIllegal, fmt.Errorf("%w: %w", ErrMessageIllegal, err)
	}
	return PutOK, nil
}

// PutMessage stores one message: it sets m.StoreHost, encodes the record, and assigns its queue offset,
// physical offset and store timestamp (written back into m). Prepared and rollback transaction records
// get queue offset 0. Under SYNC_FLUSH the caller then waits with WaitDurable(res.EndOffset(), ...).
// Safe for concurrent use; allocation-free in steady state.
func (s *Store) PutMessage(m *codec.Message) (PutResult, error) {
	start := time.Now()
	res, err := s.putMessage(m)
	s.commitLog.putSeconds.Observe(time.Since(start).Seconds())
	return res, err
}

func (s *Store) putMessage(m *codec.Message) (PutResult, error) {
	if st, err := s.checkWriteable(); err != nil {
		s.commitLog.putFailTimes.Add(1)
		return PutResult{Status: st}, err
	}
	size, st, err := s.admit(m)
	if err != nil {
		return PutResult{Status: st}, err
	}
	cl := s.commitLog
	buf, pool := cl.getBuffer(size)
	defer pool.Put(buf)
	n, err := m.Encode(buf.b[:size])
	if err != nil {
		cl.putFailTimes.Add(1)
		return PutResult{Status: MessageIllegal}, fmt.Errorf("%w: %w", ErrMessageIllegal, err)
	}
	counter := s.queueCounter(m.Topic, m.QueueID, m.SysFlag)
	res, err := cl.put(buf.b[:n], 1, counter, nil)
	if err != nil {
		return res, s.putError(err)
	}
	m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp = res.QueueOffset, res.WroteOffset, res.StoreTimestamp
	return res, nil
}

// admit checks a single message as every put of one does (its fields, properties and record size),
// stamps its STOREHOST and returns its encoded size; a refusal is counted as a failed put.
func (s *Store) admit(m *codec.Message) (int, PutMessageStatus, error) {
	if st, err := s.checkMessage(m); err != nil {
		s.commitLog.putFailTimes.Add(1)
		return 0, st, err
	}
	m.StoreHost = s.cfg.StoreHost
	size := m.EncodedSize()
	if size > s.cfg.maxRecordBytes() {
		s.commitLog.putFailTimes.Add(1)
		return 0, MessageIllegal, fmt.Errorf("%w: record %d bytes > %d", ErrMessageIllegal, size, s.cfg.maxRecordBytes())
	}
	return size, PutOK, nil
}

// queueCounter is the topic/queue's offset counter, nil for records that take no queue offset.
func (s *Store) queueCounter(topic string, queueID int32, sysFlag int32) *atomic.Int64 {
	switch codec.TransactionType(sysFlag) {
	case codec.SysFlagTransactionPrepare, codec.SysFlagTransactionRollback:
		return nil
	}
	return &s.queues.findOrCreate(topic, queueID).nextQueueOffset
}

func (s *Store) putError(err error) error {
	if isNoSpace(err) {
		s.flags.set(FlagDiskFull)
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	}
	return err
}

// PutMessages stores a batch for one topic and queue: consecutive queue offsets, one store timestamp,
// the records back to back in one file. Transactional (prepared/rollback) batches are refused, as
// RocketMQ refuses them. batch.PhysicalOffsets receives each record's offset. Safe for concurrent use.
func (s *Store) PutMessages(batch *BatchPut) (PutResult, error) {
	start := time.Now()
	res, err := s.putMessages(batch)
	s.commitLog.putSeconds.Observe(time.Since(start).Seconds())
	return res, err
}

func (s *Store) putMessages(batch *BatchPut) (PutResult, error) {
	cl := s.commitLog
	fail := func(st PutMessageStatus, err error) (PutResult, error) {
		cl.putFailTimes.Add(1)
		return PutResult{Status: st}, err
	}
	if st, err := s.checkWriteable(); err != nil {
		return fail(st, err)
	}
	if len(batch.Messages) == 0 {
		return fail(MessageIllegal, fmt.Errorf("%w: empty batch", ErrMessageIllegal))
	}
	first := &batch.Messages[0]
	total := 0
	for i := range batch.Messages {
		m := &batch.Messages[i]
		if st, err := s.checkMessage(m); err != nil {
			return fail(st, fmt.Errorf("batch item %d: %w", i, err))
		}
		if m.Topic != first.Topic || m.QueueID != first.QueueID {
			return fail(MessageIllegal, fmt.Errorf("%w: batch item %d is for %s/%d, not %s/%d",
				ErrMessageIllegal, i, m.Topic, m.QueueID, first.Topic, first.QueueID))
		}
		switch codec.TransactionType(m.SysFlag) {
		case codec.SysFlagTransactionPrepare, codec.SysFlagTransactionRollback:
			return fail(MessageIllegal, fmt.Errorf("%w: batch item %d is a transaction half", ErrMessageIllegal, i))
		}
		m.StoreHost = s.cfg.StoreHost
		total += m.EncodedSize()
	}
	if total > s.cfg.maxRecordBytes() {
		return fail(MessageIllegal, fmt.Errorf("%w: batch %d bytes > %d", ErrMessageIllegal, total, s.cfg.maxRecordBytes()))
	}
	buf, pool := cl.getBuffer(total)
	defer pool.Put(buf)
	pos := 0
	for i := range batch.Messages {
		n, err := batch.Messages[i].Encode(buf.b[pos:total])
		if err != nil {
			return fail(MessageIllegal, fmt.Errorf("%w: batch item %d: %w", ErrMessageIllegal, i, err))
		}
		pos += n
	}
	n := len(batch.Messages)
	if cap(batch.PhysicalOffsets) < n {
		batch.PhysicalOffsets = make([]int64, n)
	}
	batch.PhysicalOffsets = batch.PhysicalOffsets[:n]
	res, err := cl.put(buf.b[:total], n, &s.queues.findOrCreate(first.Topic, first.QueueID).nextQueueOffset, batch.PhysicalOffsets)
	if err != nil {
		return res, s.putError(err)
	}
	for i := range batch.Messages {
		m := &batch.Messages[i]
		m.QueueOffset, m.PhysicalOffset, m.StoreTimestamp = res.QueueOffset+int64(i), batch.PhysicalOffsets[i], res.StoreTimestamp
	}
	return res, nil
}

// WaitDurable calls done once every byte below endOffset is durable: at once under ASYNC_FLUSH (and when
// already durable), else from the group commit goroutine, with ErrFlushTimeout after syncFlushTimeout
// (FLUSH_DISK_TIMEOUT), ErrFlushQueueFull at once when the group commit is full, or the flush error.
// done must not block. Safe for concurrent use.
func (s *Store) WaitDurable(endOffset int64, done func(error)) {
	s.waitDurable(endOffset, flush.WaiterFunc(done), false)
}

// ReserveWait holds a place in the SYNC_FLUSH group commit's queue for the WaitDurableReserved of a put
// about to be made, or reports false when the queue is full (what WaitDurable would answer
// ErrFlushQueueFull). The broker reserves before a put it will wait for, to refuse the send with
// SYSTEM_BUSY without storing it: a message stored and then refused would reach consumers although its
// producer was told it failed (and a retrying producer would store it twice). Reserving, not only
// checking, keeps that true when several event loops take the last places at once, and for sends
// stored together after their pass (PutGroup). True under ASYNC_FLUSH (no group commit). The place is
// used by WaitDurableReserved or given back by ReleaseWait. Safe for concurrent use.
func (s *Store) ReserveWait() bool {
	if gc := s.groupCommit; gc != nil {
		return gc.Reserve()
	}
	return true
}

// WaitDurableReserved is WaitDurable for a put whose place ReserveWait held: never ErrFlushQueueFull.
// done gets the round of the group commit's batch it completes with (flush.RoundWaiter): a SYNC_FLUSH
// send's answer is written once per connection and round. Completed here, or alone, it gets nil.
func (s *Store) WaitDurableReserved(endOffset int64, done func(err error, rd *round.Round)) {
	s.waitDurable(endOffset, flush.RoundWaiterFunc(done), true)
}

// ReleaseWait gives back a place ReserveWait held for a put that will not wait (it failed).
func (s *Store) ReleaseWait() {
	if gc := s.groupCommit; gc != nil {
		gc.Unreserve()
	}
}

// waitDurable is WaitDurable and, with reserved, WaitDurableReserved: a wait that ends without a waiter
// gives its reserved place back. The group commit exists only under SYNC_FLUSH; it is set before Start
// publishes stateStarted and never cleared, so a place ReserveWait held is one this finds.
func (s *Store) waitDurable(endOffset int64, w flush.Waiter, reserved bool) {
	gc := s.groupCommit
	unreserve := func() {
		if reserved && gc != nil {
			gc.Unreserve()
		}
	}
	if s.cfg.FlushDiskType == AsyncFlush || s.commitLog.mfq.flushedWhere.Load() >= endOffset {
		unreserve()
		w.FlushDone(nil)
		return
	}
	if gc == nil || s.state.Load() != stateStarted {
		unreserve()
		w.FlushDone(ErrClosed)
		return
	}
	submit := gc.Submit
	if reserved {
		submit = gc.SubmitReserved
	}
	if err := submit(endOffset, w); err != nil {
		if errors.Is(err, flush.ErrQueueFull) {
			err = ErrFlushQueueFull
		}
		w.FlushDone(err)
	}
}

// IsOSPageCacheBusy reports whether the put path has been stuck longer than
// osPageCacheBusyTimeOutMills (the broker answers SYSTEM_BUSY "[PC_SYNCHRONIZED]broker busy"): a put
// holding the lock, or puts copying into the page cache without any of them finishing, that long.
func (s *Store) IsOSPageCacheBusy() bool {
	d := s.BeginTimeInLock()
	return d > s.cfg.OSPageCacheBusyTimeout && d < 10_000_000*time.Millisecond
}

// BeginTimeInLock is RocketMQ's now - beginTimeInLock: how long the put path has been stuck, the longer
// of the current put lock hold and the time puts have been copying without one publishing (copies run
// after the lock here). 0 when no put is in progress.
func (s *Store) BeginTimeInLock() time.Duration {
	return max(s.commitLog.stats.inLock(), s.commitLog.stalled())
}

// LockTimeHistogram returns a copy of the put-lock time of every put since Open (or ResetLockTime), in
// nanoseconds.
func (s *Store) LockTimeHistogram() *hdrhistogram.Histogram {
	return s.commitLog.stats.snapshot(s.commitLog.putLock)
}

// ResetLockTime clears the put-lock histogram (benchmark phases).
func (s *Store) ResetLockTime() { s.commitLog.stats.reset(s.commitLog.putLock) }

// SetArrivingListener sets the hook the dispatcher calls for every new ConsumeQueue entry (long polling).
func (s *Store) SetArrivingListener(l ArrivingListener) {
	if l == nil {
		s.dispatcher.listener.Store(nil)
		return
	}
	s.dispatcher.listener.Store(&l)
}

// SetDelayLevelTable sets the delay of each level (index 0 = level 1), for SCHEDULE_TOPIC_XXXX entries'
// delivery time. Without a table the delivery time is store time + 1 s, as in RocketMQ.
func (s *Store) SetDelayLevelTable(delays []time.Duration) {
	t := make([]int64, len(delays))
	for i, d := range delays {
		t[i] = d.Milliseconds()
	}
	s.dispatcher.delays.Store(&t)
}

// SetConsumerOffsets gives retention the consumer groups' committed offsets: a forced deletion
// (cleanFileForciblyEnable) logs which groups lose messages they have not consumed. nil unsets it.
func (s *Store) SetConsumerOffsets(fn ConsumerOffsetsFunc) {
	if fn == nil {
		s.consumerOffsets.Store(nil)
		return
	}
	s.consumerOffsets.Store(&fn)
}

// RunningFlags returns the current flags.
func (s *Store) RunningFlags() RunningFlags { return s.flags.load() }

// MaxPhyOffset is the end of the CommitLog (appended bytes).
func (s *Store) MaxPhyOffset() int64 { return s.commitLog.maxOffset.Load() }

// MinPhyOffset is the start of the oldest CommitLog file.
func (s *Store) MinPhyOffset() int64 { return s.commitLog.minOffset() }

// FlushedPhyOffset is the end of the durable part of the CommitLog.
func (s *Store) FlushedPhyOffset() int64 { return s.commitLog.mfq.flushedWhere.Load() }

// DispatchBehindBytes is how far the dispatcher trails the CommitLog's readable end.
func (s *Store) DispatchBehindBytes() int64 {
	return max(s.commitLog.readableEnd()-s.dispatcher.reputFrom.Load(), 0)
}

// SyncRolls counts file rolls that had to create the next CommitLog file under the put lock because the
// allocator was late.
func (s *Store) SyncRolls() int64 { return s.commitLog.syncRolls.Load() }

// Stats returns the counters.
func (s *Store) Stats() Stats {
	cl := s.commitLog
	st := Stats{
		PutMessageTimesTotal: cl.putTimes.Load(), PutMessageSizeTotal: cl.putBytes.Load(),
		PutMessageFailedTimes: cl.putFailTimes.Load(), GetMessageTimesTotal: s.getTimes.Load(),
		GetMessageTransferredMsg: s.transferredMsgs.Load(), DispatchBehindBytes: s.DispatchBehindBytes(),
		CommitLogMinOffset: s.MinPhyOffset(), CommitLogMaxOffset: s.MaxPhyOffset(),
		CommitLogFlushedOffset: s.FlushedPhyOffset(), RunningFlags: s.RunningFlags(),
		PutLockMax:           time.Duration(cl.stats.maxNanos.Load()),
		GetMessageFoundTotal: s.getFound.Load(), GetMessageTimeMax: time.Duration(s.getMaxNanos.Load()),
		CommitLogCommittedOffset: s.MaxPhyOffset(), TransientPoolAvailable: -1,
	}
	if s.pool != nil {
		st.CommitLogCommittedOffset = cl.mfq.committedWhere.Load()
		st.TransientPoolAvailable = s.pool.Available()
	}
	return st
}

// PutLatency reads the put-latency histogram (ringmq_store_put_latency_seconds): one count, no
// second one on the put path. Safe for concurrent use.
func (s *Store) PutLatency() (out PutLatencyCounts) {
	var m dto.Metric
	if s.commitLog.putSeconds.Write(&m) != nil || m.Histogram == nil {
		return out
	}
	var below uint64
	for i, b := range m.Histogram.GetBucket() {
		if i >= PutLatencyBuckets {
			break
		}
		c := b.GetCumulativeCount()
		out[i] = c - below
		below = c
	}
	out[PutLatencyBuckets] = m.Histogram.GetSampleCount() - below
	return out
}

// DeleteTopics removes the topics' ConsumeQueues and forgets their queue offsets (DELETE_TOPIC_IN_BROKER).
// Their records stay in the CommitLog until retention removes them.
func (s *Store) DeleteTopics(topics ...string) error {
	var errs []error
	for _, t := range topics {
		errs = append(errs, s.queues.remove(t))
	}
	return errors.Join(errs...)
}

// QueueTopics lists the topics that have ConsumeQueues, sorted (CLEAN_UNUSED_TOPIC).
func (s *Store) QueueTopics() []string { return s.queues.topicNames() }

// CleanExpiredConsumeQueues deletes the ConsumeQueues whose records are all gone from the CommitLog
// (CLEAN_EXPIRED_CONSUMEQUEUE) and returns how many went.
func (s *Store) CleanExpiredConsumeQueues() (int, error) {
	return s.queues.removeExpired(s.MinPhyOffset())
}

// ConsumeQueueEntry reads the ConsumeQueue entry at a queue's logical offset.
func (s *Store) ConsumeQueueEntry(topic string, queueID int32, offset int64) (ConsumeQueueEntry, bool) {
	cq := s.queues.find(topic, queueID)
	if cq == nil {
		return ConsumeQueueEntry{}, false
	}
	phys, size, tagsCode, ok := cq.entryAt(offset)
	return ConsumeQueueEntry{PhyOffset: phys, Size: size, TagsCode: tagsCode}, ok
}

// diskUsedRatio is the used share of the CommitLog's file system, 0 when it cannot be read. A statfs,
// no lock: metrics never wait on the data path.
func (s *Store) diskUsedRatio() float64 {
	usage, err := s.fs.DiskUsage(s.cfg.commitLogDir())
	if err != nil {
		return 0
	}
	return usage.UsedRatio() / 100
}

func (s *Store) registerMetrics() error {
	if s.reg == nil {
		return nil
	}
	cl := s.commitLog
	gauge := func(name, help string, fn func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn)
	}
	counter := func(name, help string, fn func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, fn)
	}
	cs := []prometheus.Collector{
		counter("ringmq_store_put_messages_total", "Records appended to the CommitLog.", func() float64 { return float64(cl.putTimes.Load()) }),
		counter("ringmq_store_put_bytes_total", "Bytes appended to the CommitLog.", func() float64 { return float64(cl.putBytes.Load()) }),
		counter("ringmq_store_put_failures_total", "Puts refused or failed.", func() float64 { return float64(cl.putFailTimes.Load()) }),
		counter("ringmq_store_sync_rolls_total", "CommitLog rolls that created the file under the put lock.", func() float64 { return float64(cl.syncRolls.Load()) }),
		counter("ringmq_store_prewritten_bytes_total", "Bytes of prepared CommitLog files written with zeros and synced before use (prewriteMappedFileEnable).", func() float64 { return float64(cl.prewrittenBytes.Load()) }),
		counter("ringmq_store_prewrite_late_files_total", "CommitLog files that became current before their pre-writing was done.", func() float64 { return float64(cl.prewriteLate.Load()) }),
		counter("ringmq_store_forced_deleted_files_total", "CommitLog files deleted before fileReservedTime because the disk was above diskSpaceCleanForciblyRatio (cleanFileForciblyEnable=true).", func() float64 { return float64(s.forcedDeletedFiles.Load()) }),
		counter("ringmq_store_transient_pool_fallbacks_total", "CommitLog files that got no transient pool buffer (the committer behind) and append into the mapping.", func() float64 { return float64(cl.poolFallbacks.Load()) }),
		gauge("ringmq_store_commitlog_max_offset_bytes", "End of the CommitLog.", func() float64 { return float64(s.MaxPhyOffset()) }),
		gauge("ringmq_store_commitlog_min_offset_bytes", "Start of the oldest CommitLog file.", func() float64 { return float64(s.MinPhyOffset()) }),
		gauge("ringmq_store_commitlog_flushed_offset_bytes", "End of the durable CommitLog.", func() float64 { return float64(s.FlushedPhyOffset()) }),
		gauge("ringmq_store_dispatch_behind_bytes", "Bytes the dispatcher trails the CommitLog.", func() float64 { return float64(s.DispatchBehindBytes()) }),
		gauge("ringmq_store_commitlog_bytes", "Bytes the CommitLog holds: its end minus the start of its oldest file.", func() float64 { return float64(max(s.MaxPhyOffset()-s.MinPhyOffset(), 0)) }),
		gauge("ringmq_store_flush_behind_bytes", "Bytes of the CommitLog not yet durable (end minus flushed offset).", func() float64 { return float64(max(s.MaxPhyOffset()-s.FlushedPhyOffset(), 0)) }),
		gauge("ringmq_store_disk_used_ratio", "Used share (0..1) of the CommitLog's file system, read at scrape time (statfs; diskMaxUsedSpaceRatio and the levels after it compare it in percent).", s.diskUsedRatio),
		gauge("ringmq_store_put_lock_max_seconds", "Longest time a put held the put lock.", func() float64 { return float64(cl.stats.maxNanos.Load()) / 1e9 }),
		newLockTimeCollector(cl.stats, cl.putLock),
		cl.putSeconds,
		gauge("ringmq_store_running_flags", "RunningFlags bits (16 = DISK_FULL, 2 = NOT_WRITEABLE).", func() float64 { return float64(s.flags.load()) }),
	}
	for _, c := range cs {
		if err := s.reg.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if errors.As(err, &already) {
				// A store reopened on the same registry: the first store's collectors stay. Not fatal.
				s.logger.Warn("store: metrics already registered; not registering again", "error", err)
				return nil
			}
			return fmt.Errorf("store: register metrics: %w", err)
		}
	}
	return nil
}
