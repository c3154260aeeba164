package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ringmq/ringmq/codec"
	"github.com/ringmq/ringmq/internal/testutil"
)

var newTopicRuns atomic.Int32

// TestSendMessageCreatesTheTopic: sendMessage to a topic no name server has a route for sends, as
// a RocketMQ producer does, through the default topic TBW102's route, and the broker
// (autoCreateTopicEnable=true, the default) creates the topic on that first send with the
// producer's defaultTopicQueueNums (4) queues; the message is at offset 0 of its queue with its
// body. -b and -i pick the queue among those the default route gives.
func TestSendMessageCreatesTheTopic(t *testing.T) {
	run := newTopicRuns.Add(1) // the fixture outlives a -count=N run: each run its own topics
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"any queue", nil},
		{"queue 3 of broker-a", []string{"-b", fixture.brokerName, "-i", "3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			topic := fmt.Sprintf("Hello_%d_%d", run, len(tc.args))
			out := ok(t, append([]string{"sendMessage", "-t", topic, "-p", "hi", "--output", "json"}, tc.args...)...)
			var s sent
			require.NoError(t, json.Unmarshal([]byte(out), &s), out)
			require.Equal(t, "SEND_OK", s.SendStatus)
			require.Equal(t, fixture.brokerName, s.BrokerName)
			require.Equal(t, int64(0), s.QueueOffset)
			require.Less(t, s.QueueID, int32(producerDefaultTopicQueueNums))
			if tc.args != nil {
				require.Equal(t, int32(3), s.QueueID)
			}

			// The broker registers the new topic: its own route, 4 read and 4 write queues.
			var route codec.TopicRouteData
			testutil.Eventually(t, "the new topic's route", func() bool {
				r := mqadmin(t, nil, "topicRoute", "-t", topic)
				return r.code == 0 && json.Unmarshal([]byte(r.stdout), &route) == nil
			})
			require.Len(t, route.QueueDatas, 1)
			qd := route.QueueDatas[0]
			require.Equal(t, [4]any{fixture.brokerName, int32(4), int32(4), permRead | permWrite},
				[4]any{qd.BrokerName, qd.ReadQueueNums, qd.WriteQueueNums, qd.Perm})

			// The message, read back at offset 0 of its queue (the ConsumeQueue is written after
			// the send is answered).
			var got struct{ Messages []messageView }
			testutil.Eventually(t, "the message in the ConsumeQueue", func() bool {
				r := mqadmin(t, nil, "queryMsgByOffset", "-t", topic, "-b", fixture.brokerName,
					"-i", fmt.Sprint(s.QueueID), "-o", "0", "--output", "json")
				return r.code == 0 && json.Unmarshal([]byte(r.stdout), &got) == nil
			})
			require.Len(t, got.Messages, 1)
			m := got.Messages[0]
			require.NotNil(t, m.Body)
			require.Equal(t, [4]any{topic, s.QueueID, int64(0), "hi"}, [4]any{m.Topic, m.QueueID, m.QueueOffset, *m.Body})
			require.Equal(t, s.MsgID, m.MsgID)
		})
	}
}

// TestSendMessageWithoutAutoCreate: with autoCreateTopicEnable=false a new topic stays
// TOPIC_NOT_EXIST, and the error says why. A broker started with the key off has no TBW102, so
// the default topic has no route either; a broker that turned it off while running (its TBW102
// stays, as in RocketMQ) refuses the send itself.
func TestSendMessageWithoutAutoCreate(t *testing.T) {
	t.Run("off at start", func(t *testing.T) {
		cfg := smallBrokerConfig(t.TempDir())
		cfg.BrokerName = "broker-off"
		cfg.AutoCreateTopicEnable = false
		b, err := startBroker(cfg)
		require.NoError(t, err)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			require.NoError(t, b.Shutdown(ctx))
		})
		r := mqadmin(t, map[string]string{"NAMESRV_ADDR": b.EmbeddedNamesrvAddr()}, "sendMessage", "-t", "Hello", "-p", "hi")
		require.Equal(t, 1, r.code, r.stderr)
		require.Empty(t, r.stdout)
		golden(t, "error_sendMessage_no_autocreate", r.stderr)
	})

	t.Run("turned off", func(t *testing.T) {
		ok(t, "updateBrokerConfig", "-b", fixture.broker, "-k", "autoCreateTopicEnable", "-v", "false")
		t.Cleanup(func() { ok(t, "updateBrokerConfig", "-b", fixture.broker, "-k", "autoCreateTopicEnable", "-v", "true") })
		r := mqadmin(t, nil, "sendMessage", "-t", "NeverCreated", "-b", fixture.brokerName, "-i", "0", "-p", "hi")
		require.Equal(t, 1, r.code, r.stderr)
		require.Empty(t, r.stdout)
		golden(t, "error_sendMessage_autocreate_turned_off", r.stderr)
		r = mqadmin(t, nil, "topicRoute", "-t", "NeverCreated")
		require.Equal(t, 1, r.code, "the topic was not created: %s", r.stdout)
	})
}
