package codec

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
)

// Route bodies: TopicRouteData (response body of GET_ROUTEINFO_BY_TOPIC, 105) and
// ClusterInfo (GET_BROKER_CLUSTER_INFO, 106). PROTOCOL §4.2, §4.6.
//
// Java (fastjson, alphabetical keys, one broker with 4/4 queues):
//
//	{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"DefaultCluster",
//	 "enableActingMaster":false}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a","perm":6,
//	 "readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}
//
// (without the line breaks). The Java namesrv quotes the brokerAddrs keys ({"0":...}) when
// the request version is ≥ 401 (V4_9_4) or the header says acceptStandardJsonOnly=true,
// and writes them bare otherwise; the Go client (version 317) therefore gets bare keys.
//
// What the Go client (internal/route.go, TopicRouteData.decode) does with it:
//   - queueDatas: decoded with jsoniter into structs whose sys-flag field is tagged
//     "topicSynFlag" (a typo), so topicSysFlag never reaches it; harmless, it is unused.
//   - brokerDatas[i].brokerAddrs: NOT decoded as JSON. It takes the raw object text, drops
//     the first and last byte, splits on ',', cuts each piece at its first ':', removes every
//     '"' and parses the left side as the id (parse errors silently give id 0). So the object
//     must be compact (a space would end up inside the id or the address), must be present
//     (a missing key leaves an empty string and the slice expression panics), and either
//     key style works. EncodeTopicRouteData always writes it, compactly.
//   - It also reads orderTopicConf, brokerName and cluster; nothing else.

// QueueData is one broker's queue counts and permission for a topic. Field order is
// fastjson's alphabetical key order.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	Perm           int32  `json:"perm"` // PERM_READ 4 | PERM_WRITE 2 | PERM_INHERIT 1
	ReadQueueNums  int32  `json:"readQueueNums"`
	TopicSysFlag   int32  `json:"topicSysFlag"` // the Go client reads "topicSynFlag" (typo) and so never sees it
	WriteQueueNums int32  `json:"writeQueueNums"`
}

// BrokerData is one broker name (a master and its slaves) with its addresses by broker id
// (0 = master).
type BrokerData struct {
	BrokerAddrs        map[int64]string `json:"brokerAddrs"` // broker id → "ip:port"; 0 = master
	BrokerName         string           `json:"brokerName"`
	Cluster            string           `json:"cluster"`
	EnableActingMaster bool             `json:"enableActingMaster"` // 5.x; false on 4.x
	ZoneName           string           `json:"zoneName,omitempty"` // 5.x, null (absent) unless set
}

// TopicRouteData is the body of a successful GET_ROUTEINFO_BY_TOPIC response.
type TopicRouteData struct {
	BrokerDatas       []BrokerData        `json:"brokerDatas"`
	FilterServerTable map[string][]string `json:"filterServerTable"` // broker addr → filter servers; always {} today
	// OrderTopicConf is "brokerA:4;brokerB:4"; only set when the namesrv has
	// orderMessageEnable and a KV entry for the topic.
	OrderTopicConf string      `json:"orderTopicConf,omitempty"`
	QueueDatas     []QueueData `json:"queueDatas"`
	// TopicQueueMappingByBroker (5.x static topics) is carried as opaque JSON: decoded input
	// has had its bare keys quoted, and it is written back as it stands.
	TopicQueueMappingByBroker json.RawMessage `json:"topicQueueMappingByBroker,omitempty"`
}

// RouteWantsStandardJSON tells which brokerAddrs key style the Java namesrv would answer a
// GET_ROUTEINFO_BY_TOPIC request with: quoted keys (standard JSON) when the request's version
// is ≥ 401 (V4_9_4) or its acceptStandardJsonOnly header field is true, bare keys otherwise.
func RouteWantsStandardJSON(requestVersion int32, acceptStandardJSONOnly bool) bool {
	const versionV4_9_4 = 401
	return requestVersion >= versionV4_9_4 || acceptStandardJSONOnly
}

// EncodeTopicRouteData writes rd as the Java namesrv does: compact, keys in alphabetical
// order, brokerAddrs always present (also when empty) with ids ascending, filterServerTable
// always present ({} when nil), queueDatas/brokerDatas [] when nil. standardJSON selects
// quoted brokerAddrs keys (valid JSON, what a ≥ 4.9.4 client asks for) over fastjson's bare
// keys; see RouteWantsStandardJSON. The encoder does not invent a master: a route whose
// master is gone (only slaves left, PROTOCOL §13.1) is written as given.
// Safe for concurrent use if rd is not modified meanwhile.
func EncodeTopicRouteData(rd *TopicRouteData, standardJSON bool) ([]byte, error) {
	dst := make([]byte, 0, 256)
	dst = append(dst, `{"brokerDatas":[`...)
	for i := range rd.BrokerDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendBrokerData(dst, &rd.BrokerDatas[i], standardJSON)
	}
	dst = append(dst, `],"filterServerTable":`...)
	var err error
	dst, err = appendFilterServerTable(dst, rd.FilterServerTable)
	if err != nil {
		return nil, err
	}
	if rd.OrderTopicConf != "" {
		dst = append(dst, `,"orderTopicConf":`...)
		dst = bodyAppendString(dst, rd.OrderTopicConf)
	}
	dst = append(dst, `,"queueDatas":[`...)
	for i := range rd.QueueDatas {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendQueueData(dst, &rd.QueueDatas[i])
	}
	dst = append(dst, ']')
	if len(rd.TopicQueueMappingByBroker) > 0 {
		dst, err = appendRawJSON(dst, `,"topicQueueMappingByBroker":`, rd.TopicQueueMappingByBroker, "TopicRouteData", "topicQueueMappingByBroker")
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// DecodeTopicRouteData parses a route body in either key style (bare keys from a Java
// namesrv answering an old client, quoted keys otherwise, pretty-printed or not).
// Safe for concurrent use.
func DecodeTopicRouteData(body []byte) (*TopicRouteData, error) {
	rd := new(TopicRouteData)
	if err := decodeBodyJSON(body, rd, "TopicRouteData"); err != nil {
		return nil, err
	}
	bodyNormalizeRaw(&rd.TopicQueueMappingByBroker)
	return rd, nil
}

// appendQueueData writes one QueueData in fastjson's key order.
func appendQueueData(dst []byte, q *QueueData) []byte {
	dst = append(dst, `{"brokerName":`...)
	dst = bodyAppendString(dst, q.BrokerName)
	dst = append(dst, `,"perm":`...)
	dst = strconv.AppendInt(dst, int64(q.Perm), 10)
	dst = append(dst, `,"readQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.ReadQueueNums), 10)
	dst = append(dst, `,"topicSysFlag":`...)
	dst = strconv.AppendInt(dst, int64(q.TopicSysFlag), 10)
	dst = append(dst, `,"writeQueueNums":`...)
	dst = strconv.AppendInt(dst, int64(q.WriteQueueNums), 10)
	return append(dst, '}')
}

// appendBrokerData writes one BrokerData: brokerAddrs compact, ids ascending, bare or
// quoted keys.
func appendBrokerData(dst []byte, b *BrokerData, quotedKeys bool) []byte {
	dst = append(dst, `{"brokerAddrs":{`...)
	ids := make([]int64, 0, len(b.BrokerAddrs))
	for id := range b.BrokerAddrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = bodyAppendIntKey(dst, id, quotedKeys)
		dst = bodyAppendString(dst, b.BrokerAddrs[id])
	}
	dst = append(dst, `},"brokerName":`...)
	dst = bodyAppendString(dst, b.BrokerName)
	dst = append(dst, `,"cluster":`...)
	dst = bodyAppendString(dst, b.Cluster)
	dst = append(dst, `,"enableActingMaster":`...)
	dst = strconv.AppendBool(dst, b.EnableActingMaster)
	if b.ZoneName != "" {
		dst = append(dst, `,"zoneName":`...)
		dst = bodyAppendString(dst, b.ZoneName)
	}
	return append(dst, '}')
}

// appendFilterServerTable writes the string-keyed filter server table ({} when nil).
func appendFilterServerTable(dst []byte, t map[string][]string) ([]byte, error) {
	if len(t) == 0 {
		return append(dst, '{', '}'), nil
	}
	raw, err := encodeBodyJSON(t, false, "TopicRouteData.filterServerTable")
	if err != nil {
		return nil, err
	}
	return append(dst, raw...), nil
}

// appendRawJSON appends prefix and raw after checking raw is one JSON value.
func appendRawJSON(dst []byte, prefix string, raw json.RawMessage, body, field string) ([]byte, error) {
	if !json.Valid(raw) {
		return nil, bodyFieldError(body, field, "not valid JSON")
	}
	dst = append(dst, prefix...)
	return append(dst, raw...), nil
}

// ClusterInfo is the body of GET_BROKER_CLUSTER_INFO (106).
type ClusterInfo struct {
	BrokerAddrTable  map[string]BrokerData `json:"brokerAddrTable"`  // broker name → its data
	ClusterAddrTable map[string][]string   `json:"clusterAddrTable"` // cluster name → broker names
}

// EncodeClusterInfo writes ci as the Java namesrv does (bare brokerAddrs keys; quoted when
// standardJSON), compact, map keys sorted, broker names of a cluster sorted.
// Safe for concurrent use if ci is not modified meanwhile.
func EncodeClusterInfo(ci *ClusterInfo, standardJSON bool) []byte {
	dst := make([]byte, 0, 256)
	dst = append(dst, `{"brokerAddrTable":{`...)
	for i, name := range bodySortedKeys(ci.BrokerAddrTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = bodyAppendString(dst, name)
		dst = append(dst, ':')
		bd := ci.BrokerAddrTable[name]
		dst = appendBrokerData(dst, &bd, standardJSON)
	}
	dst = append(dst, `},"clusterAddrTable":{`...)
	for i, cluster := range bodySortedKeys(ci.ClusterAddrTable) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = bodyAppendString(dst, cluster)
		dst = append(dst, ':', '[')
		names := slices.Clone(ci.ClusterAddrTable[cluster])
		slices.Sort(names)
		for j, n := range names {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = bodyAppendString(dst, n)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}', '}')
}

// DecodeClusterInfo parses a ClusterInfo body in either key style. Safe for concurrent use.
func DecodeClusterInfo(body []byte) (*ClusterInfo, error) {
	ci := new(ClusterInfo)
	if err := decodeBodyJSON(body, ci, "ClusterInfo"); err != nil {
		return nil, err
	}
	return ci, nil
}

// bodySortedKeys returns the keys of a string-keyed map in ascending order.
func bodySortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// String renders the route compactly with quoted keys, for logs.
func (rd *TopicRouteData) String() string {
	b, err := EncodeTopicRouteData(rd, true)
	if err != nil {
		return fmt.Sprintf("TopicRouteData(%v)", err)
	}
	return string(b)
}
