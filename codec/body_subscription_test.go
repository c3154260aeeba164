package codec

import (
	"encoding/json"
	"testing"

	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/stretchr/testify/require"
)

const goldenSubscriptionGroupG = `{"attributes":{},"brokerId":0,"consumeBroadcastEnable":true,"consumeEnable":true,` +
	`"consumeFromMinEnable":true,"consumeMessageOrderly":false,"consumeTimeoutMinute":15,"groupName":"G",` +
	`"groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,` +
	`"retryMaxTimes":16,"retryQueueNums":1,"whichBrokerWhenConsumeSlowly":1}`

func TestSubscriptionGroupConfigGolden(t *testing.T) {
	c := NewSubscriptionGroupConfig("G")
	body, err := c.Encode()
	require.NoError(t, err)
	require.Equal(t, goldenSubscriptionGroupG, string(body))

	back, err := DecodeSubscriptionGroupConfig(body)
	require.NoError(t, err)
	require.Equal(t, &c, back)
}

func TestSubscriptionGroupConfigDefaultsOnDecode(t *testing.T) {
	// A 4.x subscriptionGroup.json entry: no 5.x keys, some 4.x keys left out too.
	got, err := DecodeSubscriptionGroupConfig([]byte(`{"groupName":"G","consumeEnable":false,"retryMaxTimes":3}`))
	require.NoError(t, err)
	want := NewSubscriptionGroupConfig("G")
	want.ConsumeEnable = false
	want.RetryMaxTimes = 3
	require.Equal(t, &want, got)

	// 5.x extras kept opaque; nulls dropped.
	got, err = DecodeSubscriptionGroupConfig([]byte(`{"groupName":"G","groupRetryPolicy":{"type":"EXPONENTIAL",` +
		`"exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}},"subscriptionDataSet":[{"topic":"T",` +
		`"expressionType":"TAG","expression":"*","version":0}],"attributes":{"+a":"b"}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"EXPONENTIAL","exponentialRetryPolicy":{"initial":5000,"max":7200000,"multiplier":2}}`, string(got.GroupRetryPolicy))
	require.JSONEq(t, `[{"topic":"T","expressionType":"TAG","expression":"*","version":0}]`, string(got.SubscriptionDataSet))
	require.Equal(t, map[string]string{"+a": "b"}, got.Attributes)
	got, err = DecodeSubscriptionGroupConfig([]byte(`{"groupName":"G","groupRetryPolicy":null,"subscriptionDataSet":null}`))
	require.NoError(t, err)
	require.Nil(t, got.GroupRetryPolicy)
	require.Nil(t, got.SubscriptionDataSet)

	// Decoding many configs must not share (and so corrupt) the default policy bytes.
	a, err := DecodeSubscriptionGroupConfig([]byte(`{"groupRetryPolicy":{"type":"EXPONENTIAL"}}`))
	require.NoError(t, err)
	b := NewSubscriptionGroupConfig("x")
	require.JSONEq(t, `{"type":"EXPONENTIAL"}`, string(a.GroupRetryPolicy))
	require.Equal(t, `{"type":"CUSTOMIZED"}`, string(b.GroupRetryPolicy))
}

func TestSubscriptionGroupWrapper(t *testing.T) {
	g := NewSubscriptionGroupConfig("G")
	w := &SubscriptionGroupWrapper{
		DataVersion:            DataVersion{Counter: 2, Timestamp: 1700000000000},
		ForbiddenTable:         map[string]map[string]int32{"G": {"T": 1}},
		SubscriptionGroupTable: map[string]SubscriptionGroupConfig{"G": g},
	}
	body, err := w.Encode(false)
	require.NoError(t, err)
	require.Equal(t, `{"dataVersion":{"counter":2,"stateVersion":0,"timestamp":1700000000000},"forbiddenTable":{"G":{"T":1}},`+
		`"subscriptionGroupTable":{"G":`+goldenSubscriptionGroupG+`}}`, string(body))

	back, err := DecodeSubscriptionGroupWrapper(body)
	require.NoError(t, err)
	require.Equal(t, w, back)

	pretty, err := w.Encode(true)
	require.NoError(t, err)
	back, err = DecodeSubscriptionGroupWrapper(pretty)
	require.NoError(t, err)
	require.Equal(t, w, back)

	// The Go admin's public decoder (admin/admin.go FetchAllSubscriptionGroups → Decode).
	var goW admin.SubscriptionGroupWrapper
	_, err = goW.Decode(body, &goW)
	require.NoError(t, err)
	require.Equal(t, admin.SubscriptionGroupConfig{
		GroupName: "G", ConsumeEnable: true, ConsumeFromMinEnable: true, ConsumeBroadcastEnable: true,
		RetryMaxTimes: 16, RetryQueueNums: 1, BrokerId: 0, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIdsChangedEnable: true,
	}, goW.SubscriptionGroupTable["G"])
	require.Equal(t, admin.DataVersion{Timestamp: 1700000000000, Counter: 2}, goW.DataVersion)

	// 4.x file: no forbiddenTable; tables come back non-nil.
	w4, err := DecodeSubscriptionGroupWrapper([]byte(`{"dataVersion":{"counter":1,"timestamp":1},"subscriptionGroupTable":{"G":{"groupName":"G"}}}`))
	require.NoError(t, err)
	require.Equal(t, map[string]map[string]int32{}, w4.ForbiddenTable)
	require.Equal(t, NewSubscriptionGroupConfig("G"), w4.SubscriptionGroupTable["G"])

	empty, err := (&SubscriptionGroupWrapper{}).Encode(false)
	require.NoError(t, err)
	require.Equal(t, `{"dataVersion":{"counter":0,"stateVersion":0,"timestamp":0},"forbiddenTable":{},"subscriptionGroupTable":{}}`, string(empty))
}

func TestSubscriptionGroupGarbage(t *testing.T) {
	for _, in := range []string{"", "{", `{"subscriptionGroupTable":{"G":{"retryMaxTimes":"x"}}}`, `{"forbiddenTable":{"G":{"T":"1"}}}`} {
		_, err := DecodeSubscriptionGroupWrapper([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q", in)
	}
	_, err := DecodeSubscriptionGroupConfig([]byte(`{"brokerId":true}`))
	require.ErrorIs(t, err, ErrBodyJSON)

	bad := NewSubscriptionGroupConfig("G")
	bad.GroupRetryPolicy = json.RawMessage(`{`)
	_, err = bad.Encode()
	require.ErrorIs(t, err, ErrBodyField)
}
