package codec

import (
	"bytes"
	stdzlib "compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func registerBody() *RegisterBrokerBody {
	t := NewTopicConfig("T")
	t.ReadQueueNums, t.WriteQueueNums = 4, 4
	tbw := NewTopicConfig("TBW102")
	tbw.Perm, tbw.ReadQueueNums, tbw.WriteQueueNums = 7, 8, 8
	tbw.TopicFilterType = TopicFilterMultiTag
	tbw.Attributes = map[string]string{"+message.type": "NORMAL"}
	return &RegisterBrokerBody{
		FilterServerList: []string{},
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion:      DataVersion{Counter: 3, Timestamp: 1700000000000},
			TopicConfigTable: map[string]TopicConfig{"T": t, "TBW102": tbw},
		},
	}
}

func TestRegisterBrokerBodyJSONGolden(t *testing.T) {
	body, err := registerBody().Encode()
	require.NoError(t, err)
	require.Equal(t, `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},`+
		`"topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4},`+
		`"TBW102":{"attributes":{"+message.type":"NORMAL"},"order":false,"perm":7,"readQueueNums":8,"topicFilterType":"MULTI_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8}}}}`,
		string(body))
	got, err := DecodeRegisterBrokerBody(body, false, 479)
	require.NoError(t, err)
	require.Equal(t, registerBody(), got)

	empty, err := (&RegisterBrokerBody{}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"topicConfigTable":{}}}`, string(empty))
}

func TestDecodeRegisterBrokerBodyJSONFromJava5(t *testing.T) {
	java := `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},` +
		`"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1700000000001},` +
		`"topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}},` +
		`"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}`
	got, err := DecodeRegisterBrokerBody([]byte(java), false, 479)
	require.NoError(t, err)
	require.Equal(t, int32(4), got.TopicConfigSerializeWrapper.TopicConfigTable["T"].WriteQueueNums)
	require.Equal(t, &DataVersion{Timestamp: 1700000000001}, got.TopicConfigSerializeWrapper.MappingDataVersion)
	require.Equal(t, `{}`, string(got.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap))

	got, err = DecodeRegisterBrokerBody([]byte(`{}`), false, 479)
	require.NoError(t, err)
	require.Equal(t, []string{}, got.FilterServerList)
	require.Equal(t, map[string]TopicConfig{}, got.TopicConfigSerializeWrapper.TopicConfigTable)

	_, err = DecodeRegisterBrokerBody([]byte(`{"filterServerList":{}}`), false, 479)
	require.ErrorIs(t, err, ErrBodyJSON)
}

// inflateStd inflates with the standard library (an implementation independent of the
// encoder's klauspost zlib) and fails the test on error.
func inflateStd(t *testing.T, body []byte) []byte {
	t.Helper()
	zr, err := stdzlib.NewReader(bytes.NewReader(body))
	require.NoError(t, err)
	plain, err := io.ReadAll(zr)
	require.NoError(t, err)
	return plain
}

// lenPrefixed builds a big-endian length-prefixed item list, the way Java writes it.
func lenPrefixed(items ...string) []byte {
	var b []byte
	for _, it := range items {
		b = binary.BigEndian.AppendUint32(b, uint32(len(it)))
		b = append(b, it...)
	}
	return b
}

func u32(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }

func TestRegisterBrokerBodyCompressedGolden(t *testing.T) {
	const dv = `{"counter":3,"stateVersion":0,"timestamp":1700000000000}`
	for _, tc := range []struct {
		name    string
		version int32
		want    []byte
	}{
		{"4.x sender: five fields, no mapping list", 317, bytes.Join([][]byte{
			lenPrefixed(dv), u32(2), lenPrefixed("T 4 4 6 SINGLE_TAG", "TBW102 8 8 7 MULTI_TAG", "[]"),
		}, nil)},
		{"5.x sender: attributes when set, empty mapping list", 479, bytes.Join([][]byte{
			lenPrefixed(dv), u32(2), lenPrefixed("T 4 4 6 SINGLE_TAG", `TBW102 8 8 7 MULTI_TAG {"+message.type":"NORMAL"}`, "[]"), u32(0),
		}, nil)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := registerBody().EncodeCompressed(tc.version)
			require.NoError(t, err)
			require.Equal(t, []byte{0x78, 0xDA}, body[:2], "zlib header of Deflater.BEST_COMPRESSION")
			require.Equal(t, tc.want, inflateStd(t, body))

			got, err := DecodeRegisterBrokerBody(body, true, tc.version)
			require.NoError(t, err)
			want := registerBody()
			if tc.version < 413 {
				tbw := want.TopicConfigSerializeWrapper.TopicConfigTable["TBW102"]
				tbw.Attributes = map[string]string{} // not carried by the 4.x text form
				want.TopicConfigSerializeWrapper.TopicConfigTable["TBW102"] = tbw
			}
			require.Equal(t, want, got)
		})
	}
}

// deflateStd compresses with the standard library at best compression, as Java's
// DeflaterOutputStream(Deflater.BEST_COMPRESSION) would.
func deflateStd(t *testing.T, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw, err := stdzlib.NewWriterLevel(&buf, stdzlib.BestCompression)
	require.NoError(t, err)
	_, err = zw.Write(plain)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func TestDecodeRegisterBrokerBodyCompressedJavaStreams(t *testing.T) {
	dv := `{"counter":1,"timestamp":2}` // 4.x DataVersion
	// What Java 5.x writes: "{}" attributes always (sixth field), the trailing-space form
	// for null attributes, and the mapping list with a bare-keyed info item.
	java5 := bytes.Join([][]byte{
		lenPrefixed(dv), u32(3),
		lenPrefixed("A 1 2 6 SINGLE_TAG {}", "B 3 3 4 MULTI_TAG ", `C 2 2 6 SINGLE_TAG {"k":"v w"}`, `["10.0.0.9:1"]`),
		u32(1), lenPrefixed(`{"topic":"C","bname":"b","currIdMap":{0:1}}`),
		[]byte("trailing bytes Java never reads"),
	}, nil)
	got, err := DecodeRegisterBrokerBody(deflateStd(t, java5), true, 479)
	require.NoError(t, err)
	a, b, c := NewTopicConfig("A"), NewTopicConfig("B"), NewTopicConfig("C")
	a.ReadQueueNums, a.WriteQueueNums = 1, 2
	b.ReadQueueNums, b.WriteQueueNums, b.Perm, b.TopicFilterType = 3, 3, 4, TopicFilterMultiTag
	c.ReadQueueNums, c.WriteQueueNums, c.Attributes = 2, 2, map[string]string{"k": "v w"}
	require.Equal(t, &RegisterBrokerBody{
		FilterServerList: []string{"10.0.0.9:1"},
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion:              DataVersion{Counter: 1, Timestamp: 2},
			TopicConfigTable:         map[string]TopicConfig{"A": a, "B": b, "C": c},
			TopicQueueMappingInfoMap: json.RawMessage(`{"C":{"topic":"C","bname":"b","currIdMap":{"0":1}}}`),
		},
	}, got)

	// The same stream from a sender < 413: the mapping list is not read (Java ignores the
	// rest of the stream).
	got, err = DecodeRegisterBrokerBody(deflateStd(t, java5), true, 317)
	require.NoError(t, err)
	require.Nil(t, got.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap)

	// A 4.9.x broker's stream has no mapping count: fine for < 413, truncated for ≥ 413.
	java4 := bytes.Join([][]byte{lenPrefixed(dv), u32(1), lenPrefixed("A 1 2 6 SINGLE_TAG", "[]")}, nil)
	got, err = DecodeRegisterBrokerBody(deflateStd(t, java4), true, 317)
	require.NoError(t, err)
	require.Equal(t, map[string]TopicConfig{"A": a}, got.TopicConfigSerializeWrapper.TopicConfigTable)
	_, err = DecodeRegisterBrokerBody(deflateStd(t, java4), true, 413)
	require.ErrorIs(t, err, ErrBodyCompressed)

	// Java drops a filter server list it cannot parse, and attributes it cannot parse.
	odd := bytes.Join([][]byte{lenPrefixed(dv), u32(1), lenPrefixed("A 1 2 6 SINGLE_TAG {nope", "not json")}, nil)
	got, err = DecodeRegisterBrokerBody(deflateStd(t, odd), true, 317)
	require.NoError(t, err)
	require.Equal(t, []string{}, got.FilterServerList)
	require.Equal(t, map[string]string{}, got.TopicConfigSerializeWrapper.TopicConfigTable["A"].Attributes)
}

func TestRegisterBrokerBodyCompressedRoundTripWithMapping(t *testing.T) {
	b := registerBody()
	b.FilterServerList = []string{"f:1", "f:2"}
	b.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap = json.RawMessage(`{"T":{"bname":"broker-a","currIdMap":{"0":0},"topic":"T"},"U":{"topic":"U"}}`)
	body, err := b.EncodeCompressed(479)
	require.NoError(t, err)
	got, err := DecodeRegisterBrokerBody(body, true, 479)
	require.NoError(t, err)
	require.Equal(t, b, got)
}

func TestRegisterBrokerBodyCompressedErrors(t *testing.T) {
	dv := `{"counter":1}`
	for _, tc := range []struct {
		name  string
		plain []byte
		err   error
	}{
		{"empty", nil, ErrBodyCompressed},
		{"short count", []byte{0, 0}, ErrBodyCompressed},
		{"negative length", u32(0xFFFFFFFF), ErrBodyCompressed},
		{"length past end", append(u32(100), "{}"...), ErrBodyCompressed},
		{"bad dataVersion", lenPrefixed(`{"counter":"x"}`), ErrBodyJSON},
		{"no topic count", lenPrefixed(dv), ErrBodyCompressed},
		{"negative topic count", append(lenPrefixed(dv), u32(0x80000000)...), ErrBodyCompressed},
		{"huge topic count", append(lenPrefixed(dv), u32(0x7FFFFFFF)...), ErrBodyCompressed},
		{"four fields", append(append(lenPrefixed(dv), u32(1)...), lenPrefixed("A 1 2 6")...), ErrBodyField},
		{"bad number", append(append(lenPrefixed(dv), u32(1)...), lenPrefixed("A 1 x 6 SINGLE_TAG")...), ErrBodyField},
		{"double space", append(append(lenPrefixed(dv), u32(1)...), lenPrefixed("A  1 2 6 SINGLE_TAG")...), ErrBodyField},
		{"bad filter", append(append(lenPrefixed(dv), u32(1)...), lenPrefixed("A 1 2 6 TAGS")...), ErrBodyField},
		{"no filter list", append(append(lenPrefixed(dv), u32(1)...), lenPrefixed("A 1 2 6 SINGLE_TAG")...), ErrBodyCompressed},
		{"bad mapping item", bytes.Join([][]byte{lenPrefixed(dv), u32(0), lenPrefixed("[]"), u32(1), lenPrefixed("{x")}, nil), ErrBodyJSON},
		{"mapping item not object", bytes.Join([][]byte{lenPrefixed(dv), u32(0), lenPrefixed("[]"), u32(1), lenPrefixed("[1]")}, nil), ErrBodyJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeRegisterBrokerBody(deflateStd(t, tc.plain), true, 479)
			require.ErrorIs(t, err, tc.err)
		})
	}

	_, err := DecodeRegisterBrokerBody([]byte("not zlib at all"), true, 479)
	require.ErrorIs(t, err, ErrBodyCompressed)
	good, err := registerBody().EncodeCompressed(479)
	require.NoError(t, err)
	_, err = DecodeRegisterBrokerBody(good[:len(good)-6], true, 479)
	require.ErrorIs(t, err, ErrBodyCompressed, "truncated stream")
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)-1] ^= 0xFF
	_, err = DecodeRegisterBrokerBody(corrupt, true, 479)
	require.ErrorIs(t, err, ErrBodyCompressed, "adler32 mismatch")
}

func TestRegisterBrokerBodyInflateCap(t *testing.T) {
	// DecodeRegisterBrokerBody passes MaxRegisterBrokerBodyInflatedBytes (64 MiB); the cap
	// logic is exercised with a small one to keep the test fast.
	const capBytes = 1 << 20
	plain := make([]byte, capBytes+1)
	bomb := deflateStd(t, plain)
	require.Less(t, len(bomb), 4<<10)
	_, err := inflateRegisterBody(bomb, capBytes)
	require.ErrorIs(t, err, ErrBodyTooLarge)
	got, err := inflateRegisterBody(deflateStd(t, plain[:capBytes]), capBytes)
	require.NoError(t, err)
	require.Len(t, got, capBytes)
}

func TestRegisterBrokerBodyEncodeCompressedRejects(t *testing.T) {
	b := registerBody()
	sp := NewTopicConfig("has space")
	b.TopicConfigSerializeWrapper.TopicConfigTable["has space"] = sp
	_, err := b.EncodeCompressed(479)
	require.ErrorIs(t, err, ErrBodyField)
	require.ErrorContains(t, err, "topicName")

	b = registerBody()
	attr := NewTopicConfig("A")
	attr.Attributes = map[string]string{"k": "v w"}
	b.TopicConfigSerializeWrapper.TopicConfigTable["A"] = attr
	_, err = b.EncodeCompressed(479)
	require.ErrorIs(t, err, ErrBodyField)
	require.ErrorContains(t, err, "attributes")
	_, err = b.EncodeCompressed(317) // 4.x form carries no attributes: nothing to reject
	require.NoError(t, err)

	b = registerBody()
	bad := NewTopicConfig("A")
	bad.TopicFilterType = "TAGS"
	b.TopicConfigSerializeWrapper.TopicConfigTable["A"] = bad
	_, err = b.EncodeCompressed(479)
	require.ErrorIs(t, err, ErrBodyField)

	b = registerBody()
	b.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap = json.RawMessage(`[1]`)
	_, err = b.EncodeCompressed(479)
	require.ErrorIs(t, err, ErrBodyJSON)

	// Empty filter type is written as the default.
	b = &RegisterBrokerBody{TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
		TopicConfigTable: map[string]TopicConfig{"Z": {TopicName: "Z", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}}}}
	body, err := b.EncodeCompressed(479)
	require.NoError(t, err)
	require.Contains(t, string(inflateStd(t, body)), "Z 1 1 6 SINGLE_TAG")
}

func TestRegisterBrokerBodyCRC32(t *testing.T) {
	require.Equal(t, int32(0x4BF43926), RegisterBrokerBodyCRC32([]byte("123456789")), "0xCBF43926 masked to 31 bits")
	require.Equal(t, int32(0), RegisterBrokerBodyCRC32(nil))
}

// FuzzBodyRegisterCompressed: decoding arbitrary bytes (raw, and deflated so the fuzzer
// reaches the item parser) never panics and fails only with this file's sentinels; a body
// built from the fuzz values round-trips through EncodeCompressed and Decode.
func FuzzBodyRegisterCompressed(f *testing.F) {
	good, err := registerBody().EncodeCompressed(479)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "T", int32(4), int32(4), int32(6), true, "k", "v", int32(479))
	f.Add([]byte{0x78, 0xDA, 0x03, 0x00}, "", int32(0), int32(-1), int32(7), false, "", "", int32(317))
	f.Add(lenPrefixed(`{"counter":1}`), "A%B", int32(16), int32(16), int32(2), false, "a", "", int32(413))
	f.Fuzz(func(t *testing.T, data []byte, topic string, read, write, perm int32, multi bool, attrKey, attrValue string, version int32) {
		for _, in := range [][]byte{data, deflateStd(t, data)} {
			if b, err := DecodeRegisterBrokerBody(in, true, version); err != nil {
				require.True(t, errorIsAny(err, ErrBodyCompressed, ErrBodyJSON, ErrBodyField, ErrBodyTooLarge), "%v", err)
			} else {
				require.NotNil(t, b.TopicConfigSerializeWrapper.TopicConfigTable)
			}
		}

		tc := NewTopicConfig(topic)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = read, write, perm
		if multi {
			tc.TopicFilterType = TopicFilterMultiTag
		}
		if attrKey != "" {
			tc.Attributes = map[string]string{attrKey: attrValue}
		}
		b := &RegisterBrokerBody{
			FilterServerList: []string{},
			TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
				DataVersion:      DataVersion{Counter: int64(read), Timestamp: int64(write)},
				TopicConfigTable: map[string]TopicConfig{topic: tc},
			},
		}
		body, err := b.EncodeCompressed(version)
		if err != nil {
			require.ErrorIs(t, err, ErrBodyField) // a space in the name or attributes
			return
		}
		got, err := DecodeRegisterBrokerBody(body, true, version)
		require.NoError(t, err)
		want := tc
		if version < 413 || len(tc.Attributes) == 0 {
			want.Attributes = map[string]string{}
		} else {
			// Attribute text goes through JSON: invalid UTF-8 comes back as U+FFFD.
			var fixed map[string]string
			raw, _ := json.Marshal(tc.Attributes)
			require.NoError(t, json.Unmarshal(raw, &fixed))
			want.Attributes = fixed
		}
		require.Equal(t, map[string]TopicConfig{topic: want}, got.TopicConfigSerializeWrapper.TopicConfigTable)
		require.Equal(t, b.TopicConfigSerializeWrapper.DataVersion, got.TopicConfigSerializeWrapper.DataVersion)
	})
}

func errorIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
