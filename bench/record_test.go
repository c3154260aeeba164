package bench

import (
	"bufio"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// parseHgrm reads the percentile lines of an .hgrm file the way HdrHistogram's plotter
// does: four numeric columns; "#" lines and the header are skipped.
func parseHgrm(t *testing.T, path string) (values, percentiles []float64, total int64) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#[Max") {
			_, after, _ := strings.Cut(line, "Total count    =")
			total, err = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(after, "]")), 10, 64)
			require.NoError(t, err)
		}
		fields := strings.Fields(line)
		if len(fields) != 4 {
			continue
		}
		v, err1 := strconv.ParseFloat(fields[0], 64)
		p, err2 := strconv.ParseFloat(fields[1], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		values = append(values, v)
		percentiles = append(percentiles, p)
	}
	require.NoError(t, sc.Err())
	return values, percentiles, total
}

func TestWriteRunRecord(t *testing.T) {
	b := newTestFakeBroker(t)
	pcfg := testProducerConfig(b)
	pcfg.Count = 300
	pres := runProducer(t, pcfg)
	ccfg := testConsumerConfig(b)
	ccfg.Count = 300
	cres := runConsumer(t, ccfg)

	rec := NewRunRecord("", "mixed", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	require.Equal(t, "mixed 2025-01-02 03:04:05", rec.Name)
	rec.Config = LoadConfigMap(&pcfg)
	rec.Machine = DescribeMachine(context.Background(), t.TempDir())
	rec.SetProduce(&pcfg, pres)
	rec.SetConsume(cres)
	dir := filepath.Join(t.TempDir(), "run")
	require.NoError(t, WriteRun(dir, rec, pres, cres))

	got, err := ReadRunRecord(dir)
	require.NoError(t, err)
	require.Equal(t, RunRecordSchema, got.Schema)
	require.EqualValues(t, 300, got.Results.Produce.Acked)
	require.EqualValues(t, 300, got.Results.Consume.Received)
	require.Equal(t, pres.Latency, got.Results.Produce.Latency)
	require.Equal(t, "300", got.Config["count"])
	require.Equal(t, SeriesFile, got.Series)
	require.NotEmpty(t, got.Machine.GoVersion)
	require.Positive(t, got.Machine.NumCPU)
	require.NotEmpty(t, got.Machine.Disk.Path)

	// The .hgrm: percentile lines ascending up to 1.0, total count = samples, max line
	// equal to the summary's max (ms in the file, µs in the summary).
	values, percentiles, total := parseHgrm(t, filepath.Join(dir, ProduceHgrm))
	require.EqualValues(t, 300, total)
	require.NotEmpty(t, values)
	require.InDelta(t, 1.0, percentiles[len(percentiles)-1], 1e-9)
	require.InDelta(t, pres.Latency.MaxUs/1000, values[len(values)-1], 0.001)
	for i := 1; i < len(values); i++ {
		require.GreaterOrEqual(t, values[i], values[i-1])
		require.GreaterOrEqual(t, percentiles[i], percentiles[i-1])
	}
	_, _, total = parseHgrm(t, filepath.Join(dir, ConsumeHgrm))
	require.EqualValues(t, 300, total)
	require.NoFileExists(t, filepath.Join(dir, ProduceServiceHgrm), "closed loop: no service-time file")

	f, err := os.Open(filepath.Join(dir, SeriesFile))
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	require.Equal(t, SeriesHeader, rows[0])
	sums := map[string]int64{}
	for _, r := range rows[1:] {
		n, err := strconv.ParseInt(r[2], 10, 64)
		require.NoError(t, err)
		sums[r[0]] += n
	}
	require.Equal(t, map[string]int64{"produce": 300, "consume": 300}, sums)

	line := ProduceSummaryLine("produce", pres)
	require.Regexp(t, `^mqbench: mode=produce msgs=300 secs=\d+\.\d{3} rate=\d+\.\d p50_us=[\d.]+ p99_us=[\d.]+ p999_us=[\d.]+ max_us=[\d.]+ errors=0 client_cpu_s=[\d.]+ client_cpu_share=[\d.]+ client_cpu_us_per_msg=[\d.]+ steal_share=(?:-1|[\d.]+)$`, line)
	require.Regexp(t, `^mqbench: mode=consume msgs=300 .* errors=0 client_cpu_s=[\d.]+ client_cpu_share=[\d.]+ client_cpu_us_per_msg=[\d.]+ steal_share=(?:-1|[\d.]+)$`, ConsumeSummaryLine("consume", cres))
}

func TestDescribeDiskFindsMount(t *testing.T) {
	d := describeDisk(t.TempDir())
	if _, err := os.Stat("/proc/mounts"); err != nil {
		t.Skip("no /proc/mounts")
	}
	require.NotEmpty(t, d.MountPoint)
	require.NotEmpty(t, d.FSType)
	require.True(t, underMount(d.Path, d.MountPoint))
	require.Equal(t, "a b", unescapeMount(`a\040b`))
}
