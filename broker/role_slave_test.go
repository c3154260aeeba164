package broker

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/admin"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/opsserver"
)

// A slave starts, serves reads, and refuses what only a master may do, with RocketMQ's
// codes and remarks; it runs neither the delay scheduler nor the transaction check-back.
func TestSlaveRefusesWrites(t *testing.T) {
	s := startCtlBroker(t, nil, func(c *Config) {
		c.BrokerRole = RoleSlave
		c.BrokerID = 1
	}, nil)
	for _, svc := range s.services {
		require.NotEqual(t, "schedule message service", svc.name, "the delay scheduler is not started on a slave")
	}
	require.False(t, s.send.TransactionChecking(), "no transaction check-back on a slave")
	// No master to replicate from: live, not ready.
	require.Equal(t, opsserver.Check{Name: "role", OK: false,
		Detail: "SLAVE not connected to its master's HA port (not learnt yet from the name servers)"}, s.Ready()[4])
	for _, c := range s.Live() {
		require.True(t, c.OK, "%+v", c)
	}

	c := dialCtl(t, s.BrokerAddr())
	requireResponse(t, c.call(codec.RequestUpdateAndCreateTopic, createTopicExt("SlaveT", 4), nil),
		codec.ResponseSystemError, admin.SlaveRemark)
	require.False(t, s.topics.Contains("SlaveT"))
	requireResponse(t, c.call(codec.RequestDeleteTopicInBroker, map[string]string{"topic": "TBW102"}, nil),
		codec.ResponseSystemError, admin.SlaveRemark)
	body, err := new(codec.NewSubscriptionGroupConfig("SlaveG")).Encode()
	require.NoError(t, err)
	requireResponse(t, c.call(codec.RequestUpdateAndCreateSubscriptionGroup, nil, body),
		codec.ResponseSystemError, admin.SlaveRemark)
	_, ok := s.subscriptions.Get("SlaveG")
	require.False(t, ok)
	requireResponse(t, c.call(codec.RequestDeleteSubscriptionGroup, map[string]string{"groupName": "SlaveG"}, nil),
		codec.ResponseSystemError, admin.SlaveRemark)
	// Reads still work.
	c.adminOK(codec.RequestGetAllTopicConfig, nil, nil)

	ctx, cancel := context.WithTimeout(context.Background(), ctlWait)
	defer cancel()
	resp, err := c.cl.Invoke(ctx, s.BrokerAddr(), sendBackCmd(0, "SlaveG", 0, nil))
	require.NoError(t, err)
	requireResponse(t, resp, codec.ResponseSystemError, "SERVICE_NOT_AVAILABLE")
	require.False(t, s.topics.Contains("%RETRY%SlaveG"), "no retry topic auto-created on a slave")

	eh := codec.EndTransactionRequestHeader{ProducerGroup: "PG", TranStateTableOffset: 0, CommitLogOffset: 0,
		CommitOrRollback: codec.SysFlagTransactionCommit, MsgID: "x"}
	ext := map[string]string{}
	eh.Encode(ext)
	requireResponse(t, c.call(codec.RequestEndTransaction, ext, nil), codec.ResponseSlaveNotAvailable,
		"Message store is slave mode, so end transaction is forbidden.")
}
