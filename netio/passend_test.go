package netio

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// passHandler answers nothing in OnRequest: it keeps each request's opaque and answers all of a pass's
// requests in OnPassEnd, recording the order of the calls.
type passHandler struct {
	mu      sync.Mutex
	events  []string
	pending []int32
	starts  []time.Time // PassStarted in each OnRequest and OnPassEnd, in order
}

func (h *passHandler) OnOpen(Conn)         {}
func (h *passHandler) OnClose(Conn, error) {}

func (h *passHandler) OnRequest(c Conn, cmd *codec.RemotingCommand) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, "req")
	h.starts = append(h.starts, c.(PassClock).PassStarted())
	h.pending = append(h.pending, cmd.Opaque)
}

func (h *passHandler) OnPassEnd(c Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, "end")
	h.starts = append(h.starts, c.(PassClock).PassStarted())
	for _, op := range h.pending {
		resp := codec.NewResponse(&codec.RemotingCommand{Opaque: op}, codec.ResponseSuccess, "")
		_ = c.WriteCommand(resp)
	}
	h.pending = h.pending[:0]
}

// sendBurstOfThree starts a server of engine with h and writes it three requests (opaques 1 to 3) in
// one write, then reads their three answers.
func sendBurstOfThree(t *testing.T, engine string, h *passHandler) {
	t.Helper()
	srv := startServer(t, engine, h, nil)
	c := dialRaw(t, srv.Addr())
	var burst []byte
	for op := int32(1); op <= 3; op++ {
		burst = append(burst, frameOf(t, request(codec.RequestHeartBeat, op, nil))...)
	}
	c.Write(burst)
	got := map[int32]bool{}
	for range 3 {
		resp := c.Next()
		require.True(t, resp.IsResponse())
		got[resp.Opaque] = true
	}
	require.Equal(t, map[int32]bool{1: true, 2: true, 3: true}, got)
}

// A PassEnder learns of every pass's end after that pass's requests, on both engines, and what it
// writes there is answered: the std engine makes every frame a pass, gnet a read's frames.
func TestPassEnderSeesEveryPassEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		h := &passHandler{}
		sendBurstOfThree(t, engine, h)
		h.mu.Lock()
		events := append([]string(nil), h.events...)
		h.mu.Unlock()
		require.Equal(t, "end", events[len(events)-1])
		reqs, sinceEnd := 0, 0
		for _, e := range events {
			if e == "req" {
				reqs++
				sinceEnd++
				continue
			}
			require.Positive(t, sinceEnd, "a pass end without a request before it: %v", events)
			sinceEnd = 0
		}
		require.Equal(t, 3, reqs)
		if engine == EngineStd {
			require.Equal(t, []string{"req", "end", "req", "end", "req", "end"}, events)
		}
	})
}

// PassStarted gives every request of a gnet pass, and its pass end, the time that pass's read began
// (between the client's write and its reading the answers); the std engine says nothing (zero).
func TestPassStartedStampsAPass(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		h := &passHandler{}
		before := time.Now()
		sendBurstOfThree(t, engine, h)
		after := time.Now()

		h.mu.Lock()
		events, starts := append([]string(nil), h.events...), append([]time.Time(nil), h.starts...)
		h.mu.Unlock()
		require.Len(t, starts, len(events))
		if engine == EngineStd {
			for _, s := range starts {
				require.True(t, s.IsZero(), "std engine stamped a pass: %v", starts)
			}
			return
		}
		passStart := starts[0]
		for i, s := range starts {
			require.False(t, s.Before(before) || s.After(after), "pass start %v outside [%v, %v]", s, before, after)
			if i > 0 && events[i-1] == "end" { // a new pass (the burst may arrive in more than one read)
				require.False(t, s.Before(passStart), "passes out of order: %v", starts)
				passStart = s
			}
			require.Equal(t, passStart, s, "event %d (%s) of one pass stamped differently: %v", i, events[i], starts)
		}
	})
}
