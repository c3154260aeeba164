package codec

import (
	"iter"
	"slices"
)

// Hot requests' headers, decoded once.
//
// A send or a pull carries 10–15 header fields, and the event loop decodes >150k of them a
// second. Decoded into ExtFields, each field is hashed into a map, then looked up again by
// the typed header's decoder (SendMessageRequestHeader and the like) and parsed: two
// passes, the first one only to serve the second. DecodeRequestInto (the servers' decoder)
// instead keeps a hot request's fields as the scan found them: a list of key/value strings,
// in wire order, sharing the header's one string arena, in a slice the connection reuses.
// The typed decoder reads the list (DecodeFrom / Ext) and parses each value straight into
// its field; no map is built. Every other request, and every response, still gets the map,
// so code that reads ExtFields by key is unaffected; code that may meet a hot request reads
// through Ext and ExtAll, which serve both forms.

// extField is one custom-header entry of a hot request.
type extField struct{ key, val string }

// ExtSource is where a typed header's decoder reads fields: a decoded command (its Ext
// method serves both forms) or a plain map (ExtMap).
type ExtSource interface {
	Ext(key string) (string, bool)
}

// ExtMap adapts an ExtFields map to ExtSource.
type ExtMap map[string]string

// Ext returns the value of key.
func (m ExtMap) Ext(key string) (string, bool) {
	v, ok := m[key]
	return v, ok
}

// hotRequest reports whether c's fields are kept as a list by DecodeRequestInto: the codes
// of the send and pull paths, in requests only.
func hotRequest(c *RemotingCommand) bool {
	if c.IsResponse() {
		return false
	}
	switch RequestCode(c.Code) {
	case RequestSendMessage, RequestSendMessageV2, RequestSendBatchMessage, RequestPullMessage, RequestLitePullMessage:
		return true
	}
	return false
}

// extKeyClass is key's bit in extKeys: keys of one class may be equal, keys of different
// classes are not.
func extKeyClass(key string) uint64 {
	return uint64(1) << ((uint(len(key)*7) ^ uint(firstByte(key))) % 64)
}

// appendExt adds one field to the list while a header is decoded. Only a key whose class
// is in the list already is compared with the earlier keys, to find out whether the list
// repeats a key (extDups).
func (c *RemotingCommand) appendExt(key, val string) {
	bit := extKeyClass(key)
	if c.extKeys&bit != 0 && !c.extDups {
		for i := range c.extList {
			if c.extList[i].key == key {
				c.extDups = true
				break
			}
		}
	}
	c.extKeys |= bit
	c.extList = append(c.extList, extField{key, val})
}

func firstByte(s string) byte {
	if s == "" {
		return 0
	}
	return s[0]
}

// Ext returns the custom-header field key of a decoded command, in either form. As with a
// map, a key sent twice gives its last value.
func (c *RemotingCommand) Ext(key string) (string, bool) {
	if len(c.extList) == 0 {
		v, ok := c.ExtFields[key]
		return v, ok
	}
	v, ok, _ := c.extFind(key, 0)
	return v, ok
}

// extFind looks key up in the list, starting at from and wrapping around, and returns where
// the next lookup should start. Typed decoders read fields in the order clients write them
// (the Go client's keys sorted, Java's in its field order), so with a cursor most lookups
// compare one entry. A list that repeats a key is searched from its end instead, so that the
// last value wins as with a map.
func (c *RemotingCommand) extFind(key string, from int) (string, bool, int) {
	if c.extKeys&extKeyClass(key) == 0 {
		return "", false, from // an optional field the client left out: no scan
	}
	n := len(c.extList)
	if c.extDups {
		for i := n - 1; i >= 0; i-- {
			if c.extList[i].key == key {
				return c.extList[i].val, true, from
			}
		}
		return "", false, from
	}
	if from >= n {
		from = 0
	}
	for i, j := 0, from; i < n; i++ {
		// Length and first byte before the bytes: a string == calls memequal.
		if f := &c.extList[j]; len(f.key) == len(key) && (key == "" || f.key[0] == key[0]) && f.key == key {
			return f.val, true, j + 1
		}
		if j++; j == n {
			j = 0
		}
	}
	return "", false, from
}

// ExtAll yields each custom-header field once (a repeated key with its last value), in
// either form: in no particular order for the map, in wire order for the list.
func (c *RemotingCommand) ExtAll() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		if len(c.extList) == 0 {
			for k, v := range c.ExtFields {
				if !yield(k, v) {
					return
				}
			}
			return
		}
		for i, f := range c.extList {
			if c.extKeyRepeatedAfter(i) {
				continue
			}
			if !yield(f.key, f.val) {
				return
			}
		}
	}
}

func (c *RemotingCommand) extKeyRepeatedAfter(i int) bool {
	if !c.extDups {
		return false
	}
	for _, g := range c.extList[i+1:] {
		if g.key == c.extList[i].key {
			return true
		}
	}
	return false
}

// HasExt reports whether the command carries a custom header in either form.
func (c *RemotingCommand) HasExt() bool { return len(c.extList) > 0 || len(c.ExtFields) > 0 }

// ExtMapCopy returns the custom header as a new map (nil when there is none), from either
// form.
func (c *RemotingCommand) ExtMapCopy() map[string]string {
	if !c.HasExt() {
		return nil
	}
	m := make(map[string]string, max(len(c.ExtFields), len(c.extList)))
	for k, v := range c.ExtAll() {
		m[k] = v
	}
	return m
}

// Clone returns a deep copy of c that owns its body and its custom header (map or list),
// for handing a decoded command to another goroutine while its connection decodes the next
// frame into c. The header's strings are already owned copies and are shared.
func (c *RemotingCommand) Clone() *RemotingCommand {
	cp := *c
	if c.ExtFields != nil {
		cp.ExtFields = make(map[string]string, len(c.ExtFields))
		for k, v := range c.ExtFields {
			cp.ExtFields[k] = v
		}
	}
	cp.extList = slices.Clone(c.extList)
	if c.Body != nil {
		cp.Body = append([]byte(nil), c.Body...)
	}
	return &cp
}

// maxRetainedExtFields bounds the header storage Reset keeps: one header may carry up to
// MaxExtFields entries, and a map or slice grown that big keeps its size after clear.
const maxRetainedExtFields = 64

// Reset readies a connection's decode target for its next frame once the frame is handled:
// it keeps a small ExtFields map and field list (emptied) for reuse and drops everything
// else, so an idle connection pins nothing of its last frame (the header's strings share
// one arena as big as the header; the body is a view into the read buffer).
func (c *RemotingCommand) Reset() {
	ext, list := c.ExtFields, c.extList
	if len(ext) > maxRetainedExtFields {
		ext = nil
	} else {
		clear(ext)
	}
	if cap(list) > maxRetainedExtFields {
		list = nil
	} else {
		clear(list[:cap(list)]) // drop the strings: they pin the last header's arena
		list = list[:0]
	}
	*c = RemotingCommand{ExtFields: ext, extList: list}
}
