package conf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSuggest(t *testing.T) {
	known := []string{"listenPort", "haListenPort", "flushDiskType", "mappedFileSizeCommitLog", "brokerName"}
	for name, want := range map[string]string{
		"listenport":              "listenPort",    // case only
		"lisenPort":               "listenPort",    // a letter missing
		"flushDiskTyp":            "flushDiskType", // truncated
		"flushDsikType":           "flushDiskType", // two letters swapped (2 edits)
		"mapedFileSizeCommitLogg": "mappedFileSizeCommitLog",
		"haListenPrt":             "haListenPort",
		"brokerIP":                "", // nothing near: brokerName is 4 edits away
		"x":                       "",
		"somethingElseEntirely":   "",
	} {
		require.Equal(t, want, Suggest(name, known), name)
	}
}
