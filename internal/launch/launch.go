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

// Namesrv builds the embedded name server the broker asks for (a broker.NewEmbeddedNamesrvFunc): a
// namesrv.Namesrv on the spec's address with one event loop, its load being a few requests per
// client per 30 s.
func Namesrv(spec broker.EmbeddedNamesrvSpec) (broker.EmbeddedNamesrv, error) {
	nc := namesrv.DefaultConfig()
	nc.ListenAddr = spec.ListenAddr
	nc.NetEngine = spec.NetEngine
	nc.NetEventLoops = 1
	nc.KVConfigPath = spec.KVConfigPath
	ns, err := namesrv.New(nc, spec.Logger, spec.Registerer)
	if err != nil {
		return nil, err
	}
	return ns, nil
}
