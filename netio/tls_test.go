package netio

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// testCert is a self-signed certificate for 127.0.0.1, made per test (nothing on disk
// unless a test writes it).
type testCert struct {
	server  *tls.Config    // the server side: the certificate and its key
	roots   *x509.CertPool // trusts exactly that certificate
	certPEM []byte
	keyPEM  []byte
}

func newTestCert(t *testing.T) *testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "ringmq netio test"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return &testCert{
		server:  &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}},
		roots:   roots,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
}

func (c *testCert) client() *tls.Config { return &tls.Config{RootCAs: c.roots} }

// dialRawTLS is dialRaw over TLS (handshake done before it returns).
func dialRawTLS(t *testing.T, addr net.Addr, cfg *tls.Config) rawClient {
	t.Helper()
	return rawClient{Conn: remotingtest.DialTLS(t, addr.String(), cfg), t: t}
}

func withTLS(mode string, cert *testCert) func(*Config) {
	return func(c *Config) {
		c.TLSMode = mode
		c.TLS = cert.server
	}
}

// roundTrips runs echo, async echo and vectored-frame replies (which take the writer
// goroutine's path) over one connection.
func (r rawClient) roundTrips(first int32) {
	r.t.Helper()
	for i, code := range []codec.RequestCode{codeEcho, codeEchoAsync, codeFrame, codeFrameAsync} {
		r.roundTrip(code, first+int32(i), payload(1000*(i+1), byte(i)))
	}
}

// TestTLSEnforcing: TLS clients are served (raw frames and the netio Client), a plain client
// is closed without ever reaching the handler. Both engine settings end up on std.
func TestTLSEnforcing(t *testing.T) {
	cert := newTestCert(t)
	forEachEngine(t, func(t *testing.T, engine string) {
		h := newTestHandler()
		s := startServer(t, engine, h, withTLS(TLSEnforcing, cert))

		rc := dialRawTLS(t, s.Addr(), cert.client())
		rc.roundTrips(1)
		big := payload(3<<20, 7) // many TLS records per frame, both ways
		rc.roundTrip(codeEcho, 10, big)

		cl := newTestClient(t, func(c *ClientConfig) { c.TLS = cert.client() })
		resp, err := cl.Invoke(context.Background(), s.Addr().String(), codec.NewRequest(codeEcho, nil, []byte("via client")))
		require.NoError(t, err)
		require.Equal(t, []byte("via client"), resp.Body)

		plain := dialRaw(t, s.Addr())
		plain.Write(frameOf(t, request(codeEcho, 1, []byte("plain"))))
		plain.ExpectClosed()
		require.Equal(t, int32(2), h.opened.Load(), "only the TLS connections reached the handler")
		testutil.Eventually(t, "two open connections", func() bool { return s.ConnectionCount() == 2 })
	})
}

// TestTLSServerInvoke: the broker's direction (server → client calls) over TLS.
func TestTLSServerInvoke(t *testing.T) {
	cert := newTestCert(t)
	h := newTestHandler()
	s := startServer(t, EngineStd, h, withTLS(TLSEnforcing, cert))
	rc := dialRawTLS(t, s.Addr(), cert.client())
	rc.roundTrip(codeEcho, 1, nil) // OnOpen has run
	done := make(chan *codec.RemotingCommand, 1)
	require.NoError(t, h.conn(0).InvokeAsync(codec.NewRequest(codec.RequestCheckTransactionState, nil, []byte("tx")), waitTimeout,
		func(resp *codec.RemotingCommand, err error) {
			if err == nil {
				done <- resp
			}
			close(done)
		}))
	req := rc.Next()
	require.False(t, req.IsResponse())
	resp := codec.NewResponse(req, codec.ResponseSuccess, "")
	resp.Body = append([]byte("re:"), req.Body...)
	rc.Send(resp)
	got, ok := <-done
	require.True(t, ok, "InvokeAsync failed")
	require.Equal(t, []byte("re:tx"), got.Body)
}

// TestTLSPermissive: plain and TLS clients on the same port, interleaved.
func TestTLSPermissive(t *testing.T) {
	cert := newTestCert(t)
	h := newTestHandler()
	s := startServer(t, EngineGnet, h, withTLS(TLSPermissive, cert))
	plain := dialRaw(t, s.Addr())
	secure := dialRawTLS(t, s.Addr(), cert.client())
	for i := range 3 {
		plain.roundTrips(int32(10 * i))
		secure.roundTrips(int32(10*i + 5))
	}
	// A plain client whose first frame arrives one byte at a time: the sniffed byte is
	// replayed to the frame reader.
	slow := dialRaw(t, s.Addr())
	for _, b := range frameOf(t, request(codeEcho, 77, []byte("slow"))) {
		slow.Write([]byte{b})
	}
	resp := slow.Next()
	require.Equal(t, int32(77), resp.Opaque)
	require.Equal(t, []byte("slow"), resp.Body)
	require.Equal(t, int32(3), h.opened.Load())
	require.Equal(t, int64(3*4*2+1), h.requests.Load())
}

// TestTLSHandshakeTimeout: a client that connects and sends nothing is closed after the
// handshake timeout, in both modes, and the handler never sees it.
func TestTLSHandshakeTimeout(t *testing.T) {
	cert := newTestCert(t)
	for _, mode := range []string{TLSPermissive, TLSEnforcing} {
		t.Run(mode, func(t *testing.T) {
			h := newTestHandler()
			s := startServer(t, EngineStd, h, func(c *Config) {
				withTLS(mode, cert)(c)
				c.TLSHandshakeTimeout = 50 * time.Millisecond
			})
			silent := dialRaw(t, s.Addr())
			silent.ExpectClosed()
			testutil.Eventually(t, "no connection left open", func() bool { return s.ConnectionCount() == 0 })
			require.Equal(t, int32(0), h.opened.Load())
			require.Equal(t, int32(0), h.closed.Load())
		})
	}
}

// TestTLSStopDuringHandshake: Stop does not wait for handshakes in progress (their timeout
// here is an hour; Stop's context is waitTimeout).
func TestTLSStopDuringHandshake(t *testing.T) {
	cert := newTestCert(t)
	for _, mode := range []string{TLSPermissive, TLSEnforcing} {
		t.Run(mode, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Name = t.Name()
			cfg.Engine = EngineStd
			cfg.Addr = "127.0.0.1:0"
			cfg.TLSMode, cfg.TLS, cfg.TLSHandshakeTimeout = mode, cert.server, time.Hour
			s, err := NewServer(cfg, newTestHandler(), testLogger())
			require.NoError(t, err)
			require.NoError(t, s.Start())
			nc, err := net.DialTimeout("tcp", s.Addr().String(), waitTimeout)
			require.NoError(t, err)
			defer nc.Close()
			if mode == TLSEnforcing {
				_, err = nc.Write([]byte{tlsRecordTypeHandshake, 3, 1}) // a ClientHello that never ends
				require.NoError(t, err)
			}
			testutil.Eventually(t, "one open connection", func() bool { return s.ConnectionCount() == 1 })
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			require.NoError(t, s.Stop(ctx))
			require.Equal(t, 0, s.ConnectionCount())
		})
	}
}

// TestTLSClientRejectsUnknownServer: a client that does not trust the server's certificate
// fails to dial; the server closes that connection without the handler seeing it.
func TestTLSClientRejectsUnknownServer(t *testing.T) {
	cert, other := newTestCert(t), newTestCert(t)
	h := newTestHandler()
	s := startServer(t, EngineStd, h, withTLS(TLSEnforcing, cert))
	cl := newTestClient(t, func(c *ClientConfig) { c.TLS = other.client() })
	_, err := cl.Invoke(context.Background(), s.Addr().String(), codec.NewRequest(codeEcho, nil, nil))
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown)
	testutil.Eventually(t, "no connection left open", func() bool { return s.ConnectionCount() == 0 })
	require.Equal(t, int32(0), h.opened.Load())
}

// TestTLSEngineSwapLogged: a gnet config with TLS runs on std and says so once.
func TestTLSEngineSwapLogged(t *testing.T) {
	cert := newTestCert(t)
	var buf syncBuffer
	cfg := DefaultConfig()
	cfg.Name = t.Name()
	cfg.Engine = EngineGnet
	cfg.Addr = "127.0.0.1:0"
	withTLS(TLSEnforcing, cert)(&cfg)
	reg := prometheusRegistry()
	cfg.Registerer = reg
	s, err := NewServer(cfg, newTestHandler(), slog.New(slog.NewTextHandler(&buf, nil)))
	require.NoError(t, err)
	_, isStd := s.(*stdServer)
	require.True(t, isStd)
	require.Equal(t, 1, bytes.Count(buf.bytes(), []byte("serving with the std engine, gnet has no TLS")), buf.String())
	families, err := reg.Gather()
	require.NoError(t, err)
	require.NotEmpty(t, families)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "engine" {
					require.Equal(t, EngineStd, l.GetValue(), f.GetName())
				}
			}
		}
	}
}

func TestTLSConfigValidate(t *testing.T) {
	cert := newTestCert(t)
	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.TLSMode = "sometimes" }, "tlsServerMode"},
		{func(c *Config) { c.TLSMode = TLSEnforcing }, "needs a server certificate"},
		{func(c *Config) { c.TLSMode, c.TLS = TLSPermissive, &tls.Config{} }, "needs a server certificate"},
		{func(c *Config) { withTLS(TLSEnforcing, cert)(c); c.TLSHandshakeTimeout = -1 }, "TLSHandshakeTimeout"},
	} {
		cfg := DefaultConfig()
		tc.mutate(&cfg)
		err := cfg.Validate()
		require.ErrorIs(t, err, ErrConfig)
		require.ErrorContains(t, err, tc.want)
	}
	for _, mode := range []string{"", TLSDisabled} {
		cfg := DefaultConfig()
		cfg.TLSMode = mode // no certificate needed
		require.NoError(t, cfg.Validate())
	}
}

func TestLoadServerTLS(t *testing.T) {
	cert := newTestCert(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, cert.certPEM, 0o600))
	require.NoError(t, os.WriteFile(keyFile, cert.keyPEM, 0o600))
	cfg, err := LoadServerTLS(certFile, keyFile)
	require.NoError(t, err)
	require.Len(t, cfg.Certificates, 1)
	require.Equal(t, uint16(tls.VersionTLS12), cfg.MinVersion)

	s := startServer(t, EngineStd, newTestHandler(), func(c *Config) { c.TLSMode, c.TLS = TLSEnforcing, cfg })
	dialRawTLS(t, s.Addr(), cert.client()).roundTrip(codeEcho, 1, []byte("loaded"))

	_, err = LoadServerTLS(certFile, filepath.Join(dir, "missing.pem"))
	require.ErrorContains(t, err, "missing.pem")
	_, err = LoadServerTLS(keyFile, certFile) // swapped
	require.Error(t, err)
}

// syncBuffer is a bytes.Buffer safe for a logger and a test reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

func (b *syncBuffer) String() string { return string(b.bytes()) }
