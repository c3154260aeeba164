package remoting

import (
	"encoding/binary"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/netio"
)

// frameConn keeps the frames written to it, decoded, and calls each release at once.
type frameConn struct {
	netio.Conn // only WriteFrame is used
	mu         sync.Mutex
	got        []*codec.RemotingCommand
}

func (c *frameConn) WriteFrame(header []byte, bodies [][]byte, release func()) error {
	frame := append([]byte(nil), header...)
	for _, b := range bodies {
		frame = append(frame, b...)
	}
	if release != nil {
		release()
	}
	if int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		panic("length word does not count the bodies")
	}
	cmd, err := codec.DecodeCommand(frame[4:])
	if err != nil {
		panic(err)
	}
	c.mu.Lock()
	c.got = append(c.got, cmd)
	c.mu.Unlock()
	return nil
}

func newTestReplies() (*Replies, prometheus.Counter) {
	errs := prometheus.NewCounter(prometheus.CounterOpts{Name: "reply_errors_total"})
	return NewReplies(errs, logtest.Discard()), errs
}

func TestReplyMethods(t *testing.T) {
	replies, _ := newTestReplies()
	conn := &frameConn{}
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

	require.Len(t, conn.got, 6)
	for _, c := range conn.got {
		require.Equal(t, int32(7), c.Opaque)
		require.True(t, c.IsResponse())
		require.Equal(t, codec.SerializeRocketMQ, c.SerializeType)
	}
	require.Equal(t, int32(codec.ResponseSuccess), conn.got[0].Code)
	require.Empty(t, conn.got[0].Body)
	require.Equal(t, int32(codec.ResponseTopicNotExist), conn.got[1].Code)
	require.Equal(t, "no such topic", conn.got[1].Remark)
	require.Equal(t, map[string]string{"queueId": "3", "a": "b"}, conn.got[1].ExtFields)
	require.Equal(t, "body", string(conn.got[2].Body))
	require.Equal(t, `{"n":1}`, string(conn.got[3].Body))
	require.Equal(t, int32(codec.ResponseSystemError), conn.got[4].Code)
	require.Contains(t, conn.got[4].Remark, "unsupported value")
	require.Equal(t, "abcd", string(conn.got[5].Body))
	require.Equal(t, 1, released, "the frame's release ran once")
}

func TestReplyThatCannotBeEncodedAnswersSystemError(t *testing.T) {
	replies, _ := newTestReplies()
	conn := &frameConn{}
	r := replies.To(conn, &codec.RemotingCommand{Opaque: 1})
	released := 0
	buf := []byte(nil)
	r.Send(&buf, codec.ResponseSuccess, "", []codec.Field{codec.NumField("k", 1), codec.NumField("k", 2)}, nil,
		func() { released++ })
	require.Equal(t, 1, released)
	require.Len(t, conn.got, 1)
	require.Equal(t, int32(codec.ResponseSystemError), conn.got[0].Code)
	require.Equal(t, "response encoding failed: "+codec.ErrDuplicateField.Error(), conn.got[0].Remark)
}

func TestDetachedKeepsTheReply(t *testing.T) {
	replies, _ := newTestReplies()
	conn := &frameConn{}
	req := replies.NewRequest(conn, &codec.RemotingCommand{Opaque: 9, SerializeType: codec.SerializeRocketMQ}, testTime)
	d := req.Reply.Detached(&codec.RemotingCommand{}, testTime)
	require.Equal(t, int32(9), d.Cmd.Opaque)
	require.Equal(t, codec.SerializeRocketMQ, d.Cmd.SerializeType)
	d.Reply.OK()
	require.Equal(t, int32(9), conn.got[0].Opaque)
}

var testTime = time.UnixMilli(1_700_000_000_000)
