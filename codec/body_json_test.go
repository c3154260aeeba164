package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestQuoteBareKeys(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"route brokerAddrs", `{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}}`,
			`{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}}`},
		{"nested offsets", `{"offsetTable":{"TopicTest@G1":{0:250,1:248},"%RETRY%G1@G1":{0:0}}}`,
			`{"offsetTable":{"TopicTest@G1":{"0":250,"1":248},"%RETRY%G1@G1":{"0":0}}}`},
		{"negative and spaced", "{ -1 : 2 ,\n\t7:{ 8 :9}}", "{ \"-1\" : 2 ,\n\t\"7\":{ \"8\" :9}}"},
		{"object key", `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:100}}`,
			`{"offsetTable":{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"t\"}":100}}`},
		{"object key compacted", `{{ "a" : [1, 2] }:1}`, `{"{\"a\":[1,2]}":1}`},
		{"identifier key", `{abc:true,$x_1:null}`, `{"abc":true,"$x_1":null}`},
		{"strings with braces colons escapes",
			`{"k{:}":"v,{0:1}\"x\\",0:"a\"b:c{",1:["{2:3}"]}`,
			`{"k{:}":"v,{0:1}\"x\\","0":"a\"b:c{","1":["{2:3}"]}`},
		{"arrays of objects", `[{0:1},{"a":[{2:3}]}]`, `[{"0":1},{"a":[{"2":3}]}]`},
		{"empty object", `{}`, `{}`},
		{"scalar", `42`, `42`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := QuoteBareKeys([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, string(got))
			require.True(t, json.Valid(got))
		})
	}
}

func TestQuoteBareKeysReturnsValidInputUnchanged(t *testing.T) {
	in := []byte(`{"a":{"0":"x"},"b":[1,"{0:1}"]}`)
	got, err := QuoteBareKeys(in)
	require.NoError(t, err)
	require.Equal(t, in, got)
	require.Same(t, &in[0], &got[0], "no rewrite needed: no copy")
}

func TestQuoteBareKeysErrors(t *testing.T) {
	bad := []string{
		``, `{`, `}`, `{0:1`, `{0:1]]`, `[}`, `{"a":"b}`, `{,}`, `{:1}`, `{0 1}`, `{0:}`,
		`{{"a":1:2}`, `{{0:1}:2}`, `{"a" 1}`, `{"a":1 b:2}`, `{{"a":1}}`, `{0:1}}`,
		`{"a":tru}`, `{"a":"\x"}`, `{"a":1,}`, `{0:01}`, `{[1,]:2}`, `{"a":"b` + "\x01" + `"}`,
		strings.Repeat("[", bodyMaxDepth+1) + strings.Repeat("]", bodyMaxDepth+1),
	}
	for _, in := range bad {
		out, err := QuoteBareKeys([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q gave %q", in, out)
		require.Nil(t, out)
	}
}

func TestBodyAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `q"b\s/`, "ctl\x00\x01\x1f\n\r\t\b\f", "<>&", "ünï€𝄞", "\u2028\u2029",
		"bad\xffutf8\xc3", "10.0.0.1:10911",
	} {
		got := bodyAppendString(nil, s)
		require.True(t, json.Valid(got), "%q → %s", s, got)
		var back string
		require.NoError(t, json.Unmarshal(got, &back))
		require.Equal(t, strings.ToValidUTF8(s, "\uFFFD"), back)
		// Same bytes as encoding/json without HTML escaping.
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		require.NoError(t, enc.Encode(s))
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if !bytes.ContainsAny([]byte(s), "\b\f") { // encoding/json uses \b \f short forms
			require.Equal(t, string(want), string(got))
		}
	}
}

func TestDecodeBodyJSONErrorsNameTheField(t *testing.T) {
	var rd TopicRouteData
	err := decodeBodyJSON([]byte(`{"queueDatas":[{"perm":"x"}]}`), &rd, "TopicRouteData")
	require.ErrorIs(t, err, ErrBodyJSON)
	require.Contains(t, err.Error(), `"queueDatas.perm"`)

	err = decodeBodyJSON([]byte(`  `), &rd, "TopicRouteData")
	require.ErrorIs(t, err, ErrBodyJSON)
	require.Contains(t, err.Error(), "empty body")

	err = decodeBodyJSON([]byte(`{"queueDatas":[}`), &rd, "TopicRouteData")
	require.ErrorIs(t, err, ErrBodyJSON)
	require.Contains(t, err.Error(), "TopicRouteData")
}

// FuzzBodyBareKeys: the rewriter's output is valid JSON or an error; valid JSON passes
// through byte for byte; the output is a fixed point; bare integer keys decode to the same
// map as their quoted spelling.
func FuzzBodyBareKeys(f *testing.F) {
	for _, seed := range []string{
		`{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"b"}]}`,
		`{"offsetTable":{"T@G":{0:250,1:248}}}`,
		`{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"t"}:100}}`,
		`{"k{:}":"v,{0:1}\"x\\",0:"a"}`,
		`{"a":[1,2,{"b":null}],"c":true}`,
		`{-1:2,+3:4,1.5:6,abc:7}`,
		`[{0:{1:{2:[]}}}]`,
		`{`, `"`, `{0:}`, `{{`, `{"a":"\u00zz"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := QuoteBareKeys(in)
		if err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
			require.False(t, json.Valid(in), "valid JSON %q rejected: %v", in, err)
			return
		}
		require.True(t, json.Valid(out), "invalid output %q from %q", out, in)
		if json.Valid(in) {
			require.Equal(t, in, out, "valid JSON must pass unchanged")
		}
		again, err := QuoteBareKeys(out)
		require.NoError(t, err)
		require.Equal(t, out, again, "output must be a fixed point")

		// Semantics: unquoting every all-digit key of the output and rewriting it back
		// gives the same value.
		if bare, ok := unquoteDigitKeys(out); ok {
			back, err := QuoteBareKeys(bare)
			require.NoError(t, err, "bare form %q", bare)
			// json.Number: a valid number past float64's range (a fuzzer's 300-digit one) is still a value.
			require.Equal(t, decodeJSONNumbers(t, out), decodeJSONNumbers(t, back))
		}
	})
}

// decodeJSONNumbers decodes valid JSON with numbers kept as their text.
func decodeJSONNumbers(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	require.NoError(t, d.Decode(&v))
	return v
}

// unquoteDigitKeys turns every object key made only of ASCII digits into a bare key, the
// way fastjson writes integer keys. It walks valid JSON with encoding/json's tokenizer and
// re-emits it compactly; ok is false if the input cannot be walked.
func unquoteDigitKeys(valid []byte) (out []byte, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(valid))
	dec.UseNumber()
	type frame struct {
		object bool
		n      int // keys and values seen in this container
	}
	var stack []frame
	// before writes the separator ahead of the next key or value and reports whether that
	// token is an object key.
	before := func() (isKey bool) {
		if len(stack) == 0 {
			return false
		}
		top := &stack[len(stack)-1]
		defer func() { top.n++ }()
		if top.object {
			if top.n%2 == 1 {
				out = append(out, ':')
				return false
			}
			if top.n > 0 {
				out = append(out, ',')
			}
			return true
		}
		if top.n > 0 {
			out = append(out, ',')
		}
		return false
	}
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil {
			return nil, false
		}
		switch v := tok.(type) {
		case json.Delim:
			if v == '{' || v == '[' {
				before()
				out = append(out, byte(v))
				stack = append(stack, frame{object: v == '{'})
				continue
			}
			out = append(out, byte(v))
			stack = stack[:len(stack)-1]
		case string:
			if before() && v != "" && strings.Trim(v, "0123456789") == "" {
				out = append(out, v...)
			} else {
				out = bodyAppendString(out, v)
			}
		default:
			before()
			b, err := json.Marshal(v)
			if err != nil {
				return nil, false
			}
			out = append(out, b...)
		}
	}
}

func BenchmarkQuoteBareKeys(b *testing.B) {
	body := []byte(`{"offsetTable":{"TopicTest@G1":{0:250,1:248,2:12,3:9},"%RETRY%G1@G1":{0:0},"T2@G2":{0:1,1:2}}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := QuoteBareKeys(body); err != nil {
			b.Fatal(err)
		}
	}
}
