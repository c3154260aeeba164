package broker

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/netio"
)

// TLS on the remoting port with the pinned Go client's TLS option (producer.WithTls: it
// dials every address, name servers included, with crypto/tls and InsecureSkipVerify).
//
// The option is process-wide in the pinned client: every client's options point at one
// shared remote.DefaultRemotingClientConfig (internal/client.go), so WithTls on one producer
// sets how every client of its process (here: of the Go-client driver) dials from then on.
// The driver sets it on every client it creates (goclient.ProducerOptions.TLS), so a plain
// producer created after a TLS one dials plain.

// writeTestCertificate writes a fresh self-signed ECDSA certificate for 127.0.0.1 and its
// key as PEM files into dir; roots trusts exactly that certificate.
func writeTestCertificate(t *testing.T, dir string) (certFile, keyFile string, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "ringmq broker test"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, "broker.crt"), filepath.Join(dir, "broker.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots = x509.NewCertPool()
	roots.AddCert(leaf)
	return certFile, keyFile, roots
}

// startTLSFront serves TLS on a loopback port and relays every connection to target in
// plain TCP. It stands in for a TLS name server: the Go client's TLS option applies to its
// name server connections too, and the embedded name server speaks plain TCP only.
func startTLSFront(t *testing.T, target string, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	track := func(c net.Conn) {
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			track(c)
			track(up)
			relay := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				_ = dst.Close()
				_ = src.Close()
			}
			wg.Go(func() { relay(up, c) })
			wg.Go(func() { relay(c, up) })
		}
	})
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// tlsCall sends one GET_MAX_OFFSET to addr over a fresh netio.Client (TLS when cfg is set).
func tlsCall(t *testing.T, addr string, cfg *tls.Config, topic string) (*codec.RemotingCommand, error) {
	t.Helper()
	cc := netio.DefaultClientConfig()
	cc.TLS = cfg
	cl, err := netio.NewClient(cc, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cl.Invoke(ctx, addr, codec.NewRequest(codec.RequestGetMaxOffset, map[string]string{"topic": topic, "queueId": "0"}, nil))
}

func TestTLSGoClientEndToEnd(t *testing.T) {
	testutil.SkipInSecondPass(t)
	if testing.Short() {
		t.Skip("end-to-end with the Go client")
	}
	certFile, keyFile, roots := writeTestCertificate(t, t.TempDir())
	serverCert, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	frontCfg := &tls.Config{Certificates: []tls.Certificate{serverCert}}
	clientCfg := &tls.Config{RootCAs: roots}

	for _, mode := range []string{"enforcing", "permissive"} {
		t.Run(mode, func(t *testing.T) {
			tb := startTestBroker(t, func(c *Config) {
				if mode == "enforcing" {
					c.TLSEnable = true // alone: enforcing
				} else {
					c.TLSServerMode = netio.TLSModePermissive
				}
				c.TLSCertFile, c.TLSKeyFile = certFile, keyFile
				// netEngine stays gnet: the broker serves TLS on the std engine by itself.
			})
			front := startTLSFront(t, tb.NamesrvAddr, frontCfg)
			e := newE2EEnv(t, tb, "tls-"+mode) // after the front: killed before it closes
			topic := "TLSTopic-" + mode

			p := e.producer(t, "PG-tls-"+mode, func(o *goclient.ProducerOptions) {
				o.TLS = true
				o.NameServers = []string{front}
			})
			for i := range 3 {
				sendSync(t, p, primitive.NewMessage(topic, []byte("tls-"+strconv.Itoa(i))))
			}
			testutil.Eventually(t, "three messages stored", func() bool { return queueTotal(tb.b, topic, 8) == 3 })

			resp, err := tlsCall(t, tb.BrokerAddr, clientCfg, topic)
			require.NoError(t, err, "a TLS client that verifies the broker's certificate")
			require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)

			resp, err = tlsCall(t, tb.BrokerAddr, nil, topic)
			if mode == "enforcing" {
				require.True(t, errors.Is(err, netio.ErrConnClosed), "a plain client is closed, got %v", err)
				return
			}
			require.NoError(t, err, "permissive: plain clients too")
			require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
			e.waitRoute(t, topic)
			plain := e.producer(t, "PG-plain-"+mode) // TLS off; through the embedded (plain) name server
			sendSync(t, plain, primitive.NewMessage(topic, []byte("plain")))
			testutil.Eventually(t, "four messages stored", func() bool { return queueTotal(tb.b, topic, 8) == 4 })
		})
	}
}

// TestTLSConfigErrors: a broker with TLS on does not start without a usable certificate.
func TestTLSConfigErrors(t *testing.T) {
	cfg := testBrokerConfig(t)
	cfg.TLSEnable = true
	err := cfg.Validate()
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "tlsCertFile")

	cfg.TLSCertFile, cfg.TLSKeyFile = filepath.Join(t.TempDir(), "missing.crt"), filepath.Join(t.TempDir(), "missing.key")
	_, err = New(cfg, Deps{Logger: testLogger(t), Namesrv: testNamesrv})
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "tlsCertFile")
	require.ErrorContains(t, err, "missing.crt")
}
