package netio

import (
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// closeStrays closes the sockets of connections to the listener at addr that the process still holds
// once a gnet engine has stopped, and returns how many.
//
// gnet v2.9.7 leaks a connection accepted while its event loops exit: the main reactor accepts it and
// hands it to a loop with a low-priority task, and the exiting loop never runs that task, so neither
// OnOpen nor the close at shutdown ever sees the socket. Its client then waits on a connection nobody
// serves until its own timeout (seen as 10 s sends to a broker replaced in the same process, controller
// mode). No gnet option or API reaches those descriptors, so they are found the way the kernel lists
// them: every socket of this process that is connected (has a peer), is not a listener, and whose local
// address is the listener's. Called after the engine stopped and before a listener on the same port can
// exist again, such a socket can belong to no one else.
func closeStrays(addr net.Addr) int {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return 0
	}
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
			continue
		}
		if listening, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || listening != 0 {
			continue
		}
		local, err := unix.Getsockname(fd)
		if err != nil || !sameListenAddr(local, tcp) {
			continue
		}
		if _, err := unix.Getpeername(fd); err != nil {
			continue
		}
		if unix.Close(fd) == nil {
			n++
		}
	}
	return n
}

// sameListenAddr reports whether a connection's local address sa is on the listener tcp (its port, and
// its IP unless the listener is on every address).
func sameListenAddr(sa unix.Sockaddr, tcp *net.TCPAddr) bool {
	var ip net.IP
	var port int
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ip, port = net.IP(a.Addr[:]), a.Port
	case *unix.SockaddrInet6:
		ip, port = net.IP(a.Addr[:]), a.Port
	default:
		return false
	}
	return port == tcp.Port && (tcp.IP == nil || tcp.IP.IsUnspecified() || tcp.IP.Equal(ip))
}
