package broker

import (
	"context"
	"sync"
	"testing"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/stretchr/testify/require"
)

// learned records onMasterLearned calls.
type learned struct {
	mu    sync.Mutex
	calls [][2]string
}

func (l *learned) record(masterAddr, haServerAddr string) {
	l.mu.Lock()
	l.calls = append(l.calls, [2]string{masterAddr, haServerAddr})
	l.mu.Unlock()
}

func (l *learned) last(t testing.TB) [2]string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.NotEmpty(t, l.calls, "onMasterLearned was called")
	return l.calls[len(l.calls)-1]
}

// A master and a slave of one brokerName register with one name server: both send their
// haServerAddr in the request header, the slave is listed under its own id, and the slave's
// register responses carry the master's addresses to onMasterLearned while the master is
// registered, and nothing once it is gone.
func TestSlaveRegistrationLearnsMaster(t *testing.T) {
	ns := startTestBroker(t, func(c *Config) { c.BrokerName = "broker-ns" })
	var masterLearned, slaveLearned learned
	pair := func(c *Config) {
		c.NamesrvAddr = ns.NamesrvAddr
		c.BrokerName = "broker-pair"
	}
	master := startCtlBroker(t, nil, func(c *Config) { pair(c); c.BrokerRole = RoleSyncMaster },
		func(b *Broker) { b.onMasterLearned = masterLearned.record })
	slave := startCtlBroker(t, nil, func(c *Config) {
		pair(c)
		c.BrokerRole = RoleSlave
		c.BrokerID = 1
		c.BrokerIP2 = "127.0.0.2"
	}, func(b *Broker) { b.onMasterLearned = slaveLearned.record })

	// The first round runs inside Start.
	require.Equal(t, [2]string{"", ""}, masterLearned.last(t), "a master learns no master")
	require.Equal(t, [2]string{master.BrokerAddr(), master.HAServerAddr()}, slaveLearned.last(t))

	_, h, err := slave.buildRegisterRequest()
	require.NoError(t, err)
	require.Equal(t, int64(1), h.BrokerID)
	require.Equal(t, slave.BrokerAddr(), h.BrokerAddr)
	require.Equal(t, slave.HAServerAddr(), h.HAServerAddr)
	require.Regexp(t, `^127\.0\.0\.2:\d+$`, h.HAServerAddr, "brokerIP2:haListenPort")

	ci := embeddedNamesrv(ns.b)
	route, ok := ci.TopicRoute(metadata.AutoCreateTopicKeyTopic)
	require.True(t, ok)
	var addrs map[int64]string
	for _, bd := range route.BrokerDatas {
		if bd.BrokerName == "broker-pair" {
			addrs = bd.BrokerAddrs
		}
	}
	require.Equal(t, map[int64]string{0: master.BrokerAddr(), 1: slave.BrokerAddr()}, addrs)

	// The master leaves (it unregisters at shutdown): the slave's next round learns nothing.
	ctx, cancel := context.WithTimeout(context.Background(), ctlWait)
	defer cancel()
	require.NoError(t, master.Shutdown(ctx))
	require.NoError(t, slave.ctl.registrar.registerAndWait(ctx))
	require.Equal(t, [2]string{"", ""}, slaveLearned.last(t))
}
