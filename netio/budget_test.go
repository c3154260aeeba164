package netio

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

// codeUnknown gets a small REQUEST_CODE_NOT_SUPPORTED answer from the test handler: proof
// that a big request was read and handled without echoing megabytes back.
const codeUnknown codec.RequestCode = 1999

func testBudget(limit int64) *requestBudget {
	m, _ := newMetrics(nil, "budget", "none")
	return newRequestBudget(limit, m)
}

func TestRequestBudgetFIFO(t *testing.T) {
	b := testBudget(100)
	var order []string
	waiter := func(name string, n int64) *budgetWaiter {
		return &budgetWaiter{bytes: n, notify: func() { order = append(order, name) }}
	}
	a, big, small := waiter("a", 60), waiter("big", 80), waiter("small", 10)
	require.True(t, b.acquire(a))
	require.True(t, a.granted.Load())
	require.False(t, b.acquire(big))
	// small would fit, but nobody overtakes the head of the queue.
	require.False(t, b.acquire(small))
	require.EqualValues(t, 60, b.inUse())

	b.release(60)
	require.Equal(t, []string{"big", "small"}, order)
	require.True(t, big.granted.Load() && small.granted.Load())
	require.EqualValues(t, 90, b.inUse())
	b.release(80)
	b.release(10)
	require.Zero(t, b.inUse())
}

func TestRequestBudgetCancel(t *testing.T) {
	b := testBudget(100)
	var order []string
	waiter := func(name string, n int64) *budgetWaiter {
		return &budgetWaiter{bytes: n, notify: func() { order = append(order, name) }}
	}
	a, head, next := waiter("a", 50), waiter("head", 90), waiter("next", 40)
	require.True(t, b.acquire(a))
	require.False(t, b.acquire(head))
	require.False(t, b.acquire(next))
	// The head leaves: the one behind it fits and is granted at once.
	require.False(t, b.cancel(head), "never granted")
	require.Equal(t, []string{"next"}, order)
	require.EqualValues(t, 90, b.inUse())
	// A granted waiter that cancels reports its grant, to be released by the caller.
	require.True(t, b.cancel(next))
	b.release(next.bytes)
	b.release(a.bytes)
	require.Zero(t, b.inUse())
}

func TestRequestBudgetFrameCost(t *testing.T) {
	b := testBudget(1 << 20)
	require.EqualValues(t, 100+20, b.frameCost(100, 20), "the frame and its header's copy")
	require.EqualValues(t, 1<<20, b.frameCost(16<<20, 0), "a frame above the budget takes the whole budget")
}

// budgetServer starts a server with a small request budget and its metrics registered.
func budgetServer(t *testing.T, engine string, h Handler, budget int64, mutate func(*Config)) (Server, func(string) float64) {
	t.Helper()
	reg := prometheusRegistry()
	s := startServer(t, engine, h, func(c *Config) {
		c.Registerer = reg
		c.RequestBudgetBytes = budget
		c.MaxFrameBytes = 64 << 20
		if mutate != nil {
			mutate(c)
		}
	})
	return s, func(name string) float64 { return metricValue(t, reg, "ringmq_netio_"+name) }
}

// holdBudget starts a large frame on a new connection without finishing it: the frame is
// admitted, and holds its bytes of the budget until finish sends the rest.
func holdBudget(t *testing.T, s Server, bodyBytes int) (finish func() *codec.RemotingCommand) {
	t.Helper()
	rc := dialRaw(t, s.Addr())
	frame := frameOf(t, request(codeUnknown, 7, payload(bodyBytes, 3)))
	rc.Write(frame[:len(frame)/2])
	return func() *codec.RemotingCommand {
		rc.Write(frame[len(frame)/2:])
		return rc.Next()
	}
}

func TestLargeFrameWaitsForBudget(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		const budget = 1 << 20
		h := newTestHandler()
		s, metric := budgetServer(t, engine, h, budget, nil)
		finishA := holdBudget(t, s, 900<<10)
		testutil.Eventually(t, "the first large frame is admitted before its bytes arrive",
			func() bool { return metric("request_budget_used_bytes") > 900<<10 })

		// A second large frame waits; small frames on other connections do not.
		b := dialRaw(t, s.Addr())
		bBody := payload(600<<10, 5)
		b.Send(request(codeEcho, 8, bBody))
		testutil.Eventually(t, "a frame waiting for the request budget",
			func() bool { return metric("request_budget_waiting_frames") == 1 })
		require.EqualValues(t, 1, metric("request_budget_waits_total"))
		bystander := dialRaw(t, s.Addr())
		bystander.roundTrip(codeEcho, 1, []byte("small frames never wait"))

		// The first frame completes and frees the budget: the second is read and answered.
		resp := finishA()
		require.Equal(t, int32(7), resp.Opaque)
		resp = b.Next()
		require.Equal(t, int32(8), resp.Opaque)
		requireBody(t, bBody, resp.Body)
		testutil.Eventually(t, "the request budget given back, no frame waiting", func() bool {
			return metric("request_budget_used_bytes") == 0 && metric("request_budget_waiting_frames") == 0
		})
	})
}

// TestLargeFrameAboveBudget: a frame bigger than the whole budget is read alone.
func TestLargeFrameAboveBudget(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		s, metric := budgetServer(t, engine, newTestHandler(), 256<<10, nil)
		rc := dialRaw(t, s.Addr())
		rc.roundTrip(codeEcho, 1, payload(2<<20, 1))
		rc.roundTrip(codeEcho, 2, payload(100, 1))
		testutil.Eventually(t, "the request budget given back",
			func() bool { return metric("request_budget_used_bytes") == 0 })
	})
}

// TestBudgetAfterManyLargeFrames: large frames from many connections at once all get
// through a budget that holds few of them, and every byte charged is given back.
func TestBudgetAfterManyLargeFrames(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		s, metric := budgetServer(t, engine, newTestHandler(), 512<<10, nil)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				rc := dialRaw(t, s.Addr())
				for j := range 4 {
					resp := sendRecv(t, rc, request(codeUnknown, int32(j+1), payload((100+50*i)<<10, byte(i))))
					require.Equal(t, int32(j+1), resp.Opaque)
				}
			})
		}
		wg.Wait()
		testutil.Eventually(t, "the request budget given back, no frame waiting", func() bool {
			return metric("request_budget_used_bytes") == 0 && metric("request_budget_waiting_frames") == 0
		})
	})
}

// sendRecv is send + recv for goroutines other than the test's (no FailNow there).
func sendRecv(t *testing.T, rc rawClient, cmd *codec.RemotingCommand) *codec.RemotingCommand {
	if err := rc.TrySend(cmd); err != nil {
		t.Error(err)
		return &codec.RemotingCommand{}
	}
	resp, err := rc.TryNext(waitTimeout)
	if err != nil {
		t.Error(err)
		return &codec.RemotingCommand{}
	}
	return resp
}

// TestCloseWhileWaitingForBudget: a connection that leaves while its frame waits gives its
// place up (gnet: at once, as epoll reports the reset; std: when its turn comes, as the
// reader does not read meanwhile); one that leaves in the middle of an admitted frame gives
// its bytes back. The peers reset their connections: a graceful close would still deliver
// the frame first, its FIN queued behind the bytes the closed TCP window holds back.
func TestCloseWhileWaitingForBudget(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		h := newTestHandler()
		s, metric := budgetServer(t, engine, h, 1<<20, nil)
		finishA := holdBudget(t, s, 900<<10)
		testutil.Eventually(t, "the request budget charged",
			func() bool { return metric("request_budget_used_bytes") > 0 })
		b := dialRaw(t, s.Addr())
		b.Send(request(codeEcho, 8, payload(600<<10, 5)))
		testutil.Eventually(t, "a frame waiting for the request budget",
			func() bool { return metric("request_budget_waiting_frames") == 1 })
		require.NoError(t, b.NetConn().(*net.TCPConn).SetLinger(0))
		require.NoError(t, b.NetConn().Close())
		if engine == EngineGnet {
			testutil.Eventually(t, "no frame waiting for the request budget",
				func() bool { return metric("request_budget_waiting_frames") == 0 })
			require.Error(t, h.nextCloseErr(t), "reset by the peer")
		}
		require.Equal(t, int32(7), finishA().Opaque)
		testutil.Eventually(t, "the request budget given back, no frame waiting", func() bool {
			return metric("request_budget_used_bytes") == 0 && metric("request_budget_waiting_frames") == 0
		})
		if engine == EngineStd {
			require.Error(t, h.nextCloseErr(t), "reset by the peer")
		}

		// Admitted, then cut short by the peer.
		c := dialRaw(t, s.Addr())
		frame := frameOf(t, request(codeEcho, 9, payload(900<<10, 1)))
		c.Write(frame[:len(frame)/3])
		testutil.Eventually(t, "the request budget charged",
			func() bool { return metric("request_budget_used_bytes") > 0 })
		require.NoError(t, c.NetConn().(*net.TCPConn).SetLinger(0))
		require.NoError(t, c.NetConn().Close())
		testutil.Eventually(t, "the request budget given back",
			func() bool { return metric("request_budget_used_bytes") == 0 })
	})
}

// TestLargeFrameTimeout: an admitted frame that does not arrive in time closes its
// connection and frees the budget.
func TestLargeFrameTimeout(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		h := newTestHandler()
		s, metric := budgetServer(t, engine, h, 1<<20, func(c *Config) { c.LargeFrameTimeout = 100 * time.Millisecond })
		rc := dialRaw(t, s.Addr())
		frame := frameOf(t, request(codeEcho, 1, payload(200<<10, 1)))
		rc.Write(frame[:1000]) // and nothing more
		rc.ExpectClosed()
		require.ErrorIs(t, h.nextCloseErr(t), ErrLargeFrameTimeout)
		testutil.Eventually(t, "the request budget given back",
			func() bool { return metric("request_budget_used_bytes") == 0 })
		// A frame that arrives in time is served.
		dialRaw(t, s.Addr()).roundTrip(codeEcho, 2, payload(200<<10, 2))
	})
}

// TestHeaderOverLimitAnswered: a request whose header has a field over its cap is answered
// SYSTEM_ERROR naming the field, without being handled, and the connection goes on; a
// oneway one is dropped silently; a response fails the call it answers.
func TestHeaderOverLimitAnswered(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		h := newTestHandler()
		s, metric := budgetServer(t, engine, h, 64<<20, nil)
		rc := dialRaw(t, s.Addr())
		rc.roundTrip(codeEcho, 1, nil)

		big := request(codeEcho, 2, []byte("body"))
		big.ExtFields["topic"] = strings.Repeat("T", 3<<20)
		rc.Send(big)
		resp := rc.Next()
		require.Equal(t, int32(2), resp.Opaque)
		require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
		require.Contains(t, resp.Remark, "extFields.topic")
		require.Equal(t, int64(1), h.requests.Load(), "not handed to the handler")

		remark := request(codeEcho, 3, nil)
		remark.Remark = strings.Repeat("r", codec.MaxRemarkBytes+1)
		remark.Flag |= codec.FlagOneway
		rc.Send(remark) // no answer
		rc.roundTrip(codeEcho, 4, []byte("still served"))
		require.EqualValues(t, 2, metric("frames_over_header_limit_total"))

		// The server calls the client; the client answers with too many extFields.
		callDone := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			_, err := h.conn(0).Invoke(ctx, codec.NewRequest(codec.RequestCheckTransactionState, nil, nil))
			callDone <- err
		}()
		call := rc.Next()
		answer := codec.NewResponse(call, codec.ResponseSuccess, "")
		for i := range codec.MaxExtFields + 1 {
			answer.SetExt("k"+strconv.Itoa(i), "v")
		}
		rc.Send(answer)
		select {
		case err := <-callDone:
			require.ErrorIs(t, err, codec.ErrHeaderLimit)
		case <-time.After(waitTimeout):
			t.Fatal("call not failed")
		}
	})
}

// TestSharedBudgetAcrossServers: two servers given one Budget (a broker's listenPort and fast port)
// hold at most its bytes between them: a large frame on the second waits for one the first holds,
// and the budget's gauges (the first server's) count both.
func TestSharedBudgetAcrossServers(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		_, err := NewRequestBudget(0)
		require.ErrorIs(t, err, ErrConfig)
		shared, err := NewRequestBudget(1 << 20)
		require.NoError(t, err)
		h := newTestHandler()
		first, metric := budgetServer(t, engine, h, 64<<20, func(c *Config) { c.Budget = shared })
		second, secondMetric := budgetServer(t, engine, h, 64<<20, func(c *Config) {
			c.Name += "-second"
			c.Budget = shared
		})
		finishA := holdBudget(t, first, 900<<10)
		testutil.Eventually(t, "the first server's large frame holds the shared budget",
			func() bool { return shared.InUse() > 900<<10 })

		b := dialRaw(t, second.Addr())
		bBody := payload(600<<10, 5)
		b.Send(request(codeEcho, 8, bBody))
		testutil.Eventually(t, "the second server's large frame waits for the first's bytes",
			func() bool { return metric("request_budget_waiting_frames") == 1 })
		require.EqualValues(t, 1, metric("request_budget_waits_total"))
		require.Zero(t, secondMetric("request_budget_waits_total"), "one set of gauges: the first server's")

		require.Equal(t, int32(7), finishA().Opaque)
		resp := b.Next()
		require.Equal(t, int32(8), resp.Opaque)
		requireBody(t, bBody, resp.Body)
		testutil.Eventually(t, "the shared budget given back", func() bool {
			return shared.InUse() == 0 && metric("request_budget_used_bytes") == 0
		})
	})
}
