package ha

import (
	"time"

	"github.com/ringmq/ringmq/flush"
	"github.com/ringmq/ringmq/internal/conf"
)

// Settings are the replication keys of broker.conf (PROTOCOL.md §13.6), a settings struct
// (internal/conf): the broker's Config embeds it, so each key sets its field here directly,
// and each default is the default tag next to its field. The fields are named after their
// keys so that they read the same in the broker's Config. haListenPort is the broker's: it
// derives it from listenPort and passes the address to ServerConfig.
//
// ServerConfig, ClientConfig and ReplicasConfig build each component's configuration from
// them; DefaultServerConfig, DefaultClientConfig and DefaultReplicasConfig are those of
// DefaultSettings.
type Settings struct {
	HAMasterAddress         string        `prop:"haMasterAddress" group:"HA" allowed:"empty or ip:port" help:"slave: fixed ip:port of the master's HA listener; empty: learnt from the name servers"`
	HASendHeartbeatInterval time.Duration `prop:"haSendHeartbeatInterval" group:"HA" allowed:"1 or more" unit:"ms" default:"5000" help:"slave report and master heartbeat period on an idle HA connection"`
	HAHousekeepingInterval  time.Duration `prop:"haHousekeepingInterval" group:"HA" allowed:"more than haSendHeartbeatInterval" unit:"ms" default:"20000" help:"an HA connection idle this long is closed; must exceed haSendHeartbeatInterval"`
	HATransferBatchSize     int           `prop:"haTransferBatchSize" group:"HA" allowed:"1..4194304" default:"32768" help:"largest CommitLog chunk in one HA transfer frame (bytes)"`
	HASlaveFallbehindMax    int64         `prop:"haSlaveFallbehindMax" group:"HA" allowed:"1 or more" default:"268435456" help:"SYNC_MASTER: a slave further behind than this (bytes) does not count as available"`
	SlaveTimeout            time.Duration `prop:"slaveTimeout" group:"HA" allowed:"1 or more" unit:"ms" default:"3000" help:"SYNC_MASTER: how long a send waits for a slave's acknowledgement"`
}

// DefaultSettings returns RocketMQ's defaults (the default tags).
func DefaultSettings() Settings {
	var s Settings
	conf.SetDefaults(&s)
	return s
}

// Settings that are not broker.conf keys.
const (
	clientReconnectInterval = 5 * time.Second // RocketMQ's HAClient waits 5 s after a failure
	clientDialTimeout       = 3 * time.Second
)

// ServerConfig is the master's HA listener configuration, listening on listenAddr
// (host:haListenPort; port 0 picks one).
func (s *Settings) ServerConfig(listenAddr string) ServerConfig {
	return ServerConfig{ListenAddr: listenAddr, TransferBatchSize: s.HATransferBatchSize,
		CatchUpBatchSize: catchUpBatchSize, HeartbeatInterval: s.HASendHeartbeatInterval,
		HousekeepingInterval: s.HAHousekeepingInterval}
}

// ClientConfig is a slave's HA client configuration. MasterAddr is haMasterAddress; when it is
// empty the client waits for an address learnt from the name servers.
func (s *Settings) ClientConfig() ClientConfig {
	return ClientConfig{MasterAddr: s.HAMasterAddress, HeartbeatInterval: s.HASendHeartbeatInterval,
		HousekeepingInterval: s.HAHousekeepingInterval, ReconnectInterval: clientReconnectInterval,
		DialTimeout: clientDialTimeout}
}

// ReplicasConfig is a SYNC_MASTER's acknowledgement-wait configuration; its waiter queue is
// bounded as the flush group commit's.
func (s *Settings) ReplicasConfig() ReplicasConfig {
	return ReplicasConfig{SlaveTimeout: s.SlaveTimeout, FallBehindMax: s.HASlaveFallbehindMax,
		WaiterQueueMax: flush.DefaultGroupCommitConfig().WaiterQueueMax}
}

// catchUpBatchSize is how large frames grow while a slave is behind (ServerConfig.CatchUpBatchSize):
// no broker key sets it (RocketMQ has none).
const catchUpBatchSize = 1 << 20
