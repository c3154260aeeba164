package netio

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/ringmq/ringmq/internal/testutil"
)

// closeStrays closes exactly the connected sockets of the given listener's address that the process
// holds outside any Go object (what gnet leaves behind), and their clients see the connection end.
func TestCloseStraysClosesLeftConnections(t *testing.T) {
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	require.NoError(t, unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, unix.Listen(lfd, 16))
	sa, err := unix.Getsockname(lfd)
	require.NoError(t, err)
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: sa.(*unix.SockaddrInet4).Port}

	other, err := net.Listen("tcp", "127.0.0.1:0") // another listener's connection: left alone
	require.NoError(t, err)
	defer other.Close()
	otherClient, err := net.Dial("tcp", other.Addr().String())
	require.NoError(t, err)
	defer otherClient.Close()
	otherServer, err := other.Accept()
	require.NoError(t, err)
	defer otherServer.Close()

	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", addr.String())
		require.NoError(t, err)
		defer c.Close()
		_, _, err = unix.Accept4(lfd, unix.SOCK_CLOEXEC) // accepted, then forgotten
		require.NoError(t, err)
		clients = append(clients, c)
	}
	require.NoError(t, unix.Close(lfd)) // the engine stopped: its listener is gone

	require.Equal(t, 3, closeStrays(addr))
	for i, c := range clients {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second)))
		_, err := c.Read(make([]byte, 1))
		require.Error(t, err, "client %d", i)
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "client %d: the connection ended, no timeout: %v", i, err)
	}
	_, err = otherServer.Write([]byte("x"))
	require.NoError(t, err, "another listener's connection is untouched")
	require.Zero(t, closeStrays(addr), "nothing left")
}

// Connections made while a server stops are all ended by Stop, in both engines: none is left
// established with nobody serving it (gnet v2.9.7 leaks those its loops had not taken yet; Stop closes
// them, closeStrays).
func TestStopEndsConnectionsMadeWhileStopping(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		s := startServer(t, engine, newTestHandler(), nil)
		addr := s.Addr().String()
		dialed := make(chan net.Conn, 200)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for range 200 {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					return // the listener is gone
				}
				dialed <- c
			}
		}()
		require.True(t, testutil.Poll(waitTimeout, func() bool { return len(dialed) >= 20 }), "the dialer got going")
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		require.NoError(t, s.Stop(ctx))
		<-done
		close(dialed)
		n := 0
		for c := range dialed {
			n++
			// The client speaks first, as a RocketMQ client does. The kernel itself can drop a
			// connection whose handshake raced the listener's close without telling the client
			// (TcpExtListenDrops counts it; the server never had a socket for it): only data
			// from the client draws the reset then. A socket the process still holds takes the
			// byte silently, and the read times out.
			require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
			_, err := c.Write([]byte{0})
			if err == nil {
				_, err = c.Read(make([]byte, 1))
			}
			var ne net.Error
			require.False(t, errors.As(err, &ne) && ne.Timeout(), "connection %d still open after Stop", n)
			c.Close()
		}
		require.Positive(t, n)
	})
}
