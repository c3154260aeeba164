package codec

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Fuzz targets for the message-record decoders. Seed corpora live in
// testdata/fuzz/<Target>/ and are regenerated with
//
//	go test ./codec -run TestWriteRecordSeedCorpus -record-seeds
var writeRecordSeeds = flag.Bool("record-seeds", false, "rewrite the record fuzz seed corpora under testdata/fuzz")

func recordSeeds() [][]byte {
	g := goldenMessage()
	v6 := goldenMessage()
	v6.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1")
	v6.StoreHost = netip.MustParseAddrPort("[::1]:10911")
	v6.Topic = "%RETRY%" + strings.Repeat("g", 130)
	a, _ := g.AppendRecord(nil)
	b, _ := v6.AppendRecord(nil)
	blank := make([]byte, 16)
	PutBlankRecord(blank, 16)
	return [][]byte{a, b, append(bytes.Clone(a), b...), blank, make([]byte, 8), a[:50]}
}

func FuzzDecodeRecord(f *testing.F) {
	for _, s := range recordSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := DecodeRecord(data, false)
		if err != nil {
			return
		}
		if int(rec.TotalSize) > len(data) {
			t.Fatalf("record of %d bytes decoded from %d", rec.TotalSize, len(data))
		}
		m := Message{
			Topic: string(rec.Topic), QueueID: rec.QueueID, Flag: rec.Flag, QueueOffset: rec.QueueOffset,
			PhysicalOffset: rec.PhysicalOffset, SysFlag: rec.SysFlag, BornTimestamp: rec.BornTimestamp,
			BornHost: rec.BornHost, StoreTimestamp: rec.StoreTimestamp, StoreHost: rec.StoreHost,
			ReconsumeTimes: rec.ReconsumeTimes, PreparedTransactionOffset: rec.PreparedTransactionOffset,
			Body: rec.Body, Properties: rec.Properties,
		}
		if m.Validate() != nil {
			return // e.g. an empty topic decodes but is not encodable
		}
		out := make([]byte, m.EncodedSize())
		if _, err := m.EncodeWithCRC(out, rec.BodyCRC); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		again, err := DecodeRecord(out, false)
		if err != nil {
			t.Fatalf("decode of re-encoded record: %v", err)
		}
		if string(again.Topic) != string(rec.Topic) || !bytes.Equal(again.Body, rec.Body) ||
			!bytes.Equal(again.Properties, rec.Properties) || again.QueueOffset != rec.QueueOffset ||
			again.PhysicalOffset != rec.PhysicalOffset || again.BornHost != rec.BornHost ||
			again.StoreHost != rec.StoreHost || again.SysFlag != rec.SysFlag || again.BodyCRC != rec.BodyCRC {
			t.Fatalf("round trip changed the record:\n%+v\n%+v", rec, again)
		}
		// Same magic the encoder would choose → byte-identical.
		wantMagic := MagicCodeV1
		if len(rec.Topic) > V1MaxTopicBytes {
			wantMagic = MagicCodeV2
		}
		if rec.MagicCode == wantMagic && !bytes.Equal(out, data[:rec.TotalSize]) {
			t.Fatalf("re-encoded bytes differ")
		}
	})
}

func FuzzProperties(f *testing.F) {
	for _, s := range [][]byte{
		[]byte("TAGS\x01TagA\x02KEYS\x01k1 k2\x02"), []byte("TAGS\x01TagA"), []byte("\x01\x02\x01"),
		[]byte("a\x01b\x01c\x02a\x01d"), {},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := DecodeProperties(data)
		reenc := AppendPropertiesWithout(nil, data)
		require.NoError(t, ValidateProperties(reenc))
		// The re-encoding keeps the well-formed pairs: all of m but for a name whose last
		// value holds a 0x01 (dropped, see ValidateProperties), which then keeps its last
		// 0x01-free value, if any.
		strict := map[string]string{}
		for _, piece := range bytes.Split(data, []byte{PropertySeparator}) {
			if _, problem, _ := checkPropertyPiece(piece); problem == 0 {
				k, v, _ := bytes.Cut(piece, []byte{NameValueSeparator})
				strict[string(k)] = string(v)
			}
		}
		require.Equal(t, strict, DecodeProperties(reenc))
		for k, v := range m {
			if !strings.Contains(v, "\x01") {
				require.Equal(t, v, strict[k], "key %q", k)
			}
		}
		for k, v := range m {
			got, ok := LookupProperty(data, k)
			if !ok || string(got) != v {
				t.Fatalf("lookup %q = %q,%v; map says %q", k, got, ok, v)
			}
		}
		require.Equal(t, m, DecodeProperties(EncodeProperties(m)))
	})
}

func FuzzBatchBody(f *testing.F) {
	var two []byte
	two = AppendBatchItem(two, 0, []byte("b1"), nil)
	two = AppendBatchItem(two, 3, []byte("b2"), []byte("KEYS\x01k\x02"))
	f.Add(two)
	f.Add(two[:10])
	f.Add([]byte{0, 0, 0, 0x16, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewBatchReader(data)
		var reenc []byte
		for {
			it, ok, err := r.Next()
			if err != nil || !ok {
				break
			}
			reenc = AppendBatchItem(reenc, it.Flag, it.Body, it.Properties)
		}
		// Every item read back from the re-encoding is the same.
		r1, r2 := NewBatchReader(data), NewBatchReader(reenc)
		for {
			a, ok1, err1 := r1.Next()
			b, ok2, err2 := r2.Next()
			if err1 != nil || !ok1 {
				if ok2 || err2 != nil {
					t.Fatalf("re-encoding has extra items or errors: %v", err2)
				}
				return
			}
			if a.Flag != b.Flag || !bytes.Equal(a.Body, b.Body) || !bytes.Equal(a.Properties, b.Properties) {
				t.Fatalf("item changed")
			}
		}
	})
}

func FuzzMessageID(f *testing.F) {
	f.Add("7F00000100002A9F0000000000000000")
	f.Add("C00002024949000000000745bd780001")
	f.Add(OffsetMsgID(netip.MustParseAddrPort("[2001:db8::7]:10911"), 77))
	f.Add("xyz")
	f.Fuzz(func(t *testing.T, id string) {
		if host, off, err := DecodeOffsetMsgID(id); err == nil {
			if got := OffsetMsgID(host, off); got != strings.ToUpper(id) {
				t.Fatalf("offset msg id %q re-encodes as %q", id, got)
			}
		}
		if u, err := DecodeUniqKey(id); err == nil {
			if got := string(AppendUniqKey(nil, u)); got != strings.ToUpper(id) {
				t.Fatalf("uniq key %q re-encodes as %q", id, got)
			}
		}
	})
}

func FuzzDecompress(f *testing.F) {
	body := bytes.Repeat([]byte("abc"), 100)
	for _, ct := range []CompressionType{CompressionZLIB, CompressionZSTD, CompressionLZ4} {
		c, _ := Compress(ct, 5, body)
		f.Add(int32(ct)<<8|1, c)
	}
	f.Add(int32(1), []byte{0x78, 0x9c, 0xff})
	f.Fuzz(func(t *testing.T, sysFlag int32, data []byte) {
		const maxBytes = 1 << 16
		out, err := Decompress(sysFlag, data, maxBytes)
		if err == nil && len(out) > maxBytes && sysFlag&SysFlagCompressed != 0 {
			t.Fatalf("decompressed %d bytes past the %d limit", len(out), maxBytes)
		}
	})
}

// TestWriteRecordSeedCorpus writes the f.Add seeds above as files, so the corpus
// is visible in the tree and shared with `go test -fuzz` campaigns.
func TestWriteRecordSeedCorpus(t *testing.T) {
	if !*writeRecordSeeds {
		t.Skip("run with -record-seeds to rewrite the corpus")
	}
	write := func(target string, i int, lines ...string) {
		dir := filepath.Join("testdata", "fuzz", target)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		body := "go test fuzz v1\n" + strings.Join(lines, "\n") + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644))
	}
	for i, s := range recordSeeds() {
		write("FuzzDecodeRecord", i, fmt.Sprintf("[]byte(%q)", s))
	}
	var two []byte
	two = AppendBatchItem(two, 0, []byte("b1"), nil)
	two = AppendBatchItem(two, 3, []byte("b2"), []byte("KEYS\x01k\x02"))
	write("FuzzBatchBody", 0, fmt.Sprintf("[]byte(%q)", two))
	write("FuzzBatchBody", 1, fmt.Sprintf("[]byte(%q)", two[:30]))
	for i, s := range []string{"TAGS\x01TagA\x02KEYS\x01k1 k2\x02", "a\x01b\x01c\x02a\x01d", "\x01\x02\x01"} {
		write("FuzzProperties", i, fmt.Sprintf("[]byte(%q)", s))
	}
	for i, s := range []string{"7F00000100002A9F0000000000000000", "C00002024949000000000745bd780001",
		OffsetMsgID(netip.MustParseAddrPort("[2001:db8::7]:10911"), 77)} {
		write("FuzzMessageID", i, fmt.Sprintf("string(%q)", s))
	}
	body := bytes.Repeat([]byte("abc"), 100)
	for i, ct := range []CompressionType{CompressionZLIB, CompressionZSTD, CompressionLZ4} {
		c, err := Compress(ct, 5, body)
		require.NoError(t, err)
		write("FuzzDecompress", i, fmt.Sprintf("int32(%d)", int32(ct)<<8|1), fmt.Sprintf("[]byte(%q)", c))
	}
}
