package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
)

// refDecodeJSONHeader is the reference for the hand-written JSON header decoder: the
// semantics documented in header_json.go, implemented with encoding/json doing all the
// JSON work (syntax, depth, string unescaping, number parsing). Keys and values are read
// in order with the streaming API so repeated keys behave as documented.
func refDecodeJSONHeader(data []byte) (*RemotingCommand, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("invalid JSON")
	}
	if t := bytes.TrimLeft(data, " \t\r\n"); t[0] != '{' {
		return nil, fmt.Errorf("not an object")
	}
	c := &RemotingCommand{}
	extPresent := false
	var ext map[string]string
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, err
		}
		switch key {
		case "code":
			err = json.Unmarshal(raw, &c.Code)
		case "version":
			err = json.Unmarshal(raw, &c.Version)
		case "opaque":
			err = json.Unmarshal(raw, &c.Opaque)
		case "flag":
			err = json.Unmarshal(raw, &c.Flag)
		case "language":
			switch raw[0] {
			case '"':
				var name string
				if err = json.Unmarshal(raw, &name); err == nil {
					l, ok := ParseLanguageCode(name)
					if !ok {
						l = LanguageOther
					}
					c.Language = l
				}
			case 'n':
			default:
				var n uint8
				if err = json.Unmarshal(raw, &n); err == nil {
					c.Language = LanguageCode(n)
				}
			}
		case "remark":
			if raw[0] != '"' && raw[0] != 'n' {
				return nil, fmt.Errorf("remark type")
			}
			err = json.Unmarshal(raw, &c.Remark)
		case "extFields":
			switch raw[0] {
			case 'n':
				ext, extPresent = nil, false
			case '{':
				if ext == nil {
					ext = map[string]string{}
				}
				extPresent = true
				err = refDecodeExt(raw, ext)
			default:
				return nil, fmt.Errorf("extFields type")
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if extPresent {
		c.ExtFields = ext
	}
	return c, nil
}

func refDecodeExt(raw []byte, ext map[string]string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return err
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		switch b := v[0]; {
		case b == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return err
			}
			ext[tok.(string)] = s
		case b == 'n':
			ext[tok.(string)] = ""
		case b == 't' || b == 'f' || b == '-' || (b >= '0' && b <= '9'):
			ext[tok.(string)] = string(v)
		default:
			return fmt.Errorf("ext value type")
		}
	}
	return nil
}

func headerFieldsEqual(a, b *RemotingCommand) bool {
	if a.Code != b.Code || a.Language != b.Language || a.Version != b.Version || a.Opaque != b.Opaque ||
		a.Flag != b.Flag || a.Remark != b.Remark || (a.ExtFields == nil) != (b.ExtFields == nil) ||
		len(a.ExtFields) != len(b.ExtFields) {
		return false
	}
	for k, v := range a.ExtFields {
		if w, ok := b.ExtFields[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func jsonHeaderSeeds() []string {
	return []string{
		`{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}`,
		`{"code":310,"language":"JAVA","version":479,"opaque":42,"flag":0,"extFields":{"a":"PG","b":"T","c":"TBW102","d":"4","e":"1","f":"0","g":"1700000000000","h":"0","i":"KEYS\u0001k\u0002","j":"0","k":"false","l":"16","m":"false","n":"broker-a"},"serializeTypeCurrentRPC":"JSON"}`,
		`{"code":0,"extFields":{"haServerAddr":"10.0.0.1:10912","masterAddr":""},"flag":1,"language":"JAVA","opaque":17,"serializeTypeCurrentRPC":"JSON","version":479}`,
		` {"code":-1,"language":13,"remark":"\ud83d\ude00\u00e9\n\"","extFields":{"n":1.5e3,"t":true,"z":null},"x":[{"y":[]}]} `,
		`{"c\u006fde":5,"code":null,"extFields":{"a":"1"},"extFields":{"b":"2","a":"3"},"extFields":null}`,
		"{\"remark\":\"a\xffb\\ud800c\\udc00\"}",
		`{"code":1.0}`,
		`{"language":"NODE_JS","flag":2147483647,"opaque":-2147483648}`,
	}
}

// FuzzJSONHeader is the differential test of the hand-written JSON header decoder against
// encoding/json (refDecodeJSONHeader): same accept/reject, same values. Accepted headers
// are then re-encoded with the hand-written encoder, and that output must decode to the
// same values with both decoders.
func FuzzJSONHeader(f *testing.F) {
	for _, s := range jsonHeaderSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := &RemotingCommand{}
		gotErr := decodeJSONHeader(got, data)
		want, wantErr := refDecodeJSONHeader(data)
		if errors.Is(gotErr, ErrHeaderLimit) && wantErr == nil {
			return // valid JSON with a field over its cap: encoding/json has no caps
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("accept mismatch on %q: ours %v, encoding/json %v", data, gotErr, wantErr)
		}
		if gotErr != nil {
			return
		}
		if !headerFieldsEqual(got, want) {
			t.Fatalf("value mismatch on %q:\nours %+v\nref  %+v", data, got, want)
		}
		enc := appendJSONHeader(nil, got)
		again := &RemotingCommand{}
		if err := decodeJSONHeader(again, enc); err != nil {
			t.Fatalf("our encoding %q does not decode: %v", enc, err)
		}
		ref, err := refDecodeJSONHeader(enc)
		if err != nil {
			t.Fatalf("encoding/json rejects our encoding %q: %v", enc, err)
		}
		if !headerFieldsEqual(got, again) || !headerFieldsEqual(got, ref) {
			t.Fatalf("round trip of %q via %q changed values", data, enc)
		}
	})
}

// FuzzJSONEncode: any field values encode to JSON that encoding/json accepts and that both
// decoders read back as the values, with invalid UTF-8 replaced by U+FFFD byte by byte.
func FuzzJSONEncode(f *testing.F) {
	f.Add(int32(10), byte(9), int32(317), int32(1), int32(0), "", "topic", "TopicTest", "properties", "K\x01v\x02")
	f.Add(int32(-1), byte(200), int32(0), int32(-5), int32(3), "r\"\\\n\xff", "", "", "\xc3", "\u2028")
	f.Fuzz(func(t *testing.T, code int32, lang byte, version, opaque, flag int32, remark, k1, v1, k2, v2 string) {
		in := &RemotingCommand{Code: code, Language: LanguageCode(lang), Version: version, Opaque: opaque,
			Flag: flag, Remark: remark, ExtFields: map[string]string{k1: v1, k2: v2}}
		enc := appendJSONHeader(nil, in)
		want := &RemotingCommand{Code: code, Language: LanguageCode(lang), Version: version, Opaque: opaque,
			Flag: flag, Remark: replaceInvalidUTF8(remark), ExtFields: map[string]string{}}
		// Keys that differ only in invalid bytes may collide after the replacement; the
		// sorted encoder writes them in key order, so the later key's value wins.
		for _, k := range sortedKeys(in.ExtFields, nil) {
			want.ExtFields[replaceInvalidUTF8(k)] = replaceInvalidUTF8(in.ExtFields[k])
		}
		got := &RemotingCommand{}
		if err := decodeJSONHeader(got, enc); err != nil {
			// The decoder caps fields on their encoded length (before copying); the encoder has no
			// caps, and invalid bytes become 6-byte \ufffd escapes. Only a header longer than the
			// smallest cap can be refused for that.
			if errors.Is(err, ErrHeaderLimit) && len(enc) > MaxExtFieldKeyBytes {
				return
			}
			t.Fatalf("decode %q: %v", enc, err)
		}
		ref, err := refDecodeJSONHeader(enc)
		if err != nil {
			t.Fatalf("encoding/json rejects %q: %v", enc, err)
		}
		if !headerFieldsEqual(got, want) || !headerFieldsEqual(ref, want) {
			t.Fatalf("round trip via %q:\nin   %+v\nours %+v\nref  %+v", enc, want, got, ref)
		}
	})
}

// replaceInvalidUTF8 replaces each byte of invalid UTF-8 with U+FFFD (not each run, which
// is what strings.ToValidUTF8 does): encoding/json's rule.
func replaceInvalidUTF8(s string) string {
	var b []byte
	for _, r := range s { // ranging over a string yields U+FFFD per invalid byte
		b = fmt.Appendf(b, "%c", r)
	}
	return string(b)
}
