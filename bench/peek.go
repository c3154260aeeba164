package bench

import (
	"bytes"
	"encoding/binary"

	"github.com/ringmq/ringmq/codec"
)

// peekResponse reads the code, opaque and flag of a JSON-serialized frame (payload after
// the length word) without decoding the rest of the header: a send response's extFields
// (msgId, queueOffset, ...) go unread, where codec.DecodeCommandInto would copy them into
// a map for every response. It scans the header's top-level keys only, skipping nested
// values whole. ok is false when the frame is not JSON-serialized, not in the plain shape
// (a key with an escape, a field that is not a small integer, a field missing) or not
// well-formed as far as it reads; the caller then decodes it in full, which also reports
// what is wrong.
func peekResponse(payload []byte) (code, opaque, flag int32, ok bool) {
	if len(payload) < 4 {
		return 0, 0, 0, false
	}
	word := binary.BigEndian.Uint32(payload)
	headerLen := int(word & 0xFFFFFF)
	if codec.SerializeType(word>>24) != codec.SerializeJSON || headerLen > len(payload)-4 {
		return 0, 0, 0, false
	}
	s := peekScanner{b: payload[4 : 4+headerLen]}
	var seen uint8
	s.space()
	if !s.byte('{') {
		return 0, 0, 0, false
	}
	s.space()
	if s.byte('}') {
		return 0, 0, 0, false
	}
	for {
		s.space()
		key, good := s.key()
		if !good {
			return 0, 0, 0, false
		}
		s.space()
		if !s.byte(':') {
			return 0, 0, 0, false
		}
		s.space()
		var dst *int32
		var bit uint8
		switch string(key) {
		case "code":
			dst, bit = &code, 1
		case "opaque":
			dst, bit = &opaque, 2
		case "flag":
			dst, bit = &flag, 4
		}
		if dst != nil {
			v, good := s.int32()
			if !good {
				return 0, 0, 0, false
			}
			*dst, seen = v, seen|bit
		} else if !s.skipValue() {
			return 0, 0, 0, false
		}
		s.space()
		if s.byte(',') {
			continue
		}
		if !s.byte('}') {
			return 0, 0, 0, false
		}
		break
	}
	s.space()
	return code, opaque, flag, seen == 7 && s.i == len(s.b)
}

// peekScanner is peekResponse's cursor over a JSON header.
type peekScanner struct {
	b []byte
	i int
}

func (s *peekScanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *peekScanner) byte(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// key reads a key string; a key with an escape is refused (its name would need decoding).
func (s *peekScanner) key() ([]byte, bool) {
	if !s.byte('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], true
		case c == '\\' || c < 0x20:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// int32 reads an optionally negative integer without leading zeros that fits an int32.
func (s *peekScanner) int32() (int32, bool) {
	neg := s.byte('-')
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		v = v*10 + int64(s.b[s.i]-'0')
		s.i++
		if v > 1<<31 {
			return 0, false
		}
	}
	n := s.i - start
	if n == 0 || (n > 1 && s.b[start] == '0') {
		return 0, false
	}
	if neg {
		v = -v
	}
	if v > 1<<31-1 || v < -1<<31 {
		return 0, false
	}
	return int32(v), true
}

// skipValue skips one value: a string, an object or array (strings inside skipped whole,
// so brackets in them do not count), or a literal or number (up to the next delimiter).
func (s *peekScanner) skipValue() bool {
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		s.i++
		return s.skipString()
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				s.i++
				if !s.skipString() {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	start := s.i
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r', '"', '{', '[', ':':
			return s.i > start
		}
		s.i++
	}
	return false
}

// skipString skips to just after the closing quote of a string whose opening quote is
// consumed: the first quote preceded by an even number of backslashes (IndexByte finds
// quotes at memchr speed; send responses carry a few long strings).
func (s *peekScanner) skipString() bool {
	for {
		q := bytes.IndexByte(s.b[s.i:], '"')
		if q < 0 {
			return false
		}
		end := s.i + q
		bs := 0
		for j := end - 1; j >= s.i && s.b[j] == '\\'; j-- {
			bs++
		}
		s.i = end + 1
		if bs%2 == 0 {
			return true
		}
	}
}
