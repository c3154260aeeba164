package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// JSON bodies and fastjson's dialect
//
// RocketMQ's Java side writes every remoting body and config file with fastjson. Two habits
// matter (PROTOCOL §4.1):
//
//   - Object properties come out in alphabetical key order, nulls left out. The Go structs
//     in body*.go declare their fields in that order so encoding/json writes the same bytes.
//   - Maps whose Java key type is not String are written with BARE keys:
//     {0:"10.0.0.1:10911"} (Long), {"TopicA@G1":{0:12}} (Integer), and even
//     {{"brokerName":"b","queueId":0,"topic":"t"}:100} (an object as key). That is not
//     JSON, and encoding/json refuses it: its scanner accepts only a string where a key may
//     stand, and Marshaler output is re-validated, so no MarshalJSON method can emit a bare
//     key either. Hence two hand-written pieces:
//   - QuoteBareKeys rewrites the dialect into standard JSON before json.Unmarshal (input);
//   - small appenders (bodyAppendString and the Encode methods of the few types with
//     numeric-keyed maps) write bare keys (output).
//
// Everything else goes through encoding/json.

// bodyMaxDepth bounds container nesting in QuoteBareKeys, the same limit encoding/json uses,
// so hostile input cannot grow the stack without bound.
const bodyMaxDepth = 10000

// QuoteBareKeys returns src rewritten to standard JSON: every object key that is not a JSON
// string becomes one. A bare token key (digits, sign, letters, '.', '_', '$') is quoted as it
// stands: {0:"a",-1:2} → {"0":"a","-1":2}. An object or array used as a key (fastjson writes
// Map<MessageQueue,Long> that way) becomes a string holding its compact JSON text:
// {{"queueId":0}:5} → {"{\"queueId\":0}":5}. Strings are copied verbatim (escapes honoured),
// so '{', ':' or ',' inside a value never confuse it.
//
// The result is valid JSON or an error wrapping ErrBodyJSON; when src needs no rewrite it is
// returned itself (no copy), otherwise a new slice. A composite key must itself be valid JSON
// (bare keys nested inside a composite key are rejected). Safe for concurrent use.
func QuoteBareKeys(src []byte) ([]byte, error) {
	out, err := quoteBareKeys(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBodyJSON, err)
	}
	return out, nil
}

// quoteBareKeys is QuoteBareKeys with errors that carry no sentinel, so that callers can
// put the body's name between the sentinel and the reason.
func quoteBareKeys(src []byte) ([]byte, error) {
	var (
		out       []byte // nil until the first rewrite; then holds src[:copied] rewritten
		copied    int    // src[:copied] is already in out
		stack     []byte // open containers, '{' or '['
		expectKey bool   // the next token in the current object is a key
	)
	for i := 0; i < len(src); {
		c := src[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		case '"':
			end, err := bodySkipString(src, i)
			if err != nil {
				return nil, err
			}
			expectKey = false
			i = end
			continue
		case '}', ']':
			want := byte('{')
			if c == ']' {
				want = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != want {
				return nil, fmt.Errorf("offset %d: unexpected %q", i, c)
			}
			stack = stack[:len(stack)-1]
			expectKey = false
			i++
			continue
		}
		if expectKey {
			// A key that is not a string: quote it. Find its end first, then copy the
			// untouched stretch before it and write the quoted key.
			end := i
			var compositeKey []byte
			switch c {
			case '{', '[':
				var err error
				end, err = bodySkipComposite(src, i)
				if err != nil {
					return nil, err
				}
				raw := src[i:end]
				if !json.Valid(raw) {
					return nil, fmt.Errorf("offset %d: object key is not valid JSON", i)
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, raw); err != nil {
					return nil, fmt.Errorf("offset %d: %w", i, err)
				}
				compositeKey = compact.Bytes()
			default:
				for end < len(src) && bodyIsBareKeyByte(src[end]) {
					end++
				}
				if end == i {
					return nil, fmt.Errorf("offset %d: unexpected %q where an object key belongs", i, c)
				}
			}
			if out == nil {
				out = make([]byte, 0, len(src)+len(src)/8+8)
			}
			out = append(out, src[copied:i]...)
			if compositeKey != nil {
				out = bodyAppendString(out, string(compositeKey))
			} else {
				out = append(out, '"')
				out = append(out, src[i:end]...)
				out = append(out, '"')
			}
			copied = end
			expectKey = false
			i = end
			continue
		}
		switch c {
		case '{':
			if len(stack) >= bodyMaxDepth {
				return nil, fmt.Errorf("offset %d: nesting deeper than %d", i, bodyMaxDepth)
			}
			stack = append(stack, '{')
			expectKey = true
		case '[':
			if len(stack) >= bodyMaxDepth {
				return nil, fmt.Errorf("offset %d: nesting deeper than %d", i, bodyMaxDepth)
			}
			stack = append(stack, '[')
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1] == '{'
		}
		i++
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("unexpected end of input (%d containers open)", len(stack))
	}
	if out != nil {
		out = append(out, src[copied:]...)
	} else {
		out = src
	}
	// The walk above only tracks structure; the final check makes "valid JSON or an
	// error" hold for scalars, separators and string escapes too.
	if !json.Valid(out) {
		// Error path only: decode once more to learn where and why.
		var probe any
		var syntaxErr *json.SyntaxError
		if err := json.Unmarshal(out, &probe); errors.As(err, &syntaxErr) {
			return nil, fmt.Errorf("offset %d (after quoting bare keys): %w", syntaxErr.Offset, err)
		}
		return nil, errors.New("not valid JSON after quoting bare keys")
	}
	return out, nil
}

// bodyIsBareKeyByte reports whether c may appear in a bare (unquoted) key token.
func bodyIsBareKeyByte(c byte) bool {
	switch {
	case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		return true
	}
	switch c {
	case '-', '+', '.', '_', '$':
		return true
	}
	return false
}

// bodySkipString returns the index just past the JSON string starting at src[i] == '"'.
func bodySkipString(src []byte, i int) (int, error) {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++ // skip the escaped byte; \uXXXX digits are plain bytes anyway
		case '"':
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("offset %d: unterminated string", i)
}

// bodySkipComposite returns the index just past the object or array starting at src[i],
// counting brackets outside strings.
func bodySkipComposite(src []byte, i int) (int, error) {
	depth := 0
	for j := i; j < len(src); {
		switch src[j] {
		case '"':
			end, err := bodySkipString(src, j)
			if err != nil {
				return 0, err
			}
			j = end
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
		j++
	}
	return 0, fmt.Errorf("offset %d: unterminated object key", i)
}

// decodeBodyJSON decodes a fastjson-or-JSON body into v, naming the body in errors.
func decodeBodyJSON(body []byte, v any, name string) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return fmt.Errorf("%w: %s: empty body", ErrBodyJSON, name)
	}
	fixed, err := quoteBareKeys(body)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBodyJSON, name, err)
	}
	if err := json.Unmarshal(fixed, v); err != nil {
		return bodyJSONError(name, err)
	}
	return nil
}

// encodeBodyJSON marshals v compactly without HTML escaping (fastjson writes '<', '>' and
// '&' as they are), or tab-indented when pretty is set (config files).
func encodeBodyJSON(v any, pretty bool, name string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if pretty {
		enc.SetIndent("", "\t")
	}
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBodyField, name, err)
	}
	out := buf.Bytes()
	return out[:len(out)-1], nil // Encode appends '\n'
}

// bodyAppendString appends s as a JSON string, escaped as encoding/json does minus the HTML
// escapes (fastjson leaves '<', '>', '&' alone); the header encoder's appendJSONString.
func bodyAppendString(dst []byte, s string) []byte { return appendJSONString(dst, s) }

// bodyAppendIntKey appends an integer map key, bare (fastjson's default) or quoted.
func bodyAppendIntKey(dst []byte, k int64, quoted bool) []byte {
	if quoted {
		dst = append(dst, '"')
	}
	dst = strconv.AppendInt(dst, k, 10)
	if quoted {
		dst = append(dst, '"')
	}
	return append(dst, ':')
}

// bodyNormalizeRaw tidies an opaque JSON value after decoding: null becomes absent (nil), so
// that it is left out when encoded again as fastjson leaves out null fields, and anything
// else is compacted, so that a pretty-printed file re-encodes compactly.
func bodyNormalizeRaw(raw *json.RawMessage) {
	if len(*raw) == 0 {
		return
	}
	if string(bytes.TrimSpace(*raw)) == "null" {
		*raw = nil
		return
	}
	var buf bytes.Buffer
	if json.Compact(&buf, *raw) == nil {
		*raw = buf.Bytes()
	}
}
