package opsserver

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// RuntimeCollectors are the collectors mqbroker registers beside the broker's own series: the
// process's (process_*: RSS, CPU seconds, open files) and the Go runtime's (go_*), with the
// runtime's scheduler and GC series besides the classic ones: go_sched_latencies_seconds (how long
// runnable goroutines waited for a CPU), the GC and stop-the-world pause histograms and the GC CPU
// classes (mark assist included) are what tell a CPU-starved or GC-bound tail from one the store
// or the disk causes. One list, so that what deploy/'s dashboard and alerts query is checked
// against what the binary exports.
func RuntimeCollectors() []prometheus.Collector {
	return []prometheus.Collector{
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
			collectors.MetricsScheduler, collectors.MetricsGC,
			collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/cpu/classes/gc/`)})),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	}
}
