package broker

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/ha"
)

// Each replication key as RocketMQ spells it reaches its field and the ha package's configs.
func TestHAConfigKeys(t *testing.T) {
	c := DefaultConfig()
	require.Equal(t, ha.DefaultServerConfig("x:1"), c.HAServerConfig("x:1"), "defaults are RocketMQ's, as ha's")
	require.Equal(t, ha.DefaultClientConfig(""), c.HAClientConfig())
	require.Equal(t, ha.DefaultReplicasConfig(), c.HAReplicasConfig())
	require.False(t, c.IsSlave())
	require.False(t, c.IsSyncMaster())

	for _, kv := range [][2]string{
		{"brokerRole", "SLAVE"},
		{"brokerId", "2"},
		{"haListenPort", "20912"},
		{"haMasterAddress", "10.0.0.1:10912"},
		{"haSendHeartbeatInterval", "1000"},
		{"haHousekeepingInterval", "7000"},
		{"haTransferBatchSize", "65536"},
		{"haSlaveFallbehindMax", "1048576"},
		{"slaveTimeout", "1500"},
		{"brokerIP2", "10.0.0.9"},
	} {
		w, err := c.Set(kv[0], kv[1], 1)
		require.NoError(t, err, kv[0])
		require.Nil(t, w, "%s is read, not reported", kv[0])
		got, ok := c.Get(kv[0])
		require.True(t, ok)
		require.Equal(t, kv[1], got, kv[0])
	}
	require.NoError(t, c.Validate())
	require.True(t, c.IsSlave())
	require.Equal(t, int64(2), c.BrokerID)
	require.Equal(t, 20912, c.HAListenPort)
	require.Equal(t, "10.0.0.9", c.BrokerIP2)

	require.Equal(t, ha.ServerConfig{ListenAddr: "0.0.0.0:20912", TransferBatchSize: 65536,
		CatchUpBatchSize: ha.DefaultServerConfig("").CatchUpBatchSize, HeartbeatInterval: time.Second,
		HousekeepingInterval: 7 * time.Second}, c.HAServerConfig("0.0.0.0:20912"))
	cc := ha.DefaultClientConfig("10.0.0.1:10912")
	cc.HeartbeatInterval, cc.HousekeepingInterval = time.Second, 7*time.Second
	require.Equal(t, cc, c.HAClientConfig())
	rc := ha.DefaultReplicasConfig()
	rc.SlaveTimeout, rc.FallBehindMax = 1500*time.Millisecond, 1<<20
	require.Equal(t, rc, c.HAReplicasConfig())
	require.NoError(t, c.HAServerConfig("0.0.0.0:0").Validate())
	require.NoError(t, c.HAClientConfig().Validate())

	c = DefaultConfig()
	_, err := c.Set("brokerRole", "SYNC_MASTER", 1)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.True(t, c.IsSyncMaster())
	require.False(t, c.IsSlave())
}

func TestHAConfigErrorsNameTheKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		kv   [][2]string
		want string
	}{
		{"slave with id 0", [][2]string{{"brokerRole", "SLAVE"}}, `key brokerId = "0": a SLAVE needs brokerId > 0`},
		{"slave with id -1", [][2]string{{"brokerRole", "SLAVE"}, {"brokerId", "-1"}}, `key brokerId = "-1": a SLAVE needs brokerId > 0`},
		{"unknown role", [][2]string{{"brokerRole", "slave"}}, `key brokerRole = "slave"; allowed: ASYNC_MASTER, SYNC_MASTER or SLAVE`},
		{"ha port range", [][2]string{{"haListenPort", "70000"}}, "key haListenPort"},
		{"ha port is listenPort", [][2]string{{"haListenPort", "10911"}}, `key haListenPort = "10911": must differ from listenPort`},
		{"no room for listenPort+1", [][2]string{{"listenPort", "65535"}}, "key haListenPort"},
		{"heartbeat", [][2]string{{"haSendHeartbeatInterval", "0"}}, "key haSendHeartbeatInterval"},
		{"housekeeping", [][2]string{{"haHousekeepingInterval", "5000"}}, "key haHousekeepingInterval"},
		{"batch", [][2]string{{"haTransferBatchSize", "0"}}, "key haTransferBatchSize"},
		{"batch too big", [][2]string{{"haTransferBatchSize", fmt.Sprint(ha.MaxFrameBodyBytes + 1)}}, "key haTransferBatchSize"},
		{"fall behind", [][2]string{{"haSlaveFallbehindMax", "0"}}, "key haSlaveFallbehindMax"},
		{"slave timeout", [][2]string{{"slaveTimeout", "0"}}, "key slaveTimeout"},
		{"master address", [][2]string{{"haMasterAddress", "10.0.0.1"}}, "key haMasterAddress"},
		{"master address port", [][2]string{{"haMasterAddress", "10.0.0.1:x"}}, "key haMasterAddress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			var err error
			for _, kv := range tc.kv {
				if _, err = c.Set(kv[0], kv[1], 1); err != nil {
					require.Equal(t, "brokerRole", kv[0], "only the enum is refused when it is read")
					break
				}
			}
			if err == nil {
				err = c.Validate()
			}
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
	_, err := (&Config{}).Set("haTransferBatchSize", "lots", 1)
	require.ErrorContains(t, err, "key haTransferBatchSize")
}

// A master's brokerId is forced to 0 at start, as RocketMQ's BrokerStartup does; a slave
// keeps its id. haListenPort 0 becomes listenPort + 1, or a free port when listenPort was 0.
func TestRoleStartupIDsAndHAPort(t *testing.T) {
	port := pickPortBeforeFree(t) // the master binds its HA port, listenPort + 1, in New
	b := startCtlBroker(t, nil, func(c *Config) {
		c.ListenPort = port
		c.HAListenPort = 0 // derived: listenPort + 1
		c.BrokerID = 3
		c.BrokerRole = RoleSyncMaster
	}, nil)
	require.Equal(t, int64(0), b.Config().BrokerID)
	require.Equal(t, port+1, b.Config().HAListenPort)
	require.Equal(t, fmt.Sprintf("127.0.0.1:%d", port+1), b.HAServerAddr())

	s := startCtlBroker(t, nil, func(c *Config) {
		c.BrokerID = 2
		c.BrokerRole = RoleSlave
		c.BrokerIP2 = "127.0.0.2"
		c.HAListenPort = 31000
	}, nil)
	require.Equal(t, int64(2), s.Config().BrokerID)
	require.Equal(t, "127.0.0.2:31000", s.HAServerAddr())
	require.Equal(t, 30, s.Config().AccessMessageInMemoryMaxRatio, "a slave lowers it by 10")

	tb := startTestBroker(t, nil) // listenPort 0
	hp := tb.b.Config().HAListenPort
	require.NotZero(t, hp)
	require.NotEqual(t, tb.b.Config().ListenPort, hp)
}
