package admin

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// resetStore answers queue offsets from tables: max offset and the offset at a timestamp.
type resetStore struct {
	fakeStore
	maxOffset map[int32]int64
	atTime    map[int64]map[int32]int64 // timestamp → queue → offset
}

func (s resetStore) GetMaxOffsetInQueue(_ string, q int32) int64 { return s.maxOffset[q] }
func (s resetStore) GetOffsetInQueueByTime(_ string, q int32, ts int64, upper bool) int64 {
	if upper {
		panic("reset searches the lower boundary")
	}
	return s.atTime[ts][q]
}

// liveGroup is a consumer registry with one live group that records what it was sent.
type liveGroup struct {
	fakeConsumers
	group string
	sent  *[]*codec.RemotingCommand
}

func (c liveGroup) ConsumerIDs(group string) []string {
	if group == c.group {
		return []string{"c1", "c2"}
	}
	return nil
}

func (c liveGroup) Oneway(group string, newRequest func() *codec.RemotingCommand) int {
	if group != c.group {
		return 0
	}
	for range 2 {
		*c.sent = append(*c.sent, newRequest())
	}
	return 2
}

func TestResetOffset(t *testing.T) {
	tables := openTables(t)
	tc := codec.NewTopicConfig("T")
	tc.WriteQueueNums, tc.ReadQueueNums = 3, 3
	require.NoError(t, tables.Topics.Update(tc))
	tables.Offsets.Commit("G", "T", 0, 5)
	tables.Offsets.Commit("G", "T", 1, 1)
	var sent []*codec.RemotingCommand
	p := New(Deps{Topics: tables.Topics, Groups: tables.Groups, Offsets: tables.Offsets, BrokerName: "b",
		Store: resetStore{maxOffset: map[int32]int64{0: 9, 1: 8, 2: 7},
			atTime: map[int64]map[int32]int64{1000: {0: 2, 1: 3, 2: 4}}},
		Consumers: liveGroup{group: "G", sent: &sent}})
	reset := func(ext map[string]string) *codec.RemotingCommand {
		return call(t, p.ProcessInvokeBrokerToResetOffset, ext, nil)
	}
	mq := func(q int32) codec.MessageQueue { return codec.MessageQueue{Topic: "T", BrokerName: "b", QueueID: q} }

	// Not forced: queue 1 keeps its lower committed offset; queue 2 had none.
	resp := reset(map[string]string{"topic": "T", "group": "G", "timestamp": "1000", "isForce": "false"})
	requireAnswer(t, resp, codec.ResponseSuccess, "")
	want := map[codec.MessageQueue]int64{mq(0): 2, mq(1): 1, mq(2): 4}
	body, err := codec.DecodeResetOffsetBody(resp.Body)
	require.NoError(t, err)
	require.Equal(t, want, body.OffsetTable)
	require.Equal(t, map[int32]int64{0: 2, 1: 1, 2: 4}, tables.Offsets.QueryAll("G", "T"), "committed on the broker too")
	require.Len(t, sent, 2, "every live member is told")
	for _, req := range sent {
		require.Equal(t, int32(codec.RequestResetConsumerClientOffset), req.Code)
		require.Equal(t, map[string]string{"topic": "T", "group": "G", "timestamp": "1000", "isForce": "false"}, req.ExtFields)
		require.Equal(t, resp.Body, req.Body)
	}

	// Forced to the end (-1), one queue only; then one queue to a given offset (5.x).
	resp = reset(map[string]string{"topic": "T", "group": "G", "timestamp": "-1", "isForce": "true", "queueId": "1"})
	body, err = codec.DecodeResetOffsetBody(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[codec.MessageQueue]int64{mq(1): 8}, body.OffsetTable)
	resp = reset(map[string]string{"topic": "T", "group": "G", "timestamp": "0", "isForce": "true", "queueId": "2", "offset": "6"})
	body, err = codec.DecodeResetOffsetBody(resp.Body)
	require.NoError(t, err)
	require.Equal(t, map[codec.MessageQueue]int64{mq(2): 6}, body.OffsetTable)
	require.Equal(t, map[int32]int64{0: 2, 1: 8, 2: 6}, tables.Offsets.QueryAll("G", "T"))

	requireAnswer(t, reset(map[string]string{"topic": "T", "group": "Offline", "timestamp": "1000", "isForce": "true"}),
		codec.ResponseConsumerNotOnline, "Consumer not online, so can not reset offset, Group: Offline Topic: T Timestamp: 1000")
	requireAnswer(t, reset(map[string]string{"topic": "Nope", "group": "G", "timestamp": "1000", "isForce": "true"}),
		codec.ResponseSystemError, "[reset-offset] reset offset failed, no topic in this broker. topic=Nope")
	resp = reset(map[string]string{"topic": "T", "group": "G", "timestamp": "x", "isForce": "true"})
	require.Equal(t, int32(codec.ResponseSystemError), resp.Code)
	require.Contains(t, resp.Remark, "timestamp")
	require.Len(t, sent, 6, "three resets told both members; the failed ones told nobody")
}
