package codec

// The properties a store indexes a record by, read without allocating: the file store's
// dispatcher and query, the in-memory test store and the broker's query check all read a
// record's properties the same way, here.

// RecordProperties are the properties that place a record in a ConsumeQueue and the
// IndexFile, found in one pass: TAGS, KEYS, UNIQ_KEY and DELAY. The slices alias the
// properties scanned. A property given twice yields its last value.
type RecordProperties struct {
	Tags, Keys, UniqKey, DelayLevel []byte
}

// ScanRecordProperties reads props (name U+0001 value U+0002 ...) once.
func ScanRecordProperties(props []byte) (p RecordProperties) {
	RangeProperties(props, func(k, v []byte) bool {
		switch string(k) {
		case PropertyTags:
			p.Tags = v
		case PropertyKeys:
			p.Keys = v
		case PropertyUniqClientMessageIDKey:
			p.UniqKey = v
		case PropertyDelayTimeLevel:
			p.DelayLevel = v
		}
		return true
	})
	return p
}

// HasKey reports whether key is one of the space-separated words of KEYS.
func (p *RecordProperties) HasKey(key string) bool {
	keys := p.Keys
	for len(keys) > 0 {
		i := 0
		for i < len(keys) && keys[i] != ' ' {
			i++
		}
		if string(keys[:i]) == key {
			return true
		}
		if i == len(keys) {
			break
		}
		keys = keys[i+1:]
	}
	return false
}

// Delay is DELAY as a level: a non-negative decimal of at most 9 digits, else false.
func (p *RecordProperties) Delay() (int, bool) {
	b := p.DelayLevel
	if len(b) == 0 || len(b) > 9 || b[0] < '0' || b[0] > '9' { // no sign
		return 0, false
	}
	return ParseDecimal(b)
}

// RecordHasKey reports whether the encoded record is topic's and has key as its UNIQ_KEY
// or as one of its KEYS words (what QUERY_MESSAGE matches, since the IndexFile's hashes
// collide).
func RecordHasKey(record []byte, topic, key string) bool {
	rec, err := DecodeRecord(record, false)
	if err != nil || string(rec.Topic) != topic {
		return false
	}
	p := ScanRecordProperties(rec.Properties)
	return string(p.UniqKey) == key || p.HasKey(key)
}

// IsMessageRecord reports whether b starts with the header of a message record (not a
// blank filler at a file's end).
func IsMessageRecord(b []byte) bool {
	_, magic, ok := PeekRecordHeader(b)
	return ok && (magic == MagicCodeV1 || magic == MagicCodeV2)
}
