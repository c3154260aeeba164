package ha

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/flush"
)

// TestDefaultConfigs: the default tags give RocketMQ's values, as the constructors wrote them
// before the defaults moved next to the keys (issue 15 item 4).
func TestDefaultConfigs(t *testing.T) {
	require.Equal(t, ServerConfig{ListenAddr: "h:1", TransferBatchSize: 32 << 10, CatchUpBatchSize: 1 << 20, HeartbeatInterval: 5 * time.Second,
		HousekeepingInterval: 20 * time.Second}, DefaultServerConfig("h:1"))
	require.Equal(t, ClientConfig{MasterAddr: "m:2", HeartbeatInterval: 5 * time.Second, HousekeepingInterval: 20 * time.Second,
		ReconnectInterval: 5 * time.Second, DialTimeout: 3 * time.Second}, DefaultClientConfig("m:2"))
	require.Equal(t, ReplicasConfig{SlaveTimeout: 3 * time.Second, FallBehindMax: 256 << 20,
		WaiterQueueMax: flush.DefaultGroupCommitConfig().WaiterQueueMax}, DefaultReplicasConfig())
}
