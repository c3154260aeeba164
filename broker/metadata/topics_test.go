package metadata

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/logtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

func testTopicOptions() TopicOptions {
	return TopicOptions{
		ClusterName: "C1", BrokerName: "b1", AutoCreateTopicEnable: true, DefaultTopicQueueNums: 8,
		ClusterTopicEnable: true, BrokerTopicEnable: true, TraceTopicName: DefaultTraceTopic,
	}
}

func TestTopicManagerBuiltIns(t *testing.T) {
	clock := testutil.NewManualClock()
	m := NewTopicConfigManager(testTopicOptions(), t.TempDir(), clock.Now, logtest.Discard())
	type want struct {
		queues int32
		perm   int32
	}
	expect := map[string]want{
		"SELF_TEST_TOPIC":          {1, 6},
		"TBW102":                   {8, 7},
		"BenchmarkTest":            {1024, 6},
		"C1":                       {16, 7},
		"b1":                       {1, 7},
		"OFFSET_MOVED_EVENT":       {1, 6},
		"SCHEDULE_TOPIC_XXXX":      {18, 6},
		"C1_REPLY_TOPIC":           {1, 6},
		"RMQ_SYS_TRANS_HALF_TOPIC": {1, 6},
	}
	require.ElementsMatch(t, mapKeys(expect), m.TopicNames())
	for name, w := range expect {
		tc, ok := m.Get(name)
		require.True(t, ok, name)
		require.Equal(t, name, tc.TopicName)
		require.Equal(t, w.queues, tc.ReadQueueNums, name)
		require.Equal(t, w.queues, tc.WriteQueueNums, name)
		require.Equal(t, w.perm, tc.Perm, name)
		require.True(t, m.IsSystemTopic(name), name)
	}
	require.Equal(t, codec.DataVersion{Timestamp: clock.Now().UnixMilli()}, m.DataVersion())

	// Switches off: no TBW102; cluster and broker topics keep only INHERIT; trace topic on.
	opts := testTopicOptions()
	opts.AutoCreateTopicEnable, opts.ClusterTopicEnable, opts.BrokerTopicEnable = false, false, false
	opts.TraceTopicEnable = true
	m = NewTopicConfigManager(opts, t.TempDir(), clock.Now, logtest.Discard())
	require.False(t, m.Contains("TBW102"))
	c1, _ := m.Get("C1")
	require.Equal(t, PermInherit, c1.Perm)
	b1, _ := m.Get("b1")
	require.Equal(t, PermInherit, b1.Perm)
	trace, ok := m.Get(DefaultTraceTopic)
	require.True(t, ok)
	require.Equal(t, int32(1), trace.WriteQueueNums)
	require.True(t, m.IsSystemTopic("rmq_sys_anything"))
	require.False(t, m.IsSystemTopic("%RETRY%G"))
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestCreateInSendMessageRules(t *testing.T) {
	clock := testutil.NewManualClock()
	newManager := func(opts TopicOptions) (*TopicConfigManager, *atomic.Int32) {
		m := NewTopicConfigManager(opts, t.TempDir(), clock.Now, logtest.Discard())
		var changes atomic.Int32
		m.onChange = func() { changes.Add(1) }
		return m, &changes
	}
	m, changes := newManager(testTopicOptions())
	require.NoError(t, m.Update(func() codec.TopicConfig {
		tc := codec.NewTopicConfig("NoInherit")
		tc.Perm = 6
		return tc
	}()))
	require.NoError(t, m.Update(func() codec.TopicConfig {
		tc := codec.NewTopicConfig("MultiTemplate")
		tc.Perm, tc.WriteQueueNums, tc.TopicFilterType = 5, 2, codec.TopicFilterMultiTag // read+inherit
		return tc
	}()))
	changes.Store(0)
	v0 := m.DataVersion()

	cases := []struct {
		name, topic, template string
		clientQueues          int32
		ok                    bool
		queues, perm          int32
		filter                string
	}{
		{"from TBW102, client asks fewer", "T1", "TBW102", 4, true, 4, 6, codec.TopicFilterSingleTag},
		{"from TBW102, client asks more", "T2", "TBW102", 100, true, 8, 6, codec.TopicFilterSingleTag},
		{"negative client queues", "T3", "TBW102", -1, true, 0, 6, codec.TopicFilterSingleTag},
		{"template keeps perm and filter", "T4", "MultiTemplate", 4, true, 2, 4, codec.TopicFilterMultiTag},
		{"template missing", "T5", "Nope", 4, false, 0, 0, ""},
		{"template without INHERIT", "T6", "NoInherit", 4, false, 0, 0, ""},
		{"invalid name", "bad topic", "TBW102", 4, false, 0, 0, ""},
	}
	created := 0
	for _, tc := range cases {
		got, ok := m.CreateInSendMessage(tc.topic, tc.template, tc.clientQueues, 0)
		require.Equal(t, tc.ok, ok, tc.name)
		if !tc.ok {
			require.False(t, m.Contains(tc.topic), tc.name)
			continue
		}
		created++
		require.Equal(t, tc.topic, got.TopicName, tc.name)
		require.Equal(t, tc.queues, got.ReadQueueNums, tc.name)
		require.Equal(t, tc.queues, got.WriteQueueNums, tc.name)
		require.Equal(t, tc.perm, got.Perm, tc.name)
		require.Equal(t, tc.filter, got.TopicFilterType, tc.name)
		stored, _ := m.Get(tc.topic)
		require.Equal(t, got, stored, tc.name)
	}
	require.Equal(t, int32(created), changes.Load(), "one registration trigger per created topic")
	require.Equal(t, v0.Counter+int64(created), m.DataVersion().Counter)
	require.True(t, m.file.dirty.Load(), "the flusher writes the file")

	// An existing topic is returned as it is, with no change.
	again, ok := m.CreateInSendMessage("T1", "TBW102", 8, 0)
	require.True(t, ok)
	require.Equal(t, int32(4), again.WriteQueueNums)
	require.Equal(t, int32(created), changes.Load())

	// autoCreateTopicEnable=false: a TBW102 left in topics.json does not allow it.
	opts := testTopicOptions()
	opts.AutoCreateTopicEnable = false
	m2, _ := newManager(opts)
	require.NoError(t, m2.Update(func() codec.TopicConfig {
		tc := codec.NewTopicConfig("TBW102")
		tc.Perm = 7
		return tc
	}()))
	_, ok = m2.CreateInSendMessage("T7", "TBW102", 4, 0)
	require.False(t, ok)
}

func TestCreateInSendMessageBack(t *testing.T) {
	m := NewTopicConfigManager(testTopicOptions(), t.TempDir(), time.Now, logtest.Discard())
	var changes atomic.Int32
	m.onChange = func() { changes.Add(1) }
	tc, err := m.CreateInSendMessageBack("%RETRY%G1", 1, PermRead|PermWrite, TopicSysFlagUnitSub)
	require.NoError(t, err)
	require.Equal(t, codec.TopicConfig{
		Attributes: map[string]string{}, Perm: 6, ReadQueueNums: 1, TopicFilterType: codec.TopicFilterSingleTag,
		TopicName: "%RETRY%G1", TopicSysFlag: 2, WriteQueueNums: 1,
	}, tc)
	again, err := m.CreateInSendMessageBack("%RETRY%G1", 3, 2, 0)
	require.NoError(t, err)
	require.Equal(t, tc, again, "an existing topic is not changed")
	require.Equal(t, int32(1), changes.Load())
}

func TestTopicManagerPersistenceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	clock := testutil.NewManualClock()
	m := NewTopicConfigManager(testTopicOptions(), dir, clock.Now, logtest.Discard())
	clock.Advance(time.Second)
	tc := codec.NewTopicConfig("Orders")
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Order = 4, 4, true
	tc.Attributes = map[string]string{"message.type": "FIFO"}
	require.NoError(t, m.Update(tc))

	path := filepath.Join(dir, "config", "topics.json")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	// Java's layout: dataVersion first, keys alphabetical, tab-indented.
	require.Contains(t, string(data), "{\n\t\"dataVersion\": {\n\t\t\"counter\": 1,\n\t\t\"stateVersion\": 0,\n\t\t\"timestamp\": 1700000001000\n\t},\n\t\"topicConfigTable\": {")
	require.Contains(t, string(data), "\t\t\"Orders\": {\n\t\t\t\"attributes\": {\n\t\t\t\t\"message.type\": \"FIFO\"\n\t\t\t},\n"+
		"\t\t\t\"order\": true,\n\t\t\t\"perm\": 6,\n\t\t\t\"readQueueNums\": 4,\n\t\t\t\"topicFilterType\": \"SINGLE_TAG\",\n"+
		"\t\t\t\"topicName\": \"Orders\",\n\t\t\t\"topicSysFlag\": 0,\n\t\t\t\"writeQueueNums\": 4\n\t\t}")

	// A new manager sees the same table and version; the file's entries win over built-ins.
	m2 := NewTopicConfigManager(testTopicOptions(), dir, time.Now, logtest.Discard())
	require.NoError(t, m2.Load())
	require.Equal(t, m.Snapshot(), m2.Snapshot())

	// A topics.json an older ringmq wrote lists RMQ_SYS_TRANS_OP_HALF_TOPIC: it is left out, as
	// RocketMQ keeps no config for that topic.
	withOp := m.Snapshot()
	withOp.TopicConfigTable[TransOpHalfTopic] = codec.NewTopicConfig(TransOpHalfTopic)
	old, err := withOp.Encode(true)
	require.NoError(t, err)
	opDir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(opDir, "config"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(opDir, "config", "topics.json"), old, 0o644))
	mOp := NewTopicConfigManager(testTopicOptions(), opDir, time.Now, logtest.Discard())
	require.NoError(t, mOp.Load())
	require.False(t, mOp.Contains(TransOpHalfTopic))
	require.Equal(t, m.Snapshot(), mOp.Snapshot())

	// Delete writes the file again and keeps the previous one as .bak.
	ok, err := m2.Delete("Orders")
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = m2.Delete("Orders")
	require.NoError(t, err)
	require.False(t, ok)
	bak, err := os.ReadFile(path + ".bak")
	require.NoError(t, err)
	require.Equal(t, data, bak)

	// A damaged topics.json loads from the .bak (which still has Orders).
	require.NoError(t, os.WriteFile(path, []byte(`{"topicConfigTable":{`), 0o644))
	m3 := NewTopicConfigManager(testTopicOptions(), dir, time.Now, logtest.Discard())
	require.NoError(t, m3.Load())
	require.True(t, m3.Contains("Orders"))

	// Both damaged: an error naming the file, never an empty table.
	require.NoError(t, os.WriteFile(path+".bak", []byte(`nope`), 0o644))
	m4 := NewTopicConfigManager(testTopicOptions(), dir, time.Now, logtest.Discard())
	err = m4.Load()
	require.ErrorIs(t, err, ErrConfigFile)
	require.Contains(t, err.Error(), "topics.json")
}

func TestValidateTopicName(t *testing.T) {
	require.Equal(t, "", ValidateTopicName("Topic_A-1%|x"))
	require.Equal(t, "The specified topic is blank.", ValidateTopicName(" "))
	require.Equal(t, "The specified topic[a b] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
		ValidateTopicName("a b"))
	long := make([]byte, 128)
	for i := range long {
		long[i] = 'a'
	}
	require.Equal(t, "The specified topic is longer than topic max length.", ValidateTopicName(string(long)))
	require.Equal(t, "", ValidateTopicName("%RETRY%"+string(long)), "retry topics may be up to 255")
}

// autoCreateTopicEnable changed at run time (UPDATE_BROKER_CONFIG): off refuses the next
// auto-creation and keeps TBW102; on after a start with it off adds TBW102 as a start would,
// once, and asks for a registration.
func TestSetAutoCreateTopicEnable(t *testing.T) {
	clock := testutil.NewManualClock()
	m := NewTopicConfigManager(testTopicOptions(), t.TempDir(), clock.Now, logtest.Discard())
	var changes atomic.Int32
	m.onChange = func() { changes.Add(1) }
	m.SetAutoCreateTopicEnable(false)
	_, ok := m.CreateInSendMessage("T1", AutoCreateTopicKeyTopic, 4, 0)
	require.False(t, ok)
	require.True(t, m.Contains(AutoCreateTopicKeyTopic))
	m.SetAutoCreateTopicEnable(true)
	_, ok = m.CreateInSendMessage("T1", AutoCreateTopicKeyTopic, 4, 0)
	require.True(t, ok)
	require.Equal(t, int32(1), changes.Load(), "only the created topic changed the table")

	opts := testTopicOptions()
	opts.AutoCreateTopicEnable = false
	off := NewTopicConfigManager(opts, t.TempDir(), clock.Now, logtest.Discard())
	off.onChange = func() { changes.Add(1) }
	require.False(t, off.Contains(AutoCreateTopicKeyTopic))
	v0 := off.DataVersion()
	off.SetAutoCreateTopicEnable(true)
	off.SetAutoCreateTopicEnable(true) // no change: nothing added twice
	tc, ok := off.Get(AutoCreateTopicKeyTopic)
	require.True(t, ok)
	require.Equal(t, autoCreateTemplate(8), tc)
	require.Equal(t, PermInherit|PermRead|PermWrite, tc.Perm)
	require.Equal(t, v0.Counter+1, off.DataVersion().Counter)
	require.Equal(t, int32(2), changes.Load())
	require.True(t, off.file.dirty.Load())
	created, ok := off.CreateInSendMessage("T2", AutoCreateTopicKeyTopic, 4, 0)
	require.True(t, ok)
	require.Equal(t, int32(4), created.WriteQueueNums)
}

// NextVersion (a brokerPermission change) advances the version and keeps every topic.
func TestTopicNextVersion(t *testing.T) {
	clock := testutil.NewManualClock()
	m := NewTopicConfigManager(testTopicOptions(), t.TempDir(), clock.Now, logtest.Discard())
	before := m.Snapshot()
	clock.Advance(time.Second)
	m.NextVersion()
	after := m.Snapshot()
	require.Equal(t, before.TopicConfigTable, after.TopicConfigTable)
	require.Equal(t, before.DataVersion.Counter+1, after.DataVersion.Counter)
	require.Equal(t, before.DataVersion.Timestamp+1000, after.DataVersion.Timestamp)
	require.True(t, m.file.dirty.Load())
}
