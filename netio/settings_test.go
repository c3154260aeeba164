package netio

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/conf"
)

// TestServerSettings: the keys' defaults are DefaultConfig's; Validate names the bad key;
// Apply carries the keys onto a Config and refuses TLS without a readable certificate.
func TestServerSettings(t *testing.T) {
	s := DefaultServerSettings()
	require.Equal(t, ServerSettings{NetEngine: NetEngineGnet, MaxConnections: 10000, RequestBudgetBytes: 64 << 20}, s)
	def := DefaultConfig()
	require.Equal(t, EngineGnet, def.Engine)
	require.Equal(t, 10000, def.MaxConnections)
	require.Equal(t, int64(64<<20), def.RequestBudgetBytes)
	require.Equal(t, TLSDisabled, s.EffectiveTLSMode())
	require.NoError(t, s.Validate())

	for _, tc := range []struct {
		key    string
		change func(*ServerSettings)
	}{
		{"netEventLoops", func(s *ServerSettings) { s.NetEventLoops = -1 }},
		{"maxConnections", func(s *ServerSettings) { s.MaxConnections = -1 }},
		{"requestBudgetBytes", func(s *ServerSettings) { s.RequestBudgetBytes = 0 }},
		{"tlsServerMode", func(s *ServerSettings) { s.TLSEnable, s.TLSServerMode = true, TLSModeDisabled }},
		{"tlsCertFile", func(s *ServerSettings) { s.TLSEnable = true }},
		{"tlsKeyFile", func(s *ServerSettings) { s.TLSServerMode, s.TLSCertFile = TLSModePermissive, "c.pem" }},
	} {
		bad := DefaultServerSettings()
		tc.change(&bad)
		err := bad.Validate()
		require.ErrorIs(t, err, ErrConfig, tc.key)
		var ve *conf.ValueError
		require.True(t, errors.As(err, &ve), tc.key)
		require.Equal(t, tc.key, ve.Key)
	}

	s.NetEngine, s.NetEventLoops, s.MaxConnections, s.RequestBudgetBytes = NetEngineStd, 3, 7, 1<<20
	c := DefaultConfig()
	require.NoError(t, s.Apply(&c))
	require.Equal(t, EngineStd, c.Engine)
	require.Equal(t, 3, c.EventLoops)
	require.Equal(t, 7, c.MaxConnections)
	require.Equal(t, int64(1<<20), c.RequestBudgetBytes)

	s.TLSEnable, s.TLSCertFile, s.TLSKeyFile = true, "/nonexistent/c.pem", "/nonexistent/k.pem"
	require.Equal(t, TLSEnforcing, s.EffectiveTLSMode())
	err := s.Apply(&c)
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "tlsCertFile")
}
