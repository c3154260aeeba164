package bench

import (
	"fmt"
	"runtime"
	"strconv"
	"strings"
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
	// StealShare is the share of the machine's CPU time the hypervisor gave to others over the
	// window (/proc/stat steal over all CPU time; -1 when unknown). On a shared VM a stolen
	// vCPU stops broker and client alike for up to a hundred milliseconds: a run with a visible
	// share says little about tail latency.
	StealShare float64 `json:"steal_share"`
}

// cpuMark is a reading of the process CPU time, the machine's CPU ticks (all and stolen) and the
// wall clock.
type cpuMark struct {
	cpu          time.Duration
	wall         time.Time
	ok           bool
	steal, total uint64
	machineOK    bool
}

func markCPU() cpuMark {
	cpu, ok := processCPU()
	steal, total, machineOK := machineCPUTicks()
	return cpuMark{cpu: cpu, wall: time.Now(), ok: ok, steal: steal, total: total, machineOK: machineOK}
}

// clientCPUSince is the CPU spent from start to now over msgs measured messages; nil
// when the process CPU time cannot be read.
func clientCPUSince(start cpuMark, msgs int64) *ClientCPU {
	end := markCPU()
	if !start.ok || !end.ok {
		return nil
	}
	c := newClientCPU(end.cpu-start.cpu, end.wall.Sub(start.wall), msgs, runtime.NumCPU())
	c.StealShare = stealShare(start, end)
	return &c
}

// stealShare is the stolen share of the machine's CPU ticks between two marks, -1 when unknown.
func stealShare(start, end cpuMark) float64 {
	if !start.machineOK || !end.machineOK || end.total <= start.total {
		return -1
	}
	return float64(end.steal-start.steal) / float64(end.total-start.total)
}

// newClientCPU computes the shares; zero wall time or no messages leave them 0.
func newClientCPU(cpu, wall time.Duration, msgs int64, nproc int) ClientCPU {
	c := ClientCPU{Secs: cpu.Seconds(), WallSecs: wall.Seconds(), NumCPU: nproc, StealShare: -1}
	if wall > 0 && nproc > 0 {
		c.Share = cpu.Seconds() / wall.Seconds() / float64(nproc)
	}
	if msgs > 0 {
		c.UsPerMsg = float64(cpu.Microseconds()) / float64(msgs)
	}
	return c
}

// SummaryFields are the client-CPU fields of the summary line, and the machine's stolen
// share (a nil c, or an unknown steal, prints -1, so a reader's parser always finds them).
func (c *ClientCPU) SummaryFields() string {
	if c == nil {
		return "client_cpu_s=-1 client_cpu_share=-1 client_cpu_us_per_msg=-1 steal_share=-1"
	}
	steal := "-1"
	if c.StealShare >= 0 {
		steal = fmt.Sprintf("%.3f", c.StealShare)
	}
	return fmt.Sprintf("client_cpu_s=%.3f client_cpu_share=%.3f client_cpu_us_per_msg=%.2f steal_share=%s",
		c.Secs, c.Share, c.UsPerMsg, steal)
}

// parseProcStatCPU reads the aggregate "cpu" line of /proc/stat: the steal ticks (the eighth
// number) and the sum of all of them (guest ticks are already counted in user and nice).
func parseProcStatCPU(line string) (steal, total uint64, ok bool) {
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:min(len(f), 9)] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 7 {
			steal = n
		}
	}
	return steal, total, true
}
