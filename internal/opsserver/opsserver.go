// Package opsserver is the operators' HTTP endpoint of a ringmq process: Prometheus metrics,
// the Go profiler and two probes.
//
//	/metrics        Prometheus text exposition of the process's registry
//	/debug/pprof/   net/http/pprof (index, cmdline, profile, symbol, trace, and the named profiles)
//	/livez          liveness: 200 when every liveness check passes, else 503 (restart me)
//	/healthz        the same as /livez (the name earlier releases served; probes keep working)
//	/readyz         readiness: 200 when every readiness check passes, else 503 (send me no traffic)
//
// The probes answer a JSON body listing every check, so that a 503 names what failed:
//
//	{"status":"fail","checks":[{"name":"store_failed","ok":false,"detail":"store running flags NOT_WRITEABLE: ..."}, ...]}
//
// The probes call the Checker on the request's goroutine: its checks must read atomics and
// clocks only, never take a data-path lock or touch the disk (a probe that hangs behind a
// stuck disk is worse than none: nats-server#8434).
package opsserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check is the outcome of one probe check.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Checker answers the probes. Implementations must be safe for concurrent use and must not
// block (see the package doc).
type Checker interface {
	// Live lists the liveness checks (/livez, /healthz): they fail only when the process cannot
	// make progress, so that a restart is the cure.
	Live() []Check
	// Ready lists the readiness checks (/readyz).
	Ready() []Check
}

// Pending is a Checker for a process still starting: until Set gives it the real Checker, the
// readiness probe fails with the check "started" and the liveness probe passes with it (a
// recovery in progress is progress: restarting it would only start it over). Safe for
// concurrent use.
type Pending struct {
	c atomic.Pointer[Checker]
}

// Set makes c answer the probes from now on.
func (p *Pending) Set(c Checker) { p.c.Store(&c) }

func (p *Pending) Live() []Check {
	if c := p.c.Load(); c != nil {
		return (*c).Live()
	}
	return []Check{starting}
}

func (p *Pending) Ready() []Check {
	if c := p.c.Load(); c != nil {
		return (*c).Ready()
	}
	return []Check{notStarted}
}

var (
	notStarted = Check{Name: "started", OK: false, Detail: "starting (a broker recovers its store first)"}
	starting   = Check{Name: "started", OK: true, Detail: "starting (a broker recovers its store first)"}
)

// Server serves the endpoints on one listener. Create with Start; Close it (again: a no-op).
type Server struct {
	addr     string
	mux      *http.ServeMux
	srv      *http.Server
	done     chan error
	once     sync.Once
	closeErr error
}

// Start listens on addr (host:port; port 0 picks one) and serves gatherer's metrics, pprof, and
// checker's probes (nil checker: both probes answer 200 with no checks).
func Start(addr string, gatherer prometheus.Gatherer, checker Checker) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := Handler(gatherer, checker)
	s := &Server{addr: ln.Addr().String(), mux: mux, done: make(chan error, 1),
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Handler is the endpoints' mux, for callers that run their own http.Server.
func Handler(gatherer prometheus.Gatherer, checker Checker) *http.ServeMux {
	mux := http.NewServeMux()
	var reg prometheus.Registerer
	if r, ok := gatherer.(prometheus.Registerer); ok {
		reg = r // promhttp counts its own scrape errors there
	}
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/livez", probe(checker, Checker.Live))
	mux.HandleFunc("/healthz", probe(checker, Checker.Live))
	mux.HandleFunc("/readyz", probe(checker, Checker.Ready))
	return mux
}

// Handle adds an endpoint (a diagnostic the caller owns, e.g. /debug/hiccups); safe while serving.
func (s *Server) Handle(pattern string, h http.Handler) { s.mux.Handle(pattern, h) }

// probeBody is a probe's answer.
type probeBody struct {
	Status string  `json:"status"` // "ok" or "fail"
	Checks []Check `json:"checks"`
}

func probe(checker Checker, checks func(Checker) []Check) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body := probeBody{Status: "ok", Checks: []Check{}}
		if checker != nil {
			if cs := checks(checker); cs != nil {
				body.Checks = cs
			}
		}
		status := http.StatusOK
		for _, c := range body.Checks {
			if !c.OK {
				body.Status, status = "fail", http.StatusServiceUnavailable
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_ = json.NewEncoder(w).Encode(body) // a client gone away is nothing to report
		}
	}
}

// Addr is the address the server listens on (the actual port when addr had port 0).
func (s *Server) Addr() string { return s.addr }

// Close stops the server, waiting up to 5 s for requests in progress. Later calls return the first
// call's result.
func (s *Server) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if serveErr := <-s.done; serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
			err = errors.Join(err, serveErr)
		}
		s.closeErr = err
	})
	return s.closeErr
}

// ListenAddr reads a metricsAddr setting, the same way in every ringmq binary: host:port (port
// 0..65535, 0 picks a free one; an empty host listens on every interface), or empty or "off" (any
// letter case) for no endpoint, which ListenAddr returns as "". Anything else is an error saying
// what is accepted.
func ListenAddr(setting string) (string, error) {
	if setting == "" || strings.EqualFold(setting, "off") {
		return "", nil
	}
	_, port, err := net.SplitHostPort(setting)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port, empty or off", setting)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("%q: the port must be 0..65535", setting)
	}
	return setting, nil
}
