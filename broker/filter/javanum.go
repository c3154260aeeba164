package filter

import (
	"math"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Java's number parsing, as the filter's conversions call it on property strings: the
// accepted forms differ from strconv's (Java takes Unicode digits in Integer.valueOf, a
// trailing d or f and surrounding control characters in Double.valueOf, and no
// underscores), and a property that Java reads as a number must read the same here.

// javaParseInt is Integer.valueOf (bits 32) or Long.valueOf (bits 64): an optional + or -,
// then one or more decimal digits — any Unicode decimal digit of the Basic Multilingual
// Plane, as Character.digit(c, 10) takes them — in range.
func javaParseInt(s string, bits int) (int64, bool) {
	if s == "" {
		return 0, false
	}
	neg := false
	i := 0
	if s[0] == '-' || s[0] == '+' {
		neg = s[0] == '-'
		i = 1
		if len(s) == 1 {
			return 0, false
		}
	}
	limit := uint64(math.MaxInt64)
	if bits == 32 {
		limit = math.MaxInt32
	}
	if neg {
		limit++
	}
	var n uint64
	for i < len(s) {
		d := -1
		if c := s[i]; c < utf8.RuneSelf {
			if c >= '0' && c <= '9' {
				d = int(c - '0')
			}
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			d = unicodeDigit(r)
			i += size
		}
		if d < 0 {
			return 0, false
		}
		if n > (limit-uint64(d))/10 {
			return 0, false
		}
		n = n*10 + uint64(d)
	}
	if neg {
		return int64(-n), true //nolint:gosec // n ≤ 2^63 by limit; -2^63 wraps to itself
	}
	return int64(n), true //nolint:gosec // n ≤ limit
}

// unicodeDigit is the value of a BMP decimal digit (Unicode general category Nd), -1 for
// anything else (a supplementary character is two UTF-16 chars to Java, neither a digit).
// Nd characters come in runs of ten from zero (a Unicode stability guarantee), and Go's
// table merges adjacent runs, so the value is the offset in its range modulo ten.
func unicodeDigit(r rune) int {
	if r > 0xFFFF || !unicode.IsDigit(r) {
		return -1
	}
	for _, rg := range unicode.Nd.R16 {
		if uint16(r) >= rg.Lo && uint16(r) <= rg.Hi {
			return int(uint16(r)-rg.Lo) % 10
		}
	}
	return -1
}

// javaParseDouble is Double.valueOf: surrounding characters ≤ U+0020 trimmed, an
// optional sign, then NaN, Infinity, a decimal (digits, optional point, optional e/E
// exponent, at least one digit) or a hexadecimal float (0x…p…), each of the last two
// optionally ending in one of fFdD.
func javaParseDouble(s string) (float64, bool) {
	for len(s) > 0 && s[0] <= ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] <= ' ' {
		s = s[:len(s)-1]
	}
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch body {
	case "NaN":
		return math.NaN(), true
	case "Infinity":
		if s[0] == '-' {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	}
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'f', 'F', 'd', 'D':
			s, body = s[:n-1], body[:len(body)-1]
		}
	}
	var ok bool
	if len(body) > 1 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		ok = isJavaHexFloat(body[2:])
	} else {
		ok = isJavaDecimalFloat(body)
	}
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !isRangeError(err) {
		return 0, false
	}
	return f, true
}

// isJavaDecimalFloat: digits [. digits] [exp] with at least one digit, exp = [eE][+-]?digits.
func isJavaDecimalFloat(s string) bool {
	i, digits := 0, 0
	for i < len(s) && isDigit(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isDigit(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) {
		e := exponentEnd(s, i)
		if e == i {
			return false
		}
		i = e
	}
	return i == len(s)
}

// isJavaHexFloat: the part after 0x of a hexadecimal float: hex digits with an optional
// point (at least one digit), then p or P, an optional sign and decimal digits.
func isJavaHexFloat(s string) bool {
	i, digits := 0, 0
	isHex := func(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }
	for i < len(s) && isHex(s[i]) {
		i, digits = i+1, digits+1
	}
	if i < len(s) && s[i] == '.' {
		i++
		for i < len(s) && isHex(s[i]) {
			i, digits = i+1, digits+1
		}
	}
	if digits == 0 || i >= len(s) || s[i] != 'p' && s[i] != 'P' {
		return false
	}
	i++
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i > start && i == len(s)
}
