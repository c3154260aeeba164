package codec

import (
	"encoding/binary"
	"sync/atomic"
)

// Flag bits of RemotingCommand.Flag (§1.4).
const (
	// FlagResponse marks a response; requests leave it clear.
	FlagResponse int32 = 1
	// FlagOneway marks a request that expects no response. The Go client never sets it,
	// even for its "oneway" sends (§1.4), so a broker answers anyway.
	FlagOneway int32 = 2
)

// DefaultMaxFrameBytes caps a frame, its 4-byte length word included, as the Java
// decoder does (com.rocketmq.remoting.frameMaxLength, §1.1).
const DefaultMaxFrameBytes = 16 << 20

// Caps on the header fields of a decoded frame, checked while the header is scanned and
// before anything is copied for it (a header over a cap allocates nothing). A frame is
// already capped as a whole (DefaultMaxFrameBytes), but within 16 MiB a header can hold a
// multi-MiB remark or value, or 100,000s of extFields entries, and decoding those is what
// costs: every string copied and every entry a map slot. RocketMQ's decoders have no such
// caps; each one here is far above anything a RocketMQ client or broker sends:
//
//   - remark: error text in responses ("[TIMEOUT_CLEAN_QUEUE]broker busy ..." and the
//     like, well under 1 KiB); clients send an empty remark in requests.
//   - extFields key: a header field name of a Java *RequestHeader class ("consumerGroup",
//     "_UNIQUE_KEY_QUERY"), under 32 bytes.
//   - extFields value: the largest is a send's message properties, which RocketMQ bounds at
//     32,767 bytes (Short.MAX_VALUE, MessageDecoder); the broker answers bigger ones
//     MESSAGE_ILLEGAL itself, so the cap leaves room for that answer. Topics are at most
//     127 characters, keys and subscription expressions a few KiB at most.
//   - extFields entries: a RocketMQ request header has at most about 30 fields (the send
//     header with ACL signature and 5.x additions), the Go client's fewer.
//
// Lengths count encoded bytes: for JSON the text between the quotes as sent (escapes
// included), for ROCKETMQ the length words. A header over a cap fails with ErrHeaderLimit.
const (
	MaxRemarkBytes        = 64 << 10
	MaxExtFieldKeyBytes   = 1 << 10
	MaxExtFieldValueBytes = 256 << 10
	MaxExtFields          = 1024
)

// DefaultServerVersion is the MQVersion ordinal ringmq reports unless told otherwise: 409 =
// V4_9_8, the release whose behaviour it implements (RocketMQ 4.9.8's MQVersion.CURRENT_VERSION).
const DefaultServerVersion MQVersion = 409

// serverVersion is the version this process reports (SetServerVersion).
var serverVersion atomic.Int32

func init() { serverVersion.Store(int32(DefaultServerVersion)) }

// ServerVersion is the MQVersion ordinal ringmq reports in every command it sends: the version
// field of its requests and responses. Clients cache it from HEART_BEAT responses as the broker
// version, and some decisions need it to be at least 401 (§1.5). It is process-wide, like
// Java's MQVersion.CURRENT_VERSION: a process runs one broker (and its embedded name server).
func ServerVersion() int32 { return serverVersion.Load() }

// SetServerVersion changes the version ServerVersion reports (the broker's rocketmqVersion key).
func SetServerVersion(v MQVersion) { serverVersion.Store(int32(v)) }

// RemotingCommand is one remoting request or response: the fields of the header plus the
// body. It is a plain value: not safe for concurrent mutation, and a decoded command's Body
// (and only its Body) aliases the frame buffer it was decoded from, so it is valid only as
// long as that buffer is; copy it before handing the command to another goroutine. The
// strings of a decoded command (Remark, ExtFields) are owned copies.
type RemotingCommand struct {
	Code     int32        // request code in requests, response code in responses
	Language LanguageCode // sender's language
	Version  int32        // sender's MQVersion ordinal
	Opaque   int32        // request id, echoed by the response
	Flag     int32        // FlagResponse | FlagOneway
	Remark   string       // error text in responses; empty when absent
	// ExtFields is the custom header; nil or empty when absent, and empty for a hot request
	// decoded by DecodeRequestInto, whose fields are kept as a list (extlist.go): code that
	// may meet one reads fields with Ext, ExtAll or a typed header's DecodeFrom. Encoders
	// read ExtFields only.
	ExtFields     map[string]string
	Body          []byte        // after decode: a view into the caller's frame buffer (no copy)
	SerializeType SerializeType // header serialization it was decoded with / will be encoded with

	// extList is a hot request's custom header (DecodeRequestInto); extDups says a key
	// appears in it more than once; extKeys has the extKeyClass bit of each of its keys.
	// listHot asks the header decoders for it.
	extList []extField
	extKeys uint64
	extDups bool
	listHot bool
}

// IsResponse reports whether the response flag bit is set.
func (c *RemotingCommand) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag bit is set.
func (c *RemotingCommand) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// NewRequest builds a request as ringmq sends it (broker→namesrv, broker→client): language
// JAVA and version ServerVersion — a peer treats ringmq like a Java broker — JSON header,
// flag 0, opaque 0 (the sender assigns it when it registers the pending call). ext and body
// are used as given, not copied.
func NewRequest(code RequestCode, ext map[string]string, body []byte) *RemotingCommand {
	return &RemotingCommand{
		Code:          int32(code),
		Language:      LanguageJava,
		Version:       ServerVersion(),
		ExtFields:     ext,
		Body:          body,
		SerializeType: SerializeJSON,
	}
}

// NewResponse builds the response to req: same opaque, FlagResponse, the request's serialize
// type (a JSON client gets a JSON header back), language JAVA, version ServerVersion.
// ExtFields and Body start empty; use SetExt or assign them.
func NewResponse(req *RemotingCommand, code ResponseCode, remark string) *RemotingCommand {
	resp := &RemotingCommand{}
	resp.InitResponse(req, code, remark)
	return resp
}

// InitResponse overwrites c with the response to req, exactly as NewResponse builds it, but
// keeps c's ExtFields map (emptied) so that a caller recycling commands avoids allocating
// a new map per response.
func (c *RemotingCommand) InitResponse(req *RemotingCommand, code ResponseCode, remark string) {
	ext := c.ExtFields
	clear(ext)
	*c = RemotingCommand{
		Code:          int32(code),
		Language:      LanguageJava,
		Version:       ServerVersion(),
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		ExtFields:     ext,
		SerializeType: req.SerializeType,
	}
}

// SetExt sets one custom-header field, creating the ExtFields map on first use.
func (c *RemotingCommand) SetExt(key, value string) {
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 8)
	}
	c.ExtFields[key] = value
}

// AppendFrame appends the whole frame (4-byte length word, header word, header, body) to
// dst, encoding the header in c.SerializeType, and returns the extended slice.
func (c *RemotingCommand) AppendFrame(dst []byte) ([]byte, error) {
	dst, err := c.AppendFrameHeader(dst)
	if err != nil {
		return dst, err
	}
	return append(dst, c.Body...), nil
}

// AppendFrameHeader appends the frame without the body bytes, but with the length word
// counting len(c.Body), so a caller can write header and body (e.g. slices of mapped
// memory) as one vectored write. On error dst is returned unchanged in length.
func (c *RemotingCommand) AppendFrameHeader(dst []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length word + header word, patched below
	var err error
	switch c.SerializeType {
	case SerializeJSON:
		dst = appendJSONHeader(dst, c)
	case SerializeRocketMQ:
		dst, err = appendRocketMQHeader(dst, c)
	default:
		err = ErrSerializeType
	}
	if err != nil {
		return dst[:start], err
	}
	return finishFrameHeader(dst, start, c.SerializeType, len(c.Body))
}

// finishFrameHeader patches the length word and header word of the frame that starts at
// dst[start] (8 placeholder bytes, then the header), the length counting bodyLen more bytes.
func finishFrameHeader(dst []byte, start int, st SerializeType, bodyLen int) ([]byte, error) {
	headerLen := len(dst) - start - 8
	if headerLen > maxHeaderLen {
		return dst[:start], ErrHeaderLength
	}
	frameLen := 4 + uint64(headerLen) + uint64(bodyLen)
	if frameLen > maxFrameLenWord {
		return dst[:start], ErrFrameTooLarge
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(frameLen))
	binary.BigEndian.PutUint32(dst[start+4:], uint32(st)<<24|uint32(headerLen))
	return dst, nil
}

// maxHeaderLen is the largest header the 24-bit header length can describe.
const maxHeaderLen = 1<<24 - 1

// maxFrameLenWord is the largest value of the int32 frame length word.
const maxFrameLenWord = 1<<31 - 1

// DecodeCommand decodes one frame's content *after* the 4-byte length word: header word,
// header, body. Body aliases payload (capacity clipped, so appending to it cannot clobber
// what follows in the caller's buffer); the header strings are copied. Errors wrap
// ErrFrameTooShort, ErrHeaderLength, ErrSerializeType, ErrHeaderJSON, ErrHeaderRocketMQ or
// ErrHeaderLimit and name the field. Safe for concurrent use (no shared state).
func DecodeCommand(payload []byte) (*RemotingCommand, error) {
	c := &RemotingCommand{}
	if err := DecodeCommandInto(c, payload); err != nil {
		return nil, err
	}
	return c, nil
}

// DecodeCommandInto is DecodeCommand into a caller-owned command, for callers that recycle
// commands. c is overwritten; its ExtFields map, if any, is emptied and reused (so a
// map handed out from a previous decode must no longer be in use).
//
// An error wrapping ErrHeaderLimit (a field over its cap) leaves a sound frame behind: c
// then holds the header's code, language, version, opaque, flag and serialize type (no
// remark, extFields or body), enough to answer the request and go on with the next frame.
func DecodeCommandInto(c *RemotingCommand, payload []byte) error {
	return decodeCommandInto(c, payload, false)
}

// DecodeRequestInto is DecodeCommandInto for a server's incoming frames: the custom header
// of a send or a pull (hotRequest) is kept as a field list instead of ExtFields (read it
// with Ext, ExtAll or a typed header's DecodeFrom); every other frame decodes as with
// DecodeCommandInto. c's field list, like its map, is emptied and reused.
func DecodeRequestInto(c *RemotingCommand, payload []byte) error {
	return decodeCommandInto(c, payload, true)
}

func decodeCommandInto(c *RemotingCommand, payload []byte, listHot bool) error {
	if len(payload) < 4 {
		return ErrFrameTooShort
	}
	word := binary.BigEndian.Uint32(payload)
	st := SerializeType(word >> 24)
	headerLen := int(word & maxHeaderLen)
	if headerLen > len(payload)-4 {
		return ErrHeaderLength
	}
	header := payload[4 : 4+headerLen]
	ext, list := c.ExtFields, c.extList
	clear(ext)
	*c = RemotingCommand{ExtFields: ext, extList: list[:0], SerializeType: st, listHot: listHot}
	var err error
	switch st {
	case SerializeJSON:
		err = decodeJSONHeader(c, header)
	case SerializeRocketMQ:
		err = decodeRocketMQHeader(c, header)
	default:
		err = ErrSerializeType
	}
	c.listHot = false
	if err != nil {
		return err
	}
	if bodyLen := len(payload) - 4 - headerLen; bodyLen > 0 {
		c.Body = payload[4+headerLen : len(payload) : len(payload)]
	}
	return nil
}
