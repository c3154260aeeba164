package codec

import (
	"bytes"
	"encoding/hex"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
)

func TestJavaHashCode(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int32
	}{
		{"", 0},
		{"TagA", 2598919}, // PROTOCOL.md §4.3 Go capture
		{"TagB", 2598920},
		{"中文", 20013*31 + 25991},                   // two BMP chars
		{"😀", 0xD83D*31 + 0xDE00},                  // a surrogate pair in UTF-16
		{"hello world, a longer tag", -1130731654}, // wraps around int32
		{"\xff", 0xFFFD},                           // invalid UTF-8 decodes to U+FFFD as in Java
	} {
		require.Equal(t, tc.want, JavaHashCode(tc.in), "%q", tc.in)
		require.Equal(t, tc.want, JavaHashCodeBytes([]byte(tc.in)), "%q bytes", tc.in)
	}
	require.Equal(t, int64(2598919), TagsHashCode([]byte("TagA")))
	require.Equal(t, int64(-1130731654), TagsHashCode([]byte("hello world, a longer tag")), "sign-extended")
	require.Equal(t, int64(0), TagsHashCode(nil))
}

func TestPropertiesRoundTripAndClientParity(t *testing.T) {
	in := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ABC", "a": "x\x01y"}
	enc := EncodeProperties(in)
	require.Equal(t, "KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01ABC\x02a\x01x\x01y\x02", string(enc))
	require.Equal(t, in, DecodeProperties(enc))

	// The pinned Go client parses the same bytes to the same map. (It drops a value
	// that itself contains 0x01, where Java and we keep the rest of the piece, so
	// that pair is left out of the comparison.)
	plain := map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "ABC"}
	var cm primitive.Message
	cm.UnmarshalProperties(EncodeProperties(plain))
	require.Equal(t, plain, cm.GetProperties())

	// Without the trailing separator (Apache RocketMQ on disk) the result is the same.
	require.Equal(t, in, DecodeProperties(enc[:len(enc)-1]))

	v, ok := LookupProperty(enc, "TAGS")
	require.True(t, ok)
	require.Equal(t, "TagA", string(v))
	_, ok = LookupProperty(enc, "DELAY")
	require.False(t, ok)

	allocs := testing.AllocsPerRun(100, func() { _, _ = LookupProperty(enc, "UNIQ_KEY") })
	require.Zero(t, allocs)
}

func TestPropertiesMalformedPiecesSkipped(t *testing.T) {
	// "\x01v" (no key), "k\x01" (no value), "x" (no separator), "" (empty piece).
	props := []byte("\x01v\x02k\x01\x02x\x02\x02GOOD\x01yes\x02GOOD\x01last")
	require.Equal(t, map[string]string{"GOOD": "last"}, DecodeProperties(props))
	v, ok := LookupProperty(props, "GOOD")
	require.True(t, ok)
	require.Equal(t, "last", string(v), "the last duplicate wins")
}

func TestAppendPropertyAndWithout(t *testing.T) {
	var p []byte
	p = AppendProperty(p, "DELAY", "3")
	p = AppendProperty(p, "EMPTY", "")
	p = AppendProperty(p, "", "x")
	p = AppendProperty(p, "REAL_TOPIC", "T")
	require.Equal(t, "DELAY\x013\x02REAL_TOPIC\x01T\x02", string(p))
	require.Equal(t, "REAL_TOPIC\x01T\x02", string(AppendPropertiesWithout(nil, p, "DELAY")))
	require.Equal(t, "", string(AppendPropertiesWithout(nil, p, "DELAY", "REAL_TOPIC")))
}

func TestOffsetMsgID(t *testing.T) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	require.Equal(t, "7F00000100002A9F0000000000000000", OffsetMsgID(host, 0)) // PROTOCOL.md §6.1
	id := OffsetMsgID(host, 1<<40+5)
	require.Equal(t, "7F00000100002A9F0000010000000005", id)
	h, off, err := DecodeOffsetMsgID(id)
	require.NoError(t, err)
	require.Equal(t, host, h)
	require.Equal(t, int64(1<<40+5), off)
	// lowercase decodes too
	h, off, err = DecodeOffsetMsgID(strings.ToLower(id))
	require.NoError(t, err)
	require.Equal(t, host, h)
	require.Equal(t, int64(1<<40+5), off)

	v6 := netip.MustParseAddrPort("[2001:db8::7]:10911")
	id6 := OffsetMsgID(v6, 77)
	require.Len(t, id6, 56)
	h, off, err = DecodeOffsetMsgID(id6)
	require.NoError(t, err)
	require.Equal(t, v6, h)
	require.Equal(t, int64(77), off)

	for _, bad := range []string{"", "7F00", "ZZ00000100002A9F0000000000000000", id + "00", "7F000001FFFF2A9F0000000000000000" /* port > 65535 */} {
		_, _, err := DecodeOffsetMsgID(bad)
		require.ErrorIs(t, err, ErrMessageID, "%q", bad)
	}
}

func TestUniqKey(t *testing.T) {
	// Go client form: uppercase prefix, lowercase time+counter (PROTOCOL.md §6.2).
	u, err := DecodeUniqKey("C00002024949000000000745bd780001")
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddr("192.0.2.2"), u.IP)
	require.Equal(t, uint16(0x4949), u.PID)
	require.Equal(t, int32(0), u.ClassLoaderHash)
	require.Equal(t, int32(0x0745bd78), u.MillisSinceMonthStart)
	require.Equal(t, uint16(1), u.Counter)
	require.Equal(t, "C00002024949000000000745BD780001", string(AppendUniqKey(nil, u)))

	g := NewUniqKeyGenerator(netip.MustParseAddr("10.1.2.3"), 0x1234, 0x55667788)
	now := time.Date(2026, 12, 2, 1, 0, 0, 5_000_000, time.UTC)
	k1 := string(g.Append(nil, now))
	k2 := string(g.Append(nil, now))
	require.Len(t, k1, 32)
	require.NotEqual(t, k1, k2)
	d, err := DecodeUniqKey(k1)
	require.NoError(t, err)
	require.Equal(t, netip.MustParseAddr("10.1.2.3"), d.IP)
	require.Equal(t, uint16(0x1234), d.PID)
	require.Equal(t, int32(0x55667788), d.ClassLoaderHash)
	require.Equal(t, int32((24+1)*3600*1000+5), d.MillisSinceMonthStart) // Dec 2 01:00:00.005 is 1 day 1 h into the month
}

func TestUniqKeyRejects(t *testing.T) {
	for _, bad := range []string{"", "C0000202", "G00002024949000000000745bd780001"} {
		_, err := DecodeUniqKey(bad)
		require.ErrorIs(t, err, ErrMessageID, "%q", bad)
	}
}

func TestBatchGoCapture(t *testing.T) {
	// PROTOCOL.md §5.6: two items "b1","b2" with no properties, as the Go client sends them.
	capture, err := hex.DecodeString("00000018" + "00000000" + "00000000" + "00000000" + "00000002" + "6231" + "0000" +
		"00000018" + "00000000" + "00000000" + "00000000" + "00000002" + "6232" + "0000")
	require.NoError(t, err)
	r := NewBatchReader(capture)
	var bodies []string
	for {
		it, ok, err := r.Next()
		require.NoError(t, err)
		if !ok {
			break
		}
		require.Empty(t, it.Properties)
		bodies = append(bodies, string(it.Body))
	}
	require.Equal(t, []string{"b1", "b2"}, bodies)

	var enc []byte
	enc = AppendBatchItem(enc, 0, []byte("b1"), nil)
	enc = AppendBatchItem(enc, 0, []byte("b2"), nil)
	require.Equal(t, capture, enc)
}

func TestBatchMalformed(t *testing.T) {
	good := AppendBatchItem(nil, 9, []byte("body"), []byte("KEYS\x01k\x02"))
	it, ok, err := func() (BatchItem, bool, error) { r := NewBatchReader(good); return r.Next() }()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, int32(9), it.Flag)
	require.Equal(t, "body", string(it.Body))
	require.Equal(t, "KEYS\x01k\x02", string(it.Properties))

	for cut := 1; cut < len(good); cut++ {
		r := NewBatchReader(good[:cut])
		_, ok, err := r.Next()
		require.False(t, ok)
		require.ErrorIs(t, err, ErrBatchBody, "cut %d", cut)
	}
	lying := bytes.Clone(good)
	lying[19] = 0xFF // BODYLEN low byte: past the item
	r := NewBatchReader(lying)
	_, _, err = r.Next()
	var re *RecordError
	require.ErrorAs(t, err, &re)
	require.Equal(t, "BODYLEN", re.Field)
	// after an error the reader is exhausted
	_, ok, err = r.Next()
	require.False(t, ok)
	require.NoError(t, err)
}

func TestCompressionRoundTrip(t *testing.T) {
	body := bytes.Repeat([]byte("ringmq compresses bodies of 4 KiB and more. "), 200)
	for _, ct := range []CompressionType{CompressionZLIB, CompressionZSTD, CompressionLZ4} {
		c, err := Compress(ct, 5, body)
		require.NoError(t, err, ct.String())
		require.Less(t, len(c), len(body)/4, ct.String())
		flag := WithCompression(SysFlagTransactionCommit, ct)
		got, compressed := CompressionOf(flag)
		require.True(t, compressed)
		require.Equal(t, ct, got)
		out, err := Decompress(flag, c, len(body))
		require.NoError(t, err, ct.String())
		require.Equal(t, body, out, ct.String())
		_, err = Decompress(flag, c, len(body)-1)
		require.ErrorIs(t, err, ErrDecompressedTooLarge, ct.String())
		_, err = Decompress(flag, c[:len(c)/2], len(body))
		require.ErrorIs(t, err, ErrCompression, ct.String())
	}
	// bit 0 alone (Go and 4.x clients) means zlib
	z, err := Compress(CompressionZLIB, 5, body)
	require.NoError(t, err)
	out, err := Decompress(SysFlagCompressed, z, 1<<20)
	require.NoError(t, err)
	require.Equal(t, body, out)
	// uncompressed passes through
	out, err = Decompress(0, body, 1)
	require.NoError(t, err)
	require.Equal(t, body, out)
	_, err = Compress(CompressionType(7), 5, body)
	require.ErrorIs(t, err, ErrCompression)
}
