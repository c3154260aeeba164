//go:build linux

// Package childproc runs a test binary again as a child process that serves something (a broker, a
// controller-mode replica) until it is killed or told to stop: the crash tests' harness. The child reads
// its configuration from an environment variable, prints "READY <address>" once it serves and "STOPPED"
// after a clean stop; the parent kills it with SIGKILL, or stops it with SIGTERM and requires a clean
// exit. Test support only: nothing outside _test.go files imports it.
package childproc

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// readyTimeout bounds a child's start (recovery of a store under -race on a loaded machine included).
const readyTimeout = 90 * time.Second

// Child is one running child process.
type Child struct {
	// Addr is what the child printed after "READY ".
	Addr string

	cmd    *exec.Cmd
	stderr lockedBuffer
	lines  chan string // stdout lines after READY
	exited chan struct{}
	err    error // Wait's result, after exited
}

// Start runs this test binary again with envVar set to conf's lines (the child's main runs instead of
// the tests when it sees it) and waits for its READY line. The child dies with the test process, and at
// the end of the test at the latest.
func Start(t testing.TB, envVar string, conf []string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envVar+"="+strings.Join(conf, "\n"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	c := &Child{cmd: cmd, lines: make(chan string, 16), exited: make(chan struct{})}
	cmd.Stderr = &c.stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if addr, ok := strings.CutPrefix(line, "READY "); ok {
				ready <- addr
				continue
			}
			select {
			case c.lines <- line:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		c.err = cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-c.exited
	})
	select {
	case c.Addr = <-ready:
	case <-c.exited:
		t.Fatalf("child exited before READY: %v\nstderr:\n%s", c.err, c.Stderr())
	case <-time.After(readyTimeout):
		t.Fatalf("child not READY within %v\nstderr:\n%s", readyTimeout, c.Stderr())
	}
	return c
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Stderr is what the child wrote to its stderr so far.
func (c *Child) Stderr() string { return c.stderr.String() }

// Signal sends sig (SIGSTOP, SIGCONT...).
func (c *Child) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig))
}

// Kill sends SIGKILL and waits for the child to die.
func (c *Child) Kill(t testing.TB) {
	t.Helper()
	c.Signal(t, syscall.SIGKILL)
	<-c.exited
}

// Terminate sends SIGTERM and requires a clean stop: exit 0 and a STOPPED line. A child that does not
// stop within readyTimeout is sent SIGQUIT, so that the Go runtime writes every goroutine's stack to its
// stderr, which the failure shows.
func (c *Child) Terminate(t testing.TB) {
	t.Helper()
	c.Signal(t, syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(readyTimeout):
		_ = c.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-c.exited:
		case <-time.After(10 * time.Second):
		}
		t.Fatalf("child did not stop within %v of SIGTERM\nstderr (goroutines after SIGQUIT):\n%s", readyTimeout, c.Stderr())
	}
	require.NoError(t, c.err, "child exit after SIGTERM\nstderr:\n%s", c.Stderr())
	stopped := false
	for len(c.lines) > 0 {
		if <-c.lines == "STOPPED" {
			stopped = true
		}
	}
	require.True(t, stopped, "child did not report a clean stop\nstderr:\n%s", c.Stderr())
}

// lockedBuffer collects a child's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
