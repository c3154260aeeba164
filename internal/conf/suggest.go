package conf

import (
	"strings"

	"github.com/agnivade/levenshtein"
)

// Suggest returns the name in known nearest to name by edit distance, compared without case
// (operators mistype case as often as letters: listenport, ListenPort), or "" when none is
// near enough to be a likely misspelling: at most 2 edits for short names, about a quarter
// of the name's length for long ones. Ties go to the earlier name in known.
func Suggest(name string, known []string) string {
	lower := strings.ToLower(name)
	limit := max(2, len(name)/4)
	best, bestDistance := "", limit+1
	for _, k := range known {
		if d := levenshtein.ComputeDistance(lower, strings.ToLower(k)); d < bestDistance {
			best, bestDistance = k, d
		}
	}
	return best
}
