//go:build linux

package flush

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"github.com/pawelgaczynski/giouring"
)

// giouringRing is the only code in ringmq that touches giouring (STYLE.md §9: keep it behind one small
// interface). Not safe for concurrent use; uringBackend serializes callers.
type giouringRing struct {
	ring *giouring.Ring
	cqes [2 * ringEntries]*giouring.CompletionQueueEvent // reaped in batches without allocating
}

// newSystemRing sets up a ring and proves it works: the opcodes the backend uses must be supported and a
// NOP must make the round trip (a seccomp filter may allow io_uring_setup and still refuse io_uring_enter).
func newSystemRing(entries uint32) (ring, error) {
	r, err := giouring.CreateRing(entries)
	if err != nil {
		return nil, setupError(err)
	}
	g := &giouringRing{ring: r}
	if err := g.probe(); err != nil {
		r.QueueExit()
		return nil, err
	}
	return g, nil
}

// setupError explains a failed io_uring_setup in the terms an operator can act on.
func setupError(err error) error {
	var why string
	switch {
	case errors.Is(err, syscall.ENOSYS):
		why = "the kernel has no io_uring, or a seccomp filter blocks it"
	case errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES):
		why = "io_uring is forbidden for this process (seccomp filter, container runtime policy, or kernel.io_uring_disabled)"
		if b, rerr := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); rerr == nil {
			if v := strings.TrimSpace(string(b)); v != "0" {
				why = "kernel.io_uring_disabled=" + v
			}
		}
	case errors.Is(err, syscall.ENOMEM):
		why = "the kernel could not allocate the ring (RLIMIT_MEMLOCK on kernels before 5.12)"
	default:
		why = "unexpected"
	}
	return fmt.Errorf("io_uring_setup: %w (%s)", err, why)
}

func (g *giouringRing) probe() error {
	p, err := g.ring.GetProbeRing()
	if err != nil {
		return fmt.Errorf("IORING_REGISTER_PROBE: %w", err)
	}
	for _, op := range [...]struct {
		code uint8
		name string
	}{
		{giouring.OpNop, "NOP"}, {giouring.OpWrite, "WRITE"},
		{giouring.OpWriteFixed, "WRITE_FIXED"}, {giouring.OpFsync, "FSYNC"},
	} {
		if !p.IsSupported(op.code) {
			return fmt.Errorf("IORING_OP_%s is not supported by this kernel", op.name)
		}
	}
	var res [1]int32
	if err := g.run([]ringOp{{kind: opNop}}, res[:]); err != nil {
		return fmt.Errorf("NOP round trip: %w", err)
	}
	if res[0] != 0 {
		return fmt.Errorf("NOP round trip completed with %v", syscall.Errno(-res[0]))
	}
	return nil
}

func (g *giouringRing) registerBuffers(bufs [][]byte) error {
	iovecs := make([]syscall.Iovec, len(bufs))
	for i, b := range bufs {
		if len(b) == 0 {
			return fmt.Errorf("fixed buffer %d is empty", i)
		}
		iovecs[i].Base = unsafe.SliceData(b)
		iovecs[i].SetLen(len(b))
	}
	_, err := g.ring.RegisterBuffers(iovecs)
	runtime.KeepAlive(iovecs)
	if err != nil {
		return fmt.Errorf("IORING_REGISTER_BUFFERS of %d buffers: %w", len(bufs), err)
	}
	return nil
}

// run submits ops and waits for every completion. Completions are matched by user_data (the op's index),
// not by arrival order.
//
// io_uring_enter may return early: a signal (the Go runtime preempts with SIGURG) interrupts the wait, or
// the kernel takes fewer entries than offered. So the loop first makes sure every entry was taken
// (SQReady counts those the kernel has not consumed; giouring resubmits them), then waits until all
// completions are reaped. EINTR/EAGAIN/EBUSY from the kernel mean "call again"; anything else is a broken
// ring and is returned.
func (g *giouringRing) run(ops []ringOp, res []int32) error {
	for i := range ops {
		sqe := g.ring.GetSQE()
		if sqe == nil {
			// Cannot happen: every run reaps all it submitted, and no run needs more than ringEntries.
			return fmt.Errorf("submission queue full (%d entries)", ringEntries)
		}
		// giouring's prepare helpers (unlike liburing's io_uring_prep_rw) leave rw_flags and addr3 as the
		// slot's previous user set them: an fsync's IORING_FSYNC_DATASYNC (1) would reach the next write
		// in that slot as RWF_HIPRI, which fails with EINVAL. Start every entry from zero.
		*sqe = giouring.SubmissionQueueEntry{}
		op := &ops[i]
		addr := uintptr(unsafe.Pointer(unsafe.SliceData(op.buf)))
		switch op.kind {
		case opNop:
			sqe.PrepareNop()
		case opWrite:
			sqe.PrepareWrite(op.fd, addr, uint32(len(op.buf)), op.off)
		case opWriteFixed:
			sqe.PrepareWriteFixed(op.fd, addr, uint32(len(op.buf)), op.off, int(op.bufIndex))
		case opFsync:
			sqe.PrepareFsync(op.fd, giouring.FsyncDatasync)
			sqe.Off = op.off
			sqe.Len = op.length
		}
		sqe.UserData = uint64(i)
		if op.link {
			sqe.Flags |= giouring.SqeIOLink
		}
	}

	want := uint32(len(ops))
	_, err := g.ring.SubmitAndWait(want)
	for attempt := 1; ; attempt++ {
		if err != nil && !enterRetryable(err) {
			return err
		}
		if g.ring.SQReady() == 0 {
			break // the kernel holds every entry; a retryable err only cut the wait short
		}
		if attempt >= maxRetries {
			return fmt.Errorf("%d of %d entries not submitted after %d attempts (last: %v)",
				g.ring.SQReady(), want, attempt, err)
		}
		_, err = g.ring.Submit()
	}

	got := uint32(0)
	stalls := 0
	for got < want {
		if g.ring.CQReady() == 0 {
			if _, err := g.ring.WaitCQENr(want - got); err != nil {
				if !enterRetryable(err) {
					return err
				}
				if stalls++; stalls >= maxRetries {
					return err
				}
			}
			continue
		}
		n := g.ring.PeekBatchCQE(g.cqes[:])
		for _, cqe := range g.cqes[:n] {
			if cqe.UserData < uint64(len(res)) {
				res[cqe.UserData] = cqe.Res
			}
		}
		g.ring.CQAdvance(n)
		got += n
		stalls = 0
	}
	runtime.KeepAlive(ops)
	return nil
}

// enterRetryable: io_uring_enter answers EINTR (signal), EAGAIN (no request memory right now) or EBUSY
// (completion queue overflow still being flushed) when the same call should simply be made again.
func enterRetryable(err error) bool {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	return errno == syscall.EINTR || errno == syscall.EAGAIN || errno == syscall.EBUSY || errno == syscall.ETIME
}

func (g *giouringRing) close() error {
	g.ring.QueueExit() // closing the ring fd also drops its buffer registration
	return nil
}
