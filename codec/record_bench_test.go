package codec

import (
	"bytes"
	"testing"
)

func benchMessage() Message {
	m := goldenMessage()
	m.Body = bytes.Repeat([]byte("m"), 1024)
	m.Properties = []byte("TAGS\x01TagA\x02KEYS\x01order-12345\x02UNIQ_KEY\x017F0000010001000000000000000A0001\x02WAIT\x01true\x02")
	return m
}

// BenchmarkRecordEncode1KiB: encode (with body CRC) of a 1 KiB message into a reused buffer.
func BenchmarkRecordEncode1KiB(b *testing.B) {
	m := benchMessage()
	buf := make([]byte, m.EncodedSize())
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Encode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordDecode1KiB: decode with CRC verification (what recovery does).
func BenchmarkRecordDecode1KiB(b *testing.B) {
	m := benchMessage()
	buf, _ := m.AppendRecord(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeRecord(buf, true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecordDecodeNoCRC1KiB: decode as the dispatcher does (no CRC) plus the
// property lookups it needs.
func BenchmarkRecordDecodeNoCRC1KiB(b *testing.B) {
	m := benchMessage()
	buf, _ := m.AppendRecord(nil)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		rec, err := DecodeRecord(buf, false)
		if err != nil {
			b.Fatal(err)
		}
		tags, _ := LookupProperty(rec.Properties, PropertyTags)
		_ = TagsHashCode(tags)
		_, _ = LookupProperty(rec.Properties, PropertyKeys)
	}
}
