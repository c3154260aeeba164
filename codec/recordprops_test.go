package codec

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestScanRecordProperties(t *testing.T) {
	props := []byte("TAGS\x01a\x02KEYS\x01k1 k2  k3\x02UNIQ_KEY\x01U1\x02DELAY\x013\x02TAGS\x01b\x02")
	p := ScanRecordProperties(props)
	require.Equal(t, "b", string(p.Tags), "the last value wins")
	require.Equal(t, "U1", string(p.UniqKey))
	level, ok := p.Delay()
	require.True(t, ok)
	require.Equal(t, 3, level)
	for _, k := range []string{"k1", "k2", "k3", ""} {
		require.True(t, p.HasKey(k), k) // "" is the word between the two spaces
	}
	for _, k := range []string{"k", "k1 k2", "U1"} {
		require.False(t, p.HasKey(k), k)
	}
	for _, bad := range []string{"", "-1", "1234567890", "1x"} {
		p.DelayLevel = []byte(bad)
		_, ok := p.Delay()
		require.False(t, ok, bad)
	}
	require.Zero(t, testing.AllocsPerRun(100, func() {
		q := ScanRecordProperties(props)
		if !q.HasKey("k3") {
			panic("k3")
		}
	}))
}
