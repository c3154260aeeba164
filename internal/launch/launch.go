// Package launch wires a broker with what package broker does not import: the embedded name
// server (namesrvEmbedded=true, on by default), built from package namesrv. cmd/mqbroker starts
// its broker through New; so do tests outside package broker that need a name server.
package launch

import (
	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/namesrv"
)

// New is broker.New with deps.Namesrv set to Namesrv when it is nil.
func New(cfg broker.Config, deps broker.Deps) (*broker.Broker, error) {
	if deps.Namesrv == nil {
		deps.Namesrv = Namesrv
	}
	return broker.New(cfg, deps)
}

// Namesrv builds the embedded name server the broker asks for (a broker.NewEmbeddedNamesrvFunc)
// with namesrv.NewEmbedded.
func Namesrv(spec broker.EmbeddedNamesrvSpec) (broker.EmbeddedNamesrv, error) {
	ns, err := namesrv.NewEmbedded(spec.ListenAddr, spec.NetEngine, spec.KVConfigPath, spec.Logger, spec.Registerer)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return ns, nil
}
