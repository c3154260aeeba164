package ha

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// ClientConfig configures a slave's HA client.
type ClientConfig struct {
	// MasterAddr is haMasterAddress: the master's HA "ip:port". Empty: learnt later through SetMasterAddr
	// (from the name servers' register responses).
	MasterAddr string
	// HeartbeatInterval (haSendHeartbeatInterval, 5 s): a report goes out at least this often.
	HeartbeatInterval time.Duration
	// HousekeepingInterval (haHousekeepingInterval, 20 s): with nothing read from the master for this
	// long (it sends a heartbeat every HeartbeatInterval), the connection is closed and made again.
	HousekeepingInterval time.Duration
	// ReconnectInterval: the pause after a failed connect, or while no master address is known (5 s).
	ReconnectInterval time.Duration
	// DialTimeout bounds a connect (3 s).
	DialTimeout time.Duration
	// Handshake, when set, starts every connection with the epoch handshake of controller mode
	// (handshake.go) instead of a 4.x report. nil: 4.x replication.
	Handshake *ClientHandshake
}

// ClientHandshake is what a controller-mode slave says of itself, and what it does when told to truncate.
type ClientHandshake struct {
	// BrokerID is this replica's brokerId (the master tracks its acknowledgements by it).
	BrokerID int64
	// Epochs is this replica's epoch file: sent to the master, and replaced by the master's entries when
	// the master lets it follow.
	Epochs *EpochFile
	// OnTruncate runs (on the client's goroutine) when the master says this replica holds a tail it does
	// not: the owner truncates the CommitLog to offset (reopening the store with TruncateCommitLog) and
	// starts a new client. The client stops after calling it.
	OnTruncate func(offset int64)
}

// DefaultClientConfig is RocketMQ's defaults (DefaultSettings) with masterAddr.
func DefaultClientConfig(masterAddr string) ClientConfig {
	s := DefaultSettings()
	s.HAMasterAddress = masterAddr
	return s.ClientConfig()
}

// Validate names the first bad field.
func (c ClientConfig) Validate() error {
	switch {
	case c.HeartbeatInterval <= 0:
		return fmt.Errorf("ha: haSendHeartbeatInterval = %v, want > 0", c.HeartbeatInterval)
	case c.HousekeepingInterval <= c.HeartbeatInterval:
		return fmt.Errorf("ha: haHousekeepingInterval = %v, want > haSendHeartbeatInterval (%v)",
			c.HousekeepingInterval, c.HeartbeatInterval)
	case c.ReconnectInterval <= 0 || c.DialTimeout <= 0:
		return fmt.Errorf("ha: reconnect interval %v and dial timeout %v must be > 0", c.ReconnectInterval, c.DialTimeout)
	}
	return nil
}

// Client is the slave side (RocketMQ's HAClient): it connects to the master's HA port, reports its
// CommitLog end, and appends every frame's bytes at the same physical offset. After any failure it closes
// the connection, reconnects and reports its end again, so replication resumes where the slave's CommitLog
// ends. Safe for concurrent use.
//
// Reports follow RocketMQ's HAClient (4.9 HAService.HAClient, 5.x DefaultHAClient): one after every frame
// whose bytes moved the CommitLog end past the last report (reportSlaveMaxOffsetPlus), none for a heartbeat
// frame, and one whenever no report was written for HeartbeatInterval (isTimeToReportOffset).
//
// Unlike RocketMQ, whose first report waits one heartbeat interval (5 s) after the connect, the first
// report goes out at once: a master (Java's too) starts the transfer on the first report, so waiting only
// delays catching up.
type Client struct {
	cfg    ClientConfig
	log    SlaveLog
	logger *slog.Logger

	masterAddr atomic.Pointer[string]
	addrWake   chan struct{} // cap 1: SetMasterAddr while waiting for an address

	// Counters for tests and metrics.
	connects atomic.Int64
	frames   atomic.Int64
	// connected is true while a session with the master runs (a readiness probe's).
	connected atomic.Bool

	// stopAfterSession ends run after the current session (the master said to truncate).
	stopAfterSession atomic.Bool

	// Tests replace the clock the heartbeat report reads and the ticks that make it look.
	now   func() time.Time
	ticks <-chan time.Time

	mu struct {
		sync.Mutex
		conn   net.Conn
		closed bool
	}
	quit chan struct{}
	done chan struct{}
}

// NewClient makes a client; Start runs it.
func NewClient(cfg ClientConfig, log SlaveLog, logger *slog.Logger) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c := &Client{cfg: cfg, log: log, logger: logger.With("component", "ha"), addrWake: make(chan struct{}, 1),
		now: time.Now, quit: make(chan struct{}), done: make(chan struct{})}
	addr := cfg.MasterAddr
	c.masterAddr.Store(&addr)
	return c, nil
}

// Start connects in the background and keeps connected until Close.
func (c *Client) Start() { go c.run() }

// SetMasterAddr changes the master's HA address (learnt from a register response). It takes effect on
// the next connect; with haMasterAddress configured, the broker does not call it.
func (c *Client) SetMasterAddr(addr string) {
	if old := c.masterAddr.Load(); old != nil && *old == addr {
		return
	}
	c.masterAddr.Store(&addr)
	select {
	case c.addrWake <- struct{}{}:
	default:
	}
}

// MasterAddr is the address the client connects to ("" while unknown).
func (c *Client) MasterAddr() string { return *c.masterAddr.Load() }

// Connects counts the connections made; Frames the frames received (heartbeats included).
func (c *Client) Connects() int64 { return c.connects.Load() }

// Connected reports whether the client is connected to the master now: a session runs, which
// ends when nothing (not even a heartbeat) came from the master for HousekeepingInterval. Reads
// an atomic.
func (c *Client) Connected() bool { return c.connected.Load() }

// Frames counts the transfer frames received.
func (c *Client) Frames() int64 { return c.frames.Load() }

// Close disconnects and stops the client.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.mu.closed = true
	if c.mu.conn != nil {
		_ = c.mu.conn.Close()
	}
	c.mu.Unlock()
	close(c.quit)
	<-c.done
	return nil
}

// run: connect, replicate until the connection fails, pause after a failed connect, repeat.
func (c *Client) run() {
	defer close(c.done)
	for {
		select {
		case <-c.quit:
			return
		default:
		}
		addr := c.MasterAddr()
		var err error
		if addr != "" {
			err = c.session(addr)
			if c.stopAfterSession.Load() {
				return
			}
			if err == nil {
				continue // closed on purpose, or the master went: reconnect at once
			}
			c.logger.Info("ha: connection to the master ended", "master", addr, "reason", err)
		}
		t := time.NewTimer(c.cfg.ReconnectInterval)
		select {
		case <-c.quit:
			t.Stop()
			return
		case <-c.addrWake:
		case <-t.C:
		}
		t.Stop()
	}
}

// session runs one connection: report the CommitLog end at once, then append frames and report after each
// one that moved the end; a reporter reports at least every HeartbeatInterval. It returns nil only when
// closed.
func (c *Client) session(addr string) error {
	nc, err := net.DialTimeout("tcp", addr, c.cfg.DialTimeout)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	if t, ok := c.log.(TailTrimmer); ok {
		// What the last connection left of a record: the master resends it whole from its start.
		if _, _, err := t.TrimPartialRecord(); err != nil {
			_ = nc.Close()
			return fmt.Errorf("cut the partial record at the CommitLog's end: %w", err)
		}
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		_ = nc.Close()
		return nil
	}
	c.mu.conn = nc
	c.mu.Unlock()
	c.connects.Add(1)
	c.connected.Store(true)
	defer c.connected.Store(false)
	c.logger.Info("ha: connected to the master", "master", addr, "maxOffset", c.log.MaxPhyOffset())

	r := &reporter{nc: nc, timeout: c.cfg.HousekeepingInterval, now: c.now}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		_ = nc.Close()
		wg.Wait()
		c.mu.Lock()
		c.mu.conn = nil
		c.mu.Unlock()
	}()
	if c.cfg.Handshake != nil {
		if err := c.handshake(nc, r); err != nil {
			return err
		}
	} else if err := r.report(c.log.MaxPhyOffset()); err != nil {
		return err
	}
	ticks := c.ticks
	if ticks == nil {
		t := time.NewTicker(c.cfg.HeartbeatInterval / 4)
		defer t.Stop()
		ticks = t.C
	}
	wg.Add(1)
	go func() { // the heartbeat report: RocketMQ's HAClient reports once no report went out for the interval
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-ticks:
				if err := r.heartbeat(c.cfg.HeartbeatInterval, c.log.MaxPhyOffset); err != nil {
					_ = nc.Close()
					return
				}
			}
		}
	}()
	err = c.readFrames(nc, r)
	select {
	case <-c.quit:
		return nil
	default:
	}
	return err
}

// errTruncate ends a session whose master told this replica to truncate.
var errTruncate = errors.New("ha: the master says this replica's CommitLog has a tail to truncate")

// handshake runs the slave's half of the epoch handshake. On "follow" it adopts the master's epoch
// entries and counts its CommitLog end as reported; on "truncate" it tells the owner (OnTruncate) and
// stops the client; on "refused" the session ends and is tried again later (an operator may wipe the
// store meanwhile).
func (c *Client) handshake(nc net.Conn, r *reporter) error {
	hs := c.cfg.Handshake
	end := c.log.MaxPhyOffset()
	at := r.clock()
	_ = nc.SetWriteDeadline(time.Now().Add(c.cfg.HousekeepingInterval))
	if _, err := nc.Write(handshake{BrokerID: hs.BrokerID, MaxOffset: end, Entries: hs.Epochs.Entries()}.encode()); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(c.cfg.HousekeepingInterval))
	rep, err := readHandshakeReply(nc)
	if err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	switch rep.Status {
	case HandshakeTruncate:
		c.logger.Warn("ha: this replica holds a tail its master does not: truncating", "offset", end,
			"truncateTo", rep.Offset)
		c.stopAfterSession.Store(true)
		if hs.OnTruncate != nil {
			hs.OnTruncate(rep.Offset)
		}
		return errTruncate
	case HandshakeRefused:
		c.logger.Error("ha: the master shares no epoch with this replica's CommitLog: stop it and wipe its store",
			"offset", end, "epochs", hs.Epochs.Entries(), "masterEpochs", rep.Entries)
		return fmt.Errorf("handshake: %w", ErrSlaveDiverged)
	}
	if err := hs.Epochs.Reset(rep.Entries); err != nil {
		return err
	}
	r.reported.Store(end)
	r.last.Store(at.UnixNano())
	return nil
}

// readFrames appends every frame's body at its offset and, as RocketMQ's HAClient does after each frame
// it appended (reportSlaveMaxOffsetPlus), reports the new end when it is past the last one reported. A
// heartbeat frame moves nothing and is not answered.
func (c *Client) readFrames(nc net.Conn, r *reporter) error {
	br := bufio.NewReaderSize(nc, 256<<10)
	var hdr [FrameHeaderBytes]byte
	for {
		_ = nc.SetReadDeadline(time.Now().Add(c.cfg.HousekeepingInterval))
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		h, err := ParseFrameHeader(hdr[:])
		if err != nil {
			return err
		}
		c.frames.Add(1)
		max := c.log.MaxPhyOffset()
		if max != 0 && max != h.PhyOffset {
			return fmt.Errorf("%w: frame at %d, slave CommitLog ends at %d", ErrOffsetMismatch, h.PhyOffset, max)
		}
		if h.BodySize == 0 {
			continue
		}
		if err := c.log.AppendReplica(h.PhyOffset, int(h.BodySize), br); err != nil {
			return fmt.Errorf("ha: append %d bytes at %d: %w", h.BodySize, h.PhyOffset, err)
		}
		if end := c.log.MaxPhyOffset(); end > r.lastOffset() {
			if err := r.report(end); err != nil {
				return err
			}
		}
	}
}

// reporter writes reports; the frame reader and the heartbeat share it.
type reporter struct {
	nc       net.Conn
	timeout  time.Duration
	now      func() time.Time // nil: time.Now
	mu       sync.Mutex
	buf      [ReportBytes]byte
	last     atomic.Int64 // unix nanoseconds (of now) of the last report written
	reported atomic.Int64 // the offset last reported
}

func (r *reporter) lastOffset() int64 { return r.reported.Load() }

func (r *reporter) clock() time.Time {
	if r.now != nil {
		return r.now()
	}
	return time.Now()
}

func (r *reporter) report(off int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reportLocked(off)
}

func (r *reporter) reportLocked(off int64) error {
	binary.BigEndian.PutUint64(r.buf[:], uint64(off))
	at := r.clock() // before the write: the master may act on the report before Write returns
	_ = r.nc.SetWriteDeadline(time.Now().Add(r.timeout))
	if _, err := r.nc.Write(r.buf[:]); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	r.last.Store(at.UnixNano())
	r.reported.Store(off)
	return nil
}

// heartbeat reports end() if no report was written for interval.
func (r *reporter) heartbeat(interval time.Duration, end func() int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clock().Sub(time.Unix(0, r.last.Load())) < interval {
		return nil
	}
	return r.reportLocked(end())
}
