package codec

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Sentinel errors of the JSON-body half of the package (body*.go). Check them with
// errors.Is; the wrapping error names the body and, where one is known, the field.
var (
	// ErrBodyJSON: a JSON body is malformed (syntax, wrong JSON type for a field, value out
	// of range), including fastjson's bare-key dialect that QuoteBareKeys cannot repair.
	ErrBodyJSON = errors.New("codec: malformed JSON body")
	// ErrBodyField: a body decoded as JSON but a field holds a value RocketMQ rejects
	// (unknown topicFilterType, a topic name the text form cannot carry, ...), or a value
	// to encode cannot be written in the requested form.
	ErrBodyField = errors.New("codec: bad body field")
	// ErrBodyCompressed: a compressed RegisterBrokerBody is not a zlib stream, is
	// truncated, or its length-prefixed items are inconsistent.
	ErrBodyCompressed = errors.New("codec: malformed compressed register body")
	// ErrBodyTooLarge: a compressed body inflates past MaxRegisterBrokerBodyInflatedBytes.
	ErrBodyTooLarge = errors.New("codec: body too large")
)

// bodyJSONError wraps an encoding/json error so that the message names the body and the
// offending field (UnmarshalTypeError) or byte offset (SyntaxError).
func bodyJSONError(body string, err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		field := typeErr.Field
		if field == "" {
			field = "(top level)"
		}
		return fmt.Errorf("%w: %s: field %q: cannot hold JSON %s", ErrBodyJSON, body, field, typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return fmt.Errorf("%w: %s: offset %d: %s", ErrBodyJSON, body, syntaxErr.Offset, syntaxErr.Error())
	}
	return fmt.Errorf("%w: %s: %w", ErrBodyJSON, body, err)
}

// bodyFieldError reports a field value RocketMQ cannot accept.
func bodyFieldError(body, field, reason string) error {
	return fmt.Errorf("%w: %s: field %q: %s", ErrBodyField, body, field, reason)
}
