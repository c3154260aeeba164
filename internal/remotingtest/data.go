package remotingtest

import (
	"testing"
	"time"

	"github.com/ringmq/ringmq/codec"
)

// ConsumerData is a heartbeat's entry for a clustering, push-mode consumer group that starts
// from the last offset, subscribed as subs says.
func ConsumerData(group string, subs ...codec.SubscriptionData) *codec.ConsumerData {
	return &codec.ConsumerData{
		GroupName: group, ConsumeType: codec.ConsumePassively, MessageModel: codec.MessageModelClustering,
		ConsumeFromWhere: codec.ConsumeFromLastOffset, SubscriptionDataSet: subs,
	}
}

// Subscription is a TAG subscription to topic: "*" without tags, else the first tag as the
// expression and all of them as the tag set.
func Subscription(topic string, version int64, tags ...string) codec.SubscriptionData {
	s := codec.SubscriptionData{Topic: topic, SubString: "*", SubVersion: version, ExpressionType: "TAG", TagsSet: tags}
	if len(tags) > 0 {
		s.SubString = tags[0]
	}
	return s
}

// HeartbeatBody is a HEART_BEAT body with a consumer group per key of groups, each
// subscribed ("*") to the topics listed.
func HeartbeatBody(t testing.TB, groups map[string][]string) []byte {
	t.Helper()
	hb := &codec.HeartbeatData{ClientID: "127.0.0.1@test"}
	for g, topics := range groups {
		cd := codec.ConsumerData{GroupName: g}
		for _, topic := range topics {
			cd.SubscriptionDataSet = append(cd.SubscriptionDataSet, codec.SubscriptionData{Topic: topic, SubString: "*"})
		}
		hb.ConsumerDataSet = append(hb.ConsumerDataSet, cd)
	}
	body, err := hb.Encode()
	if err != nil {
		t.Fatalf("remotingtest: heartbeat body: %v", err)
	}
	return body
}

// PullRequest is a PULL_MESSAGE (11) request: maxNums messages of a queue from offset, with
// the given sys flags, long-polling suspend time and TAG subscription; no commit offset.
func PullRequest(group, topic string, queueID int32, offset int64, maxNums int32, sysFlag int32,
	suspend time.Duration, subscription string) *codec.RemotingCommand {
	h := codec.PullMessageRequestHeader{ConsumerGroup: group, Topic: topic, QueueID: queueID, QueueOffset: offset,
		MaxMsgNums: maxNums, SysFlag: sysFlag, CommitOffset: -1, SuspendTimeoutMillis: suspend.Milliseconds(),
		Subscription: subscription, ExpressionType: codec.ExpressionTypeTag}
	ext := map[string]string{}
	h.Encode(ext)
	return codec.NewRequest(codec.RequestPullMessage, ext, nil)
}

// Records splits a pull or query body into its records (CRC checked), failing t on a bad one.
func Records(t testing.TB, body []byte) []codec.Record {
	t.Helper()
	var out []codec.Record
	for at := 0; at < len(body); {
		r, err := codec.DecodeRecord(body[at:], true)
		if err != nil {
			t.Fatalf("record %d, at byte %d of the body: %v", len(out), at, err)
		}
		out = append(out, r)
		at += int(r.TotalSize)
	}
	return out
}

// Bodies lists the records' bodies, in order.
func Bodies(recs []codec.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Body))
	}
	return out
}
