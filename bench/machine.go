package bench

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Machine describes where a run ran, for the run record: comparisons only mean something
// between runs on the same kind of machine.
type Machine struct {
	Hostname    string `json:"hostname"`
	OS          string `json:"os"`
	Arch        string `json:"arch"`
	CPUModel    string `json:"cpu_model"`
	NumCPU      int    `json:"nproc"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	Kernel      string `json:"kernel"`
	Disk        Disk   `json:"disk"`
	GoVersion   string `json:"go_version"`
	GitRevision string `json:"git_revision,omitempty"`
	GitDirty    bool   `json:"git_dirty,omitempty"`
}

// Disk describes the file system and block device holding a path.
type Disk struct {
	Path       string `json:"path"`
	MountPoint string `json:"mount_point,omitempty"`
	Device     string `json:"device,omitempty"`
	FSType     string `json:"fstype,omitempty"`
	Model      string `json:"model,omitempty"`
	Rotational *bool  `json:"rotational,omitempty"`
}

// DescribeMachine gathers the machine description. diskPath is the directory whose file
// system matters (the broker's store). Nothing here fails a run: what cannot be read is
// left empty.
func DescribeMachine(ctx context.Context, diskPath string) Machine {
	m := Machine{
		OS:        runtime.GOOS,
		Arch:      runtime.GOARCH,
		NumCPU:    runtime.NumCPU(),
		GoVersion: runtime.Version(),
		CPUModel:  cpuModel(),
		Kernel:    kernelRelease(),
	}
	m.Hostname, _ = os.Hostname()
	m.MemoryBytes = memTotal()
	m.Disk = describeDisk(diskPath)
	m.GitRevision, m.GitDirty = gitRevision(ctx)
	return m
}

// cpuModel reads the first "model name" of /proc/cpuinfo (Linux).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// memTotal reads MemTotal of /proc/meminfo (Linux), in bytes.
func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// describeDisk finds the mount holding path in /proc/mounts (the longest mount point that
// prefixes it) and the block device's model and rotational flag in /sys/block.
func describeDisk(path string) Disk {
	d := Disk{Path: path}
	abs, err := filepath.Abs(path)
	if err != nil {
		return d
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	d.Path = abs
	data, err := os.ReadFile("/proc/mounts")
	if err != nil {
		return d
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		mp := unescapeMount(f[1])
		if !underMount(abs, mp) || len(mp) < len(d.MountPoint) {
			continue
		}
		d.MountPoint, d.Device, d.FSType = mp, f[0], f[2]
	}
	if dev, ok := strings.CutPrefix(d.Device, "/dev/"); ok {
		blk := blockDevice(dev)
		if b, err := os.ReadFile(filepath.Join("/sys/block", blk, "device", "model")); err == nil {
			d.Model = strings.TrimSpace(string(b))
		} else if b, err := os.ReadFile(filepath.Join("/sys/block", blk, "device", "vendor")); err == nil {
			d.Model = "vendor " + strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(filepath.Join("/sys/block", blk, "queue", "rotational")); err == nil {
			rot := strings.TrimSpace(string(b)) == "1"
			d.Rotational = &rot
		}
	}
	return d
}

func underMount(path, mount string) bool {
	if mount == "/" {
		return true
	}
	return path == mount || strings.HasPrefix(path, mount+"/")
}

// unescapeMount undoes /proc/mounts' octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// blockDevice maps a partition name to its disk in /sys/block (vda1 → vda, nvme0n1p2 →
// nvme0n1): /sys/class/block/<part> links into the disk's directory.
func blockDevice(dev string) string {
	if _, err := os.Stat(filepath.Join("/sys/block", dev)); err == nil {
		return dev
	}
	if target, err := filepath.EvalSymlinks(filepath.Join("/sys/class/block", dev)); err == nil {
		return filepath.Base(filepath.Dir(target))
	}
	return dev
}

// gitRevision is the checkout's HEAD: from the binary's build info when it was built in
// the checkout, else from `git rev-parse HEAD` in the working directory.
func gitRevision(ctx context.Context) (string, bool) {
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if rev != "" {
			return rev, dirty
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "git", "rev-parse", "HEAD").Output()
	if err != nil {
		return "", false
	}
	rev := strings.TrimSpace(string(out))
	status, err := exec.CommandContext(ctx, "git", "status", "--porcelain", "--untracked-files=no").Output()
	return rev, err == nil && len(strings.TrimSpace(string(status))) > 0
}
