package codec

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
)

// The pinned Go client (rocketmq-client-go/v2, internal/remote/codec.go and
// remote_client.go) cannot be imported (internal package), so this file mirrors what its
// reader does with a frame, written from reading that source:
//
//   - it reads a 4-byte big-endian int32 length, then exactly that many bytes;
//   - header word: headerLength = word & 0xFFFFFF, serialize type = word >> 24 (0 JSON,
//     1 ROCKETMQ, anything else an error); body = the bytes after the header;
//   - JSON: jsoniter.Unmarshal into a struct {code int16, language (custom decoder that
//     accepts anything), version int16, opaque int32, flag int32, remark string,
//     extFields map[string]string} — so code and version must fit int16 and every
//     extFields value must be a JSON string (appendix B);
//   - ROCKETMQ: int16 code, byte language, int16 version, int32 opaque, int32 flag, int32
//     remark length + remark, int32 ext length + entries (int16 key length, key, int32
//     value length, value).
//
// The tests below encode ringmq's responses and broker→client requests and decode them
// this way.

type goClientLanguage byte

func (l *goClientLanguage) UnmarshalJSON([]byte) error { return nil } // accepts anything, like the client

func (l goClientLanguage) MarshalJSON() ([]byte, error) { return []byte(`"GO"`), nil } // always GO, like the client

type goClientCommand struct {
	Code      int16             `json:"code"`
	Language  goClientLanguage  `json:"language"`
	Version   int16             `json:"version"`
	Opaque    int32             `json:"opaque"`
	Flag      int32             `json:"flag"`
	Remark    string            `json:"remark"`
	ExtFields map[string]string `json:"extFields"`
	Body      []byte            `json:"-"`
}

// goClientReadFrame reads one frame from r as the Go client does.
func goClientReadFrame(t *testing.T, r io.Reader) *goClientCommand {
	t.Helper()
	var length int32
	require.NoError(t, binary.Read(r, binary.BigEndian, &length))
	buf := make([]byte, length)
	_, err := io.ReadFull(r, buf)
	require.NoError(t, err)

	word := int32(binary.BigEndian.Uint32(buf))
	headerLength := word & 0xFFFFFF
	header := buf[4 : 4+headerLength]
	cmd := &goClientCommand{ExtFields: map[string]string{}}
	switch byte((word >> 24) & 0xFF) {
	case 0:
		require.NoError(t, jsoniter.Unmarshal(header, cmd), "jsoniter rejects %s", header)
	case 1:
		goClientDecodeRocketMQ(t, header, cmd)
	default:
		t.Fatalf("unknown codec type %d", word>>24)
	}
	if bodyLength := length - 4 - headerLength; bodyLength > 0 {
		cmd.Body = buf[4+headerLength:]
	}
	return cmd
}

func goClientDecodeRocketMQ(t *testing.T, header []byte, cmd *goClientCommand) {
	r := bytes.NewReader(header)
	var lang byte
	var remarkLen, extLen int32
	require.NoError(t, binary.Read(r, binary.BigEndian, &cmd.Code))
	require.NoError(t, binary.Read(r, binary.BigEndian, &lang))
	require.NoError(t, binary.Read(r, binary.BigEndian, &cmd.Version))
	require.NoError(t, binary.Read(r, binary.BigEndian, &cmd.Opaque))
	require.NoError(t, binary.Read(r, binary.BigEndian, &cmd.Flag))
	require.NoError(t, binary.Read(r, binary.BigEndian, &remarkLen))
	if remarkLen > 0 {
		remark := make([]byte, remarkLen)
		_, err := io.ReadFull(r, remark)
		require.NoError(t, err)
		cmd.Remark = string(remark)
	}
	require.NoError(t, binary.Read(r, binary.BigEndian, &extLen))
	if extLen > 0 {
		area := make([]byte, extLen)
		_, err := io.ReadFull(r, area)
		require.NoError(t, err)
		ar := bytes.NewReader(area)
		for ar.Len() > 0 {
			var kLen int16
			var vLen int32
			require.NoError(t, binary.Read(ar, binary.BigEndian, &kLen))
			k := make([]byte, kLen)
			_, err := io.ReadFull(ar, k)
			require.NoError(t, err)
			require.NoError(t, binary.Read(ar, binary.BigEndian, &vLen))
			v := make([]byte, vLen)
			_, err = io.ReadFull(ar, v)
			require.NoError(t, err)
			cmd.ExtFields[string(k)] = string(v)
		}
	}
}

func TestGoClientDecodesOurFrames(t *testing.T) {
	req := &RemotingCommand{Code: int32(RequestSendMessage), Language: LanguageGo, Version: 317, Opaque: 77}
	send := NewResponse(req, ResponseSuccess, "")
	send.SetExt("msgId", "7F00000100002A9F0000000000001234")
	send.SetExt("queueId", "3")
	send.SetExt("queueOffset", "120")
	send.SetExt("transactionId", "C0A8000100002A9F0000018B4AAC2000")
	send.SetExt("MSG_REGION", "DefaultRegion")
	send.SetExt("TRACE_ON", "true")

	pull := NewResponse(req, ResponsePullNotFound, "NO_NEW_MSG")
	pull.ExtFields = map[string]string{"suggestWhichBrokerId": "0", "nextBeginOffset": "5", "minOffset": "0", "maxOffset": "5"}

	found := NewResponse(req, ResponseSuccess, "FOUND")
	found.ExtFields = map[string]string{"nextBeginOffset": "6"}
	found.Body = bytes.Repeat([]byte{0xDA, 0xA3, 0x20, 0xA7}, 64)

	notSupported := NewResponse(req, ResponseRequestCodeNotSupported, " request type 9999 not supported")
	weird := NewResponse(req, ResponseSystemError, "quote \" backslash \\ ctrl \x01\x02 tab \t nl \n é 😀 \u2028 bad \xff")
	weird.ExtFields = map[string]string{"k\"\\": "v\x00\x1f<>&"}

	check := NewRequest(RequestCheckTransactionState, map[string]string{
		"tranStateTableOffset": "12", "commitLogOffset": "4096", "msgId": "C0A8", "transactionId": "C0A8",
		"offsetMsgId": "7F00000100002A9F0000000000001000"}, []byte("record"))
	check.Opaque = 5
	notify := NewRequest(RequestNotifyConsumerIdsChanged, map[string]string{"consumerGroup": "G1"}, nil)
	heartbeat := NewResponse(req, ResponseSuccess, "")
	heartbeat.ExtFields = map[string]string{}

	cmds := []*RemotingCommand{send, pull, found, notSupported, weird, check, notify, heartbeat}
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		var stream []byte
		for _, c := range cmds {
			c.SerializeType = st
			var err error
			stream, err = c.AppendFrame(stream)
			require.NoError(t, err)
		}
		r := bytes.NewReader(stream)
		for _, c := range cmds {
			got := goClientReadFrame(t, r)
			require.Equal(t, c.Code, int32(got.Code), "%s code", st)
			require.Equal(t, c.Version, int32(got.Version))
			require.Equal(t, c.Opaque, got.Opaque)
			require.Equal(t, c.Flag, got.Flag)
			wantRemark := c.Remark
			if st == SerializeJSON {
				wantRemark = string(bytes.ToValidUTF8([]byte(c.Remark), []byte("\uFFFD")))
			}
			require.Equal(t, wantRemark, got.Remark)
			require.Equal(t, len(c.ExtFields), len(got.ExtFields))
			for k, v := range c.ExtFields {
				require.Equal(t, v, got.ExtFields[k], "%s ext %q", st, k)
			}
			require.Equal(t, c.Body, got.Body)
		}
		require.Zero(t, r.Len())
	}
}

// TestGoClientMirrorIsStrict is the negative control: the mirror really rejects what the
// client rejects (a number in extFields, a code beyond int16), so the test above would
// catch an encoder that emitted those.
func TestGoClientMirrorIsStrict(t *testing.T) {
	var cmd goClientCommand
	require.Error(t, jsoniter.Unmarshal([]byte(`{"code":0,"extFields":{"queueId":3}}`), &cmd))
	require.Error(t, jsoniter.Unmarshal([]byte(`{"code":200050}`), &cmd))
	require.NoError(t, jsoniter.Unmarshal([]byte(`{"code":0,"extFields":{"queueId":"3"}}`), &cmd))
}

// TestDecodeGoClientEncoding: headers encoded the way the Go client encodes them (jsoniter,
// default config: HTML escaping, map order unspecified) decode to the values it encoded.
func TestDecodeGoClientEncoding(t *testing.T) {
	values := []string{"", "TopicTest", "KEYS\x01k1 k2\x02TAGS\x01TagA\x02", "<html>&amp;</html>", "quote\" back\\ slash/",
		"\x00\x1f\x7f", "中文主题 😀", "\u2028\u2029", "1700000000123", "-1"}
	for i, v := range values {
		cmd := goClientCommand{Code: 10, Version: 317, Opaque: int32(i + 1), Remark: v,
			ExtFields: map[string]string{"topic": v, "k" + v: v, "properties": v + v}}
		header, err := jsoniter.Marshal(&cmd)
		require.NoError(t, err)
		got, err := DecodeCommand(jsonPayload(string(header), nil))
		require.NoError(t, err, "%s", header)
		require.Equal(t, &RemotingCommand{Code: 10, Language: LanguageGo, Version: 317, Opaque: int32(i + 1),
			Remark: v, ExtFields: cmd.ExtFields}, got, "%s", header)
	}
	// A nil map goes out as "extFields":null.
	header, err := jsoniter.Marshal(&goClientCommand{Code: 34, Version: 317, Opaque: 9})
	require.NoError(t, err)
	require.Contains(t, string(header), `"extFields":null`)
	got, err := DecodeCommand(jsonPayload(string(header), nil))
	require.NoError(t, err)
	require.Equal(t, &RemotingCommand{Code: 34, Language: LanguageGo, Version: 317, Opaque: 9}, got)
}
