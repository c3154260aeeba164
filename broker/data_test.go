package broker

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/broker/metadata"
	"github.com/ringmq/ringmq/broker/remoting"
	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/store"
	"github.com/ringmq/ringmq/store/storetest"
)

// Helpers of the data-plane tests: a broker on 127.0.0.1 (in-memory or file store, no name
// server), talked to through remotingtest.Conn (codec frames), so tests assert exact codes,
// remarks and bytes.

// dataBroker is a started broker for data-plane tests.
type dataBroker struct {
	b    *Broker
	addr string
	mem  *storetest.MemStore // nil with the file store
}

type dataBrokerOptions struct {
	mutate    func(*Config)
	fileStore bool                                        // the real store on t.TempDir() instead of a MemStore
	wrap      func(store.MessageStore) store.MessageStore // wraps the store (fault injection)
	beforeRun func(*Broker)                               // after New, before Start
}

// startDataBroker starts a broker without a name server (nothing registers anywhere).
func startDataBroker(t testing.TB, opts dataBrokerOptions) *dataBroker {
	t.Helper()
	cfg := testBrokerConfig(t)
	cfg.NamesrvEmbedded = false
	cfg.NamesrvAddr = ""
	// listenPort and haListenPort (listenPort + 1) come from testBrokerConfig's block below the
	// ephemeral range: a port picked from the kernel there and bound later can be taken meanwhile by
	// any outgoing connection (a fuzz run's setup failed in 0.22 s that way, most likely).
	if opts.mutate != nil {
		opts.mutate(&cfg)
	}
	db := &dataBroker{}
	var st store.MessageStore
	if !opts.fileStore {
		sc := store.DefaultConfig(cfg.StorePathRootDir)
		sc.StoreHost = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.ListenPort))
		sc.MaxMessageSize = cfg.MaxMessageSize
		sc.Slave = cfg.IsSlave() // as storeConfig sets it: a slave's store takes replicated bytes
		db.mem = storetest.NewMemStore(sc, nil)
		st = db.mem
	} else if opts.wrap != nil {
		sc, err := storeConfig(&cfg, netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(cfg.ListenPort)))
		require.NoError(t, err)
		fs, err := store.Open(sc, store.Deps{Logger: testLogger(t)})
		require.NoError(t, err)
		st = fs
	}
	if opts.wrap != nil {
		st = opts.wrap(st)
	}
	b, err := New(cfg, Deps{Logger: testLogger(t), Store: st})
	require.NoError(t, err)
	if opts.beforeRun != nil {
		opts.beforeRun(b)
	}
	require.NoError(t, b.Start())
	db.b = b
	db.addr = b.Addr()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, b.Shutdown(ctx))
	})
	return db
}

// sendV1 builds a SEND_MESSAGE (10) request as the Go client does (full key names).
func sendV1(topic string, queueID int32, body []byte, props string) *codec.RemotingCommand {
	h := codec.SendMessageRequestHeader{ProducerGroup: "PG", Topic: topic, DefaultTopic: metadata.AutoCreateTopicKeyTopic,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: 1700000000000, Properties: props}
	ext := map[string]string{}
	h.Encode(ext)
	return codec.NewRequest(codec.RequestSendMessage, ext, body)
}

// sendV2 builds a SEND_MESSAGE_V2 (310) request (letter keys).
func sendV2(topic string, queueID int32, body []byte, props string) *codec.RemotingCommand {
	h := codec.SendMessageRequestHeader{ProducerGroup: "PG", Topic: topic, DefaultTopic: metadata.AutoCreateTopicKeyTopic,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: 1700000000000, Properties: props}
	ext := map[string]string{}
	h.EncodeV2(ext)
	return codec.NewRequest(codec.RequestSendMessageV2, ext, body)
}

// sendBatch builds a SEND_BATCH_MESSAGE (320) request from (body, properties) items.
func sendBatch(topic string, queueID int32, items ...[2]string) *codec.RemotingCommand {
	h := codec.SendMessageRequestHeader{ProducerGroup: "PG", Topic: topic, DefaultTopic: metadata.AutoCreateTopicKeyTopic,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: 1700000000000, Batch: true}
	ext := map[string]string{}
	h.EncodeV2(ext)
	var body []byte
	for i, it := range items {
		body = codec.AppendBatchItem(body, int32(i), []byte(it[0]), []byte(it[1]))
	}
	return codec.NewRequest(codec.RequestSendBatchMessage, ext, body)
}

// props encodes key/value pairs as a client does (each pair ends with 0x02).
func props(kv ...string) string {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = codec.AppendProperty(b, kv[i], kv[i+1])
	}
	return string(b)
}

// sendOK sends and requires SUCCESS, returning the decoded response header.
func sendOK(t testing.TB, c *remotingtest.Conn, cmd *codec.RemotingCommand) codec.SendMessageResponseHeader {
	t.Helper()
	resp := c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, "remark: %s", resp.Remark)
	var h codec.SendMessageResponseHeader
	require.NoError(t, h.Decode(resp.ExtFields))
	return h
}

func TestHeaderErrorRemark(t *testing.T) {
	var h codec.SendMessageRequestHeader
	err := h.Decode(map[string]string{})
	require.Equal(t, "the custom field <producerGroup> is null", remoting.HeaderErrorRemark(err))
	var p codec.PullMessageRequestHeader
	err = p.Decode(map[string]string{"consumerGroup": "G", "topic": "T", "queueId": "x"})
	require.Equal(t, `the custom field <queueId> has a bad value: "x"`, remoting.HeaderErrorRemark(err))
	require.Equal(t, "boom", remoting.HeaderErrorRemark(errors.New("boom")))
}

func TestUnknownRequestCode(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{})
	c := remotingtest.Dial(t, db.addr)
	resp := c.Call(codec.NewRequest(codec.RequestCode(9999), nil, nil))
	require.Equal(t, int32(codec.ResponseRequestCodeNotSupported), resp.Code)
	require.Equal(t, " request type 9999 not supported", resp.Remark)
	// The connection stays usable.
	sendOK(t, c, sendV1("TopicA", 0, []byte("after"), ""))
}

// offsetOf decodes an offsetMsgId.
func offsetOf(t testing.TB, msgID string) int64 {
	t.Helper()
	_, off, err := codec.DecodeOffsetMsgID(msgID)
	require.NoError(t, err)
	return off
}

// viewRecord reads one record through VIEW_MESSAGE_BY_ID.
func viewRecord(t testing.TB, c *remotingtest.Conn, offset int64) codec.Record {
	t.Helper()
	ext := map[string]string{"offset": strconv.FormatInt(offset, 10)}
	resp := c.Call(codec.NewRequest(codec.RequestViewMessageByID, ext, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	return recs[0]
}
