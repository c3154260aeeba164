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

// QUERY_MESSAGE over the wire against the file store's IndexFile: a key query returns the
// messages of that topic whose KEYS hold that exact word, and nothing else — not a message
// whose UNIQ_KEY happens to equal it, not another topic's, not a longer word; a UNIQ_KEY
// query (_UNIQUE_KEY_QUERY=true) returns only the message with that UNIQ_KEY. Records come
// in store format, newest first, at most maxNum, within the time range.
func TestQueryByKeyReturnsExactlyTheKeyedMessages(t *testing.T) {
	db := startDataBroker(t, dataBrokerOptions{fileStore: true})
	c := remotingtest.Dial(t, db.addr)
	m1 := sendOK(t, c, sendV1("TopicQ", 0, []byte("m1"), props("KEYS", "k1 shared")))
	sendOK(t, c, sendV1("TopicQ", 1, []byte("m2"), props("KEYS", "shared")))
	sendOK(t, c, sendV1("TopicQ", 0, []byte("m3"), props("KEYS", "other", "UNIQ_KEY", "shared")))
	sendOK(t, c, sendV1("OtherTopic", 0, []byte("m4"), props("KEYS", "shared")))
	sendOK(t, c, sendV1("TopicQ", 0, []byte("m5"), props("KEYS", "sharedX shared-not")))

	query := func(key string, maxNum int32, unique bool, begin, end int64) *codec.RemotingCommand {
		h := codec.QueryMessageRequestHeader{Topic: "TopicQ", Key: key, MaxNum: maxNum, BeginTimestamp: begin,
			EndTimestamp: end, UniqueKeyQuery: unique}
		ext := map[string]string{}
		h.Encode(ext)
		return c.Call(codec.NewRequest(codec.RequestQueryMessage, ext, nil))
	}
	later := time.Now().Add(time.Hour).UnixMilli()
	bodiesOf := func(resp *codec.RemotingCommand) []string {
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		var out []string
		for _, r := range remotingtest.Records(t, resp.Body) {
			require.Equal(t, "TopicQ", string(r.Topic))
			out = append(out, string(r.Body))
		}
		return out
	}

	// The index is built by the dispatcher, in the background.
	testutil.Eventually(t, "the index to hold sharedX", func() bool {
		resp := query("sharedX", 32, false, 0, later)
		return resp.Code == int32(codec.ResponseSuccess)
	})
	require.Equal(t, []string{"m5"}, bodiesOf(query("sharedX", 32, false, 0, later)))
	require.Equal(t, []string{"m2", "m1"}, bodiesOf(query("shared", 32, false, 0, later)), "newest first")
	require.Equal(t, []string{"m2"}, bodiesOf(query("shared", 1, false, 0, later)), "maxNum")
	require.Equal(t, []string{"m1"}, bodiesOf(query("k1", 32, false, 0, later)))
	require.Equal(t, []string{"m3"}, bodiesOf(query("shared", 0, true, 0, later)), "by UNIQ_KEY")
	require.Equal(t, []string{"m1"}, bodiesOf(query(m1.TransactionID, 0, true, 0, later)),
		"the UNIQ_KEY the broker added is indexed")
	resp := query("shared", 32, false, later, later+1000)
	requireResponse(t, resp, codec.ResponseQueryNotFound, "can not find message, maybe time range not correct")

	// VIEW_MESSAGE_BY_ID of each found record's CommitLog offset gives the same record.
	resp = query("shared", 32, false, 0, later)
	for _, r := range remotingtest.Records(t, resp.Body) {
		v := viewRecord(t, c, r.PhysicalOffset)
		require.Equal(t, string(r.Body), string(v.Body), "offset %s", strconv.FormatInt(r.PhysicalOffset, 10))
	}
}
