package conf

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// FuzzProperties parses arbitrary input; whatever parses must survive a round trip through
// AppendProperty (the same keys and values, in order), carry ascending line numbers and
// valid UTF-8. Malformed input may only fail with ErrSyntax, never panic.
func FuzzProperties(f *testing.F) {
	seeds := []string{
		"",
		"listenPort=9876\n",
		"# comment\n! other\nkey value\n",
		"a: b\r\nc = d\re\n",
		"long=first,\\\n    second,\\\n\tthird\n",
		"a=x\\\\\nb=y\\",
		`esc=\t\n\r\f\\\=\:\#\!\ \q`,
		`u=\u00e9\uD83D\uDE00\uD83Dx`,
		`bad=\u12G4`,
		"\uFEFFbom=1",
		"latin1=caf\xe9",
		"namesrvAddr=10.0.0.1:9876;10.0.0.2:9876\nbrokerId = 0\nflag\n",
		"k\\\n\n=v",
		"=\n:\n \\\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		props, err := Parse(data)
		if err != nil {
			require.ErrorIs(t, err, ErrSyntax)
			return
		}
		var out []byte
		last := 0
		for _, p := range props {
			require.Greater(t, p.Line, last, "line numbers ascend")
			last = p.Line
			require.True(t, utf8.ValidString(p.Key), "key %q", p.Key)
			require.True(t, utf8.ValidString(p.Value), "value %q", p.Value)
			out = AppendProperty(out, p.Key, p.Value)
		}
		again, err := Parse(out)
		require.NoError(t, err, "re-parse of %q", out)
		require.Len(t, again, len(props))
		for i := range props {
			require.Equal(t, props[i].Key, again[i].Key)
			require.Equal(t, props[i].Value, again[i].Value)
			require.Equal(t, i+1, again[i].Line)
		}
	})
}
