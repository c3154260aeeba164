//go:build !linux

package netio

import (
	"log/slog"
	"sync"

	"github.com/panjf2000/gnet/v2"
)

// readStop is not available outside Linux (readstop_linux.go says how it works there): a
// connection whose next frame waits for the request budget is not consumed, but gnet keeps
// buffering what its peer sends.
type readStop struct {
	log  *slog.Logger
	once sync.Once
}

func newReadStop(log *slog.Logger) *readStop { return &readStop{log: log} }

func (r *readStop) pause(gnet.Conn) bool {
	r.once.Do(func() {
		r.log.Warn("netio: cannot stop reading from connections that wait for the request budget on this OS; " +
			"they are buffered in memory instead")
	})
	return false
}

func (r *readStop) resume(gnet.Conn) {}
