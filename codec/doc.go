// Package codec holds ringmq's byte formats: RocketMQ remoting frames (described below)
// and the CommitLog message record (documented in record.go), plus request and response
// codes, the typed custom headers and the JSON bodies. It does no I/O and keeps no state:
// everything here is safe for concurrent use unless a type's doc says otherwise.
//
// # Remoting frame
//
// Every request and response on a broker or name-server connection is one frame
// (PROTOCOL.md §1.1). Integers are big-endian:
//
//	+-----------+--------------------+-----------------+---------------+
//	| frameLen  | headerWord         | header          | body          |
//	| int32     | type<<24 | H       | H bytes         | B bytes       |
//	+-----------+--------------------+-----------------+---------------+
//	  4 bytes     4 bytes
//	frameLen = 4 + H + B        (the length word does not count itself)
//	type     = 0 JSON (§1.2) | 1 ROCKETMQ binary (§1.3); H = low 24 bits
//
// A frame's total size (frameLen + 4) is capped, by default at DefaultMaxFrameBytes
// (16 MiB, like the Java decoder); bigger or malformed framing means the connection must
// be closed, since the stream cannot be resynchronised.
//
// JSON header, as the Go client sends it:
//
//	{"code":105,"language":"GO","version":317,"opaque":1,"flag":0,"remark":"","extFields":{"topic":"TopicTest"}}
//
// and as ringmq answers (language JAVA, version ServerVersion, remark omitted when empty,
// extFields values always JSON strings, keys sorted):
//
//	{"code":0,"language":"JAVA","version":409,"opaque":1,"flag":1,"extFields":{"queueId":"0"}}
//
// ROCKETMQ binary header (big-endian; codes and versions must fit int16):
//
//	off   size  field
//	  0   2     code          int16
//	  2   1     language      byte (LanguageCode ordinal)
//	  3   2     version       int16
//	  5   4     opaque        int32
//	  9   4     flag          int32 (bit 0 response, bit 1 oneway)
//	 13   4     remarkLen R   0 = none
//	 17   R     remark
//	17+R  4     extLen E      bytes of the map area, 0 = none
//	21+R  E     entries       keyLen int16, key, valueLen int32, value
//
// A response is encoded in the serialization of its request.
//
// # Pieces
//
//   - CutFrame finds frame boundaries in a connection's input (0 allocations); FrameReader
//     does the same over an io.Reader.
//   - DecodeCommand turns a frame payload into a RemotingCommand whose Body is a view of
//     the payload (no copy); AppendFrame / AppendFrameHeader encode one.
//   - Typed headers (headers_*.go) convert ExtFields to structs and back; their errors are
//     *FieldError values naming the header and field.
package codec
