package codec

// CommitLog record layout (PROTOCOL.md §5.1). All integers big-endian. The same bytes
// are stored in the CommitLog and sent in PULL / QUERY_MESSAGE / VIEW_MESSAGE_BY_ID bodies.
//
//	off  size     field
//	  0  4        TOTALSIZE                  whole record, this field included
//	  4  4        MAGICCODE                  V1 0xDAA320A7 (1-byte topic length), V2 0xDAA320AB (2-byte)
//	  8  4        BODYCRC                    crc32 IEEE of the stored body & 0x7FFFFFFF
//	 12  4        QUEUEID
//	 16  4        FLAG                       user flag
//	 20  8        QUEUEOFFSET                logical offset in (topic, queueId)
//	 28  8        PHYSICALOFFSET             CommitLog offset of this record
//	 36  4        SYSFLAG                    see the SysFlag constants
//	 40  8        BORNTIMESTAMP              ms
//	 48  8 | 20   BORNHOST                   IPv4 4 B + port int32, or IPv6 16 B + port (SysFlagBornHostV6)
//	 +0  8        STORETIMESTAMP             ms
//	 +8  8 | 20   STOREHOST                  (SysFlagStoreHostV6)
//	 +   4        RECONSUMETIMES
//	 +   8        PREPARED_TRANSACTION_OFFSET
//	 +   4        BODYLEN, then BODY
//	 +   1 | 2    TOPICLEN (V1 | V2), then TOPIC
//	 +   2        PROPERTIESLEN (int16), then PROPERTIES
//
// Size with IPv4 hosts and V1 magic: 91 + body + topic + properties.
//
// The END_OF_FILE blank record that pads the tail of a CommitLog file is 8 bytes:
// TOTALSIZE = bytes left in the file, MAGICCODE = BlankMagicCode.

import (
	"encoding/binary"
	"hash/crc32"
	"net/netip"
)

// Magic codes of CommitLog records.
const (
	MagicCodeV1    int32 = -626843481 // 0xDAA320A7: 1-byte topic length
	MagicCodeV2    int32 = -626843477 // 0xDAA320AB: 2-byte topic length
	BlankMagicCode int32 = -875286124 // 0xCBD43194: END_OF_FILE padding
)

// SysFlag bits (MessageSysFlag).
const (
	SysFlagCompressed          int32 = 0x1
	SysFlagMultiTags           int32 = 0x2
	SysFlagTransactionMask     int32 = 0xC
	SysFlagTransactionNot      int32 = 0x0
	SysFlagTransactionPrepare  int32 = 0x4
	SysFlagTransactionCommit   int32 = 0x8
	SysFlagTransactionRollback int32 = 0xC
	SysFlagBornHostV6          int32 = 0x10
	SysFlagStoreHostV6         int32 = 0x20
	SysFlagNeedUnwrap          int32 = 0x40
	SysFlagInnerBatch          int32 = 0x80
	SysFlagCompressionMask     int32 = 0x700
)

// Record geometry.
const (
	// BlankRecordBytes is the size of the END_OF_FILE record's meaningful part.
	BlankRecordBytes = 8
	// V1MaxTopicBytes is the longest topic a V1 (1-byte length) record carries; longer
	// topics get the V2 magic, as RocketMQ's autoMessageVersionOnTopicLen does.
	V1MaxTopicBytes = 127
	// MaxTopicBytes is the longest topic any record carries (retry and DLQ topics).
	MaxTopicBytes = 255
	// MaxPropertiesBytes is the int16 limit of PROPERTIESLEN.
	MaxPropertiesBytes = 32767
	// MinRecordBytes is the smallest possible record (IPv4 hosts, empty everything).
	MinRecordBytes = 91 // fixed fields + 1-byte topic length + 2-byte properties length, all else empty

	offTotalSize      = 0
	offMagic          = 4
	offBodyCRC        = 8
	offQueueID        = 12
	offFlag           = 16
	offQueueOffset    = 20
	offPhysicalOffset = 28
	offSysFlag        = 36
	offBornTimestamp  = 40
	offBornHost       = 48
	ipv4HostBytes     = 8
	ipv6HostBytes     = 20
)

// TransactionType returns the transaction bits of a sysFlag (one of SysFlagTransaction*).
func TransactionType(sysFlag int32) int32 { return sysFlag & SysFlagTransactionMask }

// ResetTransactionType replaces the transaction bits of sysFlag with t.
func ResetTransactionType(sysFlag, t int32) int32 {
	return sysFlag&^SysFlagTransactionMask | t&SysFlagTransactionMask
}

// Message holds the fields a record is encoded from. Body and Properties are not
// copied by Encode's callers until the record is written. Properties are the
// encoded 0x01/0x02 string (see AppendProperty).
type Message struct {
	Topic                     string
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	PhysicalOffset            int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	Properties                []byte
}

// hostBytes: an IPv4 address takes 4 bytes, anything else 16. Callers unmap
// IPv4-mapped IPv6 addresses (::ffff:a.b.c.d) from dual-stack sockets first if
// they want the 4-byte form.
func hostBytes(ap netip.AddrPort) int {
	if ap.Addr().Is4() {
		return ipv4HostBytes
	}
	return ipv6HostBytes
}

// hostSysFlag derives the host-size bits from the real addresses. The sysFlag of a
// send request is untrusted: its host bits decide the record's length, so they are
// never taken from the client (PROTOCOL.md §5.3).
func hostSysFlag(sysFlag int32, born, store netip.AddrPort) int32 {
	sysFlag &^= SysFlagBornHostV6 | SysFlagStoreHostV6
	if hostBytes(born) == ipv6HostBytes {
		sysFlag |= SysFlagBornHostV6
	}
	if hostBytes(store) == ipv6HostBytes {
		sysFlag |= SysFlagStoreHostV6
	}
	return sysFlag
}

// RecordSize is the encoded size of a record with these lengths and host kinds.
func RecordSize(bodyBytes, topicBytes, propertiesBytes int, bornHostV6, storeHostV6 bool) int {
	n := 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + ipv4HostBytes + 8 + ipv4HostBytes + 4 + 8 + 4 + bodyBytes + 1 + topicBytes + 2 + propertiesBytes
	if bornHostV6 {
		n += ipv6HostBytes - ipv4HostBytes
	}
	if storeHostV6 {
		n += ipv6HostBytes - ipv4HostBytes
	}
	if topicBytes > V1MaxTopicBytes {
		n++ // V2: 2-byte topic length
	}
	return n
}

// EncodedSize is the number of bytes Encode writes for m.
func (m *Message) EncodedSize() int {
	return RecordSize(len(m.Body), len(m.Topic), len(m.Properties),
		hostBytes(m.BornHost) == ipv6HostBytes, hostBytes(m.StoreHost) == ipv6HostBytes)
}

// Validate checks the lengths the record format limits.
func (m *Message) Validate() error {
	if len(m.Topic) == 0 || len(m.Topic) > MaxTopicBytes {
		return ErrTopicLength
	}
	if len(m.Properties) > MaxPropertiesBytes {
		return ErrPropertiesLength
	}
	if !m.BornHost.IsValid() || !m.StoreHost.IsValid() {
		return ErrHostAddress
	}
	return nil
}

// BodyCRC is RocketMQ's body checksum: CRC-32 (IEEE) & 0x7FFFFFFF.
func BodyCRC(body []byte) int32 { return int32(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

// Encode writes m as one record at the start of dst and returns the record length.
// It computes BODYCRC and sets the sysFlag host bits from the addresses. It does not
// allocate. dst must hold EncodedSize() bytes.
func (m *Message) Encode(dst []byte) (int, error) {
	return m.EncodeWithCRC(dst, BodyCRC(m.Body))
}

// EncodeWithCRC is Encode with a body CRC the caller computed already (for example
// once, outside the put lock).
func (m *Message) EncodeWithCRC(dst []byte, bodyCRC int32) (int, error) {
	if err := m.Validate(); err != nil {
		return 0, err
	}
	size := m.EncodedSize()
	if len(dst) < size {
		return 0, ErrBufferTooSmall
	}
	be := binary.BigEndian
	sysFlag := hostSysFlag(m.SysFlag, m.BornHost, m.StoreHost)
	magic := MagicCodeV1
	if len(m.Topic) > V1MaxTopicBytes {
		magic = MagicCodeV2
	}
	be.PutUint32(dst[offTotalSize:], uint32(size))
	be.PutUint32(dst[offMagic:], uint32(magic))
	be.PutUint32(dst[offBodyCRC:], uint32(bodyCRC))
	be.PutUint32(dst[offQueueID:], uint32(m.QueueID))
	be.PutUint32(dst[offFlag:], uint32(m.Flag))
	be.PutUint64(dst[offQueueOffset:], uint64(m.QueueOffset))
	be.PutUint64(dst[offPhysicalOffset:], uint64(m.PhysicalOffset))
	be.PutUint32(dst[offSysFlag:], uint32(sysFlag))
	be.PutUint64(dst[offBornTimestamp:], uint64(m.BornTimestamp))
	pos := offBornHost
	pos += putHost(dst[pos:], m.BornHost)
	be.PutUint64(dst[pos:], uint64(m.StoreTimestamp))
	pos += 8
	pos += putHost(dst[pos:], m.StoreHost)
	be.PutUint32(dst[pos:], uint32(m.ReconsumeTimes))
	pos += 4
	be.PutUint64(dst[pos:], uint64(m.PreparedTransactionOffset))
	pos += 8
	be.PutUint32(dst[pos:], uint32(len(m.Body)))
	pos += 4
	pos += copy(dst[pos:], m.Body)
	if magic == MagicCodeV2 {
		be.PutUint16(dst[pos:], uint16(len(m.Topic)))
		pos += 2
	} else {
		dst[pos] = byte(len(m.Topic))
		pos++
	}
	pos += copy(dst[pos:], m.Topic)
	be.PutUint16(dst[pos:], uint16(len(m.Properties)))
	pos += 2
	pos += copy(dst[pos:], m.Properties)
	return pos, nil
}

// AppendRecord appends m's record to dst.
func (m *Message) AppendRecord(dst []byte) ([]byte, error) {
	size := m.EncodedSize()
	start := len(dst)
	if cap(dst)-start < size {
		grown := make([]byte, start, start+size)
		copy(grown, dst)
		dst = grown
	}
	n, err := m.EncodeWithCRC(dst[start:start+size], BodyCRC(m.Body))
	if err != nil {
		return dst[:start], err
	}
	return dst[:start+n], nil
}

func putHost(dst []byte, ap netip.AddrPort) int {
	addr := ap.Addr()
	if addr.Is4() {
		a := addr.As4()
		copy(dst, a[:])
		binary.BigEndian.PutUint32(dst[4:], uint32(ap.Port()))
		return ipv4HostBytes
	}
	a := addr.As16()
	copy(dst, a[:])
	binary.BigEndian.PutUint32(dst[16:], uint32(ap.Port()))
	return ipv6HostBytes
}

// getHost decodes a host written by putHost; ok is false for a port outside 0..65535.
func getHost(src []byte, v6 bool) (ap netip.AddrPort, ok bool) {
	ipLen := 4
	if v6 {
		ipLen = 16
	}
	port := binary.BigEndian.Uint32(src[ipLen:])
	if port > 0xFFFF {
		return netip.AddrPort{}, false
	}
	if v6 {
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(src[:16])), uint16(port)), true
	}
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte(src[:4])), uint16(port)), true
}

// StoreTimestampOffset is the byte position of STORETIMESTAMP in a record with this sysFlag.
func StoreTimestampOffset(sysFlag int32) int {
	if sysFlag&SysFlagBornHostV6 != 0 {
		return offBornHost + ipv6HostBytes
	}
	return offBornHost + ipv4HostBytes
}

// PatchRecord sets the fields a CommitLog assigns at put time into an encoded record:
// queue offset, physical offset and store timestamp. The rest of the record (and its
// BODYCRC) is unchanged, so records can be encoded outside the put lock and patched
// inside it. rec must be a record produced by Encode.
func PatchRecord(rec []byte, queueOffset, physicalOffset, storeTimestamp int64) {
	be := binary.BigEndian
	be.PutUint64(rec[offQueueOffset:], uint64(queueOffset))
	be.PutUint64(rec[offPhysicalOffset:], uint64(physicalOffset))
	sysFlag := int32(be.Uint32(rec[offSysFlag:]))
	be.PutUint64(rec[StoreTimestampOffset(sysFlag):], uint64(storeTimestamp))
}

// PutBlankRecord writes the END_OF_FILE record that fills the rest of a CommitLog
// file: TOTALSIZE = bytesLeftInFile, MAGICCODE = BlankMagicCode. dst must hold 8 bytes.
func PutBlankRecord(dst []byte, bytesLeftInFile int) {
	binary.BigEndian.PutUint32(dst[offTotalSize:], uint32(bytesLeftInFile))
	blank := BlankMagicCode
	binary.BigEndian.PutUint32(dst[offMagic:], uint32(blank))
}

// Record is a decoded record. Body, Topic and Properties are views into the decoded
// buffer: valid as long as that buffer is.
type Record struct {
	TotalSize                 int32
	MagicCode                 int32
	BodyCRC                   int32
	QueueID                   int32
	Flag                      int32
	QueueOffset               int64
	PhysicalOffset            int64
	SysFlag                   int32
	BornTimestamp             int64
	BornHost                  netip.AddrPort
	StoreTimestamp            int64
	StoreHost                 netip.AddrPort
	ReconsumeTimes            int32
	PreparedTransactionOffset int64
	Body                      []byte
	Topic                     []byte
	Properties                []byte
}

// PeekRecordHeader reads TOTALSIZE and MAGICCODE of the record at b without checking
// anything else. ok is false when b holds fewer than 8 bytes.
func PeekRecordHeader(b []byte) (totalSize int32, magic int32, ok bool) {
	if len(b) < 8 {
		return 0, 0, false
	}
	return int32(binary.BigEndian.Uint32(b)), int32(binary.BigEndian.Uint32(b[4:])), true
}

// DecodeRecord decodes the record at the start of b. It never reads past
// TOTALSIZE or len(b) and does not allocate.
//
// At a blank (END_OF_FILE) record it returns ErrBlankRecord with rec.TotalSize set to
// the blank's size, so a reader can skip to the next file. Eight zero bytes give
// ErrBadMagic with rec.TotalSize 0: the never-written tail of a file. A record longer
// than b gives ErrRecordTruncated. With checkCRC, a body whose CRC differs from
// BODYCRC gives ErrBodyCRC. All errors are *RecordError naming the field.
func DecodeRecord(b []byte, checkCRC bool) (rec Record, err error) {
	fail := func(field string, e error) (Record, error) {
		return rec, &RecordError{Field: field, Err: e}
	}
	if len(b) < 8 {
		return fail("TOTALSIZE", ErrRecordTruncated)
	}
	be := binary.BigEndian
	rec.TotalSize = int32(be.Uint32(b[offTotalSize:]))
	rec.MagicCode = int32(be.Uint32(b[offMagic:]))
	switch rec.MagicCode {
	case MagicCodeV1, MagicCodeV2:
	case BlankMagicCode:
		return fail("MAGICCODE", ErrBlankRecord)
	default:
		return fail("MAGICCODE", ErrBadMagic)
	}
	if rec.TotalSize < MinRecordBytes {
		return fail("TOTALSIZE", ErrRecordSize)
	}
	if int(rec.TotalSize) > len(b) {
		return fail("TOTALSIZE", ErrRecordTruncated)
	}
	r := b[:rec.TotalSize]
	rec.BodyCRC = int32(be.Uint32(r[offBodyCRC:]))
	rec.QueueID = int32(be.Uint32(r[offQueueID:]))
	rec.Flag = int32(be.Uint32(r[offFlag:]))
	rec.QueueOffset = int64(be.Uint64(r[offQueueOffset:]))
	rec.PhysicalOffset = int64(be.Uint64(r[offPhysicalOffset:]))
	rec.SysFlag = int32(be.Uint32(r[offSysFlag:]))
	rec.BornTimestamp = int64(be.Uint64(r[offBornTimestamp:]))
	bornV6 := rec.SysFlag&SysFlagBornHostV6 != 0
	storeV6 := rec.SysFlag&SysFlagStoreHostV6 != 0
	// The fixed part up to BODYLEN, with the hosts this sysFlag announces.
	fixed := RecordSize(0, 0, 0, bornV6, storeV6) - 1 - 2
	if len(r) < fixed {
		return fail("SYSFLAG", ErrRecordSize)
	}
	pos := offBornHost
	var ok bool
	if rec.BornHost, ok = getHost(r[pos:], bornV6); !ok {
		return fail("BORNHOST", ErrHostAddress)
	}
	pos += hostLen(bornV6)
	rec.StoreTimestamp = int64(be.Uint64(r[pos:]))
	pos += 8
	if rec.StoreHost, ok = getHost(r[pos:], storeV6); !ok {
		return fail("STOREHOST", ErrHostAddress)
	}
	pos += hostLen(storeV6)
	rec.ReconsumeTimes = int32(be.Uint32(r[pos:]))
	pos += 4
	rec.PreparedTransactionOffset = int64(be.Uint64(r[pos:]))
	pos += 8
	bodyLen := int(int32(be.Uint32(r[pos:])))
	pos += 4
	if bodyLen < 0 || bodyLen > len(r)-pos {
		return fail("BODYLEN", ErrRecordSize)
	}
	rec.Body = r[pos : pos+bodyLen : pos+bodyLen]
	pos += bodyLen
	var topicLen int
	if rec.MagicCode == MagicCodeV2 {
		if len(r)-pos < 2 {
			return fail("TOPICLEN", ErrRecordSize)
		}
		topicLen = int(be.Uint16(r[pos:]))
		pos += 2
	} else {
		if len(r)-pos < 1 {
			return fail("TOPICLEN", ErrRecordSize)
		}
		topicLen = int(r[pos])
		pos++
	}
	if topicLen > len(r)-pos {
		return fail("TOPICLEN", ErrRecordSize)
	}
	rec.Topic = r[pos : pos+topicLen : pos+topicLen]
	pos += topicLen
	if len(r)-pos < 2 {
		return fail("PROPERTIESLEN", ErrRecordSize)
	}
	propsLen := int(int16(be.Uint16(r[pos:])))
	pos += 2
	if propsLen < 0 || propsLen > len(r)-pos {
		return fail("PROPERTIESLEN", ErrRecordSize)
	}
	rec.Properties = r[pos : pos+propsLen : pos+propsLen]
	pos += propsLen
	if pos != len(r) {
		return fail("TOTALSIZE", ErrRecordSize)
	}
	if checkCRC && BodyCRC(rec.Body) != rec.BodyCRC {
		return fail("BODYCRC", ErrBodyCRC)
	}
	return rec, nil
}

func hostLen(v6 bool) int {
	if v6 {
		return ipv6HostBytes
	}
	return ipv4HostBytes
}
