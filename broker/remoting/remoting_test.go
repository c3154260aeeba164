package remoting

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/conntest"
	"github.com/ringmq/ringmq/internal/logtest"
)

func newTestReplies() (*Replies, prometheus.Counter) {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "reply_errors_total"})
	return NewReplies(errs, logtest.Discard()), errs
}

func TestReplyMethods(t *testing.T) {
	replies, _ := newTestReplies()
	conn := &conntest.Conn{}
	req := &codec.RemotingCommand{Opaque: 7, SerializeType: codec.SerializeRocketMQ}
	r := replies.To(conn, req)

	r.OK()
	r.Answer(codec.ResponseTopicNotExist, "no such topic", codec.NumField("queueId", 3), codec.StrField("a", "b"))
	r.Body([]byte("body"))
	r.JSON(map[string]int{"n": 1})
	r.JSON(math.Inf(1)) // encoding/json refuses it
	released := 0
	f := r.NewFrame()
	f.Release = func() { released++ }
	f.Bodies = append(f.Bodies, []byte("ab"), []byte("cd"))
	r.Frame(f, codec.ResponseSuccess, "", nil, f.Bodies)

	got := conn.MustResponses(t)
	require.Len(t, got, 6)
	for _, c := range got {
		require.Equal(t, int32(7), c.Opaque)
		require.True(t, c.IsResponse())
		require.Equal(t, codec.SerializeRocketMQ, c.SerializeType)
	}
	require.Equal(t, int32(codec.ResponseSuccess), got[0].Code)
	require.Empty(t, got[0].Body)
	require.Equal(t, int32(codec.ResponseTopicNotExist), got[1].Code)
	require.Equal(t, "no such topic", got[1].Remark)
	require.Equal(t, map[string]string{"queueId": "3", "a": "b"}, got[1].ExtFields)
	require.Equal(t, "body", string(got[2].Body))
	require.Equal(t, `{"n":1}`, string(got[3].Body))
	require.Equal(t, int32(codec.ResponseSystemError), got[4].Code)
	require.Contains(t, got[4].Remark, "unsupported value")
	require.Equal(t, "abcd", string(got[5].Body))
	require.Equal(t, 1, released, "the frame's release ran once")
}

func TestReplyThatCannotBeEncodedAnswersSystemError(t *testing.T) {
	replies, _ := newTestReplies()
	conn := &conntest.Conn{}
	r := replies.To(conn, &codec.RemotingCommand{Opaque: 1})
	released := 0
	buf := []byte(nil)
	r.Send(&buf, codec.ResponseSuccess, "", []codec.Field{codec.NumField("k", 1), codec.NumField("k", 2)}, nil,
		func() { released++ })
	require.Equal(t, 1, released)
	got := conn.MustResponses(t)
	require.Len(t, got, 1)
	require.Equal(t, int32(codec.ResponseSystemError), got[0].Code)
	require.Equal(t, "response encoding failed: "+codec.ErrDuplicateField.Error(), got[0].Remark)
}

func TestDetachedKeepsTheReply(t *testing.T) {
	replies, _ := newTestReplies()
	conn := &conntest.Conn{}
	req := replies.NewRequest(conn, &codec.RemotingCommand{Opaque: 9, SerializeType: codec.SerializeRocketMQ}, testTime)
	d := req.Reply.Detached(&codec.RemotingCommand{}, testTime)
	require.Equal(t, int32(9), d.Cmd.Opaque)
	require.Equal(t, codec.SerializeRocketMQ, d.Cmd.SerializeType)
	d.Reply.OK()
	require.Equal(t, int32(9), conn.MustResponses(t)[0].Opaque)
}

var testTime = time.UnixMilli(1_700_000_000_000)

// TestObserverSeesEveryResponseOnce: the observer gets the request's code, each response's code and
// the request's arrival (zero for a Reply made by To), once per response written, a Detached reply
// included, and once for the SYSTEM_ERROR that replaces a response that cannot be encoded.
func TestObserverSeesEveryResponseOnce(t *testing.T) {
	replies, _ := newTestReplies()
	type seen struct {
		request  int32
		response codec.ResponseCode
		received time.Time
	}
	var got []seen
	replies.SetObserver(func(request int32, response codec.ResponseCode, received time.Time) {
		got = append(got, seen{request, response, received})
	})
	conn := &conntest.Conn{}
	arrived := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	req := replies.NewRequest(conn, &codec.RemotingCommand{Code: int32(codec.RequestPullMessage), Opaque: 1}, arrived)
	req.Reply.Answer(codec.ResponsePullNotFound, "")
	req.Reply.Detached(&codec.RemotingCommand{}, arrived.Add(time.Second)).Reply.OK()
	replies.To(conn, &codec.RemotingCommand{Code: int32(codec.RequestSendMessage), Opaque: 2}).
		Answer(codec.ResponseSuccess, "", codec.NumField("k", 1), codec.NumField("k", 2)) // not encodable: SYSTEM_ERROR instead
	require.Equal(t, []seen{
		{int32(codec.RequestPullMessage), codec.ResponsePullNotFound, arrived},
		{int32(codec.RequestPullMessage), codec.ResponseSuccess, arrived},
		{int32(codec.RequestSendMessage), codec.ResponseSystemError, time.Time{}},
	}, got)
	require.Len(t, conn.MustResponses(t), 3)
}
