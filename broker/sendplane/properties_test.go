package sendplane

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCopyProperties(t *testing.T) {
	cases := []struct {
		in                  string
		dropWait, dropDelay bool
		want                string
	}{
		{"", true, false, ""},
		{"a\x01b\x02", true, false, "a\x01b\x02"},
		{"a\x01b", true, false, "a\x01b\x02"},
		{"WAIT\x01true\x02a\x01b\x02", true, false, "a\x01b\x02"},
		{"a\x01b\x02DELAY\x013\x02WAIT\x01false", true, true, "a\x01b\x02"},
		{"a\x01b\x02DELAY\x013\x02", true, false, "a\x01b\x02DELAY\x013\x02"},
		{"XWAIT\x01true\x02", true, false, "XWAIT\x01true\x02"},
		// A delayed message: DELAY is rewritten, WAIT kept.
		{"WAIT\x01true\x02a\x01b\x02DELAY\x013\x02", false, true, "WAIT\x01true\x02a\x01b\x02"},
		{"WAIT\x01true\x02a\x01b", false, true, "WAIT\x01true\x02a\x01b\x02"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, string(copyProperties(nil, []byte(tc.in), tc.dropWait, tc.dropDelay)), "%q", tc.in)
	}
}
