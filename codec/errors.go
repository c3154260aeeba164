package codec

import (
	"errors"
	"fmt"
)

// Sentinel errors of the remoting half of the package (frames, header serializations,
// typed headers). Check them with errors.Is; the wrapping error names the field.
// The record half keeps its own sentinels in record_errors.go.
var (
	// ErrFrameTooLarge: the frame's length word (plus its own 4 bytes) exceeds the
	// configured maximum, or an encoded frame would not fit an int32 length.
	ErrFrameTooLarge = errors.New("codec: frame too large")
	// ErrFrameTooShort: the length word is below 4 (no room for the header word), or the
	// payload given to DecodeCommand is shorter than the header word.
	ErrFrameTooShort = errors.New("codec: frame too short")
	// ErrHeaderLength: the header length in the header word runs past the end of the frame,
	// or an encoded header does not fit the 24 bits the header word gives it.
	ErrHeaderLength = errors.New("codec: header length out of range")
	// ErrSerializeType: the header word's serialize type is neither JSON (0) nor ROCKETMQ (1).
	ErrSerializeType = errors.New("codec: unknown serialize type")
	// ErrHeaderJSON: the JSON header is malformed or a field has the wrong type or range.
	ErrHeaderJSON = errors.New("codec: bad JSON header")
	// ErrHeaderRocketMQ: the ROCKETMQ binary header is truncated or inconsistent, or a value
	// cannot be carried by it (a code or version outside int16).
	ErrHeaderRocketMQ = errors.New("codec: bad ROCKETMQ header")
	// ErrHeaderLimit: a header field is over its cap (MaxRemarkBytes, MaxExtFieldKeyBytes,
	// MaxExtFieldValueBytes, MaxExtFields). The frame itself is sound: DecodeCommandInto
	// still fills in code, language, version, opaque, flag and serialize type, so the
	// receiver can skip the frame and answer it instead of closing the connection.
	ErrHeaderLimit = errors.New("codec: header field over limit")
	// ErrMissingField: a required custom-header field (extFields key) is absent.
	ErrMissingField = errors.New("codec: missing required header field")
	// ErrBadField: a custom-header field's value cannot be parsed (not a decimal integer,
	// not "true"/"false", out of range).
	ErrBadField = errors.New("codec: bad header field value")
)

// FieldError reports a typed-header field that is missing or unparsable. It unwraps to
// ErrMissingField or ErrBadField, so callers can answer with a precise remark while
// checking the class with errors.Is.
type FieldError struct {
	Header string // the typed header, e.g. "SendMessageRequestHeader"
	Field  string // the extFields key, e.g. "queueId" (or "e" for the V2 letter form)
	Value  string // the offending value; empty for a missing field
	Err    error  // ErrMissingField or ErrBadField
}

// Error names the header and the field, e.g.
// `codec: SendMessageRequestHeader: field "queueId": bad header field value "x"`.
func (e *FieldError) Error() string {
	if errors.Is(e.Err, ErrMissingField) {
		return fmt.Sprintf("codec: %s: field %q: missing required header field", e.Header, e.Field)
	}
	return fmt.Sprintf("codec: %s: field %q: bad header field value %q", e.Header, e.Field, e.Value)
}

// Unwrap returns the sentinel (ErrMissingField or ErrBadField).
func (e *FieldError) Unwrap() error { return e.Err }

// jsonFieldError builds the error for a JSON header field; only called on the error path.
func jsonFieldError(field, reason string) error {
	return fmt.Errorf("%w: field %q: %s", ErrHeaderJSON, field, reason)
}

// jsonSyntaxError builds the error for malformed JSON at byte offset pos of the header.
func jsonSyntaxError(pos int, reason string) error {
	return fmt.Errorf("%w: offset %d: %s", ErrHeaderJSON, pos, reason)
}

// headerLimitError builds the error for a header field over its cap; only called on the
// error path.
func headerLimitError(field string, size, limit int) error {
	return fmt.Errorf("%w: field %q: %d bytes > max %d", ErrHeaderLimit, field, size, limit)
}

// extFieldsCountError builds the error for a header with more than MaxExtFields entries.
func extFieldsCountError() error {
	return fmt.Errorf("%w: field %q: more than %d entries", ErrHeaderLimit, "extFields", MaxExtFields)
}

// rocketMQFieldError builds the error for a ROCKETMQ header field.
func rocketMQFieldError(field, reason string) error {
	return fmt.Errorf("%w: field %q: %s", ErrHeaderRocketMQ, field, reason)
}
