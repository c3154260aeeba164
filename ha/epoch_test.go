package ha

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// The epoch file keeps RocketMQ's CheckpointFile format byte for byte, survives a reopen, and refuses
// entries that do not follow the last one; an epoch that wrote nothing is replaced by the next.
func TestEpochFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), EpochFileName)
	f, err := OpenEpochFile(path)
	require.NoError(t, err)
	_, ok := f.Last()
	require.False(t, ok, "a missing file is no entries")
	require.NoError(t, f.Append(EpochEntry{1, 0}))
	require.NoError(t, f.Append(EpochEntry{2, 4096}))
	require.ErrorIs(t, f.Append(EpochEntry{2, 8192}), ErrEpochFile, "not a newer epoch")
	require.ErrorIs(t, f.Append(EpochEntry{3, 100}), ErrEpochFile, "an offset before the last start")
	require.NoError(t, f.Append(EpochEntry{3, 4096}), "epoch 2 wrote nothing")
	require.NoError(t, f.Append(EpochEntry{5, 9000}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "3\n1-0\n3-4096\n5-9000\n", string(data))

	again, err := OpenEpochFile(path)
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{1, 0}, {3, 4096}, {5, 9000}}, again.Entries())
	last, ok := again.Last()
	require.True(t, ok)
	require.Equal(t, EpochEntry{5, 9000}, last)

	require.NoError(t, again.Reset([]EpochEntry{{7, 0}}))
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "1\n7-0\n", string(data))
	require.ErrorIs(t, again.Reset([]EpochEntry{{7, 0}, {6, 10}}), ErrEpochFile)
	require.Equal(t, []EpochEntry{{7, 0}}, again.Entries(), "a refused reset changes nothing")
}

func TestParseEpochEntriesErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "no count line"},
		{"x\n", `count line "x"`},
		{"2\n1-0\n", "the count line says 2 entries, the file has 1"},
		{"1\n1:0\n", `line 2: "1:0", want epoch-startOffset`},
		{"1\n-1-0\n", `line 2: "-1-0"`},
		{"2\n2-10\n1-20\n", "line 3: entry 1-20 does not follow 2-10"},
		{"2\n1-10\n2-5\n", "line 3: entry 2-5 does not follow 1-10"},
	} {
		_, err := ParseEpochEntries([]byte(tc.in))
		require.ErrorIs(t, err, ErrEpochFile, "%q", tc.in)
		require.ErrorContains(t, err, tc.want, "%q", tc.in)
	}
	list, err := ParseEpochEntries([]byte("2\n1-0\n\n4-77\n"))
	require.NoError(t, err)
	require.Equal(t, []EpochEntry{{1, 0}, {4, 77}}, list)
}

// ConsistentPoint, case by case (RocketMQ 5's findConsistentPoint, with entries past a log's end left out).
func TestConsistentPoint(t *testing.T) {
	type log struct {
		entries []EpochEntry
		end     int64
	}
	for _, tc := range []struct {
		name  string
		a, b  log
		point int64
		ok    bool
	}{
		{"an old master back: its unacknowledged tail of epoch 1 past what the new master had",
			log{[]EpochEntry{{1, 0}}, 1000}, log{[]EpochEntry{{1, 0}, {2, 800}}, 1500}, 800, true},
		{"the same seen from the new master", log{[]EpochEntry{{1, 0}, {2, 800}}, 1500},
			log{[]EpochEntry{{1, 0}}, 1000}, 800, true},
		{"a slave behind in the same epoch", log{[]EpochEntry{{1, 0}, {2, 800}}, 900},
			log{[]EpochEntry{{1, 0}, {2, 800}}, 1500}, 900, true},
		{"a slave that took its master's entries before catching up (entry past its end)",
			log{[]EpochEntry{{1, 0}, {2, 800}}, 700}, log{[]EpochEntry{{1, 0}, {2, 800}}, 1500}, 700, true},
		{"epoch 2 started at different offsets on each: epoch 1 decides",
			log{[]EpochEntry{{1, 0}, {2, 600}}, 1000}, log{[]EpochEntry{{1, 0}, {2, 800}}, 1500}, 600, true},
		{"two masters of one epoch number after an unclean election: the older epoch decides",
			log{[]EpochEntry{{1, 0}, {3, 500}}, 900}, log{[]EpochEntry{{1, 0}, {2, 500}, {3, 700}}, 1500}, 500, true},
		{"nothing in common", log{[]EpochEntry{{1, 0}}, 100}, log{[]EpochEntry{{2, 0}}, 100}, 0, false},
		{"an empty replica", log{nil, 0}, log{[]EpochEntry{{1, 0}}, 100}, 0, false},
		{"identical", log{[]EpochEntry{{4, 4096}}, 8192}, log{[]EpochEntry{{4, 4096}}, 8192}, 8192, true},
	} {
		point, ok := ConsistentPoint(tc.a.entries, tc.a.end, tc.b.entries, tc.b.end)
		require.Equal(t, tc.ok, ok, tc.name)
		require.Equal(t, tc.point, point, tc.name)
	}
}

// Any bytes: ParseEpochEntries fails or returns entries that FormatEpochEntries writes back to bytes that
// parse to the same entries.
func FuzzParseEpochEntries(f *testing.F) {
	for _, seed := range []string{"", "0\n", "1\n1-0\n", "3\n1-0\n3-4096\n5-9000\n", "2\n2-10\n1-20\n", "1\n9223372036854775807-1\n"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		list, err := ParseEpochEntries(data)
		if err != nil {
			return
		}
		again, err := ParseEpochEntries(FormatEpochEntries(list))
		require.NoError(t, err)
		require.Equal(t, len(list), len(again))
		for i := range list {
			require.Equal(t, list[i], again[i])
		}
	})
}
