package codec

import (
	"encoding/binary"
	"errors"
	"strconv"
)

// Responses without a map.
//
// Every send and every pull is answered, so the response encoder is on the hottest path a
// broker has. AppendResponseFrameHeader writes the frame of a response straight from a
// small slice of Fields — no RemotingCommand, no ExtFields map, no allocation — and its bytes
// are exactly what AppendFrameHeader writes for the same response built with NewResponse and
// an ExtFields map (response_test.go and FuzzResponseFrameHeader check both serialize types).

// Field is one custom-header (extFields) field of a response. Exactly one of Str, Bytes or
// Num (with IsNum) holds the value; on the wire every value is a string, a number in decimal.
type Field struct {
	Key   string
	Str   string
	Bytes []byte
	Num   int64
	IsNum bool
}

// NumField is a field whose value is v in decimal.
func NumField(key string, v int64) Field { return Field{Key: key, Num: v, IsNum: true} }

// StrField is a text field.
func StrField(key, v string) Field { return Field{Key: key, Str: v} }

// BytesField is a text field held in bytes (e.g. a slice of a decoded header); not retained.
func BytesField(key string, v []byte) Field { return Field{Key: key, Bytes: v} }

// appendValue appends the field's value as text.
func (f *Field) appendValue(dst []byte) []byte {
	if f.IsNum {
		return strconv.AppendInt(dst, f.Num, 10)
	}
	dst = append(dst, f.Str...)
	return append(dst, f.Bytes...)
}

// ErrDuplicateField: two fields of one response have the same key (a map cannot hold both).
var ErrDuplicateField = errors.New("codec: response fields: duplicate key")

// AppendResponseFrameHeader appends the frame of the response to a request with the given opaque
// and serialize type — length word, header word, header, in the request's serialize type —
// with the length word counting bodyLen more bytes that the caller writes after it (a vectored
// write of mapped memory, see AppendFrameHeader). The header is NewResponse's: language JAVA,
// version ServerVersion, flag FlagResponse, the remark when set, and extFields when fields is
// not empty. fields may come in any order; they are sorted by key in place (the order codec
// writes a map in), without allocating. On error dst is returned unchanged in length.
func AppendResponseFrameHeader(dst []byte, opaque int32, st SerializeType, code ResponseCode, remark string,
	fields []Field, bodyLen int) ([]byte, error) {
	sortFields(fields)
	for i := 1; i < len(fields); i++ {
		if fields[i-1].Key == fields[i].Key {
			return dst, ErrDuplicateField
		}
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length word + header word, patched below
	var err error
	switch st {
	case SerializeJSON:
		dst = appendJSONResponseHeader(dst, opaque, code, remark, fields)
	case SerializeRocketMQ:
		dst, err = appendRocketMQResponseHeader(dst, opaque, code, remark, fields)
	default:
		err = ErrSerializeType
	}
	if err != nil {
		return dst[:start], err
	}
	if bodyLen < 0 {
		return dst[:start], ErrFrameTooLarge
	}
	return finishFrameHeader(dst, start, st, bodyLen)
}

// sortFields sorts by key with an insertion sort: responses carry a handful of fields, often
// already in order, and sort.Slice would allocate its closure's captures.
func sortFields(fields []Field) {
	for i := 1; i < len(fields); i++ {
		for j := i; j > 0 && fields[j].Key < fields[j-1].Key; j-- {
			fields[j], fields[j-1] = fields[j-1], fields[j]
		}
	}
}

// appendJSONResponseHeader writes what appendJSONHeader writes for the response.
func appendJSONResponseHeader(dst []byte, opaque int32, code ResponseCode, remark string, fields []Field) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"language":"`...)
	dst = append(dst, languageNames[LanguageJava]...)
	dst = append(dst, `","version":`...)
	dst = strconv.AppendInt(dst, int64(ServerVersion()), 10)
	dst = append(dst, `,"opaque":`...)
	dst = strconv.AppendInt(dst, int64(opaque), 10)
	dst = append(dst, `,"flag":`...)
	dst = strconv.AppendInt(dst, int64(FlagResponse), 10)
	if remark != "" {
		dst = append(dst, `,"remark":`...)
		dst = appendJSONString(dst, remark)
	}
	if len(fields) > 0 {
		dst = append(dst, `,"extFields":{`...)
		for i := range fields {
			f := &fields[i]
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendJSONString(dst, f.Key)
			dst = append(dst, ':')
			switch {
			case f.IsNum:
				dst = append(dst, '"')
				dst = strconv.AppendInt(dst, f.Num, 10)
				dst = append(dst, '"')
			case len(f.Bytes) == 0:
				dst = appendJSONString(dst, f.Str)
			case f.Str == "" && plainJSONBytes(f.Bytes):
				dst = append(dst, '"')
				dst = append(dst, f.Bytes...)
				dst = append(dst, '"')
			default:
				// Bytes that need escaping (rare: a transactionId with control bytes) go through the
				// string encoder, which costs this one conversion.
				dst = appendJSONString(dst, f.Str+string(f.Bytes))
			}
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func plainJSONBytes(b []byte) bool {
	for _, c := range b {
		if !jsonPlainByte[c] {
			return false
		}
	}
	return true
}

// appendRocketMQResponseHeader writes what appendRocketMQHeader writes for the response.
func appendRocketMQResponseHeader(dst []byte, opaque int32, code ResponseCode, remark string, fields []Field) ([]byte, error) {
	if int32(code) != int32(int16(code)) {
		return dst, rocketMQFieldError("code", "outside int16")
	}
	if int64(len(remark)) > 1<<31-1 {
		return dst, rocketMQFieldError("remark", "too long")
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(code))
	dst = append(dst, byte(LanguageJava))
	dst = binary.BigEndian.AppendUint16(dst, uint16(ServerVersion()))
	dst = binary.BigEndian.AppendUint32(dst, uint32(opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(FlagResponse))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(remark)))
	dst = append(dst, remark...)
	extLenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	for i := range fields {
		f := &fields[i]
		if len(f.Key) > 1<<15-1 {
			return dst, rocketMQFieldError("extFields", "key longer than 32767 bytes")
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(f.Key)))
		dst = append(dst, f.Key...)
		valueAt := len(dst)
		dst = f.appendValue(append(dst, 0, 0, 0, 0))
		valueLen := len(dst) - valueAt - 4
		if int64(valueLen) > 1<<31-1 {
			return dst, rocketMQFieldError("extFields."+f.Key, "value too long")
		}
		binary.BigEndian.PutUint32(dst[valueAt:], uint32(valueLen))
	}
	extLen := len(dst) - extLenAt - 4
	if int64(extLen) > 1<<31-1 {
		return dst, rocketMQFieldError("extFields", "map area too long")
	}
	binary.BigEndian.PutUint32(dst[extLenAt:], uint32(extLen))
	return dst, nil
}
