package codec

import "encoding/binary"

// Batch body of SEND_BATCH_MESSAGE (PROTOCOL.md §5.6): items back to back, each
//
//	off  size  field
//	  0  4     TOTALSIZE of the item (20 + body + 2 + properties)
//	  4  4     MAGICCODE (0 from clients, ignored)
//	  8  4     BODYCRC   (0 from clients, ignored: the broker computes it)
//	 12  4     FLAG
//	 16  4     BODYLEN, then BODY
//	  +  2     PROPERTIESLEN (int16), then PROPERTIES
const batchItemFixedBytes = 4 + 4 + 4 + 4 + 4 + 2

// BatchItem is one message of a batch body; Body and Properties are views.
type BatchItem struct {
	Flag       int32
	Body       []byte
	Properties []byte
}

// BatchReader walks a batch body without copying. The zero value reads nothing.
type BatchReader struct {
	body []byte
	pos  int
}

// NewBatchReader returns a reader over body.
func NewBatchReader(body []byte) BatchReader { return BatchReader{body: body} }

// Next returns the next item; ok is false at the end of the body. A malformed item
// gives an error wrapping ErrBatchBody that names the field; reading stops there.
func (r *BatchReader) Next() (item BatchItem, ok bool, err error) {
	rest := r.body[r.pos:]
	if len(rest) == 0 {
		return BatchItem{}, false, nil
	}
	fail := func(field string) (BatchItem, bool, error) {
		r.pos = len(r.body)
		return BatchItem{}, false, &RecordError{Field: field, Err: ErrBatchBody}
	}
	if len(rest) < batchItemFixedBytes {
		return fail("TOTALSIZE")
	}
	be := binary.BigEndian
	total := int(int32(be.Uint32(rest)))
	if total < batchItemFixedBytes || total > len(rest) {
		return fail("TOTALSIZE")
	}
	it := rest[:total]
	item.Flag = int32(be.Uint32(it[12:]))
	bodyLen := int(int32(be.Uint32(it[16:])))
	if bodyLen < 0 || bodyLen > total-batchItemFixedBytes {
		return fail("BODYLEN")
	}
	item.Body = it[20 : 20+bodyLen : 20+bodyLen]
	pos := 20 + bodyLen
	propsLen := int(int16(be.Uint16(it[pos:])))
	pos += 2
	if propsLen < 0 || pos+propsLen != total {
		return fail("PROPERTIESLEN")
	}
	item.Properties = it[pos:total:total]
	r.pos += total
	return item, true, nil
}

// AppendBatchItem appends one batch item (as a client encodes it: MAGICCODE and
// BODYCRC zero).
func AppendBatchItem(dst []byte, flag int32, body, properties []byte) []byte {
	be := binary.BigEndian
	total := batchItemFixedBytes + len(body) + len(properties)
	dst = be.AppendUint32(dst, uint32(total))
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, 0)
	dst = be.AppendUint32(dst, uint32(flag))
	dst = be.AppendUint32(dst, uint32(len(body)))
	dst = append(dst, body...)
	dst = be.AppendUint16(dst, uint16(len(properties)))
	return append(dst, properties...)
}
