package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// nullTestHost is the address a listener-less test server names in msgIds and routes.
var nullTestHost = netip.MustParseAddrPort("127.0.0.1:10911")

func newTestNullServer(t testing.TB) *NullServer {
	t.Helper()
	s, err := newNullServer(DefaultNullServerConfig(), nil, nullTestHost)
	require.NoError(t, err)
	return s
}

// nullRequestFrame is a whole request frame (length word included).
func nullRequestFrame(t testing.TB, code codec.RequestCode, opaque int32, ext map[string]string, body []byte, st codec.SerializeType) []byte {
	t.Helper()
	req := newRequest(code, ext, body)
	req.Opaque, req.SerializeType = opaque, st
	frame, err := req.AppendFrame(nil)
	require.NoError(t, err)
	return frame
}

// sendV2Frame is a SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE with batch) frame to queue.
func sendV2Frame(t testing.TB, code codec.RequestCode, opaque, queue int32, body []byte) []byte {
	t.Helper()
	h := codec.SendMessageRequestHeader{ProducerGroup: "g", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4,
		QueueID: queue, BornTimestamp: 1_700_000_000_000, Properties: "UNIQ_KEY\x01AB\x02", Batch: code == codec.RequestSendBatchMessage}
	ext := map[string]string{}
	if code == codec.RequestSendMessage {
		h.Encode(ext)
	} else {
		h.EncodeV2(ext)
	}
	return nullRequestFrame(t, code, opaque, ext, body, codec.SerializeJSON)
}

// feed runs frames through one connection's handler as a single read and returns the answers.
func feed(t testing.TB, s *NullServer, stream []byte) []byte {
	t.Helper()
	c := nullConn{s: s, in: make([]byte, nullReadBytes)}
	c.n = copy(c.in, stream)
	require.Equal(t, len(stream), c.n, "stream fits one read buffer")
	require.NoError(t, c.consume())
	require.Zero(t, c.n, "every frame answered")
	return c.out
}

// jsonResponse is the frame codec's encoder writes for a JSON response with header text
// hdr: the expected bytes, spelled out.
func jsonResponse(hdr string, body string) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(4+len(hdr)+len(body)))
	out = binary.BigEndian.AppendUint32(out, uint32(codec.SerializeJSON)<<24|uint32(len(hdr)))
	return append(append(out, hdr...), body...)
}

func sendOKHeader(opaque int32, msgIDs string, queue int32, offset int64) string {
	return fmt.Sprintf(`{"code":0,"language":"JAVA","version":%d,"opaque":%d,"flag":1,"extFields":{"MSG_REGION":"DefaultRegion","TRACE_ON":"true","msgId":"%s","queueId":"%d","queueOffset":"%d"}}`,
		codec.ServerVersion(), opaque, msgIDs, queue, offset)
}

func TestNullServerAnswersSendsExactly(t *testing.T) {
	s := newTestNullServer(t)
	body := bytes.Repeat([]byte("x"), 100)
	id := func(off int64) string { return codec.OffsetMsgID(nullTestHost, off) }
	require.Equal(t, "7F00000100002A9F0000000000000000", id(0))

	// V2 to queue 3, twice: the offset counts up per queue, the msgId by the bytes "stored".
	got := feed(t, s, append(sendV2Frame(t, codec.RequestSendMessageV2, 7, 3, body), sendV2Frame(t, codec.RequestSendMessageV2, 8, 3, body)...))
	want := append(jsonResponse(sendOKHeader(7, id(0), 3, 0), ""), jsonResponse(sendOKHeader(8, id(100), 3, 1), "")...)
	require.Equal(t, string(want), string(got))

	// The same bytes as the full encoder's response.
	resp := codec.NewResponse(&codec.RemotingCommand{Opaque: 7, SerializeType: codec.SerializeJSON}, codec.ResponseSuccess, "")
	resp.ExtFields = map[string]string{}
	(&codec.SendMessageResponseHeader{MsgID: id(0), QueueID: 3, MsgRegion: "DefaultRegion", TraceOn: codec.Some(true)}).Encode(resp.ExtFields)
	full, err := resp.AppendFrame(nil)
	require.NoError(t, err)
	require.Equal(t, string(full), string(want[:len(full)]))

	// SEND_MESSAGE (V1 keys) to queue 0; a negative queue id (the broker picks) is queue 0 too.
	got = feed(t, s, append(sendV2Frame(t, codec.RequestSendMessage, 9, 0, body), sendV2Frame(t, codec.RequestSendMessageV2, 10, -1, body)...))
	want = append(jsonResponse(sendOKHeader(9, id(200), 0, 0), ""), jsonResponse(sendOKHeader(10, id(300), 0, 1), "")...)
	require.Equal(t, string(want), string(got))

	// A batch of three to queue 3: one msgId per message, the offset of the first, and
	// the queue moves on by three.
	var batch []byte
	var sizes []int
	for i := range 3 {
		before := len(batch)
		batch = codec.AppendBatchItem(batch, 0, bytes.Repeat([]byte{'b'}, 10+i), []byte("k\x01v\x02"))
		sizes = append(sizes, len(batch)-before)
	}
	got = feed(t, s, append(sendV2Frame(t, codec.RequestSendBatchMessage, 11, 3, batch), sendV2Frame(t, codec.RequestSendMessageV2, 12, 3, body)...))
	ids := id(400) + "," + id(400+int64(sizes[0])) + "," + id(400+int64(sizes[0]+sizes[1]))
	want = append(jsonResponse(sendOKHeader(11, ids, 3, 2), ""), jsonResponse(sendOKHeader(12, id(400+int64(len(batch))), 3, 5), "")...)
	require.Equal(t, string(want), string(got))

	// A batch with no well-formed item: MESSAGE_ILLEGAL, and nothing counted.
	got = feed(t, s, sendV2Frame(t, codec.RequestSendBatchMessage, 13, 3, []byte{0, 0, 0, 1, 9}))
	require.Equal(t, string(jsonResponse(fmt.Sprintf(`{"code":13,"language":"JAVA","version":%d,"opaque":13,"flag":1,"remark":"the batch body holds no well-formed message"}`, codec.ServerVersion()), "")), string(got))

	// Oneway: no answer, but the queue moves on.
	oneway := sendV2Frame(t, codec.RequestSendMessageV2, 14, 3, body)
	cmd, err := codec.DecodeCommand(oneway[4:])
	require.NoError(t, err)
	cmd.Flag = codec.FlagOneway
	oneway, err = cmd.AppendFrame(nil)
	require.NoError(t, err)
	require.Empty(t, feed(t, s, oneway))
	require.EqualValues(t, 7, s.offsets[3].Load())

	// A send in the ROCKETMQ serialization goes through the codec and answers in kind.
	h := codec.SendMessageRequestHeader{ProducerGroup: "g", Topic: "T", DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 5}
	ext := map[string]string{}
	h.EncodeV2(ext)
	got = feed(t, s, nullRequestFrame(t, codec.RequestSendMessageV2, 15, ext, body, codec.SerializeRocketMQ))
	r, err := codec.DecodeCommand(got[4:])
	require.NoError(t, err)
	require.Equal(t, codec.SerializeRocketMQ, r.SerializeType)
	require.Equal(t, [3]int32{0, 15, codec.FlagResponse}, [3]int32{r.Code, r.Opaque, r.Flag})
	var sh codec.SendMessageResponseHeader
	require.NoError(t, sh.Decode(r.ExtFields))
	require.Equal(t, codec.SendMessageResponseHeader{MsgID: id(400 + int64(len(batch)) + 200), QueueID: 5, MsgRegion: "DefaultRegion", TraceOn: codec.Some(true)}, sh)
}

func TestNullServerAnswersControlRequests(t *testing.T) {
	s := newTestNullServer(t)
	v := codec.ServerVersion()
	heartbeat := nullRequestFrame(t, codec.RequestHeartBeat, 1, nil, []byte(`{"clientID":"c"}`), codec.SerializeJSON)
	require.Equal(t, string(jsonResponse(fmt.Sprintf(`{"code":0,"language":"JAVA","version":%d,"opaque":1,"flag":1}`, v), "")), string(feed(t, s, heartbeat)))

	pull := nullRequestFrame(t, codec.RequestPullMessage, 2, map[string]string{"topic": "T"}, nil, codec.SerializeJSON)
	require.Equal(t, string(jsonResponse(fmt.Sprintf(`{"code":3,"language":"JAVA","version":%d,"opaque":2,"flag":1,"remark":" request type 11 not supported"}`, v), "")), string(feed(t, s, pull)))

	// A response (flag 1) is not answered.
	resp := nullRequestFrame(t, codec.RequestHeartBeat, 3, nil, nil, codec.SerializeJSON)
	cmd, err := codec.DecodeCommand(resp[4:])
	require.NoError(t, err)
	cmd.Flag = codec.FlagResponse
	resp, err = cmd.AppendFrame(nil)
	require.NoError(t, err)
	require.Empty(t, feed(t, s, resp))

	route := func(topic string, opaque int32) *codec.TopicRouteData {
		ext := map[string]string{}
		(&codec.GetRouteInfoRequestHeader{Topic: topic}).Encode(ext)
		got := feed(t, s, nullRequestFrame(t, codec.RequestGetRouteInfoByTopic, opaque, ext, nil, codec.SerializeJSON))
		r, err := codec.DecodeCommand(got[4:])
		require.NoError(t, err)
		require.Equal(t, [2]int32{0, opaque}, [2]int32{r.Code, r.Opaque})
		rd, err := codec.DecodeTopicRouteData(r.Body)
		require.NoError(t, err)
		return rd
	}
	want := func(queues int32) *codec.TopicRouteData {
		return &codec.TopicRouteData{
			BrokerDatas:       []codec.BrokerData{{BrokerAddrs: map[int64]string{0: "127.0.0.1:10911"}, BrokerName: "null-broker", Cluster: "NullCluster"}},
			FilterServerTable: map[string][]string{},
			QueueDatas:        []codec.QueueData{{BrokerName: "null-broker", Perm: 6, ReadQueueNums: queues, WriteQueueNums: queues}},
		}
	}
	require.Equal(t, want(8), route("TBW102", 4))

	ext := map[string]string{}
	(&codec.UpdateAndCreateTopicRequestHeader{Topic: "T", DefaultTopic: "TBW102", ReadQueueNums: 5, WriteQueueNums: 5, Perm: 6}).Encode(ext)
	got := feed(t, s, nullRequestFrame(t, codec.RequestUpdateAndCreateTopic, 5, ext, nil, codec.SerializeJSON))
	require.Equal(t, string(jsonResponse(fmt.Sprintf(`{"code":0,"language":"JAVA","version":%d,"opaque":5,"flag":1}`, v), "")), string(got))
	require.Equal(t, want(5), route("T", 6))
	require.Equal(t, want(8), route("Other", 7))
}

func TestScanNullRequest(t *testing.T) {
	for _, c := range []struct {
		header string
		want   nullRequest
	}{
		{`{"code":310,"extFields":{"a":"g","e":"12","i":"k\u0001v"},"flag":0,"language":"GO","opaque":77,"version":317}`, nullRequest{310, 77, 0, 12}},
		{`{"code":10,"opaque":1,"extFields":{"queueId":"-1"}}`, nullRequest{10, 1, 0, -1}},
		{`{"code":10,"opaque":1,"extFields":null,"flag":2}`, nullRequest{10, 1, 2, -1}},
		{` { "code" : 10 , "opaque" : 1 , "extFields" : { "x" : {"e":"9"} , "e" : "4" } } `, nullRequest{10, 1, 0, 4}},
	} {
		r, ok := scanNullRequest([]byte(c.header))
		require.True(t, ok, c.header)
		require.Equal(t, c.want, r, c.header)
	}
	for _, bad := range []string{`{}`, `{"code":10}`, `{"code":10,"opaque":1,"extFields":{"e":4}}`, `{"code":10,"opaque":1,"extFields":{"e":"4"}`,
		`{"code":10,"opaque":1,"extFields":["e"]}`, `{"code":10,"opaque":1} x`} {
		_, ok := scanNullRequest([]byte(bad))
		require.False(t, ok, bad)
	}
}

// TestNullServerPartialFrames cuts the same stream at every byte: the answers are the same.
func TestNullServerPartialFrames(t *testing.T) {
	var stream []byte
	for i := range 4 {
		stream = append(stream, sendV2Frame(t, codec.RequestSendMessageV2, int32(i+1), 1, []byte("body"))...)
	}
	want := feed(t, newTestNullServer(t), stream)
	for cut := 1; cut < len(stream); cut++ {
		s := newTestNullServer(t)
		c := nullConn{s: s, in: make([]byte, nullReadBytes)}
		c.n = copy(c.in, stream[:cut])
		require.NoError(t, c.consume())
		c.n += copy(c.in[c.n:], stream[cut:])
		require.NoError(t, c.consume())
		require.Zero(t, c.n)
		require.Equal(t, want, c.out, "cut at %d", cut)
	}
}

func startTestNullServer(t *testing.T) *NullServer {
	t.Helper()
	return startTestNullServerOn(t, NullEngineGoroutine)
}

func startTestNullServerOn(t testing.TB, engine string) *NullServer {
	t.Helper()
	cfg := DefaultNullServerConfig()
	cfg.Engine = engine
	s, err := StartNullServer(cfg, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// readAnswers reads n answers and returns their opaques in order.
func readAnswers(t *testing.T, nc net.Conn, n int) []int32 {
	t.Helper()
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	fr := codec.NewFrameReader(nc, 0)
	var opaques []int32
	for range n {
		payload, err := fr.Next()
		require.NoError(t, err)
		cmd, err := codec.DecodeCommand(payload)
		require.NoError(t, err)
		require.EqualValues(t, codec.ResponseSuccess, cmd.Code)
		opaques = append(opaques, cmd.Opaque)
	}
	return opaques
}

// onEachEngine runs f against a fresh server of each engine and a connection to it.
func onEachEngine(t *testing.T, f func(t *testing.T, s *NullServer, nc net.Conn)) {
	for _, engine := range []string{NullEngineGoroutine, NullEngineGnet} {
		t.Run(engine, func(t *testing.T) {
			s := startTestNullServerOn(t, engine)
			nc, err := net.Dial("tcp", s.Addr())
			require.NoError(t, err)
			defer nc.Close()
			f(t, s, nc)
		})
	}
}

func TestNullServerPipelinesManyFramesInOneWrite(t *testing.T) {
	onEachEngine(t, func(t *testing.T, s *NullServer, nc net.Conn) {
		var stream []byte
		var want []int32
		for i := range 2000 {
			stream = append(stream, sendV2Frame(t, codec.RequestSendMessageV2, int32(i+1), int32(i%4), make([]byte, 64))...)
			want = append(want, int32(i+1))
		}
		_, err := nc.Write(stream)
		require.NoError(t, err)
		require.Equal(t, want, readAnswers(t, nc, len(want)))
		for q := range 4 {
			require.EqualValues(t, 500, s.offsets[q].Load())
		}
	})
}

func TestNullServerBigFrame(t *testing.T) {
	onEachEngine(t, func(t *testing.T, s *NullServer, nc net.Conn) {
		big := sendV2Frame(t, codec.RequestSendMessageV2, 1, 0, bytes.Repeat([]byte{'z'}, 4<<20))
		small := sendV2Frame(t, codec.RequestSendMessageV2, 2, 0, []byte("after"))
		_, err := nc.Write(append(big, small...))
		require.NoError(t, err)
		require.Equal(t, []int32{1, 2}, readAnswers(t, nc, 2))
		require.EqualValues(t, 4<<20+5, s.physical.Load())
	})
}

func TestNullServerMalformedFrameClosesOnlyThatConnection(t *testing.T) {
	onEachEngine(t, func(t *testing.T, s *NullServer, good net.Conn) {
		bad, err := net.Dial("tcp", s.Addr())
		require.NoError(t, err)
		defer bad.Close()
		// A good frame, then a length word below 4: the good one is answered, then the
		// connection closes.
		_, err = bad.Write(append(sendV2Frame(t, codec.RequestSendMessageV2, 1, 0, nil), 0, 0, 0, 1, 9, 9, 9, 9))
		require.NoError(t, err)
		require.Equal(t, []int32{1}, readAnswers(t, bad, 1))
		_, err = io.ReadAll(bad)
		require.NoError(t, err, "EOF: the server closed it")
		_, err = good.Write(sendV2Frame(t, codec.RequestSendMessageV2, 2, 0, nil))
		require.NoError(t, err)
		require.Equal(t, []int32{2}, readAnswers(t, good, 1))
	})
}

// TestNullServerServesMqbenchProduce runs the load generator against it through its name
// server role: the route names every topic (8 queues), of which --queues 6 are used.
func TestNullServerServesMqbenchProduce(t *testing.T) {
	for _, engine := range []string{NullEngineGoroutine, NullEngineGnet} {
		t.Run(engine, func(t *testing.T) {
			s := startTestNullServerOn(t, engine)
			cfg := DefaultProducerConfig()
			cfg.Namesrv, cfg.Topic, cfg.CreateTopic, cfg.Queues = s.Addr(), "NullTopic", true, 6
			cfg.Conns, cfg.Inflight, cfg.MessageBytes = 3, 8, 200
			cfg.Duration, cfg.Count, cfg.Warmup, cfg.DrainTimeout = 0, 3000, 0, 5*time.Second
			p, err := NewProducer(cfg, nil, Hooks{})
			require.NoError(t, err)
			res, err := p.Run(context.Background())
			require.NoError(t, err)
			require.EqualValues(t, 3000, res.Acked)
			require.Zero(t, res.Errors)
			var total int64
			for q := range 6 {
				total += s.offsets[q].Load()
			}
			require.EqualValues(t, 3000, total, "every send counted on one of the topic's 6 queues")
			require.Zero(t, s.offsets[6].Load())
		})
	}
}

func TestNullServerAllocatesNothingPerMessage(t *testing.T) {
	s := newTestNullServer(t)
	var stream []byte
	for i := range 16 {
		stream = append(stream, sendV2Frame(t, codec.RequestSendMessageV2, int32(i+1), int32(i%4), make([]byte, 1024))...)
	}
	c := nullConn{s: s, in: make([]byte, nullReadBytes), out: make([]byte, 0, nullReadBytes)}
	allocs := testing.AllocsPerRun(100, func() {
		c.n = copy(c.in, stream)
		if err := c.consume(); err != nil {
			t.Fatal(err)
		}
		c.out = c.out[:0]
	})
	require.Zero(t, allocs)
}

// BenchmarkNullServerLoopback compares the engines over loopback TCP: 4 connections, each
// writing 16 sends in one write and reading their 16 answers; ns/msg is per message, the
// client's share included (the same for both engines).
func BenchmarkNullServerLoopback(b *testing.B) {
	for _, engine := range []string{NullEngineGoroutine, NullEngineGnet} {
		b.Run(engine, func(b *testing.B) {
			s := startTestNullServerOn(b, engine)
			const conns, batch = 4, 16
			var stream []byte
			for i := range batch {
				stream = append(stream, sendV2Frame(b, codec.RequestSendMessageV2, int32(i+1), int32(i%4), make([]byte, 1024))...)
			}
			ncs := make([]net.Conn, conns)
			for i := range ncs {
				nc, err := net.Dial("tcp", s.Addr())
				require.NoError(b, err)
				defer nc.Close()
				ncs[i] = nc
			}
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for _, nc := range ncs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					fr := codec.NewFrameReader(nc, 0)
					for range b.N / conns {
						if _, err := nc.Write(stream); err != nil {
							b.Error(err)
							return
						}
						for range batch {
							if _, err := fr.Next(); err != nil {
								b.Error(err)
								return
							}
						}
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N/conns*conns*batch), "ns/msg")
		})
	}
}

// BenchmarkNullServerBatch is the null server's cost per message for a batch of 16 sends
// answered from one read (the per-connection loop minus the two system calls).
func BenchmarkNullServerBatch(b *testing.B) {
	s := newTestNullServer(b)
	var stream []byte
	for i := range 16 {
		stream = append(stream, sendV2Frame(b, codec.RequestSendMessageV2, int32(i+1), int32(i%4), make([]byte, 1024))...)
	}
	c := nullConn{s: s, in: make([]byte, nullReadBytes), out: make([]byte, 0, nullReadBytes)}
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		c.n = copy(c.in, stream)
		if err := c.consume(); err != nil {
			b.Fatal(err)
		}
		c.out = c.out[:0]
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16, "ns/msg")
}

// FuzzNullServerFrames: any byte stream, fed in two reads, never panics; every request
// frame the codec accepts before the first framing error is answered once, with its
// opaque, unless it is a response or oneway; a send answered SUCCESS names its queue.
func FuzzNullServerFrames(f *testing.F) {
	f.Add(sendV2Frame(f, codec.RequestSendMessageV2, 1, 3, []byte("body")), 5)
	f.Add(append(sendV2Frame(f, codec.RequestSendMessage, 1, 0, nil), sendV2Frame(f, codec.RequestHeartBeat, 2, 0, nil)...), 40)
	f.Add(sendV2Frame(f, codec.RequestSendBatchMessage, 9, 1, codec.AppendBatchItem(nil, 0, []byte("b"), nil)), 0)
	f.Add(nullRequestFrame(f, codec.RequestGetRouteInfoByTopic, 4, map[string]string{"topic": "T"}, nil, codec.SerializeRocketMQ), 7)
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0}, 3)
	f.Add(jsonResponse(`{"code":310,"opaque":1,"extFields":{"e":"7"}}`, "x"), 11)
	f.Fuzz(func(t *testing.T, stream []byte, cut int) {
		if len(stream) > nullReadBytes {
			return
		}
		s := newTestNullServer(t)
		c := nullConn{s: s, in: make([]byte, nullReadBytes)}
		cut = min(max(cut, 0), len(stream))
		c.n = copy(c.in, stream[:cut])
		err := c.consume()
		if err == nil {
			c.n += copy(c.in[c.n:], stream[cut:])
			err = c.consume()
		}
		// What the codec makes of the same stream, up to the first framing error.
		var want []int32
		sends := map[int32]int32{} // opaque → queue asked
		rest := stream
		for {
			size, ferr := codec.CutFrame(rest, 0)
			if ferr != nil || size == 0 {
				break
			}
			cmd, derr := codec.DecodeCommand(rest[4:size])
			rest = rest[size:]
			if derr != nil {
				// The fast path may answer a send whose header the full decoder refuses;
				// stop comparing here.
				return
			}
			if !cmd.IsResponse() && cmd.Flag&codec.FlagOneway == 0 {
				want = append(want, cmd.Opaque)
				key := "e"
				if codec.RequestCode(cmd.Code) == codec.RequestSendMessage {
					key = "queueId"
				}
				if q, perr := strconv.ParseInt(cmd.ExtFields[key], 10, 32); isSend(cmd.Code) && perr == nil {
					sends[cmd.Opaque] = int32(q)
				}
			}
		}
		var got []int32
		out := c.out
		for len(out) > 0 {
			size, ferr := codec.CutFrame(out, 0)
			require.NoError(t, ferr)
			require.NotZero(t, size, "a whole answer")
			resp, derr := codec.DecodeCommand(out[4:size])
			require.NoError(t, derr)
			require.True(t, resp.IsResponse())
			got = append(got, resp.Opaque)
			if q, ok := sends[resp.Opaque]; ok && resp.Code == int32(codec.ResponseSuccess) {
				require.Equal(t, strconv.Itoa(int(max(q, 0))), resp.ExtFields["queueId"])
			}
			out = out[size:]
		}
		if err == nil {
			require.Equal(t, want, got)
		} else {
			require.LessOrEqual(t, len(got), len(want))
		}
	})
}

// TestNullServerServesTheGoClient: the pinned Apache RocketMQ Go client finds the null
// server as its name server, heartbeats and sends; every send is SEND_OK with the offsets
// counting up on its queue.
func TestNullServerServesTheGoClient(t *testing.T) {
	testutil.SkipInSecondPass(t)
	s := startTestNullServer(t)
	d := goclienttest.Start(t)
	p, err := d.NewProducer(goclient.ProducerOptions{NameServers: []string{s.Addr()}, Group: "null-go", Retries: 0})
	require.NoError(t, err)
	require.NoError(t, p.Start())
	defer func() { require.NoError(t, p.Shutdown()) }()
	perQueue := map[int]int64{}
	for i := range 20 {
		res, err := p.SendSync(context.Background(), primitive.NewMessage("GoTopic", []byte(fmt.Sprintf("m%d", i))))
		require.NoError(t, err)
		require.Equal(t, primitive.SendOK, res.Status)
		require.Equal(t, "null-broker", res.MessageQueue.BrokerName)
		require.Equal(t, perQueue[res.MessageQueue.QueueId], res.QueueOffset, "queue %d", res.MessageQueue.QueueId)
		perQueue[res.MessageQueue.QueueId]++
		require.NotEmpty(t, res.OffsetMsgID)
	}
}
