package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseTimestamp(t *testing.T) {
	loc := time.FixedZone("UTC+8", 8*3600)
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	a := &app{loc: loc, now: func() time.Time { return now }}
	for in, want := range map[string]int64{
		"now":                     now.UnixMilli(),
		"1700000000123":           1700000000123,
		"0":                       0,
		"2026-12-01#08:30:00:250": time.Date(2026, 12, 1, 8, 30, 0, 250e6, loc).UnixMilli(),
	} {
		got, err := a.parseTimestamp("s", in)
		require.NoError(t, err, in)
		require.Equal(t, want, got, in)
	}
	for _, bad := range []string{"", "yesterday", "12abc", "2026-12-01 08:30:00", "+5"} {
		_, err := a.parseTimestamp("s", bad)
		require.ErrorIs(t, err, errUsage, bad)
		require.Contains(t, err.Error(), "-s ")
	}
}

func TestPermString(t *testing.T) {
	for perm, want := range map[int32]string{6: "RW-", 4: "R--", 2: "-W-", 7: "RWX", 0: "---"} {
		require.Equal(t, want, permString(perm), "perm %d", perm)
	}
}

func TestBoolArg(t *testing.T) {
	var b boolArg
	require.Equal(t, "false", b.String())
	require.NoError(t, b.Set("TRUE"))
	require.True(t, b.value)
	require.True(t, b.set)
	require.ErrorContains(t, b.Set("yes"), `"yes" is not true or false`)
}

func TestParseAttributes(t *testing.T) {
	got, err := parseAttributes("+a=b, +c=")
	require.NoError(t, err)
	require.Equal(t, map[string]string{"a": "b", "c": ""}, got)
	for _, bad := range []string{"a=b", "+=b", "+a", "-e"} {
		_, err := parseAttributes(bad)
		require.ErrorIs(t, err, errUsage, bad)
	}
}

// Text tables drop the padding an empty last cell would leave.
func TestTableTrimsLineEnds(t *testing.T) {
	var out stringsBuilder
	tb := newTable(&out, "#A", "#B", "#C")
	tb.row("x", "", "")
	tb.row("longer", "y", "z")
	require.NoError(t, tb.flush())
	require.Equal(t, "#A      #B  #C\nx\nlonger  y   z\n", out.String())
}

type stringsBuilder struct{ b []byte }

func (s *stringsBuilder) Write(p []byte) (int, error) { s.b = append(s.b, p...); return len(p), nil }
func (s *stringsBuilder) String() string              { return string(s.b) }

// TestVersion: --version prints one line, "mqadmin <version> (commit <sha>, <go version>)", as every
// ringmq binary does, and asks no server anything.
func TestVersion(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"--version"}, &stdout, &stderr, func(string) string { return "" }))
	require.Regexp(t, `^mqadmin \S+ \(commit \S+, go\S+\)\n$`, stdout.String())
	require.Empty(t, stderr.String())
}
