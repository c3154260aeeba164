package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
)

func TestValidatePropertiesWellFormed(t *testing.T) {
	for _, p := range []string{
		"",                                  // no properties at all
		"TAGS\x01TagA\x02KEYS\x01k1 k2\x02", // as clients send them: final 0x02
		"TAGS\x01TagA\x02KEYS\x01k1 k2",     // as Apache RocketMQ stores a single message: no final 0x02
		"a\x01b",                            // the shortest pair
		"KEYS\x01k\x02CLUSTER\x01c\x02KEYS\x01k2\x02", // duplicate names (RocketMQ 4.9 batch append)
		"k\x01v with spaces, =, \x03 and \xff\x02",    // any other byte, UTF-8 not checked
		"名\x01值\x02",
	} {
		require.NoError(t, ValidateProperties([]byte(p)), "%q", p)
		got, err := AppendPropertiesDroppingEmptyValues(nil, []byte(p))
		require.NoError(t, err, "%q", p)
		want := p
		if p != "" && !strings.HasSuffix(p, "\x02") {
			want += "\x02"
		}
		require.Equal(t, want, string(got), "%q is copied with every pair ended by 0x02", p)
	}
}

func TestValidatePropertiesMalformed(t *testing.T) {
	for _, tc := range []struct {
		props   string
		problem PropertiesProblem
		text    string
		clean   string // PropertiesEmptyValue: what dropping the empty values leaves
	}{
		// The two reproductions of issue 14.
		{"\x02\x02\x02", PropertiesEmptyPiece,
			"codec: properties: piece 1 at byte 0 is empty (the properties start with 0x02)", ""},
		{"\x01\x02\x01\x01\x02\x02TAGS", PropertiesEmptyName,
			"codec: properties: piece 1 at byte 0 has no name", ""},
		// Each defect on its own, after a good first pair.
		{"\x02", PropertiesEmptyPiece,
			"codec: properties: piece 1 at byte 0 is empty (the properties start with 0x02)", ""},
		{"a\x01b\x02\x02c\x01d", PropertiesEmptyPiece,
			"codec: properties: piece 2 at byte 4 is empty (two 0x02 in a row)", ""},
		{"a\x01b\x02\x02", PropertiesEmptyPiece,
			"codec: properties: piece 2 at byte 4 is empty (two 0x02 in a row)", ""},
		{"a\x01b\x02TAGS", PropertiesNoSeparator,
			"codec: properties: piece 2 at byte 4 has no 0x01 between name and value", ""},
		{"a\x01b\x02TAGS\x02", PropertiesNoSeparator,
			"codec: properties: piece 2 at byte 4 has no 0x01 between name and value", ""},
		{"a\x01b\x02\x01v\x02", PropertiesEmptyName,
			"codec: properties: piece 2 at byte 4 has no name", ""},
		{"a\x01b\x02\x01", PropertiesEmptyName,
			"codec: properties: piece 2 at byte 4 has no name", ""},
		{"a\x01b\x02KEYS\x01\x02", PropertiesEmptyValue,
			`codec: properties: piece 2 at byte 4 (name "KEYS") has an empty value`, "a\x01b\x02"},
		{"a\x01b\x02KEYS\x01", PropertiesEmptyValue,
			`codec: properties: piece 2 at byte 4 (name "KEYS") has an empty value`, "a\x01b\x02"},
		{"a\x01b\x02k\x01x\x01y\x02", PropertiesSeparatorInValue,
			`codec: properties: piece 2 at byte 4 (name "k") has a 0x01 in its value at byte 7`, ""},
		{"a\x01b\x02k\x01x\x01\x02", PropertiesSeparatorInValue,
			`codec: properties: piece 2 at byte 4 (name "k") has a 0x01 in its value at byte 7`, ""},
		{strings.Repeat("n", 100) + "\x01", PropertiesEmptyValue,
			`codec: properties: piece 1 at byte 0 (name "` + strings.Repeat("n", 64) + `") has an empty value`, ""},
	} {
		err := ValidateProperties([]byte(tc.props))
		require.Error(t, err, "%q", tc.props)
		require.ErrorIs(t, err, ErrMalformedProperties)
		var pe *PropertiesError
		require.True(t, errors.As(err, &pe))
		require.Equal(t, tc.problem, pe.Problem, "%q", tc.props)
		require.Equal(t, tc.text, err.Error(), "%q", tc.props)

		// Only empty values are dropped; any other defect fails the same way.
		got, err2 := AppendPropertiesDroppingEmptyValues([]byte("keep"), []byte(tc.props))
		if tc.problem == PropertiesEmptyValue {
			require.NoError(t, err2)
			require.Equal(t, "keep"+tc.clean, string(got))
		} else {
			require.Equal(t, err.Error(), err2.Error())
			require.Equal(t, "keep", string(got), "dst unchanged on failure")
		}
	}
}

func TestAppendPropertiesDroppingEmptyValues(t *testing.T) {
	// Java's Message.setKeys(emptyList) and setTags("") send these.
	got, err := AppendPropertiesDroppingEmptyValues(nil, []byte("KEYS\x01\x02TAGS\x01\x02UNIQ_KEY\x01U1\x02WAIT\x01true\x02"))
	require.NoError(t, err)
	require.Equal(t, "UNIQ_KEY\x01U1\x02WAIT\x01true\x02", string(got))
	got, err = AppendPropertiesDroppingEmptyValues(nil, []byte("KEYS\x01"))
	require.NoError(t, err)
	require.Empty(t, got)
	// The offsets name the client's bytes, not the copy's.
	_, err = AppendPropertiesDroppingEmptyValues(nil, []byte("KEYS\x01\x02a\x01b\x02\x01c"))
	require.EqualError(t, err, "codec: properties: piece 3 at byte 10 has no name")
}

func TestValidatePropertiesDoesNotAllocate(t *testing.T) {
	p := []byte("TAGS\x01TagA\x02KEYS\x01k1 k2\x02UNIQ_KEY\x017F0000010001B4AAC6921F4B9C800001\x02CLUSTER\x01DefaultCluster\x02")
	allocs := testing.AllocsPerRun(100, func() {
		if ValidateProperties(p) != nil {
			panic("malformed")
		}
	})
	require.Zero(t, allocs)
	dst := make([]byte, 0, 256)
	allocs = testing.AllocsPerRun(100, func() {
		dst, _ = AppendPropertiesDroppingEmptyValues(dst[:0], p)
		dst = AppendPropertiesWithout(dst[:0], p, PropertyWaitStoreMsgOK, PropertyDelayTimeLevel)
	})
	require.Zero(t, allocs)
}

// A stored record may hold properties written before they were checked (or by another
// broker): re-encoding drops the malformed pieces, so the result always validates.
func TestAppendPropertiesWithoutIsCanonical(t *testing.T) {
	p := []byte("\x02a\x01b\x02\x01v\x02k\x01\x02x\x02\x02TAGS\x01t\x01u\x02DELAY\x013\x02KEYS\x01k")
	got := AppendPropertiesWithout(nil, p, PropertyDelayTimeLevel)
	require.Equal(t, "a\x01b\x02KEYS\x01k\x02", string(got))
	require.NoError(t, ValidateProperties(got))
}

// goClientProperties is what the pinned Go client reads from props.
func goClientProperties(props []byte) map[string]string {
	var m primitive.Message
	m.UnmarshalProperties(props)
	return m.GetProperties()
}

// oldJavaProperties is Java's string2messageProperties before 4.9.x (String.split on 0x02,
// then on 0x01, a pair when that gives two parts); String.split drops trailing empty parts.
func oldJavaProperties(props []byte) map[string]string {
	m := map[string]string{}
	for _, piece := range javaSplit(props, PropertySeparator) {
		if nv := javaSplit(piece, NameValueSeparator); len(nv) == 2 {
			m[string(nv[0])] = string(nv[1])
		}
	}
	return m
}

func javaSplit(b []byte, sep byte) [][]byte {
	parts := bytes.Split(b, []byte{sep})
	for len(parts) > 0 && len(parts[len(parts)-1]) == 0 {
		parts = parts[:len(parts)-1]
	}
	if len(b) == 0 {
		return [][]byte{{}} // "".split(x) is [""]
	}
	return parts
}

func FuzzValidateProperties(f *testing.F) {
	for _, s := range []string{
		"TAGS\x01TagA\x02KEYS\x01k1 k2\x02", "TAGS\x01TagA", "", "\x02\x02\x02", "\x01\x02\x01\x01\x02\x02TAGS",
		"KEYS\x01\x02", "a\x01b\x01c\x02a\x01d", "\x01v\x02k\x01\x02x\x02\x02GOOD\x01yes",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := ValidateProperties(data)
		if err == nil {
			// Accepted: every reader sees the same pairs, and re-encoding keeps them all.
			java := DecodeProperties(data)
			require.Equal(t, java, goClientProperties(data), "Go client reads %q differently", data)
			require.Equal(t, java, oldJavaProperties(data), "old Java reads %q differently", data)
			want := data
			if len(data) > 0 && data[len(data)-1] != PropertySeparator {
				want = append(bytes.Clone(data), PropertySeparator)
			}
			require.Equal(t, string(want), string(AppendPropertiesWithout(nil, data)))
		} else {
			var pe *PropertiesError
			require.True(t, errors.As(err, &pe))
			require.ErrorIs(t, err, ErrMalformedProperties)
			require.True(t, pe.Offset >= 0 && pe.Offset <= len(data) && pe.Piece >= 1, "%+v", pe)
			require.True(t, strings.HasPrefix(err.Error(), "codec: properties: piece "))
		}
		// Whatever came in, the canonical re-encoding validates.
		require.NoError(t, ValidateProperties(AppendPropertiesWithout(nil, data)))
		if clean, err2 := AppendPropertiesDroppingEmptyValues(nil, data); err2 == nil {
			require.NoError(t, ValidateProperties(clean))
		} else {
			require.Error(t, err)
		}
	})
}

// BenchmarkValidateProperties is the check a send pays (twice: the broker on the client's
// properties, the store on the record's): properties as a Go producer's send carries them
// after the broker added UNIQ_KEY and CLUSTER (~110 bytes, 4 pairs).
func BenchmarkValidateProperties(b *testing.B) {
	p := []byte("TAGS\x01TagA\x02KEYS\x01order-1234\x02UNIQ_KEY\x017F0000010001B4AAC6921F4B9C800001\x02CLUSTER\x01DefaultCluster\x02")
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if ValidateProperties(p) != nil {
			b.Fatal("malformed")
		}
	}
}

func TestParseDecimal(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "18": 18, "-3": -3, "+7": 7, "2147483647": 2147483647} {
		got, ok := ParseDecimal([]byte(in))
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-", "1a", "2147483648", "99999999999"} {
		_, ok := ParseDecimal([]byte(in))
		require.False(t, ok, in)
	}
}
