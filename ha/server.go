package ha

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// ServerConfig configures the master's HA server (PROTOCOL.md §13.6 for the keys).
type ServerConfig struct {
	// ListenAddr is host:port of haListenPort. Port 0 picks one (tests).
	ListenAddr string
	// TransferBatchSize (haTransferBatchSize, 32 KiB) caps a frame's body while the slave follows
	// closely: a SYNC_MASTER's sends wait for the frame that carries them.
	TransferBatchSize int
	// CatchUpBatchSize (1 MiB; at most MaxFrameBodyBytes, which a Java slave's 4 MiB read buffer takes)
	// caps a frame's body while the slave is behind: each frame that fills its cap doubles the next one's,
	// up to this; one that finds less goes back to TransferBatchSize. The frames are the same (any size
	// up to the rest of a file is valid on the wire); fewer of them cost both sides fewer system calls
	// and wake-ups per byte. 0 or below TransferBatchSize: TransferBatchSize throughout.
	CatchUpBatchSize int
	// HeartbeatInterval (haSendHeartbeatInterval, 5 s): an idle connection sends a heartbeat frame
	// after this long without a frame.
	HeartbeatInterval time.Duration
	// HousekeepingInterval (haHousekeepingInterval, 20 s): a connection that reads no report (or cannot
	// write) for this long is closed.
	HousekeepingInterval time.Duration
	// Epochs, when set, is this master's epoch file: controller mode. Every slave then starts with the
	// epoch handshake (handshake.go) and is told to follow, truncate or stop; a 4.x slave's plain
	// report is refused. nil: 4.x replication, exactly as RocketMQ 4.x.
	Epochs *EpochFile
}

// DefaultServerConfig is RocketMQ's defaults (DefaultSettings).
func DefaultServerConfig(listenAddr string) ServerConfig {
	s := DefaultSettings()
	return s.ServerConfig(listenAddr)
}

// Validate names the first bad field.
func (c ServerConfig) Validate() error {
	switch {
	case c.TransferBatchSize < 1 || c.TransferBatchSize > MaxFrameBodyBytes:
		return fmt.Errorf("ha: haTransferBatchSize = %d, want 1..%d", c.TransferBatchSize, MaxFrameBodyBytes)
	case c.CatchUpBatchSize < 0 || c.CatchUpBatchSize > MaxFrameBodyBytes:
		return fmt.Errorf("ha: catch-up batch size = %d, want 0..%d", c.CatchUpBatchSize, MaxFrameBodyBytes)
	case c.HeartbeatInterval <= 0:
		return fmt.Errorf("ha: haSendHeartbeatInterval = %v, want > 0", c.HeartbeatInterval)
	case c.HousekeepingInterval <= c.HeartbeatInterval:
		return fmt.Errorf("ha: haHousekeepingInterval = %v, want > haSendHeartbeatInterval (%v)",
			c.HousekeepingInterval, c.HeartbeatInterval)
	}
	return nil
}

// idleRecheck bounds how long an idle writer sleeps between looks at the CommitLog, in case a Notify
// was missed (RocketMQ polls every 100 ms; ringmq is woken by Notify and looks again this often only as
// a safety net).
const idleRecheck = 100 * time.Millisecond

// Server is the master side: it accepts slaves on haListenPort and streams the CommitLog to each from the
// offset it reports (RocketMQ's HAService + HAConnection). Two goroutines per slave: a reader of reports and
// a writer of frames. Safe for concurrent use.
type Server struct {
	cfg    ServerConfig
	log    MasterLog
	logger *slog.Logger
	ln     net.Listener

	// acked is push2SlaveMaxOffset: the highest offset any slave reported (monotonic). onAck runs after
	// it moves.
	acked atomic.Int64
	onAck atomic.Pointer[func()]

	// sentFile counts the frame bytes sent with sendfile.
	sentFile atomic.Int64

	// behindDeleted counts the connected slaves whose offset lies in CommitLog files the master deleted.
	behindDeleted atomic.Int32

	// idleWriters counts writers waiting for data: Notify is one atomic load while none waits.
	idleWriters atomic.Int32
	conns       atomic.Pointer[[]*masterConn] // copy on write, read by Notify

	// refused counts slave connections refused as ahead or diverged.
	refused atomic.Int64
	// syncSet is controller mode's SyncStateSet, the master left out (syncstate.go); nil in 4.x mode,
	// where acked is the highest offset any slave reported.
	syncSet atomic.Pointer[[]int64]

	// sentMax is the end of the furthest frame this server has sent to any slave: a slave's offset at or
	// below it may lie inside a record (a frame cut at the batch size), its bytes having come from here.
	sentMax atomic.Int64

	mu struct {
		sync.Mutex
		conns  map[*masterConn]struct{}
		closed bool
		// ahead remembers slaves refused for being ahead of this master (host and offset → the master's
		// end then): once new writes pass that offset, the same report is still a diverged store.
		ahead map[aheadSlave]int64
		// replicas are the controller-mode replicas by brokerId (syncstate.go).
		replicas map[int64]*ReplicaState
		// lastRefusal is each host's last refusal, so that a slave reconnecting with the same refusal
		// logs one ERROR line a minute, not one per attempt.
		lastRefusal map[string]refusal
	}
	wg   sync.WaitGroup
	quit chan struct{}
}

// NewServer listens on cfg.ListenAddr. Call Start to accept slaves.
func NewServer(cfg ServerConfig, log MasterLog, logger *slog.Logger) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", cfg.ListenAddr)
	if err != nil {
		return nil, fmt.Errorf("ha: listen on haListenPort %s: %w", cfg.ListenAddr, err)
	}
	s := &Server{cfg: cfg, log: log, logger: logger.With("component", "ha"), ln: ln, quit: make(chan struct{})}
	s.mu.conns = map[*masterConn]struct{}{}
	s.mu.ahead = map[aheadSlave]int64{}
	s.mu.lastRefusal = map[string]refusal{}
	s.mu.replicas = map[int64]*ReplicaState{}
	s.conns.Store(&[]*masterConn{})
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Start accepts slaves in the background.
func (s *Server) Start() {
	s.wg.Add(1)
	go s.accept()
}

// SetAckListener sets fn to run (on a connection's reader goroutine) each time a slave report raises
// the acknowledged offset. It must not block.
func (s *Server) SetAckListener(fn func()) { s.onAck.Store(&fn) }

// AckedOffset is push2SlaveMaxOffset: the highest CommitLog offset a slave reported having; in controller
// mode the offset every replica of the SyncStateSet holds (syncstate.go).
func (s *Server) AckedOffset() int64 { return s.acked.Load() }

// SlaveCount is the number of connected slaves.
func (s *Server) SlaveCount() int { return len(*s.conns.Load()) }

// SendfileBytes counts the frame bytes sent with sendfile(2) from the CommitLog file.
func (s *Server) SendfileBytes() int64 { return s.sentFile.Load() }

// SlavesBehindDeleted is the number of connected slaves whose CommitLog ends in files this master has
// deleted: they get heartbeats and nothing else until their store is wiped (writeLoop).
func (s *Server) SlavesBehindDeleted() int { return int(s.behindDeleted.Load()) }

// SlavesRefused counts slave connections refused because the slave's CommitLog was ahead of or had
// diverged from this master's.
func (s *Server) SlavesRefused() int64 { return s.refused.Load() }

// RegisterMetrics registers the server's gauges on reg (a broker registers each once).
//
// The broker registers the connected-slave count and the bytes behind itself
// (ringmq_replica_slaves_connected, ringmq_replica_behind_bytes, broker/metrics.go).
//
//	ringmq_replica_acked_offset_bytes       gauge    the highest CommitLog offset a slave acknowledged
//	ringmq_replica_slaves_behind_deleted    gauge    connected slaves whose offset is in deleted CommitLog files
//	ringmq_replica_sendfile_bytes_total     counter  frame bytes sent with sendfile(2) from the CommitLog file
//	ringmq_replica_slaves_refused_total     counter  slave connections refused: CommitLog ahead of or diverged from the master's
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_replica_acked_offset_bytes",
			Help: "The highest CommitLog offset a slave acknowledged (push2SlaveMaxOffset)."},
			func() float64 { return float64(s.AckedOffset()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "ringmq_replica_slaves_behind_deleted",
			Help: "Connected slaves whose CommitLog ends in files the master deleted: they get heartbeats only; wipe their store."},
			func() float64 { return float64(s.SlavesBehindDeleted()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ringmq_replica_sendfile_bytes_total",
			Help: "Transfer frame bytes sent to slaves with sendfile(2), straight from the CommitLog file (catch-up frames)."},
			func() float64 { return float64(s.SendfileBytes()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "ringmq_replica_slaves_refused_total",
			Help: "Slave connections refused because the slave's CommitLog is ahead of or diverged from the master's (wipe that slave's store)."},
			func() float64 { return float64(s.SlavesRefused()) }),
	} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("ha: register metrics: %w", err)
		}
	}
	return nil
}

// Notify tells idle writers that records were published. Cheap enough for every put: one atomic load
// while every writer is busy.
func (s *Server) Notify() {
	if s.idleWriters.Load() == 0 {
		return
	}
	for _, c := range *s.conns.Load() {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// Close stops accepting, closes every slave connection and waits for their goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.mu.closed = true
	conns := make([]*masterConn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	close(s.quit)
	err := s.ln.Close()
	for _, c := range conns {
		c.close()
	}
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.quit:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.logger.Error("ha: accept failed; the HA server stops", "error", err)
			return
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			_ = tc.SetNoDelay(true)
		}
		c := &masterConn{srv: s, nc: nc, wake: make(chan struct{}, 1), reported: make(chan struct{}),
			done: make(chan struct{}), remote: nc.RemoteAddr().String(), brokerID: -1}
		if fl, ok := s.log.(FileLog); ok && sendfileSupported {
			if tc, ok := nc.(*net.TCPConn); ok {
				if sock, err := tc.SyscallConn(); err == nil {
					c.sock, c.fileLog = sock, fl
				}
			}
		}
		s.mu.Lock()
		if s.mu.closed {
			s.mu.Unlock()
			_ = nc.Close()
			return
		}
		s.mu.conns[c] = struct{}{}
		s.publishConnsLocked()
		s.mu.Unlock()
		s.logger.Info("ha: slave connected", "slave", c.remote)
		s.wg.Add(2)
		go c.readLoop()
		go c.writeLoop()
	}
}

// publishConnsLocked refreshes the list Notify reads. Caller holds s.mu.
func (s *Server) publishConnsLocked() {
	list := make([]*masterConn, 0, len(s.mu.conns))
	for c := range s.mu.conns {
		list = append(list, c)
	}
	s.conns.Store(&list)
}

func (s *Server) remove(c *masterConn) {
	s.mu.Lock()
	if _, ok := s.mu.conns[c]; ok {
		delete(s.mu.conns, c)
		s.publishConnsLocked()
	}
	s.mu.Unlock()
}

// raiseAck moves push2SlaveMaxOffset up to off and tells the listener.
func (s *Server) raiseAck(off int64) {
	for {
		cur := s.acked.Load()
		if off <= cur {
			return
		}
		if s.acked.CompareAndSwap(cur, off) {
			break
		}
	}
	if fn := s.onAck.Load(); fn != nil {
		(*fn)()
	}
}

// masterConn is one slave: readLoop takes its reports, writeLoop streams frames to it.
type masterConn struct {
	srv    *Server
	nc     net.Conn
	remote string

	wake      chan struct{} // cap 1: records were published (Notify)
	reported  chan struct{} // closed by the first report
	requested atomic.Int64  // the first report: where the transfer starts
	ackOffset atomic.Int64  // the last report
	// sent is the end of what the slave may hold: its first report, raised before each frame is written.
	// A later report past it claims bytes the master never sent.
	sent atomic.Int64
	// brokerID is the slave's brokerId from the epoch handshake (-1 for a 4.x slave); set before
	// reported is closed.
	brokerID int64

	// sock and fileLog are set when frames can go out with sendfile (sendFrame): a TCP connection on
	// Linux and a MasterLog that is a FileLog.
	sock    syscall.RawConn
	fileLog FileLog

	closeOnce sync.Once
	done      chan struct{} // closed by close
}

func (c *masterConn) close() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.nc.Close()
		c.srv.remove(c)
	})
}

func (c *masterConn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// readLoop reads the slave's reports until the connection fails: the first fixes where the transfer
// starts, once admit has accepted it; each raises the acknowledged offset. A report past what was sent
// closes the connection; a refused slave's report is never counted as an acknowledgement.
func (c *masterConn) readLoop() {
	defer c.srv.wg.Done()
	defer c.close()
	var buf [ReportBytes]byte
	first := true
	if c.srv.cfg.Epochs != nil {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.HousekeepingInterval))
		off, ok := c.handshake()
		if !ok {
			return
		}
		first = false
		c.startAt(off)
		c.srv.replicaReport(c, off)
		defer c.srv.replicaGone(c)
	}
	for {
		_ = c.nc.SetReadDeadline(time.Now().Add(c.srv.cfg.HousekeepingInterval))
		off, err := readReport(c.nc, &buf)
		if err != nil {
			if !c.isClosed() {
				c.srv.logger.Info("ha: slave connection closed", "slave", c.remote, "reason", err)
			}
			return
		}
		if first {
			if c.srv.admit(c.remote, off) != nil {
				return
			}
			first = false
			c.startAt(off)
		} else if sent := c.sent.Load(); off > sent {
			c.srv.refuse(c.remote, off, c.srv.log.MaxPhyOffset(), fmt.Errorf("%w: it reported offset %d, but was sent bytes up to %d only",
				ErrSlaveDiverged, off, sent))
			return
		}
		c.ackOffset.Store(off)
		if c.brokerID >= 0 {
			c.srv.replicaReport(c, off)
		} else {
			c.srv.raiseAck(off)
		}
	}
}

// handshake runs the master's half of the epoch handshake and returns where the transfer starts; ok is
// false when the connection is to close (a bad handshake, or a slave told to truncate or stop).
func (c *masterConn) handshake() (off int64, ok bool) {
	srv := c.srv
	var magic [8]byte
	if _, err := io.ReadFull(c.nc, magic[:]); err != nil {
		srv.logger.Info("ha: slave connection closed before its handshake", "slave", c.remote, "reason", err)
		return 0, false
	}
	if v := int64(binary.BigEndian.Uint64(magic[:])); v != handshakeMagic {
		srv.refuse4x(c.remote, v)
		return 0, false
	}
	h, err := readHandshakeBody(c.nc)
	if err != nil {
		srv.logger.Warn("ha: closing a slave whose handshake does not parse", "slave", c.remote, "error", err)
		return 0, false
	}
	max := srv.log.MaxPhyOffset()
	rep := answerHandshake(h, srv.cfg.Epochs.Entries(), max)
	_ = c.nc.SetWriteDeadline(time.Now().Add(srv.cfg.HousekeepingInterval))
	if _, err := c.nc.Write(rep.encode()); err != nil {
		srv.logger.Info("ha: handshake answer to slave failed", "slave", c.remote, "error", err)
		return 0, false
	}
	switch rep.Status {
	case HandshakeTruncate:
		srv.logger.Warn("ha: slave holds a tail this master does not; it truncates and connects again",
			"slave", c.remote, "brokerId", h.BrokerID, "slaveOffset", h.MaxOffset, "truncateTo", rep.Offset,
			"masterOffset", max)
		return 0, false
	case HandshakeRefused:
		srv.refuse(c.remote, h.MaxOffset, max, fmt.Errorf("%w: brokerId %d shares no epoch with this master (slave epochs %v, "+
			"master epochs %v)", ErrSlaveDiverged, h.BrokerID, h.Entries, rep.Entries))
		return 0, false
	}
	c.brokerID = h.BrokerID
	srv.logger.Info("ha: slave follows after the epoch handshake", "slave", c.remote, "brokerId", h.BrokerID,
		"offset", rep.Offset)
	return rep.Offset, true
}

// refuse4x refuses a slave that did not start with the epoch handshake in controller mode.
func (s *Server) refuse4x(remote string, firstWord int64) {
	err := fmt.Errorf("%w: controller mode needs the epoch handshake, and this slave sent a 4.x report "+
		"(or another protocol)", ErrSlaveDiverged)
	s.refuse(remote, firstWord, s.log.MaxPhyOffset(), err)
}

// startAt records the slave's first report (or handshake): the transfer starts there, and the writer
// may begin.
func (c *masterConn) startAt(off int64) {
	c.sent.Store(off)
	c.ackOffset.Store(off)
	c.requested.Store(off)
	close(c.reported)
}

// aheadSlave is a slave refused for being ahead: its host and the offset it reported.
type aheadSlave struct {
	host   string
	offset int64
}

// aheadSlavesMax bounds what the server remembers of slaves refused for being ahead.
const aheadSlavesMax = 1024

// refusal is a host's last refusal: its reason and when it was logged at ERROR.
type refusal struct {
	reason string
	logged time.Time
}

// admit decides whether a slave that first reported offset may be served from there. It may when the
// offset is 0 (a new slave: it starts at the master's last file), lies in files this master deleted
// (writeLoop tells the operator), or is at or below the furthest byte this server has sent (its bytes
// came from here, even when a frame cut a record), or else is where one of the master's records starts
// (bytes from this master before a restart: a slave following closely holds whole records, and a ringmq
// slave cuts a torn last record before it reports, a Java slave when it restarts) — in each case unless
// the slave was found ahead of the master at that offset before. A slave ahead of the master, or past
// what this server sent and inside a record, holds bytes the master does not (a master that lost a tail
// its slave kept, then wrote past it): served from there, it would get the master's bytes spliced into
// the middle of its own.
func (s *Server) admit(remote string, off int64) error {
	host := remote
	if h, _, err := net.SplitHostPort(remote); err == nil {
		host = h
	}
	max := s.log.MaxPhyOffset()
	var err error
	switch {
	case off > max:
		s.mu.Lock()
		if len(s.mu.ahead) >= aheadSlavesMax {
			for k := range s.mu.ahead {
				delete(s.mu.ahead, k)
				break
			}
		}
		s.mu.ahead[aheadSlave{host, off}] = max
		s.mu.Unlock()
		err = fmt.Errorf("%w: slave offset %d, master offset %d", ErrReportAhead, off, max)
	case off == 0 || off < s.log.MinPhyOffset():
	default:
		s.mu.Lock()
		then, wasAhead := s.mu.ahead[aheadSlave{host, off}]
		s.mu.Unlock()
		switch {
		case wasAhead:
			err = fmt.Errorf("%w: slave offset %d was ahead of this master (its offset was %d); the master has "+
				"written past it since (offset %d), so the bytes before it may differ", ErrSlaveDiverged, off, then, max)
		case off > s.sentMax.Load() && !s.log.IsRecordStart(off):
			err = fmt.Errorf("%w: slave offset %d is not where a record of this master's CommitLog starts "+
				"(master offset %d), and this master did not send it that far. A ringmq slave cuts a torn last "+
				"record before it reports; a Java slave cuts it when it restarts", ErrSlaveDiverged, off, max)
		}
	}
	if err != nil {
		s.refuse(remote, off, max, err)
	}
	return err
}

// refuse counts a refused slave and logs it: one ERROR line naming both offsets (the master's as the
// decision saw it), repeated at most once a minute while the same slave keeps coming back with the same
// offset.
func (s *Server) refuse(remote string, off, masterOff int64, err error) {
	s.refused.Add(1)
	host := remote
	if h, _, e := net.SplitHostPort(remote); e == nil {
		host = h
	}
	reason := fmt.Sprint(off, err)
	now := time.Now()
	s.mu.Lock()
	last := s.mu.lastRefusal[host]
	repeat := last.reason == reason && now.Sub(last.logged) < time.Minute
	if !repeat {
		if len(s.mu.lastRefusal) >= aheadSlavesMax {
			clear(s.mu.lastRefusal)
		}
		s.mu.lastRefusal[host] = refusal{reason: reason, logged: now}
	}
	s.mu.Unlock()
	level := slog.LevelError
	if repeat {
		level = slog.LevelDebug
	}
	s.logger.Log(context.Background(), level, "ha: refusing a slave whose CommitLog is ahead of or diverged from "+
		"the master's; it is not served and its reports count as no acknowledgement: stop it and wipe its store "+
		"(4.x replication never truncates a slave)", "slave", remote, "slaveOffset", off,
		"masterOffset", masterOff, "error", err)
}

// writeLoop streams the CommitLog from the slave's first report: reported 0 means a new slave, which
// starts at the master's last file (RocketMQ sends no older history). Each frame is the header and a view
// of the mapped file (or pool buffer) in one vectored write, or, for a catch-up frame whose bytes are in
// the file, the header and sendfile(2) from it (sendFrame); a frame never crosses a file. While idle it
// waits for Notify, and sends a heartbeat frame after HeartbeatInterval without a frame.
//
// A slave whose offset lies in CommitLog files the master has deleted cannot be served. RocketMQ's
// WriteSocketService finds no data there and sends heartbeats at that offset for as long as the
// connection lasts, neither restarting the slave from the first file kept (which would leave a hole in
// its CommitLog) nor closing (the slave would come back with the same offset). The wire stays the same
// here, so that a Java slave sees what a Java master does, but the operator is told: one error log per
// connection and the ringmq_replica_slaves_behind_deleted gauge, until the slave's store is wiped and it
// starts again from the master's last file.
func (c *masterConn) writeLoop() {
	defer c.srv.wg.Done()
	defer c.close()
	select {
	case <-c.reported:
	case <-c.done:
		return
	}
	cfg, log := &c.srv.cfg, c.srv.log
	next := c.requested.Load()
	if next == 0 {
		max := log.MaxPhyOffset()
		next = max - max%log.FileSize()
	}
	c.srv.logger.Info("ha: transfer starts", "slave", c.remote, "offset", next)
	behindDeleted := false
	defer func() {
		if behindDeleted {
			c.srv.behindDeleted.Add(-1)
		}
	}()
	var hdr [FrameHeaderBytes]byte
	var vec [2][]byte
	lastWrite := time.Now()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	batch, catchUp := cfg.TransferBatchSize, max(cfg.TransferBatchSize, cfg.CatchUpBatchSize)
	for !c.isClosed() {
		fileEnd := next - next%log.FileSize() + log.FileSize()
		want := int(min(int64(batch), fileEnd-next))
		n, err := c.sendFrame(next, want, &hdr, &vec)
		if err != nil {
			c.srv.logger.Info("ha: transfer to slave failed", "slave", c.remote, "error", err)
			return
		}
		if n == want && want == batch {
			batch = min(2*batch, catchUp) // more is waiting: the slave is behind
		} else if n < want {
			batch = cfg.TransferBatchSize // caught up (a frame cut at a file's end says nothing)
		}
		if n > 0 {
			next += int64(n)
			lastWrite = time.Now()
			continue
		}
		if !behindDeleted {
			if first := log.MinPhyOffset(); next < first {
				behindDeleted = true
				c.srv.logger.Error("ha: the slave's CommitLog ends in files this master has deleted; it gets "+
					"heartbeats only (as from RocketMQ) and will not catch up: stop it, wipe its store and start it "+
					"again to replicate from the master's last file", "slave", c.remote, "slaveOffset", next,
					"masterMinOffset", first, "masterMaxOffset", log.MaxPhyOffset())
				c.srv.behindDeleted.Add(1)
			}
		}
		if since := time.Since(lastWrite); since >= cfg.HeartbeatInterval {
			putFrameHeader(hdr[:], next, 0)
			_ = c.nc.SetWriteDeadline(time.Now().Add(cfg.HousekeepingInterval))
			if _, err := c.nc.Write(hdr[:]); err != nil {
				c.srv.logger.Info("ha: heartbeat to slave failed", "slave", c.remote, "error", err)
				return
			}
			lastWrite = time.Now()
			continue
		}
		// Idle: announce it, look once more (a put published between the read above and the
		// announcement found no idle writer to wake), then wait.
		c.srv.idleWriters.Add(1)
		if data, release := log.ReadReplica(next, 1); len(data) > 0 {
			release()
			c.srv.idleWriters.Add(-1)
			continue
		} else if release != nil {
			release()
		}
		timer.Reset(min(idleRecheck, cfg.HeartbeatInterval-time.Since(lastWrite)))
		select {
		case <-c.wake:
		case <-timer.C:
		case <-c.done:
		}
		timer.Stop()
		c.srv.idleWriters.Add(-1)
	}
}

// sendfileMinBytes: frames of at least this many bytes go out with sendfile(2) from the CommitLog file
// when the MasterLog can (FileLog): the catch-up frames, whose bytes are then never copied through user
// memory. Smaller ones, a slave following closely, keep the single vectored write from the mapping: one
// system call where sendfile needs two (header, body), and a SYNC_MASTER's send waits for them.
const sendfileMinBytes = 64 << 10

// sendFrame sends one frame of up to want bytes from next and returns the body's size; 0 when nothing is
// readable there. hdr and vec are the writer's scratch.
func (c *masterConn) sendFrame(next int64, want int, hdr *[FrameHeaderBytes]byte, vec *[2][]byte) (int, error) {
	deadline := time.Now().Add(c.srv.cfg.HousekeepingInterval)
	if c.sock != nil && want >= sendfileMinBytes {
		if file, pos, n, release, ok := c.fileLog.ReadReplicaFile(next, want); ok {
			c.sentTo(next + int64(n))
			putFrameHeader(hdr[:], next, int32(n))
			_ = c.nc.SetWriteDeadline(deadline)
			err := sendFrameFile(c.sock, hdr[:], file, pos, n)
			release()
			if err == nil {
				c.srv.sentFile.Add(int64(n))
			}
			return n, err
		}
	}
	data, release := c.srv.log.ReadReplica(next, want)
	if len(data) == 0 {
		if release != nil {
			release()
		}
		return 0, nil
	}
	c.sentTo(next + int64(len(data)))
	putFrameHeader(hdr[:], next, int32(len(data)))
	vec[0], vec[1] = hdr[:], data
	bufs := net.Buffers(vec[:])
	_ = c.nc.SetWriteDeadline(deadline)
	_, err := bufs.WriteTo(c.nc)
	release()
	vec[1] = nil
	return len(data), err
}

// sentTo records that a frame up to end is about to be written to the slave.
func (c *masterConn) sentTo(end int64) {
	storeMax(&c.sent, end)
	storeMax(&c.srv.sentMax, end)
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
