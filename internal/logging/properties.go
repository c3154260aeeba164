package logging

import (
	"fmt"
	"strings"

	"github.com/ringmq/ringmq/internal/conf"
)

// FromProperties reads the logging keys (logFormat, logLevel, logFile and its rotation) from
// a config file's properties over the defaults; a bad value is an error naming file, line,
// key, value and the allowed values. The commands read these before anything else, so that
// the logger they describe reports the rest of the file.
func FromProperties(props []conf.Property, file string) (Settings, error) {
	s := DefaultSettings()
	for _, p := range props {
		found, err := conf.Set(&s, p.Key, strings.TrimSpace(p.Value))
		if found && err != nil {
			return s, fmt.Errorf("%s:%d: %w", file, p.Line, err)
		}
	}
	return s, s.Validate()
}
