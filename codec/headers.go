package codec

import (
	"strconv"
	"strings"
)

// Typed custom headers (PROTOCOL.md §3). Each header struct converts to and from a
// command's ExtFields:
//
//   - Decode(ext) resets the struct and reads its keys: a missing required ("NN") key is a
//     *FieldError wrapping ErrMissingField, an unparsable value one wrapping ErrBadField; the
//     first problem is reported, naming the header and the key. Unknown keys (bname, ns,
//     nsd, oway, lo, ACL signature keys ...) are ignored.
//   - Encode(ext) writes its keys into ext (which must be non-nil): required keys always,
//     optional strings when non-empty, Optional values when Set.
//
// Values are decimal integers (strconv.ParseInt, so a leading '+' is accepted as Java's
// Integer.parseInt accepts it) and booleans "true"/"false" in any letter case. A header
// value is a plain struct: not safe for concurrent mutation. The strings of a decoded header
// are the ExtFields strings themselves (no copy).

// CustomHeader is implemented by every typed header.
type CustomHeader interface {
	Decode(ext map[string]string) error
	Encode(ext map[string]string)
}

// Optional is a header value that may be absent, for keys whose absence means something
// other than the zero value (e.g. maxReconsumeTimes: absent = the group's default).
type Optional[T any] struct {
	Value T
	Set   bool
}

// Some returns a present Optional.
func Some[T any](v T) Optional[T] { return Optional[T]{Value: v, Set: true} }

// Or returns the value when set, else def.
func (o Optional[T]) Or(def T) T {
	if o.Set {
		return o.Value
	}
	return def
}

// extReader reads typed values out of a custom header (ExtSource) and keeps the first error. It lives
// on the decoder's stack; errors are built only on the error path.
type extReader struct {
	ext    ExtSource
	header string
	err    error
	// list is ext when it is a command whose fields are a list (DecodeRequestInto): looked
	// up through a cursor (extFind) instead of the interface.
	list   *RemotingCommand
	cursor int
}

// fromCommand is an extReader over a decoded command's fields, list or map.
func fromCommand(src ExtSource, header string) extReader {
	r := extReader{ext: src, header: header}
	if c, ok := src.(*RemotingCommand); ok && len(c.extList) > 0 {
		r.list = c
	}
	return r
}

func (r *extReader) fail(key, value string, sentinel error) {
	if r.err == nil {
		r.err = &FieldError{Header: r.header, Field: key, Value: value, Err: sentinel}
	}
}

func (r *extReader) lookup(key string, required bool) (string, bool) {
	var v string
	var ok bool
	if r.list != nil {
		v, ok, r.cursor = r.list.extFind(key, r.cursor)
	} else {
		v, ok = r.ext.Ext(key)
	}
	if !ok && required {
		r.fail(key, "", ErrMissingField)
	}
	return v, ok
}

// str reads a string; a required key must be present (it may be empty, as Java only
// checks for null).
func (r *extReader) str(key string, required bool) string {
	v, _ := r.lookup(key, required)
	return v
}

// optStr reads a string whose absence means something other than "" (Java's null).
func (r *extReader) optStr(key string) Optional[string] {
	v, ok := r.lookup(key, false)
	return Optional[string]{Value: v, Set: ok}
}

func (r *extReader) int64Bits(key string, required bool, bits int) (int64, bool) {
	v, ok := r.lookup(key, required)
	if !ok {
		return 0, false
	}
	if n, ok := parseSmallDecimal(v, bits); ok {
		return n, true
	}
	n, err := strconv.ParseInt(v, 10, bits)
	if err != nil {
		r.fail(key, v, ErrBadField)
		return 0, false
	}
	return n, true
}

// parseSmallDecimal parses the common value, 1 to 18 plain digits with an optional '-', in a
// loop that needs no overflow checks (18 digits fit in an int64); ok is false for anything
// else ('+', underscores, longer or out of range for bits), which strconv.ParseInt then
// reads or rejects. A send's header carries seven integers.
func parseSmallDecimal(v string, bits int) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	digits := v
	if neg {
		digits = v[1:]
	}
	if len(digits) == 0 || len(digits) > 18 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		d := digits[i] - '0'
		if d > 9 {
			return 0, false
		}
		n = n*10 + int64(d)
	}
	if neg {
		n = -n
	}
	if bits < 64 && (n < -1<<(bits-1) || n > 1<<(bits-1)-1) {
		return 0, false
	}
	return n, true
}

func (r *extReader) i32(key string, required bool) int32 {
	n, _ := r.int64Bits(key, required, 32)
	return int32(n)
}

func (r *extReader) i64(key string, required bool) int64 {
	n, _ := r.int64Bits(key, required, 64)
	return n
}

func (r *extReader) optI32(key string) Optional[int32] {
	n, ok := r.int64Bits(key, false, 32)
	return Optional[int32]{Value: int32(n), Set: ok}
}

func (r *extReader) optI64(key string) Optional[int64] {
	n, ok := r.int64Bits(key, false, 64)
	return Optional[int64]{Value: n, Set: ok}
}

func (r *extReader) optBool(key string) Optional[bool] {
	v, ok := r.lookup(key, false)
	if !ok {
		return Optional[bool]{}
	}
	switch {
	case strings.EqualFold(v, "true"):
		return Some(true)
	case strings.EqualFold(v, "false"):
		return Some(false)
	}
	r.fail(key, v, ErrBadField)
	return Optional[bool]{}
}

// boolean reads a bool; an absent optional key gives def.
func (r *extReader) boolean(key string, required, def bool) bool {
	v := r.optBool(key)
	if !v.Set && required && r.err == nil {
		if _, ok := r.ext.Ext(key); !ok {
			r.fail(key, "", ErrMissingField)
		}
	}
	return v.Or(def)
}

func extPutInt32(ext map[string]string, key string, v int32) {
	ext[key] = strconv.FormatInt(int64(v), 10)
}

func extPutInt64(ext map[string]string, key string, v int64) { ext[key] = strconv.FormatInt(v, 10) }

func extPutBool(ext map[string]string, key string, v bool) { ext[key] = strconv.FormatBool(v) }

// putString writes an optional string: only when non-empty.
func extPutString(ext map[string]string, key, v string) {
	if v != "" {
		ext[key] = v
	}
}

func extPutOptInt32(ext map[string]string, key string, v Optional[int32]) {
	if v.Set {
		extPutInt32(ext, key, v.Value)
	}
}

func extPutOptInt64(ext map[string]string, key string, v Optional[int64]) {
	if v.Set {
		extPutInt64(ext, key, v.Value)
	}
}

func extPutOptString(ext map[string]string, key string, v Optional[string]) {
	if v.Set {
		ext[key] = v.Value
	}
}

func extPutOptBool(ext map[string]string, key string, v Optional[bool]) {
	if v.Set {
		extPutBool(ext, key, v.Value)
	}
}
