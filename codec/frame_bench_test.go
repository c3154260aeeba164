package codec

import (
	"bytes"
	"testing"
)

// benchSendV2Frame is a realistic SEND_MESSAGE_V2 request frame as a Java producer sends it
// (JSON header, letter keys, properties with KEYS/TAGS/UNIQ_KEY/WAIT) with a 1 KiB body.
func benchSendV2Frame(b *testing.B) []byte {
	req := &RemotingCommand{Code: int32(RequestSendMessageV2), Language: LanguageJava, Version: 479, Opaque: 123456}
	h := SendMessageRequestHeader{ProducerGroup: "please_rename_unique_group_name", Topic: "TopicTest",
		DefaultTopic: "TBW102", DefaultTopicQueueNums: 4, QueueID: 3, SysFlag: 0, BornTimestamp: 1700000000123,
		Properties:        "KEYS\x01order-12345\x02TAGS\x01TagA\x02UNIQ_KEY\x017F0000010001000000000000000A0001\x02WAIT\x01true\x02",
		MaxReconsumeTimes: Some[int32](16), BrokerName: "broker-a"}
	req.ExtFields = map[string]string{}
	h.EncodeV2(req.ExtFields)
	req.Body = bytes.Repeat([]byte("m"), 1024)
	frame, err := req.AppendFrame(nil)
	if err != nil {
		b.Fatal(err)
	}
	return frame
}

// BenchmarkFrameDecodeEncodeSendV2: the per-request codec work of a send — cut the frame,
// decode the command, decode the V2 send header, build and encode the response into a
// reused output buffer. "fresh" allocates a command and response per request (DecodeCommand,
// NewResponse); "recycled" reuses both and their maps (DecodeCommandInto, InitResponse).
func BenchmarkFrameDecodeEncodeSendV2(b *testing.B) {
	frame := benchSendV2Frame(b)
	out := make([]byte, 0, 1024)
	respHeader := SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000012345678", QueueID: 3,
		QueueOffset: 123456789, TransactionID: "7F0000010001000000000000000A0001", MsgRegion: "DefaultRegion",
		TraceOn: Some(true)}

	b.Run("fresh", func(b *testing.B) {
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			n, err := CutFrame(frame, DefaultMaxFrameBytes)
			if err != nil || n != len(frame) {
				b.Fatal(n, err)
			}
			req, err := DecodeCommand(frame[4:n])
			if err != nil {
				b.Fatal(err)
			}
			var h SendMessageRequestHeader
			if err := h.DecodeV2(req.ExtFields); err != nil {
				b.Fatal(err)
			}
			resp := NewResponse(req, ResponseSuccess, "")
			resp.ExtFields = make(map[string]string, 8)
			respHeader.Encode(resp.ExtFields)
			if out, err = resp.AppendFrame(out[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})

	b.Run("recycled", func(b *testing.B) {
		var req, resp RemotingCommand
		var h SendMessageRequestHeader
		b.SetBytes(int64(len(frame)))
		b.ReportAllocs()
		for b.Loop() {
			n, err := CutFrame(frame, DefaultMaxFrameBytes)
			if err != nil || n != len(frame) {
				b.Fatal(n, err)
			}
			if err := DecodeCommandInto(&req, frame[4:n]); err != nil {
				b.Fatal(err)
			}
			if err := h.DecodeV2(req.ExtFields); err != nil {
				b.Fatal(err)
			}
			resp.InitResponse(&req, ResponseSuccess, "")
			if resp.ExtFields == nil {
				resp.ExtFields = make(map[string]string, 8)
			}
			respHeader.Encode(resp.ExtFields)
			if out, err = resp.AppendFrame(out[:0]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkSendHeaderDecodeServer compares a server's two ways to a send's typed header from
// its JSON header, each into a recycled command: "map" decodes into ExtFields and re-reads the
// map (DecodeCommandInto + DecodeV2, as before); "once" keeps the fields as a list and parses
// them straight into the header (DecodeRequestInto + DecodeFrom, what netio and the broker do).
func BenchmarkSendHeaderDecodeServer(b *testing.B) {
	frame := benchSendV2Frame(b)
	payload := frame[4:]
	b.Run("map", func(b *testing.B) {
		var c RemotingCommand
		var h SendMessageRequestHeader
		b.ReportAllocs()
		for b.Loop() {
			c.Reset()
			if err := DecodeCommandInto(&c, payload); err != nil {
				b.Fatal(err)
			}
			if err := h.DecodeV2(c.ExtFields); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("once", func(b *testing.B) {
		var c RemotingCommand
		var h SendMessageRequestHeader
		b.ReportAllocs()
		for b.Loop() {
			c.Reset()
			if err := DecodeRequestInto(&c, payload); err != nil {
				b.Fatal(err)
			}
			if err := h.DecodeFrom(&c, true); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCutFrame: finding frame boundaries in a buffer of 16 back-to-back send frames
// (must be 0 allocs/op).
func BenchmarkCutFrame(b *testing.B) {
	one := benchSendV2Frame(b)
	stream := bytes.Repeat(one, 16)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		for buf := stream; len(buf) > 0; {
			n, err := CutFrame(buf, DefaultMaxFrameBytes)
			if err != nil || n == 0 {
				b.Fatal(n, err)
			}
			buf = buf[n:]
		}
	}
}

// BenchmarkJSONHeaderDecode and BenchmarkJSONHeaderDecodeStdlib compare the hand-written
// decoder with encoding/json on the send header (the reason the former exists).
func BenchmarkJSONHeaderDecode(b *testing.B) {
	frame := benchSendV2Frame(b)
	header := frame[8 : len(frame)-1024]
	var c RemotingCommand
	b.ReportAllocs()
	for b.Loop() {
		clear(c.ExtFields)
		if err := decodeJSONHeader(&c, header); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONHeaderDecodeStdlib(b *testing.B) {
	frame := benchSendV2Frame(b)
	header := frame[8 : len(frame)-1024]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := refDecodeJSONHeader(header); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendHeaderDecodeV2: the second pass of a send's header, from the decoded map into
// the typed header (the map pass that BenchmarkSendHeaderDecodeServer's "once" avoids).
func BenchmarkSendHeaderDecodeV2(b *testing.B) {
	frame := benchSendV2Frame(b)
	req, err := DecodeCommand(frame[4:])
	if err != nil {
		b.Fatal(err)
	}
	var h SendMessageRequestHeader
	b.ReportAllocs()
	for b.Loop() {
		if err := h.DecodeV2(req.ExtFields); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendResponseHeader: the frame header of a single send's SEND_OK as the broker writes it
// (AppendResponseFrameHeader with the six fields of a send answer, into a reused buffer).
func BenchmarkSendResponseHeader(b *testing.B) {
	msgID := []byte("7F00000100002A9F0000000012345678")
	uniq := []byte("7F0000010001000000000000000A0001")
	out := make([]byte, 0, 512)
	b.ReportAllocs()
	var err error
	for i := 0; b.Loop(); i++ {
		fields := [...]Field{StrField("MSG_REGION", "DefaultRegion"), StrField("TRACE_ON", "true"),
			BytesField("msgId", msgID), NumField("queueId", 3), NumField("queueOffset", int64(123456789+i)),
			BytesField("transactionId", uniq)}
		if out, err = AppendResponseFrameHeader(out[:0], int32(i), SerializeJSON, ResponseSuccess, "", fields[:], 0); err != nil {
			b.Fatal(err)
		}
	}
}
