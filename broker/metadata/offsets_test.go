package metadata

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
	"github.com/ringmq/ringmq/store"
)

func TestConsumerOffsetFileFormatAndRoundTrip(t *testing.T) {
	dir := t.TempDir()
	m := NewConsumerOffsetManager(dir, logtest.Discard())
	require.Equal(t, int64(-1), m.Query("G1", "TopicTest", 0))
	m.Commit("G1", "TopicTest", 0, 250)
	m.Commit("G1", "TopicTest", 1, 248)
	m.Commit("G1", "TopicTest", 1, 249) // last commit wins
	m.Commit("G1", "%RETRY%G1", 0, 0)
	m.Commit("G2", "TopicTest", 10, 7)
	require.Equal(t, int64(249), m.Query("G1", "TopicTest", 1))
	require.True(t, m.file.dirty.Load())
	require.NoError(t, m.Persist())

	data, err := os.ReadFile(filepath.Join(dir, "config", "consumerOffset.json"))
	require.NoError(t, err)
	// Java's bytes: bare numeric queue ids, "topic@group" keys.
	require.Equal(t, "{\n\t\"offsetTable\":{\n\t\t\"%RETRY%G1@G1\":{0:0},\n\t\t\"TopicTest@G1\":{0:250,1:249},\n\t\t\"TopicTest@G2\":{10:7}\n\t}\n}",
		string(data))
	require.Equal(t, `{"offsetTable":{"%RETRY%G1@G1":{0:0},"TopicTest@G1":{0:250,1:249},"TopicTest@G2":{10:7}}}`,
		string(m.Snapshot().Encode(false)))

	m2 := NewConsumerOffsetManager(dir, logtest.Discard())
	require.NoError(t, m2.Load())
	require.Equal(t, m.Snapshot(), m2.Snapshot())
	require.Equal(t, []string{"G1", "G2"}, m2.GroupsByTopic("TopicTest"))
	require.Equal(t, []string{"%RETRY%G1", "TopicTest"}, m2.TopicsByGroup("G1"))
	require.Equal(t, map[int32]int64{0: 250, 1: 249}, m2.QueryAll("G1", "TopicTest"))
	// What a forced deletion reports against (store.ConsumerOffsetsFunc).
	require.ElementsMatch(t, []store.ConsumerOffset{
		{Group: "G1", Topic: "TopicTest", QueueID: 0, Offset: 250},
		{Group: "G1", Topic: "TopicTest", QueueID: 1, Offset: 249},
		{Group: "G1", Topic: "%RETRY%G1", QueueID: 0, Offset: 0},
		{Group: "G2", Topic: "TopicTest", QueueID: 10, Offset: 7},
	}, m2.All())

	require.Equal(t, 2, m2.RemoveTopic("TopicTest"))
	require.Equal(t, int64(-1), m2.Query("G2", "TopicTest", 10))
	require.Equal(t, 1, m2.RemoveGroup("G1"))
	require.Equal(t, 0, m2.RemoveGroup("G1"))
	require.Empty(t, m2.Snapshot().OffsetTable)
}

func TestConsumerOffsetLoadsJavaFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config", "consumerOffset.json")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	// As a 5.x Java broker writes it: dataVersion and a derived groupTopicMap.
	java := `{
	"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},
	"groupTopicMap":{"G1":["TopicTest"]},
	"offsetTable":{
		"TopicTest@G1":{0:5,1:6},
		"bad-key-without-at":{0:1}
	}
}`
	require.NoError(t, os.WriteFile(path, []byte(java), 0o644))
	m := NewConsumerOffsetManager(dir, logtest.Discard())
	require.NoError(t, m.Load())
	require.Equal(t, int64(6), m.Query("G1", "TopicTest", 1))
	require.Len(t, m.Snapshot().OffsetTable, 1)
}

func TestSubscriptionGroupManager(t *testing.T) {
	dir := t.TempDir()
	clock := testutil.NewManualClock()
	m := NewSubscriptionGroupManager(true, dir, clock.Now, logtest.Discard())
	for _, g := range []string{"TOOLS_CONSUMER", "FILTERSRV_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONS-HTTP-PROXY",
		"CID_ONSAPI_PULL", "CID_ONSAPI_PERMISSION", "CID_ONSAPI_OWNER", "CID_RMQ_SYS_TRANS"} {
		require.True(t, m.Contains(g), g)
	}
	v0 := m.Snapshot().DataVersion

	g, err := m.FindOrCreate("G1")
	require.NoError(t, err)
	require.Equal(t, codec.NewSubscriptionGroupConfig("G1"), g)
	require.Equal(t, v0.Counter+1, m.Snapshot().DataVersion.Counter)
	require.True(t, m.file.dirty.Load())
	_, err = m.FindOrCreate("bad group")
	require.ErrorIs(t, err, ErrGroupNotExist, "an illegal name is never created")

	off := NewSubscriptionGroupManager(false, t.TempDir(), clock.Now, logtest.Discard())
	_, err = off.FindOrCreate("G1")
	require.ErrorIs(t, err, ErrGroupNotExist)
	_, err = off.FindOrCreate("CID_RMQ_SYS_X")
	require.NoError(t, err, "system groups are always created")
	// autoCreateSubscriptionGroup changed at run time: followed from the next call.
	off.SetAutoCreate(true)
	_, err = off.FindOrCreate("G1")
	require.NoError(t, err)
	off.SetAutoCreate(false)
	_, err = off.FindOrCreate("G9")
	require.ErrorIs(t, err, ErrGroupNotExist)
	_, err = off.FindOrCreate("G1")
	require.NoError(t, err, "a group created meanwhile stays")

	custom := codec.NewSubscriptionGroupConfig("G2")
	custom.RetryQueueNums, custom.NotifyConsumerIdsChangedEnable = 3, false
	require.NoError(t, m.Update(custom))
	m2 := NewSubscriptionGroupManager(true, dir, time.Now, logtest.Discard())
	require.NoError(t, m2.Load())
	require.Equal(t, m.Snapshot(), m2.Snapshot())
	got, ok := m2.Get("G2")
	require.True(t, ok)
	require.Equal(t, int32(3), got.RetryQueueNums)

	deleted, err := m2.Delete("G2")
	require.NoError(t, err)
	require.True(t, deleted)
	require.False(t, m2.Contains("G2"))
	m3 := NewSubscriptionGroupManager(true, dir, time.Now, logtest.Discard())
	require.NoError(t, m3.Load())
	require.False(t, m3.Contains("G2"))
	require.True(t, m3.Contains("G1"), "G1 was in the file written by Update")
}

// TestSubscriptionGroupReplaceRacesFindOrCreate: a slave's sync replaces the table while pulls
// auto-create groups in it; under -race, nothing of the installed table is read outside the lock.
func TestSubscriptionGroupReplaceRacesFindOrCreate(t *testing.T) {
	clock := testutil.NewManualClock()
	m := NewSubscriptionGroupManager(true, t.TempDir(), clock.Now, logtest.Discard())
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := m.FindOrCreate("G" + strconv.Itoa(i)); err != nil {
				t.Errorf("G%d not created", i)
				return
			}
		}
	}()
	for i := range 50 {
		w := &codec.SubscriptionGroupWrapper{
			SubscriptionGroupTable: map[string]codec.SubscriptionGroupConfig{"M": codec.NewSubscriptionGroupConfig("M")},
			DataVersion:            codec.DataVersion{Counter: int64(i + 1), Timestamp: 1},
		}
		replaced, err := m.ReplaceFromMaster(w)
		require.NoError(t, err)
		require.True(t, replaced)
	}
	close(stop)
	<-done
	require.True(t, m.Contains("M"))
}
