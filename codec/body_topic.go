package codec

import (
	"encoding/json"
)

// Topic bodies and topics.json (PROTOCOL §4.6, §7.6, §10): TopicConfig, DataVersion,
// TopicConfigSerializeWrapper (topics.json; GET_ALL_TOPIC_CONFIG 21 body; inside the
// register body), TopicList (206), KVTable (28).
//
// topics.json as the Java broker writes it (fastjson, pretty, alphabetical keys):
//
//	{"dataVersion":{"counter":3,"stateVersion":0,"timestamp":1700000000000},
//	 "topicConfigTable":{"T":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,
//	 "topicFilterType":"SINGLE_TAG","topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}

// Topic filter types (TopicConfig.TopicFilterType, Java enum TopicFilterType by name).
const (
	TopicFilterSingleTag = "SINGLE_TAG"
	TopicFilterMultiTag  = "MULTI_TAG"
)

// Java's TopicConfig field defaults, applied to keys missing on decode.
const (
	topicConfigDefaultQueueNums = 16
	topicConfigDefaultPerm      = 6 // PERM_READ | PERM_WRITE
)

// TopicConfig is one topic's configuration. Field order is fastjson's key order.
type TopicConfig struct {
	Attributes      map[string]string `json:"attributes"` // 5.x; written as {} when nil
	Order           bool              `json:"order"`
	Perm            int32             `json:"perm"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	TopicFilterType string            `json:"topicFilterType"` // SINGLE_TAG (written when empty) or MULTI_TAG
	TopicName       string            `json:"topicName"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
}

// NewTopicConfig returns a TopicConfig with Java's defaults: 16/16 queues, perm 6,
// SINGLE_TAG, sys flag 0, not ordered, no attributes.
func NewTopicConfig(topicName string) TopicConfig {
	return TopicConfig{
		Attributes:      map[string]string{},
		Perm:            topicConfigDefaultPerm,
		ReadQueueNums:   topicConfigDefaultQueueNums,
		TopicFilterType: TopicFilterSingleTag,
		TopicName:       topicName,
		WriteQueueNums:  topicConfigDefaultQueueNums,
	}
}

// topicConfigPlain has TopicConfig's fields without its methods (no recursion).
type topicConfigPlain TopicConfig

// UnmarshalJSON applies Java's defaults to keys the input leaves out (a 4.x file has no
// attributes; a hand-edited one may lack more), then decodes.
func (c *TopicConfig) UnmarshalJSON(data []byte) error {
	*c = NewTopicConfig("")
	return json.Unmarshal(data, (*topicConfigPlain)(c))
}

// MarshalJSON writes attributes as {} when nil and topicFilterType as SINGLE_TAG when empty,
// as Java (whose fields are never null) would.
func (c TopicConfig) MarshalJSON() ([]byte, error) {
	if c.Attributes == nil {
		c.Attributes = map[string]string{}
	}
	if c.TopicFilterType == "" {
		c.TopicFilterType = TopicFilterSingleTag
	}
	return encodeBodyJSON(topicConfigPlain(c), false, "TopicConfig")
}

// DataVersion versions a config table: a namesrv or slave replaces its copy when the
// version differs. Key order is fastjson's; 4.x has no stateVersion (decodes as 0).
type DataVersion struct {
	Counter      int64 `json:"counter"`
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"` // ms since the epoch
}

// TopicConfigSerializeWrapper is topics.json, the body of GET_ALL_TOPIC_CONFIG (21) and the
// topic part of the register body. The 5.x "AndMapping" variant's static-topic fields are
// tolerated on input and kept as opaque JSON (bare keys already quoted); they are written
// back only when set. Field order is fastjson's.
type TopicConfigSerializeWrapper struct {
	DataVersion                DataVersion            `json:"dataVersion"`
	MappingDataVersion         *DataVersion           `json:"mappingDataVersion,omitempty"`
	TopicConfigTable           map[string]TopicConfig `json:"topicConfigTable"` // written as {} when nil
	TopicQueueMappingDetailMap json.RawMessage        `json:"topicQueueMappingDetailMap,omitempty"`
	TopicQueueMappingInfoMap   json.RawMessage        `json:"topicQueueMappingInfoMap,omitempty"`
}

// topicWrapperPlain has TopicConfigSerializeWrapper's fields without its methods.
type topicWrapperPlain TopicConfigSerializeWrapper

// UnmarshalJSON decodes and then normalizes: a missing or null topicConfigTable becomes
// empty, null mapping fields become absent.
func (w *TopicConfigSerializeWrapper) UnmarshalJSON(data []byte) error {
	if err := json.Unmarshal(data, (*topicWrapperPlain)(w)); err != nil {
		return err
	}
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]TopicConfig{}
	}
	bodyNormalizeRaw(&w.TopicQueueMappingDetailMap)
	bodyNormalizeRaw(&w.TopicQueueMappingInfoMap)
	return nil
}

// MarshalJSON writes topicConfigTable as {} when nil (Java's table is never null).
func (w TopicConfigSerializeWrapper) MarshalJSON() ([]byte, error) {
	if w.TopicConfigTable == nil {
		w.TopicConfigTable = map[string]TopicConfig{}
	}
	return encodeBodyJSON(topicWrapperPlain(w), false, "TopicConfigSerializeWrapper")
}

// Encode writes the wrapper compactly (remoting body) or tab-indented (topics.json).
// Safe for concurrent use if w is not modified meanwhile.
func (w *TopicConfigSerializeWrapper) Encode(pretty bool) ([]byte, error) {
	return encodeBodyJSON(w, pretty, "TopicConfigSerializeWrapper")
}

// DecodeTopicConfigSerializeWrapper parses topics.json or a GET_ALL_TOPIC_CONFIG body (plain
// or AndMapping variant, bare or quoted keys). The table comes back non-nil.
// Safe for concurrent use.
func DecodeTopicConfigSerializeWrapper(body []byte) (*TopicConfigSerializeWrapper, error) {
	w := new(TopicConfigSerializeWrapper)
	if err := decodeBodyJSON(body, w, "TopicConfigSerializeWrapper"); err != nil {
		return nil, err
	}
	return w, nil
}

// TopicList is the body of GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) and similar listings:
// {"topicList":["A","B"]}, brokerAddr only when set. The Go admin decodes it with
// encoding/json into admin.TopicList (keys matched case-insensitively).
type TopicList struct {
	BrokerAddr string   `json:"brokerAddr,omitempty"`
	TopicList  []string `json:"topicList"`
}

// Encode writes the list compactly ([] when empty). Safe for concurrent use if l is not
// modified meanwhile.
func (l *TopicList) Encode() ([]byte, error) {
	out := *l
	if out.TopicList == nil {
		out.TopicList = []string{}
	}
	return encodeBodyJSON(&out, false, "TopicList")
}

// DecodeTopicList parses a topic list body. Safe for concurrent use.
func DecodeTopicList(body []byte) (*TopicList, error) {
	l := new(TopicList)
	if err := decodeBodyJSON(body, l, "TopicList"); err != nil {
		return nil, err
	}
	return l, nil
}

// KVTable is a string→string table, e.g. the body of GET_BROKER_RUNTIME_INFO (28):
// {"table":{"brokerVersionDesc":"V5_3_3",...}}. Every value is a string.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// Encode writes the table compactly ({} when empty, keys sorted). Safe for concurrent use
// if t is not modified meanwhile.
func (t *KVTable) Encode() ([]byte, error) {
	out := *t
	if out.Table == nil {
		out.Table = map[string]string{}
	}
	return encodeBodyJSON(&out, false, "KVTable")
}

// DecodeKVTable parses a KVTable body. Safe for concurrent use.
func DecodeKVTable(body []byte) (*KVTable, error) {
	t := new(KVTable)
	if err := decodeBodyJSON(body, t, "KVTable"); err != nil {
		return nil, err
	}
	return t, nil
}
