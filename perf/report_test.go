package perf

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var fixtureDirs = []string{"testdata/runs/ringmq-async", "testdata/runs/rocketmq", "testdata/runs/ringmq-sync-mixed"}

// Figures of the fixture runs (from their run.json files).
var fixtures = []struct {
	name        string
	msgsPerSec  float64
	p50, p99    float64
	max         float64
	seriesLen   int
	hasPutLat   bool
	hasPutLock  bool
	putLockP99  float64 // µs
	putLockMaxS float64
}{
	{"ringmq-async", 150000, 84.799, 188.927, 2400.255, 10, true, true, 8, 0.00085},
	{"rocketmq-4.9.8", 49999, 1095.679, 8691.711, 115015.679, 10, false, false, 0, 0},
	{"ringmq-sync-mixed", 100000, 240.639, 623.615, 5201.919, 8, false, true, 11, 0.0012},
}

func loadFixtures(t *testing.T) []*Run {
	t.Helper()
	runs, err := LoadAll(fixtureDirs)
	require.NoError(t, err)
	return runs
}

func TestLoadFixtureRuns(t *testing.T) {
	runs := loadFixtures(t)
	for i, f := range fixtures {
		r := runs[i]
		require.Equal(t, f.name, r.Name)
		p := r.Results.Produce
		require.NotNil(t, p)
		require.InDelta(t, f.msgsPerSec, p.MsgsPerSec, 1e-9)
		require.InDelta(t, f.p99, p.Latency.P99Us, 1e-9)
		require.NotEmpty(t, p.Curve)
		last := p.Curve[len(p.Curve)-1]
		require.InDelta(t, 1.0, last.Percentile, 1e-12)
		require.InDelta(t, f.max, last.ValueUs, 1.0, "the .hgrm's last value is the max (ms in the file, µs here)")
		require.EqualValues(t, p.Latency.Count, last.TotalCount)
		require.Len(t, r.Series["produce"], f.seriesLen)
		_, hasLat := r.Broker.PutLatency()
		require.Equal(t, f.hasPutLat, hasLat)
		lock, hasLock := r.Broker.PutLock()
		require.Equal(t, f.hasPutLock, hasLock)
		if hasLock {
			require.InDelta(t, f.putLockP99, lock.P99*1e6, 1e-9)
		}
	}
	mixed := runs[2]
	require.NotNil(t, mixed.Results.Consume)
	require.EqualValues(t, 799000, mixed.Results.Consume.Msgs())
	require.InDelta(t, 2865.151, mixed.Results.Consume.Lat().P99Us, 1e-9, "consume latency is end to end")
	require.Len(t, mixed.Series["consume"], 8)
	require.EqualValues(t, 700, mixed.Series["consume"][7].Lag)
	require.EqualValues(t, -1, mixed.Series["produce"][0].Lag)
}

// element is a parsed XML element with its attributes and children.
type element struct {
	name     string
	attrs    map[string]string
	children []*element
	text     strings.Builder
}

func (e *element) walk(fn func(*element)) {
	fn(e)
	for _, c := range e.children {
		c.walk(fn)
	}
}

func (e *element) find(pred func(*element) bool) []*element {
	var out []*element
	e.walk(func(x *element) {
		if pred(x) {
			out = append(out, x)
		}
	})
	return out
}

// parseXML parses the whole document strictly: the report must be well-formed.
func parseXML(t *testing.T, doc []byte) *element {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	root := &element{name: "#document"}
	stack := []*element{root}
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		switch tk := tok.(type) {
		case xml.StartElement:
			e := &element{name: tk.Name.Local, attrs: map[string]string{}}
			for _, a := range tk.Attr {
				e.attrs[a.Name.Local] = a.Value
			}
			top := stack[len(stack)-1]
			top.children = append(top.children, e)
			stack = append(stack, e)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].text.Write(tk)
		}
	}
	require.Len(t, stack, 1, "every element closed")
	return root
}

func chartByID(t *testing.T, root *element, id string) *element {
	t.Helper()
	found := root.find(func(e *element) bool { return e.name == "svg" && e.attrs["id"] == id })
	require.Len(t, found, 1, "chart %s", id)
	return found[0]
}

func polylines(chart *element, class string) []*element {
	return chart.find(func(e *element) bool { return e.name == "polyline" && e.attrs["class"] == class })
}

func requirePointsInside(t *testing.T, pl *element) {
	t.Helper()
	pts := strings.Fields(pl.attrs["points"])
	n, err := strconv.Atoi(pl.attrs["data-points"])
	require.NoError(t, err)
	require.Len(t, pts, n)
	for _, p := range pts {
		xs, ys, ok := strings.Cut(p, ",")
		require.True(t, ok, p)
		x, err1 := strconv.ParseFloat(xs, 64)
		y, err2 := strconv.ParseFloat(ys, 64)
		require.NoError(t, errors.Join(err1, err2))
		require.True(t, x >= marginLeft-0.1 && x <= chartWidth-marginRight+0.1, "x %v inside the plot", x)
		require.True(t, y >= marginTop-0.1 && y <= chartHeight-marginBottom+0.1, "y %v inside the plot", y)
	}
}

func TestWriteHTMLFromFixtureRuns(t *testing.T) {
	runs := loadFixtures(t)
	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, runs, HTMLOptions{Title: "ringmq vs RocketMQ", Notes: []string{"a <note> & more"}}))
	doc := buf.Bytes()
	root := parseXML(t, doc)

	// Self-contained: no script, no external reference of any kind.
	lower := strings.ToLower(string(doc))
	for _, banned := range []string{"<script", "src=", "href=", "@import", "url("} {
		require.NotContains(t, lower, banned)
	}
	withoutNS := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns="http://www.w3.org/1999/xhtml"`, "").Replace(string(doc))
	require.NotContains(t, withoutNS, "http://")
	require.NotContains(t, withoutNS, "https://")
	require.Contains(t, string(doc), "a &lt;note&gt; &amp; more")

	// Latency: one solid line per run, in order, with the run's points and p99; the
	// broker's put latency dashed for the run that has it.
	lat := chartByID(t, root, "latency")
	lines := polylines(lat, "series")
	require.Len(t, lines, len(runs))
	for i, pl := range lines {
		require.Equal(t, fixtures[i].name, pl.attrs["data-run"])
		want := 0
		for _, p := range runs[i].Results.Produce.Curve {
			if p.Percentile < 1 {
				want++
			}
		}
		require.Equal(t, strconv.Itoa(want), pl.attrs["data-points"])
		p99, err := strconv.ParseFloat(pl.attrs["data-p99-us"], 64)
		require.NoError(t, err)
		require.InDelta(t, fixtures[i].p99, p99, 1e-9)
		requirePointsInside(t, pl)
	}
	broker := polylines(lat, "broker")
	require.Len(t, broker, 1)
	require.Equal(t, "ringmq-async (broker put)", broker[0].attrs["data-run"])
	require.Contains(t, broker[0].attrs["stroke-dasharray"], "6")
	legend := lat.find(func(e *element) bool { return e.name == "g" && e.attrs["class"] == "legend" })
	require.Len(t, legend, 1)
	var names []string
	for _, txt := range legend[0].find(func(e *element) bool { return e.name == "text" }) {
		names = append(names, txt.text.String())
	}
	require.Equal(t, []string{"ringmq-async — client send latency", "rocketmq-4.9.8 — client send latency",
		"ringmq-sync-mixed — client send latency", "ringmq-async — broker put latency (dashed)"}, names, "the legend says which line is which")
	var ticks []string
	for _, txt := range lat.find(func(e *element) bool { return e.name == "text" && e.attrs["class"] == "xtick" }) {
		ticks = append(ticks, txt.text.String())
	}
	require.Equal(t, []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"}, ticks, "log percentile axis (20,480 = 1/(1-p) needs 5 decades)")

	// End to end: only the run that consumed.
	e2e := polylines(chartByID(t, root, "e2e"), "series")
	require.Len(t, e2e, 1)
	require.Equal(t, "ringmq-sync-mixed", e2e[0].attrs["data-run"])

	// Throughput: one line per run with a point per second.
	tp := polylines(chartByID(t, root, "throughput"), "series")
	require.Len(t, tp, len(runs))
	for i, pl := range tp {
		require.Equal(t, fixtures[i].name, pl.attrs["data-run"])
		require.Equal(t, strconv.Itoa(fixtures[i].seriesLen), pl.attrs["data-points"])
		requirePointsInside(t, pl)
	}

	// Put lock: the runs with broker put-lock metrics, and the 500 ms warning line.
	lockChart := chartByID(t, root, "putlock")
	lock := polylines(lockChart, "series")
	require.Len(t, lock, 2)
	require.Equal(t, "ringmq-async", lock[0].attrs["data-run"])
	require.Equal(t, "5", lock[0].attrs["data-points"], "p50, p90, p99, p99.9 and max")
	require.Equal(t, "850", lock[0].attrs["data-max-us"], "the broker's put-lock max gauge")
	require.Equal(t, "ringmq-sync-mixed", lock[1].attrs["data-run"])
	p99, err := strconv.ParseFloat(lock[1].attrs["data-p99-us"], 64)
	require.NoError(t, err)
	require.InDelta(t, 11, p99, 1e-9)
	warn := lockChart.find(func(e *element) bool { return e.name == "line" && e.attrs["class"] == "warning" })
	require.Len(t, warn, 1)
	label := lockChart.find(func(e *element) bool { return e.name == "text" && e.attrs["class"] == "warning-label" })
	require.Len(t, label, 1)
	require.Contains(t, label[0].text.String(), "500 ms")

	// Summary table: the fixture numbers, ratios against the first run.
	rows := root.find(func(e *element) bool {
		return e.name == "tr" && e.attrs["data-run"] != "" && hasAncestorTable(root, e, "summary")
	})
	require.Len(t, rows, len(runs))
	for i, tr := range rows {
		require.Equal(t, fixtures[i].name, tr.attrs["data-run"])
		cells := map[string]float64{}
		for _, td := range tr.find(func(e *element) bool { return e.name == "td" && e.attrs["data-value"] != "" }) {
			v, err := strconv.ParseFloat(td.attrs["data-value"], 64)
			require.NoError(t, err)
			cells[td.attrs["data-key"]] = v
		}
		require.InDelta(t, fixtures[i].msgsPerSec, cells["msgs_per_sec"], 1e-9)
		require.InDelta(t, fixtures[i].p50, cells["p50_us"], 1e-9)
		require.InDelta(t, fixtures[i].p99, cells["p99_us"], 1e-9)
		require.InDelta(t, fixtures[i].max, cells["max_us"], 1e-9)
		require.InDelta(t, fixtures[i].msgsPerSec/fixtures[0].msgsPerSec, cells["msgs_ratio"], 1e-9)
		require.InDelta(t, fixtures[i].p99/fixtures[0].p99, cells["p99_ratio"], 1e-9)
		require.InDelta(t, fixtures[i].putLockMaxS*1e6, cells["put_lock_max_us"], 1e-6)
	}
}

// hasAncestorTable reports whether e lies inside the table with the given id.
func hasAncestorTable(root, e *element, id string) bool {
	for _, tbl := range root.find(func(x *element) bool { return x.name == "table" && x.attrs["id"] == id }) {
		if len(tbl.find(func(x *element) bool { return x == e })) > 0 {
			return true
		}
	}
	return false
}

func TestWriteMarkdownFromFixtureRuns(t *testing.T) {
	runs := loadFixtures(t)
	var buf bytes.Buffer
	require.NoError(t, WriteMarkdown(&buf, Summaries(runs)))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 2+len(runs), buf.String())
	header := splitRow(lines[0])
	require.Equal(t, []string{"run", "msgs/s", "msgs/s vs first", "MB/s", "p50 µs", "p99 µs", "p99.9 µs", "max µs",
		"p99 vs first", "errors", "broker put p99 µs", "put-lock p99 µs", "put-lock max µs", "pull msgs/s", "e2e p99 µs"}, header)
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for i, f := range fixtures {
		cells := splitRow(lines[2+i])
		require.Equal(t, f.name, cells[col["run"]])
		require.Equal(t, fmt.Sprintf("%.0f", f.msgsPerSec), cells[col["msgs/s"]])
		require.Equal(t, fmt.Sprintf("%.2f×", f.msgsPerSec/fixtures[0].msgsPerSec), cells[col["msgs/s vs first"]])
		require.Equal(t, fmt.Sprintf("%.1f", f.p50), cells[col["p50 µs"]])
		require.Equal(t, fmt.Sprintf("%.1f", f.p99), cells[col["p99 µs"]])
		require.Equal(t, fmt.Sprintf("%.1f", f.max), cells[col["max µs"]])
		require.Equal(t, fmt.Sprintf("%.2f×", f.p99/fixtures[0].p99), cells[col["p99 vs first"]])
		if f.hasPutLock {
			require.Equal(t, fmt.Sprintf("%.1f", f.putLockP99), cells[col["put-lock p99 µs"]])
			require.Equal(t, fmt.Sprintf("%.1f", f.putLockMaxS*1e6), cells[col["put-lock max µs"]])
		} else {
			require.Equal(t, "–", cells[col["put-lock p99 µs"]])
		}
	}
	require.Equal(t, "10", splitRow(lines[3])[col["errors"]])
	require.Equal(t, "99875", splitRow(lines[4])[col["pull msgs/s"]])
}

func splitRow(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

func TestMedianAndGroups(t *testing.T) {
	require.InDelta(t, 2, Median([]float64{3, 1, 2}), 0)
	require.InDelta(t, 2.5, Median([]float64{4, 1, 3, 2}), 0)
	require.InDelta(t, 0, Median(nil), 0)
	vs := []float64{3, 1, 2}
	Median(vs)
	require.Equal(t, []float64{3, 1, 2}, vs, "not modified")

	mk := func(name string, msgs, p99 float64, errs int64) *Run {
		r := &Run{Name: name}
		r.Results.Produce = &Role{MsgsPerSec: msgs, Errors: errs, Latency: Latency{P99Us: p99}}
		return r
	}
	runs := []*Run{
		mk("a", 100, 10, 0), mk("b", 50, 40, 1), mk("a", 300, 30, 2),
		mk("b", 70, 20, 0), mk("a", 200, 20, 0), mk("b", 60, 30, 0),
	}
	groups := GroupByName(runs)
	require.Len(t, groups, 2)
	require.Equal(t, "a", groups[0].Name)
	a := groups[0].Median()
	require.Equal(t, 3, a.Runs)
	require.InDelta(t, 200, a.MsgsPerSec, 0)
	require.InDelta(t, 20, a.P99Us, 0)
	require.EqualValues(t, 2, a.Errors, "errors add up")
	require.InDelta(t, 100, a.MinMsgsPerSec, 0)
	require.InDelta(t, 300, a.MaxMsgsPerSec, 0)
	require.Same(t, runs[4], groups[0].Representative(), "the median-throughput run")
	require.Same(t, runs[5], groups[1].Representative())

	var buf bytes.Buffer
	require.NoError(t, WriteMarkdown(&buf, Medians(groups)))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Equal(t, []string{"run", "runs", "msgs/s", "msgs/s vs first", "MB/s", "p50 µs", "p99 µs", "p99.9 µs", "max µs",
		"p99 vs first", "errors", "msgs/s min–max"}, splitRow(lines[0]))
	// No p50, p99.9 or max measured: "–", not 0.
	require.Equal(t, []string{"b", "3", "60", "0.30×", "0.0", "–", "30.0", "–", "–", "1.50×", "1", "50–70"}, splitRow(lines[3]))
}

func TestReadHgrmRejectsGarbage(t *testing.T) {
	_, err := ReadHgrm(strings.NewReader("no numbers here\n"))
	require.ErrorIs(t, err, ErrHgrm)
	_, err = ReadHgrm(strings.NewReader("1.0 1.5 10 2.0\n"))
	require.ErrorIs(t, err, ErrHgrm, "percentile above 1")
	_, err = ReadHgrm(strings.NewReader("NaN 0.5 10 2.0\n"))
	require.ErrorIs(t, err, ErrHgrm, "NaN value")
	ps, err := ReadHgrm(strings.NewReader(" Value\tPercentile\tTotalCount\t1/(1-Percentile)\n\n 0.250 0.500000 5 2.00\n#[Mean = 1]\n"))
	require.NoError(t, err)
	require.Equal(t, []Percentile{{ValueUs: 250, Percentile: 0.5, TotalCount: 5}}, ps)
}

func TestLoadErrors(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, ErrRunRecord)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"schema":2,"name":"x"}`), 0o644))
	_, err = Load(dir)
	require.ErrorIs(t, err, ErrRunRecord)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"schema":1,"name":"x","results":{"produce":{"hgrm_file":"gone.hgrm"}}}`), 0o644))
	_, err = Load(filepath.Join(dir, "run.json"))
	require.ErrorIs(t, err, ErrHgrm)
	require.ErrorIs(t, WriteHTML(io.Discard, nil, HTMLOptions{}), ErrNoRuns)
	require.ErrorIs(t, WriteMarkdown(io.Discard, nil), ErrNoRuns)
}

// After a produce run the suite reads the backlog back; born-to-receipt time is then the
// backlog's age, and the summary must not present it as end-to-end latency.
func TestSummaryEndToEndOnlyForMixedRuns(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		wantE2E bool
	}{{"produce", false}, {"mixed", true}} {
		var r Run
		r.Name, r.Mode = tc.mode, tc.mode
		r.Results.Produce = &Role{MsgsPerSec: 1000}
		r.Results.Consume = &Role{MsgsPerSec: 900, Latency: Latency{P99Us: 14e6}, E2ELatency: Latency{P99Us: 14e6}}
		s := r.Summarize()
		require.Equal(t, 900.0, s.ConsumeMsgsPerSec, tc.mode)
		if tc.wantE2E {
			require.Equal(t, 14e6, s.ConsumeP99Us, tc.mode)
		} else {
			require.Zero(t, s.ConsumeP99Us, tc.mode)
		}
	}
}

// A run with a throughput file (250 ms intervals) is drawn from it, one point per
// interval; a run without per-message latency (a peer's async publish) gets no latency
// line and "–" in the latency columns; the client's CPU gets its columns; extra tables
// are rendered.
func TestThroughputFileAndPeerWithoutLatency(t *testing.T) {
	dir := t.TempDir()
	runJSON := `{"schema":1,"name":"nats-js-async","mode":"produce","config":{},"machine":{},
"results":{"produce":{"sent":3000,"acked":3000,"secs":1.0,"msgs_per_sec":3000,"latency":{},"client_cpu":{"cpu_share":0.05,"cpu_us_per_msg":3.5}}},
"throughput_file":"throughput.csv"}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.json"), []byte(runJSON), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "throughput.csv"),
		[]byte("t_ms,interval_ms,msgs\n250,250,500\n500,250,1000\n750,250,750\n1000,250,750\n1010,10,3\n"), 0o644))
	r, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []ThroughputPoint{{250, 250, 500}, {500, 250, 1000}, {750, 250, 750}, {1000, 250, 750}, {1010, 10, 3}}, r.Throughput)

	var buf bytes.Buffer
	require.NoError(t, WriteHTML(&buf, []*Run{r}, HTMLOptions{Tables: []Table{{ID: "ratios", Caption: "ringmq / NATS",
		Header: []string{"point", "ratio"}, Rows: [][]string{{"4x16", "1.20×"}}}}}))
	root := parseXML(t, buf.Bytes())
	tp := polylines(chartByID(t, root, "throughput"), "series")
	require.Len(t, tp, 1)
	require.Equal(t, "4", tp[0].attrs["data-points"], "one point per 250 ms interval; the 10 ms sliver left out")
	require.Empty(t, polylines(chartByID(t, root, "latency"), "series"), "no latency measured, no line")
	require.Contains(t, buf.String(), `<table id="ratios">`)
	require.Contains(t, buf.String(), "<td>1.20×</td>")

	var md bytes.Buffer
	require.NoError(t, WriteMarkdown(&md, Summaries([]*Run{r})))
	lines := strings.Split(strings.TrimSpace(md.String()), "\n")
	require.Equal(t, []string{"run", "msgs/s", "msgs/s vs first", "MB/s", "p50 µs", "p99 µs", "p99.9 µs", "max µs", "p99 vs first", "errors",
		"client CPU %", "client µs/msg"}, splitRow(lines[0]))
	require.Equal(t, []string{"nats-js-async", "3000", "1.00×", "0.0", "–", "–", "–", "–", "–", "0", "5.0", "3.50"}, splitRow(lines[2]))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "throughput.csv"), []byte("t,msgs\n1,2\n"), 0o644))
	_, err = Load(dir)
	require.ErrorIs(t, err, ErrRunRecord)
}
