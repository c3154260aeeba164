// Command driver runs the pinned Apache RocketMQ Go client on a test's behalf, in a process of
// its own built without -race (package goclient says why and draws the pipes). A test starts it
// through goclienttest.Start, never by hand.
//
// It serves the Driver service (driver.go) on descriptors 3 and 4 and calls the test's Test
// service on 5 and 6. When the requests end (the test closed its end, or its process is gone)
// it exits at once: it does not shut its clients down, the test is done with them (their
// connections close with the process).
package main

import (
	"flag"
	"fmt"
	"io"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"

	"github.com/apache/rocketmq-client-go/v2/rlog"

	"github.com/ringmq/ringmq/internal/goclient"
)

func main() {
	logLevel := flag.String("log-level", "error", "the client's log level (rlog: debug, info, warn, error, fatal)")
	flag.Parse()
	rlog.SetLogLevel(*logLevel)

	test := rpc.NewClientWithCodec(jsonrpc.NewClientCodec(goclient.Conn(
		os.NewFile(goclient.FDCallbackAnswer, "callback-answers"), os.NewFile(goclient.FDCallbacks, "callbacks"))))
	srv := rpc.NewServer()
	if err := srv.RegisterName(goclient.DriverService, newDriver(test)); err != nil {
		fmt.Fprintln(os.Stderr, "goclient driver:", err)
		os.Exit(2)
	}
	srv.ServeCodec(jsonrpc.NewServerCodec(goclient.Conn(
		exitAtEnd{os.NewFile(goclient.FDRequests, "requests")}, os.NewFile(goclient.FDAnswers, "answers"))))
	os.Exit(0)
}

// exitAtEnd ends the process when the requests end: the test closed its end, or its process is
// gone (a crash, a test timeout) without killing the driver. ServeCodec would first wait for the
// calls in flight, which may wait for the client's own timeouts.
type exitAtEnd struct {
	io.ReadCloser
}

func (r exitAtEnd) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	if err != nil {
		os.Exit(0)
	}
	return n, nil
}
