package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/remotingtest"
	"github.com/ringmq/ringmq/internal/testutil"
)

// sent is what sendMessage --output json reported for one message.
type sent struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	SendStatus  string `json:"sendStatus"`
	MsgID       string `json:"msgId"`
	OffsetMsgID string `json:"offsetMsgId"`
	QueueOffset int64  `json:"queueOffset"`
}

func send(t *testing.T, topic string, queue, body, key, tag string) sent {
	t.Helper()
	out := ok(t, "sendMessage", "-t", topic, "-b", fixture.brokerName, "-i", queue, "-p", body, "-k", key, "-c", tag, "--output", "json")
	var s sent
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.Equal(t, "SEND_OK", s.SendStatus)
	return s
}

// heartbeat makes the test a client of the broker: a producer of group pg and a push consumer
// of group cg subscribed to topic, until the returned connection closes.
func heartbeat(t *testing.T, pg, cg, topic string) *remotingtest.Conn {
	t.Helper()
	hb := codec.HeartbeatData{ClientID: "127.0.0.1@mqadmin-test",
		ProducerDataSet: []codec.ProducerData{{GroupName: pg}},
		ConsumerDataSet: []codec.ConsumerData{*remotingtest.ConsumerData(cg, remotingtest.Subscription(topic, 1))}}
	body, err := hb.Encode()
	require.NoError(t, err)
	c := remotingtest.Dial(t, fixture.broker)
	req := codec.NewRequest(codec.RequestHeartBeat, nil, body)
	req.Language = codec.LanguageGo
	resp := c.Call(req)
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
	return c
}

// commitOffset commits a group's offset on the fixture broker, as a consumer would.
func commitOffset(t *testing.T, c *remotingtest.Conn, group, topic string, queue int32, offset int64) {
	t.Helper()
	h := codec.UpdateConsumerOffsetRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queue, CommitOffset: offset}
	ext := map[string]string{}
	h.Encode(ext)
	resp := c.Call(codec.NewRequest(codec.RequestUpdateConsumerOffset, ext, nil))
	require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
}

var commandsRuns atomic.Int32

// TestCommands walks an operator's session through every command against the fixture broker,
// in order (each step builds on the state the previous ones left), and checks each output
// against its golden file.
func TestCommands(t *testing.T) {
	// The fixture broker outlives a run: with -count=N each run names its own topics and
	// groups (TopicA_r2, ...), and the goldens see them without the suffix.
	suffix := ""
	if n := commandsRuns.Add(1); n > 1 {
		suffix = fmt.Sprintf("_r%d", n)
	}
	topic, group, producerGroup, ordered := "TopicA"+suffix, "GroupA"+suffix, "ProducerA"+suffix, "TopicOrdered"+suffix
	// CommitLog positions and record sizes then depend on the runs before.
	physicOffsets := regexp.MustCompile(`(physicOffset=|physicSize=)\d+`) // queryCq: where the record is and its size (topic names) depend on the run
	positions := regexp.MustCompile(`(CommitLog Offset: +|commitLogOffset=|storeSize=|"commitLogOffset": |"storeSize": )\d+`)
	golden := func(t *testing.T, name, out string) {
		t.Helper()
		if suffix == "" {
			golden(t, name, out)
			return
		}
		goldenWith(t, name, strings.ReplaceAll(out, suffix, ""), func(s string) string { return positions.ReplaceAllString(s, "${1}N") })
	}

	t.Run("updateTopic", func(t *testing.T) {
		golden(t, "updateTopic", ok(t, "updateTopic", "-c", fixture.cluster, "-t", topic, "-r", "2", "-w", "2"))
		golden(t, "updateTopic_order", ok(t, "updateTopic", "-b", fixture.broker, "-t", ordered, "-r", "1", "-w", "1", "-o", "true"))
		// The order config went to the name server's KV store.
		ns := remotingtest.Dial(t, fixture.namesrv)
		ext := map[string]string{}
		(&codec.GetKVConfigRequestHeader{Namespace: orderTopicConfigNamespace, Key: ordered}).Encode(ext)
		resp := ns.Call(codec.NewRequest(codec.RequestGetKVConfig, ext, nil))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		require.Equal(t, fixture.brokerName+":1", resp.ExtFields["value"])
	})

	t.Run("topicRoute", func(t *testing.T) {
		golden(t, "topicRoute", ok(t, "topicRoute", "-t", topic))
		golden(t, "topicRoute_list", ok(t, "topicRoute", "-t", topic, "-l"))
	})

	var msgs []sent
	t.Run("sendMessage", func(t *testing.T) {
		golden(t, "sendMessage", ok(t, "sendMessage", "-t", topic, "-b", fixture.brokerName, "-i", "0", "-p", "first", "-k", "k1", "-c", "tagA"))
		msgs = append(msgs, send(t, topic, "0", "second", "k2", "tagB"), send(t, topic, "1", "third", "k3", "tagA"))
		require.Equal(t, []int64{1, 0}, []int64{msgs[0].QueueOffset, msgs[1].QueueOffset})
	})

	t.Run("topicStatus", func(t *testing.T) {
		// The ConsumeQueue is written by the broker's dispatcher, after the send is answered.
		var out string
		testutil.Eventually(t, "the sends in the ConsumeQueue", func() bool {
			out = ok(t, "topicStatus", "-t", topic, "--output", "json")
			return strings.Contains(out, `"maxOffset": 2`) && strings.Contains(out, `"maxOffset": 1`)
		})
		golden(t, "topicStatus_json", out)
		golden(t, "topicStatus", ok(t, "topicStatus", "-t", topic))
	})

	t.Run("queryMsgByKey", func(t *testing.T) {
		var out string
		testutil.Eventually(t, "k2 in the index", func() bool {
			out = ok(t, "queryMsgByKey", "-t", topic, "-k", "k2")
			return strings.Contains(out, msgs[0].MsgID)
		})
		golden(t, "queryMsgByKey", out)
		// The index is written in CommitLog order: the last message indexed means all are.
		testutil.Eventually(t, "k3 in the index", func() bool {
			return strings.Contains(ok(t, "queryMsgByKey", "-t", topic, "-k", "k3"), msgs[1].MsgID)
		})
	})

	t.Run("queryMsgById", func(t *testing.T) {
		byOffsetID := ok(t, "queryMsgById", "-t", topic, "-i", msgs[0].OffsetMsgID)
		golden(t, "queryMsgById", byOffsetID)
		require.Contains(t, byOffsetID, "Message Body:        second\n")
		// A producer's message id is looked up in the index instead.
		require.Equal(t, byOffsetID, ok(t, "queryMsgById", "-t", topic, "-i", msgs[0].MsgID))
		golden(t, "queryMsgByUniqueKey", ok(t, "queryMsgByUniqueKey", "-t", topic, "-i", msgs[1].MsgID))
		golden(t, "queryMsgByOffset", ok(t, "queryMsgByOffset", "-t", topic, "-b", fixture.brokerName, "-i", "0", "-o", "1"))
		golden(t, "queryMsgByOffset_json", ok(t, "queryMsgByOffset", "-t", topic, "-b", fixture.brokerName, "-i", "1", "-o", "0", "--output", "json"))
	})

	t.Run("consumeMessage", func(t *testing.T) {
		golden(t, "consumeMessage", ok(t, "consumeMessage", "-t", topic, "-c", "2"))
		golden(t, "consumeMessage_offset", ok(t, "consumeMessage", "-t", topic, "-b", fixture.brokerName, "-i", "0", "-o", "1"))
		golden(t, "printMsg_tag", ok(t, "printMsg", "-t", topic, "-s", "tagA"))
	})

	t.Run("updateSubGroup", func(t *testing.T) {
		golden(t, "updateSubGroup", ok(t, "updateSubGroup", "-b", fixture.broker, "-g", group, "-r", "3", "-o", "true"))
	})

	client := heartbeat(t, producerGroup, group, topic)
	t.Run("connections", func(t *testing.T) {
		golden(t, "consumerConnection", ok(t, "consumerConnection", "-g", group))
		golden(t, "producerConnection", ok(t, "producerConnection", "-g", producerGroup, "-t", topic))
	})

	t.Run("consumerProgress", func(t *testing.T) {
		commitOffset(t, client, group, topic, 0, 1)
		commitOffset(t, client, group, topic, 1, 1)
		golden(t, "consumerProgress", ok(t, "consumerProgress", "-g", group, "-t", topic))
		golden(t, "consumerProgress_json", ok(t, "consumerProgress", "-g", group, "--output", "json"))
		// Without -g: one line per group that has a retry topic (the heartbeat created it).
		var all string
		testutil.Eventually(t, "the group's retry topic at the name server", func() bool {
			all = ok(t, "consumerProgress")
			return strings.Contains(all, group)
		})
		golden(t, "consumerProgress_groups", rowsOf(all, group))
	})

	t.Run("resetOffsetByTime", func(t *testing.T) {
		// The group is online: the broker resets it and tells its consumers.
		golden(t, "resetOffsetByTime_broker", ok(t, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "0"))
		told := client.Next()
		for told.Code == int32(codec.RequestNotifyConsumerIdsChanged) { // from the heartbeat
			told = client.Next()
		}
		require.Equal(t, int32(codec.RequestResetConsumerClientOffset), told.Code)
		body, err := codec.DecodeResetOffsetBody(told.Body)
		require.NoError(t, err)
		require.Equal(t, map[codec.MessageQueue]int64{
			{Topic: topic, BrokerName: fixture.brokerName, QueueID: 0}: 0,
			{Topic: topic, BrokerName: fixture.brokerName, QueueID: 1}: 0,
		}, body.OffsetTable)
		require.Contains(t, ok(t, "consumerProgress", "-g", group, "-t", topic), "Diff Total: 3\n")

		// Offline, mqadmin commits the offsets itself (RocketMQ's resetOffsetByTimeOld).
		require.NoError(t, client.Close())
		testutil.Eventually(t, "the group offline", func() bool {
			return mqadmin(t, nil, "consumerConnection", "-g", group).code == 1
		})
		committer := remotingtest.Dial(t, fixture.broker)
		commitOffset(t, committer, group, topic, 0, 2)
		commitOffset(t, committer, group, topic, 1, 1)
		require.Contains(t, ok(t, "consumerProgress", "-g", group, "-t", topic), "Diff Total: 0\n")
		golden(t, "resetOffsetByTime", ok(t, "resetOffsetByTime", "-g", group, "-t", topic, "-s", "0"))
		require.Contains(t, ok(t, "consumerProgress", "-g", group, "-t", topic), "Diff Total: 3\n")
	})

	t.Run("cloneGroupOffset", func(t *testing.T) {
		committer := remotingtest.Dial(t, fixture.broker)
		commitOffset(t, committer, group, topic, 0, 2)
		commitOffset(t, committer, group, topic, 1, 1)
		clone := "GroupClone" + suffix
		golden(t, "cloneGroupOffset", ok(t, "cloneGroupOffset", "-s", group, "-d", clone, "-t", topic))
		require.Contains(t, ok(t, "consumerProgress", "-g", clone, "-t", topic), "Diff Total: 0\n", "the clone consumed what the group did")
	})

	t.Run("statsAll", func(t *testing.T) {
		committer := remotingtest.Dial(t, fixture.broker)
		commitOffset(t, committer, group, topic, 0, 1)
		commitOffset(t, committer, group, topic, 1, 0)
		t.Cleanup(func() { // as the steps after expect it
			commitOffset(t, committer, group, topic, 0, 2)
			commitOffset(t, committer, group, topic, 1, 1)
		})
		// The rates and day counts come from the broker's windows, sampled every 10 s since it
		// started: only the lag and the rows are the goldens'; the numbers are checked for form.
		out := ok(t, "statsAll", "-t", topic)
		golden(t, "statsAll", statsColumns(t, out, 3))
		var res struct {
			Rows []struct {
				Topic        string  `json:"topic"`
				Group        string  `json:"group"`
				Accumulation int64   `json:"accumulation"`
				InTPS        float64 `json:"inTps"`
				InMsg24Hour  int64   `json:"inMsg24Hour"`
			} `json:"rows"`
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, "statsAll", "-t", topic, "--output", "json")), &res))
		require.Len(t, res.Rows, 2)
		require.Equal(t, group, res.Rows[0].Group)
		require.EqualValues(t, 2, res.Rows[0].Accumulation)
		require.EqualValues(t, 0, res.Rows[1].Accumulation, "the clone consumed all")
		require.GreaterOrEqual(t, res.Rows[0].InMsg24Hour, int64(0))

		out = ok(t, "brokerConsumeStats", "-b", fixture.broker)
		dates := regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
		golden(t, "brokerConsumeStats", rowsOf(dates.ReplaceAllString(out, "DATE"), topic))
		require.Regexp(t, `\nDiff Total: \d+\n$`, out)
		// -l: only the queues lagging by at least that much.
		require.Equal(t, 1, strings.Count(ok(t, "brokerConsumeStats", "-b", fixture.broker, "-l", "1", "-o", "false"), topic+" "),
			"queue 0 of the group lags by 1, queue 1 has consumed nothing yet")
	})

	t.Run("queryCq", func(t *testing.T) {
		out := ok(t, "queryCq", "-t", topic, "-q", "0", "-i", "1", "-c", "5", "-g", group)
		golden(t, "queryCq", positions.ReplaceAllString(physicOffsets.ReplaceAllString(out, "${1}N"), "${1}N"))
		require.Contains(t, out, "max: 2, min: 0\n")
		require.Equal(t, 1, strings.Count(out, "idx: "), "one entry from index 1 to the queue's end")
	})

	t.Run("cleanExpiredCQ", func(t *testing.T) {
		golden(t, "cleanExpiredCQ", ok(t, "cleanExpiredCQ", "-b", fixture.broker))
		golden(t, "cleanExpiredCQ_cluster", ok(t, "cleanExpiredCQ", "-c", fixture.cluster))
		require.Contains(t, ok(t, "cleanExpiredCQ", "--output", "json"), fixture.broker, "every cluster's brokers")
		require.Contains(t, ok(t, "queryCq", "-t", topic, "-q", "0", "-i", "0"), "max: 2, min: 0\n", "live queues stay")
	})

	t.Run("deleteSubGroup", func(t *testing.T) {
		golden(t, "deleteSubGroup", ok(t, "deleteSubGroup", "-b", fixture.broker, "-g", group, "-r", "true"))
		r := mqadmin(t, nil, "consumerProgress", "-g", group, "-t", topic)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stdout, "Diff Total: 3\n", "no committed offset left: lag is the whole queue")
	})

	t.Run("deleteTopic", func(t *testing.T) {
		golden(t, "deleteTopic", ok(t, "deleteTopic", "-c", fixture.cluster, "-t", ordered))
		r := mqadmin(t, nil, "topicRoute", "-t", ordered)
		require.Equal(t, 1, r.code)
		golden(t, "topicRoute_missing", r.stderr)
	})

	t.Run("topicList", func(t *testing.T) {
		out := ok(t, "topicList")
		require.Contains(t, out, "\n"+topic+"\n")
		require.NotContains(t, out, ordered)
		golden(t, "topicList_cluster", rowsOf(ok(t, "topicList", "-c"), fixture.cluster+" "+topic))
	})
}

// rowsOf keeps a table's header line and the rows that start with prefix (then a space or
// the line's end), cells separated by single spaces for the match.
func rowsOf(table, prefix string) string {
	var b strings.Builder
	for i, l := range strings.SplitAfter(table, "\n") {
		cells := strings.Join(strings.Fields(l), " ")
		if i == 0 || cells == prefix || strings.HasPrefix(cells, prefix+" ") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// statsColumns checks that statsAll's last four columns (rates, day counts) are numbers and
// writes them as N, cells separated by single spaces; keep is how many columns come first.
func statsColumns(t *testing.T, table string, keep int) string {
	t.Helper()
	var b strings.Builder
	for i, l := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		cells := strings.Fields(l)
		if i > 0 {
			require.Len(t, cells, keep+4, l)
			for j := keep; j < len(cells); j++ {
				require.Regexp(t, `^\d+(\.\d\d)?$`, cells[j], l)
				cells[j] = "N"
			}
		}
		b.WriteString(strings.Join(cells, " ") + "\n")
	}
	return b.String()
}

// grepLines keeps the lines of s that contain one of words.
func grepLines(s string, words ...string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				b.WriteString(l)
				break
			}
		}
	}
	return b.String()
}

func TestBrokerCommands(t *testing.T) {
	t.Run("clusterList", func(t *testing.T) {
		// TPS, hours and message counts move with time and with the other tests: only their
		// shape is checked.
		out := regexp.MustCompile(`\d+\.\d+`).ReplaceAllString(normalise(ok(t, "clusterList")), "N.N")
		golden(t, "clusterList", out)
		// #SPACE is the used share of the CommitLog's file system, statfs'd by the broker.
		var list struct {
			Brokers []clusterBroker `json:"brokers"`
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, "clusterList", "--output", "json")), &list))
		require.Len(t, list.Brokers, 1)
		require.True(t, list.Brokers[0].CommitLogDiskRatio > 0 && list.Brokers[0].CommitLogDiskRatio <= 1,
			"commitLogDiskRatio %v", list.Brokers[0].CommitLogDiskRatio)
		require.Regexp(t, `^\d+$`, list.Brokers[0].PullQueueWaitMs)
		more := ok(t, "clusterList", "-m", "-c", fixture.cluster)
		require.Regexp(t, `^#Cluster Name +#Broker Name +#InTotalYest +#OutTotalYest +#InTotalToday +#OutTotalToday\n`+
			`DefaultCluster +broker-a +\d+ +\d+ +\d+ +\d+\n$`, more)
	})

	t.Run("brokerStatus", func(t *testing.T) {
		var status struct {
			Brokers []brokerKV `json:"brokers"`
		}
		require.NoError(t, json.Unmarshal([]byte(ok(t, "brokerStatus", "-b", fixture.broker, "--output", "json")), &status))
		require.Len(t, status.Brokers, 1)
		require.Equal(t, fixture.broker, status.Brokers[0].Addr)
		require.Equal(t, "V4_9_8", status.Brokers[0].Table["brokerVersionDesc"])
		require.Equal(t, "true", status.Brokers[0].Table["brokerActive"])
		text := ok(t, "brokerStatus", "-c", fixture.cluster)
		golden(t, "brokerStatus_cluster", grepLines(text, "brokerVersionDesc", "brokerActive", "runningFlags"))
	})

	t.Run("getBrokerConfig", func(t *testing.T) {
		out := ok(t, "getBrokerConfig", "-c", fixture.cluster)
		golden(t, "getBrokerConfig", grepLines(out, "====", "brokerName ", "brokerClusterName ", "brokerIP1 ", "flushDiskType "))
		_, props, _ := strings.Cut(out, "\n")
		_, propsB, _ := strings.Cut(ok(t, "getBrokerConfig", "-b", fixture.broker), "\n")
		require.Equal(t, props, propsB, "-b and -c print the same properties")
		require.Contains(t, props, "brokerName                                        =  broker-a\n")
	})

	t.Run("updateBrokerConfig", func(t *testing.T) {
		// The operator's drain: brokerPermission 4 takes effect at once (getBrokerConfig shows it,
		// the route's queues lose write), 6 restores it.
		ok(t, "updateTopic", "-c", fixture.cluster, "-t", "DrainedTopic", "-r", "1", "-w", "1")
		golden(t, "updateBrokerConfig", ok(t, "updateBrokerConfig", "-b", fixture.broker, "-k", "brokerPermission", "-v", "4"))
		require.Contains(t, ok(t, "getBrokerConfig", "-b", fixture.broker), "brokerPermission                                  =  4\n")
		require.Contains(t, ok(t, "topicRoute", "-t", "DrainedTopic"), `"perm": 4,`)
		golden(t, "updateBrokerConfig_cluster", ok(t, "updateBrokerConfig", "-c", fixture.cluster, "-k", "brokerPermission", "-v", "6"))
		require.Contains(t, ok(t, "getBrokerConfig", "-b", fixture.broker), "brokerPermission                                  =  6\n")
		require.Contains(t, ok(t, "topicRoute", "-t", "DrainedTopic"), `"perm": 6,`)
		// A key that needs a restart: the broker's answer, as it came.
		r := mqadmin(t, nil, "updateBrokerConfig", "-b", fixture.broker, "-k", "fileReservedTime", "-v", "48")
		require.Equal(t, 1, r.code)
		golden(t, "updateBrokerConfig_restart", r.stderr)
	})

	t.Run("updateKvConfig", func(t *testing.T) {
		golden(t, "updateKvConfig", ok(t, "updateKvConfig", "-s", "NS_TEST", "-k", "key1", "-v", "value1"))
		ns := remotingtest.Dial(t, fixture.namesrv)
		ext := map[string]string{}
		(&codec.GetKVConfigRequestHeader{Namespace: "NS_TEST", Key: "key1"}).Encode(ext)
		resp := ns.Call(codec.NewRequest(codec.RequestGetKVConfig, ext, nil))
		require.Equal(t, int32(codec.ResponseSuccess), resp.Code, resp.Remark)
		require.Equal(t, "value1", resp.ExtFields["value"])
	})
}

// Errors name the command, whom it asked, what, and what came back; usage mistakes exit 2,
// failures 1.
func TestErrors(t *testing.T) {
	ok(t, "updateTopic", "-c", fixture.cluster, "-t", "ErrorsTopic", "-r", "1", "-w", "1")
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
	}{
		{"no_namesrv", map[string]string{"NAMESRV_ADDR": ""}, []string{"topicList"}, 2},
		{"unreachable_namesrv", nil, []string{"topicList", "-n", "127.0.0.1:1"}, 1},
		{"bad_output", nil, []string{"topicList", "--output", "yaml"}, 2},
		{"missing_flag", nil, []string{"topicRoute"}, 2},
		{"stray_argument", nil, []string{"topicRoute", "-t", "T", "extra"}, 2},
		{"unknown_command", nil, []string{"topicRoot"}, 2},
		{"bad_bool", nil, []string{"updateTopic", "-b", "127.0.0.1:1", "-t", "T", "-o", "maybe"}, 2},
		{"both_b_and_c", nil, []string{"brokerStatus", "-b", "127.0.0.1:1", "-c", "C"}, 2},
		{"unknown_cluster", nil, []string{"brokerStatus", "-c", "NoSuchCluster"}, 1},
		{"consumer_not_online", nil, []string{"consumerConnection", "-g", "NobodyHere", "-b", "BROKER"}, 1},
		{"bad_timestamp", nil, []string{"resetOffsetByTime", "-g", "G", "-t", "T", "-s", "yesterday"}, 2},
		{"no_message_at_offset", nil, []string{"queryMsgByOffset", "-t", "ErrorsTopic", "-b", "broker-a", "-i", "0", "-o", "5"}, 1},
		{"no_such_queue", nil, []string{"sendMessage", "-t", "ErrorsTopic", "-b", "broker-a", "-i", "7", "-p", "x"}, 1},
		{"no_such_broker_name", nil, []string{"consumeMessage", "-t", "ErrorsTopic", "-b", "broker-z", "-i", "0"}, 1},
		{"message_not_found", nil, []string{"queryMsgByUniqueKey", "-t", "ErrorsTopic", "-i", "0A0A0A0A00002A9F0000000000000000"}, 1},
		{"client_options", nil, []string{"queryMsgById", "-t", "ErrorsTopic", "-i", "X", "-s", "true"}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := make([]string, len(tc.args))
			for i, a := range tc.args {
				args[i] = strings.ReplaceAll(a, "BROKER", fixture.broker)
			}
			r := mqadmin(t, tc.env, args...)
			require.Equal(t, tc.code, r.code, r.stderr)
			require.Empty(t, r.stdout)
			golden(t, "error_"+tc.name, r.stderr)
		})
	}
}

// -n takes a list; a name server that does not answer is skipped for the next one.
func TestNamesrvFailover(t *testing.T) {
	r := mqadmin(t, nil, "clusterList", "-n", "127.0.0.1:1;"+fixture.namesrv, "--output", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var res struct {
		Brokers []clusterBroker `json:"brokers"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	require.Len(t, res.Brokers, 1)
	require.Equal(t, fixture.broker, res.Brokers[0].Addr)
	require.True(t, res.Brokers[0].Active)
}
