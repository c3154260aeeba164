package perf

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// HTMLOptions adjust WriteHTML.
type HTMLOptions struct {
	// Title heads the page (default "mqbench report").
	Title string
	// Rows replaces the summary table's rows (e.g. medians over rounds); nil summarizes
	// the runs drawn.
	Rows []Summary
	// RowsCaption describes Rows.
	RowsCaption string
	// Generated, if set, is printed under the title.
	Generated time.Time
	// Notes are extra paragraphs (the command, skipped runs ...).
	Notes []string
	// Tables are extra tables after the summary (e.g. ratios against a peer).
	Tables []Table
}

// Table is an extra table of a report: a caption, a header row and text cells.
type Table struct {
	ID      string
	Caption string
	Header  []string
	Rows    [][]string
}

// putLockWarningUs is RocketMQ's in-lock warning: a put holding the lock longer logs
// "[NOTIFYME]putMessage in lock cost time" (PROTOCOL §11).
const putLockWarningUs = 500_000

// WriteHTML writes a self-contained report (inline CSS and SVG; no script, no network
// asset) comparing runs: a summary table with ratios against the first run, latency by
// percentile on HdrHistogram's log percentile axis (one line per run, with the broker's
// own put latency dashed beside the client's), end-to-end latency when runs consumed,
// throughput over time, and the broker's put-lock time against the 500 ms warning.
//
// The document is well-formed XML (XHTML syntax), so it can be checked with an XML parser.
func WriteHTML(w io.Writer, runs []*Run, opts HTMLOptions) error {
	if len(runs) == 0 {
		return ErrNoRuns
	}
	title := opts.Title
	if title == "" {
		title = "mqbench report"
	}
	rows := opts.Rows
	if rows == nil {
		rows = Summaries(runs)
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n")
	b.WriteString(`<html xmlns="http://www.w3.org/1999/xhtml" lang="en"><head><meta charset="utf-8"/>`)
	fmt.Fprintf(&b, "<title>%s</title><style>%s</style></head><body>\n", esc(title), css)
	fmt.Fprintf(&b, "<h1>%s</h1>\n", esc(title))
	if !opts.Generated.IsZero() {
		fmt.Fprintf(&b, "<p class=\"meta\">Generated %s.</p>\n", esc(opts.Generated.Format(time.RFC1123)))
	}
	for _, n := range opts.Notes {
		fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", esc(n))
	}
	b.WriteString("<h2>Summary</h2>\n")
	if opts.RowsCaption != "" {
		fmt.Fprintf(&b, "<p>%s</p>\n", esc(opts.RowsCaption))
	}
	writeSummaryTable(&b, rows)
	for _, t := range opts.Tables {
		if t.Caption != "" {
			fmt.Fprintf(&b, "<h3>%s</h3>\n", esc(t.Caption))
		}
		fmt.Fprintf(&b, `<table id="%s"><thead><tr>`, esc(t.ID))
		for i, h := range t.Header {
			class := ""
			if i == 0 {
				class = ` class="name"`
			}
			fmt.Fprintf(&b, "<th%s>%s</th>", class, esc(h))
		}
		b.WriteString("</tr></thead><tbody>\n")
		for _, row := range t.Rows {
			b.WriteString("<tr>")
			for i, cell := range row {
				class := ""
				if i == 0 {
					class = ` class="name"`
				}
				fmt.Fprintf(&b, "<td%s>%s</td>", class, esc(cell))
			}
			b.WriteString("</tr>\n")
		}
		b.WriteString("</tbody></table>\n")
	}

	b.WriteString("<h2>Latency by percentile</h2>\n<p>Solid lines: client latency of each run (send latency as the load generator measured it, or end to end for consume-only runs). Dashed lines: the broker's own put latency over the same window, where the broker reported it. The legend names which is which.</p>\n")
	latencyChart(runs).render(&b)
	if c := e2eChart(runs); c != nil {
		b.WriteString("\n<h2>End-to-end latency by percentile</h2>\n<p>From the producer's send stamp (or BORNTIMESTAMP) to receipt by the consumer.</p>\n")
		c.render(&b)
	}
	b.WriteString("\n<h2>Throughput over time</h2>\n<p>Messages acknowledged per 250 ms interval (runs that recorded a throughput file; older runs per second), as a rate.</p>\n")
	throughputChart(runs).render(&b)
	b.WriteString("\n<h2>Broker put-lock time</h2>\n<p>Time puts held the CommitLog put lock (broker histogram over the measured window; max is the broker's gauge). The red line is RocketMQ's 500 ms in-lock warning.</p>\n")
	lock := lockChart(runs)
	if len(lock.lines) == 0 {
		b.WriteString("<p class=\"note\">No run has broker put-lock metrics.</p>\n")
	}
	lock.render(&b)
	b.WriteString("\n<h2>Runs</h2>\n")
	writeRunsTable(&b, runs)
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

const css = `body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}` +
	`table{border-collapse:collapse;margin:1em 0;font-size:13px}` +
	`th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#f3f3f3}` +
	`td.name,th.name{text-align:left}` +
	`svg.chart{display:block;margin:1em 0}` +
	`.note{color:#666}.meta{color:#666}`

func writeSummaryTable(b *strings.Builder, rows []Summary) {
	cols := summaryColumns(rows)
	b.WriteString(`<table id="summary"><thead><tr><th class="name">run</th>`)
	for _, c := range cols {
		fmt.Fprintf(b, "<th>%s</th>", esc(c.header))
	}
	b.WriteString("</tr></thead><tbody>\n")
	for _, s := range rows {
		fmt.Fprintf(b, `<tr data-run="%s"><td class="name">%s</td>`, esc(s.Name), esc(s.Name))
		for _, c := range cols {
			text, v, ok := cellText(c, s, rows[0])
			if ok {
				fmt.Fprintf(b, `<td data-key="%s" data-value="%s">%s</td>`, c.key, trimFloat(v), esc(text))
			} else {
				fmt.Fprintf(b, `<td data-key="%s">%s</td>`, c.key, esc(text))
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody></table>\n")
}

func writeRunsTable(b *strings.Builder, runs []*Run) {
	b.WriteString(`<table id="runs"><thead><tr><th class="name">run</th><th class="name">mode</th><th class="name">config</th><th class="name">machine</th><th class="name">git</th></tr></thead><tbody>` + "\n")
	for _, r := range runs {
		keys := make([]string, 0, len(r.Config))
		for k := range r.Config {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var cfg []string
		for _, k := range keys {
			if r.Config[k] != "" {
				cfg = append(cfg, k+"="+r.Config[k])
			}
		}
		m := r.Machine
		machine := fmt.Sprintf("%s ×%d, Linux %s, %s %s %s, %s", orDash(m.CPUModel), m.NumCPU, orDash(m.Kernel),
			orDash(m.Disk.Device), orDash(m.Disk.FSType), m.Disk.Model, orDash(m.GoVersion))
		rev := m.GitRevision
		if m.GitDirty {
			rev += " (modified)"
		}
		fmt.Fprintf(b, `<tr data-run="%s"><td class="name">%s</td><td class="name">%s</td><td class="name">%s</td><td class="name">%s</td><td class="name">%s</td></tr>`+"\n",
			esc(r.Name), esc(r.Name), esc(r.Mode), esc(strings.Join(cfg, " ")), esc(machine), esc(orDash(rev)))
	}
	b.WriteString("</tbody></table>\n")
}

// curvePoints turns an .hgrm curve into chart points (x = 1/(1-p), y = µs), leaving out
// the final p = 1 line (infinite x), and returns the largest finite x.
func curvePoints(curve []Percentile) ([][2]float64, float64) {
	pts := make([][2]float64, 0, len(curve))
	maxX := 1.0
	for _, p := range curve {
		if p.Percentile >= 1 {
			continue
		}
		x := 1 / (1 - p.Percentile)
		pts = append(pts, [2]float64{x, p.ValueUs})
		maxX = max(maxX, x)
	}
	return pts, maxX
}

// quantilePoints places a broker histogram's quantiles on the percentile axis.
func quantilePoints(h PromHistogram) [][2]float64 {
	return [][2]float64{{2, h.P50 * 1e6}, {10, h.P90 * 1e6}, {100, h.P99 * 1e6}, {1000, h.P999 * 1e6}}
}

// yRange collects the extent of the chart's values.
type yRange struct{ lo, hi float64 }

func newYRange() yRange { return yRange{lo: math.Inf(1), hi: 0} }

func (r *yRange) add(pts [][2]float64) {
	for _, p := range pts {
		if p[1] > 0 {
			r.lo = min(r.lo, p[1])
		}
		r.hi = max(r.hi, p[1])
	}
}

func (r yRange) orDefault() (float64, float64) {
	if math.IsInf(r.lo, 1) {
		return 1, 1000
	}
	return r.lo, r.hi
}

func latencyChart(runs []*Run) *chart {
	c := newChart("latency", "Latency by percentile", "percentile", "latency")
	yr := newYRange()
	maxX := 1e4
	for i, r := range runs {
		role := r.Primary()
		if role == nil {
			continue
		}
		pts, mx := curvePoints(role.Curve)
		maxX = max(maxX, mx)
		yr.add(pts)
		if len(pts) == 0 {
			continue // no per-message latency (a peer's async publish)
		}
		kind := " — client send latency"
		if r.Results.Produce == nil {
			kind = " — client end-to-end latency"
		}
		c.lines = append(c.lines, series{name: r.Name, label: r.Name + kind, color: colorOf(i), class: "series", points: pts,
			attrs: [][2]string{{"data-p99-us", trimFloat(role.Lat().P99Us)}}})
	}
	for i, r := range runs {
		if h, ok := r.Broker.PutLatency(); ok {
			pts := quantilePoints(h)
			yr.add(pts)
			c.lines = append(c.lines, series{name: r.Name + " (broker put)", label: r.Name + " — broker put latency (dashed)",
				color: colorOf(i), dashed: true, class: "broker", points: pts})
		}
	}
	c.percentileAxis(maxX)
	c.logAxisY(yr.orDefault())
	return c
}

func e2eChart(runs []*Run) *chart {
	var any bool
	for _, r := range runs {
		if r.Results.Produce != nil && r.Results.Consume != nil && len(r.Results.Consume.Curve) > 0 {
			any = true
		}
	}
	if !any {
		return nil
	}
	c := newChart("e2e", "End-to-end latency by percentile", "percentile", "latency")
	yr := newYRange()
	maxX := 1e4
	for i, r := range runs {
		cons := r.Results.Consume
		if r.Results.Produce == nil || cons == nil || len(cons.Curve) == 0 {
			continue
		}
		pts, mx := curvePoints(cons.Curve)
		maxX = max(maxX, mx)
		yr.add(pts)
		c.lines = append(c.lines, series{name: r.Name, color: colorOf(i), class: "series", points: pts})
	}
	c.percentileAxis(maxX)
	c.logAxisY(yr.orDefault())
	return c
}

func throughputChart(runs []*Run) *chart {
	c := newChart("throughput", "Throughput over time", "seconds since the measurement began", "messages per second")
	maxX, maxY := 1.0, 1.0
	for i, r := range runs {
		pts := throughputPoints(r)
		for _, p := range pts {
			maxX = max(maxX, p[0])
			maxY = max(maxY, p[1])
		}
		c.lines = append(c.lines, series{name: r.Name, color: colorOf(i), class: "series", points: pts})
	}
	c.xTicks = linearAxis(&c.x, maxX, func(v float64) string { return trimFloat(v) + " s" })
	c.yTicks = linearAxis(&c.y, maxY*1.05, formatCount)
	return c
}

// throughputPoints is a run's rate over time: from its throughput file (one point per
// 250 ms interval) when it has one, else from the per-second series.
func throughputPoints(r *Run) [][2]float64 {
	var pts [][2]float64
	if len(r.Throughput) > 0 {
		for _, p := range r.Throughput {
			// A sliver at the end of the run (the last responses) is not a rate.
			if p.IntervalMs < 50 {
				continue
			}
			pts = append(pts, [2]float64{float64(p.EndMs) / 1000, float64(p.Msgs) * 1000 / float64(p.IntervalMs)})
		}
		return pts
	}
	role := "produce"
	if r.Results.Produce == nil {
		role = "consume"
	}
	var secs float64
	if rr := r.Primary(); rr != nil {
		secs = rr.Secs
	}
	for _, p := range r.Series[role] {
		// Each second's messages are plotted at the end of the second. The last second
		// is cut short by the end of the run: it is scaled to a rate when it covers a
		// fair part of a second, and left out otherwise (a nearly empty tail of late
		// responses is not a drop in throughput).
		rate := float64(p.Msgs)
		if covered := secs - float64(p.Second); secs > 0 && covered < 1 {
			if covered < 0.25 {
				continue
			}
			rate /= covered
		}
		pts = append(pts, [2]float64{float64(p.Second + 1), rate})
	}
	return pts
}

func lockChart(runs []*Run) *chart {
	c := newChart("putlock", "Broker put-lock time", "percentile", "time in put lock")
	yr := newYRange()
	yr.add([][2]float64{{0, putLockWarningUs * 2}})
	for i, r := range runs {
		// The histogram gives the percentiles; the gauge the max. A broker may report
		// either alone.
		var pts [][2]float64
		var attrs [][2]string
		if h, ok := r.Broker.PutLock(); ok {
			pts = quantilePoints(h)
			attrs = [][2]string{{"data-p99-us", trimFloat(h.P99 * 1e6)}}
		}
		if m, ok := r.Broker.PutLockMaxSeconds(); ok {
			pts = append(pts, [2]float64{1e4, m * 1e6})
			attrs = append(attrs, [2]string{"data-max-us", trimFloat(m * 1e6)})
		}
		if len(pts) == 0 {
			continue
		}
		yr.add(pts)
		c.lines = append(c.lines, series{name: r.Name, color: colorOf(i), class: "series", markers: true, points: pts, attrs: attrs})
	}
	c.x.log, c.x.min, c.x.max = true, 0, 4
	c.xTicks = []tick{{2, "50%"}, {10, "90%"}, {100, "99%"}, {1000, "99.9%"}, {1e4, "max"}}
	c.logAxisY(yr.orDefault())
	c.hlines = []hline{{y: putLockWarningUs, label: "500 ms: RocketMQ's put-lock warning", class: "warning", color: "#d62728"}}
	return c
}
