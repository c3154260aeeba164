package codec

import (
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// goHeartbeatCapture is the Go client's heartbeat of PROTOCOL §4.3 (the second
// subscription's elided tail filled in the way the client writes it).
const goHeartbeatCapture = `{"clientID":"192.0.2.2@18667","producerDataSet":[{"groupName":"PG"}],"consumerDataSet":[{"groupName":"G1",` +
	`"consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
	`"subscriptionDataSet":[{"classFilterMode":false,"topic":"%RETRY%G1","subString":"*","tagsSet":[],"codeSet":[],` +
	`"subVersion":1796205192605311021,"expressionType":"TAG"},{"classFilterMode":false,"topic":"TopicTest",` +
	`"subString":"TagA || TagB","tagsSet":["TagA","TagB"],"codeSet":["2598919","2598920"],` +
	`"subVersion":1796205192605311022,"expressionType":"TAG"}],"unitMode":false}]}`

func captureHeartbeat() *HeartbeatData {
	return &HeartbeatData{
		ClientID: "192.0.2.2@18667",
		ConsumerDataSet: []ConsumerData{{
			ConsumeFromWhere: ConsumeFromLastOffset,
			ConsumeType:      ConsumePassively,
			GroupName:        "G1",
			MessageModel:     MessageModelClustering,
			SubscriptionDataSet: []SubscriptionData{
				{CodeSet: TagCodeSet{}, ExpressionType: ExpressionTypeTag, SubString: SubscriptionAll,
					SubVersion: 1796205192605311021, TagsSet: []string{}, Topic: "%RETRY%G1"},
				{CodeSet: TagCodeSet{2598919, 2598920}, ExpressionType: ExpressionTypeTag, SubString: "TagA || TagB",
					SubVersion: 1796205192605311022, TagsSet: []string{"TagA", "TagB"}, Topic: "TopicTest"},
			},
		}},
		ProducerDataSet: []ProducerData{{GroupName: "PG"}},
	}
}

func TestDecodeHeartbeatGoCapture(t *testing.T) {
	hb, err := DecodeHeartbeatData([]byte(goHeartbeatCapture))
	require.NoError(t, err)
	require.Equal(t, captureHeartbeat(), hb)
	sub := hb.ConsumerDataSet[0].SubscriptionDataSet[1]
	require.Equal(t, sub.CodeSet, sub.JavaTagCodes(), "ASCII tags: Go and Java hashes agree")
}

func TestDecodeHeartbeatJavaForm(t *testing.T) {
	java := `{"clientID":"10.0.0.5@1234","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET",` +
		`"consumeType":"CONSUME_ACTIVELY","groupName":"G2","messageModel":"BROADCASTING","subscriptionDataSet":[` +
		`{"classFilterMode":false,"codeSet":[2598919,-12],"expressionType":"TAG","subString":"TagA","subVersion":1700000000000,` +
		`"tagsSet":["TagA"],"topic":"T"}],"unitMode":true}],"heartbeatFingerprint":77,"producerDataSet":[],"withoutSub":true}`
	hb, err := DecodeHeartbeatData([]byte(java))
	require.NoError(t, err)
	require.Equal(t, &HeartbeatData{
		ClientID: "10.0.0.5@1234",
		ConsumerDataSet: []ConsumerData{{
			ConsumeFromWhere: ConsumeFromFirstOffset, ConsumeType: ConsumeActively, GroupName: "G2",
			MessageModel: MessageModelBroadcasting, UnitMode: true,
			SubscriptionDataSet: []SubscriptionData{{CodeSet: TagCodeSet{2598919, -12}, ExpressionType: "TAG",
				SubString: "TagA", SubVersion: 1700000000000, TagsSet: []string{"TagA"}, Topic: "T"}},
		}},
		HeartbeatFingerprint: 77,
		ProducerDataSet:      []ProducerData{},
		WithoutSub:           true,
	}, hb)
}

func TestTagCodeSetForms(t *testing.T) {
	hb, err := DecodeHeartbeatData([]byte(`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":[1,"2",-3,"-2147483648"]},{"codeSet":null}]}]}`))
	require.NoError(t, err)
	subs := hb.ConsumerDataSet[0].SubscriptionDataSet
	require.Equal(t, TagCodeSet{1, 2, -3, -2147483648}, subs[0].CodeSet)
	require.Nil(t, subs[1].CodeSet)

	for _, bad := range []string{`{"a":1}`, `[1.5]`, `["x"]`, `[2147483648]`, `[true]`, `[null]`} {
		_, err := DecodeHeartbeatData([]byte(`{"consumerDataSet":[{"subscriptionDataSet":[{"codeSet":` + bad + `}]}]}`))
		require.ErrorIs(t, err, ErrBodyJSON, "codeSet %s", bad)
		require.ErrorContains(t, err, "codeSet", "codeSet %s", bad)
	}
}

func TestJavaTagCodesNonASCII(t *testing.T) {
	// The Go client hashes UTF-8 bytes (utils.HashString: h = 31*h + int32(byte)); Java
	// hashes UTF-16 units. For "标签" they differ; JavaTagCodes gives Java's.
	goHash := func(s string) int32 {
		var h int32
		for i := 0; i < len(s); i++ {
			h = 31*h + int32(s[i])
		}
		return h
	}
	sub := SubscriptionData{TagsSet: []string{"标签", "TagA", "𝄞"}}
	codes := sub.JavaTagCodes()
	require.Equal(t, TagCodeSet{0x6807*31 + 0x7B7E, 2598919, 0xD834*31 + 0xDD1E}, codes)
	require.NotEqual(t, goHash("标签"), codes[0])
	require.Equal(t, goHash("TagA"), codes[1])
}

func TestEncodeHeartbeatGolden(t *testing.T) {
	got, err := captureHeartbeat().Encode()
	require.NoError(t, err)
	want := `{"clientID":"192.0.2.2@18667","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",` +
		`"consumeType":"CONSUME_PASSIVELY","groupName":"G1","messageModel":"CLUSTERING","subscriptionDataSet":[` +
		`{"classFilterMode":false,"codeSet":[],"expressionType":"TAG","subString":"*","subVersion":1796205192605311021,` +
		`"tagsSet":[],"topic":"%RETRY%G1"},` +
		`{"classFilterMode":false,"codeSet":[2598919,2598920],"expressionType":"TAG","subString":"TagA || TagB",` +
		`"subVersion":1796205192605311022,"tagsSet":["TagA","TagB"],"topic":"TopicTest"}],"unitMode":false}],` +
		`"heartbeatFingerprint":0,"producerDataSet":[{"groupName":"PG"}],"withoutSub":false}`
	require.Equal(t, want, string(got))

	// Nil sets are written as [] (Java never sends null sets).
	empty, err := (&HeartbeatData{ClientID: "c", ConsumerDataSet: []ConsumerData{{SubscriptionDataSet: []SubscriptionData{{}}}}}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"clientID":"c","consumerDataSet":[{"consumeFromWhere":"","consumeType":"","groupName":"",`+
		`"messageModel":"","subscriptionDataSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"",`+
		`"subString":"","subVersion":0,"tagsSet":[],"topic":""}],"unitMode":false}],"heartbeatFingerprint":0,`+
		`"producerDataSet":[],"withoutSub":false}`, string(empty))
	none, err := (&HeartbeatData{ClientID: "c"}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"clientID":"c","consumerDataSet":[],"heartbeatFingerprint":0,"producerDataSet":[],"withoutSub":false}`, string(none))
}

func TestHeartbeatRoundTrip(t *testing.T) {
	body, err := captureHeartbeat().Encode()
	require.NoError(t, err)
	back, err := DecodeHeartbeatData(body)
	require.NoError(t, err)
	require.Equal(t, captureHeartbeat(), back)
}

func TestDecodeHeartbeatGarbage(t *testing.T) {
	for _, in := range []string{
		"", "[", goHeartbeatCapture[:100], `{"clientID":5}`, `{"consumerDataSet":{}}`,
		`{"consumerDataSet":[{"subscriptionDataSet":[{"subVersion":"x"}]}]}`,
		// A Go-client tag holding '"' is written unescaped: invalid JSON.
		`{"consumerDataSet":[{"subscriptionDataSet":[{"tagsSet":["a"b"]}]}]}`,
	} {
		_, err := DecodeHeartbeatData([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q", in)
	}
}

func TestConsumerListBody(t *testing.T) {
	b := &ConsumerListBody{ConsumerIDList: []string{"10.0.0.5@1234", "10.0.0.6@99"}}
	body, err := b.Encode()
	require.NoError(t, err)
	require.Equal(t, `{"consumerIdList":["10.0.0.5@1234","10.0.0.6@99"]}`, string(body))

	// The Go client's reading (consumer/consumer.go findConsumerList): gjson, element .String().
	var ids []string
	for _, v := range gjson.ParseBytes(body).Get("consumerIdList").Array() {
		ids = append(ids, v.String())
	}
	require.Equal(t, b.ConsumerIDList, ids)

	back, err := DecodeConsumerListBody(body)
	require.NoError(t, err)
	require.Equal(t, b, back)

	empty, err := (&ConsumerListBody{}).Encode()
	require.NoError(t, err)
	require.Equal(t, `{"consumerIdList":[]}`, string(empty))

	_, err = DecodeConsumerListBody([]byte(`{"consumerIdList":[1]}`))
	require.ErrorIs(t, err, ErrBodyJSON)
}

// FuzzBodyHeartbeat: decoding arbitrary bytes never panics; whatever decodes re-encodes to
// bytes that decode to the same value and re-encode identically.
func FuzzBodyHeartbeat(f *testing.F) {
	f.Add([]byte(goHeartbeatCapture))
	java, _ := captureHeartbeat().Encode()
	f.Add(java)
	f.Add([]byte(`{"clientID":"a","consumerDataSet":[{"subscriptionDataSet":[{"codeSet":["1",2],"tagsSet":["\u6807"]}]}]}`))
	f.Add([]byte(`{"producerDataSet":[{"groupName":"x"}],"heartbeatFingerprint":-1,"withoutSub":true}`))
	f.Add([]byte(`{0:1}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, in []byte) {
		hb, err := DecodeHeartbeatData(in)
		if err != nil {
			require.ErrorIs(t, err, ErrBodyJSON)
			return
		}
		enc1, err := hb.Encode()
		require.NoError(t, err)
		hb2, err := DecodeHeartbeatData(enc1)
		require.NoError(t, err, "re-decoding %q", enc1)
		enc2, err := hb2.Encode()
		require.NoError(t, err)
		require.Equal(t, string(enc1), string(enc2))
	})
}

func BenchmarkDecodeHeartbeatData(b *testing.B) {
	body := []byte(goHeartbeatCapture)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeHeartbeatData(body); err != nil {
			b.Fatal(err)
		}
	}
}
