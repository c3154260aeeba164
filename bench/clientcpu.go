package bench

import (
	"fmt"
	"runtime"
	"time"
)

// ClientCPU is what the load generator itself cost during the measured window: its
// process CPU time (user + system, every goroutine), the share of the machine that is
// (CPU seconds / wall seconds / nproc) and the CPU per measured message. On a machine
// where the generator shares the cores with the broker, a share near 1/nproc × the cores
// the broker could use means the client, not the broker, bounds the figure.
type ClientCPU struct {
	Secs     float64 `json:"cpu_secs"`
	WallSecs float64 `json:"wall_secs"`
	NumCPU   int     `json:"nproc"`
	Share    float64 `json:"cpu_share"`
	UsPerMsg float64 `json:"cpu_us_per_msg"`
}

// cpuMark is a reading of the process CPU time and the wall clock.
type cpuMark struct {
	cpu  time.Duration
	wall time.Time
	ok   bool
}

func markCPU() cpuMark {
	cpu, ok := processCPU()
	return cpuMark{cpu: cpu, wall: time.Now(), ok: ok}
}

// clientCPUSince is the CPU spent from start to now over msgs measured messages; nil
// when the process CPU time cannot be read.
func clientCPUSince(start cpuMark, msgs int64) *ClientCPU {
	end := markCPU()
	if !start.ok || !end.ok {
		return nil
	}
	c := newClientCPU(end.cpu-start.cpu, end.wall.Sub(start.wall), msgs, runtime.NumCPU())
	return &c
}

// newClientCPU computes the shares; zero wall time or no messages leave them 0.
func newClientCPU(cpu, wall time.Duration, msgs int64, nproc int) ClientCPU {
	c := ClientCPU{Secs: cpu.Seconds(), WallSecs: wall.Seconds(), NumCPU: nproc}
	if wall > 0 && nproc > 0 {
		c.Share = cpu.Seconds() / wall.Seconds() / float64(nproc)
	}
	if msgs > 0 {
		c.UsPerMsg = float64(cpu.Microseconds()) / float64(msgs)
	}
	return c
}

// SummaryFields are the client-CPU fields of the summary line (a nil c prints them
// empty-handed as -1, so a reader's parser always finds them).
func (c *ClientCPU) SummaryFields() string {
	if c == nil {
		return "client_cpu_s=-1 client_cpu_share=-1 client_cpu_us_per_msg=-1"
	}
	return fmt.Sprintf("client_cpu_s=%.3f client_cpu_share=%.3f client_cpu_us_per_msg=%.2f", c.Secs, c.Share, c.UsPerMsg)
}
