package perf

import (
	"slices"
)

// Summary is the row a report shows for a run, or for a group of runs (medians).
type Summary struct {
	Name       string
	Runs       int     // runs summarized (1 for a single run)
	MsgsPerSec float64 // primary role: produce if the run has it, else consume
	MBPerSec   float64
	P50Us      float64
	P99Us      float64
	P999Us     float64
	MaxUs      float64
	Errors     int64
	// MinMsgsPerSec and MaxMsgsPerSec give the spread over a group's runs.
	MinMsgsPerSec, MaxMsgsPerSec float64
	// Broker side (0 when the broker did not report it).
	PutLatencyP99Us float64
	PutLockP99Us    float64
	PutLockMaxUs    float64
	// Read side, when the run consumed.
	ConsumeMsgsPerSec float64
	ConsumeP99Us      float64
	// The load generator's own CPU (0 when not recorded): share of the machine and µs
	// per message of the primary role.
	ClientCPUShare    float64
	ClientCPUUsPerMsg float64
	// The server process's CPU per message of the primary role (0 when not recorded).
	ServerCPUUsPerMsg float64
}

// Primary is the role a run is summarized by: produce when it has one, else consume.
func (r *Run) Primary() *Role {
	if r.Results.Produce != nil {
		return r.Results.Produce
	}
	return r.Results.Consume
}

// Summarize returns the run's summary.
func (r *Run) Summarize() Summary {
	s := Summary{Name: r.Name, Runs: 1}
	if p := r.Primary(); p != nil {
		l := p.Lat()
		s.MsgsPerSec, s.MBPerSec = p.MsgsPerSec, p.MBPerSec
		s.P50Us, s.P99Us, s.P999Us, s.MaxUs = l.P50Us, l.P99Us, l.P999Us, l.MaxUs
		s.Errors = p.Errors
		if p.ClientCPU != nil {
			s.ClientCPUShare, s.ClientCPUUsPerMsg = p.ClientCPU.Share, p.ClientCPU.UsPerMsg
		}
		if p.ServerCPU != nil {
			s.ServerCPUUsPerMsg = p.ServerCPU.UsPerMsg
		}
	}
	s.MinMsgsPerSec, s.MaxMsgsPerSec = s.MsgsPerSec, s.MsgsPerSec
	if h, ok := r.Broker.PutLatency(); ok {
		s.PutLatencyP99Us = h.P99 * 1e6
	}
	if h, ok := r.Broker.PutLock(); ok {
		s.PutLockP99Us = h.P99 * 1e6
	}
	if v, ok := r.Broker.PutLockMaxSeconds(); ok {
		s.PutLockMaxUs = v * 1e6
	}
	if c := r.Results.Consume; c != nil && r.Results.Produce != nil {
		s.ConsumeMsgsPerSec = c.MsgsPerSec
		// End-to-end latency means something only when consumers ran beside the
		// producers (mixed). After a produce run the suite reads the backlog back, and
		// born-to-receipt time is then the backlog's age, not a latency.
		if r.Mode == "mixed" || r.Mode == "e2e" {
			s.ConsumeP99Us = c.Lat().P99Us
		}
	}
	return s
}

// Group is the runs of one configuration (same Name), e.g. the rounds of a suite.
type Group struct {
	Name string
	Runs []*Run
}

// GroupByName groups runs by Name, groups in order of first appearance.
func GroupByName(runs []*Run) []Group {
	var groups []Group
	index := map[string]int{}
	for _, r := range runs {
		i, ok := index[r.Name]
		if !ok {
			i = len(groups)
			index[r.Name] = i
			groups = append(groups, Group{Name: r.Name})
		}
		groups[i].Runs = append(groups[i].Runs, r)
	}
	return groups
}

// Median summarizes the group: every figure is the median over its runs (the mean of
// the two middle values for an even count); errors are summed; the spread of msgs/s is
// the min and max.
func (g Group) Median() Summary {
	s := Summary{Name: g.Name, Runs: len(g.Runs)}
	if len(g.Runs) == 0 {
		return s
	}
	sums := make([]Summary, len(g.Runs))
	for i, r := range g.Runs {
		sums[i] = r.Summarize()
		s.Errors += sums[i].Errors
	}
	med := func(f func(Summary) float64) float64 {
		vs := make([]float64, len(sums))
		for i := range sums {
			vs[i] = f(sums[i])
		}
		return Median(vs)
	}
	s.MsgsPerSec = med(func(x Summary) float64 { return x.MsgsPerSec })
	s.MBPerSec = med(func(x Summary) float64 { return x.MBPerSec })
	s.P50Us = med(func(x Summary) float64 { return x.P50Us })
	s.P99Us = med(func(x Summary) float64 { return x.P99Us })
	s.P999Us = med(func(x Summary) float64 { return x.P999Us })
	s.MaxUs = med(func(x Summary) float64 { return x.MaxUs })
	s.PutLatencyP99Us = med(func(x Summary) float64 { return x.PutLatencyP99Us })
	s.PutLockP99Us = med(func(x Summary) float64 { return x.PutLockP99Us })
	s.PutLockMaxUs = med(func(x Summary) float64 { return x.PutLockMaxUs })
	s.ConsumeMsgsPerSec = med(func(x Summary) float64 { return x.ConsumeMsgsPerSec })
	s.ConsumeP99Us = med(func(x Summary) float64 { return x.ConsumeP99Us })
	s.ClientCPUShare = med(func(x Summary) float64 { return x.ClientCPUShare })
	s.ClientCPUUsPerMsg = med(func(x Summary) float64 { return x.ClientCPUUsPerMsg })
	s.ServerCPUUsPerMsg = med(func(x Summary) float64 { return x.ServerCPUUsPerMsg })
	s.MinMsgsPerSec, s.MaxMsgsPerSec = sums[0].MsgsPerSec, sums[0].MsgsPerSec
	for _, x := range sums[1:] {
		s.MinMsgsPerSec = min(s.MinMsgsPerSec, x.MsgsPerSec)
		s.MaxMsgsPerSec = max(s.MaxMsgsPerSec, x.MsgsPerSec)
	}
	return s
}

// Representative is the run whose throughput is the group's median (the lower middle one
// for an even count): the one a chart draws for the group.
func (g Group) Representative() *Run {
	if len(g.Runs) == 0 {
		return nil
	}
	runs := slices.Clone(g.Runs)
	slices.SortStableFunc(runs, func(a, b *Run) int {
		x, y := a.Summarize().MsgsPerSec, b.Summarize().MsgsPerSec
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return runs[(len(runs)-1)/2]
}

// Median returns the median of vs (the mean of the two middle values for an even count;
// 0 for none). vs is not modified.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
