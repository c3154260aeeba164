package codec

import (
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// The JSON header (serialize type 0, PROTOCOL.md §1.2) is parsed and written by hand, not
// with encoding/json. Every request on the hot path (>150k req/s) carries one, and
// encoding/json through reflection and maps costs several µs and a dozen allocations per
// header; this fixed schema needs one scan, one string allocation and the map.
//
// Accepted input (FuzzJSONHeader checks it against encoding/json on the same bytes):
//   - the header is one JSON object, optionally surrounded by whitespace; the whole input is
//     validated as JSON, including values that are skipped;
//   - keys are case-sensitive; a repeated key is applied again (the last value wins), except
//     that repeated extFields objects merge, as encoding/json does for a map;
//   - "code", "version", "opaque", "flag": integer within int32 (no fraction or exponent);
//   - "language": an enum name (unknown names read as LanguageOther, as the Go client's own
//     decoder also accepts anything) or an integer 0..255;
//   - "remark": a string;
//   - null for any of those leaves the field unchanged (encoding/json's rule for non-pointer
//     fields); null for "extFields" drops what was collected so far;
//   - "extFields": an object whose values are strings; numbers and true/false are taken as
//     their literal text (Java and hand-written clients may send them), null as "";
//   - any other key (Java's "serializeTypeCurrentRPC" included) is ignored whatever its value;
//   - strings are unescaped like encoding/json does: surrogate pairs combined, a lone
//     surrogate or an invalid UTF-8 byte becomes U+FFFD;
//   - nesting deeper than 10000 is rejected, like encoding/json;
//   - unlike encoding/json, a remark, an extFields key or value over its cap (MaxRemarkBytes
//     and so on, counted in encoded bytes) or more than MaxExtFields entries fail with
//     ErrHeaderLimit, once the whole header has been checked to be valid JSON.

// jsonMaxDepth mirrors encoding/json's nesting limit so both accept the same inputs.
const jsonMaxDepth = 10000

// rawString locates one string of the header as written: data[start:end] is the text
// between the quotes (or a bare number or literal taken as text); plain says those bytes are
// the value as they stand (printable ASCII, no escapes), so they are copied, not unescaped.
// Offsets are int32 (a header is at most 16 MiB, its unescaped strings 48 MiB) to keep the
// spans of a send's 14 fields small.
type rawString struct {
	start, end int32
	plain      bool
}

func (r rawString) len() int { return int(r.end - r.start) }

// raw returns r's bytes in data.
func (r rawString) raw(data []byte) []byte { return data[r.start:r.end] }

// asciiStrings holds every ASCII byte, so that a one-letter key (a send's or a pull's
// one-letter header fields) is a slice of it rather than a copy in the header's arena.
const asciiStrings = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f" +
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f" +
	" !\"#$%&'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~\x7f"

// extSpan locates one extFields entry: while scanning, in the header (raw); once copied, in
// the arena (start/end only).
type extSpan struct {
	key, val rawString
}

// jsonDecoder is a one-shot cursor over a JSON header. It lives on the caller's stack.
type jsonDecoder struct {
	data []byte
	pos  int
	// limitErr is the first field found over its cap (ErrHeaderLimit). Scanning goes on
	// (the rest must still be valid JSON, and code, opaque and flag may come later) but
	// nothing more is collected.
	limitErr error
}

// decodeJSONHeader parses a JSON header into c (whose ExtFields may hold an emptied map to
// reuse).
//
// It runs in two steps. The scan validates the whole header, sets the numeric fields and
// records where the remark and each extFields key and value lie in the header, checking
// each against its cap (MaxRemarkBytes, ...) as it is found. Only then, with every cap
// met, are the strings copied, into one arena sized to their total: a header over a cap
// allocates nothing, and a valid one allocates the arena and, unless c brings one, the map.
func decodeJSONHeader(c *RemotingCommand, data []byte) error {
	// The spans live in a stack array (a local, not a decoder field, so that escape
	// analysis keeps it there); headers with more than 32 fields spill to the heap.
	var spanBuf [32]extSpan
	spans := spanBuf[:0]
	d := jsonDecoder{data: data}
	var remark rawString
	remarkSet := false
	extPresent := false

	d.skipSpace()
	if !d.consume('{') {
		return jsonSyntaxError(d.pos, "header is not a JSON object")
	}
	d.skipSpace()
	if !d.consume('}') {
		for {
			if !d.consume('"') {
				return jsonSyntaxError(d.pos, "expected a key string")
			}
			var keyBuf [24]byte
			key, err := d.readKey(keyBuf[:0])
			if err != nil {
				return err
			}
			d.skipSpace()
			if !d.consume(':') {
				return jsonSyntaxError(d.pos, "expected ':'")
			}
			d.skipSpace()
			switch string(key) {
			case "code":
				err = d.readInt32Field(&c.Code, "code")
			case "version":
				err = d.readInt32Field(&c.Version, "version")
			case "opaque":
				err = d.readInt32Field(&c.Opaque, "opaque")
			case "flag":
				err = d.readInt32Field(&c.Flag, "flag")
			case "language":
				err = d.readLanguage(&c.Language)
			case "remark":
				if d.peek() == '"' {
					d.pos++
					var r rawString
					if r, err = d.scanRaw(); err == nil {
						if r.len() > MaxRemarkBytes {
							d.limit(headerLimitError("remark", r.len(), MaxRemarkBytes))
						}
						remark, remarkSet = r, true
					}
				} else if !d.readNull() {
					err = jsonFieldError("remark", "not a string")
				}
			case "extFields":
				if d.peek() == '{' {
					extPresent = true
					spans, err = d.readExtFields(spans)
				} else if d.readNull() {
					extPresent = false
					spans = spans[:0]
				} else {
					err = jsonFieldError("extFields", "not an object")
				}
			default:
				err = d.skipValue(1)
			}
			if err != nil {
				return err
			}
			d.skipSpace()
			if d.consume(',') {
				d.skipSpace()
				continue
			}
			if d.consume('}') {
				break
			}
			return jsonSyntaxError(d.pos, "expected ',' or '}'")
		}
	}
	d.skipSpace()
	if d.pos != len(d.data) {
		return jsonSyntaxError(d.pos, "data after the header object")
	}
	if d.limitErr != nil {
		return d.limitErr
	}

	// Copy the strings into one arena. Its size is their encoded length, which unescaping
	// never exceeds except for invalid UTF-8 (each bad byte becomes 3 bytes of U+FFFD); then
	// append grows it, and the spans hold offsets, so that stays correct.
	total := 0
	if remarkSet {
		total += remark.len()
	}
	if extPresent {
		for _, sp := range spans {
			total += sp.key.len() + sp.val.len()
		}
	}
	var arena []byte
	if total > 0 {
		arena = make([]byte, 0, total)
	}
	if remarkSet {
		arena, remark = d.copyRaw(arena, remark)
	}
	if extPresent {
		for i := range spans {
			if k := &spans[i].key; k.plain && k.end-k.start == 1 {
				// A one-letter key stays out of the arena; start < 0 marks it, -1-start is the letter.
				*k = rawString{start: -1 - int32(d.data[k.start])}
			} else {
				arena, *k = d.copyRaw(arena, *k)
			}
			arena, spans[i].val = d.copyRaw(arena, spans[i].val)
		}
	}
	var all string
	if len(arena) > 0 {
		// The arena is never written again, so viewing it as a string is sound.
		all = unsafe.String(unsafe.SliceData(arena), len(arena))
	}
	if remarkSet {
		c.Remark = remark.in(all)
	}
	if extPresent {
		if c.listHot && hotRequest(c) {
			for _, sp := range spans {
				c.appendExt(sp.key.in(all), sp.val.in(all))
			}
			return nil
		}
		m := c.ExtFields
		if m == nil {
			m = make(map[string]string, len(spans))
		}
		for _, sp := range spans {
			m[sp.key.in(all)] = sp.val.in(all)
		}
		c.ExtFields = m
	}
	return nil
}

// in returns r's string once copied: a slice of the arena's string, or of asciiStrings for a
// one-letter key.
func (r rawString) in(arena string) string {
	if r.start < 0 {
		b := -1 - r.start
		return asciiStrings[b : b+1]
	}
	return arena[r.start:r.end]
}

// limit records err as the header's limit error unless one is recorded already.
func (d *jsonDecoder) limit(err error) {
	if d.limitErr == nil {
		d.limitErr = err
	}
}

// copyRaw appends r's value (unescaped unless plain) to arena and returns r's place there.
func (d *jsonDecoder) copyRaw(arena []byte, r rawString) ([]byte, rawString) {
	start := len(arena)
	if r.plain {
		arena = append(arena, r.raw(d.data)...)
	} else {
		arena = appendUnescaped(arena, r.raw(d.data))
	}
	return arena, rawString{start: int32(start), end: int32(len(arena)), plain: true}
}

func (d *jsonDecoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *jsonDecoder) consume(b byte) bool {
	if d.pos < len(d.data) && d.data[d.pos] == b {
		d.pos++
		return true
	}
	return false
}

func (d *jsonDecoder) skipSpace() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// readNull consumes the literal null if it is next.
func (d *jsonDecoder) readNull() bool {
	if len(d.data)-d.pos >= 4 && string(d.data[d.pos:d.pos+4]) == "null" {
		d.pos += 4
		return true
	}
	return false
}

// scanString validates a string whose opening quote is already consumed and moves past the
// closing quote. It returns the raw content bounds and whether the raw bytes are the value
// as they stand (printable ASCII, no escapes).
func (d *jsonDecoder) scanString() (start, end int, plain bool, err error) {
	start = d.pos
	data := d.data
	i := start
	plain = true
	for {
		for i < len(data) && jsonPlainByte[data[i]] {
			i++
		}
		if i >= len(data) {
			return 0, 0, false, jsonSyntaxError(i, "unterminated string")
		}
		switch b := data[i]; {
		case b == '"':
			d.pos = i + 1
			return start, i, plain, nil
		case b == '\\':
			plain = false
			if i+1 >= len(data) {
				return 0, 0, false, jsonSyntaxError(i, "unterminated escape")
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if hex4(data[i+2:]) < 0 {
					return 0, 0, false, jsonSyntaxError(i, "bad \\u escape")
				}
				i += 6
			default:
				return 0, 0, false, jsonSyntaxError(i, "bad escape")
			}
		case b < 0x20:
			return 0, 0, false, jsonSyntaxError(i, "control character in string")
		default: // >= 0x80: validated when unescaping
			plain = false
			i++
		}
	}
}

// readKey reads a key string (opening quote consumed). Plain keys are returned as a view of
// the input; others are unescaped into scratch.
func (d *jsonDecoder) readKey(scratch []byte) ([]byte, error) {
	start, end, plain, err := d.scanString()
	if err != nil {
		return nil, err
	}
	if plain {
		return d.data[start:end], nil
	}
	return appendUnescaped(scratch, d.data[start:end]), nil
}

// scanRaw scans a string (opening quote consumed) and returns where it lies in the header.
func (d *jsonDecoder) scanRaw() (rawString, error) {
	start, end, plain, err := d.scanString()
	return rawString{start: int32(start), end: int32(end), plain: plain}, err
}

// readExtFields reads the extFields object (at '{'), appending its entries to spans as
// places in the header. An entry over a cap, or one past MaxExtFields, records the limit
// error; from then on entries are validated but no longer collected.
func (d *jsonDecoder) readExtFields(spans []extSpan) ([]extSpan, error) {
	d.pos++ // '{'
	d.skipSpace()
	if d.consume('}') {
		return spans, nil
	}
	for {
		if !d.consume('"') {
			return spans, jsonSyntaxError(d.pos, "extFields: expected a key string")
		}
		var s extSpan
		var err error
		if s.key, err = d.scanRaw(); err != nil {
			return spans, err
		}
		d.skipSpace()
		if !d.consume(':') {
			return spans, jsonSyntaxError(d.pos, "extFields: expected ':'")
		}
		d.skipSpace()
		switch b := d.peek(); {
		case b == '"':
			d.pos++
			if s.val, err = d.scanRaw(); err != nil {
				return spans, err
			}
		case b == '-' || (b >= '0' && b <= '9'):
			start := d.pos
			if _, err := d.scanNumber(); err != nil {
				return spans, err
			}
			s.val = rawString{start: int32(start), end: int32(d.pos), plain: true}
		case b == 't' || b == 'f':
			start := d.pos
			if err := d.skipLiteral(); err != nil {
				return spans, err
			}
			s.val = rawString{start: int32(start), end: int32(d.pos), plain: true}
		case b == 'n':
			if !d.readNull() {
				return spans, jsonSyntaxError(d.pos, "bad literal")
			}
			s.val = rawString{plain: true} // ""
		default:
			// Quote the key in the error: it is the field the caller needs to find.
			key := d.rawText(s.key)
			if b == '{' || b == '[' {
				return spans, jsonFieldError("extFields."+key, "value is not a string")
			}
			return spans, jsonSyntaxError(d.pos, "extFields."+key+": bad value")
		}
		switch {
		case d.limitErr != nil:
		case s.key.len() > MaxExtFieldKeyBytes:
			d.limit(headerLimitError("extFields key", s.key.len(), MaxExtFieldKeyBytes))
		case s.val.len() > MaxExtFieldValueBytes:
			d.limit(headerLimitError("extFields."+d.rawText(s.key), s.val.len(), MaxExtFieldValueBytes))
		case len(spans) == MaxExtFields:
			d.limit(extFieldsCountError())
		default:
			spans = append(spans, s)
		}
		d.skipSpace()
		if d.consume(',') {
			d.skipSpace()
			continue
		}
		if d.consume('}') {
			return spans, nil
		}
		return spans, jsonSyntaxError(d.pos, "extFields: expected ',' or '}'")
	}
}

// rawText is r's value as a new string; for error messages only.
func (d *jsonDecoder) rawText(r rawString) string {
	if r.plain {
		return string(r.raw(d.data))
	}
	return string(appendUnescaped(nil, r.raw(d.data)))
}

// scanNumber validates a JSON number at pos and moves past it. integer reports the absence
// of fraction and exponent.
func (d *jsonDecoder) scanNumber() (integer bool, err error) {
	data := d.data
	i := d.pos
	if i < len(data) && data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		return false, jsonSyntaxError(i, "bad number")
	}
	integer = true
	if i < len(data) && data[i] == '.' {
		integer = false
		i++
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return false, jsonSyntaxError(i, "bad number fraction")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		integer = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if i >= len(data) || data[i] < '0' || data[i] > '9' {
			return false, jsonSyntaxError(i, "bad number exponent")
		}
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	}
	d.pos = i
	return integer, nil
}

// readInteger reads a JSON number that must be an integer in [lo, hi]; field names the
// header field for the error.
func (d *jsonDecoder) readInteger(field string, lo, hi int64) (int64, error) {
	start := d.pos
	integer, err := d.scanNumber()
	if err != nil {
		return 0, err
	}
	if !integer {
		return 0, jsonFieldError(field, "not an integer")
	}
	digits := d.data[start:d.pos]
	neg := digits[0] == '-'
	if neg {
		digits = digits[1:]
	}
	var v int64
	for _, c := range digits {
		v = v*10 + int64(c-'0')
		if v > 1<<32 { // far beyond int32 and still no int64 overflow
			return 0, jsonFieldError(field, "out of range")
		}
	}
	if neg {
		v = -v
	}
	if v < lo || v > hi {
		return 0, jsonFieldError(field, "out of range")
	}
	return v, nil
}

// readInt32Field reads an int32 field; null leaves it unchanged.
func (d *jsonDecoder) readInt32Field(dst *int32, field string) error {
	if d.readNull() {
		return nil
	}
	if b := d.peek(); b != '-' && (b < '0' || b > '9') {
		if err := d.skipValue(1); err != nil {
			return err
		}
		return jsonFieldError(field, "not a number")
	}
	v, err := d.readInteger(field, -1<<31, 1<<31-1)
	if err != nil {
		return err
	}
	*dst = int32(v)
	return nil
}

// readLanguage reads "language": a name, a number 0..255, or null (unchanged).
func (d *jsonDecoder) readLanguage(dst *LanguageCode) error {
	switch b := d.peek(); {
	case b == '"':
		d.pos++
		start, end, plain, err := d.scanString()
		if err != nil {
			return err
		}
		name := d.data[start:end]
		if !plain {
			var buf [16]byte
			name = appendUnescaped(buf[:0], name)
		}
		*dst = languageByName(name)
		return nil
	case b >= '0' && b <= '9':
		v, err := d.readInteger("language", 0, 255)
		if err != nil {
			return err
		}
		*dst = LanguageCode(v)
		return nil
	case b == 'n' && d.readNull():
		return nil
	}
	if err := d.skipValue(1); err != nil {
		return err
	}
	return jsonFieldError("language", "neither a name nor a number")
}

// languageByName maps an enum name to its code; unknown names read as LanguageOther.
func languageByName(name []byte) LanguageCode {
	for i, n := range languageNames {
		if n == string(name) {
			return LanguageCode(i)
		}
	}
	return LanguageOther
}

// skipLiteral consumes true, false or null.
func (d *jsonDecoder) skipLiteral() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(d.data)-d.pos >= len(lit) && string(d.data[d.pos:d.pos+len(lit)]) == lit {
			d.pos += len(lit)
			return nil
		}
	}
	return jsonSyntaxError(d.pos, "bad literal")
}

// skipValue validates and skips any JSON value at pos; depth is the nesting depth of the
// container holding it.
func (d *jsonDecoder) skipValue(depth int) error {
	switch b := d.peek(); {
	case b == '"':
		d.pos++
		_, _, _, err := d.scanString()
		return err
	case b == '-' || (b >= '0' && b <= '9'):
		_, err := d.scanNumber()
		return err
	case b == 't' || b == 'f' || b == 'n':
		return d.skipLiteral()
	case b == '{' || b == '[':
		if depth+1 > jsonMaxDepth {
			return jsonSyntaxError(d.pos, "nesting too deep")
		}
		d.pos++
		closing := byte(']')
		if b == '{' {
			closing = '}'
		}
		d.skipSpace()
		if d.consume(closing) {
			return nil
		}
		for {
			if b == '{' {
				if !d.consume('"') {
					return jsonSyntaxError(d.pos, "expected a key string")
				}
				if _, _, _, err := d.scanString(); err != nil {
					return err
				}
				d.skipSpace()
				if !d.consume(':') {
					return jsonSyntaxError(d.pos, "expected ':'")
				}
				d.skipSpace()
			}
			if err := d.skipValue(depth + 1); err != nil {
				return err
			}
			d.skipSpace()
			if d.consume(',') {
				d.skipSpace()
				continue
			}
			if d.consume(closing) {
				return nil
			}
			return jsonSyntaxError(d.pos, "expected ',' or a closing bracket")
		}
	}
	return jsonSyntaxError(d.pos, "expected a value")
}

// hex4 parses 4 hex digits, or returns -1.
func hex4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// appendUnescaped appends the value of validated raw string content (between the quotes),
// resolving escapes and replacing invalid UTF-8 exactly as encoding/json does.
func appendUnescaped(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		b := raw[i]
		switch {
		case b == '\\':
			switch raw[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := hex4(raw[i+2:])
				i += 6
				if utf16.IsSurrogate(r) {
					// A pair needs the low half in the very next escape; anything else is a
					// lone surrogate (U+FFFD) and the next escape is read on its own.
					if len(raw)-i >= 6 && raw[i] == '\\' && raw[i+1] == 'u' {
						if dec := utf16.DecodeRune(r, hex4(raw[i+2:])); dec != utf8.RuneError {
							i += 6
							dst = utf8.AppendRune(dst, dec)
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[i+1])
			}
			i += 2
		case b < utf8.RuneSelf:
			dst = append(dst, b)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// jsonPlainByte marks the bytes a string can hold as they are: printable ASCII except the
// quote and the backslash.
var jsonPlainByte = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendJSONHeader appends c's header as compact JSON in the shape Java emits and the Go
// client accepts (§1.2, appendix B): numbers for code/version/opaque/flag, language by name,
// remark only when non-empty, extFields (sorted keys, every value a JSON string) only when
// non-nil.
func appendJSONHeader(dst []byte, c *RemotingCommand) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(c.Code), 10)
	dst = append(dst, `,"language":`...)
	if c.Language.known() {
		dst = append(dst, '"')
		dst = append(dst, languageNames[c.Language]...)
		dst = append(dst, '"')
	} else {
		dst = strconv.AppendInt(dst, int64(c.Language), 10)
	}
	dst = append(dst, `,"version":`...)
	dst = strconv.AppendInt(dst, int64(c.Version), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(c.Opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(c.Flag), 10)
	if c.Remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = appendJSONString(dst, c.Remark)
	}
	if c.ExtFields != nil {
		dst = append(dst, `,"extFields":{`...)
		var keyBuf [32]string
		for i, k := range sortedKeys(c.ExtFields, keyBuf[:0]) {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, k)
			dst = append(dst, ':')
			dst = appendJSONString(dst, c.ExtFields[k])
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// sortedKeys returns m's keys in ascending order, using buf's storage when it is big
// enough. A deterministic order makes frames reproducible (golden tests, captures).
func sortedKeys(m map[string]string, buf []string) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

const jsonHexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal: '"' and '\' escaped, \n \r \t short,
// other control characters as \u00XX (so U+0001/U+0002 in properties read \u0001/\u0002),
// U+2028/U+2029 escaped, other valid UTF-8 as is, and each byte of invalid UTF-8 as \ufffd:
// what encoding/json does minus its HTML escapes (the decoder then reads U+FFFD). JSON
// bodies use it too (bodyAppendString).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if jsonPlainByte[b] {
			i++
			continue
		}
		if b >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				dst = append(dst, s[start:i]...)
				dst = append(dst, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				// Valid JSON either way; escaped as encoding/json does, for JavaScript readers.
				dst = append(dst, s[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', jsonHexDigits[r&0xF])
			default:
				i += size
				continue
			}
			i += size
			start = i
			continue
		}
		dst = append(dst, s[start:i]...)
		switch b {
		case '"', '\\':
			dst = append(dst, '\\', b)
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', jsonHexDigits[b>>4], jsonHexDigits[b&0xF])
		}
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
