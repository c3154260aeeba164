package broker

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// Benchmark of transactions (delayed delivery's are in broker/delay).
//
//	go test -run '^$' -bench 'Transaction' -benchmem ./broker/
//
// BenchmarkTransactionCommit16Producers: 16 connections each prepare a half (answer
// awaited) then commit it (END_TRANSACTION, 8 in flight), over loopback.

func BenchmarkTransactionCommit16Producers(b *testing.B) {
	db := benchBroker(b, func(c *Config) { c.CheckTransactionMessage = false })
	createTopic(b, db.b, "BenchTx", 8)
	const producers, endsInFlight = 16, 8
	body := string(bytes.Repeat([]byte("t"), 1024))
	clients := make([]*remotingtest.Conn, producers)
	for i := range clients {
		clients[i] = remotingtest.Dial(b, db.addr)
	}
	var failed atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		failed.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	await := func(c *remotingtest.Conn, opaque int32) *codec.RemotingCommand {
		resp, err := c.TryAwait(opaque, 10*time.Second)
		if err != nil {
			return nil
		}
		return resp
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for p, c := range clients {
		n := b.N / producers
		if p < b.N%producers {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var window []int32
			for i := range n {
				uniq := fmt.Sprintf("TX-%d-%d", p, i)
				half, err := c.TryRequest(sendHalfCmd("BenchTx", int32(p%8), body, "PG", uniq))
				if err != nil {
					fail(err)
					return
				}
				resp := await(c, half)
				if resp == nil || resp.Code != int32(codec.ResponseSuccess) {
					fail(fmt.Errorf("half: %v", resp))
					return
				}
				var h codec.SendMessageResponseHeader
				if err := h.Decode(resp.ExtFields); err != nil {
					fail(err)
					return
				}
				_, off, err := codec.DecodeOffsetMsgID(h.MsgID)
				if err != nil {
					fail(err)
					return
				}
				end, err := c.TryRequest(endTxCmd("PG", h.QueueOffset, off, uniq, codec.SysFlagTransactionCommit, false))
				if err != nil {
					fail(err)
					return
				}
				window = append(window, end)
				if len(window) == endsInFlight {
					if r := await(c, window[0]); r == nil || r.Code != int32(codec.ResponseSuccess) {
						fail(fmt.Errorf("end: %v", r))
						return
					}
					window = window[1:]
				}
			}
			for _, end := range window {
				if r := await(c, end); r == nil || r.Code != int32(codec.ResponseSuccess) {
					fail(fmt.Errorf("end: %v", r))
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	require.Zero(b, failed.Load(), "%v", firstErr.Load())
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "tx/s")
	testutil.EventuallyWithin(b, time.Minute, "every transaction committed once",
		func() bool { return queueTotal(db.b, "BenchTx", 8) == int64(b.N) })
}
