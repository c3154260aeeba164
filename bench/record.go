package bench

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ringmq/ringmq/internal/fsutil"
)

// The run record is the contract between mqbench and its readers (perf, scripts): one
// directory per run holding
//
//	run.json              RunRecord (schema below; RunRecordSchema bumps on incompatible change)
//	produce.hgrm          send latency, HdrHistogram percentile distribution, milliseconds
//	produce-service.hgrm  open-loop runs only: service time (from the actual write)
//	consume-e2e.hgrm      end-to-end latency of consumed messages, milliseconds
//	series.csv            per second: role,second,msgs,bytes,errors,p50_us,p99_us,p999_us,max_us,lag
//	throughput.csv        produce: messages per 250 ms (ThroughputFile)
//
// The .hgrm files are what HdrHistogram's outputPercentileDistribution writes (5 ticks
// per half distance, values scaled to milliseconds), so HdrHistogram's plotter and
// hdrhistogram-go read them.
const (
	RunRecordSchema    = 1
	RunFile            = "run.json"
	SeriesFile         = "series.csv"
	ProduceHgrm        = "produce.hgrm"
	ProduceServiceHgrm = "produce-service.hgrm"
	ConsumeHgrm        = "consume-e2e.hgrm"
)

// hgrmTicksPerHalfDistance and hgrmValueScale: the Java tool's defaults, with values in
// milliseconds (ns / 1e6) as HdrHistogram's plotter labels them.
const (
	hgrmTicksPerHalfDistance = 5
	hgrmValueScale           = 1e6
)

// RunRecord is run.json.
type RunRecord struct {
	Schema   int               `json:"schema"`
	Name     string            `json:"name"` // label in reports (--name; default: mode and time)
	Mode     string            `json:"mode"` // produce, consume, mixed or e2e
	Command  []string          `json:"command,omitempty"`
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Config   map[string]string `json:"config"` // every option of the run, as text
	Machine  Machine           `json:"machine"`
	Results  Results           `json:"results"`
	Broker   *BrokerMetrics    `json:"broker,omitempty"`
	Series   string            `json:"series_file,omitempty"`
	// Throughput names the throughput-over-time file (ThroughputFile), if any.
	Throughput string `json:"throughput_file,omitempty"`
}

// Results holds a summary per role.
type Results struct {
	Produce *ProduceSummary `json:"produce,omitempty"`
	Consume *ConsumeSummary `json:"consume,omitempty"` // in an e2e run its latency is end to end
	E2E     *E2ESummary     `json:"e2e,omitempty"`
}

// E2ESummary is how an end-to-end run's messages matched (see E2EResult).
type E2ESummary struct {
	Written    int64 `json:"written"`
	Matched    int64 `json:"matched"`
	Missing    int64 `json:"missing"`
	Duplicates int64 `json:"duplicates"`
	Foreign    int64 `json:"foreign"`
}

// ProduceSummary is the produce part of a run record.
type ProduceSummary struct {
	Targets      []BrokerQueues   `json:"targets"`
	Oneway       bool             `json:"oneway,omitempty"`
	RatePerSec   float64          `json:"target_rate,omitempty"` // open-loop rate asked for
	Sent         int64            `json:"sent"`
	Acked        int64            `json:"acked"`
	Errors       int64            `json:"errors"`
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`
	WarmupMsgs   int64            `json:"warmup_msgs"`
	Bytes        int64            `json:"bytes"`
	Secs         float64          `json:"secs"`
	MsgsPerSec   float64          `json:"msgs_per_sec"`
	MBPerSec     float64          `json:"mb_per_sec"`
	Latency      LatencySummary   `json:"latency"`
	Service      *LatencySummary  `json:"service,omitempty"`
	Hgrm         string           `json:"hgrm_file,omitempty"`
	ServiceHgrm  string           `json:"service_hgrm_file,omitempty"`
	ConnErrors   []string         `json:"conn_errors,omitempty"`
	ClientCPU    *ClientCPU       `json:"client_cpu,omitempty"`
	// ServerCPU is the server process's CPU over the measurement (the suite reads it from
	// /proc/<pid>/stat; absent when mqbench did not start the server).
	ServerCPU *ClientCPU `json:"server_cpu,omitempty"`
}

// ConsumeSummary is the consume part of a run record.
type ConsumeSummary struct {
	Targets      []BrokerQueues   `json:"targets"`
	Received     int64            `json:"received"`
	Bytes        int64            `json:"bytes"`
	Pulls        int64            `json:"pulls"`
	Errors       int64            `json:"errors"`
	ErrorsByCode map[string]int64 `json:"errors_by_code,omitempty"`
	WarmupMsgs   int64            `json:"warmup_msgs"`
	Stamped      int64            `json:"stamped"`
	OffsetGaps   int64            `json:"offset_gaps"`
	Secs         float64          `json:"secs"`
	MsgsPerSec   float64          `json:"msgs_per_sec"`
	MBPerSec     float64          `json:"mb_per_sec"`
	Latency      LatencySummary   `json:"e2e_latency"`
	Lag          int64            `json:"lag"`
	LagByQueue   map[string]int64 `json:"lag_by_queue,omitempty"`
	Hgrm         string           `json:"hgrm_file,omitempty"`
	ConnErrors   []string         `json:"conn_errors,omitempty"`
	ClientCPU    *ClientCPU       `json:"client_cpu,omitempty"`
}

// NewRunRecord starts a record; the caller fills Config, Machine and Broker.
func NewRunRecord(name, mode string, started time.Time) *RunRecord {
	if name == "" {
		name = mode + " " + started.Format("2006-01-02 15:04:05")
	}
	return &RunRecord{Schema: RunRecordSchema, Name: name, Mode: mode, Started: started, Config: map[string]string{}}
}

// SetProduce fills the produce summary from a result (nil: none).
func (r *RunRecord) SetProduce(cfg *ProducerConfig, res *ProduceResult) {
	if res == nil {
		return
	}
	s := &ProduceSummary{
		Targets: res.Targets, Oneway: cfg.Oneway, RatePerSec: cfg.Rate,
		Sent: res.Sent, Acked: res.Acked, Errors: res.Errors, ErrorsByCode: res.ErrorsByCode,
		WarmupMsgs: res.WarmupMsgs, Bytes: res.Bytes, Secs: res.Elapsed.Seconds(),
		MsgsPerSec: res.MsgsPerSec(), MBPerSec: res.MBPerSec(),
		Latency: res.Latency, Service: res.Service, ConnErrors: res.ConnErrors,
		ClientCPU: res.ClientCPU,
	}
	if res.LatencyHist != nil && res.LatencyHist.TotalCount() > 0 {
		s.Hgrm = ProduceHgrm
	}
	if res.ServiceHist != nil && res.ServiceHist.TotalCount() > 0 {
		s.ServiceHgrm = ProduceServiceHgrm
	}
	r.Results.Produce = s
}

// SetE2E records how an end-to-end run's messages matched.
func (r *RunRecord) SetE2E(res *E2EResult) {
	r.Results.E2E = &E2ESummary{Written: res.Written, Matched: res.Matched, Missing: res.Missing,
		Duplicates: res.Duplicates, Foreign: res.Foreign}
}

// SetConsume fills the consume summary from a result (nil: none).
func (r *RunRecord) SetConsume(res *ConsumeResult) {
	if res == nil {
		return
	}
	s := &ConsumeSummary{
		Targets: res.Targets, Received: res.Received, Bytes: res.Bytes, Pulls: res.Pulls,
		Errors: res.Errors, ErrorsByCode: res.ErrorsByCode, WarmupMsgs: res.WarmupMsgs,
		Stamped: res.Stamped, OffsetGaps: res.OffsetGaps, Secs: res.Elapsed.Seconds(),
		MsgsPerSec: res.MsgsPerSec(), MBPerSec: res.MBPerSec(), Latency: res.Latency,
		Lag: res.Lag, LagByQueue: res.LagByQueue, ConnErrors: res.ConnErrors, ClientCPU: res.ClientCPU,
	}
	if res.LatencyHist != nil && res.LatencyHist.TotalCount() > 0 {
		s.Hgrm = ConsumeHgrm
	}
	r.Results.Consume = s
}

// WriteRun writes the run directory: the .hgrm files of the results given, the series
// CSV and run.json (last, so a directory with run.json is complete).
func WriteRun(dir string, rec *RunRecord, produce *ProduceResult, consume *ConsumeResult) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	var errs []error
	if p := rec.Results.Produce; p != nil && produce != nil {
		if p.Hgrm != "" {
			errs = append(errs, WriteHgrm(filepath.Join(dir, p.Hgrm), produce.LatencyHist))
		}
		if p.ServiceHgrm != "" {
			errs = append(errs, WriteHgrm(filepath.Join(dir, p.ServiceHgrm), produce.ServiceHist))
		}
	}
	if c := rec.Results.Consume; c != nil && consume != nil && c.Hgrm != "" {
		errs = append(errs, WriteHgrm(filepath.Join(dir, c.Hgrm), consume.LatencyHist))
	}
	series := map[string][]SeriesRow{}
	if produce != nil {
		series["produce"] = produce.Series
	}
	if consume != nil {
		series["consume"] = consume.Series
	}
	if produce != nil && len(produce.Throughput) > 0 {
		rec.Throughput = ThroughputFile
		errs = append(errs, WriteThroughputCSV(filepath.Join(dir, ThroughputFile), produce.Throughput))
	}
	if len(series) > 0 {
		rec.Series = SeriesFile
		errs = append(errs, WriteSeriesCSV(filepath.Join(dir, SeriesFile), series))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode run record: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, RunFile), append(data, '\n'))
}

// WriteHgrm writes h (values in ns) as an HdrHistogram percentile distribution in
// milliseconds.
func WriteHgrm(path string, h *hdrhistogram.Histogram) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w := bufio.NewWriter(f)
	_, err = h.PercentilesPrint(w, hgrmTicksPerHalfDistance, hgrmValueScale)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}

// SeriesHeader is the first line of series.csv.
var SeriesHeader = []string{"role", "second", "msgs", "bytes", "errors", "p50_us", "p99_us", "p999_us", "max_us", "lag"}

// WriteSeriesCSV writes the per-second rows of each role ("produce" before "consume").
func WriteSeriesCSV(path string, series map[string][]SeriesRow) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	w := csv.NewWriter(f)
	_ = w.Write(SeriesHeader)
	ff := func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }
	for _, role := range []string{"produce", "consume"} {
		for _, r := range series[role] {
			lag := ""
			if r.Lag >= 0 {
				lag = strconv.FormatInt(r.Lag, 10)
			}
			_ = w.Write([]string{role, strconv.Itoa(r.Second), strconv.FormatInt(r.Msgs, 10),
				strconv.FormatInt(r.Bytes, 10), strconv.FormatInt(r.Errors, 10),
				ff(r.P50Us), ff(r.P99Us), ff(r.P999Us), ff(r.MaxUs), lag})
		}
	}
	w.Flush()
	err = w.Error()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bench: write %s: %w", path, err)
	}
	return nil
}

// writeFileAtomic replaces path so that a reader never sees half a run record.
func writeFileAtomic(path string, data []byte) error {
	if err := fsutil.WriteFileAtomic(path, data, nil); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return nil
}

// ReadRunRecord reads dir/run.json (or the file itself when path names a file).
func ReadRunRecord(path string) (*RunRecord, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, RunFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	var rec RunRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("bench: %s: %w", path, err)
	}
	return &rec, nil
}

// SummaryLine is the machine-readable last line of mqbench produce and consume:
//
//	mqbench: mode=produce msgs=N secs=T rate=R p50_us=.. p99_us=.. p999_us=.. max_us=.. errors=E
//
// For produce, msgs counts acknowledged messages (written ones, oneway) and the latencies
// are send latencies; for consume, msgs counts received messages, the latencies are
// end to end and errors counts failed pulls.
func SummaryLine(mode string, msgs int64, secs, rate float64, lat LatencySummary, errs int64) string {
	return fmt.Sprintf("mqbench: mode=%s msgs=%d secs=%.3f rate=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f max_us=%.1f errors=%d",
		mode, msgs, secs, rate, lat.P50Us, lat.P99Us, lat.P999Us, lat.MaxUs, errs)
}

// ProduceSummaryLine is SummaryLine for a produce result, followed by the client's own
// CPU over the measurement (ClientCPU.SummaryFields; process CPU, so in a mixed run both
// roles'), so that a reader sees when the load generator rather than the broker was the
// limit:
//
//	... errors=E client_cpu_s=C client_cpu_share=S client_cpu_us_per_msg=U steal_share=T
func ProduceSummaryLine(mode string, res *ProduceResult) string {
	msgs := res.Acked
	if msgs == 0 && res.Errors == 0 {
		msgs = res.Sent
	}
	return SummaryLine(mode, msgs, res.Elapsed.Seconds(), res.MsgsPerSec(), res.Latency, res.Errors) + " " + res.ClientCPU.SummaryFields()
}

// ConsumeSummaryLine is SummaryLine for a consume result, with the client's CPU as in
// ProduceSummaryLine.
func ConsumeSummaryLine(mode string, res *ConsumeResult) string {
	return SummaryLine(mode, res.Received, res.Elapsed.Seconds(), res.MsgsPerSec(), res.Latency, res.Errors) + " " + res.ClientCPU.SummaryFields()
}
