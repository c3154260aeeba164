package codec

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// rocketMQPayload wraps a ROCKETMQ header (and body) in a DecodeCommand payload.
func rocketMQPayload(header []byte, body []byte) []byte {
	p := binary.BigEndian.AppendUint32(nil, 1<<24|uint32(len(header)))
	p = append(p, header...)
	return append(p, body...)
}

// goldenRocketMQRequest is a SEND_MESSAGE_V2 request header from a Go-language client,
// written out byte by byte.
var goldenRocketMQRequest = []byte{
	0x01, 0x36, // code 310
	0x09,       // language GO
	0x01, 0x3D, // version 317
	0x00, 0x00, 0x00, 0x07, // opaque 7
	0x00, 0x00, 0x00, 0x00, // flag 0
	0x00, 0x00, 0x00, 0x00, // remark length 0
	0x00, 0x00, 0x00, 0x11, // ext length 17
	0x00, 0x01, 'a', 0x00, 0x00, 0x00, 0x02, 'P', 'G', // a=PG
	0x00, 0x01, 'b', 0x00, 0x00, 0x00, 0x01, 'T', // b=T
}

// goldenRocketMQResponse is a response with a remark and two fields.
var goldenRocketMQResponse = []byte{
	0x00, 0x00, // code 0
	0x00,       // language JAVA
	0x01, 0x99, // version 409 (V4_9_8)
	0x00, 0x00, 0x00, 0x07, // opaque 7
	0x00, 0x00, 0x00, 0x01, // flag: response
	0x00, 0x00, 0x00, 0x02, 'O', 'K', // remark
	0x00, 0x00, 0x00, 0x1E, // ext length 30
	0x00, 0x05, 'm', 's', 'g', 'I', 'd', 0x00, 0x00, 0x00, 0x02, 'A', 'B', // 13
	0x00, 0x07, 'q', 'u', 'e', 'u', 'e', 'I', 'd', 0x00, 0x00, 0x00, 0x04, '-', '1', 0x01, 0x02, // 17
}

func TestRocketMQGolden(t *testing.T) {
	body := []byte{0xCA, 0xFE}
	c, err := DecodeCommand(rocketMQPayload(goldenRocketMQRequest, body))
	require.NoError(t, err)
	require.Equal(t, &RemotingCommand{
		Code: 310, Language: LanguageGo, Version: 317, Opaque: 7,
		ExtFields:     map[string]string{"a": "PG", "b": "T"},
		Body:          body,
		SerializeType: SerializeRocketMQ,
	}, c)
	frame, err := c.AppendFrame(nil)
	require.NoError(t, err)
	require.Equal(t, uint32(4+len(goldenRocketMQRequest)+2), binary.BigEndian.Uint32(frame))
	require.Equal(t, rocketMQPayload(goldenRocketMQRequest, body), frame[4:], "re-encodes byte-identically")

	c, err = DecodeCommand(rocketMQPayload(goldenRocketMQResponse, nil))
	require.NoError(t, err)
	require.Equal(t, &RemotingCommand{
		Code: 0, Language: LanguageJava, Version: 409, Opaque: 7, Flag: FlagResponse, Remark: "OK",
		ExtFields:     map[string]string{"msgId": "AB", "queueId": "-1\x01\x02"},
		SerializeType: SerializeRocketMQ,
	}, c)
	frame, err = c.AppendFrame(nil)
	require.NoError(t, err)
	require.Equal(t, rocketMQPayload(goldenRocketMQResponse, nil), frame[4:])

	// The response to a ROCKETMQ request is ROCKETMQ too.
	resp := NewResponse(c, ResponseSuccess, "OK")
	resp.SetExt("queueId", "-1\x01\x02")
	resp.SetExt("msgId", "AB")
	frame, err = resp.AppendFrame(nil)
	require.NoError(t, err)
	require.Equal(t, rocketMQPayload(goldenRocketMQResponse, nil), frame[4:])
}

func TestRocketMQRoundTrip(t *testing.T) {
	cmds := []*RemotingCommand{
		{SerializeType: SerializeRocketMQ},
		{SerializeType: SerializeRocketMQ, Code: -32768, Version: 32767, Language: 250, Opaque: -1, Flag: -1,
			Remark: "\xff\x00 not utf-8", ExtFields: map[string]string{"": "", "k": strings.Repeat("v", 70000)}},
		{SerializeType: SerializeRocketMQ, Code: 32767, Version: -32768, Body: []byte("body")},
	}
	for _, want := range cmds {
		frame, err := want.AppendFrame(nil)
		require.NoError(t, err)
		got, err := DecodeCommand(frame[4:])
		require.NoError(t, err)
		requireSameCommand(t, want, got)
	}
}

func TestRocketMQEncodeLimits(t *testing.T) {
	for _, c := range []*RemotingCommand{
		{SerializeType: SerializeRocketMQ, Code: int32(RequestPopMessage)},
		{SerializeType: SerializeRocketMQ, Code: 32768},
		{SerializeType: SerializeRocketMQ, Code: -32769},
		{SerializeType: SerializeRocketMQ, Version: 40000},
		{SerializeType: SerializeRocketMQ, ExtFields: map[string]string{strings.Repeat("k", 32768): "v"}},
	} {
		dst := []byte("keep")
		out, err := c.AppendFrame(dst)
		require.ErrorIs(t, err, ErrHeaderRocketMQ)
		require.Equal(t, "keep", string(out), "dst unchanged on error")
	}
	// The same POP code is fine in JSON.
	c := &RemotingCommand{Code: int32(RequestPopMessage)}
	_, err := c.AppendFrame(nil)
	require.NoError(t, err)
}

func TestRocketMQDecodeErrors(t *testing.T) {
	valid := goldenRocketMQResponse
	mutate := func(f func(b []byte) []byte) []byte {
		return f(append([]byte(nil), valid...))
	}
	tests := []struct {
		name   string
		header []byte
	}{
		{"empty", nil},
		{"20 bytes", valid[:20]},
		{"negative remark length", mutate(func(b []byte) []byte { b[13] = 0x80; return b })},
		{"remark length past the end", mutate(func(b []byte) []byte { b[16] = 0x7F; return b })},
		{"remark length leaves no ext length", mutate(func(b []byte) []byte { b[16] = byte(len(b) - 17 - 3); return b })},
		{"negative ext length", mutate(func(b []byte) []byte { b[19] = 0xFF; return b })},
		{"ext length past the end", mutate(func(b []byte) []byte { b[22]++; return b })},
		{"ext length short of the end", mutate(func(b []byte) []byte { b[22]--; return b })},
		{"trailing byte", append(append([]byte(nil), valid...), 0)},
		{"negative key length", mutate(func(b []byte) []byte { b[23] = 0x80; return b })},
		{"key length past the area", mutate(func(b []byte) []byte { b[24] = 0x40; return b })},
		{"negative value length", mutate(func(b []byte) []byte { b[30] = 0x80; return b })},
		{"value length past the area", mutate(func(b []byte) []byte { b[33] = 0x40; return b })},
		{"torn value length", func() []byte {
			b := append([]byte(nil), valid[:23]...)
			b = append(b, 0x00, 0x01, 'k', 0x00, 0x00)
			binary.BigEndian.PutUint32(b[19:], 5)
			return b
		}()},
		{"torn key length", func() []byte {
			b := append([]byte(nil), valid[:23]...)
			b = append(b, 0x00)
			binary.BigEndian.PutUint32(b[19:], 1)
			return b
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeCommand(rocketMQPayload(tt.header, nil))
			require.ErrorIs(t, err, ErrHeaderRocketMQ)
		})
	}
	// Every truncation of a valid header fails cleanly.
	for i := 0; i < len(valid); i++ {
		_, err := DecodeCommand(rocketMQPayload(valid[:i], nil))
		require.ErrorIs(t, err, ErrHeaderRocketMQ, "prefix %d", i)
	}
}

func TestRocketMQDecodeAllocs(t *testing.T) {
	payload := rocketMQPayload(goldenRocketMQResponse, nil)
	var c RemotingCommand
	allocs := testing.AllocsPerRun(200, func() {
		if err := DecodeCommandInto(&c, payload); err != nil {
			panic(err)
		}
	})
	require.LessOrEqual(t, allocs, 1.0, "one string for all header strings")
}
