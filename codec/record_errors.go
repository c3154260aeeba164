package codec

import (
	"errors"
	"fmt"
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
