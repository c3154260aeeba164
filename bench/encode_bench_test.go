package bench

import (
	"net/netip"
	"testing"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// BenchmarkEncodeSend measures building one SEND_MESSAGE_V2 frame of a 1 KiB message with
// a tag (the writer's per-message work besides the write itself; tagged sends are encoded
// in full).
func BenchmarkEncodeSend(b *testing.B) {
	cfg := DefaultProducerConfig()
	cfg.Broker = "127.0.0.1:1"
	cfg.Tags = []string{"TagA"}
	enc := newEncoder(&cfg, 0, codec.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), 1, 1))
	buf := make([]byte, 0, 64<<10)
	now := time.Now()
	b.SetBytes(int64(cfg.MessageBytes))
	b.ReportAllocs()
	for b.Loop() {
		enc.bodyOffs = enc.bodyOffs[:0]
		var err error
		if buf, err = enc.appendRequest(buf[:0], 1, 0, 1, now); err != nil {
			b.Fatal(err)
		}
		enc.stamp(buf, now.UnixNano())
	}
}

// BenchmarkEncodeSendTemplated is BenchmarkEncodeSend without tags: the usual load, sent
// from a per-queue template with opaque, bornTimestamp and UNIQ_KEY patched in.
func BenchmarkEncodeSendTemplated(b *testing.B) {
	cfg := DefaultProducerConfig()
	cfg.Broker = "127.0.0.1:1"
	enc := newEncoder(&cfg, 0, codec.NewUniqKeyGenerator(netip.MustParseAddr("127.0.0.1"), 1, 1))
	buf := make([]byte, 0, 64<<10)
	now := time.Now()
	b.SetBytes(int64(cfg.MessageBytes))
	b.ReportAllocs()
	opaque := int32(opaqueBase)
	for b.Loop() {
		enc.bodyOffs = enc.bodyOffs[:0]
		opaque++
		var err error
		if buf, err = enc.appendRequest(buf[:0], opaque, 0, 1, now); err != nil {
			b.Fatal(err)
		}
		enc.stamp(buf, now.UnixNano())
	}
}

// BenchmarkPeekSendResponse measures the reader's per-response work as it is now: code,
// opaque and flag read off the header without decoding it.
func BenchmarkPeekSendResponse(b *testing.B) {
	frame := sendResponseFrame(b, codec.ResponseSuccess, opaqueBase+7)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, _, ok := peekResponse(frame); !ok {
			b.Fatal("peek failed")
		}
	}
}

// BenchmarkDecodeSendResponse measures the reader's per-response work: decoding a send
// response frame as the Java broker writes it.
func BenchmarkDecodeSendResponse(b *testing.B) {
	req := &codec.RemotingCommand{Opaque: 7, SerializeType: codec.SerializeJSON}
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.ExtFields = map[string]string{}
	h := codec.SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000001234", QueueID: 3, QueueOffset: 123456,
		TransactionID: "7F0000010001000000000745BD780001", MsgRegion: "DefaultRegion", TraceOn: codec.Some(true)}
	h.Encode(resp.ExtFields)
	frame, err := resp.AppendFrame(nil)
	if err != nil {
		b.Fatal(err)
	}
	var cmd codec.RemotingCommand
	b.ReportAllocs()
	for b.Loop() {
		if err := codec.DecodeCommandInto(&cmd, frame[4:]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecorderRecord measures recording one latency sample.
func BenchmarkRecorderRecord(b *testing.B) {
	r := NewRecorder(0, nil, false)
	var i int64
	b.ReportAllocs()
	for b.Loop() {
		i++
		r.Record(i, i, 50_000+i%1000, 50_000, 1, 1024)
	}
}
