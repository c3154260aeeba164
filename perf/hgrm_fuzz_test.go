package perf

import (
	"bytes"
	"math"
	"os"
	"testing"
)

// FuzzReadHgrm: any input either fails with ErrHgrm or gives points that are all in range.
func FuzzReadHgrm(f *testing.F) {
	seed, err := os.ReadFile("testdata/runs/ringmq-async/produce.hgrm")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(" 0.250 0.500000 5 2.00\n"))
	f.Add([]byte("1 2 3 4\n#[Max = 1]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ReadHgrm(bytes.NewReader(data))
		if err != nil {
			if len(ps) != 0 {
				t.Fatalf("points with an error: %v", ps)
			}
			return
		}
		if len(ps) == 0 {
			t.Fatal("no points and no error")
		}
		for _, p := range ps {
			if !(p.Percentile >= 0 && p.Percentile <= 1) || !(p.ValueUs >= 0) || math.IsInf(p.ValueUs, 0) {
				t.Fatalf("out of range: %+v", p)
			}
		}
	})
}
