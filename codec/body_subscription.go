package codec

import (
	"encoding/json"
)

// Subscription groups: subscriptionGroup.json, the body of GET_ALL_SUBSCRIPTIONGROUP_CONFIG
// (201) and of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200). PROTOCOL §7.6, §13.4.
//
// The Go admin decodes 201 with encoding/json into admin.SubscriptionGroupWrapper (keys
// matched case-insensitively, only a subset of fields, DataVersion.Counter as int32).

// Java's SubscriptionGroupConfig defaults (§7.6), applied to keys missing on decode.
const (
	subscriptionGroupDefaultRetryQueueNums        = 1
	subscriptionGroupDefaultRetryMaxTimes         = 16
	subscriptionGroupDefaultWhichBrokerWhenSlowly = 1
	subscriptionGroupDefaultConsumeTimeoutMinute  = 15
)

// subscriptionGroupDefaultRetryPolicy is what 5.x writes for the default group retry policy
// (type CUSTOMIZED, its policy objects null and so left out). A constant string, copied into
// each config: json.Unmarshal reuses a RawMessage's backing array.
const subscriptionGroupDefaultRetryPolicy = `{"type":"CUSTOMIZED"}`

// SubscriptionGroupConfig is one consumer group's broker-side settings. Field order is
// fastjson's key order. GroupRetryPolicy and SubscriptionDataSet (5.x) are kept as opaque
// JSON.
type SubscriptionGroupConfig struct {
	Attributes                     map[string]string `json:"attributes"` // 5.x; {} when nil
	BrokerID                       int64             `json:"brokerId"`   // suggested broker id when not lagging (0)
	ConsumeBroadcastEnable         bool              `json:"consumeBroadcastEnable"`
	ConsumeEnable                  bool              `json:"consumeEnable"`
	ConsumeFromMinEnable           bool              `json:"consumeFromMinEnable"`
	ConsumeMessageOrderly          bool              `json:"consumeMessageOrderly"`
	ConsumeTimeoutMinute           int32             `json:"consumeTimeoutMinute"`
	GroupName                      string            `json:"groupName"`
	GroupRetryPolicy               json.RawMessage   `json:"groupRetryPolicy,omitempty"` // 5.x
	GroupSysFlag                   int32             `json:"groupSysFlag"`
	NotifyConsumerIdsChangedEnable bool              `json:"notifyConsumerIdsChangedEnable"`
	RetryMaxTimes                  int32             `json:"retryMaxTimes"`
	RetryQueueNums                 int32             `json:"retryQueueNums"`
	SubscriptionDataSet            json.RawMessage   `json:"subscriptionDataSet,omitempty"` // 5.x, null by default
	WhichBrokerWhenConsumeSlowly   int64             `json:"whichBrokerWhenConsumeSlowly"`
}

// NewSubscriptionGroupConfig returns a config with Java's defaults (§7.6): consume,
// from-min and broadcast enabled, not orderly, 1 retry queue, 16 retries, broker id 0,
// broker 1 when consuming slowly, notify on member change, sys flag 0, 15 min timeout,
// retry policy CUSTOMIZED, no attributes.
func NewSubscriptionGroupConfig(groupName string) SubscriptionGroupConfig {
	return SubscriptionGroupConfig{
		Attributes:                     map[string]string{},
		ConsumeBroadcastEnable:         true,
		ConsumeEnable:                  true,
		ConsumeFromMinEnable:           true,
		ConsumeTimeoutMinute:           subscriptionGroupDefaultConsumeTimeoutMinute,
		GroupName:                      groupName,
		GroupRetryPolicy:               json.RawMessage(subscriptionGroupDefaultRetryPolicy),
		NotifyConsumerIdsChangedEnable: true,
		RetryMaxTimes:                  subscriptionGroupDefaultRetryMaxTimes,
		RetryQueueNums:                 subscriptionGroupDefaultRetryQueueNums,
		WhichBrokerWhenConsumeSlowly:   subscriptionGroupDefaultWhichBrokerWhenSlowly,
	}
}

// subscriptionGroupPlain has SubscriptionGroupConfig's fields without its methods.
type subscriptionGroupPlain SubscriptionGroupConfig

// UnmarshalJSON applies the defaults to keys the input leaves out (4.x files lack the 5.x
// keys), then decodes.
func (c *SubscriptionGroupConfig) UnmarshalJSON(data []byte) error {
	*c = NewSubscriptionGroupConfig("")
	if err := json.Unmarshal(data, (*subscriptionGroupPlain)(c)); err != nil {
		return err
	}
	bodyNormalizeRaw(&c.GroupRetryPolicy)
	bodyNormalizeRaw(&c.SubscriptionDataSet)
	return nil
}

// MarshalJSON writes attributes as {} when nil, as Java does.
func (c SubscriptionGroupConfig) MarshalJSON() ([]byte, error) {
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	return encodeBodyJSON(subscriptionGroupPlain(c), false, "SubscriptionGroupConfig")
}

// Encode writes the config compactly (the body of UPDATE_AND_CREATE_SUBSCRIPTIONGROUP).
// Safe for concurrent use if c is not modified meanwhile.
func (c *SubscriptionGroupConfig) Encode() ([]byte, error) {
	return encodeBodyJSON(c, false, "SubscriptionGroupConfig")
}

// DecodeSubscriptionGroupConfig parses one group config, defaults applied to absent keys.
// Safe for concurrent use.
func DecodeSubscriptionGroupConfig(body []byte) (*SubscriptionGroupConfig, error) {
	c := new(SubscriptionGroupConfig)
	if err := decodeBodyJSON(body, c, "SubscriptionGroupConfig"); err != nil {
		return nil, err
	}
	return c, nil
}

// SubscriptionGroupWrapper is subscriptionGroup.json and the body of
// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201). Field order is fastjson's.
type SubscriptionGroupWrapper struct {
	DataVersion DataVersion `json:"dataVersion"`
	// ForbiddenTable (5.x): group → topic → forbidden bits. {} when nil.
	ForbiddenTable         map[string]map[string]int32        `json:"forbiddenTable"`
	SubscriptionGroupTable map[string]SubscriptionGroupConfig `json:"subscriptionGroupTable"` // {} when nil
}

// subscriptionWrapperPlain has SubscriptionGroupWrapper's fields without its methods.
type subscriptionWrapperPlain SubscriptionGroupWrapper

// MarshalJSON writes nil tables as {}, as Java does.
func (w SubscriptionGroupWrapper) MarshalJSON() ([]byte, error) {
	if w.ForbiddenTable == nil {
		w.ForbiddenTable = map[string]map[string]int32{}
	}
	if w.SubscriptionGroupTable == nil {
		w.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	return encodeBodyJSON(subscriptionWrapperPlain(w), false, "SubscriptionGroupWrapper")
}

// Encode writes the wrapper compactly (remoting body) or tab-indented (the file).
// Safe for concurrent use if w is not modified meanwhile.
func (w *SubscriptionGroupWrapper) Encode(pretty bool) ([]byte, error) {
	return encodeBodyJSON(w, pretty, "SubscriptionGroupWrapper")
}

// DecodeSubscriptionGroupWrapper parses subscriptionGroup.json or a 201 body (4.x or 5.x).
// Nil tables come back empty. Safe for concurrent use.
func DecodeSubscriptionGroupWrapper(body []byte) (*SubscriptionGroupWrapper, error) {
	w := new(SubscriptionGroupWrapper)
	if err := decodeBodyJSON(body, w, "SubscriptionGroupWrapper"); err != nil {
		return nil, err
	}
	if w.ForbiddenTable == nil {
		w.ForbiddenTable = map[string]map[string]int32{}
	}
	if w.SubscriptionGroupTable == nil {
		w.SubscriptionGroupTable = map[string]SubscriptionGroupConfig{}
	}
	return w, nil
}
