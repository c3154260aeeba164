package sendplane

import (
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/live"
	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/netio"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
)

// The send plane's test harness: a Plane over a started MemStore and real metadata tables,
// with no producer connected. The wire-level tests (codes and bytes through the remoting
// server, SYNC_FLUSH and SYNC_MASTER, the allocation test) stay in package broker.

// testHost is the STOREHOST of the harness's records.
var testHost = netip.MustParseAddrPort("127.0.0.1:10911")

// noProducers is a producer table without a producer.
type noProducers struct{}

func (noProducers) FindConn(string) (netio.Conn, bool)      { return nil, false }
func (noProducers) AvailableConn(string) (netio.Conn, bool) { return nil, false }

// startPlane builds a plane over a started MemStore; its cleanup shuts the store down.
func startPlane(t testing.TB) (*Plane, store.MessageStore) {
	t.Helper()
	dir := t.TempDir()
	sc := store.DefaultConfig(dir)
	sc.StoreHost = testHost
	st := storetest.NewMemStore(sc, nil)
	tables, err := metadata.Open(metadata.Options{StorePathRootDir: dir, AutoCreateSubscriptionGroup: true,
		Topics: metadata.TopicOptions{ClusterName: "TestCluster", BrokerName: "broker-test", DefaultTopicQueueNums: 4}})
	require.NoError(t, err)
	l := new(live.Settings) // brokerPermission 6, the rest off: the broker's defaults
	l.BrokerPermission.Store(metadata.PermRead | metadata.PermWrite)
	p, err := New(Deps{Store: st, Topics: tables.Topics, Groups: tables.Groups, Offsets: tables.Offsets,
		Producers: noProducers{}, UniqKeys: codec.NewUniqKeyGenerator(testHost.Addr(), 1, 1), StoreHost: testHost,
		Live: l, Settings: Settings{BrokerIP: testHost.Addr().String(),
			ClusterName: "TestCluster", MaxMessageSize: 4 << 20, DelayLevels: 18, TransactionCheckInterval: time.Minute,
			TransactionTimeOut: 6 * time.Second, TransactionCheckMax: 15, FileReservedTime: 72 * time.Hour},
		Logger: logtest.Discard()})
	require.NoError(t, err)
	require.NoError(t, st.Start())
	t.Cleanup(func() { require.NoError(t, st.Shutdown()) })
	return p, st
}

// onlyRecord is the one record of a queue.
func onlyRecord(t testing.TB, st store.MessageStore, topic string, queueID int32) codec.Record {
	t.Helper()
	res, err := st.GetMessage("", topic, queueID, 0, 2, 0, nil)
	require.NoError(t, err)
	t.Cleanup(res.Release) // the record's slices view the store's buffers
	require.Len(t, res.Buffers, 1, "%s/%d", topic, queueID)
	r, err := codec.DecodeRecord(res.Buffers[0], true)
	require.NoError(t, err)
	return r
}
