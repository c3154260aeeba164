//go:build !race

// The race detector's instrumentation allocates: allocation counts are only meaningful
// without it (STYLE.md §6).

package filter

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// TestMatchRecordDoesNotAllocate: evaluating a compiled filter on a stored record reads
// the properties in place — no map, no copy — whatever the expression does: string and
// number comparisons, conversions of property strings, IN lists, NULL handling, and
// evaluation errors.
func TestMatchRecordDoesNotAllocate(t *testing.T) {
	host := netip.MustParseAddrPort("127.0.0.1:10911")
	m := codec.Message{Topic: "T", Body: []byte("body"), BornHost: host, StoreHost: host,
		Properties: props("TAGS", "TagA", "price", "15", "ratio", "0.75", "color", "red",
			"UNIQ_KEY", "0A0B0C0D0000000000000000000000000000", "long", "12345678901234567890123456789012345.5")}
	rec, err := m.AppendRecord(nil)
	require.NoError(t, err)
	for expr, want := range map[string]bool{
		"TAGS IN ('TagB', 'TagC', 'TagD', 'TagE', 'TagA') AND price BETWEEN 10 AND 20": true,
		"color = 'red' AND ratio > 0.5 AND price <> 16 AND missing IS NULL":            true,
		"long > 1.5 OR price > ratio OR price = 15.0":                                  true,
		"NOT (price > 100) AND -price IS NULL AND color = FALSE":                       true,
		"color > 1 OR price = 15":                                                      false, // the conversion of "red" fails first
	} {
		e, err := Compile(expr)
		require.NoError(t, err, expr)
		require.Equal(t, want, e.MatchRecord(rec), expr)
		allocs := testing.AllocsPerRun(200, func() { e.MatchRecord(rec) })
		require.Zero(t, allocs, expr)
	}
}
