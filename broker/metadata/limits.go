package metadata

import (
	"errors"
	"fmt"
	"strings"
)

// Limits on what clients create implicitly. A heartbeat, pull or send-back naming an unknown
// consumer group creates it (autoCreateSubscriptionGroup), and a heartbeat or send-back creates
// the group's retry and dead-letter topics: a client that makes up group names would otherwise
// fill subscriptionGroup.json and topics.json, and the broker's memory, for good. Past a limit
// the request is refused and nothing is created; the admin requests
// (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, UPDATE_AND_CREATE_TOPIC) are never limited, and what
// they create counts towards the limits like everything else in the tables. RocketMQ 4.9 has no
// such limits (SubscriptionGroupManager.findSubscriptionGroupConfig and
// TopicConfigManager.createTopicInSendMessageBackMethod create whatever they are asked for).

// Keys of the limits in broker.conf, named in refusals.
const (
	AutoCreateSubscriptionGroupLimitKey = "autoCreateSubscriptionGroupLimit"
	AutoCreateRetryTopicLimitKey        = "autoCreateRetryTopicLimit"
)

// What was created implicitly (AutoCreateObserver's kind; the metrics' label values).
const (
	KindSubscriptionGroup = "subscription_group"
	KindRetryTopic        = "retry_topic"
	KindDLQTopic          = "dlq_topic"
)

// ErrGroupNotExist: the subscription group does not exist and autoCreateSubscriptionGroup is
// off (or the name is not a valid group name).
var ErrGroupNotExist = errors.New("metadata: subscription group does not exist")

// LimitError is an implicit creation refused at a limit.
type LimitError struct {
	Kind  string // KindSubscriptionGroup, KindRetryTopic or KindDLQTopic
	Name  string // the group or topic not created
	Limit int
	Key   string // the broker.conf key of the limit
}

func (e *LimitError) Error() string {
	what := "subscription group"
	if e.Kind != KindSubscriptionGroup {
		what = "retry topic"
	}
	return fmt.Sprintf("%s limit %d reached (key %s): %s not created", what, e.Limit, e.Key, e.Name)
}

// Remark is a refusal's remark: the Java broker's wording, then the limit that was reached when
// err is a *LimitError.
func Remark(remark string, err error) string {
	var le *LimitError
	if errors.As(err, &le) {
		return remark + "; " + le.Error()
	}
	return remark
}

// AutoCreateObserver is told about every implicit creation (created=true) and every one refused
// at a limit (created=false), by kind. It is called without the tables' locks held and must
// not block.
type AutoCreateObserver func(kind string, created bool)

// IsGroupTopic reports whether topic is a consumer group's retry or dead-letter topic.
func IsGroupTopic(topic string) bool {
	return strings.HasPrefix(topic, RetryGroupTopicPrefix) || strings.HasPrefix(topic, DLQGroupTopicPrefix)
}

// groupTopicKind is KindRetryTopic or KindDLQTopic for a group topic.
func groupTopicKind(topic string) string {
	if strings.HasPrefix(topic, DLQGroupTopicPrefix) {
		return KindDLQTopic
	}
	return KindRetryTopic
}
