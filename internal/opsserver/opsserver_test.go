package opsserver

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeChecker's checks are set by the test.
type fakeChecker struct {
	mu            sync.Mutex
	health, ready []Check
}

func (f *fakeChecker) Live() []Check  { f.mu.Lock(); defer f.mu.Unlock(); return f.health }
func (f *fakeChecker) Ready() []Check { f.mu.Lock(); defer f.mu.Unlock(); return f.ready }

func (f *fakeChecker) set(health, ready []Check) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.health, f.ready = health, ready
}

func get(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a local test server
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

func TestProbesMetricsAndProfiles(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "opsserver_test_total", Help: "A test counter."})
	reg.MustRegister(c)
	c.Add(3)
	checker := &fakeChecker{}
	checker.set([]Check{{Name: "store_writable", OK: true}},
		[]Check{{Name: "store_recovered", OK: true}, {Name: "listeners_up", OK: true}})
	s, err := Start("127.0.0.1:0", reg, checker)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	base := "http://" + s.Addr()

	for _, path := range []string{"/livez", "/healthz"} { // /healthz: /livez's older name, the same answer
		code, ctype, body := get(t, base+path)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "application/json", ctype)
		require.Equal(t, `{"status":"ok","checks":[{"name":"store_writable","ok":true}]}`+"\n", body)
	}

	checker.set([]Check{{Name: "store_writable", OK: false, Detail: "running flags DISK_FULL"},
		{Name: "namesrv_registration", OK: true}}, []Check{{Name: "store_recovered", OK: true}, {Name: "listeners_up", OK: false}})
	for _, path := range []string{"/livez", "/healthz"} {
		code, _, body := get(t, base+path)
		require.Equal(t, http.StatusServiceUnavailable, code)
		require.Equal(t, `{"status":"fail","checks":[{"name":"store_writable","ok":false,"detail":"running flags DISK_FULL"},`+
			`{"name":"namesrv_registration","ok":true}]}`+"\n", body)
	}
	code, _, body := get(t, base+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, `{"status":"fail","checks":[{"name":"store_recovered","ok":true},{"name":"listeners_up","ok":false}]}`+"\n", body)

	code, _, body = get(t, base+"/metrics")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "\nopsserver_test_total 3\n")
	code, _, body = get(t, base+"/debug/pprof/")
	require.Equal(t, http.StatusOK, code)
	require.True(t, strings.Contains(body, "goroutine"), body)
}

func TestNilCheckerIsHealthy(t *testing.T) {
	s, err := Start("127.0.0.1:0", prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	code, _, body := get(t, "http://"+s.Addr()+"/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"ok","checks":[]}`+"\n", body)
}

func TestStartReportsAnAddressInUse(t *testing.T) {
	s, err := Start("127.0.0.1:0", prometheus.NewRegistry(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, err = Start(s.Addr(), prometheus.NewRegistry(), nil)
	require.ErrorContains(t, err, "address already in use")
}

// TestPendingAnswersStartingUntilSet: before Set readiness fails naming the start and liveness
// passes (a recovery is progress); after it the real checker answers. Close twice is fine.
func TestPendingAnswersStartingUntilSet(t *testing.T) {
	p := &Pending{}
	s, err := Start("127.0.0.1:0", prometheus.NewRegistry(), p)
	require.NoError(t, err)
	code, _, body := get(t, "http://"+s.Addr()+"/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, `{"status":"fail","checks":[{"name":"started","ok":false,"detail":"starting (a broker recovers its store first)"}]}`+"\n", body)
	for _, path := range []string{"/livez", "/healthz"} {
		code, _, body := get(t, "http://"+s.Addr()+path)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, `{"status":"ok","checks":[{"name":"started","ok":true,"detail":"starting (a broker recovers its store first)"}]}`+"\n", body)
	}
	checker := &fakeChecker{}
	checker.set([]Check{{Name: "store_writable", OK: true}}, nil)
	p.Set(checker)
	code, _, body = get(t, "http://"+s.Addr()+"/livez")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, `{"status":"ok","checks":[{"name":"store_writable","ok":true}]}`+"\n", body)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
}

// TestListenAddr: metricsAddr's one reading for every binary.
func TestListenAddr(t *testing.T) {
	for setting, want := range map[string]string{"": "", "off": "", "Off": "", "127.0.0.1:9106": "127.0.0.1:9106",
		":0": ":0", "[::1]:9106": "[::1]:9106"} {
		got, err := ListenAddr(setting)
		require.NoError(t, err, setting)
		require.Equal(t, want, got, setting)
	}
	for setting, want := range map[string]string{"on": `"on" is not host:port, empty or off`,
		"127.0.0.1": `"127.0.0.1" is not host:port, empty or off`, "h:70000": `"h:70000": the port must be 0..65535`,
		"h:x": `"h:x": the port must be 0..65535`} {
		_, err := ListenAddr(setting)
		require.EqualError(t, err, want, setting)
	}
}
