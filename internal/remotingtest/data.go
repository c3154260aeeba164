package remotingtest

import "github.com/ringmq/ringmq/codec"

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
