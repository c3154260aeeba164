package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
)

// A group of messages for several topics and queues is stored as one contiguous run of records: each
// takes the next queue offset of its own queue, in the order added, and reads back whole, in every
// append mode; a group that does not fit the current file rolls it like a put.
func TestPutGroupAcrossQueuesAndFiles(t *testing.T) {
	for _, mode := range appendModes {
		t.Run(mode.name, func(t *testing.T) {
			cfg := testConfig(t.TempDir())
			cfg.TransientStorePoolEnable, cfg.FlushDiskType = mode.transient, mode.flush
			s := openStarted(t, cfg, Deps{})
			require.True(t, s.GroupsPuts())

			mustPut(t, s, testMessage("A", 0, []byte("before")))
			var g PutGroup
			want := map[string][]string{} // topic/queue → bodies in queue order
			want["A/0"] = []string{"before"}
			sent := 0
			for round := 0; round < 12; round++ { // 12 groups of 10 × ~1 KiB: several 64 KiB files
				for i := 0; i < 10; i++ {
					topic, qid := []string{"A", "B"}[i%2], int32(i%3)
					b := fmt.Sprintf("%s-%d-%d-%s", topic, qid, sent, body(900, "x"))
					st, err := s.AddToGroup(&g, testMessage(topic, qid, []byte(b)))
					require.NoError(t, err)
					require.Equal(t, PutOK, st)
					key := fmt.Sprintf("%s/%d", topic, qid)
					want[key] = append(want[key], b)
					sent++
				}
				require.Equal(t, 10, g.Len())
				require.NoError(t, s.PutGroup(&g))
				require.Len(t, g.Results, 10)
				require.Zero(t, g.Len(), "a group that was put holds nothing to put")
				for i, r := range g.Results {
					require.Equal(t, PutOK, r.Status)
					require.EqualValues(t, 1, r.MsgNum)
					require.Equal(t, g.Results[0].StoreTimestamp, r.StoreTimestamp)
					if i > 0 { // consecutive records
						prev := g.Results[i-1]
						require.Equal(t, prev.WroteOffset+int64(prev.WroteBytes), r.WroteOffset)
					}
					rec, release, err := s.LookMessageByOffset(r.WroteOffset)
					require.NoError(t, err)
					dec, err := codec.DecodeRecord(rec, true)
					require.NoError(t, err)
					require.Equal(t, r.QueueOffset, dec.QueueOffset)
					require.Equal(t, r.WroteOffset, dec.PhysicalOffset)
					require.Equal(t, g.Topic(i), string(dec.Topic))
					release()
				}
			}
			require.Greater(t, len(commitLogFiles(t, cfg.StorePathRootDir)), 1, "the groups rolled files")
			waitDispatched(t, s)
			for key, bodies := range want {
				var topic string
				var qid int32
				_, err := fmt.Sscanf(key[:1]+" "+key[2:], "%s %d", &topic, &qid)
				require.NoError(t, err)
				recs := getAll(t, s, topic, qid)
				require.Len(t, recs, len(bodies), key)
				for i, rec := range recs {
					require.Equal(t, int64(i), rec.QueueOffset, key)
					require.Equal(t, bodies[i], string(rec.Body), key)
				}
			}
		})
	}
}

// A message a put would refuse is refused when added and leaves the group as it was; a store that
// cannot take puts fails every message of the group alike, takes no queue offset, and keeps taking
// groups once it can again.
func TestPutGroupRefusals(t *testing.T) {
	cfg := testConfig(t.TempDir())
	cfg.FlushDiskType = SyncFlush
	s := openStarted(t, cfg, Deps{})
	var g PutGroup

	st, err := s.AddToGroup(&g, testMessage("T", 0, []byte("ok-1")))
	require.NoError(t, err)
	require.Equal(t, PutOK, st)
	st, err = s.AddToGroup(&g, testMessage("T", 0, make([]byte, cfg.MaxMessageSize+1)))
	require.ErrorIs(t, err, ErrMessageIllegal)
	require.Equal(t, MessageIllegal, st)
	st, err = s.AddToGroup(&g, testMessage("", 0, []byte("no topic")))
	require.Error(t, err)
	require.NotEqual(t, PutOK, st)
	require.Equal(t, 1, g.Len(), "refused messages are not added")

	s.flags.set(FlagDiskFull)
	err = s.PutGroup(&g)
	require.ErrorIs(t, err, ErrDiskFull)
	require.Len(t, g.Results, 1)
	require.Equal(t, ServiceNotAvailable, g.Results[0].Status)
	require.Zero(t, s.GetMaxOffsetInQueue("T", 0), "a failed group takes no queue offset")

	s.flags.clear(FlagDiskFull)
	for _, b := range []string{"ok-2", "ok-3"} {
		_, err := s.AddToGroup(&g, testMessage("T", 0, []byte(b)))
		require.NoError(t, err)
	}
	require.Equal(t, 2, g.Len(), "adding after a put starts a new group")
	require.NoError(t, s.PutGroup(&g))
	require.Equal(t, []int64{0, 1}, []int64{g.Results[0].QueueOffset, g.Results[1].QueueOffset})
	waitDispatched(t, s)
	recs := getAll(t, s, "T", 0)
	require.Len(t, recs, 2)
	require.Equal(t, "ok-2", string(recs[0].Body))
	require.Equal(t, "ok-3", string(recs[1].Body))

	require.NoError(t, s.PutGroup(&g), "an empty group")
	require.Empty(t, g.Results)
	require.NoError(t, s.Shutdown())
	_, err = s.AddToGroup(&g, testMessage("T", 0, []byte("late")))
	require.NoError(t, err)
	err = s.PutGroup(&g)
	require.True(t, errors.Is(err, ErrServiceNotAvailable), "%v", err)
}
