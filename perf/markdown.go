package perf

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// column is one column of the summary tables (Markdown and HTML share them).
type column struct {
	key    string // data-key in HTML
	header string
	value  func(s, first Summary) (float64, bool) // false: no value (shown as "–")
	format func(float64) string
}

func fmtInt(v float64) string   { return strconv.FormatFloat(v, 'f', 0, 64) }
func fmtOne(v float64) string   { return strconv.FormatFloat(v, 'f', 1, 64) }
func fmtTwo(v float64) string   { return strconv.FormatFloat(v, 'f', 2, 64) }
func fmtRatio(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + "×" }

func always(f func(s Summary) float64) func(s, first Summary) (float64, bool) {
	return func(s, _ Summary) (float64, bool) { return f(s), true }
}

func positive(f func(s Summary) float64) func(s, first Summary) (float64, bool) {
	return func(s, _ Summary) (float64, bool) { v := f(s); return v, v > 0 }
}

// summaryColumns picks the columns the rows need: broker, read-side and spread columns
// appear only when some row has them.
func summaryColumns(rows []Summary) []column {
	cols := []column{
		{key: "msgs_per_sec", header: "msgs/s", value: always(func(s Summary) float64 { return s.MsgsPerSec }), format: fmtInt},
		{key: "msgs_ratio", header: "msgs/s vs first", value: func(s, f Summary) (float64, bool) {
			r := ratio(s.MsgsPerSec, f.MsgsPerSec)
			return r, r > 0
		}, format: fmtRatio},
		{key: "mb_per_sec", header: "MB/s", value: always(func(s Summary) float64 { return s.MBPerSec }), format: fmtOne},
		// A latency of 0 is no measurement (a peer that reports none): "–".
		{key: "p50_us", header: "p50 µs", value: positive(func(s Summary) float64 { return s.P50Us }), format: fmtOne},
		{key: "p99_us", header: "p99 µs", value: positive(func(s Summary) float64 { return s.P99Us }), format: fmtOne},
		{key: "p999_us", header: "p99.9 µs", value: positive(func(s Summary) float64 { return s.P999Us }), format: fmtOne},
		{key: "max_us", header: "max µs", value: positive(func(s Summary) float64 { return s.MaxUs }), format: fmtOne},
		{key: "p99_ratio", header: "p99 vs first", value: func(s, f Summary) (float64, bool) {
			r := ratio(s.P99Us, f.P99Us)
			return r, r > 0
		}, format: fmtRatio},
		{key: "errors", header: "errors", value: always(func(s Summary) float64 { return float64(s.Errors) }), format: fmtInt},
	}
	any := func(f func(Summary) bool) bool {
		for _, r := range rows {
			if f(r) {
				return true
			}
		}
		return false
	}
	if any(func(s Summary) bool { return s.Runs > 1 }) {
		cols = append([]column{
			{key: "runs", header: "runs", value: always(func(s Summary) float64 { return float64(s.Runs) }), format: fmtInt},
		}, cols...)
		cols = append(cols, column{key: "msgs_range", header: "msgs/s min–max", value: always(func(s Summary) float64 { return s.MinMsgsPerSec }),
			format: nil}) // formatted specially below
	}
	if any(func(s Summary) bool { return s.PutLatencyP99Us > 0 }) {
		cols = append(cols, column{key: "put_latency_p99_us", header: "broker put p99 µs", value: positive(func(s Summary) float64 { return s.PutLatencyP99Us }), format: fmtOne})
	}
	if any(func(s Summary) bool { return s.PutLockP99Us > 0 || s.PutLockMaxUs > 0 }) {
		cols = append(cols,
			column{key: "put_lock_p99_us", header: "put-lock p99 µs", value: positive(func(s Summary) float64 { return s.PutLockP99Us }), format: fmtOne},
			column{key: "put_lock_max_us", header: "put-lock max µs", value: positive(func(s Summary) float64 { return s.PutLockMaxUs }), format: fmtOne})
	}
	if any(func(s Summary) bool { return s.ClientCPUShare > 0 }) {
		// The load generator's own cost: a large share says the client may be the limit.
		cols = append(cols,
			column{key: "client_cpu_pct", header: "client CPU %", value: positive(func(s Summary) float64 { return s.ClientCPUShare * 100 }), format: fmtOne},
			column{key: "client_cpu_us_per_msg", header: "client µs/msg", value: positive(func(s Summary) float64 { return s.ClientCPUUsPerMsg }), format: fmtTwo})
	}
	if any(func(s Summary) bool { return s.ServerCPUUsPerMsg > 0 }) {
		// The server's own cost, read from its process: the figure a broker is judged by.
		cols = append(cols,
			column{key: "server_cpu_us_per_msg", header: "server µs/msg", value: positive(func(s Summary) float64 { return s.ServerCPUUsPerMsg }), format: fmtTwo})
	}
	if any(func(s Summary) bool { return s.ConsumeMsgsPerSec > 0 }) {
		cols = append(cols,
			column{key: "consume_msgs_per_sec", header: "pull msgs/s", value: positive(func(s Summary) float64 { return s.ConsumeMsgsPerSec }), format: fmtInt},
			column{key: "consume_p99_us", header: "e2e p99 µs", value: positive(func(s Summary) float64 { return s.ConsumeP99Us }), format: fmtOne})
	}
	return cols
}

// cellText formats one cell.
func cellText(c column, s, first Summary) (string, float64, bool) {
	if c.key == "msgs_range" {
		return fmtInt(s.MinMsgsPerSec) + "–" + fmtInt(s.MaxMsgsPerSec), s.MinMsgsPerSec, true
	}
	v, ok := c.value(s, first)
	if !ok {
		return "–", 0, false
	}
	return c.format(v), v, true
}

// WriteMarkdown writes a table with one row per summary and the ratios of throughput and
// p99 against the first row (the baseline). Latencies are in microseconds.
func WriteMarkdown(w io.Writer, rows []Summary) error {
	if len(rows) == 0 {
		return ErrNoRuns
	}
	cols := summaryColumns(rows)
	var b strings.Builder
	b.WriteString("| run |")
	sep := "| --- |"
	for _, c := range cols {
		b.WriteString(" " + c.header + " |")
		sep += " ---: |"
	}
	b.WriteString("\n" + sep + "\n")
	for _, s := range rows {
		b.WriteString("| " + mdEscape(s.Name) + " |")
		for _, c := range cols {
			text, _, _ := cellText(c, s, rows[0])
			b.WriteString(" " + text + " |")
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// Summaries returns the runs' summaries in order.
func Summaries(runs []*Run) []Summary {
	out := make([]Summary, len(runs))
	for i, r := range runs {
		out[i] = r.Summarize()
	}
	return out
}

// Medians returns the groups' median summaries in order.
func Medians(groups []Group) []Summary {
	out := make([]Summary, len(groups))
	for i, g := range groups {
		out[i] = g.Median()
	}
	return out
}

// WriteMachineMarkdown writes a short description of the machine of the first run and the
// command line shape, for BENCHMARKS.md.
func WriteMachineMarkdown(w io.Writer, runs []*Run) error {
	if len(runs) == 0 {
		return ErrNoRuns
	}
	m := runs[0].Machine
	rev := m.GitRevision
	if m.GitDirty {
		rev += " (modified)"
	}
	_, err := fmt.Fprintf(w, "Machine: %s, %d CPUs, Linux %s, %s %s (%s), %s, git %s.\n",
		orDash(m.CPUModel), m.NumCPU, orDash(m.Kernel), orDash(m.Disk.Device), orDash(m.Disk.FSType),
		orDash(m.Disk.Model), orDash(m.GoVersion), orDash(rev))
	return err
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}
