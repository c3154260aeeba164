// Package conf reads RocketMQ-style configuration files: the Java .properties format that
// broker.conf and namesrv.conf are written in (java.util.Properties.load). It also sets,
// prints and documents settings structs from the tags on their fields (settings.go): key
// name, default, unit, meaning and an enum's spellings, each written once.
//
// It returns every key=value pair in file order with the line it starts on, and leaves the
// meaning of keys to the caller, so that a caller can name unknown keys and bad values by
// key and line. Values are returned exactly as Java's loader yields them (escapes resolved,
// trailing whitespace kept); ';'-separated lists such as namesrvAddr stay one string
// (SplitList cuts them).
//
// # Format (java.util.Properties.load)
//
//	# comment             a line whose first non-blank character is '#' or '!'
//	key=value             separator '=' or ':', blanks around it are dropped
//	key value             ... or just blanks
//	key                   no value: ""
//	long=first,\          a line ending in an odd number of '\' continues on the next
//	     second           line; the next line's leading blanks are dropped
//	tab=a\tb  u=\u00e9    escapes \t \n \r \f \uXXXX; '\' before any other character
//	                      stands for that character (\=, \:, \ , \#, \\)
//
// Blanks are ' ', '\t' and '\f'; lines end at "\n", "\r" or "\r\n". A comment cannot be
// continued, but a continuation line that starts with '#' is content. A key given twice
// appears twice in the result; Java keeps the last one.
//
// Two deliberate differences from Java: input is read as UTF-8 (Java's load(InputStream)
// reads ISO-8859-1, which garbles any UTF-8 value an operator typed), falling back to
// ISO-8859-1 byte by byte when the input is not valid UTF-8; and a leading UTF-8 byte order
// mark is skipped instead of becoming part of the first key. A malformed \uXXXX escape is an
// error naming the line, as it is in Java.
//
// Why hand-written: no maintained Go library reads the Java format exactly (continuations
// with the odd-backslash rule, blank separators, \uXXXX with surrogate pairs, comment
// rules) and reports line numbers; the format is small and fully specified by the JDK's
// Properties.load documentation, and FuzzProperties checks it with a round trip.
//
// Everything here is safe for concurrent use (no shared state).
package conf

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every parse error; the message names the line.
var ErrSyntax = errors.New("conf: malformed properties")

// Property is one key=value pair of a properties file.
type Property struct {
	Key   string // escapes resolved
	Value string // escapes resolved; trailing blanks kept, as Java does
	Line  int    // 1-based line on which the (possibly continued) property starts
}

// ReadFile reads and parses a properties file; errors name the file and, for syntax
// errors, the line.
func ReadFile(path string) ([]Property, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err // *PathError already names the file
	}
	props, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return props, nil
}

// Parse parses the contents of a properties file. It returns the properties in file order
// (duplicates included) or an error wrapping ErrSyntax.
func Parse(data []byte) ([]Property, error) {
	text := decodeText(data)
	var props []Property
	line := 0
	pos := 0
	var logical strings.Builder
	for pos < len(text) {
		natural, next := naturalLine(text, pos)
		pos = next
		line++
		cur := trimLeftBlank(natural)
		if cur == "" || cur[0] == '#' || cur[0] == '!' {
			continue
		}
		start := line
		logical.Reset()
		for trailingBackslashes(cur)%2 == 1 {
			logical.WriteString(cur[:len(cur)-1])
			cur = ""
			if pos >= len(text) {
				break // a final '\' at the end of input is dropped, as in Java
			}
			natural, next = naturalLine(text, pos)
			pos = next
			line++
			cur = trimLeftBlank(natural)
		}
		logical.WriteString(cur)
		key, value, err := splitKeyValue(logical.String())
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrSyntax, start, err)
		}
		props = append(props, Property{Key: key, Value: value, Line: start})
	}
	return props, nil
}

// SplitList cuts a ';'-separated list value (namesrvAddr, deleteWhen) into its items,
// trimming blanks around each and dropping empty ones.
func SplitList(value string) []string {
	var out []string
	for item := range strings.SplitSeq(value, ";") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// decodeText returns data as a string: UTF-8 as it stands (minus a leading byte order
// mark), or, when data is not valid UTF-8, each byte as the ISO-8859-1 character Java's
// load(InputStream) would read.
func decodeText(data []byte) string {
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if utf8.Valid(data) {
		return string(data)
	}
	var b strings.Builder
	b.Grow(len(data) + len(data)/4)
	for _, c := range data {
		b.WriteRune(rune(c))
	}
	return b.String()
}

// naturalLine returns the line starting at pos without its terminator ("\n", "\r" or
// "\r\n") and the position after the terminator.
func naturalLine(text string, pos int) (string, int) {
	end := strings.IndexAny(text[pos:], "\r\n")
	if end < 0 {
		return text[pos:], len(text)
	}
	end += pos
	next := end + 1
	if text[end] == '\r' && next < len(text) && text[next] == '\n' {
		next++
	}
	return text[pos:end], next
}

// isBlank reports whether c is one of the properties format's blanks.
func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\f' }

func trimLeftBlank(s string) string {
	i := 0
	for i < len(s) && isBlank(s[i]) {
		i++
	}
	return s[i:]
}

func trailingBackslashes(s string) int {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n
}

// splitKeyValue cuts a logical line (leading blanks already removed) into key and value,
// following Properties.load: the key ends at the first unescaped '=', ':' or blank; then
// blanks and at most one '=' or ':' are skipped; the rest is the value.
func splitKeyValue(s string) (key, value string, err error) {
	keyEnd, valueStart := len(s), len(s)
	hasSeparator := false
	escaped := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !escaped && (c == '=' || c == ':') {
			keyEnd, valueStart, hasSeparator = i, i+1, true
			break
		}
		if !escaped && isBlank(c) {
			keyEnd, valueStart = i, i+1
			break
		}
		if c == '\\' {
			escaped = !escaped
		} else {
			escaped = false
		}
	}
	for valueStart < len(s) {
		c := s[valueStart]
		if !isBlank(c) {
			if hasSeparator || (c != '=' && c != ':') {
				break
			}
			hasSeparator = true
		}
		valueStart++
	}
	if key, err = unescape(s[:keyEnd]); err != nil {
		return "", "", fmt.Errorf("key: %w", err)
	}
	if value, err = unescape(s[valueStart:]); err != nil {
		return "", "", fmt.Errorf("value of %q: %w", key, err)
	}
	return key, value, nil
}

// unescape resolves \t \n \r \f \uXXXX and \c (= c). UTF-16 surrogate pairs written as two
// \u escapes become one character; a lone surrogate becomes U+FFFD (a Go string cannot
// hold it).
func unescape(s string) (string, error) {
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		i++
		if i >= len(s) {
			break // a lone trailing '\' stands for nothing (Java drops it too)
		}
		c = s[i]
		switch c {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			r, n, err := unicodeEscape(s[i+1:])
			if err != nil {
				return "", err
			}
			i += n
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by an escaped low one is one character.
				if r < 0xDC00 && strings.HasPrefix(s[i+1:], `\u`) {
					if low, m, err := unicodeEscape(s[i+3:]); err == nil && low >= 0xDC00 && low <= 0xDFFF {
						r = utf16.DecodeRune(r, low)
						i += 2 + m
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
			}
			b.WriteRune(r)
		default:
			// Any other escaped byte stands for itself; a multi-byte character after '\'
			// is copied whole by the loop (its continuation bytes are not '\').
			b.WriteByte(c)
		}
		i++
	}
	return b.String(), nil
}

// unicodeEscape reads the four hex digits of a \uXXXX escape at the start of s and
// returns the code unit and the number of bytes consumed (4).
func unicodeEscape(s string) (rune, int, error) {
	if len(s) < 4 {
		return 0, 0, fmt.Errorf(`malformed \uxxxx escape: \u%s`, s)
	}
	var r rune
	for i := range 4 {
		c := s[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			v = c - 'A' + 10
		default:
			return 0, 0, fmt.Errorf(`malformed \uxxxx escape: \u%s`, s[:4])
		}
		r = r<<4 | rune(v)
	}
	return r, 4, nil
}

// AppendProperty appends one "key=value\n" line to dst, escaped the way Java's
// Properties.store does (with every character outside printable ASCII as \uXXXX), so that
// Parse reads back exactly key and value. Used to write properties files and by the
// round-trip fuzz test.
func AppendProperty(dst []byte, key, value string) []byte {
	dst = appendEscaped(dst, key, true)
	dst = append(dst, '=')
	dst = appendEscaped(dst, value, false)
	return append(dst, '\n')
}

const hexDigits = "0123456789ABCDEF"

// appendEscaped escapes s; in a key every space is escaped, in a value only a leading one
// (later ones are kept by the loader anyway).
func appendEscaped(dst []byte, s string, isKey bool) []byte {
	for i, r := range s {
		switch r {
		case ' ':
			if i == 0 || isKey {
				dst = append(dst, '\\')
			}
			dst = append(dst, ' ')
		case '\t':
			dst = append(dst, '\\', 't')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '=', ':', '#', '!', '\\':
			dst = append(dst, '\\', byte(r))
		default:
			if r >= 0x20 && r <= 0x7E {
				dst = append(dst, byte(r))
				continue
			}
			var units [2]uint16
			n := 1
			if r > 0xFFFF {
				hi, lo := utf16.EncodeRune(r)
				units[0], units[1], n = uint16(hi), uint16(lo), 2
			} else {
				units[0] = uint16(r)
			}
			for _, u := range units[:n] {
				dst = append(dst, '\\', 'u',
					hexDigits[u>>12&0xF], hexDigits[u>>8&0xF], hexDigits[u>>4&0xF], hexDigits[u&0xF])
			}
		}
	}
	return dst
}
