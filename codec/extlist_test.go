package codec

import (
	"encoding/binary"
	"maps"
	"testing"

	"github.com/stretchr/testify/require"
)

// hotSendV2Payload is a SEND_MESSAGE_V2 request's payload (after the length word) with a JSON
// header; dup adds a second "b" (topic) after the first, which must win.
func hotSendV2Payload(dup bool) []byte {
	ext := `"a":"PG","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"1700000000000","h":"0","i":"KEYS\u0001k\u0002","j":"0","k":"false","l":"16","m":"false","n":"broker-a"`
	if dup {
		ext += `,"b":"T2"`
	}
	return jsonPayload(`{"code":310,"language":"JAVA","version":479,"opaque":42,"flag":0,"extFields":{`+ext+`}}`, []byte("body"))
}

// TestDecodeRequestIntoKeepsHotFieldsAsAList: a server's send or pull keeps its fields as a
// list (no map) that Ext, ExtAll and the typed decoder read exactly as they read the map;
// responses and other requests decode as before.
func TestDecodeRequestIntoKeepsHotFieldsAsAList(t *testing.T) {
	for _, dup := range []bool{false, true} {
		payload := hotSendV2Payload(dup)
		var c RemotingCommand
		require.NoError(t, DecodeRequestInto(&c, payload))
		require.Nil(t, c.ExtFields, "no map for a hot request")
		require.Len(t, c.extList, 14+map[bool]int{false: 0, true: 1}[dup])
		require.Equal(t, dup, c.extDups)
		want, err := DecodeCommand(payload)
		require.NoError(t, err)
		require.Equal(t, want.ExtFields, c.ExtMapCopy())
		topic, ok := c.Ext("b")
		require.True(t, ok)
		require.Equal(t, want.ExtFields["b"], topic, "the last of a repeated key wins")
		_, ok = c.Ext("z")
		require.False(t, ok)
		require.Equal(t, len(want.ExtFields), len(maps.Collect(c.ExtAll())), "ExtAll yields each key once")

		var fromList, fromMap SendMessageRequestHeader
		require.NoError(t, fromList.DecodeFrom(&c, true))
		require.NoError(t, fromMap.DecodeV2(want.ExtFields))
		require.Equal(t, fromMap, fromList)
		require.Equal(t, "body", string(c.Body))
	}

	// The same fields in the ROCKETMQ form of a PULL_MESSAGE.
	pull := PullMessageRequestHeader{ConsumerGroup: "G", Topic: "T", QueueID: 2, QueueOffset: 77, MaxMsgNums: 32,
		SysFlag: 2, CommitOffset: 5, SuspendTimeoutMillis: 15000, Subscription: "*", SubVersion: 9, ExpressionType: "TAG"}
	req := NewRequest(RequestPullMessage, map[string]string{}, nil)
	pull.Encode(req.ExtFields)
	req.SerializeType = SerializeRocketMQ
	frame, err := req.AppendFrame(nil)
	require.NoError(t, err)
	var c RemotingCommand
	require.NoError(t, DecodeRequestInto(&c, frame[4:]))
	require.Nil(t, c.ExtFields)
	require.Equal(t, req.ExtFields, c.ExtMapCopy())
	var got PullMessageRequestHeader
	require.NoError(t, got.DecodeFrom(&c))
	require.Equal(t, pull, got)

	// A response whose code equals a hot request code, and a request that is not hot: maps.
	for _, cmd := range []*RemotingCommand{
		{Code: int32(RequestSendMessage), Flag: FlagResponse, ExtFields: map[string]string{"queueId": "1"}},
		{Code: int32(RequestQueryConsumerOffset), ExtFields: map[string]string{"queueId": "1"}},
	} {
		frame, err := cmd.AppendFrame(nil)
		require.NoError(t, err)
		require.NoError(t, DecodeRequestInto(&c, frame[4:]))
		require.Equal(t, cmd.ExtFields, c.ExtFields)
		require.Empty(t, c.extList)
		v, ok := c.Ext("queueId")
		require.True(t, ok)
		require.Equal(t, "1", v)
	}

	// A missing required field is named the same way from the list as from the map.
	payload := jsonPayload(`{"code":310,"extFields":{"a":"PG"}}`, nil)
	require.NoError(t, DecodeRequestInto(&c, payload))
	var h SendMessageRequestHeader
	listErr := h.DecodeFrom(&c, true)
	require.EqualError(t, listErr, h.DecodeV2(map[string]string{"a": "PG"}).Error())
}

// TestCloneAndResetOwnTheFieldList: a clone keeps its fields while the connection decodes its
// next frame into the recycled target; Reset drops the strings but keeps a small list.
func TestCloneAndResetOwnTheFieldList(t *testing.T) {
	var c RemotingCommand
	require.NoError(t, DecodeRequestInto(&c, hotSendV2Payload(false)))
	clone := c.Clone()
	list := c.extList
	c.Reset()
	require.Zero(t, len(c.extList))
	require.Equal(t, cap(list), cap(c.extList), "kept for the next frame")
	require.Equal(t, extField{}, list[0], "the last header's strings are not pinned")
	other := jsonPayload(`{"code":310,"extFields":{"b":"Other"}}`, nil)
	require.NoError(t, DecodeRequestInto(&c, other))
	topic, _ := clone.Ext("b")
	require.Equal(t, "T", topic)
	require.Equal(t, "body", string(clone.Body))
	topic, _ = c.Ext("b")
	require.Equal(t, "Other", topic)
}

// TestDecodeRequestIntoAllocs: a recycled server decode of a send plus its typed header
// allocates the string arena only.
func TestDecodeRequestIntoAllocs(t *testing.T) {
	payload := hotSendV2Payload(false)
	var c RemotingCommand
	var h SendMessageRequestHeader
	allocs := testing.AllocsPerRun(200, func() {
		if err := DecodeRequestInto(&c, payload); err != nil {
			panic(err)
		}
		if err := h.DecodeFrom(&c, true); err != nil {
			panic(err)
		}
		c.Reset()
	})
	require.LessOrEqual(t, allocs, 1.0)
}

// FuzzDecodeRequest: for any payload, the server's decode (DecodeRequestInto, list form for
// hot requests, into a recycled target) and DecodeCommand (map) agree: the same error, the
// same fields, and the same typed send and pull headers or the same decode errors.
func FuzzDecodeRequest(f *testing.F) {
	for _, fr := range fuzzSeedFrames(f) {
		f.Add(fr[4:])
	}
	f.Add(hotSendV2Payload(false))
	f.Add(hotSendV2Payload(true))
	rmq := []byte{1, 0, 0, 0}
	hdr := []byte{0, 11, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0}
	hdr = binary.BigEndian.AppendUint32(hdr, 0)
	area := []byte{0, 5, 't', 'o', 'p', 'i', 'c', 0, 0, 0, 1, 'A', 0, 5, 't', 'o', 'p', 'i', 'c', 0, 0, 0, 1, 'B'}
	hdr = binary.BigEndian.AppendUint32(hdr, uint32(len(area)))
	hdr = append(hdr, area...)
	binary.BigEndian.PutUint32(rmq, 1<<24|uint32(len(hdr)))
	f.Add(append(rmq, hdr...)) // ROCKETMQ pull with a repeated key
	var c RemotingCommand
	f.Fuzz(func(t *testing.T, payload []byte) {
		c.Reset()
		err := DecodeRequestInto(&c, payload)
		ref, refErr := DecodeCommand(payload)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("errors differ: %v / %v", err, refErr)
		}
		if err != nil {
			return
		}
		if c.Code != ref.Code || c.Flag != ref.Flag || c.Opaque != ref.Opaque || c.Remark != ref.Remark ||
			string(c.Body) != string(ref.Body) {
			t.Fatalf("fixed fields differ:\n%+v\n%+v", c, ref)
		}
		if len(c.extList) > 0 && len(c.ExtFields) > 0 {
			t.Fatal("both a list and a map")
		}
		if !maps.Equal(c.ExtMapCopy(), ref.ExtMapCopy()) {
			t.Fatalf("fields differ:\n%v\n%v", c.ExtMapCopy(), ref.ExtFields)
		}
		for _, v2 := range []bool{false, true} {
			var a, b SendMessageRequestHeader
			ea, eb := a.DecodeFrom(&c, v2), b.DecodeFrom(ExtMap(ref.ExtFields), v2)
			if a != b || errString(ea) != errString(eb) {
				t.Fatalf("send header (v2=%v) differs: %+v %v / %+v %v", v2, a, ea, b, eb)
			}
		}
		var pa, pb PullMessageRequestHeader
		ea, eb := pa.DecodeFrom(&c), pb.Decode(ref.ExtFields)
		if pa != pb || errString(ea) != errString(eb) {
			t.Fatalf("pull header differs: %+v %v / %+v %v", pa, ea, pb, eb)
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// A lookup of a key the list lacks answers without a scan when no key of its class is there, and
// after a scan when one is (a class shares keys): both miss, and present keys are still found.
func TestExtFindMissesByClass(t *testing.T) {
	var c RemotingCommand
	c.listHot = true
	require.NoError(t, decodeJSONHeader(&c, []byte(`{"code":310,"extFields":{"a":"1","b":"2","k":"false"}}`)))
	require.Equal(t, extKeyClass("a"), extKeyClass("!"), "the test needs a key of a's class")
	require.Zero(t, c.extKeys&extKeyClass("l"), "the test needs a key of a class not in the list")
	for _, absent := range []string{"l", "!", "n", "ab"} {
		v, ok := c.Ext(absent)
		require.False(t, ok, absent)
		require.Empty(t, v, absent)
	}
	for k, want := range map[string]string{"a": "1", "b": "2", "k": "false"} {
		v, ok := c.Ext(k)
		require.True(t, ok, k)
		require.Equal(t, want, v, k)
	}
}
