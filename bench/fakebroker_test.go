package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ringmq/ringmq/codec"
)

// fakeBroker is a tiny RocketMQ-compatible broker and name server on one listener, for
// testing the load generator without the real broker: it stores sent messages per
// queue as CommitLog records and serves them to pulls (with long polling), offsets,
// routes (pointing at itself) and topic creation. Each request runs on its own
// goroutine, so a held pull does not block the connection.
type fakeBroker struct {
	lns  []net.Listener
	addr string // the first listener's: routes point here

	// sendHook, if set, is asked for every send (n counts sends from 1): a non-zero code
	// answers with that code instead of storing; hold delays the answer until the
	// channel is closed.
	sendHook func(n int64) (code codec.ResponseCode, hold <-chan struct{})
	sends    atomic.Int64

	putLatency *prometheus.HistogramVec
	registry   *prometheus.Registry

	mu        sync.Mutex
	topics    map[string]int           // topic → queue count
	queues    map[string][][]byte      // "topic/queue" → records
	wake      map[string]chan struct{} // closed on every put to the queue
	committed map[string]int64         // "group/topic/queue" → offset
	conns     map[net.Conn]struct{}    // open connections
	physical  int64                    // next CommitLog offset
	closed    bool
	wg        sync.WaitGroup
	handlers  sync.WaitGroup
}

func startFakeBroker(addr string) (*fakeBroker, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	lat := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "ringmq_store_put_latency_seconds",
		Help:    "fake put latency",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
	}, []string{})
	lock := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ringmq_store_put_lock_seconds",
		Help:    "fake put-lock time",
		Buckets: prometheus.ExponentialBuckets(1e-6, 4, 12),
	})
	reg.MustRegister(lat, lock)
	b := &fakeBroker{
		addr:       ln.Addr().String(),
		putLatency: lat, registry: reg,
		topics:    map[string]int{autoCreateTemplateTopic: 8},
		queues:    map[string][][]byte{},
		wake:      map[string]chan struct{}{},
		committed: map[string]int64{},
		conns:     map[net.Conn]struct{}{},
	}
	lock.Observe(2e-6)
	b.serveListener(ln)
	return b, nil
}

// addListener serves the same broker on one more address (a name-server port).
func (b *fakeBroker) addListener(addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	b.serveListener(ln)
	return ln.Addr().String(), nil
}

func (b *fakeBroker) serveListener(ln net.Listener) {
	b.mu.Lock()
	b.lns = append(b.lns, ln)
	b.mu.Unlock()
	b.wg.Add(1)
	go b.accept(ln)
}

func (b *fakeBroker) metricsHandler() http.Handler {
	return promhttp.HandlerFor(b.registry, promhttp.HandlerOpts{})
}

func (b *fakeBroker) close() {
	b.mu.Lock()
	b.closed = true
	for c := range b.conns {
		_ = c.Close()
	}
	for _, ch := range b.wake {
		close(ch)
	}
	b.wake = map[string]chan struct{}{}
	lns := b.lns
	b.mu.Unlock()
	for _, ln := range lns {
		_ = ln.Close()
	}
	b.wg.Wait()
	b.handlers.Wait()
}

func (b *fakeBroker) accept(ln net.Listener) {
	defer b.wg.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			_ = nc.Close()
			return
		}
		b.conns[nc] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go b.serveConn(nc)
	}
}

func (b *fakeBroker) serveConn(nc net.Conn) {
	defer b.wg.Done()
	defer func() {
		b.mu.Lock()
		delete(b.conns, nc)
		b.mu.Unlock()
		_ = nc.Close()
	}()
	var wmu sync.Mutex
	reply := func(resp *codec.RemotingCommand) {
		frame, err := resp.AppendFrame(nil)
		if err != nil {
			return
		}
		wmu.Lock()
		_, _ = nc.Write(frame)
		wmu.Unlock()
	}
	fr := codec.NewFrameReader(nc, 0)
	for {
		payload, err := fr.Next()
		if err != nil {
			return
		}
		req, err := codec.DecodeCommand(payload)
		if err != nil {
			return
		}
		req.Body = append([]byte(nil), req.Body...)
		b.handlers.Add(1)
		go func() {
			defer b.handlers.Done()
			resp := b.handle(req)
			if resp != nil && !req.IsOneway() {
				reply(resp)
			}
		}()
	}
}

func (b *fakeBroker) handle(req *codec.RemotingCommand) *codec.RemotingCommand {
	switch codec.RequestCode(req.Code) {
	case codec.RequestGetRouteInfoByTopic:
		return b.route(req)
	case codec.RequestUpdateAndCreateTopic:
		var h codec.UpdateAndCreateTopicRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return codec.NewResponse(req, codec.ResponseInvalidParameter, err.Error())
		}
		b.mu.Lock()
		b.topics[h.Topic] = int(h.WriteQueueNums)
		b.mu.Unlock()
		return codec.NewResponse(req, codec.ResponseSuccess, "")
	case codec.RequestSendMessageV2, codec.RequestSendBatchMessage:
		return b.send(req)
	case codec.RequestPullMessage:
		return b.pull(req)
	case codec.RequestGetMaxOffset, codec.RequestGetMinOffset:
		topic, queue := req.ExtFields["topic"], req.ExtFields["queueId"]
		off := int64(0)
		if req.Code == int32(codec.RequestGetMaxOffset) {
			b.mu.Lock()
			off = int64(len(b.queues[topic+"/"+queue]))
			b.mu.Unlock()
		}
		resp := codec.NewResponse(req, codec.ResponseSuccess, "")
		resp.SetExt("offset", strconv.FormatInt(off, 10))
		return resp
	case codec.RequestQueryConsumerOffset:
		var h codec.QueryConsumerOffsetRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return codec.NewResponse(req, codec.ResponseInvalidParameter, err.Error())
		}
		b.mu.Lock()
		off, ok := b.committed[fmt.Sprintf("%s/%s/%d", h.ConsumerGroup, h.Topic, h.QueueID)]
		b.mu.Unlock()
		if !ok {
			return codec.NewResponse(req, codec.ResponseQueryNotFound, "not found")
		}
		resp := codec.NewResponse(req, codec.ResponseSuccess, "")
		resp.SetExt("offset", strconv.FormatInt(off, 10))
		return resp
	case codec.RequestUpdateConsumerOffset:
		var h codec.UpdateConsumerOffsetRequestHeader
		if err := h.Decode(req.ExtFields); err != nil {
			return codec.NewResponse(req, codec.ResponseInvalidParameter, err.Error())
		}
		b.mu.Lock()
		b.committed[fmt.Sprintf("%s/%s/%d", h.ConsumerGroup, h.Topic, h.QueueID)] = h.CommitOffset
		b.mu.Unlock()
		return codec.NewResponse(req, codec.ResponseSuccess, "")
	}
	return codec.NewResponse(req, codec.ResponseRequestCodeNotSupported, "not supported")
}

func (b *fakeBroker) route(req *codec.RemotingCommand) *codec.RemotingCommand {
	topic := req.ExtFields["topic"]
	b.mu.Lock()
	n, ok := b.topics[topic]
	b.mu.Unlock()
	if !ok {
		return codec.NewResponse(req, codec.ResponseTopicNotExist, "No topic route info in name server for the topic: "+topic)
	}
	rd := &codec.TopicRouteData{
		BrokerDatas: []codec.BrokerData{{BrokerName: "fake-a", Cluster: "FakeCluster", BrokerAddrs: map[int64]string{0: b.addr}}},
		QueueDatas:  []codec.QueueData{{BrokerName: "fake-a", Perm: 6, ReadQueueNums: int32(n), WriteQueueNums: int32(n)}},
	}
	body, err := codec.EncodeTopicRouteData(rd, true)
	if err != nil {
		return codec.NewResponse(req, codec.ResponseSystemError, err.Error())
	}
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.Body = body
	return resp
}

func (b *fakeBroker) send(req *codec.RemotingCommand) *codec.RemotingCommand {
	start := time.Now()
	var h codec.SendMessageRequestHeader
	if err := h.DecodeV2(req.ExtFields); err != nil {
		return codec.NewResponse(req, codec.ResponseInvalidParameter, err.Error())
	}
	n := b.sends.Add(1)
	if b.sendHook != nil {
		code, hold := b.sendHook(n)
		if hold != nil {
			<-hold
		}
		if code != codec.ResponseSuccess {
			return codec.NewResponse(req, code, "injected")
		}
	}
	type item struct{ body, props []byte }
	var items []item
	if req.Code == int32(codec.RequestSendBatchMessage) {
		r := codec.NewBatchReader(req.Body)
		for {
			it, ok, err := r.Next()
			if err != nil {
				return codec.NewResponse(req, codec.ResponseMessageIllegal, err.Error())
			}
			if !ok {
				break
			}
			items = append(items, item{it.Body, it.Properties})
		}
	} else {
		items = []item{{req.Body, []byte(h.Properties)}}
	}
	b.mu.Lock()
	qn, ok := b.topics[h.Topic]
	if !ok {
		qn = int(min(h.DefaultTopicQueueNums, 8))
		b.topics[h.Topic] = qn
	}
	if h.QueueID < 0 || int(h.QueueID) >= qn {
		b.mu.Unlock()
		return codec.NewResponse(req, codec.ResponseInvalidParameter, "queueId out of range")
	}
	key := fmt.Sprintf("%s/%d", h.Topic, h.QueueID)
	first := int64(len(b.queues[key]))
	host := netip.MustParseAddrPort(b.addr)
	for _, it := range items {
		m := codec.Message{
			Topic: h.Topic, QueueID: h.QueueID, QueueOffset: int64(len(b.queues[key])),
			PhysicalOffset: b.physical, BornTimestamp: h.BornTimestamp, BornHost: host,
			StoreTimestamp: time.Now().UnixMilli(), StoreHost: host, Body: it.body, Properties: it.props,
		}
		rec, err := m.AppendRecord(nil)
		if err != nil {
			b.mu.Unlock()
			return codec.NewResponse(req, codec.ResponseMessageIllegal, err.Error())
		}
		b.physical += int64(len(rec))
		b.queues[key] = append(b.queues[key], rec)
	}
	if ch, ok := b.wake[key]; ok {
		close(ch)
		delete(b.wake, key)
	}
	b.mu.Unlock()
	b.putLatency.WithLabelValues().Observe(time.Since(start).Seconds())
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	rh := codec.SendMessageResponseHeader{MsgID: codec.OffsetMsgID(host, 0), QueueID: h.QueueID, QueueOffset: first}
	resp.ExtFields = map[string]string{}
	rh.Encode(resp.ExtFields)
	return resp
}

func (b *fakeBroker) pull(req *codec.RemotingCommand) *codec.RemotingCommand {
	var h codec.PullMessageRequestHeader
	if err := h.Decode(req.ExtFields); err != nil {
		return codec.NewResponse(req, codec.ResponseInvalidParameter, err.Error())
	}
	key := fmt.Sprintf("%s/%d", h.Topic, h.QueueID)
	deadline := time.Now().Add(time.Duration(h.SuspendTimeoutMillis) * time.Millisecond)
	for {
		b.mu.Lock()
		recs := b.queues[key]
		if h.SysFlag&codec.PullSysFlagCommitOffset != 0 {
			b.committed[fmt.Sprintf("%s/%s/%d", h.ConsumerGroup, h.Topic, h.QueueID)] = h.CommitOffset
		}
		maxOff := int64(len(recs))
		if h.QueueOffset < maxOff {
			end := min(maxOff, h.QueueOffset+int64(h.MaxMsgNums))
			var body []byte
			for _, r := range recs[h.QueueOffset:end] {
				body = append(body, r...)
			}
			b.mu.Unlock()
			return b.pullResponse(req, codec.ResponseSuccess, end, maxOff, body)
		}
		if b.closed || h.SysFlag&codec.PullSysFlagSuspend == 0 || !time.Now().Before(deadline) {
			b.mu.Unlock()
			return b.pullResponse(req, codec.ResponsePullNotFound, h.QueueOffset, maxOff, nil)
		}
		ch, ok := b.wake[key]
		if !ok {
			ch = make(chan struct{})
			b.wake[key] = ch
		}
		b.mu.Unlock()
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
	}
}

func (b *fakeBroker) pullResponse(req *codec.RemotingCommand, code codec.ResponseCode, next, maxOff int64, body []byte) *codec.RemotingCommand {
	resp := codec.NewResponse(req, code, "")
	resp.ExtFields = map[string]string{}
	ph := codec.PullMessageResponseHeader{NextBeginOffset: next, MinOffset: 0, MaxOffset: maxOff}
	ph.Encode(resp.ExtFields)
	resp.Body = body
	return resp
}

// stored returns the records of one queue.
func (b *fakeBroker) stored(topic string, queue int) [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([][]byte(nil), b.queues[fmt.Sprintf("%s/%d", topic, queue)]...)
}

// storedTotal counts the records of every queue of topic.
func (b *fakeBroker) storedTotal(topic string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	var n int64
	for q := range b.topics[topic] {
		n += int64(len(b.queues[fmt.Sprintf("%s/%d", topic, q)]))
	}
	return n
}

// serveMetrics serves the fake's /metrics on addr until ctx ends.
func serveMetrics(ctx context.Context, addr string, h http.Handler) (string, func() error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	stop := func() error {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}
	return ln.Addr().String(), stop, nil
}
