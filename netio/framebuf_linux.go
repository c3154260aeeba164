package netio

import "golang.org/x/sys/unix"

// frameBuf holds one large frame (over LargeFrameBytes) while it is read and handled. Its
// memory is mapped for the frame and unmapped as soon as the handler is done, outside the
// Go heap. On the heap, every large frame would be garbage the moment it is handled, and
// the garbage collector lets the heap grow to twice what is live before it collects: with
// the request budget's bytes in flight, that doubles what a burst of big frames costs,
// and the pages stay with the process until the scavenger gives them back. Unmapped, they
// go back to the kernel at once. The handler contract already forbids keeping a frame's
// bytes past OnRequest (netio.go "Buffer ownership"); a handler that broke it would now
// fault instead of reading another frame's bytes.
type frameBuf struct {
	b      []byte
	mapped bool // from mmap: munmap it; else a heap fallback
}

// newFrameBuf returns an n-byte buffer (n > 0).
func newFrameBuf(n int) frameBuf {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		// Out of mappings or address space: the heap still works (and the budget bounds it).
		return frameBuf{b: make([]byte, n)}
	}
	return frameBuf{b: b, mapped: true}
}

// free releases the buffer; its bytes must no longer be referenced.
func (f *frameBuf) free() {
	if f.mapped {
		if err := unix.Munmap(f.b); err != nil {
			panic("netio: munmap of a frame buffer: " + err.Error()) // a buffer we mapped ourselves
		}
	}
	*f = frameBuf{}
}
