//go:build !unix

package flush

import (
	"errors"
	"fmt"
)

// unsupportedBackend stands in on systems without the Unix file API, so `go build ./...` passes there.
// ringmq's store does not run on them.
type unsupportedBackend struct{ kind Kind }

var errNoUnix = fmt.Errorf("%w: flush backends need a Unix system", errors.ErrUnsupported)

func newFdatasyncBackend() Backend { return unsupportedBackend{KindFdatasync} }
func newMsyncBackend() Backend     { return unsupportedBackend{KindMsync} }

func (b unsupportedBackend) Kind() Kind                                  { return b.kind }
func (unsupportedBackend) SyncMapped(int, []byte, int64, int64) error    { return errNoUnix }
func (unsupportedBackend) WriteSync(int, []byte, int, int64, bool) error { return errNoUnix }
func (unsupportedBackend) Close() error                                  { return nil }

func fdName(fd int) string { return fmt.Sprintf("fd %d", fd) }

func pwriteAll(fd int, buf []byte, off int64) error { return errNoUnix }
func syncFile(fd int, off int64) error              { return errNoUnix }
