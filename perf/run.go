package perf

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Sentinel errors. Check them with errors.Is.
var (
	// ErrRunRecord: a run record (run.json) is missing, unreadable or of an unknown schema.
	ErrRunRecord = errors.New("perf: bad run record")
	// ErrHgrm: an .hgrm file is not a percentile distribution.
	ErrHgrm = errors.New("perf: bad .hgrm file")
	// ErrNoRuns: a report was asked for without runs.
	ErrNoRuns = errors.New("perf: no runs")
)

// supportedSchema is the run-record schema this package reads (bench.RunRecordSchema).
const supportedSchema = 1

// Run is one run as the reports use it: the fields of mqbench's run record that a report
// shows, plus the percentile curves of its .hgrm files and its per-second series. The
// run record's JSON is the contract with bench (documented in bench/record.go); perf does
// not import bench, so it reads runs written by any tool that follows the format.
type Run struct {
	Dir     string            `json:"-"`
	Name    string            `json:"name"`
	Mode    string            `json:"mode"`
	Config  map[string]string `json:"config"`
	Machine Machine           `json:"machine"`
	Results struct {
		Produce *Role `json:"produce"`
		Consume *Role `json:"consume"`
	} `json:"results"`
	Broker         *BrokerMetrics `json:"broker"`
	SeriesFile     string         `json:"series_file"`
	ThroughputFile string         `json:"throughput_file"`
	Schema         int            `json:"schema"`

	// Series holds the per-second rows by role ("produce", "consume").
	Series map[string][]SeriesPoint `json:"-"`
	// Throughput holds the rows of the throughput file (250 ms intervals), if any.
	Throughput []ThroughputPoint `json:"-"`
}

// ThroughputPoint is one interval of a run's throughput file: its end (ms since the
// measurement began), its length and the messages completed in it.
type ThroughputPoint struct {
	EndMs      int64
	IntervalMs int64
	Msgs       int64
}

// Machine is the run record's machine description.
type Machine struct {
	Hostname    string `json:"hostname"`
	CPUModel    string `json:"cpu_model"`
	NumCPU      int    `json:"nproc"`
	Kernel      string `json:"kernel"`
	GoVersion   string `json:"go_version"`
	GitRevision string `json:"git_revision"`
	GitDirty    bool   `json:"git_dirty"`
	Disk        struct {
		MountPoint string `json:"mount_point"`
		Device     string `json:"device"`
		FSType     string `json:"fstype"`
		Model      string `json:"model"`
	} `json:"disk"`
}

// Role is the produce or consume part of a run record. For produce, Msgs is the
// acknowledged count (written count, oneway); for consume, the received count.
type Role struct {
	Sent         int64            `json:"sent"`
	Acked        int64            `json:"acked"`
	Received     int64            `json:"received"`
	Errors       int64            `json:"errors"`
	ErrorsByCode map[string]int64 `json:"errors_by_code"`
	Secs         float64          `json:"secs"`
	MsgsPerSec   float64          `json:"msgs_per_sec"`
	MBPerSec     float64          `json:"mb_per_sec"`
	Latency      Latency          `json:"latency"`
	E2ELatency   Latency          `json:"e2e_latency"`
	Lag          int64            `json:"lag"`
	Hgrm         string           `json:"hgrm_file"`
	// ClientCPU is the load generator's own CPU over the measurement, if it recorded it.
	ClientCPU *ClientCPU `json:"client_cpu"`
	// ServerCPU is the server process's CPU over the measurement, if the suite read it.
	ServerCPU *ClientCPU `json:"server_cpu"`

	// Curve is the percentile distribution read from Hgrm (nil without one).
	Curve []Percentile `json:"-"`
}

// Lat is the role's latency summary: send latency for produce, end to end for consume.
func (r *Role) Lat() Latency {
	if r.E2ELatency.Count > 0 {
		return r.E2ELatency
	}
	return r.Latency
}

// ClientCPU is a process's CPU (the load generator's, or the server's): the share of the
// machine (CPU seconds / wall / nproc) and µs per message.
type ClientCPU struct {
	Share    float64 `json:"cpu_share"`
	UsPerMsg float64 `json:"cpu_us_per_msg"`
}

// Latency is a latency summary in microseconds.
type Latency struct {
	Count   int64   `json:"count"`
	P50Us   float64 `json:"p50_us"`
	P90Us   float64 `json:"p90_us"`
	P99Us   float64 `json:"p99_us"`
	P999Us  float64 `json:"p999_us"`
	P9999Us float64 `json:"p9999_us"`
	MaxUs   float64 `json:"max_us"`
}

// BrokerMetrics is the broker's side of a run: its histograms over the measured window
// (seconds) and the names of the put-lock and put-latency ones.
type BrokerMetrics struct {
	PutLockMetric    string                   `json:"put_lock_metric"`
	PutLatencyMetric string                   `json:"put_latency_metric"`
	PutLockMaxMetric string                   `json:"put_lock_max_metric"`
	Histograms       map[string]PromHistogram `json:"histograms"`
	Gauges           map[string]float64       `json:"gauges"`
	Error            string                   `json:"error"`
}

// PromHistogram is a broker histogram's window: count, sum and quantiles in seconds.
type PromHistogram struct {
	Count uint64  `json:"count"`
	Sum   float64 `json:"sum"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
}

// PutLock returns the put-lock histogram, if the run has it (b may be nil).
func (b *BrokerMetrics) PutLock() (PromHistogram, bool) {
	if b == nil {
		return PromHistogram{}, false
	}
	return b.hist(b.PutLockMetric)
}

// PutLatency returns the put-latency histogram, if the run has it (b may be nil).
func (b *BrokerMetrics) PutLatency() (PromHistogram, bool) {
	if b == nil {
		return PromHistogram{}, false
	}
	return b.hist(b.PutLatencyMetric)
}

// PutLockMaxSeconds is the longest put-lock hold the broker reported, if any (b may be
// nil).
func (b *BrokerMetrics) PutLockMaxSeconds() (float64, bool) {
	if b == nil {
		return 0, false
	}
	v, ok := b.Gauges[b.PutLockMaxMetric]
	return v, ok
}

func (b *BrokerMetrics) hist(name string) (PromHistogram, bool) {
	if name == "" {
		return PromHistogram{}, false
	}
	h, ok := b.Histograms[name]
	return h, ok && h.Count > 0
}

// Percentile is one line of an .hgrm file: the value (µs) at a percentile (0..1).
type Percentile struct {
	ValueUs    float64
	Percentile float64
	TotalCount int64
}

// SeriesPoint is one second of a run.
type SeriesPoint struct {
	Second int
	Msgs   int64
	Errors int64
	P99Us  float64
	Lag    int64 // -1 when not sampled
}

// Load reads a run: path is a run directory or its run.json. The .hgrm files and the
// series CSV it names are read too (a missing one is an error: a run directory is
// written whole).
func Load(path string) (*Run, error) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, "run.json")
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunRecord, err)
	}
	r := &Run{Dir: filepath.Dir(file)}
	if err := json.Unmarshal(data, r); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRunRecord, file, err)
	}
	if r.Schema != supportedSchema {
		return nil, fmt.Errorf("%w: %s: schema %d, this reader knows %d", ErrRunRecord, file, r.Schema, supportedSchema)
	}
	if r.Name == "" {
		r.Name = filepath.Base(r.Dir)
	}
	for _, role := range []*Role{r.Results.Produce, r.Results.Consume} {
		if role == nil || role.Hgrm == "" {
			continue
		}
		if role.Curve, err = ReadHgrmFile(filepath.Join(r.Dir, role.Hgrm)); err != nil {
			return nil, err
		}
	}
	if r.SeriesFile != "" {
		if r.Series, err = readSeries(filepath.Join(r.Dir, r.SeriesFile)); err != nil {
			return nil, err
		}
	}
	if r.ThroughputFile != "" {
		if r.Throughput, err = readThroughput(filepath.Join(r.Dir, r.ThroughputFile)); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// readThroughput reads a throughput file: t_ms,interval_ms,msgs.
func readThroughput(path string) ([]ThroughputPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunRecord, err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRunRecord, path, err)
	}
	if len(rows) == 0 || strings.Join(rows[0], ",") != "t_ms,interval_ms,msgs" {
		return nil, fmt.Errorf("%w: %s: header is not t_ms,interval_ms,msgs", ErrRunRecord, path)
	}
	out := make([]ThroughputPoint, 0, len(rows)-1)
	for i, row := range rows[1:] {
		var p ThroughputPoint
		var e1, e2, e3 error
		p.EndMs, e1 = strconv.ParseInt(row[0], 10, 64)
		p.IntervalMs, e2 = strconv.ParseInt(row[1], 10, 64)
		p.Msgs, e3 = strconv.ParseInt(row[2], 10, 64)
		if err := errors.Join(e1, e2, e3); err != nil || p.IntervalMs < 0 || p.Msgs < 0 {
			return nil, fmt.Errorf("%w: %s: row %d: %q", ErrRunRecord, path, i+2, strings.Join(row, ","))
		}
		out = append(out, p)
	}
	return out, nil
}

// LoadAll loads every path (run directories or run.json files) in order.
func LoadAll(paths []string) ([]*Run, error) {
	runs := make([]*Run, 0, len(paths))
	for _, p := range paths {
		r, err := Load(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// ReadHgrmFile reads an .hgrm file (see ReadHgrm).
func ReadHgrmFile(path string) ([]Percentile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHgrm, err)
	}
	defer f.Close()
	ps, err := ReadHgrm(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ps, nil
}

// ReadHgrm reads HdrHistogram's percentile distribution text (values in milliseconds,
// as mqbench and HdrHistogram's plotter use them) the way the plotter does: lines of four
// numbers (value, percentile, total count, 1/(1-percentile)) are points; the header and
// "#" lines are skipped. Values are returned in microseconds.
func ReadHgrm(r io.Reader) ([]Percentile, error) {
	var out []Percentile
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		v, err1 := strconv.ParseFloat(f[0], 64)
		p, err2 := strconv.ParseFloat(f[1], 64)
		n, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue // the column header
		}
		if !(p >= 0 && p <= 1) || !(v >= 0) || math.IsInf(v, 0) { // also NaN
			return nil, fmt.Errorf("%w: line %q out of range", ErrHgrm, line)
		}
		out = append(out, Percentile{ValueUs: v * 1000, Percentile: p, TotalCount: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHgrm, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no percentile lines", ErrHgrm)
	}
	return out, nil
}

// readSeries reads series.csv: role,second,msgs,bytes,errors,p50_us,p99_us,p999_us,max_us,lag.
func readSeries(path string) (map[string][]SeriesPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRunRecord, err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRunRecord, path, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: %s: empty", ErrRunRecord, path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	for _, need := range []string{"role", "second", "msgs", "errors", "p99_us", "lag"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%w: %s: no column %q", ErrRunRecord, path, need)
		}
	}
	out := map[string][]SeriesPoint{}
	for i, row := range rows[1:] {
		if len(row) != len(rows[0]) {
			return nil, fmt.Errorf("%w: %s: row %d has %d fields", ErrRunRecord, path, i+2, len(row))
		}
		var p SeriesPoint
		var errs []error
		var e error
		p.Second, e = strconv.Atoi(row[col["second"]])
		errs = append(errs, e)
		p.Msgs, e = strconv.ParseInt(row[col["msgs"]], 10, 64)
		errs = append(errs, e)
		p.Errors, e = strconv.ParseInt(row[col["errors"]], 10, 64)
		errs = append(errs, e)
		p.P99Us, e = strconv.ParseFloat(row[col["p99_us"]], 64)
		errs = append(errs, e)
		p.Lag = -1
		if s := row[col["lag"]]; s != "" {
			p.Lag, e = strconv.ParseInt(s, 10, 64)
			errs = append(errs, e)
		}
		if err := errors.Join(errs...); err != nil {
			return nil, fmt.Errorf("%w: %s: row %d: %w", ErrRunRecord, path, i+2, err)
		}
		role := row[col["role"]]
		out[role] = append(out[role], p)
	}
	return out, nil
}

// Msgs is the role's message count: acknowledged (or written, oneway) for produce,
// received for consume.
func (r *Role) Msgs() int64 {
	switch {
	case r.Received > 0:
		return r.Received
	case r.Acked > 0:
		return r.Acked
	}
	return r.Sent
}
