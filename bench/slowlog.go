package bench

import (
	"bufio"
	"fmt"
	"os"
)

// WriteSlowLog writes res.Slow to path, one send per line: intended, written and answered, in Unix
// nanoseconds (scripts/tail-attribution.py reads it). A first comment line gives the threshold and
// how many slow sends the bound dropped.
func WriteSlowLog(path string, threshold fmt.Stringer, res *ProduceResult) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# intended_ns sent_ns done_ns (sends at least %v late; %d kept, %d dropped)\n", threshold, len(res.Slow), res.SlowDropped)
	for _, s := range res.Slow {
		fmt.Fprintf(w, "%d %d %d\n", s.IntendedNs, s.SentNs, s.DoneNs)
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
