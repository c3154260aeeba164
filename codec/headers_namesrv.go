package codec

// RegisterBrokerRequestHeader is the header of REGISTER_BROKER (103), §3.8.
type RegisterBrokerRequestHeader struct {
	BrokerName             string          // brokerName, required
	BrokerAddr             string          // brokerAddr, required: "ip:listenPort"
	ClusterName            string          // clusterName, required
	HAServerAddr           string          // haServerAddr, required: "ip2:haPort"
	BrokerID               int64           // brokerId, required: 0 = master
	HeartbeatTimeoutMillis Optional[int64] // heartbeatTimeoutMillis; absent: the name server's default
	EnableActingMaster     Optional[bool]  // enableActingMaster; absent: an "old" broker
	Compressed             bool            // compressed: the body is the zlib form
	BodyCrc32              int32           // bodyCrc32: 0 = not checked
	ZoneName               string          // __ZONE_NAME
}

// Decode reads the keys.
func (h *RegisterBrokerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "RegisterBrokerRequestHeader"}
	*h = RegisterBrokerRequestHeader{
		BrokerName:             r.str("brokerName", true),
		BrokerAddr:             r.str("brokerAddr", true),
		ClusterName:            r.str("clusterName", true),
		HAServerAddr:           r.str("haServerAddr", true),
		BrokerID:               r.i64("brokerId", true),
		HeartbeatTimeoutMillis: r.optI64("heartbeatTimeoutMillis"),
		EnableActingMaster:     r.optBool("enableActingMaster"),
		Compressed:             r.boolean("compressed", false, false),
		BodyCrc32:              r.i32("bodyCrc32", false),
		ZoneName:               r.str("__ZONE_NAME", false),
	}
	return r.err
}

// Encode writes the keys.
func (h *RegisterBrokerRequestHeader) Encode(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
	ext["brokerAddr"] = h.BrokerAddr
	ext["clusterName"] = h.ClusterName
	ext["haServerAddr"] = h.HAServerAddr
	extPutInt64(ext, "brokerId", h.BrokerID)
	extPutOptInt64(ext, "heartbeatTimeoutMillis", h.HeartbeatTimeoutMillis)
	extPutOptBool(ext, "enableActingMaster", h.EnableActingMaster)
	extPutBool(ext, "compressed", h.Compressed)
	extPutInt32(ext, "bodyCrc32", h.BodyCrc32)
	extPutString(ext, "__ZONE_NAME", h.ZoneName)
}

// RegisterBrokerResponseHeader is the response header of REGISTER_BROKER (103).
type RegisterBrokerResponseHeader struct {
	HAServerAddr string // haServerAddr: the master's HA address (for slaves)
	MasterAddr   string // masterAddr: the master's remoting address (for slaves); empty clears it
}

// Decode reads the keys.
func (h *RegisterBrokerResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "RegisterBrokerResponseHeader"}
	*h = RegisterBrokerResponseHeader{HAServerAddr: r.str("haServerAddr", false), MasterAddr: r.str("masterAddr", false)}
	return r.err
}

// Encode writes the keys.
func (h *RegisterBrokerResponseHeader) Encode(ext map[string]string) {
	extPutString(ext, "haServerAddr", h.HAServerAddr)
	extPutString(ext, "masterAddr", h.MasterAddr)
}

// UnregisterBrokerRequestHeader is the header of UNREGISTER_BROKER (104), §3.8.
type UnregisterBrokerRequestHeader struct {
	BrokerName  string // brokerName, required
	BrokerAddr  string // brokerAddr, required
	ClusterName string // clusterName, required
	BrokerID    int64  // brokerId, required
}

// Decode reads the keys.
func (h *UnregisterBrokerRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "UnregisterBrokerRequestHeader"}
	*h = UnregisterBrokerRequestHeader{
		BrokerName:  r.str("brokerName", true),
		BrokerAddr:  r.str("brokerAddr", true),
		ClusterName: r.str("clusterName", true),
		BrokerID:    r.i64("brokerId", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *UnregisterBrokerRequestHeader) Encode(ext map[string]string) {
	ext["brokerName"] = h.BrokerName
	ext["brokerAddr"] = h.BrokerAddr
	ext["clusterName"] = h.ClusterName
	extPutInt64(ext, "brokerId", h.BrokerID)
}

// GetRouteInfoRequestHeader is the header of GET_ROUTEINFO_BY_TOPIC (105), §3.8.
type GetRouteInfoRequestHeader struct {
	Topic                  string // topic, required
	AcceptStandardJSONOnly bool   // acceptStandardJsonOnly: quoted brokerAddrs keys (§4.2)
}

// Decode reads the keys.
func (h *GetRouteInfoRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetRouteInfoRequestHeader"}
	*h = GetRouteInfoRequestHeader{
		Topic:                  r.str("topic", true),
		AcceptStandardJSONOnly: r.boolean("acceptStandardJsonOnly", false, false),
	}
	return r.err
}

// Encode writes the keys (acceptStandardJsonOnly only when true, as the Go client omits it).
func (h *GetRouteInfoRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	if h.AcceptStandardJSONOnly {
		extPutBool(ext, "acceptStandardJsonOnly", true)
	}
}

// DeleteTopicFromNamesrvRequestHeader is the header of DELETE_TOPIC_IN_NAMESRV (216).
type DeleteTopicFromNamesrvRequestHeader struct {
	Topic       string // topic, required
	ClusterName string // clusterName: only that cluster's brokers
}

// Decode reads the keys.
func (h *DeleteTopicFromNamesrvRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "DeleteTopicFromNamesrvRequestHeader"}
	*h = DeleteTopicFromNamesrvRequestHeader{Topic: r.str("topic", true), ClusterName: r.str("clusterName", false)}
	return r.err
}

// Encode writes the keys.
func (h *DeleteTopicFromNamesrvRequestHeader) Encode(ext map[string]string) {
	ext["topic"] = h.Topic
	extPutString(ext, "clusterName", h.ClusterName)
}

// GetKVConfigRequestHeader is the header of GET_KV_CONFIG (101); DELETE_KV_CONFIG (102) has
// the same keys.
type GetKVConfigRequestHeader struct {
	Namespace string // namespace, required
	Key       string // key, required
}

// DeleteKVConfigRequestHeader is the header of DELETE_KV_CONFIG (102).
type DeleteKVConfigRequestHeader = GetKVConfigRequestHeader

// Decode reads the keys.
func (h *GetKVConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetKVConfigRequestHeader"}
	*h = GetKVConfigRequestHeader{Namespace: r.str("namespace", true), Key: r.str("key", true)}
	return r.err
}

// Encode writes the keys.
func (h *GetKVConfigRequestHeader) Encode(ext map[string]string) {
	ext["namespace"] = h.Namespace
	ext["key"] = h.Key
}

// GetKVConfigResponseHeader is the response header of GET_KV_CONFIG (101).
type GetKVConfigResponseHeader struct {
	Value string // value
}

// Decode reads the key.
func (h *GetKVConfigResponseHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "GetKVConfigResponseHeader"}
	*h = GetKVConfigResponseHeader{Value: r.str("value", false)}
	return r.err
}

// Encode writes the key.
func (h *GetKVConfigResponseHeader) Encode(ext map[string]string) {
	extPutString(ext, "value", h.Value)
}

// PutKVConfigRequestHeader is the header of PUT_KV_CONFIG (100).
type PutKVConfigRequestHeader struct {
	Namespace string // namespace, required
	Key       string // key, required
	Value     string // value, required
}

// Decode reads the keys.
func (h *PutKVConfigRequestHeader) Decode(ext map[string]string) error {
	r := extReader{ext: ExtMap(ext), header: "PutKVConfigRequestHeader"}
	*h = PutKVConfigRequestHeader{
		Namespace: r.str("namespace", true),
		Key:       r.str("key", true),
		Value:     r.str("value", true),
	}
	return r.err
}

// Encode writes the keys.
func (h *PutKVConfigRequestHeader) Encode(ext map[string]string) {
	ext["namespace"] = h.Namespace
	ext["key"] = h.Key
	ext["value"] = h.Value
}
