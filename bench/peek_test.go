package bench

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// jsonFrame is a frame payload (after the length word) with a JSON header.
func jsonFrame(header string, body string) []byte {
	p := binary.BigEndian.AppendUint32(nil, uint32(codec.SerializeJSON)<<24|uint32(len(header)))
	return append(append(p, header...), body...)
}

func sendResponseFrame(t testing.TB, code codec.ResponseCode, opaque int32) []byte {
	req := &codec.RemotingCommand{Opaque: opaque, SerializeType: codec.SerializeJSON}
	resp := codec.NewResponse(req, code, "")
	resp.ExtFields = map[string]string{}
	h := codec.SendMessageResponseHeader{MsgID: "7F00000100002A9F0000000000001234", QueueID: 3, QueueOffset: 123456,
		TransactionID: "7F0000010001000000000745BD780001", MsgRegion: "DefaultRegion", TraceOn: codec.Some(true)}
	h.Encode(resp.ExtFields)
	frame, err := resp.AppendFrame(nil)
	require.NoError(t, err)
	return frame[4:]
}

func TestPeekResponse(t *testing.T) {
	code, opaque, flag, ok := peekResponse(sendResponseFrame(t, codec.ResponseSuccess, 1_000_000_007))
	require.True(t, ok)
	require.Equal(t, [3]int32{0, 1_000_000_007, codec.FlagResponse}, [3]int32{code, opaque, flag})
	code, opaque, _, ok = peekResponse(sendResponseFrame(t, codec.ResponseCode(14), 42))
	require.True(t, ok)
	require.Equal(t, [2]int32{14, 42}, [2]int32{code, opaque})

	for _, c := range []struct {
		header string
		want   [3]int32
	}{
		// Java's field order (alphabetical) with nested objects, arrays and escapes to skip.
		{`{"code":0,"extFields":{"msgId":"a\"}b","k":"\\"},"flag":1,"language":"JAVA","opaque":-5,"serializeTypeCurrentRPC":"JSON","version":401}`, [3]int32{0, -5, 1}},
		{` { "x" : [1, {"y": "]"}] , "opaque" : 9 , "code" : 17 , "flag" : 3 , "n": null, "t": true, "f": -1.5e3 } `, [3]int32{17, 9, 3}},
		{`{"code":1,"opaque":2,"flag":0,"code":5}`, [3]int32{5, 2, 0}}, // the last duplicate wins, as in the full decoder
	} {
		code, opaque, flag, ok := peekResponse(jsonFrame(c.header, "body"))
		require.True(t, ok, c.header)
		require.Equal(t, c.want, [3]int32{code, opaque, flag}, c.header)
	}
	for _, bad := range []string{
		``, `{}`, `[]`, `{"code":0,"opaque":1}`, // flag missing
		`{"code":"0","opaque":1,"flag":1}`, `{"code":01,"opaque":1,"flag":1}`, `{"code":2147483648,"opaque":1,"flag":1}`,
		`{"co\u0064e":0,"opaque":1,"flag":1}`, `{"code":0,"opaque":1,"flag":1`, `{"code":0,"opaque":1,"flag":1} x`,
		`{"code":0,"opaque":1,"flag":1,"s":"unterminated}`, `{"code":0,"opaque":1,"flag":1,"o":{"a":[}`,
		`{"code":-,"opaque":1,"flag":1}`,
	} {
		_, _, _, ok := peekResponse(jsonFrame(bad, ""))
		require.False(t, ok, bad)
	}
	short := jsonFrame(`{"code":0,"opaque":1,"flag":1}`, "")
	_, _, _, ok = peekResponse(short[:len(short)-1])
	require.False(t, ok, "header length past the payload")
	binary.BigEndian.PutUint32(short, uint32(codec.SerializeRocketMQ)<<24|uint32(len(short)-4))
	_, _, _, ok = peekResponse(short)
	require.False(t, ok, "ROCKETMQ serialization is left to the full decoder")
}

// FuzzPeekResponse: whenever both the peek and the full decoder accept a frame, they
// agree on code, opaque and flag.
func FuzzPeekResponse(f *testing.F) {
	f.Add(sendResponseFrame(f, codec.ResponseSuccess, 1_000_000_007))
	f.Add(jsonFrame(`{"code":0,"extFields":{"msgId":"a\"}b"},"flag":1,"opaque":-5}`, ""))
	f.Add(jsonFrame(`{"code":1,"opaque":2,"flag":0,"code":5}`, "x"))
	f.Add(jsonFrame(` { "x" : [1, {"y": "]"}] , "opaque" : 9 , "code" : 17 , "flag" : 3 } `, ""))
	f.Fuzz(func(t *testing.T, payload []byte) {
		code, opaque, flag, ok := peekResponse(payload)
		var cmd codec.RemotingCommand
		if err := codec.DecodeCommandInto(&cmd, payload); err != nil || !ok {
			return
		}
		require.Equal(t, [3]int32{cmd.Code, cmd.Opaque, cmd.Flag}, [3]int32{code, opaque, flag})
	})
}
