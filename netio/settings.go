package netio

import (
	"fmt"
	"strconv"

	"github.com/ringmq/ringmq/internal/conf"
)

// ServerSettings are the remoting server's keys in broker.conf (netEngine, netEventLoops,
// maxConnections, requestBudgetBytes and TLS), with their defaults written once, in their
// tags; broker.Config embeds them and Apply carries them onto a Config. The other Config
// fields have no key (RocketMQ has none for them either) and keep DefaultConfig's values.
type ServerSettings struct {
	NetEngine     NetEngine `prop:"netEngine" group:"network" default:"gnet" help:"network engine: gnet runs event loops, std a goroutine per connection"`
	NetEventLoops int       `prop:"netEventLoops" group:"network" allowed:"0 or more" help:"gnet event loops; 0: GOMAXPROCS"`
	// MaxConnections stays below the usual 20000 open-file limit: an accept failing with
	// EMFILE stops gnet's acceptor for good.
	MaxConnections int `prop:"maxConnections" group:"limits" allowed:"0 or more" default:"10000" help:"client connections open at once; one more is closed at accept (0: no limit)"`
	// RequestBudgetBytes (budget.go): four maximal 16 MiB frames, or fifteen maximal 4 MiB
	// messages, are read and decoded at once; a frame that does not fit waits and its
	// connection stops reading meanwhile.
	RequestBudgetBytes int64 `prop:"requestBudgetBytes" group:"limits" allowed:"1 or more" default:"67108864" help:"bytes of requests over 64 KiB read and decoded at once, over all connections; more wait, their connections not read meanwhile"`
	// TLS (RocketMQ sets these as JVM properties tls.server.mode, tls.server.certPath,
	// tls.server.keyPath). tlsEnable=true alone means enforcing; tlsServerMode says it
	// explicitly, permissive serving plain and TLS clients on the same port.
	TLSEnable     bool          `prop:"tlsEnable" group:"ACL/TLS" help:"serve TLS on listenPort (enforcing unless tlsServerMode says otherwise)"`
	TLSServerMode TLSServerMode `prop:"tlsServerMode" group:"ACL/TLS" help:"TLS on listenPort: permissive serves plain and TLS clients, enforcing TLS only; empty: enforcing with tlsEnable=true, else disabled"`
	TLSCertFile   string        `prop:"tlsCertFile" group:"ACL/TLS" help:"PEM certificate chain for TLS"`
	TLSKeyFile    string        `prop:"tlsKeyFile" group:"ACL/TLS" help:"PEM private key for TLS"`
}

// DefaultServerSettings returns the settings' defaults (their default tags).
func DefaultServerSettings() ServerSettings {
	var s ServerSettings
	conf.SetDefaults(&s)
	return s
}

// EffectiveTLSMode is the TLS mode (TLSDisabled, TLSPermissive or TLSEnforcing):
// tlsServerMode when set, else enforcing with tlsEnable=true and disabled without.
func (s *ServerSettings) EffectiveTLSMode() string {
	switch {
	case s.TLSServerMode != TLSModeUnset:
		return s.TLSServerMode.String()
	case s.TLSEnable:
		return TLSEnforcing
	default:
		return TLSDisabled
	}
}

// Validate names the first bad key (a *conf.ValueError wrapped with ErrConfig). The enums
// were checked when their keys were read.
func (s *ServerSettings) Validate() error {
	bad := func(key string, v any, allowed string) error {
		return fmt.Errorf("%w: %w", ErrConfig, &conf.ValueError{Key: key, Value: fmt.Sprint(v), Allowed: allowed})
	}
	switch {
	case s.NetEventLoops < 0:
		return bad("netEventLoops", s.NetEventLoops, "0 or more")
	case s.MaxConnections < 0:
		return bad("maxConnections", s.MaxConnections, "0 or more")
	case s.RequestBudgetBytes <= 0:
		return bad("requestBudgetBytes", s.RequestBudgetBytes, "1 or more")
	case s.TLSServerMode == TLSModeDisabled && s.TLSEnable:
		return bad("tlsServerMode", s.TLSServerMode, "not disabled with tlsEnable=true")
	}
	if s.EffectiveTLSMode() != TLSDisabled {
		if s.TLSCertFile == "" {
			return bad("tlsCertFile", "", "the PEM certificate's path when TLS is on")
		}
		if s.TLSKeyFile == "" {
			return bad("tlsKeyFile", "", "the PEM private key's path when TLS is on")
		}
	}
	return nil
}

// Apply sets c's engine, event loops, connection cap, request budget and TLS from s,
// loading the certificate and key when TLS is on.
func (s *ServerSettings) Apply(c *Config) error {
	c.Engine = s.NetEngine.String()
	c.EventLoops = s.NetEventLoops
	c.MaxConnections = s.MaxConnections
	c.RequestBudgetBytes = s.RequestBudgetBytes
	c.TLSMode, c.TLS = TLSDisabled, nil
	if mode := s.EffectiveTLSMode(); mode != TLSDisabled {
		tlsCfg, err := LoadServerTLS(s.TLSCertFile, s.TLSKeyFile)
		if err != nil {
			return fmt.Errorf("%w: keys tlsCertFile, tlsKeyFile: %w", ErrConfig, err)
		}
		c.TLSMode, c.TLS = mode, tlsCfg
	}
	return nil
}

// NetEngine is netEngine: which engine serves connections (Config.Engine's names).
type NetEngine uint8

// Network engines.
const (
	NetEngineGnet NetEngine = iota // event loops (gnet)
	NetEngineStd                   // a goroutine per connection (net package)
)

var netEngineNames = []string{EngineGnet, EngineStd}

// String is the netEngine spelling, Config.Engine's name.
func (e NetEngine) String() string { return enumName(netEngineNames, int(e), "NetEngine") }

// EnumValues lists the netEngine spellings (conf.Enum).
func (NetEngine) EnumValues() []string { return append([]string(nil), netEngineNames...) }

// MarshalText is the netEngine spelling.
func (e NetEngine) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// UnmarshalText reads netEngine: gnet or std.
func (e *NetEngine) UnmarshalText(text []byte) error {
	i, err := conf.ParseEnum(string(text), netEngineNames...)
	if err != nil {
		return err
	}
	*e = NetEngine(i)
	return nil
}

// TLSServerMode is tlsServerMode. Unset (empty in the file) leaves the mode to tlsEnable
// (EffectiveTLSMode).
type TLSServerMode uint8

// TLS server modes (tls.go).
const (
	TLSModeUnset      TLSServerMode = iota
	TLSModeDisabled                 // plain only
	TLSModePermissive               // plain and TLS clients on the same port
	TLSModeEnforcing                // TLS only
)

var tlsModeNames = []string{"", TLSDisabled, TLSPermissive, TLSEnforcing}

// String is the tlsServerMode spelling (Config.TLSMode's), empty when unset.
func (m TLSServerMode) String() string { return enumName(tlsModeNames, int(m), "TLSServerMode") }

// EnumValues lists the tlsServerMode spellings (conf.Enum); empty is also accepted.
func (TLSServerMode) EnumValues() []string { return append([]string(nil), tlsModeNames[1:]...) }

// MarshalText is the tlsServerMode spelling.
func (m TLSServerMode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads tlsServerMode: disabled, permissive, enforcing or empty.
func (m *TLSServerMode) UnmarshalText(text []byte) error {
	if len(text) == 0 {
		*m = TLSModeUnset
		return nil
	}
	i, err := conf.ParseEnum(string(text), tlsModeNames[1:]...)
	if err != nil {
		return err
	}
	*m = TLSServerMode(i + 1)
	return nil
}

func enumName(names []string, i int, typ string) string {
	if i >= 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}
