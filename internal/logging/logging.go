// Package logging builds a command's one *slog.Logger from the logging keys of its config
// file (Settings): text or JSON lines, a level, and stderr or a file rotated by size.
//
// Rotation is gopkg.in/natefinch/lumberjack.v2: when the file would grow past
// logFileMaxSizeMB it is renamed with a timestamp (broker-2026-12-03T17-45-36.123.log) and a
// new one started; logFileMaxBackups and logFileMaxAgeDays bound the renamed files kept.
// lumberjack keeps one goroutine per rotating file for the removal of old files, alive until
// the process exits.
//
// Nothing in ringmq logs per message (STYLE.md §5): a log line is an event an operator acts
// on, so a file a few hundred MiB large holds weeks of them.
package logging

import (
	"fmt"
	"io"
	"log/slog"

	"gopkg.in/natefinch/lumberjack.v2"

	"github.com/ringmq/ringmq/internal/conf"
)

// Settings are the logging keys (a settings struct, internal/conf). The broker's Config
// embeds them.
type Settings struct {
	LogFormat         Format `prop:"logFormat" default:"text" group:"logging" help:"log line format: text (key=value) or json (one object a line)"`
	LogLevel          Level  `prop:"logLevel" default:"info" group:"logging" help:"least severe level logged"`
	LogFile           string `prop:"logFile" group:"logging" help:"file to log to, rotated by size; empty: stderr"`
	LogFileMaxSizeMB  int    `prop:"logFileMaxSizeMB" default:"100" group:"logging" allowed:"1 or more" help:"logFile: size (MiB) at which the file is rotated"`
	LogFileMaxBackups int    `prop:"logFileMaxBackups" default:"10" group:"logging" allowed:"0 or more (0: keep all)" help:"logFile: rotated files kept"`
	LogFileMaxAgeDays int    `prop:"logFileMaxAgeDays" group:"logging" allowed:"0 or more (0: no age limit)" help:"logFile: rotated files older than this (days) are removed"`
}

// DefaultSettings are the default tags: text lines at info on stderr.
func DefaultSettings() Settings {
	var s Settings
	conf.SetDefaults(&s)
	return s
}

// Validate checks the numbers (the enums were checked when read).
func (s *Settings) Validate() error {
	switch {
	case s.LogFileMaxSizeMB < 1:
		return conf.Invalid(s, "logFileMaxSizeMB", "", "")
	case s.LogFileMaxBackups < 0:
		return conf.Invalid(s, "logFileMaxBackups", "", "")
	case s.LogFileMaxAgeDays < 0:
		return conf.Invalid(s, "logFileMaxAgeDays", "", "")
	}
	return nil
}

// New returns the logger the settings describe, writing to stderr unless logFile is set. The
// Closer closes the log file (a no-op for stderr); call it last, after the final log line.
func New(s Settings, stderr io.Writer) (*slog.Logger, io.Closer, error) {
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	var out io.Writer = stderr
	var closer io.Closer = nopCloser{}
	if s.LogFile != "" {
		lj := &lumberjack.Logger{Filename: s.LogFile, MaxSize: s.LogFileMaxSizeMB,
			MaxBackups: s.LogFileMaxBackups, MaxAge: s.LogFileMaxAgeDays, LocalTime: true}
		out, closer = lj, lj
	}
	opts := &slog.HandlerOptions{Level: s.LogLevel.Level()}
	var h slog.Handler
	switch s.LogFormat {
	case FormatJSON:
		h = slog.NewJSONHandler(out, opts)
	default:
		h = slog.NewTextHandler(out, opts)
	}
	return slog.New(h), closer, nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// Format is logFormat.
type Format uint8

// Log formats.
const (
	FormatText Format = iota // slog's TextHandler: time=... level=INFO msg="..." key=value
	FormatJSON               // slog's JSONHandler: one JSON object a line
)

var formatNames = []string{"text", "json"}

func (f Format) String() string {
	if int(f) < len(formatNames) {
		return formatNames[f]
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// EnumValues lists the logFormat spellings (conf.Enum).
func (Format) EnumValues() []string { return append([]string(nil), formatNames...) }

// MarshalText is the logFormat spelling.
func (f Format) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText reads logFormat: text or json.
func (f *Format) UnmarshalText(text []byte) error {
	i, err := conf.ParseEnum(string(text), formatNames...)
	if err != nil {
		return err
	}
	*f = Format(i)
	return nil
}

// Level is logLevel: debug, info, warn or error (slog's levels, spelled as slog reads them
// in lower case).
type Level uint8

// Log levels.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
)

var (
	levelNames = []string{"debug", "info", "warn", "error"}
	slogLevels = []slog.Level{slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError}
)

// Level is the slog level.
func (l Level) Level() slog.Level {
	if int(l) < len(slogLevels) {
		return slogLevels[l]
	}
	return slog.LevelInfo
}

func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", uint8(l))
}

// EnumValues lists the logLevel spellings (conf.Enum).
func (Level) EnumValues() []string { return append([]string(nil), levelNames...) }

// MarshalText is the logLevel spelling.
func (l Level) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads logLevel: debug, info, warn or error.
func (l *Level) UnmarshalText(text []byte) error {
	i, err := conf.ParseEnum(string(text), levelNames...)
	if err != nil {
		return err
	}
	*l = Level(i)
	return nil
}
