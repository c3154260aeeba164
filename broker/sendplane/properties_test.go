package sendplane

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCopyProperties(t *testing.T) {
	cases := []struct {
		in        string
		dropDelay bool
		want      string
	}{
		{"", false, ""},
		{"a\x01b\x02", false, "a\x01b\x02"},
		{"a\x01b", false, "a\x01b\x02"},
		{"WAIT\x01true\x02a\x01b\x02", false, "a\x01b\x02"},
		{"a\x01b\x02DELAY\x013\x02WAIT\x01false", true, "a\x01b\x02"},
		{"a\x01b\x02DELAY\x013\x02", false, "a\x01b\x02DELAY\x013\x02"},
		{"XWAIT\x01true\x02", false, "XWAIT\x01true\x02"},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, string(copyProperties(nil, []byte(tc.in), tc.dropDelay)), "%q", tc.in)
	}
}
