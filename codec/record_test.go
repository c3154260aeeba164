package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
)

// goldenMessage is the message the hand-built record below describes.
func goldenMessage() Message {
	return Message{
		Topic:                     "TopicTest",
		QueueID:                   3,
		Flag:                      7,
		QueueOffset:               42,
		PhysicalOffset:            1024,
		SysFlag:                   0,
		BornTimestamp:             1700000000000,
		BornHost:                  netip.MustParseAddrPort("192.168.0.1:54321"),
		StoreTimestamp:            1700000000123,
		StoreHost:                 netip.MustParseAddrPort("127.0.0.1:10911"),
		ReconsumeTimes:            2,
		PreparedTransactionOffset: 0,
		Body:                      []byte("hello"),
		Properties:                []byte("TAGS\x01TagA\x02KEYS\x01k1 k2\x02"),
	}
}

// goldenRecord is written field by field from PROTOCOL.md §5.1, independently of the
// encoder: every byte is spelled out.
func goldenRecord() []byte {
	props := []byte("TAGS\x01TagA\x02KEYS\x01k1 k2\x02") // 21 bytes
	var b []byte
	b = append(b, 0x00, 0x00, 0x00, 91+5+9+21)                    // TOTALSIZE = 126
	b = append(b, 0xDA, 0xA3, 0x20, 0xA7)                         // MAGICCODE V1
	b = append(b, 0x36, 0x10, 0xA6, 0x86)                         // BODYCRC: crc32("hello") = 0x3610A686, & 0x7FFFFFFF unchanged
	b = append(b, 0x00, 0x00, 0x00, 0x03)                         // QUEUEID
	b = append(b, 0x00, 0x00, 0x00, 0x07)                         // FLAG
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 42)                        // QUEUEOFFSET
	b = append(b, 0, 0, 0, 0, 0, 0, 0x04, 0)                      // PHYSICALOFFSET 1024
	b = append(b, 0, 0, 0, 0)                                     // SYSFLAG
	b = append(b, 0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x00) // BORNTIMESTAMP 1700000000000
	b = append(b, 192, 168, 0, 1, 0x00, 0x00, 0xD4, 0x31)         // BORNHOST 192.168.0.1:54321
	b = append(b, 0x00, 0x00, 0x01, 0x8B, 0xCF, 0xE5, 0x68, 0x7B) // STORETIMESTAMP +123
	b = append(b, 127, 0, 0, 1, 0x00, 0x00, 0x2A, 0x9F)           // STOREHOST 127.0.0.1:10911
	b = append(b, 0, 0, 0, 2)                                     // RECONSUMETIMES
	b = append(b, 0, 0, 0, 0, 0, 0, 0, 0)                         // PREPARED_TRANSACTION_OFFSET
	b = append(b, 0, 0, 0, 5)                                     // BODYLEN
	b = append(b, 'h', 'e', 'l', 'l', 'o')                        // BODY
	b = append(b, 9)                                              // TOPICLEN
	b = append(b, "TopicTest"...)                                 // TOPIC
	b = append(b, 0, 21)                                          // PROPERTIESLEN
	b = append(b, props...)                                       // PROPERTIES
	return b
}

func TestRecordGoldenEncode(t *testing.T) {
	m := goldenMessage()
	want := goldenRecord()
	require.Equal(t, 126, len(want))
	require.Equal(t, len(want), m.EncodedSize())
	dst := make([]byte, m.EncodedSize())
	n, err := m.Encode(dst)
	require.NoError(t, err)
	require.Equal(t, len(want), n)
	require.Equal(t, want, dst)
}

func TestRecordGoldenDecode(t *testing.T) {
	rec, err := DecodeRecord(goldenRecord(), true)
	require.NoError(t, err)
	m := goldenMessage()
	require.Equal(t, int32(126), rec.TotalSize)
	require.Equal(t, MagicCodeV1, rec.MagicCode)
	require.Equal(t, int32(0x3610A686), rec.BodyCRC)
	require.Equal(t, m.QueueID, rec.QueueID)
	require.Equal(t, m.Flag, rec.Flag)
	require.Equal(t, m.QueueOffset, rec.QueueOffset)
	require.Equal(t, m.PhysicalOffset, rec.PhysicalOffset)
	require.Equal(t, m.BornTimestamp, rec.BornTimestamp)
	require.Equal(t, m.BornHost, rec.BornHost)
	require.Equal(t, m.StoreTimestamp, rec.StoreTimestamp)
	require.Equal(t, m.StoreHost, rec.StoreHost)
	require.Equal(t, m.ReconsumeTimes, rec.ReconsumeTimes)
	require.Equal(t, "hello", string(rec.Body))
	require.Equal(t, "TopicTest", string(rec.Topic))
	require.Equal(t, string(m.Properties), string(rec.Properties))
}

// The pinned Go client's own record decoder must read what we encode (it never
// checks the magic and always reads a 1-byte topic length).
func TestRecordDecodedByGoClient(t *testing.T) {
	m1 := goldenMessage()
	m2 := goldenMessage()
	m2.Topic = "Other"
	m2.QueueOffset = 43
	m2.PhysicalOffset = 1024 + 126
	m2.Body = bytes.Repeat([]byte("x"), 1000)
	m2.Properties = []byte("UNIQ_KEY\x01C0A80001000100000000000000000A\x02")
	var body []byte
	var err error
	body, err = m1.AppendRecord(body)
	require.NoError(t, err)
	body, err = m2.AppendRecord(body)
	require.NoError(t, err)

	got := primitive.DecodeMessage(body)
	require.Len(t, got, 2)
	require.Equal(t, "TopicTest", got[0].Topic)
	require.Equal(t, "hello", string(got[0].Body))
	require.Equal(t, int64(42), got[0].QueueOffset)
	require.Equal(t, int64(1024), got[0].CommitLogOffset)
	require.Equal(t, 3, got[0].Queue.QueueId)
	require.Equal(t, "192.168.0.1:54321", got[0].BornHost)
	require.Equal(t, "127.0.0.1:10911", got[0].StoreHost)
	require.Equal(t, int32(2), got[0].ReconsumeTimes)
	require.Equal(t, "TagA", got[0].GetTags())
	require.Equal(t, "k1 k2", got[0].GetKeys())
	require.Equal(t, "7F00000100002A9F0000000000000400", got[0].OffsetMsgId)
	require.Equal(t, "Other", got[1].Topic)
	require.Equal(t, m2.Body, got[1].Body)
	require.Equal(t, "C0A80001000100000000000000000A", got[1].MsgId)
}

func TestRecordIPv6AndV2RoundTrip(t *testing.T) {
	m := goldenMessage()
	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:40000")
	m.StoreHost = netip.MustParseAddrPort("[::1]:10911")
	m.Topic = "%RETRY%" + string(bytes.Repeat([]byte("g"), 150)) // > 127: V2 magic
	m.SysFlag = SysFlagCompressed | SysFlagTransactionCommit
	buf, err := m.AppendRecord(nil)
	require.NoError(t, err)
	require.Equal(t, 91+12+12+1+len(m.Body)+len(m.Topic)+len(m.Properties), len(buf))
	rec, err := DecodeRecord(buf, true)
	require.NoError(t, err)
	require.Equal(t, MagicCodeV2, rec.MagicCode)
	require.Equal(t, m.SysFlag|SysFlagBornHostV6|SysFlagStoreHostV6, rec.SysFlag)
	require.Equal(t, m.BornHost, rec.BornHost)
	require.Equal(t, m.StoreHost, rec.StoreHost)
	require.Equal(t, m.Topic, string(rec.Topic))
	require.Equal(t, m.StoreTimestamp, rec.StoreTimestamp)
	require.Equal(t, 48+20, StoreTimestampOffset(rec.SysFlag))
}

// A client-supplied sysFlag cannot claim IPv6 hosts for IPv4 addresses (PROTOCOL §5.3).
func TestRecordHostBitsComeFromAddresses(t *testing.T) {
	m := goldenMessage()
	m.SysFlag = -1 // 0xFFFFFFFF from a hostile client
	buf, err := m.AppendRecord(nil)
	require.NoError(t, err)
	require.Equal(t, 126, len(buf))
	rec, err := DecodeRecord(buf, true)
	require.NoError(t, err)
	require.Zero(t, rec.SysFlag&(SysFlagBornHostV6|SysFlagStoreHostV6))
}

func TestPatchRecord(t *testing.T) {
	m := goldenMessage()
	buf, err := m.AppendRecord(nil)
	require.NoError(t, err)
	PatchRecord(buf, 99, 123456789, 1800000000000)
	rec, err := DecodeRecord(buf, true)
	require.NoError(t, err)
	require.Equal(t, int64(99), rec.QueueOffset)
	require.Equal(t, int64(123456789), rec.PhysicalOffset)
	require.Equal(t, int64(1800000000000), rec.StoreTimestamp)
	require.Equal(t, m.BornTimestamp, rec.BornTimestamp)
}

func TestDecodeRecordRejectsEveryTruncation(t *testing.T) {
	full := goldenRecord()
	for cut := 0; cut < len(full); cut++ {
		_, err := DecodeRecord(full[:cut], true)
		require.ErrorIs(t, err, ErrRecordTruncated, "cut at %d", cut)
	}
}

func TestDecodeRecordErrors(t *testing.T) {
	var re *RecordError

	zero := make([]byte, 64)
	rec, err := DecodeRecord(zero, true)
	require.ErrorIs(t, err, ErrBadMagic)
	require.Zero(t, rec.TotalSize)
	require.ErrorAs(t, err, &re)
	require.Equal(t, "MAGICCODE", re.Field)

	blank := make([]byte, 300)
	PutBlankRecord(blank, 300)
	rec, err = DecodeRecord(blank, true)
	require.ErrorIs(t, err, ErrBlankRecord)
	require.Equal(t, int32(300), rec.TotalSize)
	require.Equal(t, []byte{0, 0, 1, 0x2C, 0xCB, 0xD4, 0x31, 0x94}, blank[:8])

	bad := goldenRecord()
	bad[88] ^= 0xFF // first body byte
	_, err = DecodeRecord(bad, true)
	require.ErrorIs(t, err, ErrBodyCRC)
	_, err = DecodeRecord(bad, false)
	require.NoError(t, err)

	// TOTALSIZE larger than the record's own lengths.
	big := append(goldenRecord(), 0, 0, 0, 0)
	binary.BigEndian.PutUint32(big, uint32(len(big)))
	_, err = DecodeRecord(big, true)
	require.ErrorIs(t, err, ErrRecordSize)

	// BODYLEN pointing past the record.
	lying := goldenRecord()
	binary.BigEndian.PutUint32(lying[84:], 1<<30)
	_, err = DecodeRecord(lying, true)
	require.ErrorIs(t, err, ErrRecordSize)
	require.ErrorAs(t, err, &re)
	require.Equal(t, "BODYLEN", re.Field)

	// Negative BODYLEN.
	binary.BigEndian.PutUint32(lying[84:], 0xFFFFFFFF)
	_, err = DecodeRecord(lying, true)
	require.ErrorIs(t, err, ErrRecordSize)

	// TOTALSIZE smaller than a record can be.
	small := goldenRecord()
	binary.BigEndian.PutUint32(small, 20)
	_, err = DecodeRecord(small, true)
	require.ErrorIs(t, err, ErrRecordSize)
}

func TestEncodeValidates(t *testing.T) {
	m := goldenMessage()
	m.Topic = ""
	_, err := m.AppendRecord(nil)
	require.ErrorIs(t, err, ErrTopicLength)
	m = goldenMessage()
	m.Topic = string(bytes.Repeat([]byte("t"), 256))
	_, err = m.AppendRecord(nil)
	require.ErrorIs(t, err, ErrTopicLength)
	m = goldenMessage()
	m.Properties = bytes.Repeat([]byte("p"), MaxPropertiesBytes+1)
	_, err = m.AppendRecord(nil)
	require.ErrorIs(t, err, ErrPropertiesLength)
	m = goldenMessage()
	m.StoreHost = netip.AddrPort{}
	_, err = m.AppendRecord(nil)
	require.ErrorIs(t, err, ErrHostAddress)
	m = goldenMessage()
	_, err = m.Encode(make([]byte, 10))
	require.ErrorIs(t, err, ErrBufferTooSmall)
}

func TestRecordCodecDoesNotAllocate(t *testing.T) {
	m := goldenMessage()
	m.Body = bytes.Repeat([]byte("a"), 1024)
	buf := make([]byte, m.EncodedSize())
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := m.Encode(buf); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs, "encode")
	allocs = testing.AllocsPerRun(100, func() {
		if _, err := DecodeRecord(buf, true); err != nil {
			t.Fatal(err)
		}
		PatchRecord(buf, 1, 2, 3)
	})
	require.Zero(t, allocs, "decode+patch")
	var id [56]byte
	allocs = testing.AllocsPerRun(100, func() {
		_ = AppendOffsetMsgID(id[:0], m.StoreHost, 1<<40)
	})
	require.Zero(t, allocs, "offset msg id")
}

func TestRecordErrorIsNamed(t *testing.T) {
	_, err := DecodeRecord([]byte{1, 2, 3}, false)
	require.EqualError(t, err, "codec: record truncated (field TOTALSIZE)")
	require.True(t, errors.Is(err, ErrRecordTruncated))
}
