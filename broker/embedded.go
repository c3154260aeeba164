package broker

import (
	"context"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"
)

// EmbeddedNamesrv is a name server run in the broker's process (namesrvEmbedded=true). The broker
// builds it through Deps.Namesrv, starts it as one of its services (before registration, so it
// registers with it from the first round), registers with it, and stops it; it does not import
// package namesrv. Package internal/launch builds one from package namesrv.
type EmbeddedNamesrv interface {
	// Start listens on the spec's ListenAddr and serves.
	Start() error
	// Shutdown stops it; called once, after Start.
	Shutdown(ctx context.Context) error
	// Addr is the address it listens on (the actual port when namesrvListenPort was 0).
	Addr() net.Addr
}

// EmbeddedNamesrvSpec is what the broker decides for its embedded name server.
type EmbeddedNamesrvSpec struct {
	// ListenAddr is bindHost:namesrvListenPort (all interfaces, or the loopback brokerIP1).
	ListenAddr string
	// NetEngine is the broker's netEngine.
	NetEngine string
	// KVConfigPath is <storePathRootDir>/namesrv/kvConfig.json: a broker's whole state in one place.
	KVConfigPath string
	// Logger is the broker's.
	Logger *slog.Logger
	// Registerer is the broker's.
	Registerer prometheus.Registerer
}

// NewEmbeddedNamesrvFunc builds the embedded name server from spec (Deps.Namesrv).
type NewEmbeddedNamesrvFunc func(spec EmbeddedNamesrvSpec) (EmbeddedNamesrv, error)
