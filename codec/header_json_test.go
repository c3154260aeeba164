package codec

import (
	"encoding/binary"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// jsonPayload wraps a JSON header (and body) in a DecodeCommand payload.
func jsonPayload(header string, body []byte) []byte {
	p := binary.BigEndian.AppendUint32(nil, uint32(len(header)))
	p = append(p, header...)
	return append(p, body...)
}

// TestJSONGoldenGoClientRequest: the exact header the Go client sends (PROTOCOL §1.2,
// captured) decodes to the expected fields.
func TestJSONGoldenGoClientRequest(t *testing.T) {
	const header = `{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`
	c, err := DecodeCommand(jsonPayload(header, nil))
	require.NoError(t, err)
	require.Equal(t, &RemotingCommand{
		Code:          105,
		Language:      LanguageGo,
		Version:       317,
		Opaque:        1,
		Flag:          0,
		Remark:        "",
		ExtFields:     map[string]string{"topic": "TopicTest"},
		SerializeType: SerializeJSON,
	}, c)
	require.Equal(t, RequestGetRouteInfoByTopic, RequestCode(c.Code))
	require.False(t, c.IsResponse())
	require.False(t, c.IsOneway())
}

// TestJSONGoldenGoClientSend: a SEND_MESSAGE request in the Go client's shape (V1 keys, map
// order as jsoniter leaves it) with properties holding the U+0001/U+0002 separators as
// \u0001/\u0002 escapes, and an HTML-escaped '<' and '&' (jsoniter escapes HTML).
func TestJSONGoldenGoClientSend(t *testing.T) {
	const header = `{"code":10,"language":"GO","version":317,"opaque":42,"flag":0,"remark":"",` +
		`"extFields":{"unitMode":"false","bname":"broker-a","queueId":"2","sysFlag":"0",` +
		`"bornTimestamp":"1700000000123","flag":"0","reconsumeTimes":"0","maxReconsumeTimes":"0",` +
		`"producerGroup":"PG","topic":"TopicTest","defaultTopic":"TBW102","defaultTopicQueueNums":"4",` +
		`"batch":"false",` +
		`"properties":"KEYS\u0001order-1\u0002TAGS\u0001TagA\u0002UNIQ_KEY\u0001C0A80001000018B4AAC2\u0002WAIT\u0001true\u0002NOTE\u0001a\u003cb \u0026 c\u0002"}}`
	body := []byte("Hello RocketMQ")
	c, err := DecodeCommand(jsonPayload(header, body))
	require.NoError(t, err)
	require.Equal(t, int32(10), c.Code)
	require.Equal(t, LanguageGo, c.Language)
	require.Equal(t, int32(317), c.Version)
	require.Equal(t, int32(42), c.Opaque)
	require.Equal(t, map[string]string{
		"unitMode":              "false",
		"bname":                 "broker-a",
		"queueId":               "2",
		"sysFlag":               "0",
		"bornTimestamp":         "1700000000123",
		"flag":                  "0",
		"reconsumeTimes":        "0",
		"maxReconsumeTimes":     "0",
		"producerGroup":         "PG",
		"topic":                 "TopicTest",
		"defaultTopic":          "TBW102",
		"defaultTopicQueueNums": "4",
		"batch":                 "false",
		"properties":            "KEYS\x01order-1\x02TAGS\x01TagA\x02UNIQ_KEY\x01C0A80001000018B4AAC2\x02WAIT\x01true\x02NOTE\x01a<b & c\x02",
	}, c.ExtFields)
	require.Equal(t, body, c.Body)
}

// TestJSONGoldenJavaShapes: what a Java peer sends — alphabetical keys, serializeTypeCurrentRPC,
// no remark — and the tolerated variants (numbers/bools in extFields, language by number).
func TestJSONGoldenJavaShapes(t *testing.T) {
	const java = `{"code":0,"extFields":{"haServerAddr":"10.0.0.1:10912","masterAddr":""},"flag":1,` +
		`"language":"JAVA","opaque":17,"serializeTypeCurrentRPC":"JSON","version":479}`
	c, err := DecodeCommand(jsonPayload(java, nil))
	require.NoError(t, err)
	require.Equal(t, &RemotingCommand{Code: 0, Language: LanguageJava, Version: 479, Opaque: 17, Flag: 1,
		ExtFields: map[string]string{"haServerAddr": "10.0.0.1:10912", "masterAddr": ""}}, c)
	require.True(t, c.IsResponse())

	const loose = " \n{ \"code\" : 37 , \"language\" : 9, \"version\":-1, \"opaque\":2147483647, \"flag\":2," +
		"\"remark\":\"x\\\"y\\\\z\\/\\n\\u00e9\\ud83d\\ude00\"," +
		"\"extFields\":{\"n\":12,\"f\":-1.5e3,\"b\":true,\"z\":null,\"s\":\"s\"}, \"extra\":[1,{\"a\":[]},null] }\t"
	c, err = DecodeCommand(jsonPayload(loose, nil))
	require.NoError(t, err)
	require.Equal(t, &RemotingCommand{Code: 37, Language: LanguageGo, Version: -1, Opaque: 2147483647, Flag: 2,
		Remark:    "x\"y\\z/\né😀",
		ExtFields: map[string]string{"n": "12", "f": "-1.5e3", "b": "true", "z": "", "s": "s"}}, c)
	require.True(t, c.IsOneway())

	// extFields null or absent: nil; {} : empty map; unknown language name: OTHER.
	c, err = DecodeCommand(jsonPayload(`{"code":1,"extFields":null,"language":"KOTLIN"}`, nil))
	require.NoError(t, err)
	require.Nil(t, c.ExtFields)
	require.Equal(t, LanguageOther, c.Language)
	c, err = DecodeCommand(jsonPayload(`{"extFields":{}}`, nil))
	require.NoError(t, err)
	require.NotNil(t, c.ExtFields)
	require.Empty(t, c.ExtFields)
	// Escaped keys are recognised; a null keeps the earlier value; duplicate extFields merge.
	c, err = DecodeCommand(jsonPayload(`{"c\u006fde":5,"code":null,"extFields":{"a":"1"},"extFields":{"b":"2","a":"3"}}`, nil))
	require.NoError(t, err)
	require.Equal(t, int32(5), c.Code)
	require.Equal(t, map[string]string{"a": "3", "b": "2"}, c.ExtFields)
	// Invalid UTF-8 and lone surrogates become U+FFFD (encoding/json's rule).
	c, err = DecodeCommand(jsonPayload("{\"remark\":\"a\xffb\\ud800c\"}", nil))
	require.NoError(t, err)
	require.Equal(t, "a\uFFFDb\uFFFDc", c.Remark)
}

// TestJSONGoldenResponse: a JSON response encodes to an exact string.
func TestJSONGoldenResponse(t *testing.T) {
	req := &RemotingCommand{Code: 10, Language: LanguageGo, Version: 317, Opaque: 1, SerializeType: SerializeJSON}
	resp := NewResponse(req, ResponseSuccess, "")
	resp.SetExt("queueId", "0")
	resp.SetExt("msgId", "7F00000100002A9F0000000000000000")
	resp.SetExt("queueOffset", "5")
	resp.SetExt("properties", "A\x01b\x02")
	frame, err := resp.AppendFrame(nil)
	require.NoError(t, err)
	const want = `{"code":0,"language":"JAVA","version":409,"opaque":1,"flag":1,"extFields":{` +
		`"msgId":"7F00000100002A9F0000000000000000","properties":"A\u0001b\u0002","queueId":"0","queueOffset":"5"}}`
	require.Equal(t, want, string(frame[8:]))
	require.Equal(t, uint32(4+len(want)), binary.BigEndian.Uint32(frame))
	require.Equal(t, uint32(len(want)), binary.BigEndian.Uint32(frame[4:]), "type 0 in the high byte")

	// Error response with a remark, no extFields; escapes and invalid UTF-8.
	resp = NewResponse(req, ResponseRequestCodeNotSupported, " request type 999 not supported\t\"é\"\xff")
	frame, err = resp.AppendFrame(nil)
	require.NoError(t, err)
	require.Equal(t, `{"code":3,"language":"JAVA","version":409,"opaque":1,"flag":1,`+
		`"remark":" request type 999 not supported\t\"é\"\ufffd"}`, string(frame[8:]))

	// Unknown language codes go out as numbers; empty non-nil extFields as {}.
	c := &RemotingCommand{Code: -1, Language: 200, ExtFields: map[string]string{}}
	frame, err = c.AppendFrame(nil)
	require.NoError(t, err)
	require.Equal(t, `{"code":-1,"language":200,"version":0,"opaque":0,"flag":0,"extFields":{}}`, string(frame[8:]))
}

func TestJSONDecodeErrors(t *testing.T) {
	bad := []string{
		``,
		` `,
		`null`,
		`[]`,
		`"x"`,
		`{`,
		`{"code":1`,
		`{"code":1,}`,
		`{"code" 1}`,
		`{code:1}`,
		`{"code":1}x`,
		`{"code":1}{}`,
		`{"code":"1"}`,
		`{"code":1.0}`,
		`{"code":1e2}`,
		`{"code":2147483648}`,
		`{"code":-2147483649}`,
		`{"code":99999999999999999999999}`,
		`{"code":01}`,
		`{"code":-}`,
		`{"code":+1}`,
		`{"code":true}`,
		`{"language":-1}`,
		`{"language":256}`,
		`{"language":{}}`,
		`{"language":true}`,
		`{"remark":1}`,
		`{"remark":"\x01"}`,
		`{"remark":"\q"}`,
		`{"remark":"\u12"}`,
		`{"remark":"abc}`,
		`{"extFields":[]}`,
		`{"extFields":"a"}`,
		`{"extFields":{"a":{}}}`,
		`{"extFields":{"a":[]}}`,
		`{"extFields":{"a":tru}}`,
		`{"extFields":{"a":nul}}`,
		`{"extFields":{"a" "b"}}`,
		`{"extFields":{a:"b"}}`,
		`{"extFields":{"a":"b",}}`,
		`{"x":[1,]}`,
		`{"x":[1 2]}`,
		`{"x":{"a":1,}}`,
		`{"x":nulll}`,
		`{"x":.5}`,
		`{"x":1.}`,
		`{"x":1e}`,
		`{"x":-01}`,
		"{\"x\":\"\t\"}",
		`{"code":1 "flag":2}`,
	}
	for _, h := range bad {
		t.Run(h, func(t *testing.T) {
			_, err := DecodeCommand(jsonPayload(h, nil))
			require.ErrorIs(t, err, ErrHeaderJSON)
		})
	}
}

// TestJSONDecodeTruncations: every proper prefix of a valid header is rejected, never a panic.
func TestJSONDecodeTruncations(t *testing.T) {
	const header = `{"code":10,"language":"GO","version":317,"opaque":42,"flag":0,"remark":"r\u00e9",` +
		`"extFields":{"a":"x\u0001","n":12.5e1,"t":true,"z":null},"o":{"k":[1,"s",false]}}`
	_, err := DecodeCommand(jsonPayload(header, nil))
	require.NoError(t, err)
	for i := 0; i < len(header)-1; i++ {
		_, err := DecodeCommand(jsonPayload(header[:i], nil))
		require.ErrorIs(t, err, ErrHeaderJSON, "prefix %q", header[:i])
	}
}

func TestJSONNestingLimit(t *testing.T) {
	deep := func(n int) string {
		s := `{"x":`
		for i := 0; i < n; i++ {
			s += "["
		}
		for i := 0; i < n; i++ {
			s += "]"
		}
		return s + "}"
	}
	_, err := DecodeCommand(jsonPayload(deep(jsonMaxDepth-1), nil))
	require.NoError(t, err, "10000 levels including the header object")
	_, err = DecodeCommand(jsonPayload(deep(jsonMaxDepth), nil))
	require.ErrorIs(t, err, ErrHeaderJSON)
}

func TestJSONErrorNamesField(t *testing.T) {
	_, err := DecodeCommand(jsonPayload(`{"opaque":"1"}`, nil))
	require.ErrorIs(t, err, ErrHeaderJSON)
	require.Contains(t, err.Error(), `"opaque"`)
	_, err = DecodeCommand(jsonPayload(`{"extFields":{"topic":{}}}`, nil))
	require.Contains(t, err.Error(), `extFields.topic`)
}

func TestJSONRoundTrip(t *testing.T) {
	cmds := []*RemotingCommand{
		{},
		{Code: -32768, Language: LanguageNodeJS, Version: 1 << 30, Opaque: -1 << 31, Flag: 3, Remark: "\x00\x1f\x7f\"\\/é😀"},
		{Code: 200050, ExtFields: map[string]string{"": "", "k\x01": "v\x02", "ü": "\u2028"}, Body: []byte("b")},
		{Language: 99, ExtFields: map[string]string{}},
	}
	for _, want := range cmds {
		frame, err := want.AppendFrame(nil)
		require.NoError(t, err)
		n, err := CutFrame(frame, 0)
		require.NoError(t, err)
		require.Equal(t, len(frame), n)
		got, err := DecodeCommand(frame[4:])
		require.NoError(t, err)
		requireSameCommand(t, want, got)
		require.Equal(t, want.ExtFields == nil, got.ExtFields == nil)
	}
}

// TestJSONDecodeAllocs pins the allocation count of the hot path: the command, the string
// arena, the map.
func TestJSONDecodeAllocs(t *testing.T) {
	payload := jsonPayload(`{"code":310,"language":"JAVA","version":479,"opaque":42,"flag":0,"extFields":{"a":"PG","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"1700000000000","h":"0","i":"KEYS\u0001k\u0002","j":"0","k":"false","l":"16","m":"false","n":"broker-a"},"serializeTypeCurrentRPC":"JSON"}`, make([]byte, 1024))
	var c RemotingCommand
	allocs := testing.AllocsPerRun(200, func() {
		if err := DecodeCommandInto(&c, payload); err != nil {
			panic(err)
		}
	})
	require.LessOrEqual(t, allocs, 1.0, "reused command and map: only the string arena")
	allocs = testing.AllocsPerRun(200, func() {
		if _, err := DecodeCommand(payload); err != nil {
			panic(err)
		}
	})
	require.LessOrEqual(t, allocs, 6.0, "command, arena, and a 14-entry map (header, directory, table, groups)")
}

// TestOneLetterKeysShareStaticStrings: one-letter extFields keys come out of asciiStrings, not
// the arena, in both forms (list and map), next to copied keys and values.
func TestOneLetterKeysShareStaticStrings(t *testing.T) {
	if len(asciiStrings) != 128 {
		t.Fatalf("asciiStrings has %d bytes", len(asciiStrings))
	}
	for i := range 128 {
		if asciiStrings[i] != byte(i) {
			t.Fatalf("asciiStrings[%d] = %#x", i, asciiStrings[i])
		}
	}
	header := []byte(`{"code":310,"extFields":{"a":"g1","b":"T\u0001","long":"v","~":"7","\u0041":"esc"}}`)
	want := map[string]string{"a": "g1", "b": "T\x01", "long": "v", "~": "7", "A": "esc"}
	var list RemotingCommand
	list.listHot = true
	if err := decodeJSONHeader(&list, header); err != nil || len(list.extList) != 5 {
		t.Fatalf("list: %v, %d fields", err, len(list.extList))
	}
	if got := list.ExtMapCopy(); !maps.Equal(got, want) {
		t.Fatalf("list: %q, want %q", got, want)
	}
	var m RemotingCommand
	m.Code = 0 // a request that keeps the map
	if err := decodeJSONHeader(&m, []byte(strings.Replace(string(header), "310", "26", 1))); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(m.ExtFields, want) {
		t.Fatalf("map: %q, want %q", m.ExtFields, want)
	}
}
