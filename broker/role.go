package broker

import (
	"fmt"
	"net"
	"strconv"

	"github.com/ringmq/ringmq/ha"
	"github.com/ringmq/ringmq/internal/conf"
)

// BrokerRole is brokerRole (PROTOCOL.md §13.1), RocketMQ's BrokerRole.
//
// A master (ASYNC_MASTER, SYNC_MASTER) has brokerId 0 and serves writes; a SYNC_MASTER's
// sends also wait for a slave's acknowledgement. A SLAVE (brokerId > 0) shares its master's
// brokerClusterName and brokerName, replicates its CommitLog over the HA port and serves
// reads only: it refuses topic and subscription-group changes (admin.SlaveRemark), sends
// (the store refuses every put), send-backs and END_TRANSACTION, and runs neither the
// delay-level scheduler nor the transaction check-back.
type BrokerRole uint8

// Broker roles.
const (
	RoleAsyncMaster BrokerRole = iota
	RoleSyncMaster
	RoleSlave
)

var brokerRoleNames = []string{"ASYNC_MASTER", "SYNC_MASTER", "SLAVE"}

// String returns RocketMQ's spelling.
func (r BrokerRole) String() string { return enumName(brokerRoleNames, int(r), "BrokerRole") }

// EnumValues lists the brokerRole spellings (conf.Enum).
func (BrokerRole) EnumValues() []string { return append([]string(nil), brokerRoleNames...) }

// MarshalText returns RocketMQ's spelling.
func (r BrokerRole) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads brokerRole as RocketMQ does (BrokerRole.valueOf): exactly ASYNC_MASTER,
// SYNC_MASTER or SLAVE.
func (r *BrokerRole) UnmarshalText(text []byte) error {
	i, err := conf.ParseEnum(string(text), brokerRoleNames...)
	if err != nil {
		return err
	}
	*r = BrokerRole(i)
	return nil
}

// IsSlave reports whether brokerRole is SLAVE.
func (c *Config) IsSlave() bool { return c.BrokerRole == RoleSlave }

// IsSyncMaster reports whether brokerRole is SYNC_MASTER (sends wait for a slave's ack).
func (c *Config) IsSyncMaster() bool { return c.BrokerRole == RoleSyncMaster }

// HAServerConfig is the master's HA listener configuration, listening on listenAddr
// (host:haListenPort; port 0 picks one).
func (c *Config) HAServerConfig(listenAddr string) ha.ServerConfig {
	return c.Settings.ServerConfig(listenAddr)
}

// HAClientConfig is a slave's HA client configuration. MasterAddr is haMasterAddress; when
// it is empty the client waits for an address learnt from the name servers.
func (c *Config) HAClientConfig() ha.ClientConfig { return c.Settings.ClientConfig() }

// HAReplicasConfig is a SYNC_MASTER's acknowledgement-wait configuration.
func (c *Config) HAReplicasConfig() ha.ReplicasConfig { return c.Settings.ReplicasConfig() }

// validateHA checks the replication keys (Validate).
func (c *Config) validateHA() error {
	bad := func(key, problem, allowed string) error {
		return fmt.Errorf("%w: %w", ErrConfig, conf.Invalid(c, key, problem, allowed))
	}
	switch {
	case c.HAListenPort < 0 || c.HAListenPort > 65535:
		return bad("haListenPort", "", "")
	case c.HAListenPort != 0 && c.HAListenPort == c.ListenPort:
		return bad("haListenPort", "must differ from listenPort", "")
	case c.HAListenPort == 0 && c.ListenPort == 65535:
		return bad("haListenPort", "listenPort + 1 is past 65535; set haListenPort", "")
	case c.HASendHeartbeatInterval <= 0:
		return bad("haSendHeartbeatInterval", "", "")
	case c.HAHousekeepingInterval <= c.HASendHeartbeatInterval:
		return bad("haHousekeepingInterval", "", fmt.Sprintf("more than haSendHeartbeatInterval (%d)",
			c.HASendHeartbeatInterval.Milliseconds()))
	case c.HATransferBatchSize < 1 || c.HATransferBatchSize > ha.MaxFrameBodyBytes:
		return bad("haTransferBatchSize", "", fmt.Sprintf("1..%d", ha.MaxFrameBodyBytes))
	case c.HASlaveFallbehindMax <= 0:
		return bad("haSlaveFallbehindMax", "", "")
	case c.SlaveTimeout <= 0:
		return bad("slaveTimeout", "", "")
	}
	if c.HAMasterAddress != "" {
		host, port, err := net.SplitHostPort(c.HAMasterAddress)
		if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			return bad("haMasterAddress", "not ip:port of the master's HA listener", "")
		}
	}
	return nil
}

// forceMasterID sets a master's brokerId to 0, as RocketMQ's BrokerStartup does, and
// returns the id it replaced (0 when nothing changed).
func (c *Config) forceMasterID() int64 {
	if c.IsSlave() || c.BrokerID == 0 {
		return 0
	}
	id := c.BrokerID
	c.BrokerID = 0
	return id
}

// resolveHAListenPort fixes haListenPort 0 once listenPort is known: listenPort + 1, or
// pick() when listenPort was 0 (tests pick free ports for both).
func (c *Config) resolveHAListenPort(listenPortWasZero bool, pick func() (int, error)) error {
	if c.HAListenPort != 0 {
		return nil
	}
	if listenPortWasZero {
		port, err := pick()
		if err != nil {
			return fmt.Errorf("%w: key haListenPort: %w", ErrConfig, err)
		}
		c.HAListenPort = port
		return nil
	}
	if c.ListenPort+1 > 65535 {
		return fmt.Errorf("%w: key haListenPort: listenPort + 1 is past 65535; set haListenPort", ErrConfig)
	}
	c.HAListenPort = c.ListenPort + 1
	return nil
}

// resolveFastListenPort fixes fastListenPort -1 once listenPort is known: listenPort − 2, or
// off (0) when listenPort was 0 (tests) or listenPort − 2 is not a port. It returns whether the
// port was defaulted: a defaulted fast port that cannot be bound only costs a warning.
func (c *Config) resolveFastListenPort(listenPortWasZero bool) (defaulted bool, err error) {
	if c.FastListenPort == -1 {
		c.FastListenPort = 0
		if !listenPortWasZero && c.ListenPort-2 >= 1 {
			c.FastListenPort, defaulted = c.ListenPort-2, true
		}
	}
	if c.FastListenPort != 0 && (c.FastListenPort == c.ListenPort || c.FastListenPort == c.HAListenPort) {
		if defaulted { // e.g. haListenPort = listenPort - 2: the operator chose that port for HA
			c.FastListenPort = 0
			return false, nil
		}
		return false, fmt.Errorf("%w: key fastListenPort: %d is listenPort or haListenPort", ErrConfig, c.FastListenPort)
	}
	return defaulted, nil
}
