//go:build !linux

package netio

// frameBuf holds one large frame while it is read and handled (framebuf_linux.go maps it
// outside the Go heap; elsewhere it is a heap slice).
type frameBuf struct{ b []byte }

func newFrameBuf(n int) frameBuf { return frameBuf{b: make([]byte, n)} }

func (f *frameBuf) free() { *f = frameBuf{} }
