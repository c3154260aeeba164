package conf

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRewriteKeepsEveryOtherByte(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		set      []Property
		want     string
	}{
		{"replace in place, comments and CRLF kept",
			"# broker.conf\r\nbrokerName=a\r\nbrokerPermission = 6   \r\n\r\n! end\r\n",
			[]Property{{Key: "brokerPermission", Value: "4"}},
			"# broker.conf\r\nbrokerName=a\r\nbrokerPermission=4\r\n\r\n! end\r\n"},
		{"the last occurrence is the one changed",
			"brokerPermission=2\nbrokerPermission:6\n",
			[]Property{{Key: "brokerPermission", Value: "4"}},
			"brokerPermission=2\nbrokerPermission=4\n"},
		{"continuation lines become one",
			"a=1\nnamesrvAddr=n1:9876;\\\n    n2:9876\nb=2\n",
			[]Property{{Key: "namesrvAddr", Value: "n3:9876"}},
			"a=1\nnamesrvAddr=n3:9876\nb=2\n"},
		{"absent: appended, a newline added first",
			"a=1",
			[]Property{{Key: "autoCreateTopicEnable", Value: "false"}, {Key: "a", Value: "x y"}},
			"a=x y\nautoCreateTopicEnable=false\n"},
		{"absent after a dangling continuation",
			"a=1\\\n",
			[]Property{{Key: "k", Value: "v"}},
			"a=1\\\n\nk=v\n"},
		{"absent after a dangling continuation ended by a lone CR: the blank line ends in CR too",
			"a=1\\\r",
			[]Property{{Key: "k", Value: "v"}},
			"a=1\\\r\rk=v\n"},
		{"a file read as ISO-8859-1 comes back in UTF-8, its characters unchanged",
			"k=\xb8\nj=\xe9\n",
			[]Property{{Key: "k", Value: "0"}},
			"k=0\nj=\u00e9\n"},
		{"a key given twice takes its last value",
			"",
			[]Property{{Key: "k", Value: "1"}, {Key: "k", Value: "2"}},
			"k=2\n"},
		{"escaped as the loader reads it; byte order mark kept",
			"\uFEFFk=old\n",
			[]Property{{Key: "k", Value: " a=b\\c"}},
			"\uFEFFk=\\ a=b\\\\c\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Rewrite([]byte(tc.in), tc.set, nil)
			require.NoError(t, err)
			require.Equal(t, tc.want, string(out))
		})
	}
}

func TestRewriteCanonicalAndErrors(t *testing.T) {
	alias := func(k string) string {
		if k == "mapedFileSizeCommitLog" {
			return "mappedFileSizeCommitLog"
		}
		return k
	}
	out, err := Rewrite([]byte("mapedFileSizeCommitLog=1024\n"), []Property{{Key: "mappedFileSizeCommitLog", Value: "4096"}}, alias)
	require.NoError(t, err)
	require.Equal(t, "mappedFileSizeCommitLog=4096\n", string(out))

	_, err = Rewrite([]byte("a=\\uXYZW\n"), []Property{{Key: "a", Value: "1"}}, nil)
	require.ErrorIs(t, err, ErrSyntax)
}

// FuzzRewrite: whatever parses, rewritten with one key, parses to the same properties but that
// key's last occurrence, which holds the new value (or is appended when the key was absent).
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{"", "k=1\n", "# c\nk = 1\nj=2", "k=a\\\n  b\nk=c\\", "a=\\\n", "\uFEFFk:1\r\n", "x\\\n#k=1\n"} {
		f.Add([]byte(s), "k", "v")
	}
	f.Add([]byte("a b\\\\\nc"), "a b", " \\#")
	f.Add([]byte("\\\r"), "0", "0")           // a continuation ended by a lone CR at the end of the file (found by the fuzzer)
	f.Add([]byte("k \xb8\n\u0545"), "k", "0") // the only invalid UTF-8 byte in the rewritten line (found by the fuzzer)
	f.Fuzz(func(t *testing.T, data []byte, key, value string) {
		before, err := Parse(data)
		out, rerr := Rewrite(data, []Property{{Key: key, Value: value}}, nil)
		if err != nil {
			require.ErrorIs(t, rerr, ErrSyntax)
			return
		}
		require.NoError(t, rerr)
		after, err := Parse(out)
		require.NoError(t, err, "%q", out)
		want := make([]Property, 0, len(before)+1)
		last := -1
		for i, p := range before {
			if p.Key == key {
				last = i
			}
			want = append(want, Property{Key: p.Key, Value: p.Value})
		}
		// A key or value the file cannot hold as such (invalid UTF-8) reads back as U+FFFD.
		nk, nv := parsedBack(t, key, value)
		if last >= 0 {
			want[last] = Property{Key: nk, Value: nv}
		} else {
			want = append(want, Property{Key: nk, Value: nv})
		}
		got := make([]Property, len(after))
		for i, p := range after {
			got[i] = Property{Key: p.Key, Value: p.Value}
		}
		require.Equal(t, want, got, "%q -> %q", data, out)
	})
}

// parsedBack is key and value as a file written by AppendProperty gives them back.
func parsedBack(t *testing.T, key, value string) (string, string) {
	t.Helper()
	p, err := Parse(AppendProperty(nil, key, value))
	require.NoError(t, err)
	require.Len(t, p, 1)
	return p[0].Key, p[0].Value
}
