package broker

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// goldenDefaults is every key's default as Get prints it on DefaultConfig(), sorted by key,
// one key=value a line, written from the code before broker.Config embedded the store's
// settings (issue 15 item 4): the refactoring must leave every key and default as it was.
// brokerName defaults to the host name, written as <hostname>.
const goldenDefaults = "testdata/default_config.golden"

func defaultConfigLines(t *testing.T) string {
	t.Helper()
	c := DefaultConfig()
	var lines []string
	for _, key := range PropertyNames() {
		v, ok := c.Get(key)
		require.True(t, ok, key)
		if key == "brokerName" {
			v = "<hostname>"
		}
		lines = append(lines, key+"="+v)
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n") + "\n"
}

// TestDefaultConfigGolden: the keys and their defaults are the ones recorded in testdata.
// RINGMQ_UPDATE_GOLDEN=1 rewrites the file (only when a default changes on purpose).
func TestDefaultConfigGolden(t *testing.T) {
	got := defaultConfigLines(t)
	if os.Getenv("RINGMQ_UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.WriteFile(filepath.FromSlash(goldenDefaults), []byte(got), 0o644))
	}
	want, err := os.ReadFile(filepath.FromSlash(goldenDefaults))
	require.NoError(t, err)
	require.Equal(t, string(want), got)
}
