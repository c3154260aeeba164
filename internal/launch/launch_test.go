package launch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/ringmq/ringmq/broker"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/namesrv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// gnet's ants pool goroutines are started in package init and live for the process.
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).purgeStaleWorkers"),
		goleak.IgnoreAnyFunction("github.com/panjf2000/ants/v2.(*poolCommon).ticktock"),
	)
}

// A broker made by New runs the embedded name server of package namesrv and registers with it in
// Start's first round.
func TestNewRunsTheEmbeddedNamesrv(t *testing.T) {
	cfg := broker.DefaultConfig()
	cfg.StorePathRootDir = t.TempDir()
	cfg.BrokerIP1 = "127.0.0.1"
	cfg.ListenPort, cfg.FastListenPort, cfg.NamesrvListenPort = 0, 0, 0
	cfg.MappedFileSizeCommitLog = 4 << 20
	cfg.MaxMessageSize = 1 << 20
	cfg.MaxConnections = 1000
	cfg.NetEventLoops = 1
	b, err := New(cfg, broker.Deps{})
	require.NoError(t, err)
	require.NoError(t, b.Start())
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	}()
	ns, ok := b.EmbeddedNamesrv().(*namesrv.Namesrv)
	require.True(t, ok)
	require.Equal(t, ns.Addr().String(), b.EmbeddedNamesrvAddr())
	route, ok := ns.TopicRoute(metadata.AutoCreateTopicKeyTopic)
	require.True(t, ok, "registered in Start")
	require.Equal(t, b.BrokerAddr(), route.BrokerDatas[0].BrokerAddrs[0])
}
