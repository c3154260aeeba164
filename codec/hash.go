package codec

import "unicode/utf8"

// JavaHashCode is Java's String.hashCode: h = 31*h + c over the UTF-16 code units
// of s. RocketMQ's ConsumeQueue tag codes and IndexFile key hashes are defined by it,
// so a Go byte-wise hash (what the Go client computes for codeSet) differs for
// non-ASCII text. Invalid UTF-8 decodes to U+FFFD, as Java's decoder does.
func JavaHashCode(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		h = hashRune(h, r)
	}
	return h
}

// JavaHashCodeBytes is JavaHashCode over UTF-8 bytes, without converting to a string.
func JavaHashCodeBytes(b []byte) int32 {
	var h int32
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		i += size
		h = hashRune(h, r)
	}
	return h
}

func hashRune(h int32, r rune) int32 {
	if r >= 0x10000 {
		r -= 0x10000
		h = 31*h + int32(0xD800+(r>>10))
		return 31*h + int32(0xDC00+(r&0x3FF))
	}
	return 31*h + int32(r)
}

// TagsHashCode is the ConsumeQueue tag code of a TAGS value: its Java hash sign-
// extended to int64, 0 for no tag.
func TagsHashCode(tags []byte) int64 {
	if len(tags) == 0 {
		return 0
	}
	return int64(JavaHashCodeBytes(tags))
}
