package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/internal/conf"
	"github.com/ringmq/ringmq/internal/testutil"
)

func TestMain(m *testing.M) {
	// lumberjack starts one goroutine per rotating file for removing old files and never stops it
	// (v2.2.1); a process has one.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("gopkg.in/natefinch/lumberjack%2ev2.(*Logger).millRun"))
}

func TestDefaultsAreTextInfoStderr(t *testing.T) {
	s := DefaultSettings()
	require.Equal(t, Settings{LogFormat: FormatText, LogLevel: LevelInfo, LogFileMaxSizeMB: 100, LogFileMaxBackups: 10}, s)
	var stderr bytes.Buffer
	logger, closer, err := New(s, &stderr)
	require.NoError(t, err)
	logger.Debug("hidden")
	logger.Info("shown", "key", "value")
	require.NoError(t, closer.Close())
	out := stderr.String()
	require.NotContains(t, out, "hidden")
	require.Regexp(t, `^time=\S+ level=INFO msg=shown key=value\n$`, out)
}

func TestJSONAtWarn(t *testing.T) {
	s := DefaultSettings()
	for key, value := range map[string]string{"logFormat": "json", "logLevel": "warn"} {
		found, err := conf.Set(&s, key, value)
		require.True(t, found)
		require.NoError(t, err)
	}
	var stderr bytes.Buffer
	logger, _, err := New(s, &stderr)
	require.NoError(t, err)
	logger.Info("hidden")
	logger.Warn("disk nearly full", "usedRatio", 91)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(stderr.Bytes(), &rec), stderr.String())
	require.Equal(t, "WARN", rec["level"])
	require.Equal(t, "disk nearly full", rec["msg"])
	require.EqualValues(t, 91, rec["usedRatio"])
}

func TestBadValuesNameKeyValueAndAllowed(t *testing.T) {
	s := DefaultSettings()
	_, err := conf.Set(&s, "logLevel", "verbose")
	require.EqualError(t, err, `key logLevel = "verbose"; allowed: debug, info, warn or error`)
	_, err = conf.Set(&s, "logFormat", "xml")
	require.EqualError(t, err, `key logFormat = "xml"; allowed: text or json`)
	s.LogFileMaxSizeMB = 0
	_, _, err = New(s, os.Stderr)
	require.EqualError(t, err, `key logFileMaxSizeMB = "0"; allowed: 1 or more`)
}

// TestFileRotatesBySize: with logFile set, lines go to the file (not stderr), and a file that
// would pass logFileMaxSizeMB is renamed and a new one started; logFileMaxBackups bounds the
// renamed files.
func TestFileRotatesBySize(t *testing.T) {
	dir := t.TempDir()
	s := DefaultSettings()
	s.LogFile = filepath.Join(dir, "broker.log")
	s.LogFileMaxSizeMB = 1
	s.LogFileMaxBackups = 1
	var stderr bytes.Buffer
	logger, closer, err := New(s, &stderr)
	require.NoError(t, err)
	line := strings.Repeat("x", 1000)
	// 3,000 lines of ~1.05 KB: about 3 MiB, so at least two rotations.
	for i := range 3000 {
		logger.Info("filler", "i", i, "pad", line)
	}
	require.NoError(t, closer.Close())
	require.Empty(t, stderr.String())

	current, err := os.ReadFile(s.LogFile)
	require.NoError(t, err)
	require.LessOrEqual(t, len(current), 1<<20)
	require.Contains(t, string(current), "i=2999 ")
	// lumberjack removes backups beyond logFileMaxBackups in its own goroutine: wait for it.
	testutil.Eventually(t, "one backup left", func() bool {
		backups, err := filepath.Glob(filepath.Join(dir, "broker-*.log"))
		return err == nil && len(backups) == 1
	})
}
