package broker

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

func netipLoopback() netip.AddrPort { return netip.MustParseAddrPort("127.0.0.1:10911") }

func queueInfo(t testing.TB, c *remotingtest.Conn, code codec.RequestCode, ext map[string]string, key string) int64 {
	t.Helper()
	resp := c.Call(codec.NewRequest(code, ext, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	v, err := strconv.ParseInt(resp.ExtFields[key], 10, 64)
	require.NoError(t, err, "%s: %v", key, resp.ExtFields)
	return v
}

func TestQueueOffsetsAndTimes(t *testing.T) {
	var now time.Time
	db := startDataBroker(t, dataBrokerOptions{fileStore: true})
	c := remotingtest.Dial(t, db.addr)
	q := map[string]string{"topic": "TopicI", "queueId": "0"}
	require.Equal(t, int64(0), queueInfo(t, c, codec.RequestGetMaxOffset, q, "offset"))
	require.Equal(t, int64(0), queueInfo(t, c, codec.RequestGetMinOffset, q, "offset"))
	require.Equal(t, int64(-1), queueInfo(t, c, codec.RequestGetEarliestMsgStoretime, q, "timestamp"))

	now = time.Now()
	var storeTimes []int64
	for i := range 3 {
		h := sendOK(t, c, sendV1("TopicI", 0, []byte("i"+strconv.Itoa(i)), ""))
		storeTimes = append(storeTimes, viewRecord(t, c, offsetOf(t, h.MsgID)).StoreTimestamp)
	}
	testutil.Eventually(t, "max offset 3", func() bool {
		return queueInfo(t, c, codec.RequestGetMaxOffset, q, "offset") == 3
	})
	require.Equal(t, int64(0), queueInfo(t, c, codec.RequestGetMinOffset, q, "offset"))
	require.Equal(t, storeTimes[0], queueInfo(t, c, codec.RequestGetEarliestMsgStoretime, q, "timestamp"))
	require.GreaterOrEqual(t, storeTimes[0], now.Add(-time.Second).UnixMilli())

	search := func(ts int64, boundary string) int64 {
		ext := map[string]string{"topic": "TopicI", "queueId": "0", "timestamp": strconv.FormatInt(ts, 10)}
		if boundary != "" {
			ext["boundaryType"] = boundary
		}
		return queueInfo(t, c, codec.RequestSearchOffsetByTimestamp, ext, "offset")
	}
	require.Equal(t, int64(0), search(storeTimes[0]-1000, ""))
	require.Equal(t, int64(0), search(storeTimes[0], "lower"))
	last := storeTimes[2]
	n := 0
	for _, ts := range storeTimes {
		if ts == last {
			n++
		}
	}
	require.Equal(t, int64(3-n), search(last, "LOWER"), "first entry stored at the last time")
	require.Equal(t, int64(2), search(last, "upper"), "last entry stored at that time")

	resp := c.Call(codec.NewRequest(codec.RequestGetMaxOffset, map[string]string{"topic": "TopicI"}, nil))
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Equal(t, "the custom field <queueId> is null", resp.Remark)
}
