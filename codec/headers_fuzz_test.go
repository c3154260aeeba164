package codec

import (
	"bytes"
	"reflect"
	"testing"
)

// extFromFuzz turns fuzz bytes into an ExtFields map: NUL-separated key, value, key, ...
func extFromFuzz(data []byte) map[string]string {
	parts := bytes.Split(data, []byte{0})
	ext := make(map[string]string, len(parts)/2)
	for i := 0; i+1 < len(parts); i += 2 {
		ext[string(parts[i])] = string(parts[i+1])
	}
	return ext
}

func extToFuzz(ext map[string]string) []byte {
	var b []byte
	for i, k := range sortedKeys(ext, nil) {
		if i > 0 {
			b = append(b, 0)
		}
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, ext[k]...)
	}
	return b
}

// FuzzTypedHeaders: decoding random ExtFields into every typed header never panics and
// fails only with a *FieldError; a header that decodes re-encodes to a map that decodes to
// the same header.
func FuzzTypedHeaders(f *testing.F) {
	for _, tc := range headerCases() {
		f.Add(extToFuzz(tc.ext))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ext := extFromFuzz(data)
		for _, tc := range headerCases() {
			h := tc.new()
			if err := h.Decode(ext); err != nil {
				if _, ok := err.(*FieldError); !ok {
					t.Fatalf("%s: untyped error %v", tc.name, err)
				}
				continue
			}
			out := map[string]string{}
			h.Encode(out)
			again := tc.new()
			if err := again.Decode(out); err != nil {
				t.Fatalf("%s: re-encoded %q does not decode: %v", tc.name, out, err)
			}
			if !reflect.DeepEqual(h, again) {
				t.Fatalf("%s: round trip changed the header:\n%+v\n%+v", tc.name, h, again)
			}
		}
	})
}
