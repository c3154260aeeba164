// Package goclienttest runs the pinned Apache RocketMQ Go client for a test, in a child process
// built without -race (the driver, internal/goclient/driver; package goclient says why), and
// offers the client's API through it: Driver.NewProducer, NewTransactionProducer,
// NewPushConsumer, NewPullConsumer and NewAdmin give proxies whose methods have the client's
// names and shapes, with goclient's option structs in place of the client's With* options.
// Messages, results and errors are the client's own primitive types (errors.Is finds the
// client's sentinel errors); a consumer's function, a transaction listener and a SendAsync
// callback run in the test's process, called back by the driver.
//
// A test starts one driver after its brokers (Start); the driver is killed when the test ends,
// before the brokers shut down (cleanups run last first), so its clients never outlive them
// and no goroutine of the client ever runs in the test's process. A package whose tests use it
// calls VerifyTestMain from its TestMain.
//
// Porting a test that used the client directly keeps its broker and every assertion:
//
//	d := goclienttest.Start(t)                            // after the broker
//	rocketmq.NewProducer(producer.WithGroupName(g), ...)  → d.NewProducer(goclient.ProducerOptions{Group: g, ...})
//	rocketmq.NewPushConsumer(consumer.With...(...))       → d.NewPushConsumer(goclient.ConsumerOptions{...})
//	consumer.MessageSelector{Type: consumer.SQL92, ...}   → goclient.MessageSelector{Type: goclient.SQL92, ...}
//	func(...) (consumer.ConsumeResult, error)             → func(...) (goclient.ConsumeResult, error)
//	admin.NewAdmin(admin.WithResolver(...))               → d.NewAdmin(goclient.AdminOptions{...})
//
// and drops rlog.SetLogLevel (the driver logs at level error; a failed test shows that log) and
// any wait for the client's goroutines after Shutdown. An option or a call of the client the
// driver does not offer yet is a field in goclient's options (read in driver.NewProducer or
// NewConsumer), or a method on driver.Driver, its argument type in goclient and its proxy here.
package goclienttest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/internal/goclient"
)

// driverPackage is the driver's import path, built by Start.
const driverPackage = "github.com/ringmq/ringmq/internal/goclient/driver"

// callTimeout bounds a call whose context has no deadline: the client's own calls wait far
// less (its send and pull timeouts), so this only ends a call to a driver that hangs.
const callTimeout = time.Minute

// exitTimeout bounds how long the end of a test waits for its callbacks to return after the
// driver was killed.
const exitTimeout = 10 * time.Second

// outputKept is how much of the driver's output (the client's log) a failed test shows.
const outputKept = 64 << 10

var (
	mainCalled atomic.Bool
	announced  atomic.Bool // the build's time was logged

	build struct {
		once sync.Once
		dir  string
		bin  string
		took time.Duration
		err  error
	}
)

// VerifyTestMain is goleak.VerifyTestMain for a package whose tests start drivers: it also
// removes the driver's binary when the tests end.
func VerifyTestMain(m *testing.M, opts ...goleak.Option) {
	mainCalled.Store(true)
	goleak.VerifyTestMain(m, append(opts, goleak.Cleanup(func(exitCode int) {
		if build.dir != "" {
			_ = os.RemoveAll(build.dir)
		}
		os.Exit(exitCode)
	}))...)
}

// binary builds the driver once per test binary, without -race whatever the test was built
// with, into a temporary directory VerifyTestMain removes. The go build cache makes it a link
// after the first time.
func binary() (string, time.Duration, error) {
	build.once.Do(func() {
		start := time.Now()
		// `go test` puts its own toolchain's bin first on the PATH of the test binary.
		goCmd, err := exec.LookPath("go")
		if err != nil {
			build.err = fmt.Errorf("goclienttest: the go command, to build the driver: %w", err)
			return
		}
		build.dir, err = os.MkdirTemp("", "ringmq-goclient-driver-")
		if err != nil {
			build.err = fmt.Errorf("goclienttest: %w", err)
			return
		}
		bin := filepath.Join(build.dir, "goclient-driver")
		cmd := exec.Command(goCmd, "build", "-o", bin, driverPackage)
		cmd.Env = buildEnv(os.Environ())
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("goclienttest: go build %s: %w\n%s", driverPackage, err, out)
			return
		}
		build.bin, build.took = bin, time.Since(start)
	})
	return build.bin, build.took, build.err
}

// buildEnv is env with -race taken out of GOFLAGS (the Makefile's -ldflags stay): the driver
// exists to keep the client out of the race detector.
func buildEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if flags, ok := strings.CutPrefix(kv, "GOFLAGS="); ok {
			var kept []string
			for _, f := range strings.Fields(flags) {
				if f != "-race" && f != "--race" && f != "-race=true" && f != "--race=true" {
					kept = append(kept, f)
				}
			}
			kv = "GOFLAGS=" + strings.Join(kept, " ")
		}
		out = append(out, kv)
	}
	return out
}

// Driver is one driver process and the test's side of its pipes. Safe for concurrent use.
type Driver struct {
	t      testing.TB
	cmd    *exec.Cmd
	client *rpc.Client
	output *tail
	ctx    context.Context // the context callbacks get: ends with the driver
	nextID atomic.Uint64

	mu     sync.Mutex
	push   map[uint64]*PushConsumer
	tx     map[uint64]*TransactionProducer
	asyncs map[uint64]func(context.Context, *primitive.SendResult, error)
}

// Start builds the driver (once per test binary) and starts one for t; it is killed when t
// ends. Start it after the brokers it talks to, so that it is killed before they stop.
func Start(t testing.TB) *Driver {
	t.Helper()
	if !mainCalled.Load() {
		t.Fatal("goclienttest: the package's TestMain must call goclienttest.VerifyTestMain (it removes the driver's binary)")
	}
	bin, took, err := binary()
	if err != nil {
		t.Fatal(err)
	}
	if announced.CompareAndSwap(false, true) {
		t.Logf("goclienttest: built the Go-client driver in %v", took.Round(time.Millisecond))
	}

	// The driver's ends of the four pipes are its descriptors 3 to 6 (package goclient).
	var files, ours []*os.File
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			for _, f := range append(files, ours...) {
				_ = f.Close()
			}
			t.Fatalf("goclienttest: %v", err)
		}
		return r, w
	}
	reqR, reqW := pipe()
	files, ours = append(files, reqR), append(ours, reqW)
	ansR, ansW := pipe()
	files, ours = append(files, ansW), append(ours, ansR)
	cbAnsR, cbAnsW := pipe()
	files, ours = append(files, cbAnsR), append(ours, cbAnsW)
	cbR, cbW := pipe()
	files, ours = append(files, cbW), append(ours, cbR)

	d := &Driver{t: t, output: &tail{max: outputKept}, push: map[uint64]*PushConsumer{},
		tx: map[uint64]*TransactionProducer{}, asyncs: map[uint64]func(context.Context, *primitive.SendResult, error){}}
	ctx, cancel := context.WithCancel(context.Background())
	d.ctx = ctx
	d.cmd = exec.Command(bin, "-log-level", "error")
	d.cmd.Stdout, d.cmd.Stderr = d.output, d.output
	d.cmd.ExtraFiles = files
	err = d.cmd.Start()
	for _, f := range files {
		_ = f.Close() // the driver's now (or nobody's)
	}
	if err != nil {
		cancel()
		for _, f := range ours {
			_ = f.Close()
		}
		t.Fatalf("goclienttest: starting the driver: %v", err)
	}
	d.client = rpc.NewClientWithCodec(jsonrpc.NewClientCodec(goclient.Conn(ansR, reqW)))
	srv := rpc.NewServer()
	if err := srv.RegisterName(goclient.TestService, &Test{d: d}); err != nil {
		panic(err) // Test's methods are net/rpc's shape: a programmer error
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		srv.ServeCodec(jsonrpc.NewServerCodec(goclient.Conn(cbR, cbAnsW)))
	}()
	t.Cleanup(func() {
		// Killed, not shut down: the test is done with its clients, and the client's Shutdown
		// leaves pulls in flight to wait out their timeouts (30 s).
		cancel()
		_ = d.cmd.Process.Kill()
		_ = d.cmd.Wait() // its output copied
		_ = d.client.Close()
		select {
		case <-served: // every callback returned, the callback pipe closed
		case <-time.After(exitTimeout):
			t.Errorf("goclienttest: a callback of the driver still runs %v after the driver was killed", exitTimeout)
		}
		if t.Failed() {
			t.Logf("goclienttest: the driver's output (the client's log at level error):\n%s", d.output)
		}
	})

	var hello goclient.Hello
	if err := d.call(context.Background(), "Hello", goclient.Empty{}, &hello); err != nil {
		t.Fatal(err)
	}
	if hello.RaceEnabled {
		t.Fatal("goclienttest: the driver was built with -race")
	}
	return d
}

// call calls the driver's method and waits for its answer, within ctx (callTimeout if it has
// no deadline).
func (d *Driver) call(ctx context.Context, method string, args, answer any) error {
	ctx, cancel := bound(ctx)
	defer cancel()
	c := d.client.Go(goclient.DriverService+"."+method, args, answer, make(chan *rpc.Call, 1))
	select {
	case <-c.Done:
		return d.err(method, c.Error)
	case <-ctx.Done():
		return fmt.Errorf("goclienttest: %s: no answer from the driver: %w", method, ctx.Err())
	}
}

// bound gives ctx a deadline of callTimeout if it has none.
func bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, callTimeout)
}

// err is the error a call's caller sees: the client's own, or why the driver did not answer.
func (d *Driver) err(method string, err error) error {
	var se rpc.ServerError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		if ce, ok := goclient.DecodeError(string(se)); ok {
			return ce
		}
		return fmt.Errorf("goclienttest: %s: %s", method, string(se))
	}
	// Anything else is the pipes': rpc.ErrShutdown, an EOF, a broken pipe.
	return fmt.Errorf("goclienttest: %s: the driver is gone (%w); its output ends:\n%s", method, err, d.output)
}

func (d *Driver) id() uint64 { return d.nextID.Add(1) }

// Stacks is every goroutine's stack in the driver (runtime.Stack), for a test that looks at
// what the client is doing.
func (d *Driver) Stacks() (string, error) {
	var out string
	err := d.call(context.Background(), "Stacks", goclient.Empty{}, &out)
	return out, err
}

// CreateReplyMessage is consumer.CreateReplyMessage: the reply to a request message, to send
// with a producer.
func (d *Driver) CreateReplyMessage(request *primitive.MessageExt, body []byte) (*primitive.Message, error) {
	var out goclient.Message
	if err := d.call(context.Background(), "CreateReplyMessage",
		goclient.ReplyArgs{Request: goclient.FromMessageExt(request), Body: body}, &out); err != nil {
		return nil, err
	}
	return out.Primitive(), nil
}

// tail keeps the last max bytes written to it. Safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tail) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = bytes.Clone(b.buf[over:])
	}
	return len(p), nil
}

func (b *tail) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
