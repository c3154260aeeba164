package version

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func buildInfo(settings ...string) *debug.BuildInfo {
	bi := &debug.BuildInfo{}
	for i := 0; i+1 < len(settings); i += 2 {
		bi.Settings = append(bi.Settings, debug.BuildSetting{Key: settings[i], Value: settings[i+1]})
	}
	return bi
}

func TestInfoString(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	cases := []struct {
		name    string
		stamped string
		bi      *debug.BuildInfo
		want    string
	}{
		{"stamped by the Makefile", "v0.3.0-2-g0123456", buildInfo("vcs.revision", rev, "vcs.modified", "false"),
			"v0.3.0-2-g0123456 (commit 0123456789ab, go1.26.0)"},
		{"stamped dirty, no VCS info", "0123456-dirty", buildInfo(),
			"0123456-dirty (commit unknown, go1.26.0)"},
		{"plain go build in a clean checkout", "", buildInfo("vcs.revision", rev, "vcs.modified", "false"),
			"devel (commit 0123456789ab, go1.26.0)"},
		{"plain go build with local changes", "", buildInfo("vcs.revision", rev, "vcs.modified", "true"),
			"devel-dirty (commit 0123456789ab-dirty, go1.26.0)"},
		{"no build info at all", "", nil, "devel (commit unknown, go1.26.0)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, from(tc.stamped, tc.bi, "go1.26.0").String())
		})
	}
}

func TestPrint(t *testing.T) {
	var b bytes.Buffer
	Print(&b, "mqbroker")
	line := b.String()
	require.True(t, strings.HasPrefix(line, "mqbroker "), line)
	require.True(t, strings.HasSuffix(line, ", "+runtime.Version()+")\n"), line)
	require.Contains(t, line, " (commit ")
}

// TestStampedCommitWins: the Makefile's commit is used where the toolchain recorded none (worktrees,
// -buildvcs=false).
func TestStampedCommitWins(t *testing.T) {
	saved := Commit
	t.Cleanup(func() { Commit = saved })
	Commit = "fedcba9876543210fedcba9876543210fedcba98"
	require.Equal(t, Commit, Get().Commit)
	require.Contains(t, Get().String(), "(commit fedcba987654")
}
