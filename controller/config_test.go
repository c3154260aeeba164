package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/internal/conf"
)

func TestParsePeers(t *testing.T) {
	peers, err := ParsePeers(" n0-127.0.0.1:9878; n1-[::1]:9868;n2-host:9858;")
	require.NoError(t, err)
	require.Equal(t, Peers{{"n0", "127.0.0.1:9878"}, {"n1", "[::1]:9868"}, {"n2", "host:9858"}}, peers)
	require.Equal(t, "n0-127.0.0.1:9878;n1-[::1]:9868;n2-host:9858", FormatPeers(peers))

	for in, want := range map[string]string{
		"":                              "controllerPeers is empty",
		"n0":                            `controllerPeers entry "n0": want id-host:port`,
		"-127.0.0.1:9878":               `controllerPeers entry "-127.0.0.1:9878": want id-host:port`,
		"n0-127.0.0.1":                  `controllerPeers entry "n0-127.0.0.1": address 127.0.0.1: missing port in address`,
		"n0-127.0.0.1:1;n0-127.0.0.1:2": `controllerPeers: id "n0" twice`,
	} {
		_, err := ParsePeers(in)
		require.ErrorIs(t, err, ErrConfig, in)
		require.ErrorContains(t, err, want, in)
	}
}

func TestConfigKeysAndDefaults(t *testing.T) {
	c := DefaultConfig()
	require.False(t, c.ElectUncleanMaster)
	require.True(t, c.NotifyBrokerRoleChanged)
	require.Equal(t, 5*time.Second, c.ScanNotActiveBrokerInterval)
	require.Equal(t, 10*time.Second, c.BrokerHeartbeatTimeout)
	require.Equal(t, 3, c.ElectMasterMaxRetryCount)
	require.Equal(t, time.Second, c.RaftHeartbeatTimeout)
	require.Equal(t, ":9879", c.ListenAddr)

	for key, value := range map[string]string{"controllerPeers": "n0-127.0.0.1:9878", "controllerSelfId": "n0",
		"controllerStorePath": "/data/c", "controllerHeartBeatTimeoutMills": "3000"} {
		found, err := conf.Set(&c, key, value)
		require.True(t, found, key)
		require.NoError(t, err, key)
	}
	require.NoError(t, c.Validate())
	require.Equal(t, 3*time.Second, c.BrokerHeartbeatTimeout)
	got, ok := conf.Get(&c, "controllerPeers")
	require.True(t, ok)
	require.Equal(t, "n0-127.0.0.1:9878", got)

	for _, tc := range []struct {
		mutate func(*Config)
		want   string
	}{
		{func(c *Config) { c.SelfID = "n9" }, `controllerSelfId "n9" is not in controllerPeers "n0-127.0.0.1:9878"`},
		{func(c *Config) { c.StorePath = "" }, "controllerStorePath is empty"},
		{func(c *Config) { c.ScanNotActiveBrokerInterval = 0 }, "scanNotActiveBrokerInterval 0s must be positive"},
		{func(c *Config) { c.BrokerHeartbeatTimeout = -time.Second }, "controllerHeartBeatTimeoutMills -1s must be positive"},
		{func(c *Config) { c.ElectMasterMaxRetryCount = 0 }, "electMasterMaxRetryCount 0 must be positive"},
		{func(c *Config) { c.NetEngine = "epoll" }, `netEngine "epoll": want gnet or std`},
	} {
		bad := c
		tc.mutate(&bad)
		err := bad.Validate()
		require.ErrorIs(t, err, ErrConfig, tc.want)
		require.ErrorContains(t, err, tc.want)
	}
}
