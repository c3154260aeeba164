package conf

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseTable(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Property
	}{
		{"empty", "", nil},
		{"comments and blanks", "# c\n! c\n   \n\t# indented\n\f\n", nil},
		{"equals", "listenPort=9876\n", []Property{{"listenPort", "9876", 1}}},
		{"colon", "a: b", []Property{{"a", "b", 1}}},
		{"blank separator", "a   b c", []Property{{"a", "b c", 1}}},
		{"blanks around separator", "  a \t=\t b", []Property{{"a", "b", 1}}},
		{"blank then equals", "a = = b", []Property{{"a", "= b", 1}}},
		{"key only", "flag\n", []Property{{"flag", "", 1}}},
		{"key then blanks", "flag   \n", []Property{{"flag", "", 1}}},
		{"trailing blanks kept", "a=b  \n", []Property{{"a", "b  ", 1}}},
		{"empty value", "a=\n", []Property{{"a", "", 1}}},
		{"empty key", "=v\n", []Property{{"", "v", 1}}},
		{"second separator is value", "a=b=c:d", []Property{{"a", "b=c:d", 1}}},
		{"list stays one string", "namesrvAddr=10.0.0.1:9876;10.0.0.2:9876",
			[]Property{{"namesrvAddr", "10.0.0.1:9876;10.0.0.2:9876", 1}}},
		{"line numbers", "\n# x\na=1\n\nb=2\n", []Property{{"a", "1", 3}, {"b", "2", 5}}},
		{"CRLF and CR", "a=1\r\nb=2\rc=3", []Property{{"a", "1", 1}, {"b", "2", 2}, {"c", "3", 3}}},
		{"continuation", "a=first,\\\n    second\nb=2", []Property{{"a", "first,second", 1}, {"b", "2", 3}}},
		{"continuation CRLF", "a=x\\\r\n  y", []Property{{"a", "xy", 1}}},
		{"continuation over several", "a=1\\\n2\\\n  3\nb=4", []Property{{"a", "123", 1}, {"b", "4", 4}}},
		{"continued line starting with hash is content", "a=1\\\n#2", []Property{{"a", "1#2", 1}}},
		{"blank line ends continuation", "a=1\\\n\nb=2", []Property{{"a", "1", 1}, {"b", "2", 3}}},
		{"even backslashes do not continue", "a=x\\\\\nb=y", []Property{{"a", `x\`, 1}, {"b", "y", 2}}},
		{"comment does not continue", "# c \\\na=1", []Property{{"a", "1", 2}}},
		{"backslash at EOF dropped", "a=x\\", []Property{{"a", "x", 1}}},
		{"continued key", "ke\\\n  y=v", []Property{{"key", "v", 1}}},
		{"escapes", `a=t\tn\nr\rf\f\\ \= \: \# \! \q`, []Property{{"a", "t\tn\nr\rf\f\\ = : # ! q", 1}}},
		{"escaped separators in key", `a\=b\:c\ d=v`, []Property{{"a=b:c d", "v", 1}}},
		{"unicode escapes", `u=\u00e9\u4E2D`, []Property{{"u", "é中", 1}}},
		{"surrogate pair", `u=\uD83D\uDE00!`, []Property{{"u", "😀!", 1}}},
		{"lone surrogate", `u=\uD83Dx`, []Property{{"u", "\uFFFDx", 1}}},
		{"utf8 literal", "name=broker-é\n", []Property{{"name", "broker-é", 1}}},
		{"bom skipped", "\uFEFFa=1", []Property{{"a", "1", 1}}},
		{"latin1 fallback", "a=caf\xe9", []Property{{"a", "café", 1}}},
		{"duplicates kept in order", "a=1\na=2", []Property{{"a", "1", 1}, {"a", "2", 2}}},
		{"leading space escaped value", `a=\ x`, []Property{{"a", " x", 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestParseMalformedUnicodeEscape(t *testing.T) {
	for _, in := range []string{"ok=1\nbad=\\u12G4", "ok=1\nbad=\\u12", "ok=1\n\\uZZZZ=1"} {
		_, err := Parse([]byte(in))
		require.ErrorIs(t, err, ErrSyntax, "%q", in)
		require.Contains(t, err.Error(), "line 2")
	}
}

// A typical namesrv.conf / broker.conf as operators write them.
func TestParseRealisticFile(t *testing.T) {
	in := `#  Licensed to the Apache Software Foundation (ASF)
brokerClusterName = DefaultCluster
brokerName = broker-a
brokerId = 0
deleteWhen = 04
fileReservedTime = 48
brokerRole = ASYNC_MASTER
flushDiskType = ASYNC_FLUSH
namesrvAddr=192.168.1.10:9876;192.168.1.11:9876
storePathRootDir=/data/rocketmq/store
`
	got, err := Parse([]byte(in))
	require.NoError(t, err)
	require.Len(t, got, 9)
	require.Equal(t, Property{"brokerClusterName", "DefaultCluster", 2}, got[0])
	require.Equal(t, Property{"namesrvAddr", "192.168.1.10:9876;192.168.1.11:9876", 9}, got[7])
	require.Equal(t, []string{"192.168.1.10:9876", "192.168.1.11:9876"}, SplitList(got[7].Value))
}

func TestSplitList(t *testing.T) {
	require.Nil(t, SplitList(""))
	require.Nil(t, SplitList(" ; ;"))
	require.Equal(t, []string{"a:1", "b:2"}, SplitList(" a:1 ;; b:2 ;"))
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "namesrv.conf")
	require.NoError(t, os.WriteFile(path, []byte("listenPort=9877\n"), 0o600))
	got, err := ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, []Property{{"listenPort", "9877", 1}}, got)

	_, err = ReadFile(filepath.Join(dir, "missing.conf"))
	require.ErrorIs(t, err, os.ErrNotExist)

	bad := filepath.Join(dir, "bad.conf")
	require.NoError(t, os.WriteFile(bad, []byte("a=\\uXYZW"), 0o600))
	_, err = ReadFile(bad)
	require.ErrorIs(t, err, ErrSyntax)
	require.Contains(t, err.Error(), bad)
	require.Contains(t, err.Error(), "line 1")
	require.False(t, errors.Is(err, os.ErrNotExist))
}

func TestAppendPropertyGolden(t *testing.T) {
	var out []byte
	out = AppendProperty(out, "a key", " v=1:#!\\\t\n")
	out = AppendProperty(out, "u", "é😀\x01")
	require.Equal(t, "a\\ key=\\ v\\=1\\:\\#\\!\\\\\\t\\n\n"+
		"u=\\u00E9\\uD83D\\uDE00\\u0001\n", string(out))
	got, err := Parse(out)
	require.NoError(t, err)
	require.Equal(t, []Property{{"a key", " v=1:#!\\\t\n", 1}, {"u", "é😀\x01", 2}}, got)
}
