package broker

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

func queryCmd(topic, key string, maxNum int32, unique bool) *codec.RemotingCommand {
	h := codec.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: maxNum, BeginTimestamp: 0,
		EndTimestamp: time.Now().Add(time.Hour).UnixMilli(), UniqueKeyQuery: unique}
	ext := map[string]string{}
	h.Encode(ext)
	return codec.NewRequest(codec.RequestQueryMessage, ext, nil)
}

func testQueryMessage(t *testing.T, fileStore bool) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: fileStore})
	c := remotingtest.Dial(t, db.addr)
	h1 := sendOK(t, c, sendV1("TopicK", 0, []byte("one"), props("KEYS", "order-1 shared")))
	h2 := sendOK(t, c, sendV1("TopicK", 1, []byte("two"), props("KEYS", "order-2 shared")))
	sendOK(t, c, sendV1("OtherTopic", 0, []byte("three"), props("KEYS", "shared")))
	// The index is built by the dispatcher.
	testutil.Eventually(t, "the index to hold both shared messages", func() bool {
		resp := c.Call(queryCmd("TopicK", "shared", 32, false))
		return resp.Code == int32(codec.ResponseSuccess) && len(remotingtest.Records(t, resp.Body)) == 2
	})

	resp := c.Call(queryCmd("TopicK", "shared", 32, false))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	var qh codec.QueryMessageResponseHeader
	require.NoError(t, qh.Decode(resp.ExtFields))
	var bodies []string
	for _, r := range remotingtest.Records(t, resp.Body) {
		require.Equal(t, "TopicK", string(r.Topic))
		bodies = append(bodies, string(r.Body))
	}
	require.ElementsMatch(t, []string{"one", "two"}, bodies)

	resp = c.Call(queryCmd("TopicK", "order-2", 32, false))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	recs := remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, offsetOf(t, h2.MsgID), recs[0].PhysicalOffset)

	// By UNIQ_KEY (the transactionId of the send).
	resp = c.Call(queryCmd("TopicK", h1.TransactionID, 0, true))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	recs = remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "one", string(recs[0].Body))
	// A KEYS word is no UNIQ_KEY.
	resp = c.Call(queryCmd("TopicK", "order-1", 0, true))
	require.Equal(t, int32(codec.ResponseQueryNotFound), resp.Code)

	resp = c.Call(queryCmd("TopicK", "missing", 32, false))
	require.Equal(t, int32(codec.ResponseQueryNotFound), resp.Code)
	require.Equal(t, "can not find message, maybe time range not correct", resp.Remark)
	require.NoError(t, qh.Decode(resp.ExtFields), "the index fields are always present")
	require.Empty(t, resp.Body)

	cmd := queryCmd("TopicK", "shared", 32, false)
	delete(cmd.ExtFields, "key")
	resp = c.Call(cmd)
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "the custom field <key> is null", resp.Remark)
}

func TestQueryMessage(t *testing.T) {
	t.Run("memstore", func(t *testing.T) { testQueryMessage(t, false) })
	t.Run("filestore", func(t *testing.T) { testQueryMessage(t, true) })
}

func TestViewMessageByID(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: true})
	c := remotingtest.Dial(t, db.addr)
	h := sendOK(t, c, sendV1("TopicV", 0, []byte("view me"), ""))
	rec := viewRecord(t, c, offsetOf(t, h.MsgID))
	require.Equal(t, "view me", string(rec.Body))

	resp := c.Call(codec.NewRequest(codec.RequestViewMessageByID, map[string]string{"offset": "999999"}, nil))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "can not find message by the offset, 999999", resp.Remark)
	resp = c.Call(codec.NewRequest(codec.RequestViewMessageByID, map[string]string{"offset": strconv.Itoa(3)}, nil))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code, "an offset inside a record is no record")
	resp = c.Call(codec.NewRequest(codec.RequestViewMessageByID, map[string]string{}, nil))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "the custom field <offset> is null", resp.Remark)
}
