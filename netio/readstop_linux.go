package netio

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"

	"github.com/panjf2000/gnet/v2"
	"golang.org/x/sys/unix"
)

// readStop turns a gnet connection's read interest off while its next frame waits for the
// request budget (budget.go), and back on once the frame may be read.
//
// Why not simply stop consuming: gnet v2.9.7 keeps reading. On every readable event its
// loop reads up to ReadBufferCap (64 KiB) from the socket, calls OnTraffic, and appends
// whatever OnTraffic left unconsumed to the connection's inbound ring buffer
// (eventloop_unix.go read: `c.inboundBuffer.Write(c.buffer)`), which grows without bound
// (ring.Buffer.grow). Its epoll registration is level-triggered, so a socket with data is
// read again on the next loop iteration: a connection that is not consumed is buffered, in
// full, in the broker's memory, and TCP never pushes back on the peer. gnet has no API to
// suspend reading (no Conn.Pause, no read-stop Action: OnTraffic returns None, Close or
// Shutdown); the request for one was declined upstream (panjf2000/gnet#712, #722).
//
// The alternative within gnet's API, handing the socket out (Conn.Dup, then Close) and
// back in later (EventLoop.Enroll), was rejected: gnet's close writes what is left in its
// outbound buffer with a loop that drops the rest on EAGAIN, it runs OnClose and later
// OnOpen for what is one connection to the handler, and wake-ups queued for the old
// gnet.Conn are dropped, so writes from other goroutines would stall until re-enrolment.
//
// So readStop changes the connection's epoll registration itself, on the connection's
// own loop (the only goroutine that touches that registration, so it never races gnet):
// EPOLL_CTL_MOD with EPOLLIN|EPOLLPRI cleared pauses, with them set again resumes, keeping
// EPOLLOUT when gnet has bytes waiting to be written. While paused, EPOLLRDHUP is on so that
// a peer that leaves is noticed (its FIN arrives only if the frame's bytes before it fit in
// the socket's receive buffer; a reset is always reported). The kernel then holds the peer's
// bytes in the socket's receive buffer and closes the TCP window: backpressure, not
// buffering. This leans on facts about gnet's default (not poll_opt) reactor that are
// checked here at run time rather than assumed:
//
//   - each loop has its own epoll instance holding its connections' sockets: found by
//     reading /proc/self/fdinfo of the process's eventpoll files for the one listing the
//     connection's fd ("tfd:"), once per loop;
//   - the registration is level-triggered and its epoll data is the fd itself
//     (poller_epoll_default.go: EpollEvent{Fd: int32(fd)}), so EPOLL_CTL_MOD with the same
//     data keeps gnet's dispatch working: checked on the fdinfo line ("events:", "data:");
//     an edge-triggered registration or other data (the poll_opt reactor stores a pointer)
//     turns read stop off, with one warning.
//
// gnet itself switches the registration back to reading when its outbound buffer drains
// or a write is left partial (ModRead/ModReadWrite); the next OnTraffic then pauses again,
// so a waiting connection reads at most one ReadBufferCap per such write.
//
// Without read stop (not found, or not Linux: readstop_other.go) a waiting connection is
// still not consumed: gnet buffers what its peer sends, as before the budget existed.
type readStop struct {
	log *slog.Logger

	mu struct {
		sync.Mutex
		epoll    map[gnet.EventLoop]int // each loop's epoll fd
		disabled bool                   // discovery failed once: never try again
	}
}

func newReadStop(log *slog.Logger) *readStop {
	r := &readStop{log: log}
	r.mu.epoll = make(map[gnet.EventLoop]int)
	return r
}

// pause stops gc's read events. It reports false when read stop is not available (gc keeps
// reading). Call on gc's loop.
func (r *readStop) pause(gc gnet.Conn) bool {
	epfd, ok := r.epollOf(gc)
	if !ok {
		return false
	}
	// EPOLLRDHUP: a peer that goes away while its frame waits is still seen. gnet's processIO
	// closes a connection on an RDHUP without EPOLLIN at once, dropping what it has not
	// written yet; reading the end of the stream would have closed it too, once the frame
	// had its turn.
	var events uint32 = unix.EPOLLRDHUP
	if gc.OutboundBuffered() > 0 {
		events |= unix.EPOLLOUT
	}
	return r.modify(epfd, gc, events)
}

// resume turns gc's read events back on after pause. Call on gc's loop.
func (r *readStop) resume(gc gnet.Conn) {
	epfd, ok := r.epollOf(gc)
	if !ok {
		return
	}
	events := uint32(unix.EPOLLIN | unix.EPOLLPRI) // gnet's ReadEvents
	if gc.OutboundBuffered() > 0 {
		events |= unix.EPOLLOUT
	}
	r.modify(epfd, gc, events)
}

func (r *readStop) modify(epfd int, gc gnet.Conn, events uint32) bool {
	fd := gc.Fd()
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: events, Fd: int32(fd)}); err != nil {
		// The connection is being closed under us (or the epoll is not the one): it keeps
		// whatever registration it had.
		r.log.Debug("netio: read stop: epoll_ctl failed", "fd", fd, "events", events, "err", err)
		return false
	}
	return true
}

// epollOf finds gc's loop's epoll fd, once per loop.
func (r *readStop) epollOf(gc gnet.Conn) (int, bool) {
	loop := gc.EventLoop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.disabled {
		return 0, false
	}
	if epfd, ok := r.mu.epoll[loop]; ok {
		return epfd, true
	}
	epfd, err := findEpoll(gc.Fd())
	if err != nil {
		r.mu.disabled = true
		r.log.Warn("netio: cannot stop reading from connections that wait for the request budget; "+
			"they are buffered in memory instead", "err", err)
		return 0, false
	}
	r.mu.epoll[loop] = epfd
	return epfd, true
}

// findEpoll returns the epoll fd of this process whose interest list holds fd registered
// the way gnet's default reactor registers connections (level-triggered, data = fd).
func findEpoll(fd int) (int, error) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("list /proc/self/fd: %w", err)
	}
	for _, e := range entries {
		epfd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err != nil || target != "anon_inode:[eventpoll]" {
			continue
		}
		events, data, found, err := epollEntry(epfd, fd)
		if err != nil || !found {
			continue
		}
		if events&unix.EPOLLET != 0 || data != uint64(fd) {
			return 0, fmt.Errorf("fd %d is registered in epoll fd %d with events %#x data %#x, not as gnet's "+
				"default reactor registers it (level-triggered, data = fd)", fd, epfd, events, data)
		}
		return epfd, nil
	}
	return 0, fmt.Errorf("fd %d is in no epoll interest list of this process", fd)
}

// epollEntry reads fd's line in /proc/self/fdinfo/<epfd> (fs/eventpoll.c ep_show_fdinfo:
// "tfd: %8d events: %8x data: %16llx ...").
func epollEntry(epfd, fd int) (events uint32, data uint64, found bool, err error) {
	info, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(epfd))
	if err != nil {
		return 0, 0, false, err
	}
	sc := bufio.NewScanner(bytes.NewReader(info))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 6 || string(f[0]) != "tfd:" || string(f[2]) != "events:" || string(f[4]) != "data:" {
			continue
		}
		if tfd, err := strconv.Atoi(string(f[1])); err != nil || tfd != fd {
			continue
		}
		ev, err1 := strconv.ParseUint(string(f[3]), 16, 32)
		d, err2 := strconv.ParseUint(string(f[5]), 16, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false, fmt.Errorf("fdinfo of epoll fd %d: bad line %q", epfd, sc.Text())
		}
		return uint32(ev), d, true, nil
	}
	return 0, 0, false, sc.Err()
}
