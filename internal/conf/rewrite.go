package conf

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"
)

// Rewrite returns the properties file data with each key of set given its value, as an admin
// change made at run time is kept for the next start (UPDATE_BROKER_CONFIG): the key's last
// occurrence (the one Java, and the broker, keep), continuation lines included, becomes one
// line, and a key the file lacks is appended, in set's
// order. Every other byte stays as it was: comments, blank lines, the other keys, line
// terminators, a byte order mark (but a file that is not valid UTF-8, read as ISO-8859-1, comes
// back in UTF-8 with the same characters). Only the keys set names are written, never the whole
// configuration (RocketMQ writes every key back, which turns defaults into settings: apache/rocketmq
// #1692). canonical, when not nil, maps a key as the file spells it to the name set uses (legacy
// aliases); set's Line fields are ignored, and a key given twice in set takes its last value. data
// must parse: Parse's error is returned.
func Rewrite(data []byte, set []Property, canonical func(string) string) ([]byte, error) {
	props, err := Parse(data)
	if err != nil {
		return nil, err
	}
	// A file read as ISO-8859-1 (not valid UTF-8) is written back in UTF-8, its characters unchanged:
	// kept as bytes, a rewrite that replaced its only invalid byte would make the loader read every
	// other non-ASCII byte as UTF-8 instead (found by FuzzRewrite).
	if body := bytes.TrimPrefix(data, []byte("\uFEFF")); !utf8.Valid(body) {
		bom := len(data) - len(body)
		data = append(data[:bom:bom], decodeText(data)...)
	}
	spans, dangling := scanSpans(data)
	if len(spans) != len(props) {
		// The scan follows Parse's rules on the raw bytes; a mismatch is a bug here.
		return nil, fmt.Errorf("conf: rewrite: %d properties parsed but %d lines found", len(props), len(spans))
	}
	values := map[string]string{}
	var order []string
	for _, p := range set {
		if _, seen := values[p.Key]; !seen {
			order = append(order, p.Key)
		}
		values[p.Key] = p.Value
	}
	last := map[string]int{} // key -> index of its last occurrence in props
	for i, p := range props {
		key := p.Key
		if canonical != nil {
			key = canonical(key)
		}
		if _, ok := values[key]; ok {
			last[key] = i
		}
	}
	type edit struct {
		span
		key string
	}
	var edits []edit
	var appended []string
	for _, key := range order {
		if i, ok := last[key]; ok {
			edits = append(edits, edit{spans[i], key})
		} else {
			appended = append(appended, key)
		}
	}
	slices.SortFunc(edits, func(a, b edit) int { return a.start - b.start })
	out := make([]byte, 0, len(data)+64*len(set))
	pos := 0
	for _, e := range edits {
		out = append(out, data[pos:e.start]...)
		out = appendLine(out, e.key, values[e.key])
		pos = e.end
	}
	out = append(out, data[pos:]...)
	if len(appended) == 0 {
		return out, nil
	}
	if len(out) > 0 && out[len(out)-1] != '\n' && out[len(out)-1] != '\r' {
		out = append(out, '\n')
	}
	if dangling {
		// The file ends inside a continuation ("key=a\" and nothing after): a blank line ends it
		// where the loader would have, instead of joining the first appended line to its value.
		// After a lone CR the blank line's terminator is a CR too: a LF would only complete a CRLF.
		if out[len(out)-1] == '\r' {
			out = append(out, '\r')
		} else {
			out = append(out, '\n')
		}
	}
	for _, key := range appended {
		out = append(appendLine(out, key, values[key]), '\n')
	}
	return out, nil
}

// span is where one property's lines lie in a file: from the start of its first line to the
// end of its last line's content (its terminator excluded).
type span struct{ start, end int }

// scanSpans finds each property's lines by Parse's rules, on the raw bytes (the rules look at
// ASCII only, so UTF-8 and ISO-8859-1 input split alike). dangling: the last property's
// continuation runs to the end of the input.
func scanSpans(data []byte) (spans []span, dangling bool) {
	text := string(data)
	pos := 0
	if bytes.HasPrefix(data, []byte("\uFEFF")) {
		pos = len("\uFEFF")
	}
	for pos < len(text) {
		start := pos
		natural, next := naturalLine(text, pos)
		end := pos + len(natural)
		pos = next
		cur := trimLeftBlank(natural)
		if cur == "" || cur[0] == '#' || cur[0] == '!' {
			continue
		}
		dangling = false
		for trailingBackslashes(cur)%2 == 1 {
			if pos >= len(text) {
				dangling = true
				break
			}
			natural, next = naturalLine(text, pos)
			end = pos + len(natural)
			pos = next
			cur = trimLeftBlank(natural)
		}
		spans = append(spans, span{start, end})
	}
	return spans, dangling
}

// appendLine appends "key=value" (no terminator) escaped as AppendProperty does, except that a
// value keeps '=', ':', '#' and '!' as they are: the loader needs them escaped only in keys, and
// an operator reads namesrvAddr=n1:9876 more easily than n1\:9876.
func appendLine(dst []byte, key, value string) []byte {
	dst = appendEscaped(dst, key, true)
	dst = append(dst, '=')
	for i, r := range value {
		switch {
		case r == '=' || r == ':' || r == '#' || r == '!' || (r == ' ' && i > 0):
			dst = append(dst, byte(r))
		default:
			dst = appendEscaped(dst, string(r), false)
		}
	}
	return dst
}
