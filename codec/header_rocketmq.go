package codec

import "encoding/binary"

// ROCKETMQ binary header (serialize type 1, PROTOCOL.md §1.3), big-endian:
//
//	off  size  field
//	  0  2     code      int16
//	  2  1     language  byte
//	  3  2     version   int16
//	  5  4     opaque    int32
//	  9  4     flag      int32
//	 13  4     remarkLen R (0 = none)
//	 17  R     remark    UTF-8
//	17+R 4     extLen    E (bytes of the map area; 0 = none)
//	21+R E     entries:  keyLen int16, key, valLen int32, value
//
// The decoder is strict: negative lengths, lengths past the header, a torn entry and bytes
// after the map area are errors, and so is a field over its cap (ErrHeaderLimit, after the
// fixed part is decoded: the frame can still be answered). Strings are kept byte for byte (no UTF-8 check), so a
// decode→encode round trip is exact. The encoder writes entries in ascending key order.

// rocketMQFixedLen is the size of the fixed part: everything but the two variable areas,
// i.e. 17 bytes up to and including remarkLen, plus extLen.
const rocketMQFixedLen = 21

// decodeRocketMQHeader parses a ROCKETMQ binary header into c (whose ExtFields may hold an
// emptied map to reuse).
func decodeRocketMQHeader(c *RemotingCommand, data []byte) error {
	if len(data) < rocketMQFixedLen {
		return rocketMQFieldError("header", "shorter than the 21-byte fixed part")
	}
	c.Code = int32(int16(binary.BigEndian.Uint16(data[0:])))
	c.Language = LanguageCode(data[2])
	c.Version = int32(int16(binary.BigEndian.Uint16(data[3:])))
	c.Opaque = int32(binary.BigEndian.Uint32(data[5:]))
	c.Flag = int32(binary.BigEndian.Uint32(data[9:]))

	// Everything after offset 17 is remark and map area: one string copy serves all
	// of the header's strings, which are then slices of it.
	rest := data[17:]
	remarkLen := int64(int32(binary.BigEndian.Uint32(data[13:])))
	if remarkLen < 0 || remarkLen > int64(len(rest))-4 {
		return rocketMQFieldError("remarkLen", "out of range")
	}
	extOff := int(remarkLen) + 4
	extLen := int64(int32(binary.BigEndian.Uint32(rest[remarkLen:])))
	if extLen < 0 || extLen > int64(len(rest)-extOff) {
		return rocketMQFieldError("extLen", "out of range")
	}
	if extLen != int64(len(rest)-extOff) {
		return rocketMQFieldError("extLen", "bytes after the map area")
	}

	// Validate the map area and count its entries before allocating anything; fields over
	// their caps are found here too, but a torn area wins over them (the frame is then
	// malformed, not just too big in places).
	var limitErr error
	if remarkLen > MaxRemarkBytes {
		limitErr = headerLimitError("remark", int(remarkLen), MaxRemarkBytes)
	}
	area := rest[extOff:]
	entries := 0
	for p := 0; p < len(area); {
		if len(area)-p < 2 {
			return rocketMQFieldError("extFields", "torn key length")
		}
		keyLen := int(int16(binary.BigEndian.Uint16(area[p:])))
		p += 2
		if keyLen < 0 || keyLen > len(area)-p {
			return rocketMQFieldError("extFields", "key length out of range")
		}
		p += keyLen
		if len(area)-p < 4 {
			return rocketMQFieldError("extFields", "torn value length")
		}
		valLen := int64(int32(binary.BigEndian.Uint32(area[p:])))
		p += 4
		if valLen < 0 || valLen > int64(len(area)-p) {
			return rocketMQFieldError("extFields", "value length out of range")
		}
		if limitErr == nil {
			switch {
			case keyLen > MaxExtFieldKeyBytes:
				limitErr = headerLimitError("extFields key", keyLen, MaxExtFieldKeyBytes)
			case valLen > MaxExtFieldValueBytes:
				limitErr = headerLimitError("extFields."+string(area[p-4-keyLen:p-4]), int(valLen), MaxExtFieldValueBytes)
			case entries == MaxExtFields:
				limitErr = extFieldsCountError()
			}
		}
		p += int(valLen)
		entries++
	}
	if limitErr != nil {
		return limitErr
	}

	if remarkLen == 0 && entries == 0 {
		return nil
	}
	all := string(rest)
	c.Remark = all[:remarkLen]
	if entries == 0 {
		return nil
	}
	list := c.listHot && hotRequest(c)
	m := c.ExtFields
	if m == nil && !list {
		m = make(map[string]string, entries)
	}
	for p := extOff; p < len(all); {
		keyLen := int(int16(binary.BigEndian.Uint16(rest[p:])))
		p += 2
		key := all[p : p+keyLen]
		p += keyLen
		valLen := int(int32(binary.BigEndian.Uint32(rest[p:])))
		p += 4
		if list {
			c.appendExt(key, all[p:p+valLen])
		} else {
			m[key] = all[p : p+valLen]
		}
		p += valLen
	}
	if !list {
		c.ExtFields = m
	}
	return nil
}

// appendRocketMQHeader appends c's header in the ROCKETMQ binary form. Codes and versions
// outside int16 (the 2000xx POP codes) and keys longer than 32767 bytes cannot be carried.
func appendRocketMQHeader(dst []byte, c *RemotingCommand) ([]byte, error) {
	if c.Code != int32(int16(c.Code)) {
		return dst, rocketMQFieldError("code", "outside int16")
	}
	if c.Version != int32(int16(c.Version)) {
		return dst, rocketMQFieldError("version", "outside int16")
	}
	if int64(len(c.Remark)) > 1<<31-1 {
		return dst, rocketMQFieldError("remark", "too long")
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Code))
	dst = append(dst, byte(c.Language))
	dst = binary.BigEndian.AppendUint16(dst, uint16(c.Version))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Opaque))
	dst = binary.BigEndian.AppendUint32(dst, uint32(c.Flag))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(c.Remark)))
	dst = append(dst, c.Remark...)
	extLenAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	if len(c.ExtFields) > 0 {
		var keyBuf [32]string
		for _, k := range sortedKeys(c.ExtFields, keyBuf[:0]) {
			v := c.ExtFields[k]
			if len(k) > 1<<15-1 {
				return dst, rocketMQFieldError("extFields", "key longer than 32767 bytes")
			}
			if int64(len(v)) > 1<<31-1 {
				return dst, rocketMQFieldError("extFields."+k, "value too long")
			}
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(k)))
			dst = append(dst, k...)
			dst = binary.BigEndian.AppendUint32(dst, uint32(len(v)))
			dst = append(dst, v...)
		}
	}
	extLen := len(dst) - extLenAt - 4
	if int64(extLen) > 1<<31-1 {
		return dst, rocketMQFieldError("extFields", "map area too long")
	}
	binary.BigEndian.PutUint32(dst[extLenAt:], uint32(extLen))
	return dst, nil
}
