package codec

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"sync/atomic"
	"time"
)

// Message IDs (PROTOCOL.md §6).
//
// offsetMsgId, the broker's msgId: store host IP (4 or 16 bytes) + port int32 +
// CommitLog offset int64, as uppercase hex: 32 characters for IPv4, 56 for IPv6.
//
// UNIQ_KEY, the client's msgId (Java layout): IP (4 or 16) + pid int16 + class-loader
// hash int32 + milliseconds since the start of the current month int32 + counter int16,
// uppercase hex. The Go client writes the last 6 bytes in lowercase hex; decoders
// here accept either case.

const (
	offsetMsgIDLenV4 = 2 * (4 + 4 + 8)
	offsetMsgIDLenV6 = 2 * (16 + 4 + 8)
	uniqKeyLenV4     = 2 * (4 + 2 + 4 + 4 + 2)
	uniqKeyLenV6     = 2 * (16 + 2 + 4 + 4 + 2)
)

const upperHex = "0123456789ABCDEF"

func appendUpperHex(dst, src []byte) []byte {
	for _, b := range src {
		dst = append(dst, upperHex[b>>4], upperHex[b&0xF])
	}
	return dst
}

// AppendOffsetMsgID appends the offsetMsgId of the record at commitLogOffset stored
// by storeHost. It does not allocate when dst has room (32 or 56 bytes).
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, commitLogOffset int64) []byte {
	var raw [28]byte
	n := putHost(raw[:], storeHost)
	binary.BigEndian.PutUint64(raw[n:], uint64(commitLogOffset))
	return appendUpperHex(dst, raw[:n+8])
}

// OffsetMsgID returns the offsetMsgId string.
func OffsetMsgID(storeHost netip.AddrPort, commitLogOffset int64) string {
	var buf [offsetMsgIDLenV6]byte
	return string(AppendOffsetMsgID(buf[:0], storeHost, commitLogOffset))
}

// DecodeOffsetMsgID splits an offsetMsgId into store host and CommitLog offset.
func DecodeOffsetMsgID(id string) (storeHost netip.AddrPort, commitLogOffset int64, err error) {
	var raw [28]byte
	switch len(id) {
	case offsetMsgIDLenV4, offsetMsgIDLenV6:
	default:
		return netip.AddrPort{}, 0, ErrMessageID
	}
	n, err := hex.Decode(raw[:], []byte(id))
	if err != nil {
		return netip.AddrPort{}, 0, ErrMessageID
	}
	v6 := n == 28
	storeHost, ok := getHost(raw[:], v6)
	if !ok {
		return netip.AddrPort{}, 0, ErrMessageID
	}
	commitLogOffset = int64(binary.BigEndian.Uint64(raw[hostLen(v6):]))
	return storeHost, commitLogOffset, nil
}

// UniqKey is a decoded UNIQ_KEY (Java layout).
type UniqKey struct {
	IP                    netip.Addr
	PID                   uint16
	ClassLoaderHash       int32
	MillisSinceMonthStart int32
	Counter               uint16
}

// DecodeUniqKey decodes a 32- (IPv4) or 56-character (IPv6) UNIQ_KEY.
func DecodeUniqKey(key string) (UniqKey, error) {
	var raw [28]byte
	switch len(key) {
	case uniqKeyLenV4, uniqKeyLenV6:
	default:
		return UniqKey{}, ErrMessageID
	}
	n, err := hex.Decode(raw[:], []byte(key))
	if err != nil {
		return UniqKey{}, ErrMessageID
	}
	ipLen := n - 12
	var u UniqKey
	if ipLen == 4 {
		u.IP = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		u.IP = netip.AddrFrom16([16]byte(raw[:16]))
	}
	be := binary.BigEndian
	u.PID = be.Uint16(raw[ipLen:])
	u.ClassLoaderHash = int32(be.Uint32(raw[ipLen+2:]))
	u.MillisSinceMonthStart = int32(be.Uint32(raw[ipLen+6:]))
	u.Counter = be.Uint16(raw[ipLen+10:])
	return u, nil
}

// AppendUniqKey appends the UNIQ_KEY encoding of u (uppercase, Java layout).
func AppendUniqKey(dst []byte, u UniqKey) []byte {
	var raw [28]byte
	n := 0
	if u.IP.Is4() {
		a := u.IP.As4()
		n = copy(raw[:], a[:])
	} else {
		a := u.IP.As16()
		n = copy(raw[:], a[:])
	}
	be := binary.BigEndian
	be.PutUint16(raw[n:], u.PID)
	be.PutUint32(raw[n+2:], uint32(u.ClassLoaderHash))
	be.PutUint32(raw[n+6:], uint32(u.MillisSinceMonthStart))
	be.PutUint16(raw[n+10:], u.Counter)
	return appendUpperHex(dst, raw[:n+12])
}

// UniqKeyGenerator makes UNIQ_KEYs for messages that arrive without one, in Java's
// layout. Safe for concurrent use.
type UniqKeyGenerator struct {
	ip      netip.Addr
	pid     uint16
	seed    int32
	counter atomic.Uint32
	// month holds the start (ms) of the month the last key was made in; keys count
	// milliseconds from it.
	monthStartMillis atomic.Int64
	nextMonthMillis  atomic.Int64
}

// NewUniqKeyGenerator returns a generator for keys carrying ip and pid; seed takes
// the place of Java's class-loader hash (any per-process value).
func NewUniqKeyGenerator(ip netip.Addr, pid int, seed int32) *UniqKeyGenerator {
	return &UniqKeyGenerator{ip: ip, pid: uint16(pid), seed: seed}
}

// Append appends a new key made at now to dst.
func (g *UniqKeyGenerator) Append(dst []byte, now time.Time) []byte {
	ms := now.UnixMilli()
	if ms >= g.nextMonthMillis.Load() || ms < g.monthStartMillis.Load() {
		// Racing goroutines compute the same values; storing them twice is harmless.
		y, m, _ := now.Date()
		start := time.Date(y, m, 1, 0, 0, 0, 0, now.Location())
		g.monthStartMillis.Store(start.UnixMilli())
		g.nextMonthMillis.Store(start.AddDate(0, 1, 0).UnixMilli())
	}
	return AppendUniqKey(dst, UniqKey{
		IP:                    g.ip,
		PID:                   g.pid,
		ClassLoaderHash:       g.seed,
		MillisSinceMonthStart: int32(ms - g.monthStartMillis.Load()),
		Counter:               uint16(g.counter.Add(1)),
	})
}
