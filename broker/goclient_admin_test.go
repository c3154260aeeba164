package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// The pinned Go client's admin package against a broker with its embedded name server:
// create a topic, find its route through the name server, send to it, delete it.
func TestGoClientAdminTopicLifecycle(t *testing.T) {
	tb := startTestBroker(t, nil)
	client := goclienttest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	adm, err := client.NewAdmin(goclient.AdminOptions{NameServers: []string{tb.NamesrvAddr}})
	require.NoError(t, err)
	defer func() { require.NoError(t, adm.Close()) }()

	const topic = "GoAdminTopic"
	require.NoError(t, adm.CreateTopic(ctx, goclient.CreateTopicArgs{Topic: topic, BrokerAddr: tb.BrokerAddr,
		ReadQueueNums: 3, WriteQueueNums: 3}))
	tc, ok := tb.b.topics.Get(topic)
	require.True(t, ok)
	require.Equal(t, int32(3), tc.WriteQueueNums)
	require.Equal(t, int32(6), tc.Perm)

	// The route comes from the name server (GET_ROUTEINFO_BY_TOPIC).
	mqs, err := adm.FetchPublishMessageQueues(ctx, topic)
	require.NoError(t, err)
	require.Len(t, mqs, 3)
	for i, mq := range mqs {
		require.Equal(t, primitive.MessageQueue{Topic: topic, BrokerName: "broker-test", QueueId: i}, *mq)
	}
	topics, err := adm.FetchAllTopicList(ctx)
	require.NoError(t, err)
	require.Contains(t, topics.TopicList, topic)
	groups, err := adm.GetAllSubscriptionGroup(ctx, tb.BrokerAddr, 3*time.Second)
	require.NoError(t, err)
	require.Contains(t, groups.SubscriptionGroupTable, metadata.ToolsConsumerGroup)

	// A producer finds the broker through the name server and stores into the topic.
	p, err := client.NewProducer(goclient.ProducerOptions{
		NameServers: []string{tb.NamesrvAddr},
		Group:       "GoAdminPG",
		Instance:    fmt.Sprintf("admin-test-%d", time.Now().UnixNano()),
		Retries:     0,
	})
	require.NoError(t, err)
	require.NoError(t, p.Start())
	res, err := p.SendSync(ctx, primitive.NewMessage(topic, []byte("hello")))
	require.NoError(t, p.Shutdown())
	require.NoError(t, err)
	require.Equal(t, primitive.SendOK, res.Status)
	require.Equal(t, topic, res.MessageQueue.Topic)
	testutil.Eventually(t, "the message reaches its ConsumeQueue",
		func() bool { return tb.b.store.GetMaxOffsetInQueue(topic, int32(res.MessageQueue.QueueId)) == 1 })

	// Delete in the broker and in the name server.
	require.NoError(t, adm.DeleteTopic(ctx, goclient.DeleteTopicArgs{Topic: topic, BrokerAddr: tb.BrokerAddr}))
	require.False(t, tb.b.topics.Contains(topic))
	_, ok = embeddedNamesrv(tb.b).TopicRoute(topic)
	require.False(t, ok)
	require.Equal(t, int64(0), tb.b.store.GetMaxOffsetInQueue(topic, int32(res.MessageQueue.QueueId)))

	// A later registration round does not bring the deleted topic back.
	require.NoError(t, tb.b.ctl.registrar.registerAndWait(ctx))
	_, ok = embeddedNamesrv(tb.b).TopicRoute(topic)
	require.False(t, ok)
}
