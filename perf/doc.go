// Package perf turns mqbench run records into reports: a Markdown table with one row per
// run (or per configuration, as medians over rounds) and throughput and p99 ratios against
// the first, and a self-contained HTML page — inline CSS and SVG, no script, no network
// asset — with latency by percentile on HdrHistogram's log percentile axis, throughput
// over time, and the broker's put-lock time against RocketMQ's 500 ms warning line.
//
// It reads runs through their files only (run.json, the .hgrm percentile distributions,
// series.csv; the format is documented in bench/record.go) and never runs a load, so it
// compares runs of any RocketMQ-compatible broker, or two configurations of one.
// Everything here is safe for concurrent use on distinct values.
package perf
