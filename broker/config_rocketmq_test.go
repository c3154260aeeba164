package broker

import (
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

func allPropertiesMap(c *Config) map[string]string {
	m := map[string]string{}
	c.allProperties(func(k, v string) bool { m[k] = v; return true })
	return m
}

// GET_BROKER_CONFIG lists RocketMQ's keys ringmq has no setting for with the value the
// configuration gave them, else RocketMQ 4.9.8's default (host-dependent ones from this host).
func TestAllPropertiesShowRocketMQKeys(t *testing.T) {
	c := DefaultConfig()
	base := c
	for key, value := range map[string]string{
		"sendMessageThreadPoolNums": "64",    // NotNeededKeys
		"enableDLegerCommitLog":     "false", // RefusedKeys, off
		"commercialEnable":          "false", // ignored with a warning
		"mapedFileSizeCommitLog":    "2097152",
	} {
		_, err := c.Set(key, value, 1)
		require.NoError(t, err, key)
	}
	got := allPropertiesMap(&c)
	require.Equal(t, "64", got["sendMessageThreadPoolNums"])
	require.Equal(t, "false", got["enableDLegerCommitLog"])
	require.Equal(t, "false", got["commercialEnable"])
	require.Equal(t, "2097152", got["mappedFileSizeCommitLog"], "a legacy spelling sets ringmq's key")
	require.Equal(t, "120000", got["destroyMapedFileIntervalForcibly"], "RocketMQ's spelling, with ringmq's key's value")
	require.Equal(t, "false", got["isEnableBatchPush"], "Java's field name")
	require.NotContains(t, got, "enableBatchPush")
	require.NotContains(t, got, "dLegerPeers", "null in Java: not listed")
	require.Equal(t, strconv.Itoa(16+2*runtime.NumCPU()), got["pullMessageThreadPoolNums"])

	before := allPropertiesMap(&base)
	require.Equal(t, strconv.Itoa(min(runtime.NumCPU(), 4)), before["sendMessageThreadPoolNums"],
		"a copy taken before the change keeps RocketMQ's default")
	require.Equal(t, "true", before["commercialEnable"])
}
