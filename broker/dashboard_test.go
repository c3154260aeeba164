package broker

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/hiccup"
	"github.com/ringmq/ringmq/internal/opsserver"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// The operators' files in deploy/: a Grafana dashboard and Prometheus alert rules, both built on
// the series mqbroker exports. These tests read them as Grafana and Prometheus would and check
// every PromQL expression against the families a broker registers.

const (
	dashboardFile  = "../deploy/grafana-dashboard.json"
	alertRulesFile = "../deploy/prometheus-alerts.yml"
)

// promSelector is one vector selector of a PromQL expression: the metric name and its label
// matchers (label name to the matched text, the operator dropped).
type promSelector struct {
	name     string
	matchers map[string]string
}

// promAggregations are PromQL's aggregation operators: a name that may be followed by a by or
// without clause rather than by its parenthesis.
var promAggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "group": true,
	"stddev": true, "stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true,
	"quantile": true, "limitk": true, "limit_ratio": true}

// promKeywords are the words of PromQL that are neither metric nor function names (those
// isLabelListKeyword names take a parenthesised label list).
var promKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true,
	"group_left": true, "group_right": true, "bool": true, "offset": true, "and": true, "or": true,
	"unless": true, "atan2": true, "inf": true, "nan": true, "start": true, "end": true}

func isLabelListKeyword(w string) bool {
	switch w {
	case "by", "without", "on", "ignoring", "group_left", "group_right":
		return true
	}
	return false
}

// promSelectors lists the vector selectors of a PromQL expression (Grafana's $variables allowed
// where a number, a duration or a string goes).
//
// Hand-written, and only this much of PromQL: its parser lives in github.com/prometheus/prometheus,
// whose module raises go.mod's go directive and upgrades dependencies of the pinned
// rocketmq-client-go (zap, atomic, x/crypto) for every package of the repo; a test that needs the
// metric names and matchers of a few dozen expressions does not justify that.
// TestPromSelectors pins the forms the deploy files use; promtool (TestAlertRulesUnitTests, where
// installed) parses the alert rules with the real parser.
func promSelectors(expr string) ([]promSelector, error) {
	var out []promSelector
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || c|0x20 >= 'a' && c|0x20 <= 'z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || c >= '0' && c <= '9' }
	skipSpace := func(i int) int {
		for i < len(expr) && strings.IndexByte(" \t\r\n", expr[i]) >= 0 {
			i++
		}
		return i
	}
	// closing finds the index past the bracket that closes the one at i, strings skipped.
	closing := func(i int) (int, error) {
		open, want := expr[i], map[byte]byte{'(': ')', '[': ']', '{': '}'}[expr[i]]
		depth := 0
		for j := i; j < len(expr); j++ {
			switch c := expr[j]; {
			case c == '"' || c == '\'' || c == '`':
				end, err := stringEnd(expr, j)
				if err != nil {
					return 0, err
				}
				j = end - 1
			case c == open:
				depth++
			case c == want:
				if depth--; depth == 0 {
					return j + 1, nil
				}
			}
		}
		return 0, fmt.Errorf("%q at byte %d is never closed", open, i)
	}
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '#': // a comment, to the end of the line
			for i < len(expr) && expr[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			end, err := stringEnd(expr, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '[': // a range or subquery: durations and variables only
			end, err := closing(i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{':
			return nil, fmt.Errorf("a selector without a metric name at byte %d", i)
		case c == '$': // a Grafana variable standing for a number
			i++
			if i < len(expr) && expr[i] == '{' {
				end, err := closing(i)
				if err != nil {
					return nil, err
				}
				i = end
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case c >= '0' && c <= '9' || c == '.': // a number or a duration
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			start := i
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
			word := expr[start:i]
			next := skipSpace(i)
			switch {
			case isLabelListKeyword(word) && next < len(expr) && expr[next] == '(':
				end, err := closing(next)
				if err != nil {
					return nil, err
				}
				i = end
			case promKeywords[word], promAggregations[word]:
			case next < len(expr) && expr[next] == '(': // a function
			default:
				sel := promSelector{name: word, matchers: map[string]string{}}
				if next < len(expr) && expr[next] == '{' {
					end, err := closing(next)
					if err != nil {
						return nil, err
					}
					if sel.matchers, err = promMatchers(expr[next+1 : end-1]); err != nil {
						return nil, fmt.Errorf("selector %s: %w", word, err)
					}
					i = end
				}
				out = append(out, sel)
			}
		default:
			i++
		}
	}
	return out, nil
}

// stringEnd is the index past the PromQL string literal starting at i.
func stringEnd(s string, i int) (int, error) {
	quote := s[i]
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == '\\' && quote != '`':
			j++
		case s[j] == quote:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("string at byte %d is never closed", i)
}

// promMatchers reads the inside of a selector's braces: label, operator, quoted value, by commas.
func promMatchers(s string) (map[string]string, error) {
	m := map[string]string{}
	for s = strings.TrimSpace(s); s != ""; {
		op := strings.IndexAny(s, "=!")
		if op <= 0 {
			return nil, fmt.Errorf("matcher %q: want label, operator, quoted value", s)
		}
		label := strings.TrimSpace(s[:op])
		rest := strings.TrimLeft(s[op:], "=!~")
		rest = strings.TrimSpace(rest)
		if rest == "" || strings.IndexByte("\"'`", rest[0]) < 0 {
			return nil, fmt.Errorf("matcher %q: the value is not a quoted string", s)
		}
		end, err := stringEnd(rest, 0)
		if err != nil {
			return nil, err
		}
		m[label] = rest[1 : end-1]
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest[end:]), ","))
	}
	return m, nil
}

func TestPromSelectors(t *testing.T) {
	type sel = map[string]map[string]string // metric name → its matchers
	for expr, want := range map[string]sel{
		`histogram_quantile(0.99, sum by (cluster, instance, le) (rate(ringmq_broker_request_duration_seconds_bucket{code=~"SEND_MESSAGE|SEND_MESSAGE_V2", instance=~"$instance"}[$__rate_interval])))`: {
			"ringmq_broker_request_duration_seconds_bucket": {"code": "SEND_MESSAGE|SEND_MESSAGE_V2", "instance": "$instance"}},
		`sum without(topic) (rate(a_total[5m])) / ignoring(x) group_left(y) b > bool 1e-3 # comment names_nothing`: {
			"a_total": {}, "b": {}},
		`up{job="a,b}"} == 0 and on(instance, job) max_over_time(c{x!="1",y!~'z'}[1h] offset 5m) unless topk(3, d)`: {
			"up": {"job": "a,b}"}, "c": {"x": "1", "y": "z"}, "d": {}},
		`deriv(lag[10m:1m]) > ${threshold} and lag > $min`:     {"lag": {}},
		`label_replace(vector(1), "dst", "$1", "src", "(.*)")`: {},
	} {
		got, err := promSelectors(expr)
		require.NoError(t, err, expr)
		gotSel := sel{}
		for _, s := range got {
			gotSel[s.name] = s.matchers
		}
		require.Equal(t, want, gotSel, expr)
	}
	for _, bad := range []string{`rate(x[5m)`, `{__name__="x"}`, `x{a="b}`, `x{a=b}`} {
		_, err := promSelectors(bad)
		require.Error(t, err, bad)
	}
}

// exportedFamily is one metric family mqbroker exports: its type (nil while no series of it was
// gathered) and its label names.
type exportedFamily struct {
	typ    *dto.MetricType
	labels []string
}

// scrapeLabels are the labels Prometheus adds to every series it scrapes (job, instance) and the
// one the deploy files expect a scrape config to add when it watches more than one cluster.
var scrapeLabels = []string{"cluster", "instance", "job"}

// checkSelector says what is wrong with one selector of a query ("" when nothing): a name no
// family exports (a histogram's and a summary's _sum and _count, a histogram's _bucket, and
// Prometheus's own up count as exported), or a matcher on a label the family does not have.
func checkSelector(families map[string]exportedFamily, s promSelector) string {
	labels := slices.Clone(scrapeLabels)
	f, ok := families[s.name]
	switch {
	case s.name == "up":
	case ok && f.typ != nil && *f.typ == dto.MetricType_HISTOGRAM:
		return fmt.Sprintf("%s is a %s: its series are %[1]s_bucket, _sum and _count", s.name, f.typ)
	case ok:
		labels = append(labels, f.labels...)
		if f.typ != nil && *f.typ == dto.MetricType_SUMMARY {
			labels = append(labels, "quantile")
		}
	default:
		base, suffix := "", ""
		for _, sfx := range []string{"_bucket", "_sum", "_count"} {
			if b, cut := strings.CutSuffix(s.name, sfx); cut {
				base, suffix = b, sfx
			}
		}
		f, ok = families[base]
		switch {
		case base == "" || !ok:
			return fmt.Sprintf("%s: no such series is exported", s.name)
		case f.typ == nil:
			return fmt.Sprintf("%s: %s has no series gathered, so its type is unknown", s.name, base)
		case *f.typ == dto.MetricType_HISTOGRAM, *f.typ == dto.MetricType_SUMMARY && suffix != "_bucket":
		default:
			return fmt.Sprintf("%s: %s is a %s, it has no %s series", s.name, base, f.typ, suffix)
		}
		labels = append(labels, f.labels...)
		if suffix == "_bucket" {
			labels = append(labels, "le")
		}
	}
	for l := range s.matchers {
		if l != "__name__" && !slices.Contains(labels, l) {
			return fmt.Sprintf("%s has no label %q (it has %s)", s.name, l, strings.Join(labels, ", "))
		}
	}
	return ""
}

// checkQuery lists what is wrong with every selector of a query.
func checkQuery(families map[string]exportedFamily, expr string) []string {
	sels, err := promSelectors(expr)
	if err != nil {
		return []string{err.Error()}
	}
	if len(sels) == 0 {
		return []string{"selects no series"}
	}
	var problems []string
	for _, s := range sels {
		if p := checkSelector(families, s); p != "" {
			problems = append(problems, p)
		}
	}
	return problems
}

// exportedFamilies are the families mqbroker exports, from a broker of every kind (see
// startEverySeriesBrokers) plus the collectors mqbroker registers beside it: the runtime's and the
// process's, and the hiccup meter's. Families a broker registers but has no series of yet (label
// vectors) get their type once they have one: a request to the master gives the request
// histogram its first series.
func exportedFamilies(t *testing.T) map[string]exportedFamily {
	described, gatherers, master := startEverySeriesBrokers(t)
	reg := prometheus.NewRegistry()
	meter, err := hiccup.New(hiccup.Config{Interval: time.Millisecond}) // not started: its histogram is there
	require.NoError(t, err)
	describingRegisterer{Registerer: reg, families: described}.MustRegister(
		append(opsserver.RuntimeCollectors(), meter.Collector())...)
	gatherers = append(gatherers, reg)

	c := remotingtest.Dial(t, master.BrokerAddr())
	c.Call(codec.NewRequest(codec.RequestGetBrokerRuntimeInfo, nil, nil)) // any answer will do
	families := map[string]exportedFamily{}
	testutil.Eventually(t, "the request histogram has a series", func() bool {
		for name, labels := range described {
			families[name] = exportedFamily{labels: labels}
		}
		for _, g := range gatherers { // one at a time: the master's and the slave's series are alike
			got, err := g.Gather()
			require.NoError(t, err)
			for _, mf := range got {
				f := families[mf.GetName()]
				f.typ = mf.Type
				families[mf.GetName()] = f
			}
		}
		return families["ringmq_broker_request_duration_seconds"].typ != nil
	})
	return families
}

// grafanaDashboard is what this test reads of deploy/grafana-dashboard.json.
type grafanaDashboard struct {
	Inputs []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		PluginID string `json:"pluginId"`
	} `json:"__inputs"`
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource json.RawMessage `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource json.RawMessage `json:"datasource"`
	Targets    []struct {
		Expr       string          `json:"expr"`
		RefID      string          `json:"refId"`
		Datasource json.RawMessage `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

// alertRules is what this test reads of deploy/prometheus-alerts.yml (Prometheus's rule file).
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestDeployFilesQueryExportedSeries: every PromQL expression of the Grafana dashboard (panel
// targets and template variable queries) and of the alert rules names only series mqbroker
// exports, with labels they have; every dashboard selector is narrowed by the $cluster and
// $instance variables; the dashboard takes its data source as an import input; every alert has
// a severity, a summary, a description and a valid for (when it has one).
func TestDeployFilesQueryExportedSeries(t *testing.T) {
	raw, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var dash grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	require.NoError(t, dec.Decode(&dash))
	rulesRaw, err := os.ReadFile(alertRulesFile)
	require.NoError(t, err)
	var rules alertRules
	ydec := yaml.NewDecoder(strings.NewReader(string(rulesRaw)))
	ydec.KnownFields(true) // a misspelt key is an error, as Prometheus's own loader makes it
	require.NoError(t, ydec.Decode(&rules))

	families := exportedFamilies(t)
	var problems []string
	report := func(where string, ps ...string) {
		for _, p := range ps {
			problems = append(problems, where+": "+p)
		}
	}

	// The dashboard: an import input for the data source, every panel and variable using it.
	require.Equal(t, "DS_PROMETHEUS", dash.Inputs[0].Name)
	require.Equal(t, "prometheus", dash.Inputs[0].PluginID)
	require.NotEmpty(t, dash.UID)
	const datasource = `{"type":"prometheus","uid":"${DS_PROMETHEUS}"}`
	vars := map[string]bool{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = true
		if v.Type != "query" {
			continue
		}
		require.JSONEq(t, datasource, string(v.Datasource), "variable %s", v.Name)
		var q struct {
			Query string `json:"query"`
		}
		require.NoError(t, json.Unmarshal(v.Query, &q), "variable %s", v.Name)
		// Grafana's label_values(selector, label): the selector is PromQL.
		inner, ok := strings.CutPrefix(q.Query, "label_values(")
		require.True(t, ok, "variable %s: %s", v.Name, q.Query)
		comma := strings.LastIndexByte(inner, ',')
		require.Positive(t, comma, "variable %s: %s", v.Name, q.Query)
		label := strings.TrimSpace(strings.TrimSuffix(inner[comma+1:], ")"))
		require.Contains(t, scrapeLabels, label, "variable %s", v.Name)
		report("variable "+v.Name, checkQuery(families, inner[:comma])...)
	}
	require.True(t, vars["cluster"] && vars["instance"], "the cluster and instance variables: %v", vars)
	ids := map[int]string{}
	var walk func(panels []grafanaPanel)
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			require.NotContains(t, ids, p.ID, "panel %q: id %d also has %q", p.Title, p.ID, ids[p.ID])
			ids[p.ID] = p.Title
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			require.JSONEq(t, datasource, string(p.Datasource), "panel %q", p.Title)
			require.NotEmpty(t, p.Targets, "panel %q", p.Title)
			for _, tg := range p.Targets {
				where := fmt.Sprintf("panel %q query %s", p.Title, tg.RefID)
				report(where, checkQuery(families, tg.Expr)...)
				sels, _ := promSelectors(tg.Expr)
				for _, s := range sels {
					if s.name != "up" && (s.matchers["cluster"] != "$cluster" || s.matchers["instance"] != "$instance") {
						report(where, s.name+`: not narrowed by cluster=~"$cluster", instance=~"$instance"`)
					}
				}
			}
		}
	}
	walk(dash.Panels)
	require.GreaterOrEqual(t, len(ids), 20, "panels")

	// The alert rules.
	alerts := 0
	for _, g := range rules.Groups {
		require.NotEmpty(t, g.Name)
		for _, r := range g.Rules {
			where := "rule " + r.Alert + r.Record
			report(where, checkQuery(families, r.Expr)...)
			if r.Alert == "" {
				continue
			}
			alerts++
			if r.For != "" {
				_, err := model.ParseDuration(r.For)
				require.NoError(t, err, "%s: for", where)
			}
			require.Contains(t, []string{"critical", "warning"}, r.Labels["severity"], where)
			require.NotEmpty(t, r.Annotations["summary"], where)
			require.NotEmpty(t, r.Annotations["description"], where)
		}
	}
	require.GreaterOrEqual(t, alerts, 6, "alerts")
	require.Empty(t, problems, "queries naming series mqbroker does not export:\n%s", strings.Join(problems, "\n"))

	// And the check catches what it is there for.
	for expr, want := range map[string]string{
		`rate(ringmq_store_put_mesages_total[5m])`:              "ringmq_store_put_mesages_total: no such series is exported",
		`ringmq_store_put_latency_seconds`:                      "ringmq_store_put_latency_seconds is a HISTOGRAM: its series are ringmq_store_put_latency_seconds_bucket, _sum and _count",
		`ringmq_store_disk_used_ratio_bucket`:                   "ringmq_store_disk_used_ratio_bucket: ringmq_store_disk_used_ratio is a GAUGE, it has no _bucket series",
		`ringmq_flush_latency_seconds_count{servce="x"}`:        `ringmq_flush_latency_seconds_count has no label "servce" (it has cluster, instance, job, service)`,
		`ringmq_broker_connections{instance="a", role="other"}`: "",
	} {
		got := checkQuery(families, expr)
		if want == "" {
			require.Empty(t, got, expr)
		} else {
			require.Equal(t, []string{want}, got, expr)
		}
	}
}

// TestAlertRulesUnitTests runs the alert rules' own unit tests (deploy/prometheus-alerts_test.yml:
// each alert fires on the series that should fire it, with its annotations, and not on look-alikes)
// with Prometheus's promtool. It skips where promtool is not installed (Debian: the prometheus
// package).
func TestAlertRulesUnitTests(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	out, err := exec.Command(promtool, "test", "rules", "../deploy/prometheus-alerts_test.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "SUCCESS")
}
