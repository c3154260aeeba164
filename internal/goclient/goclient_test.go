package goclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	clienterrors "github.com/apache/rocketmq-client-go/v2/errors"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/stretchr/testify/require"
)

// throughJSON sends v through JSON, as net/rpc's JSON codec does, into a new T.
func throughJSON[T any](t *testing.T, v *T) *T {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(b, &out))
	return &out
}

func TestMessageCrossesThePipes(t *testing.T) {
	m := primitive.NewMessage("T", []byte("body"))
	m.WithTag("TagA")
	m.WithKeys([]string{"k1", "k2"})
	m.WithProperty("userProp", "v")
	m.WithShardingKey("order-1")
	m.WithDelayTimeLevel(3)
	m.Flag, m.TransactionId = 7, "tx-1"
	m.Queue = &primitive.MessageQueue{Topic: "T", BrokerName: "b", QueueId: 2}

	got := throughJSON(t, FromMessage(m)).Primitive()
	require.Equal(t, "T", got.Topic)
	require.Equal(t, []byte("body"), got.Body)
	require.Equal(t, int32(7), got.Flag)
	require.Equal(t, "tx-1", got.TransactionId)
	require.Equal(t, *m.Queue, *got.Queue)
	require.Equal(t, m.GetProperties(), got.GetProperties())
	require.Equal(t, "TagA", got.GetTags())
	require.Equal(t, "k1 k2", got.GetKeys())
	require.Equal(t, "3", got.GetProperty(primitive.PropertyDelayTimeLevel))
	require.Nil(t, FromMessage(nil))
	require.Nil(t, (*Message)(nil).Primitive())
}

func TestMessageExtCrossesThePipes(t *testing.T) {
	m := &primitive.MessageExt{MsgId: "uniq", OffsetMsgId: "offset-id", StoreSize: 200, QueueOffset: 41,
		SysFlag: 4, BornTimestamp: 1_700_000_000_000, BornHost: "127.0.0.1:5000", StoreTimestamp: 1_700_000_000_005,
		StoreHost: "127.0.0.1:10911", CommitLogOffset: 123456, BodyCRC: -9, ReconsumeTimes: 2,
		PreparedTransactionOffset: 77}
	m.Topic, m.Body = "T", []byte("b")
	m.Queue = &primitive.MessageQueue{Topic: "T", BrokerName: "b", QueueId: 1}
	m.WithProperty(primitive.PropertyRetryTopic, "Orig")

	got := throughJSON(t, FromMessageExt(m)).Primitive()
	require.Equal(t, m.MsgId, got.MsgId)
	require.Equal(t, m.OffsetMsgId, got.OffsetMsgId)
	require.Equal(t, m.StoreSize, got.StoreSize)
	require.Equal(t, m.QueueOffset, got.QueueOffset)
	require.Equal(t, m.SysFlag, got.SysFlag)
	require.Equal(t, m.BornTimestamp, got.BornTimestamp)
	require.Equal(t, m.BornHost, got.BornHost)
	require.Equal(t, m.StoreTimestamp, got.StoreTimestamp)
	require.Equal(t, m.StoreHost, got.StoreHost)
	require.Equal(t, m.CommitLogOffset, got.CommitLogOffset)
	require.Equal(t, m.BodyCRC, got.BodyCRC)
	require.Equal(t, m.ReconsumeTimes, got.ReconsumeTimes)
	require.Equal(t, m.PreparedTransactionOffset, got.PreparedTransactionOffset)
	require.Equal(t, "T", got.Topic)
	require.Equal(t, []byte("b"), got.Body)
	require.Equal(t, 1, got.Queue.QueueId)
	require.Equal(t, "Orig", got.GetProperty(primitive.PropertyRetryTopic))
}

func TestPullResultCrossesThePipes(t *testing.T) {
	r := &primitive.PullResult{NextBeginOffset: 3, MinOffset: 0, MaxOffset: 3, Status: primitive.PullFound,
		SuggestWhichBrokerId: 1}
	var msgs []*primitive.MessageExt
	for i := range 3 {
		m := &primitive.MessageExt{QueueOffset: int64(i)}
		m.Body = []byte(fmt.Sprint("m-", i))
		msgs = append(msgs, m)
	}
	r.SetMessageExts(msgs)

	got := throughJSON(t, FromPullResult(r)).Primitive()
	require.Equal(t, int64(3), got.NextBeginOffset)
	require.Equal(t, int64(3), got.MaxOffset)
	require.Equal(t, primitive.PullFound, got.Status)
	require.Equal(t, int64(1), got.SuggestWhichBrokerId)
	require.Len(t, got.GetMessageExts(), 3)
	for i, m := range got.GetMessageExts() {
		require.Equal(t, int64(i), m.QueueOffset)
		require.Equal(t, fmt.Sprint("m-", i), string(m.Body))
	}
}

func TestClientErrorsKeepTheirSentinel(t *testing.T) {
	wrapped := fmt.Errorf("fetch route: %w", clienterrors.ErrTopicNotExist)
	ce, ok := DecodeError(EncodeError(wrapped).Error())
	require.True(t, ok)
	require.Equal(t, wrapped.Error(), ce.Error())
	require.ErrorIs(t, ce, clienterrors.ErrTopicNotExist)
	require.NotErrorIs(t, ce, clienterrors.ErrRouteNotFound)

	// An error of the broker, as the client reports it: its text, no sentinel.
	plain := errors.New("CODE: 16, DESC: No permission for topic:T")
	ce, ok = DecodeError(EncodeError(plain).Error())
	require.True(t, ok)
	require.Equal(t, plain.Error(), ce.Error())
	require.NoError(t, ce.Unwrap())

	require.NoError(t, EncodeError(nil))
	_, ok = DecodeError("goclient driver: no producer with id 3")
	require.False(t, ok, "text EncodeError did not make")
}

func TestCallCarriesTheDeadline(t *testing.T) {
	require.Zero(t, CallFrom(context.Background()).Timeout)
	ctx, cancel := Call{}.Context()
	_, ok := ctx.Deadline()
	require.False(t, ok)
	cancel()

	parent, cancelParent := context.WithTimeout(context.Background(), time.Hour)
	defer cancelParent()
	c := CallFrom(parent)
	require.Greater(t, c.Timeout, 59*time.Minute)
	require.LessOrEqual(t, c.Timeout, time.Hour)
	ctx, cancel = c.Context()
	defer cancel()
	d, ok := ctx.Deadline()
	require.True(t, ok)
	require.WithinDuration(t, time.Now().Add(time.Hour), d, time.Minute)

	expired, cancelExpired := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelExpired()
	require.Equal(t, time.Millisecond, CallFrom(expired).Timeout, "a spent deadline is still a deadline")
}
