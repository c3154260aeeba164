package readplane

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
)

// The plane's other handlers, driven as the dispatcher drives them (the wire-level tests of
// the same requests are package broker's query_test.go and queueinfo_test.go).
func TestQueueInfoQueryAndViewThroughThePlane(t *testing.T) {
	rp := startPlane(t, planeOptions{})
	q := map[string]string{"topic": "TopicI", "queueId": "0"}
	offsetOf := func(code codec.RequestCode, ext map[string]string, key string) int64 {
		t.Helper()
		resp := rp.call(codec.NewRequest(code, ext, nil))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		v, err := strconv.ParseInt(resp.ExtFields[key], 10, 64)
		require.NoError(t, err, "%s: %v", key, resp.ExtFields)
		return v
	}
	require.Equal(t, int64(0), offsetOf(codec.RequestGetMaxOffset, q, "offset"))
	require.Equal(t, int64(-1), offsetOf(codec.RequestGetEarliestMsgStoretime, q, "timestamp"))

	var phys []int64
	for i := range 3 {
		props := codec.AppendProperty(nil, codec.PropertyKeys, "k"+strconv.Itoa(i))
		phys = append(phys, rp.putProps("TopicI", 0, "i"+strconv.Itoa(i), props))
	}
	require.Equal(t, int64(3), offsetOf(codec.RequestGetMaxOffset, q, "offset"))
	require.Equal(t, int64(0), offsetOf(codec.RequestGetMinOffset, q, "offset"))
	view := rp.call(codec.NewRequest(codec.RequestViewMessageByID,
		map[string]string{"offset": strconv.FormatInt(phys[1], 10)}, nil))
	require.Equal(t, int32(codec.ResponseSuccess), view.Code, view.Remark)
	recs := remotingtest.Records(t, view.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "i1", string(recs[0].Body))
	first := remotingtest.Records(t, rp.call(codec.NewRequest(codec.RequestViewMessageByID,
		map[string]string{"offset": strconv.FormatInt(phys[0], 10)}, nil)).Body)[0]
	require.Equal(t, first.StoreTimestamp, offsetOf(codec.RequestGetEarliestMsgStoretime, q, "timestamp"))
	search := map[string]string{"topic": "TopicI", "queueId": "0", "timestamp": strconv.FormatInt(first.StoreTimestamp-1000, 10)}
	require.Equal(t, int64(0), offsetOf(codec.RequestSearchOffsetByTimestamp, search, "offset"))

	query := func(key string) *codec.RemotingCommand {
		h := codec.QueryMessageRequestHeader{Topic: "TopicI", Key: key, MaxNum: 32, BeginTimestamp: 0, EndTimestamp: 1 << 62}
		ext := map[string]string{}
		h.Encode(ext)
		return rp.call(codec.NewRequest(codec.RequestQueryMessage, ext, nil))
	}
	resp := query("k2")
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	recs = remotingtest.Records(t, resp.Body)
	require.Len(t, recs, 1)
	require.Equal(t, "i2", string(recs[0].Body))
	resp = query("missing")
	require.Equal(t, int32(codec.ResponseQueryNotFound), resp.Code)
	require.Equal(t, remarkQueryNotFound, resp.Remark)
}
