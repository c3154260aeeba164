package perf

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// A small SVG line-chart writer. It is written here because the report must be one
// self-contained file with no network assets and no JavaScript, and the charts need
// exactly one thing no Go plotting library gives without a dependency tree: HdrHistogram's
// percentile axis (x = 1/(1-p) on a log scale) next to a log latency axis.

// palette: Tableau 10, distinguishable and print-safe.
var palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

func colorOf(i int) string { return palette[i%len(palette)] }

// scale maps data values to pixels along one axis.
type scale struct {
	log      bool
	min, max float64 // domain, in log10 units when log
	from, to float64 // pixel range
}

func (s scale) pos(v float64) float64 {
	if s.log {
		v = math.Log10(max(v, math.Pow(10, s.min)))
	}
	if s.max == s.min {
		return s.from
	}
	return s.from + (v-s.min)/(s.max-s.min)*(s.to-s.from)
}

type tick struct {
	v     float64 // data value
	label string
}

// series is one polyline: data points (x, y) in data units.
type series struct {
	name    string // the run (data-run)
	label   string // legend text, when it says more than the name
	color   string
	dashed  bool
	class   string // "series" for runs, "broker" for broker-side lines
	markers bool   // a dot on every point (sparse series)
	points  [][2]float64
	attrs   [][2]string // extra data-* attributes
}

// hline is a horizontal reference line (the 500 ms put-lock warning).
type hline struct {
	y     float64
	label string
	class string
	color string
}

// chart is one SVG line chart.
type chart struct {
	id, title, xLabel, yLabel string
	x, y                      scale
	xTicks, yTicks            []tick
	lines                     []series
	hlines                    []hline
}

const (
	chartWidth   = 1060
	chartHeight  = 420
	marginLeft   = 80
	marginRight  = 380 // legend: "sync-fdatasync-gnet@16x32 — broker put latency (dashed)"
	marginTop    = 20
	marginBottom = 50
)

func newChart(id, title, xLabel, yLabel string) *chart {
	return &chart{
		id: id, title: title, xLabel: xLabel, yLabel: yLabel,
		x: scale{from: marginLeft, to: chartWidth - marginRight},
		y: scale{from: chartHeight - marginBottom, to: marginTop},
	}
}

func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func esc(s string) string { return html.EscapeString(s) }

// render writes the chart as an <svg> element (well-formed XML, so the page parses as
// XHTML too).
func (c *chart) render(b *strings.Builder) {
	// Presentation attributes rather than the page's CSS, so a chart copied out of the
	// page renders the same.
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="%s" width="%d" height="%d" viewBox="0 0 %d %d" role="img" font-family="sans-serif" font-size="12">`,
		esc(c.id), chartWidth, chartHeight, chartWidth, chartHeight)
	fmt.Fprintf(b, `<title>%s</title><rect x="0" y="0" width="%d" height="%d" fill="white"/>`, esc(c.title), chartWidth, chartHeight)
	left, right := float64(marginLeft), float64(chartWidth-marginRight)
	top, bottom := float64(marginTop), float64(chartHeight-marginBottom)
	b.WriteString(`<g class="grid" stroke="#e4e4e4">`)
	for _, t := range c.xTicks {
		x := c.x.pos(t.v)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(x), num(top), num(x), num(bottom))
		fmt.Fprintf(b, `<text class="xtick" x="%s" y="%s" text-anchor="middle" stroke="none" fill="#333">%s</text>`, num(x), num(bottom+16), esc(t.label))
	}
	for _, t := range c.yTicks {
		y := c.y.pos(t.v)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s"/>`, num(left), num(y), num(right), num(y))
		fmt.Fprintf(b, `<text class="ytick" x="%s" y="%s" text-anchor="end" stroke="none" fill="#333">%s</text>`, num(left-6), num(y+4), esc(t.label))
	}
	b.WriteString(`</g>`)
	fmt.Fprintf(b, `<rect class="frame" x="%s" y="%s" width="%s" height="%s" fill="none" stroke="#888"/>`, num(left), num(top), num(right-left), num(bottom-top))
	fmt.Fprintf(b, `<text class="axis" x="%s" y="%d" text-anchor="middle">%s</text>`, num((left+right)/2), chartHeight-8, esc(c.xLabel))
	fmt.Fprintf(b, `<text class="axis" transform="translate(16 %s) rotate(-90)" text-anchor="middle">%s</text>`, num((top+bottom)/2), esc(c.yLabel))
	for _, h := range c.hlines {
		y := c.y.pos(h.y)
		fmt.Fprintf(b, `<line class="%s" x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2" stroke-dasharray="8 4"/>`,
			esc(h.class), num(left), num(y), num(right), num(y), h.color)
		fmt.Fprintf(b, `<text class="%s-label" x="%s" y="%s" text-anchor="end" fill="%s">%s</text>`, esc(h.class), num(right-4), num(y-4), h.color, esc(h.label))
	}
	for _, l := range c.lines {
		var pts strings.Builder
		for i, p := range l.points {
			if i > 0 {
				pts.WriteByte(' ')
			}
			pts.WriteString(num(c.x.pos(p[0])))
			pts.WriteByte(',')
			pts.WriteString(num(c.y.pos(p[1])))
		}
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		var attrs strings.Builder
		for _, a := range l.attrs {
			fmt.Fprintf(&attrs, ` %s="%s"`, a[0], esc(a[1]))
		}
		fmt.Fprintf(b, `<polyline class="%s" data-run="%s" data-points="%d"%s stroke="%s" stroke-width="2"%s fill="none" points="%s"><title>%s</title></polyline>`,
			esc(l.class), esc(l.name), len(l.points), attrs.String(), l.color, dash, pts.String(), esc(l.name))
		if l.markers {
			for _, p := range l.points {
				fmt.Fprintf(b, `<circle class="marker" cx="%s" cy="%s" r="3" fill="%s"/>`, num(c.x.pos(p[0])), num(c.y.pos(p[1])), l.color)
			}
		}
	}
	// Legend, right of the plot.
	b.WriteString(`<g class="legend">`)
	for i, l := range c.lines {
		y := top + 14 + float64(i)*18
		dash := ""
		if l.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, num(right+10), num(y), num(right+34), num(y), l.color, dash)
		label := l.label
		if label == "" {
			label = l.name
		}
		fmt.Fprintf(b, `<text x="%s" y="%s">%s</text>`, num(right+40), num(y+4), esc(label))
	}
	b.WriteString(`</g></svg>`)
}

// percentileAxis sets HdrHistogram's percentile axis: x = 1/(1-p) on a log scale, ticks at
// 0 %, 90 %, 99 %, 99.9 % ... up to maxInverse (at least 99.99 %).
func (c *chart) percentileAxis(maxInverse float64) {
	decades := math.Max(4, math.Ceil(math.Log10(math.Max(maxInverse, 1))))
	decades = math.Min(decades, 7)
	c.x.log, c.x.min, c.x.max = true, 0, decades
	c.xTicks = nil
	for d := 0; d <= int(decades); d++ {
		label := "0%"
		if d > 0 {
			label = strconv.FormatFloat(100-100/math.Pow(10, float64(d)), 'f', -1, 64) + "%"
		}
		c.xTicks = append(c.xTicks, tick{v: math.Pow(10, float64(d)), label: label})
	}
}

// logAxisY sets a log y axis over [lo, hi] (data units, µs) widened to whole decades, with
// a tick per decade labelled as a duration.
func (c *chart) logAxisY(lo, hi float64) {
	lo = math.Max(lo, 0.1)
	hi = math.Max(hi, lo*10)
	c.y.log = true
	c.y.min = math.Floor(math.Log10(lo))
	c.y.max = math.Ceil(math.Log10(hi))
	if c.y.max == c.y.min {
		c.y.max++
	}
	c.yTicks = nil
	for d := c.y.min; d <= c.y.max; d++ {
		v := math.Pow(10, d)
		c.yTicks = append(c.yTicks, tick{v: v, label: formatDurationUs(v)})
	}
}

// linearAxis returns a linear scale over [0, hi] with about five "nice" ticks.
func linearAxis(s *scale, hi float64, format func(float64) string) []tick {
	if hi <= 0 {
		hi = 1
	}
	step := niceStep(hi / 5)
	top := math.Ceil(hi/step) * step
	s.log, s.min, s.max = false, 0, top
	var ticks []tick
	for v := 0.0; v <= top+step/2; v += step {
		ticks = append(ticks, tick{v: v, label: format(v)})
	}
	return ticks
}

// niceStep rounds raw up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// formatDurationUs formats a duration given in microseconds: "250 µs", "1.5 ms", "2 s".
func formatDurationUs(us float64) string {
	switch {
	case us >= 1e6:
		return trimFloat(us/1e6) + " s"
	case us >= 1e3:
		return trimFloat(us/1e3) + " ms"
	case us >= 1:
		return trimFloat(us) + " µs"
	}
	return trimFloat(us*1e3) + " ns"
}

func trimFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// formatCount formats a count with a k/M suffix: 1500 → "1.5k".
func formatCount(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(math.Round(v/1e4)/100) + "M"
	case v >= 1e3:
		return trimFloat(math.Round(v/10)/100) + "k"
	}
	return trimFloat(math.Round(v*100) / 100)
}
