package metadata

import (
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
)

// observations records an AutoCreateObserver's calls.
type observations struct {
	mu      sync.Mutex
	created map[string]int
	refused map[string]int
}

func (o *observations) observe(kind string, created bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.created == nil {
		o.created, o.refused = map[string]int{}, map[string]int{}
	}
	if created {
		o.created[kind]++
	} else {
		o.refused[kind]++
	}
}

func TestSubscriptionGroupAutoCreateLimit(t *testing.T) {
	dir := t.TempDir()
	m := NewSubscriptionGroupManager(true, dir, time.Now, logtest.Discard())
	m.SetAutoCreateLimit(3)
	var obs observations
	m.SetAutoCreateObserver(obs.observe)
	for i := range 3 {
		_, err := m.FindOrCreate("G" + strconv.Itoa(i))
		require.NoError(t, err)
	}
	require.Equal(t, 3, m.Count(), "built-in groups do not count")

	_, err := m.FindOrCreate("G3")
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, LimitError{Kind: KindSubscriptionGroup, Name: "G3", Limit: 3, Key: "autoCreateSubscriptionGroupLimit"}, *le)
	require.Equal(t, "subscription group limit 3 reached (key autoCreateSubscriptionGroupLimit): G3 not created", err.Error())
	require.Equal(t, "subscription group [G3] does not exist; subscription group limit 3 reached (key "+
		"autoCreateSubscriptionGroupLimit): G3 not created", Remark("subscription group [G3] does not exist", err))
	require.Equal(t, "plain", Remark("plain", ErrGroupNotExist))
	require.False(t, m.Contains("G3"), "nothing created past the limit")
	_, err = m.FindOrCreate("CID_RMQ_SYS_X")
	require.ErrorAs(t, err, &le, "system-prefixed groups are limited too")
	_, err = m.FindOrCreate("G1")
	require.NoError(t, err, "an existing group is found past the limit")
	require.Equal(t, map[string]int{KindSubscriptionGroup: 3}, obs.created)
	require.Equal(t, map[string]int{KindSubscriptionGroup: 2}, obs.refused)

	// An admin's group is never refused, and counts.
	require.NoError(t, m.Update(codec.NewSubscriptionGroupConfig("Admin1")))
	require.Equal(t, 4, m.Count())
	// Deleting makes room again; deleting a built-in group does not.
	_, err = m.Delete(ToolsConsumerGroup)
	require.NoError(t, err)
	_, err = m.FindOrCreate("G4")
	require.ErrorAs(t, err, &le)
	for _, g := range []string{"Admin1", "G0"} {
		ok, err := m.Delete(g)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.Equal(t, 2, m.Count())
	_, err = m.FindOrCreate("G4")
	require.NoError(t, err)

	// The count is the file's after a restart, and after a slave's sync.
	require.NoError(t, m.Persist())
	again := NewSubscriptionGroupManager(true, dir, time.Now, logtest.Discard())
	require.NoError(t, again.Load())
	require.Equal(t, 3, again.Count())
	again.SetAutoCreateLimit(3)
	_, err = again.FindOrCreate("G5")
	require.ErrorAs(t, err, &le)
	w := m.Snapshot()
	w.DataVersion.Counter += 100
	delete(w.SubscriptionGroupTable, "G1")
	_, err = again.ReplaceFromMaster(w)
	require.NoError(t, err)
	require.Equal(t, 2, again.Count())
	_, err = again.FindOrCreate("G5")
	require.NoError(t, err)

	// No limit (≤ 0).
	m.SetAutoCreateLimit(0)
	for i := range 10 {
		_, err := m.FindOrCreate("N" + strconv.Itoa(i))
		require.NoError(t, err)
	}
}

func TestSubscriptionGroupLimitUnderConcurrentCreation(t *testing.T) {
	m := NewSubscriptionGroupManager(true, t.TempDir(), time.Now, logtest.Discard())
	m.SetAutoCreateLimit(50)
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for w := range 8 {
		wg.Go(func() {
			for i := range 20 {
				_, err := m.FindOrCreate("W" + strconv.Itoa(w) + "-" + strconv.Itoa(i))
				if errors.As(err, new(*LimitError)) {
					mu.Lock()
					refused++
					mu.Unlock()
				} else if err != nil {
					t.Errorf("FindOrCreate: %v", err)
				}
			}
		})
	}
	wg.Wait()
	require.Equal(t, 50, m.Count())
	require.Equal(t, 160-50, refused)
	require.Len(t, m.GroupNames(), 50+len(builtinGroups))
}

func TestRetryTopicAutoCreateLimit(t *testing.T) {
	dir := t.TempDir()
	m := NewTopicConfigManager(testTopicOptions(), dir, time.Now, logtest.Discard())
	m.SetAutoCreateRetryTopicLimit(3)
	var obs observations
	m.SetAutoCreateObserver(obs.observe)
	_, err := m.CreateInSendMessageBack(RetryTopic("G0"), 1, PermRead|PermWrite, 0)
	require.NoError(t, err)
	_, err = m.CreateInSendMessageBack(DLQTopic("G0"), 1, PermRead|PermWrite, 0)
	require.NoError(t, err)
	_, ok := m.CreateInSendMessage(RetryTopic("G1"), AutoCreateTopicKeyTopic, 4, 0) // a send to a retry topic
	require.True(t, ok)
	require.Equal(t, 3, m.GroupTopicCount())

	_, err = m.CreateInSendMessageBack(RetryTopic("G2"), 1, PermRead|PermWrite, 0)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "retry topic limit 3 reached (key autoCreateRetryTopicLimit): %RETRY%G2 not created", err.Error())
	_, err = m.CreateInSendMessageBack(DLQTopic("G2"), 1, PermRead|PermWrite, 0)
	require.ErrorAs(t, err, &le)
	require.Equal(t, KindDLQTopic, le.Kind)
	_, ok = m.CreateInSendMessage(RetryTopic("G2"), AutoCreateTopicKeyTopic, 4, 0)
	require.False(t, ok, "a send does not create a retry topic past the limit either")
	require.False(t, m.Contains(RetryTopic("G2")))
	require.False(t, m.Contains(DLQTopic("G2")))
	// Other topics are not limited by it.
	_, err = m.CreateInSendMessageBack(TransCheckMaxTimeTopic, 1, PermRead|PermWrite, 0)
	require.NoError(t, err)
	_, ok = m.CreateInSendMessage("Plain", AutoCreateTopicKeyTopic, 4, 0)
	require.True(t, ok)
	require.Equal(t, map[string]int{KindRetryTopic: 2, KindDLQTopic: 1}, obs.created)
	require.Equal(t, map[string]int{KindRetryTopic: 2, KindDLQTopic: 1}, obs.refused)

	// An admin's retry topic is not limited, and counts; deleting one makes room.
	tc := codec.NewTopicConfig(RetryTopic("Admin"))
	require.NoError(t, m.Update(tc))
	require.Equal(t, 4, m.GroupTopicCount())
	for _, topic := range []string{RetryTopic("Admin"), RetryTopic("G1")} {
		ok, err := m.Delete(topic)
		require.NoError(t, err)
		require.True(t, ok)
	}
	_, err = m.CreateInSendMessageBack(RetryTopic("G2"), 1, PermRead|PermWrite, 0)
	require.NoError(t, err)

	// The count follows the file and a slave's sync.
	require.NoError(t, m.Persist())
	again := NewTopicConfigManager(testTopicOptions(), dir, time.Now, logtest.Discard())
	require.NoError(t, again.Load())
	require.Equal(t, 3, again.GroupTopicCount())
	w := m.Snapshot()
	w.DataVersion.Counter += 100
	delete(w.TopicConfigTable, DLQTopic("G0"))
	_, err = again.ReplaceFromMaster(w)
	require.NoError(t, err)
	require.Equal(t, 2, again.GroupTopicCount())
}

func TestCommitChecked(t *testing.T) {
	m := NewConsumerOffsetManager(t.TempDir(), logtest.Discard())
	var refused []string
	m.SetRefusalObserver(func(reason string) { refused = append(refused, reason) })
	tc := codec.NewTopicConfig("T")
	tc.ReadQueueNums, tc.WriteQueueNums = 2, 4

	require.NoError(t, m.CheckQueue(tc, 0))
	require.NoError(t, m.CheckQueue(tc, 3), "a queue below the write queue count exists")
	err := m.CheckQueue(tc, 4)
	require.EqualError(t, err, "queueId[4] is illegal, topic:[T] has 4 queues")
	require.Error(t, m.CheckQueue(tc, -1))

	require.NoError(t, m.CommitChecked("G", "T", 0, 0, 10))
	require.NoError(t, m.CommitChecked("G", "T", 0, 10, 10))
	require.Equal(t, int64(10), m.Query("G", "T", 0))
	err = m.CommitChecked("G", "T", 0, -1, 10)
	require.EqualError(t, err, "offset is illegal, key:T@0, commit:-1, store:0~10")
	err = m.CommitChecked("G", "T", 1, 11, 10)
	var oe *OffsetError
	require.ErrorAs(t, err, &oe)
	require.Equal(t, RefusedOffsetPastMax, oe.Reason)
	require.Equal(t, int64(10), m.Query("G", "T", 0))
	require.Equal(t, int64(-1), m.Query("G", "T", 1), "nothing stored")
	require.Equal(t, []string{RefusedOffsetUnknownQueue, RefusedOffsetUnknownQueue, RefusedOffsetNegative,
		RefusedOffsetPastMax}, refused)

	allocs := testing.AllocsPerRun(100, func() { _ = m.CommitChecked("G", "T", 0, 5, 10) })
	require.Zero(t, allocs)
}
