package netio

import (
	"bufio"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/internal/testutil"
)

// serverRecvQueue is the number of bytes the kernel holds, unread by the server, on the
// server's end of the connection whose client end is at client (/proc/net/tcp rx_queue).
func serverRecvQueue(t *testing.T, server, client net.Addr) int {
	t.Helper()
	f, err := os.Open("/proc/net/tcp")
	require.NoError(t, err)
	defer f.Close()
	hexPort := func(a net.Addr) string { return strings.ToUpper(strconv.FormatInt(int64(a.(*net.TCPAddr).Port), 16)) }
	port := func(field string) string {
		_, p, _ := strings.Cut(field, ":")
		return strings.TrimLeft(p, "0")
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || port(fields[1]) != hexPort(server) || port(fields[2]) != hexPort(client) {
			continue
		}
		_, rx, _ := strings.Cut(fields[4], ":")
		n, err := strconv.ParseInt(rx, 16, 64)
		require.NoError(t, err)
		return int(n)
	}
	require.NoError(t, sc.Err())
	return -1
}

// TestWaitingConnectionStopsReading: while a large frame waits for the request budget, its
// connection is not read: its bytes stay in the kernel (the server's receive queue fills and
// TCP holds the sender back) instead of piling up in the server's memory. Once the budget
// frees, the frame is read and answered.
func TestWaitingConnectionStopsReading(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		s, metric := budgetServer(t, engine, newTestHandler(), 1<<20, nil)
		finishA := holdBudget(t, s, 900<<10)
		testutil.Eventually(t, "the request budget charged",
			func() bool { return metric("request_budget_used_bytes") > 0 })

		b := dialRaw(t, s.Addr())
		frame := frameOf(t, request(codeUnknown, 8, payload(16<<20, 5)))
		written := make(chan error, 1)
		go func() {
			_, err := b.NetConn().Write(frame)
			written <- err
		}()
		testutil.Eventually(t, "a frame waiting for the request budget",
			func() bool { return metric("request_budget_waiting_frames") == 1 })
		testutil.Eventually(t, "the waiting connection's bytes stay in the kernel",
			func() bool { return serverRecvQueue(t, s.Addr(), b.NetConn().LocalAddr()) >= 64<<10 })

		require.Equal(t, int32(7), finishA().Opaque)
		resp := b.Next()
		require.Equal(t, int32(8), resp.Opaque)
		require.NoError(t, <-written)
		if gs, ok := s.(*gnetServer); ok {
			// gnet read at most a read or two (64 KiB each) of it before reading stopped.
			require.LessOrEqual(t, gs.waitingInboundMax.Load(), int64(256<<10))
		}
		testutil.Eventually(t, "the request budget given back",
			func() bool { return metric("request_budget_used_bytes") == 0 })
	})
}

// TestFindEpoll: the epoll instance holding an fd is found from /proc, and only when the fd
// is registered the way gnet's default reactor registers connections.
func TestFindEpoll(t *testing.T) {
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK))
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	require.NoError(t, err)
	defer unix.Close(epfd)

	_, err = findEpoll(p[0])
	require.Error(t, err, "not registered anywhere")

	require.NoError(t, unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, p[0], &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLPRI, Fd: int32(p[0])}))
	got, err := findEpoll(p[0])
	require.NoError(t, err)
	require.Equal(t, epfd, got)

	require.NoError(t, unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, p[0], &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET, Fd: int32(p[0])}))
	_, err = findEpoll(p[0])
	require.ErrorContains(t, err, "level-triggered", "edge-triggered: not gnet's default registration")

	require.NoError(t, unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, p[0], &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(p[1])}))
	_, err = findEpoll(p[0])
	require.ErrorContains(t, err, "data = fd", "other data: not gnet's default registration")
}
