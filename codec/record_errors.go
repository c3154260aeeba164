package codec

import (
	"errors"
	"fmt"
	"strconv"
)

// Sentinel errors of the message-record half of the package (record, properties,
// message IDs, batch bodies, compression). The remoting half keeps its own in errors.go.
var (
	// ErrRecordTruncated: fewer bytes than the record's fields or TOTALSIZE need.
	// Recovery treats it at the tail of the log as a torn write.
	ErrRecordTruncated = errors.New("codec: record truncated")
	// ErrBadMagic: the MAGICCODE is neither a message magic nor the blank magic.
	ErrBadMagic = errors.New("codec: bad record magic code")
	// ErrRecordSize: TOTALSIZE disagrees with the size computed from the record's own lengths.
	ErrRecordSize = errors.New("codec: record size mismatch")
	// ErrBodyCRC: BODYCRC disagrees with the CRC of the stored body.
	ErrBodyCRC = errors.New("codec: record body crc mismatch")
	// ErrBlankRecord: the bytes start with the END_OF_FILE blank record (see BlankRecord).
	ErrBlankRecord = errors.New("codec: blank (end of file) record")
	// ErrTopicLength: topic empty or too long for the record format.
	ErrTopicLength = errors.New("codec: topic length out of range")
	// ErrPropertiesLength: encoded properties longer than 32767 bytes (PROPERTIES_SIZE_EXCEEDED).
	ErrPropertiesLength = errors.New("codec: properties too long")
	// ErrMalformedProperties: properties that are not `name 0x01 value` pieces separated by
	// 0x02 (see ValidateProperties). Always wrapped in a *PropertiesError naming the piece.
	ErrMalformedProperties = errors.New("codec: malformed properties")
	// ErrBufferTooSmall: the caller's buffer cannot hold the encoded record.
	ErrBufferTooSmall = errors.New("codec: buffer too small")
	// ErrHostAddress: a born or store host is not a valid IPv4/IPv6 address and port.
	ErrHostAddress = errors.New("codec: invalid host address")
	// ErrMessageID: a message ID string is not a valid offsetMsgId / UNIQ_KEY.
	ErrMessageID = errors.New("codec: invalid message id")
	// ErrBatchBody: a SEND_BATCH_MESSAGE body item is malformed.
	ErrBatchBody = errors.New("codec: malformed batch body")
	// ErrCompression: unknown compression type or corrupt compressed body.
	ErrCompression = errors.New("codec: compression")
	// ErrDecompressedTooLarge: a compressed body expands beyond the allowed size.
	ErrDecompressedTooLarge = errors.New("codec: decompressed body too large")
)

// RecordError names the field at which a record failed to decode. The store wraps
// it with the file name and offset.
type RecordError struct {
	Field string // the field that failed, e.g. "TOTALSIZE", "MAGICCODE", "BODYCRC"
	Err   error  // one of the sentinels above
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("%v (field %s)", e.Err, e.Field)
}

func (e *RecordError) Unwrap() error { return e.Err }

// PropertiesProblem is what ValidateProperties found wrong with one piece of a properties
// string (the bytes between two 0x02 separators).
type PropertiesProblem uint8

// Properties problems, in the order ValidateProperties checks a piece.
const (
	// PropertiesEmptyPiece: a piece with no bytes — the string starts with 0x02, or has two
	// 0x02 in a row. (The one final 0x02 clients write is not a piece.)
	PropertiesEmptyPiece PropertiesProblem = iota + 1
	// PropertiesNoSeparator: a piece without the 0x01 between name and value.
	PropertiesNoSeparator
	// PropertiesEmptyName: the piece starts with 0x01.
	PropertiesEmptyName
	// PropertiesEmptyValue: the piece ends with its only 0x01.
	PropertiesEmptyValue
	// PropertiesSeparatorInValue: the value holds a 0x01 (the readers disagree on it, see
	// ValidateProperties).
	PropertiesSeparatorInValue
)

// String names the problem.
func (p PropertiesProblem) String() string {
	switch p {
	case PropertiesEmptyPiece:
		return "EMPTY_PIECE"
	case PropertiesNoSeparator:
		return "NO_SEPARATOR"
	case PropertiesEmptyName:
		return "EMPTY_NAME"
	case PropertiesEmptyValue:
		return "EMPTY_VALUE"
	case PropertiesSeparatorInValue:
		return "SEPARATOR_IN_VALUE"
	}
	return "PropertiesProblem(" + strconv.Itoa(int(p)) + ")"
}

// maxErrorNameBytes caps the name a PropertiesError quotes (a name may be 32 KiB long).
const maxErrorNameBytes = 64

// PropertiesError is ValidateProperties' error: which piece is malformed, where, and how.
// It unwraps to ErrMalformedProperties. Its text reads, e.g.,
// `codec: properties: piece 2 at byte 11 (name "KEYS") has an empty value`.
type PropertiesError struct {
	Piece   int               // 1 for the first piece
	Offset  int               // byte offset of the piece's first byte in the properties
	Problem PropertiesProblem // what is wrong
	Name    string            // the piece's name (cut to 64 bytes), for the value problems
	At      int               // PropertiesSeparatorInValue: byte offset of the 0x01 in the value
}

func (e *PropertiesError) Error() string {
	where := fmt.Sprintf("codec: properties: piece %d at byte %d", e.Piece, e.Offset)
	switch e.Problem {
	case PropertiesEmptyPiece:
		if e.Offset == 0 {
			return where + " is empty (the properties start with 0x02)"
		}
		return where + " is empty (two 0x02 in a row)"
	case PropertiesNoSeparator:
		return where + " has no 0x01 between name and value"
	case PropertiesEmptyName:
		return where + " has no name"
	case PropertiesEmptyValue:
		return fmt.Sprintf("%s (name %q) has an empty value", where, e.Name)
	case PropertiesSeparatorInValue:
		return fmt.Sprintf("%s (name %q) has a 0x01 in its value at byte %d", where, e.Name, e.At)
	}
	return where + " is malformed (" + e.Problem.String() + ")"
}

// Unwrap returns ErrMalformedProperties.
func (e *PropertiesError) Unwrap() error { return ErrMalformedProperties }
