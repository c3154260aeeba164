package codec

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	jsoniter "github.com/json-iterator/go"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/gjson"
)

// oneBrokerRoute is the reference route: one master, 4/4 queues, perm 6.
func oneBrokerRoute() *TopicRouteData {
	return &TopicRouteData{
		BrokerDatas: []BrokerData{{
			BrokerAddrs: map[int64]string{0: "10.0.0.1:10911"},
			BrokerName:  "broker-a",
			Cluster:     "DefaultCluster",
		}},
		QueueDatas: []QueueData{{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
	}
}

const (
	goldenRouteBare = `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster",` +
		`"enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,` +
		`"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	goldenRouteStandard = `{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster",` +
		`"enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,` +
		`"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
)

func TestEncodeTopicRouteDataGolden(t *testing.T) {
	bare, err := EncodeTopicRouteData(oneBrokerRoute(), false)
	require.NoError(t, err)
	require.Equal(t, goldenRouteBare, string(bare))

	std, err := EncodeTopicRouteData(oneBrokerRoute(), true)
	require.NoError(t, err)
	require.Equal(t, goldenRouteStandard, string(std))
	require.True(t, json.Valid(std))
	require.False(t, json.Valid(bare), "bare keys are fastjson, not JSON")
}

func TestEncodeTopicRouteDataFullShape(t *testing.T) {
	rd := &TopicRouteData{
		BrokerDatas: []BrokerData{
			{BrokerAddrs: map[int64]string{10: "10.0.0.3:10911", 1: "10.0.0.2:10911", 0: "10.0.0.1:10911"},
				BrokerName: "broker-a", Cluster: "C", EnableActingMaster: true, ZoneName: "z1"},
			{BrokerName: "broker-b", Cluster: "C"}, // no addresses: the key is still written
		},
		FilterServerTable: map[string][]string{"10.0.0.1:10911": {"f1"}},
		OrderTopicConf:    "broker-a:4;broker-b:4",
		QueueDatas: []QueueData{
			{BrokerName: "broker-a", Perm: 7, ReadQueueNums: 8, TopicSysFlag: 1, WriteQueueNums: 16},
		},
		TopicQueueMappingByBroker: json.RawMessage(`{"broker-a":{"bname":"broker-a","currIdMap":{"0":0}}}`),
	}
	got, err := EncodeTopicRouteData(rd, false)
	require.NoError(t, err)
	want := `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911",10:"10.0.0.3:10911"},` +
		`"brokerName":"broker-a","cluster":"C","enableActingMaster":true,"zoneName":"z1"},` +
		`{"brokerAddrs":{},"brokerName":"broker-b","cluster":"C","enableActingMaster":false}],` +
		`"filterServerTable":{"10.0.0.1:10911":["f1"]},"orderTopicConf":"broker-a:4;broker-b:4",` +
		`"queueDatas":[{"brokerName":"broker-a","perm":7,"readQueueNums":8,"topicSysFlag":1,"writeQueueNums":16}],` +
		`"topicQueueMappingByBroker":{"broker-a":{"bname":"broker-a","currIdMap":{"0":0}}}}`
	require.Equal(t, want, string(got))

	back, err := DecodeTopicRouteData(got)
	require.NoError(t, err)
	rd.BrokerDatas[1].BrokerAddrs = map[int64]string{} // written as {}, read back empty
	require.Equal(t, rd, back)

	rd.TopicQueueMappingByBroker = json.RawMessage(`{bad`)
	_, err = EncodeTopicRouteData(rd, false)
	require.ErrorIs(t, err, ErrBodyField)
}

func TestEncodeTopicRouteDataEmpty(t *testing.T) {
	got, err := EncodeTopicRouteData(&TopicRouteData{}, false)
	require.NoError(t, err)
	require.Equal(t, `{"brokerDatas":[],"filterServerTable":{},"queueDatas":[]}`, string(got))
}

func TestRouteWantsStandardJSON(t *testing.T) {
	require.False(t, RouteWantsStandardJSON(317, false), "Go client")
	require.False(t, RouteWantsStandardJSON(400, false))
	require.True(t, RouteWantsStandardJSON(401, false), "V4_9_4")
	require.True(t, RouteWantsStandardJSON(479, false))
	require.True(t, RouteWantsStandardJSON(317, true), "acceptStandardJsonOnly")
}

// goClientRoute is what the pinned Go client keeps from a route body.
type goClientRoute struct {
	OrderTopicConf string
	Queues         []*goClientQueueData
	Brokers        []goClientBrokerData
}

// goClientQueueData mirrors internal/route.go QueueData, typo included.
type goClientQueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
	TopicSynFlag   int    `json:"topicSynFlag"`
}

type goClientBrokerData struct {
	Cluster, BrokerName string
	Addrs               map[int64]string
}

var errGoClientWouldPanic = errors.New("the Go client would panic slicing brokerAddrs")

// goClientDecodeRoute repeats, step by step, TopicRouteData.decode of the pinned client
// (rocketmq-client-go/v2 internal/route.go; the package is internal, so it cannot be called):
// gjson for the document, jsoniter for queueDatas, and the hand-made brokerAddrs split.
func goClientDecodeRoute(data string) (*goClientRoute, error) {
	r := &goClientRoute{}
	res := gjson.Parse(data)
	if err := jsoniter.Unmarshal([]byte(res.Get("queueDatas").String()), &r.Queues); err != nil {
		return nil, err
	}
	r.OrderTopicConf = res.Get("orderTopicConf").String()
	for _, v := range res.Get("brokerDatas").Array() {
		bd := goClientBrokerData{
			BrokerName: v.Get("brokerName").String(),
			Cluster:    v.Get("cluster").String(),
			Addrs:      map[int64]string{},
		}
		addrs := v.Get("brokerAddrs").String()
		if len(addrs) < 2 {
			return nil, errGoClientWouldPanic // addrs[1:len(addrs)-1] with len 0
		}
		for _, str := range strings.Split(addrs[1:len(addrs)-1], ",") {
			i := strings.Index(str, ":")
			if i < 0 {
				continue
			}
			id, _ := strconv.ParseInt(strings.ReplaceAll(str[:i], `"`, ""), 10, 64)
			bd.Addrs[id] = strings.ReplaceAll(str[i+1:], `"`, "")
		}
		r.Brokers = append(r.Brokers, bd)
	}
	return r, nil
}

func TestGoClientParsesOurRoute(t *testing.T) {
	rd := &TopicRouteData{
		BrokerDatas: []BrokerData{
			{BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, BrokerName: "broker-a", Cluster: "DefaultCluster"},
			{BrokerAddrs: map[int64]string{0: "[::1]:10911"}, BrokerName: "broker-b", Cluster: "DefaultCluster", ZoneName: "z"},
		},
		OrderTopicConf: "broker-a:4",
		QueueDatas: []QueueData{
			{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4, TopicSysFlag: 1},
			{BrokerName: "broker-b", Perm: 4, ReadQueueNums: 2, WriteQueueNums: 0},
		},
	}
	for _, standard := range []bool{false, true} {
		body, err := EncodeTopicRouteData(rd, standard)
		require.NoError(t, err)
		got, err := goClientDecodeRoute(string(body))
		require.NoError(t, err, "standard=%v", standard)
		require.Equal(t, "broker-a:4", got.OrderTopicConf)
		require.Len(t, got.Brokers, 2)
		require.Equal(t, goClientBrokerData{Cluster: "DefaultCluster", BrokerName: "broker-a",
			Addrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}}, got.Brokers[0])
		require.Equal(t, map[int64]string{0: "[::1]:10911"}, got.Brokers[1].Addrs)
		require.Len(t, got.Queues, 2)
		require.Equal(t, goClientQueueData{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6},
			*got.Queues[0], "topicSysFlag never reaches the client (topicSynFlag typo)")
		require.Equal(t, goClientQueueData{BrokerName: "broker-b", ReadQueueNums: 2, Perm: 4}, *got.Queues[1])
	}

	// Why compactness and presence matter: whitespace corrupts ids and addresses, and a
	// missing brokerAddrs panics the client.
	spaced, err := goClientDecodeRoute(`{"queueDatas":[],"brokerDatas":[{"brokerAddrs":{ 1: "10.0.0.2:10911"}}]}`)
	require.NoError(t, err)
	require.Equal(t, map[int64]string{0: " 10.0.0.2:10911"}, spaced.Brokers[0].Addrs)
	_, err = goClientDecodeRoute(`{"queueDatas":[],"brokerDatas":[{"brokerName":"b"}]}`)
	require.ErrorIs(t, err, errGoClientWouldPanic)
}

func TestDecodeTopicRouteDataJavaForms(t *testing.T) {
	// PROTOCOL §4.2 example (bare keys, as a Java namesrv answers a version < 401 client).
	javaBare := `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a",` +
		`"cluster":"DefaultCluster","enableActingMaster":false}],` +
		`"filterServerTable":{},` +
		`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`
	want := &TopicRouteData{
		BrokerDatas: []BrokerData{{
			BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"},
			BrokerName:  "broker-a", Cluster: "DefaultCluster",
		}},
		FilterServerTable: map[string][]string{},
		QueueDatas:        []QueueData{{BrokerName: "broker-a", Perm: 6, ReadQueueNums: 4, WriteQueueNums: 4}},
	}
	got, err := DecodeTopicRouteData([]byte(javaBare))
	require.NoError(t, err)
	require.Equal(t, want, got)

	// Quoted keys (≥ 4.9.4 clients), 5.x extras, pretty-printed, unknown keys ignored.
	javaStd := "{\n  \"brokerDatas\" : [ {\"brokerAddrs\": {\"0\": \"10.0.0.1:10911\", \"1\": \"10.0.0.2:10911\"},\n" +
		"  \"brokerName\":\"broker-a\",\"cluster\":\"DefaultCluster\",\"enableActingMaster\":false,\"zoneName\":null}],\n" +
		"  \"filterServerTable\":{}, \"someFutureKey\": [1,2],\n" +
		"  \"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,\"readQueueNums\":4,\"topicSysFlag\":0,\"writeQueueNums\":4}],\n" +
		"  \"topicQueueMappingByBroker\": null}"
	got, err = DecodeTopicRouteData([]byte(javaStd))
	require.NoError(t, err)
	require.Equal(t, want, got)

	// Static-topic mapping with bare Integer keys inside is kept, keys quoted.
	withMapping := `{"brokerDatas":[],"queueDatas":[],"topicQueueMappingByBroker":{"b":{"currIdMap":{0:1}}}}`
	got, err = DecodeTopicRouteData([]byte(withMapping))
	require.NoError(t, err)
	require.JSONEq(t, `{"b":{"currIdMap":{"0":1}}}`, string(got.TopicQueueMappingByBroker))
}

func TestDecodeTopicRouteDataRoundTrip(t *testing.T) {
	for _, standard := range []bool{false, true} {
		body, err := EncodeTopicRouteData(oneBrokerRoute(), standard)
		require.NoError(t, err)
		got, err := DecodeTopicRouteData(body)
		require.NoError(t, err)
		want := oneBrokerRoute()
		want.FilterServerTable = map[string][]string{}
		require.Equal(t, want, got)
		again, err := EncodeTopicRouteData(got, standard)
		require.NoError(t, err)
		require.Equal(t, body, again)
	}
}

func TestDecodeTopicRouteDataGarbage(t *testing.T) {
	for _, in := range []string{
		"", "{", "null x", goldenRouteBare[:len(goldenRouteBare)/2], `{"brokerDatas":{}}`,
		`{"brokerDatas":[{"brokerAddrs":{"x":"a"}}]}`, `{"queueDatas":[{"perm":99999999999}]}`,
		`{"brokerDatas":[{"brokerAddrs":{0:1}}]}`, "\x00\xff",
	} {
		_, err := DecodeTopicRouteData([]byte(in))
		require.ErrorIs(t, err, ErrBodyJSON, "input %q", in)
	}
}

func TestClusterInfo(t *testing.T) {
	ci := &ClusterInfo{
		BrokerAddrTable: map[string]BrokerData{
			"broker-b": {BrokerAddrs: map[int64]string{0: "10.0.0.3:10911"}, BrokerName: "broker-b", Cluster: "C"},
			"broker-a": {BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}, BrokerName: "broker-a", Cluster: "C"},
		},
		ClusterAddrTable: map[string][]string{"C": {"broker-b", "broker-a"}},
	}
	bare := EncodeClusterInfo(ci, false)
	require.Equal(t, `{"brokerAddrTable":{`+
		`"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a","cluster":"C","enableActingMaster":false},`+
		`"broker-b":{"brokerAddrs":{0:"10.0.0.3:10911"},"brokerName":"broker-b","cluster":"C","enableActingMaster":false}},`+
		`"clusterAddrTable":{"C":["broker-a","broker-b"]}}`, string(bare))
	std := EncodeClusterInfo(ci, true)
	require.True(t, json.Valid(std))
	require.Equal(t, strings.ReplaceAll(strings.ReplaceAll(string(bare), "{0:", `{"0":`), ",1:", `,"1":`), string(std))

	for _, body := range [][]byte{bare, std} {
		got, err := DecodeClusterInfo(body)
		require.NoError(t, err)
		want := *ci
		want.ClusterAddrTable = map[string][]string{"C": {"broker-a", "broker-b"}}
		require.Equal(t, &want, got)
	}
	require.Equal(t, []string{"broker-b", "broker-a"}, ci.ClusterAddrTable["C"], "encoding must not reorder the caller's slice")

	require.Equal(t, `{"brokerAddrTable":{},"clusterAddrTable":{}}`, string(EncodeClusterInfo(&ClusterInfo{}, false)))
	_, err := DecodeClusterInfo([]byte(`{"brokerAddrTable":{"a":{"brokerAddrs":{0:"x"}}`))
	require.ErrorIs(t, err, ErrBodyJSON)
}

func TestTopicRouteDataString(t *testing.T) {
	require.Equal(t, goldenRouteStandard, oneBrokerRoute().String())
}

func BenchmarkEncodeTopicRouteData(b *testing.B) {
	rd := oneBrokerRoute()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeTopicRouteData(rd, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeTopicRouteData(b *testing.B) {
	body := []byte(goldenRouteBare)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeTopicRouteData(body); err != nil {
			b.Fatal(err)
		}
	}
}
