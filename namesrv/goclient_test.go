package namesrv

import (
	"context"
	"sort"
	"testing"

	clienterrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/goclient"
	"github.com/ringmq/ringmq/internal/goclient/goclienttest"
)

// TestGoClientReadsRoutes registers fake brokers over the wire, then lets the pinned Go
// client (its admin API, which goes through the same namesrv code as its producers and
// consumers) read the topic list and a route: proof that it parses our TopicList and our
// bare-key route JSON (its brokerAddrs text-splitting parser included). The client runs in a
// driver process built without -race (goclienttest).
func TestGoClientReadsRoutes(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		n := startNamesrv(t, testConfig(t, engine))
		c := dial(t, n)
		brokerA(true).register(t, c)
		b := &fakeBroker{cluster: "C2", name: "broker-b", addr: "127.0.0.3:10911", haAddr: "127.0.0.3:10912",
			counter: 1, topics: []codec.TopicConfig{topicConfig("TopicTest", 2, 2, 6), topicConfig("ReadOnly", 2, 2, 4)}}
		b.register(t, c)
		slave := brokerA(false)
		slave.id, slave.addr = 1, "127.0.0.2:10911"
		slave.register(t, c)

		adm, err := goclienttest.Start(t).NewAdmin(goclient.AdminOptions{NameServers: []string{n.Addr().String()}})
		require.NoError(t, err)
		defer func() { require.NoError(t, adm.Close()) }()
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()

		list, err := adm.FetchAllTopicList(ctx)
		require.NoError(t, err)
		require.Equal(t, []string{"ReadOnly", "TBW102", "TopicTest"}, list.TopicList)

		mqs, err := adm.FetchPublishMessageQueues(ctx, "TopicTest")
		require.NoError(t, err)
		var got []string
		for _, mq := range mqs {
			got = append(got, mq.String())
		}
		sort.Strings(got)
		want := []string{
			(&primitive.MessageQueue{Topic: "TopicTest", BrokerName: "broker-a", QueueId: 0}).String(),
			(&primitive.MessageQueue{Topic: "TopicTest", BrokerName: "broker-a", QueueId: 1}).String(),
			(&primitive.MessageQueue{Topic: "TopicTest", BrokerName: "broker-a", QueueId: 2}).String(),
			(&primitive.MessageQueue{Topic: "TopicTest", BrokerName: "broker-a", QueueId: 3}).String(),
			(&primitive.MessageQueue{Topic: "TopicTest", BrokerName: "broker-b", QueueId: 0}).String(),
			(&primitive.MessageQueue{Topic: "TopicTest", BrokerName: "broker-b", QueueId: 1}).String(),
		}
		sort.Strings(want)
		require.Equal(t, want, got)

		// A read-only topic has no queues to publish to; the route itself parsed.
		mqs, err = adm.FetchPublishMessageQueues(ctx, "ReadOnly")
		require.NoError(t, err)
		require.Empty(t, mqs)

		clusters, err := adm.FetchClusterList("TopicTest")
		require.NoError(t, err)
		sort.Strings(clusters)
		require.Equal(t, []string{"C2", "DefaultCluster"}, clusters)

		// An unknown topic (TOPIC_NOT_EXIST) comes back as the client's own error for it.
		_, err = adm.FetchPublishMessageQueues(ctx, "NoSuchTopic")
		require.ErrorIs(t, err, clienterrors.ErrTopicNotExist)
	})
}
